//! Element matrices one cell at a time, as a CPU core computes them: the sum
//! over quadrature points of `Bᵀ G B`, `B` the rows (value, derivatives) of
//! the basis at the point and `G` the point's matrix (the physics' g0..g3
//! pulled back and weighted, or Poisson's `w |J| κ J⁻¹J⁻ᵀ`).
//!
//! The GPU kernels compute an element matrix entry by entry, a thread each,
//! every entry summing its own products over the points (no thread holds a
//! whole matrix). On a core that order costs `(1 + D)²` multiplications per
//! entry and point and vectorises nowhere. Here the point's `G B` rows are
//! formed once (`(1 + D)² · N` products) and the matrix gathers `(1 + D)`
//! axpys of length `N` per test function, with unit stride over the trial
//! functions, which the compiler turns into SIMD.

use crate::Real;
use core::ops::Range;

/// Adds one point's `Σ_{h ∈ rows, l ∈ cols} t(h, i) g(h, l) t(l, j)` to
/// `k[i][j]` for every `i, j < N`: `t(h, i)` is row `h` (0 the value, 1..
/// the derivatives) of basis function `i` at the point, `g` the point's
/// matrix. `rows` and `cols` skip the rows and columns of `g` known to be
/// zero (constants after inlining); `c` is scratch for `g t`.
#[inline(always)]
pub fn add_point<T: Real, const N: usize, const H: usize>(
    t: impl Fn(usize, usize) -> T,
    g: impl Fn(usize, usize) -> T,
    rows: Range<usize>,
    cols: Range<usize>,
    c: &mut [[T; N]; H],
    k: &mut [[T; N]; N],
) {
    for h in rows.clone() {
        let ch = &mut c[h];
        *ch = [T::ZERO; N];
        for l in cols.clone() {
            let s = g(h, l);
            for (j, cj) in ch.iter_mut().enumerate() {
                *cj += s * t(l, j);
            }
        }
    }
    for (i, ki) in k.iter_mut().enumerate() {
        for h in rows.clone() {
            let (s, ch) = (t(h, i), &c[h]);
            for (kj, &cj) in ki.iter_mut().zip(ch) {
                *kj += s * cj;
            }
        }
    }
}

/// Copies the upper triangle of `k` onto the lower: the contraction sums
/// `(i, j)` and `(j, i)` in different orders, and a symmetric form's
/// matrix should be symmetric to the last bit (a symmetric Matrix Market
/// file stores one triangle; CG assumes symmetry).
#[inline(always)]
pub fn mirror_upper<T: Real, const N: usize>(k: &mut [[T; N]; N]) {
    for i in 1..N {
        for j in 0..i {
            k[i][j] = k[j][i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the entry-by-entry sum, with rows and columns skipped.
    #[test]
    fn equals_the_sum_entry_by_entry() {
        const N: usize = 5;
        let t = |h: usize, i: usize| ((h * 7 + i * 3) % 11) as f64 - 4.5;
        let g = |h: usize, l: usize| ((h * 5 + l * 2) % 7) as f64 * 0.25 - 0.6;
        for (rows, cols) in [(0..4, 0..4), (1..4, 1..4), (0..1, 1..4), (1..4, 0..1), (0..1, 0..1)] {
            let (mut c, mut k) = ([[0.0; N]; 4], [[1.0; N]; N]);
            add_point::<f64, N, 4>(t, g, rows.clone(), cols.clone(), &mut c, &mut k);
            for i in 0..N {
                for j in 0..N {
                    let mut want = 1.0;
                    for h in rows.clone() {
                        for l in cols.clone() {
                            want += t(h, i) * g(h, l) * t(l, j);
                        }
                    }
                    assert!((k[i][j] - want).abs() < 1e-12 * want.abs().max(1.0), "({i}, {j}) rows {rows:?} cols {cols:?}: {} != {want}", k[i][j]);
                }
            }
        }
    }
}
