//! The Krylov method as a value ([`Krylov`]: CG, BiCGStab, GMRES(m), or
//! the preconditioner's own iteration, Richardson's),
//! and a Krylov solve as an operator ([`KrylovSolve`]): `z ≈ A⁻¹ r` to a
//! tolerance is a [`LinearOperator`] like a matrix or a preconditioner, so
//! an inner solve can precondition an outer method or serve as a coarse
//! solve.

use super::bicgstab::bicgstab;
use super::cg::{pcg, CgOptions, CgReport};
use super::gmres::gmres;
use crate::operator::LinearOperator;
use crate::{Backend, Result, Scalar};
use serde::Serialize;

/// A Krylov method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Krylov {
    /// Conjugate gradients: symmetric positive definite operators.
    Cg,
    /// BiCGStab: unsymmetric operators, short recurrences.
    BiCgStab,
    /// GMRES restarted every `restart` iterations: unsymmetric operators,
    /// monotone residuals.
    Gmres {
        /// Basis vectors kept before a restart.
        restart: usize,
    },
    /// Preconditioned Richardson, `x ← x + M (b − A x)`: with a multigrid
    /// preconditioner, multigrid as the solver.
    Richardson,
}

impl std::fmt::Display for Krylov {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Krylov::Cg => write!(f, "CG"),
            Krylov::BiCgStab => write!(f, "BiCGStab"),
            Krylov::Gmres { restart } => write!(f, "GMRES({restart})"),
            Krylov::Richardson => write!(f, "Richardson"),
        }
    }
}

impl Krylov {
    /// Solves `A x = b` from the initial guess in `x`, preconditioned by `m`.
    pub fn solve<B: Backend, T: Scalar, A: LinearOperator<B, T> + ?Sized, M: LinearOperator<B, T> + ?Sized>(
        self,
        backend: &B,
        a: &A,
        m: &M,
        b: &B::Vector<T>,
        x: &mut B::Vector<T>,
        opts: CgOptions,
    ) -> Result<CgReport> {
        match self {
            Krylov::Cg => pcg(backend, a, m, b, x, opts),
            Krylov::BiCgStab => bicgstab(backend, a, m, b, x, opts),
            Krylov::Gmres { restart } => gmres(backend, a, m, b, x, restart, opts),
            Krylov::Richardson => super::richardson::richardson(backend, a, m, b, x, opts),
        }
    }
}

/// `z ≈ A⁻¹ r`: a preconditioned Krylov solve from zero to `opts.rtol` (or
/// `opts.max_iterations`, whichever comes first; an inexact inner solve is
/// what a preconditioner is). A non-finite residual is an error.
pub struct KrylovSolve<'a, B: Backend, T: Scalar> {
    /// The method.
    pub method: Krylov,
    /// The operator `A`.
    pub a: &'a dyn LinearOperator<B, T>,
    /// Its preconditioner.
    pub m: &'a dyn LinearOperator<B, T>,
    /// Stopping rule (`jacobi` is ignored: `m` preconditions).
    pub opts: CgOptions,
}

impl<B: Backend, T: Scalar> LinearOperator<B, T> for KrylovSolve<'_, B, T> {
    fn rows(&self) -> usize {
        self.a.rows()
    }
    fn apply(&self, b: &B, r: &B::Vector<T>, z: &mut B::Vector<T>) -> Result<()> {
        b.axpby(T::ZERO, r, T::ZERO, z)?;
        self.method.solve(b, self.a, self.m, r, z, self.opts).map(|_| ())
    }
    fn name(&self) -> String {
        format!("{}({})", self.method, self.m.name()).to_lowercase()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::{Identity, Jacobi};
    use crate::sparse::generate::fem_matrix;
    use crate::CpuBackend;

    /// A tight inner CG solve preconditions an outer GMRES and BiCGStab to
    /// convergence in one or two iterations (an exact inverse would take
    /// one), where Jacobi alone takes many; the outer solution satisfies
    /// the system; the operator names its method and preconditioner and
    /// refuses a diagonal.
    #[test]
    fn an_inner_solve_is_a_preconditioner() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let a = fem_matrix::<f64>(&cpu, 2, 2, 600, 1, true).unwrap();
        let n = a.n_rows;
        let b: Vec<f64> = (0..n).map(|i| ((i * 7919) % 101) as f64 / 101.0 - 0.3).collect();
        let jacobi = Jacobi::new(&cpu, &a).unwrap();
        let inner = KrylovSolve { method: Krylov::Cg, a: &a, m: &jacobi, opts: CgOptions { rtol: 1e-13, max_iterations: 10 * n, jacobi: false } };
        assert_eq!(LinearOperator::<CpuBackend, f64>::rows(&inner), n);
        assert_eq!(LinearOperator::<CpuBackend, f64>::name(&inner), "cg(jacobi)");
        assert!(LinearOperator::<CpuBackend, f64>::diagonal(&inner, &cpu).is_err());
        let opts = CgOptions { rtol: 1e-10, max_iterations: 500, jacobi: false };
        for outer in [Krylov::Gmres { restart: 20 }, Krylov::BiCgStab] {
            let mut x = vec![0.0; n];
            let with_inner = outer.solve(&cpu, &a, &inner, &b, &mut x, opts).unwrap();
            let mut y = vec![0.0; n];
            let plain = outer.solve(&cpu, &a, &Identity(n), &b, &mut y, opts).unwrap();
            assert!(with_inner.converged && with_inner.iterations <= 2, "{outer} with an inner CG: {} iterations", with_inner.iterations);
            assert!(plain.iterations > 10 * with_inner.iterations, "{outer}: {} iterations unpreconditioned", plain.iterations);
            let mut ax = vec![0.0; n];
            a.apply(&cpu, &x, &mut ax).unwrap();
            let err = ax.iter().zip(&b).map(|(p, q)| (p - q).powi(2)).sum::<f64>().sqrt() / b.iter().map(|q| q * q).sum::<f64>().sqrt();
            assert!(err < 1e-9, "{outer}: true residual {err}");
        }
    }
}
