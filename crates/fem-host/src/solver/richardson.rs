//! Preconditioned Richardson iteration, `x ← x + M (b − A x)`: with one
//! multigrid cycle as `M`, multigrid as the solver (PETSc's Richardson
//! method), for any operator and preconditioner of the one interface.

use super::cg::{check_finite, initial_residual, CgOptions, CgReport};
use super::multigrid::stalled;
use crate::operator::LinearOperator;
use crate::{Backend, Result, Scalar};

/// Solves `A x = b` from the guess in `x` until ‖b − A x‖ ≤ rtol ‖b‖, the
/// iteration limit, or until the residual stops falling ([`stalled`]:
/// a preconditioner that does not contract, or the precision's floor),
/// unconverged then.
pub fn richardson<B: Backend, T: Scalar, A: LinearOperator<B, T> + ?Sized, M: LinearOperator<B, T> + ?Sized>(
    backend: &B,
    a: &A,
    m: &M,
    b: &B::Vector<T>,
    x: &mut B::Vector<T>,
    opts: CgOptions,
) -> Result<CgReport> {
    let (mut r, scale) = initial_residual(backend, a, b, x)?;
    let mut z = backend.zeros::<T>(a.rows())?;
    let mut res = backend.norm2(&r)?.to_f64() / scale;
    let mut history = vec![res];
    let start = std::time::Instant::now();
    while res > opts.rtol && history.len() <= opts.max_iterations {
        m.apply(backend, &r, &mut z)?;
        backend.axpy(T::ONE, &z, x)?;
        a.apply(backend, x, &mut r)?;
        backend.axpby(T::ONE, b, -T::ONE, &mut r)?;
        res = backend.norm2(&r)?.to_f64() / scale;
        check_finite("Richardson", res)?;
        history.push(res);
        if stalled(&history) {
            break;
        }
    }
    Ok(CgReport { iterations: history.len() - 1, relative_residual: res, converged: res <= opts.rtol, history, iteration_seconds: start.elapsed().as_secs_f64() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::{Identity, Jacobi};
    use crate::CpuBackend;


    /// Jacobi (D⁻¹ as M) converges on the Laplacian at its known rate;
    /// plain Richardson (M = I, spectral radius of I − A near 3) grows and
    /// stops after the stall window; an exact M converges in one step.
    #[test]
    fn richardson_contracts_as_its_preconditioner_does() {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let n = 10;
        let a = crate::solver::tridiagonal(n, -1.0, 2.0, -1.0);
        let b: Vec<f64> = (0..n).map(|i| (i as f64).sin() + 1.0).collect();
        let opts = CgOptions { rtol: 1e-8, max_iterations: 2000, jacobi: false };
        let jacobi = Jacobi::new(&cpu, &a).unwrap();
        let mut x = vec![0.0; n];
        let r = richardson(&cpu, &a, &jacobi, &b, &mut x, opts).unwrap();
        // ρ(I − D⁻¹A) = cos(π/(n + 1)): 1e-8 after about ln(1e-8)/ln ρ steps
        let rho = (std::f64::consts::PI / (n + 1) as f64).cos();
        let expect = (1e-8f64.ln() / rho.ln()).ceil() as usize;
        assert!(r.converged && r.iterations.abs_diff(expect) < expect / 5, "{} iterations, about {expect} expected", r.iterations);
        let mut ax = vec![0.0; n];
        a.apply(&cpu, &x, &mut ax).unwrap();
        assert!(ax.iter().zip(&b).all(|(p, q)| (p - q).abs() < 1e-7));
        // growing residuals stop the iteration as stalled, unconverged
        let mut x = vec![0.0; n];
        let r = richardson(&cpu, &a, &Identity(n), &b, &mut x, opts).unwrap();
        assert!(!r.converged && r.iterations <= 2 * crate::solver::multigrid::STALL_CYCLES, "{r:?}");
        let mut x = vec![0.0; n];
        let exact = crate::solver::dense::inverse(&a).unwrap();
        let r = richardson(&cpu, &a, &exact, &b, &mut x, opts).unwrap();
        assert!(r.converged && r.iterations == 1, "{r:?}");
    }
}
