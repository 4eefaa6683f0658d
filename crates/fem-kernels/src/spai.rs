//! SPAI(1)'s rows (Grote & Huckle; Geveler et al. §3.2), one source for
//! the host and the device: row `k` of `M` ≈ A⁻¹, on the columns `J` of
//! row `k` of `A`, minimises `‖Σ_{j∈J} m_j A(j, :) − e_kᵀ‖₂` through its
//! normal equations (the Gram matrix of the rows `A(j, :)`, Cholesky).

use crate::slots::index_in_row;
use fem_core::Real;

/// Longest row whose SPAI(1) row the device solves in a thread's own
/// memory (a Gram matrix of 32² values: 2D Q1 rows hold 9 entries, 3D Q1
/// 27); longer rows are solved on the host.
pub const DEVICE_SPAI_ROW: usize = 32;

/// `<A(r, :), A(s, :)>` of two CSR rows with ascending columns.
///
/// # Safety
/// `row_ptr`, `col` and `val` are a valid CSR matrix holding rows `r`, `s`.
#[inline(always)]
pub unsafe fn row_dot<T: Real>(row_ptr: *const u32, col: *const u32, val: *const T, r: usize, s: usize) -> f64 {
    let (mut p, pe) = (*row_ptr.add(r) as usize, *row_ptr.add(r + 1) as usize);
    let (mut q, qe) = (*row_ptr.add(s) as usize, *row_ptr.add(s + 1) as usize);
    let mut sum = 0.0;
    while p < pe && q < qe {
        let (a, b) = (*col.add(p), *col.add(q));
        if a == b {
            sum += (*val.add(p)).to_f64() * (*val.add(q)).to_f64();
        }
        p += (a <= b) as usize;
        q += (b <= a) as usize;
    }
    sum
}

/// Solves the SPD system `g x = rhs` (`g` n × n, row-major) in place by
/// Cholesky; `false` if `g` is not positive definite.
#[inline(always)]
pub fn cholesky_solve(g: &mut [f64], rhs: &mut [f64], n: usize) -> bool {
    for j in 0..n {
        let mut d = g[j * n + j];
        for k in 0..j {
            d -= g[j * n + k] * g[j * n + k];
        }
        if !(d > 0.0) {
            return false;
        }
        let d = Real::sqrt(d);
        g[j * n + j] = d;
        for i in j + 1..n {
            let mut s = g[i * n + j];
            for k in 0..j {
                s -= g[i * n + k] * g[j * n + k];
            }
            g[i * n + j] = s / d;
        }
    }
    for i in 0..n {
        let mut s = rhs[i];
        for k in 0..i {
            s -= g[i * n + k] * rhs[k];
        }
        rhs[i] = s / g[i * n + i];
    }
    for i in (0..n).rev() {
        let mut s = rhs[i];
        for k in i + 1..n {
            s -= g[k * n + i] * rhs[k];
        }
        rhs[i] = s / g[i * n + i];
    }
    true
}

/// Row `k` of SPAI(1) of the square CSR matrix `A` (ascending columns in
/// every row), written to `out` at row `k`'s positions; `g` and `rhs`
/// hold at least n² and n values for the row's n entries. `false` where
/// the rows of `A` that row `k` combines are linearly dependent.
///
/// # Safety
/// A valid CSR matrix holding row `k` and the rows its columns name;
/// `out` as long as `col`.
#[inline(always)]
pub unsafe fn spai_row<T: Real>(k: usize, row_ptr: *const u32, col: *const u32, val: *const T, g: &mut [f64], rhs: &mut [f64], out: *mut T) -> bool {
    let lo = *row_ptr.add(k) as usize;
    let n = *row_ptr.add(k + 1) as usize - lo;
    for x in 0..n {
        let jx = *col.add(lo + x) as usize;
        for y in 0..=x {
            let v = row_dot(row_ptr, col, val, jx, *col.add(lo + y) as usize);
            g[x * n + y] = v;
            g[y * n + x] = v;
        }
        // (Gᵀ e_k)_x = A(j_x, k)
        rhs[x] = index_in_row(jx, k as u32, row_ptr, col).map_or(0.0, |i| (*val.add(*row_ptr.add(jx) as usize + i)).to_f64());
    }
    if !cholesky_solve(g, rhs, n) {
        return false;
    }
    for x in 0..n {
        *out.add(lo + x) = T::from_f64(rhs[x]);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_solves_small_spd_systems() {
        let mut g = [4.0, 2.0, 2.0, 3.0];
        let mut b = [6.0, 5.0];
        assert!(cholesky_solve(&mut g, &mut b, 2));
        assert!((b[0] - 1.0f64).abs() < 1e-14 && (b[1] - 1.0f64).abs() < 1e-14);
        assert!(!cholesky_solve(&mut [1.0, 2.0, 2.0, 1.0], &mut [1.0, 1.0], 2), "indefinite");
    }

    /// Row by row against the normal equations formed densely: on a
    /// nonsymmetric 5 × 5 matrix with an empty-off-diagonal row.
    #[test]
    fn spai_rows_solve_their_normal_equations() {
        let dense = [[4.0, -1.0, 0.0, 0.5, 0.0], [-2.0, 5.0, 1.0, 0.0, 0.0], [0.0, 1.0, 3.0, 0.0, -1.0], [0.0, 0.0, 0.0, 2.0, 0.0], [0.5, 0.0, -1.0, 0.0, 6.0]];
        let (mut row_ptr, mut col, mut val) = ([0u32; 6], [0u32; 25], [0.0f64; 25]);
        let mut nnz = 0;
        for (r, row) in dense.iter().enumerate() {
            for (c, &v) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                (col[nnz], val[nnz]) = (c as u32, v);
                nnz += 1;
            }
            row_ptr[r + 1] = nnz as u32;
        }
        let mut out = [0.0f64; 25];
        let (mut g, mut rhs) = ([0.0; 16], [0.0; 4]);
        for k in 0..5 {
            assert!(unsafe { spai_row(k, row_ptr.as_ptr(), col.as_ptr(), val.as_ptr(), &mut g, &mut rhs, out.as_mut_ptr()) });
            // the gradient of ‖Σ m_j A(j, :) − e_k‖² vanishes on the row's columns
            let (lo, hi) = (row_ptr[k] as usize, row_ptr[k + 1] as usize);
            for x in lo..hi {
                let jx = col[x] as usize;
                let residual = |c: usize| (lo..hi).map(|y| out[y] * dense[col[y] as usize][c]).sum::<f64>() - (c == k) as u8 as f64;
                let gradient: f64 = (0..5).map(|c| residual(c) * dense[jx][c]).sum();
                assert!(gradient.abs() < 1e-12, "row {k}, column {jx}: {gradient:e}");
            }
        }
    }
}
