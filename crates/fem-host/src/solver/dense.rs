//! The inverse of a small sparse matrix as a dense one, for the exact
//! coarsest-level solve of multigrid: the solve then runs on the backend
//! as one dense product, with nothing sent back to the host.

use crate::operator::csr::Csr;
use crate::{Error, Result, Scalar};
use faer::linalg::solvers::{DenseSolveCore, Llt, PartialPivLu};
use faer::{Mat, Side};

/// `A⁻¹` of a square CSR matrix, every entry stored, by faer on all
/// cores: Cholesky when `A` is symmetric positive definite (half the
/// work), else LU with partial pivoting; an error when `A` is
/// (numerically) singular.
pub fn inverse<T: Scalar>(a: &Csr<T>) -> Result<Csr<T>> {
    let n = a.n_rows;
    let mut m = Mat::<f64>::zeros(n, n);
    for r in 0..n {
        for k in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
            m[(r, a.col[k] as usize)] += a.val[k].to_f64();
        }
    }
    let scale = (0..n).flat_map(|i| (0..n).map(move |j| (i, j))).fold(0.0f64, |s, ij| s.max(m[ij].abs()));
    let symmetric = (0..n).all(|i| (0..i).all(|j| (m[(i, j)] - m[(j, i)]).abs() <= 1e-14 * scale));
    let cholesky = if symmetric { Llt::new(m.as_ref(), Side::Lower).ok() } else { None };
    let inv = match cholesky {
        Some(llt) => llt.inverse(),
        None => {
            let lu = PartialPivLu::new(m.as_ref());
            let u = lu.U();
            if let Some(k) = (0..n).find(|&k| !(u[(k, k)].abs() > 1e-13 * scale)) {
                return Err(Error::InvalidArgument(format!("the coarsest multigrid operator ({n} rows) is singular at column {k}")));
            }
            lu.inverse()
        }
    };
    let row_ptr = (0..=n).map(|r| (r * n) as u32).collect();
    let col = (0..n * n).map(|k| (k % n) as u32).collect();
    let val = (0..n * n).map(|k| T::from_f64(inv[(k / n, k % n)])).collect();
    Ok(Csr { n_rows: n, row_ptr, col, val })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A⁻¹ A = I for an unsymmetric matrix that needs pivoting (a zero
    /// first diagonal) and a symmetric positive definite one; a singular
    /// matrix is an error.
    #[test]
    fn inverse_times_the_matrix_is_the_identity() {
        let n = 37;
        let mut dense = vec![0.0; n * n];
        for i in 0..n {
            dense[i * n + i] = if i == 0 { 0.0 } else { 4.0 + i as f64 * 0.1 };
            dense[i * n + (i + 1) % n] = -1.0;
            dense[((i + 3) % n) * n + i] = 0.5;
        }
        let to_csr = |d: &[f64]| {
            let mut c = Csr { n_rows: n, row_ptr: vec![0u32], col: Vec::new(), val: Vec::new() };
            for i in 0..n {
                for j in 0..n {
                    if d[i * n + j] != 0.0 {
                        c.col.push(j as u32);
                        c.val.push(d[i * n + j]);
                    }
                }
                c.row_ptr.push(c.col.len() as u32);
            }
            c
        };
        // and a symmetric positive definite one (the Cholesky path)
        let mut spd = vec![0.0; n * n];
        for i in 0..n {
            spd[i * n + i] = 3.0;
            for j in [(i + 1) % n, (i + n - 1) % n] {
                spd[i * n + j] = -1.0;
            }
        }
        for m in [&dense, &spd] {
            let inv = inverse(&to_csr(m)).unwrap();
            for i in 0..n {
                for j in 0..n {
                    let s: f64 = (0..n).map(|k| inv.val[i * n + k] * m[k * n + j]).sum();
                    assert!((s - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12, "({i}, {j}): {s}");
                }
            }
        }
        let mut singular = dense.clone();
        for j in 0..n {
            singular[5 * n + j] = 2.0 * singular[3 * n + j];
        }
        assert!(inverse(&to_csr(&singular)).is_err());
    }
}
