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
//! functions, which the compiler turns into SIMD ([`add_point`]). Where the
//! rows of many points are at hand (Poisson's), [`add_rows`] adds a block
//! of points at once with a tile of the matrix in registers: a small
//! matrix product `Bᵀ (G B)` instead of a pass over the matrix per row.

use crate::Real;
use core::ops::Range;

/// Adds one point's `Σ_{h ∈ rows, l ∈ cols} t(h, i) g(h, l) t(l, j)` to
/// `k[i·ld + j·STEP]` for every `i, j < N`: `t(h, i)` is row `h` (0 the
/// value, 1.. the derivatives) of basis function `i` at the point, `g` the
/// point's matrix. `rows` and `cols` skip the rows and columns of `g`
/// known to be zero (constants after inlining); `c` is scratch for `g t`.
/// `k` is a row-major `N × N` block (`ld = N`, `STEP = 1`) or one
/// component block of an interleaved vector element matrix written in
/// place (`ld = NC·N·NC`, `STEP = NC`), so a matrix too large for a
/// thread's stack is not held there.
#[inline(always)]
pub fn add_point<T: Real, const N: usize, const H: usize, const STEP: usize>(
    t: impl Fn(usize, usize) -> T,
    g: impl Fn(usize, usize) -> T,
    rows: Range<usize>,
    cols: Range<usize>,
    c: &mut [[T; N]; H],
    k: &mut [T],
    ld: usize,
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
    for i in 0..N {
        let ki = &mut k[i * ld..i * ld + (N - 1) * STEP + 1];
        for h in rows.clone() {
            let (s, ch) = (t(h, i), &c[h]);
            if STEP == 1 {
                for (kj, &cj) in ki.iter_mut().zip(ch) {
                    *kj += s * cj;
                }
            } else {
                for (kj, &cj) in ki.iter_mut().step_by(STEP).zip(ch) {
                    *kj += s * cj;
                }
            }
        }
    }
}

/// Test functions per tile of [`add_rows`], held in registers.
const TILE_I: usize = 4;
/// Trial functions per tile of [`add_rows`]: two 256-bit vectors of f64.
const TILE_J: usize = 8;

/// Adds `Σ_r t[r][i] c[r][j]` to `k[i][j]` for every `i ≤ j` (and the
/// entries below the diagonal that share a tile with it): `t` the basis
/// rows of a block of points, `c` the points' `G B` rows ([`add_point`]
/// forms them one point at a time). A tile of `k`, 4 test by 8 trial
/// functions, stays in registers across every row of the block, so `k`
/// is read and written once per block instead of once per row, and `mac`
/// (`a · b + c`: a fused multiply-add where the caller is compiled for
/// one) is the only arithmetic. Callers mirror the upper triangle
/// ([`mirror_upper`]); the sum runs over `r` in order for every entry.
#[inline(always)]
pub fn add_rows<T: Real, const N: usize>(t: &[[T; N]], c: &[[T; N]], k: &mut [[T; N]; N], mac: impl Fn(T, T, T) -> T + Copy) {
    debug_assert_eq!(t.len(), c.len());
    // the edges' widths are constants of each N, so every call of `tile`
    // unrolls into registers
    let (ei, ej) = (N % TILE_I, N % TILE_J);
    let (fi, fj) = (N - ei, N - ej);
    for i0 in (0..fi).step_by(TILE_I) {
        for j0 in (i0 / TILE_J * TILE_J..fj).step_by(TILE_J) {
            tile(t, c, k, i0, TILE_I, j0, TILE_J, mac);
        }
        if ej > 0 {
            tile(t, c, k, i0, TILE_I, fj, ej, mac);
        }
    }
    if ei > 0 {
        for j0 in (fi / TILE_J * TILE_J..fj).step_by(TILE_J) {
            tile(t, c, k, fi, ei, j0, TILE_J, mac);
        }
        if ej > 0 {
            tile(t, c, k, fi, ei, fj, ej, mac);
        }
    }
}

/// The `ni × nj` tile of [`add_rows`] at `(i0, j0)` (at most 4 × 8), summed
/// in registers over every row and then added to `k`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tile<T: Real, const N: usize>(t: &[[T; N]], c: &[[T; N]], k: &mut [[T; N]; N], i0: usize, ni: usize, j0: usize, nj: usize, mac: impl Fn(T, T, T) -> T) {
    let mut acc = [[T::ZERO; TILE_J]; TILE_I];
    for (ki, a) in k[i0..i0 + ni].iter().zip(acc.iter_mut()) {
        a[..nj].copy_from_slice(&ki[j0..j0 + nj]);
    }
    for (tr, cr) in t.iter().zip(c) {
        let (ti, cj) = (&tr[i0..i0 + ni], &cr[j0..j0 + nj]);
        for (a, &s) in acc.iter_mut().zip(ti) {
            for (x, &y) in a.iter_mut().zip(cj) {
                *x = mac(s, y, *x);
            }
        }
    }
    for (ki, a) in k[i0..i0 + ni].iter_mut().zip(acc.iter()) {
        ki[j0..j0 + nj].copy_from_slice(&a[..nj]);
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

    /// Against the plain sum over rows, on the upper triangle, for sizes
    /// below, at and past the tile (edges in both directions).
    #[test]
    fn add_rows_is_the_sum_over_rows() {
        fn check<const N: usize>() {
            const R: usize = 7;
            let t: [[f64; N]; R] = core::array::from_fn(|r| core::array::from_fn(|i| ((r * 5 + i * 3) % 13) as f64 - 6.0));
            let c: [[f64; N]; R] = core::array::from_fn(|r| core::array::from_fn(|j| ((r * 7 + j * 2) % 11) as f64 * 0.5 - 2.0));
            let mut k = [[0.25; N]; N];
            add_rows(&t, &c, &mut k, |a, b, s| a * b + s);
            for i in 0..N {
                for j in i..N {
                    let mut want = 0.25;
                    for r in 0..R {
                        want += t[r][i] * c[r][j];
                    }
                    assert_eq!(k[i][j], want, "N = {N}, ({i}, {j})");
                }
            }
        }
        check::<1>();
        check::<3>();
        check::<4>();
        check::<8>();
        check::<9>();
        check::<27>();
        check::<32>();
    }

    /// Against the entry-by-entry sum, with rows and columns skipped.
    #[test]
    fn equals_the_sum_entry_by_entry() {
        const N: usize = 5;
        let t = |h: usize, i: usize| ((h * 7 + i * 3) % 11) as f64 - 4.5;
        let g = |h: usize, l: usize| ((h * 5 + l * 2) % 7) as f64 * 0.25 - 0.6;
        for (rows, cols) in [(0..4, 0..4), (1..4, 1..4), (0..1, 1..4), (1..4, 0..1), (0..1, 0..1)] {
            let (mut c, mut k) = ([[0.0; N]; 4], [[1.0; N]; N]);
            add_point::<f64, N, 4, 1>(t, g, rows.clone(), cols.clone(), &mut c, k.as_flattened_mut(), N);
            // block (1, 0) of a two-component interleaved matrix, in place
            let mut blocks = [1.0; 4 * N * N];
            add_point::<f64, N, 4, 2>(t, g, rows.clone(), cols.clone(), &mut c, &mut blocks[2 * N..], 4 * N);
            for i in 0..N {
                for j in 0..N {
                    let mut want = 1.0;
                    for h in rows.clone() {
                        for l in cols.clone() {
                            want += t(h, i) * g(h, l) * t(l, j);
                        }
                    }
                    assert!((k[i][j] - want).abs() < 1e-12 * want.abs().max(1.0), "({i}, {j}) rows {rows:?} cols {cols:?}: {} != {want}", k[i][j]);
                    for (ci, ei) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        let v = blocks[(2 * i + ci) * 2 * N + 2 * j + ei];
                        let w = if (ci, ei) == (1, 0) { want } else { 1.0 };
                        assert!((v - w).abs() < 1e-12 * w.abs().max(1.0), "block ({ci}, {ei}) ({i}, {j}): {v} != {w}");
                    }
                }
            }
        }
    }
}
