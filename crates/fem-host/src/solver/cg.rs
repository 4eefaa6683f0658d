//! The (preconditioned) conjugate gradient method on any [`Backend`],
//! [`LinearOperator`] and preconditioner (another operator); it stops on the relative
//! residual ‖r‖/‖b‖ and records its history.

use super::precond::{Identity, Jacobi};
use crate::operator::LinearOperator;
use crate::{Backend, Result, Scalar};
use serde::Serialize;

/// Stopping rule and preconditioning of [`cg`] (also taken by BiCGStab);
/// by default rtol 10⁻¹⁰, at most 10 000 iterations, no Jacobi.
#[derive(Clone, Copy, Debug)]
pub struct CgOptions {
    /// Stop when ‖r‖ ≤ rtol ‖b‖.
    pub rtol: f64,
    /// Iterations after which the solver stops unconverged.
    pub max_iterations: usize,
    /// Precondition with the inverse diagonal.
    pub jacobi: bool,
}

impl Default for CgOptions {
    fn default() -> Self {
        Self { rtol: 1e-10, max_iterations: 10_000, jacobi: false }
    }
}

/// Outcome of an iterative solve: CG, BiCGStab, or multigrid cycles.
#[derive(Clone, Debug, Serialize)]
pub struct CgReport {
    /// Iterations performed (cycles for multigrid).
    pub iterations: usize,
    /// The last entry of `history`: the final relative residual.
    pub relative_residual: f64,
    /// Whether `relative_residual` ≤ rtol was reached within the iteration limit.
    pub converged: bool,
    /// ‖r_k‖/‖b‖ after every iteration (the first entry is the start).
    pub history: Vec<f64>,
    /// Wall time of the iterations alone, without the set-up (Jacobi
    /// diagonal, work vectors, initial residual). Each iteration ends by
    /// reading a norm back, so this is device time too.
    pub iteration_seconds: f64,
}

/// Solves `A x = b` from the initial guess in `x`, unpreconditioned or with
/// Jacobi as `opts` says.
pub fn cg<B: Backend, T: Scalar, A: LinearOperator<B, T>>(backend: &B, a: &A, b: &B::Vector<T>, x: &mut B::Vector<T>, opts: CgOptions) -> Result<CgReport> {
    if opts.jacobi {
        pcg(backend, a, &Jacobi::new(backend, a)?, b, x, opts)
    } else {
        pcg(backend, a, &Identity(a.rows()), b, x, opts)
    }
}

/// Preconditioned CG from the initial guess in `x` (`opts.jacobi` is
/// ignored: `m` is the preconditioner). `M` must be symmetric positive
/// definite.
pub fn pcg<B: Backend, T: Scalar, A: LinearOperator<B, T> + ?Sized, M: LinearOperator<B, T> + ?Sized>(
    backend: &B,
    a: &A,
    m: &M,
    b: &B::Vector<T>,
    x: &mut B::Vector<T>,
    opts: CgOptions,
) -> Result<CgReport> {
    let n = a.rows();
    let (mut r, scale) = initial_residual(backend, a, b, x)?;
    let mut z = backend.zeros::<T>(n)?;
    m.apply(backend, &r, &mut z)?;
    let mut p = backend.zeros::<T>(n)?;
    backend.copy(&z, &mut p)?;
    let mut q = backend.zeros::<T>(n)?;
    let mut rz = backend.dot(&r, &z)?;
    let mut res = backend.norm2(&r)?.to_f64() / scale;
    let mut history = vec![res];
    let mut it = 0;
    let start = std::time::Instant::now();
    while res > opts.rtol && it < opts.max_iterations {
        a.apply(backend, &p, &mut q)?;
        let pq = backend.dot(&p, &q)?;
        if !(pq.to_f64() > 0.0) {
            return Err(crate::Error::InvalidArgument("CG: the operator is not positive definite".into()));
        }
        let alpha = rz / pq;
        backend.axpy(alpha, &p, x)?;
        backend.axpy(-alpha, &q, &mut r)?;
        m.apply(backend, &r, &mut z)?;
        let rz_new = backend.dot(&r, &z)?;
        backend.axpby(T::ONE, &z, rz_new / rz, &mut p)?;
        rz = rz_new;
        res = backend.norm2(&r)?.to_f64() / scale;
        history.push(res);
        it += 1;
        check_finite("CG", res)?;
    }
    Ok(CgReport { iterations: it, relative_residual: res, converged: res <= opts.rtol, history, iteration_seconds: start.elapsed().as_secs_f64() })
}

/// `r = b − A x` and the scale ‖b‖ (one for a zero `b`) the relative
/// residual divides by.
pub(crate) fn initial_residual<B: Backend, T: Scalar, A: LinearOperator<B, T> + ?Sized>(backend: &B, a: &A, b: &B::Vector<T>, x: &B::Vector<T>) -> Result<(B::Vector<T>, f64)> {
    let mut r = backend.zeros::<T>(a.rows())?;
    a.apply(backend, x, &mut r)?;
    backend.axpby(T::ONE, b, -T::ONE, &mut r)?;
    let b_norm = backend.norm2(b)?.to_f64();
    Ok((r, if b_norm > 0.0 { b_norm } else { 1.0 }))
}

/// An error when a solver's residual stopped being a number (divergence,
/// or a preconditioner that is not positive definite).
pub(crate) fn check_finite(solver: &str, res: f64) -> Result<()> {
    if res.is_finite() {
        Ok(())
    } else {
        Err(crate::Error::InvalidArgument(format!("{solver} diverged: the residual is {res}")))
    }
}
