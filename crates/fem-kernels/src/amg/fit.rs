//! The tentative prolongator's fit on one aggregate (Vaněk, Mandel &
//! Brezina 1996, §3; pyamg's `fit_candidates`): the `k` near-nullspace
//! vectors restricted to the aggregate's unknowns are orthonormalised by
//! modified Gram–Schmidt; `Q` gives the prolongator's rows there, `R` the
//! coarse level's near-nullspace, so the vectors are reproduced exactly
//! by the coarse space. A vector (numerically) dependent on the ones
//! before it, in an aggregate too small to tell them apart, gives a zero
//! column.

/// Relative size below which an orthogonalised vector counts as
/// dependent on the ones before it.
pub const DEPENDENT: f64 = 1e-10;

/// The thin QR of the `m × k` matrix whose row `l` is the `k` values at
/// `row(l)`, in place (`Q` overwrites it), and `R` (`k × k`, row-major)
/// into `r`.
///
/// # Safety
/// `row(l)` valid for `k` values for every `l < m`, `r` for `k²`.
#[inline(always)]
pub unsafe fn orthonormalise(m: usize, k: usize, row: impl Fn(usize) -> *mut f64, r: *mut f64) {
    for e in 0..k * k {
        *r.add(e) = 0.0;
    }
    let dot = |i: usize, j: usize| (0..m).map(|l| *row(l).add(i) * *row(l).add(j)).sum::<f64>();
    for j in 0..k {
        let norm0 = fem_core::Real::sqrt(dot(j, j));
        for i in 0..j {
            let d = dot(i, j);
            *r.add(i * k + j) = d;
            for l in 0..m {
                let q = row(l);
                *q.add(j) -= d * *q.add(i);
            }
        }
        let norm = fem_core::Real::sqrt(dot(j, j));
        let keep = norm > DEPENDENT * norm0 && norm > 0.0;
        if keep {
            *r.add(j * k + j) = norm;
        }
        for l in 0..m {
            let q = row(l);
            *q.add(j) = if keep { *q.add(j) / norm } else { 0.0 };
        }
    }
}

/// The fit on an aggregate of `m` unknowns, `unknown(l)` the row of its
/// `l`-th: the `k` vectors `b` (`k` per row, row-major) there are
/// orthonormalised into `q(l)` (`k` values each: that unknown's row of
/// the tentative prolongator), `R` into `coarse` (`k²`, row `i` the
/// aggregate's coarse unknown `i`).
///
/// # Safety
/// `b` readable at every `unknown(l)`, `q(l)` writable for `k` values,
/// `coarse` for `k²`.
#[inline(always)]
pub unsafe fn fit_aggregate(m: usize, k: usize, b: *const f64, unknown: impl Fn(usize) -> usize, q: impl Fn(usize) -> *mut f64, coarse: *mut f64) {
    for l in 0..m {
        let (src, dst) = (b.add(unknown(l) * k), q(l));
        for j in 0..k {
            *dst.add(j) = *src.add(j);
        }
    }
    orthonormalise(m, k, q, coarse);
}

/// Sorts `x[0..len]` ascending in place (insertion: aggregates hold a
/// few dozen nodes), so the fit sums in the same order everywhere.
///
/// # Safety
/// `x` valid for `len` values.
#[inline(always)]
pub unsafe fn sort(x: *mut u32, len: usize) {
    for i in 1..len {
        let v = *x.add(i);
        let mut j = i;
        while j > 0 && *x.add(j - 1) > v {
            *x.add(j) = *x.add(j - 1);
            j -= 1;
        }
        *x.add(j) = v;
    }
}
