//! SPAI(1) (Grote & Huckle; Geveler et al. §3.2): the sparse approximate
//! inverse `M` with the pattern of `A` that minimises `‖I − M A‖_F`. The
//! norm splits by rows of `M`: row `k`, supported on the columns `J` of
//! row `k` of `A`, minimises `‖Σ_{j∈J} m_j A(j, :) − e_kᵀ‖₂`, a small
//! least-squares problem in |J| unknowns over the rows of `A` it combines.
//! Every row is independent, so they are built in parallel; each is solved
//! through its normal equations (Gram matrix of the rows of `A`, Cholesky).

use crate::operator::csr::Csr;
use crate::{CpuBackend, Error, Result, Scalar};
use rayon::prelude::*;

/// `<A(a, :), A(b, :)>` of two sorted CSR rows.
fn row_dot<T: Scalar>(a: &Csr<T>, r: usize, s: usize) -> f64 {
    let (mut p, pe) = (a.row_ptr[r] as usize, a.row_ptr[r + 1] as usize);
    let (mut q, qe) = (a.row_ptr[s] as usize, a.row_ptr[s + 1] as usize);
    let mut sum = 0.0;
    while p < pe && q < qe {
        match a.col[p].cmp(&a.col[q]) {
            std::cmp::Ordering::Less => p += 1,
            std::cmp::Ordering::Greater => q += 1,
            std::cmp::Ordering::Equal => {
                sum += a.val[p].to_f64() * a.val[q].to_f64();
                p += 1;
                q += 1;
            }
        }
    }
    sum
}

/// Solves the SPD system `g x = rhs` (`g` n × n, row-major) in place by
/// Cholesky; `None` if `g` is not positive definite.
pub fn cholesky_solve(g: &mut [f64], rhs: &mut [f64], n: usize) -> Option<()> {
    for j in 0..n {
        let mut d = g[j * n + j];
        for k in 0..j {
            d -= g[j * n + k] * g[j * n + k];
        }
        if !(d > 0.0) {
            return None;
        }
        let d = d.sqrt();
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
    Some(())
}

/// SPAI(1) of the square matrix `a` (columns sorted in every row).
pub fn spai1<T: Scalar>(cpu: &CpuBackend, a: &Csr<T>) -> Result<Csr<T>> {
    let rows: Vec<std::result::Result<Vec<T>, usize>> = cpu.install(|| {
        (0..a.n_rows)
            .into_par_iter()
            .map(|k| {
                let j: &[u32] = &a.col[a.row_ptr[k] as usize..a.row_ptr[k + 1] as usize];
                let n = j.len();
                let mut g = vec![0.0; n * n];
                for x in 0..n {
                    for y in 0..=x {
                        let v = row_dot(a, j[x] as usize, j[y] as usize);
                        g[x * n + y] = v;
                        g[y * n + x] = v;
                    }
                }
                // Right-hand side: (G^T e_k)_x = A(j_x, k).
                let mut rhs: Vec<f64> = j.iter().map(|&jx| a.position(jx as usize, k as u32).map_or(0.0, |p| a.val[p].to_f64())).collect();
                cholesky_solve(&mut g, &mut rhs, n).ok_or(k)?;
                Ok(rhs.into_iter().map(T::from_f64).collect())
            })
            .collect()
    });
    let mut val = Vec::with_capacity(a.nnz());
    for (k, r) in rows.into_iter().enumerate() {
        let r = r.map_err(|_| Error::InvalidArgument(format!("SPAI(1): the rows coupled to row {k} are linearly dependent")))?;
        debug_assert_eq!(r.len(), (a.row_ptr[k + 1] - a.row_ptr[k]) as usize);
        val.extend(r);
    }
    Ok(Csr { n_rows: a.n_rows, row_ptr: a.row_ptr.clone(), col: a.col.clone(), val })
}

/// `‖I − M A‖_F` for a square `m` and `a` (CSR, sorted columns).
pub fn inverse_residual<T: Scalar>(cpu: &CpuBackend, m: &Csr<T>, a: &Csr<T>) -> f64 {
    let sq: f64 = cpu.install(|| {
        (0..m.n_rows)
            .into_par_iter()
            .map(|k| {
                // Row k of M A = Σ_j m_kj A(j, :), accumulated sparsely.
                let mut acc: std::collections::BTreeMap<u32, f64> = std::collections::BTreeMap::new();
                for p in m.row_ptr[k] as usize..m.row_ptr[k + 1] as usize {
                    let (j, mv) = (m.col[p] as usize, m.val[p].to_f64());
                    for q in a.row_ptr[j] as usize..a.row_ptr[j + 1] as usize {
                        *acc.entry(a.col[q]).or_insert(0.0) += mv * a.val[q].to_f64();
                    }
                }
                let diag = acc.remove(&(k as u32)).unwrap_or(0.0);
                (1.0 - diag).powi(2) + acc.values().map(|v| v * v).sum::<f64>()
            })
            .sum()
    });
    sq.sqrt()
}

/// The Jacobi inverse `diag(A)⁻¹` as a matrix (for comparisons).
pub fn jacobi_matrix<T: Scalar>(a: &Csr<T>) -> Csr<T> {
    let d = a.diag();
    Csr { n_rows: a.n_rows, row_ptr: (0..=a.n_rows as u32).collect(), col: (0..a.n_rows as u32).collect(), val: d.iter().map(|&v| T::ONE / v).collect() }
}
