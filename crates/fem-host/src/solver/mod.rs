//! Iterative solvers on any backend and operator: CG and PCG, BiCGStab,
//! GMRES, geometric multigrid (with an exact dense coarsest solve), the
//! p-multigrid cycle, and
//! the preconditioners they take (Jacobi, coloured SSOR, SPAI(1), SAINV,
//! multigrid), built through [`PrecondOps`] on either backend.

pub mod amg;
pub mod approximate;
pub mod backend;
pub mod bicgstab;
pub mod cg;
pub mod chebyshev;
pub mod dense;
pub mod gmres;
pub mod krylov;
pub mod multigrid;
pub mod ordering;
pub mod p_multigrid;
pub mod precond;
pub mod richardson;
pub mod sainv;
pub mod spai;
pub mod ssor;
pub mod transfer;

pub use approximate::MatrixInverse;
pub use backend::PrecondOps;
pub use bicgstab::bicgstab;
pub use cg::{cg, pcg, CgOptions, CgReport};
pub use gmres::gmres;
pub use krylov::{Krylov, KrylovSolve};
pub use precond::{Identity, InverseDiagonal, Jacobi};
pub use richardson::richardson;

/// The tridiagonal matrix (`lower`, `diag`, `upper`) of `n` rows: the 1D
/// Laplacian and upwind convection–diffusion of the solvers' tests.
#[cfg(test)]
pub(crate) fn tridiagonal(n: usize, lower: f64, diag: f64, upper: f64) -> crate::operator::csr::Csr<f64> {
    let (mut row_ptr, mut col, mut val) = (vec![0u32], Vec::new(), Vec::new());
    for i in 0..n {
        for (j, v) in [(i.wrapping_sub(1), lower), (i, diag), (i + 1, upper)] {
            if j < n {
                col.push(j as u32);
                val.push(v);
            }
        }
        row_ptr.push(col.len() as u32);
    }
    crate::operator::csr::Csr { n_rows: n, row_ptr, col, val }
}
