//! BiCGStab (van der Vorst) with right preconditioning, for unsymmetric
//! systems and unsymmetric preconditioners (the multigrid coarse solver of
//! Geveler et al.); stops on ‖r‖/‖b‖ and records its history.

use super::cg::{CgOptions, CgReport};
use crate::operator::LinearOperator;
use crate::{Backend, Error, Result, Scalar};

/// Solves `A x = b` from the initial guess in `x` with preconditioner `m`
/// (`opts.jacobi` is ignored). A breakdown (ρ or ⟨r̂, v⟩ vanishing) ends
/// the iteration with the residual reached so far.
pub fn bicgstab<B: Backend, T: Scalar, A: LinearOperator<B, T> + ?Sized, M: LinearOperator<B, T> + ?Sized>(
    backend: &B,
    a: &A,
    m: &M,
    b: &B::Vector<T>,
    x: &mut B::Vector<T>,
    opts: CgOptions,
) -> Result<CgReport> {
    let n = a.rows();
    let zeros = || backend.zeros::<T>(n);
    let (mut r, scale) = super::cg::initial_residual(backend, a, b, x)?;
    let (mut r0, mut p, mut v, mut ph, mut s, mut sh, mut t) = (zeros()?, zeros()?, zeros()?, zeros()?, zeros()?, zeros()?, zeros()?);
    backend.copy(&r, &mut r0)?;
    let mut res = backend.norm2(&r)?.to_f64() / scale;
    let mut history = vec![res];
    let (mut rho, mut alpha, mut omega) = (T::ONE, T::ONE, T::ONE);
    let mut it = 0;
    let start = std::time::Instant::now();
    let tiny = |v: T| !(v.abs().to_f64() > 1e-300);
    while res > opts.rtol && it < opts.max_iterations {
        let rho_new = backend.dot(&r0, &r)?;
        if tiny(rho_new) {
            break;
        }
        if it == 0 {
            backend.copy(&r, &mut p)?;
        } else {
            // p = r + β (p − ω v)
            let beta = (rho_new / rho) * (alpha / omega);
            backend.axpby(T::ONE, &r, beta, &mut p)?;
            backend.axpy(-beta * omega, &v, &mut p)?;
        }
        rho = rho_new;
        m.apply(backend, &p, &mut ph)?;
        a.apply(backend, &ph, &mut v)?;
        let r0v = backend.dot(&r0, &v)?;
        if tiny(r0v) {
            break;
        }
        alpha = rho / r0v;
        backend.copy(&r, &mut s)?;
        backend.axpy(-alpha, &v, &mut s)?;
        backend.axpy(alpha, &ph, x)?;
        it += 1;
        let s_norm = backend.norm2(&s)?.to_f64() / scale;
        if s_norm <= opts.rtol {
            backend.copy(&s, &mut r)?;
            res = s_norm;
            history.push(res);
            break;
        }
        m.apply(backend, &s, &mut sh)?;
        a.apply(backend, &sh, &mut t)?;
        let tt = backend.dot(&t, &t)?;
        if tiny(tt) {
            return Err(Error::InvalidArgument("BiCGStab: A M s vanished".into()));
        }
        omega = backend.dot(&t, &s)? / tt;
        backend.axpy(omega, &sh, x)?;
        backend.copy(&s, &mut r)?;
        backend.axpy(-omega, &t, &mut r)?;
        res = backend.norm2(&r)?.to_f64() / scale;
        history.push(res);
        super::cg::check_finite("BiCGStab", res)?;
        if tiny(omega) {
            break;
        }
    }
    Ok(CgReport { iterations: it, relative_residual: res, converged: res <= opts.rtol, history, iteration_seconds: start.elapsed().as_secs_f64() })
}
