//! The (preconditioned) conjugate gradient method on any [`Backend`],
//! [`LinearOperator`] and preconditioner (another operator); it stops on the relative
//! residual ‖r‖/‖b‖ and records its history.

use super::precond::{Identity, Jacobi};
use crate::backend::recording::Recording;
use crate::operator::{LinearOperator, Pointwise};
use fem_kernels::krylov;
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
    /// diagonal, work vectors, initial residual). It ends when the
    /// scalars are read back after the last iteration, so this is device
    /// time too.
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
///
/// The iteration's scalars stay in the backend's memory
/// ([`fem_kernels::krylov`]): an iteration queues its launches without
/// waiting for a result, and the host reads the scalars back only every
/// few iterations (a window that adapts to the convergence rate) to see
/// whether the solve has stopped. Iterations past the stop change
/// nothing. Where the backend records (the GPU), the iteration is replayed
/// as a CUDA graph. An identity or inverse-diagonal preconditioner is
/// fused into the update of the iterate and the residual.
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
    let pointwise = m.pointwise();
    let mut z = match pointwise {
        Some(Pointwise::Identity) => backend.zeros::<T>(0)?,
        _ => backend.zeros::<T>(n)?,
    };
    match pointwise {
        Some(Pointwise::Identity) => {}
        Some(Pointwise::Scale(d)) => backend.mul(d, &r, &mut z)?,
        None => m.apply(backend, &r, &mut z)?,
    }
    let identity = matches!(pointwise, Some(Pointwise::Identity));
    let mut p = backend.zeros::<T>(n)?;
    backend.copy(if identity { &r } else { &z }, &mut p)?;
    let rz = backend.dot(&r, if identity { &r } else { &z })?.to_f64();
    let res = backend.norm2(&r)?.to_f64() / scale;
    check_finite("CG", res)?;
    let mut history = vec![res];
    if res <= opts.rtol || opts.max_iterations == 0 {
        return Ok(CgReport { iterations: 0, relative_residual: res, converged: res <= opts.rtol, history, iteration_seconds: 0.0 });
    }
    let capacity = opts.max_iterations.min(MAX_HISTORY) + 1;
    let mut s = backend.upload(&scalars(rz, scale, res, opts, capacity))?;
    let mut recorded = backend.zeros::<f64>(capacity)?;
    let mut q = backend.zeros::<T>(n)?;
    let recording = Recording::default();
    let mut window = Window::new(res, opts);
    let start = std::time::Instant::now();
    let state = loop {
        for _ in 0..window.size {
            backend.replay(&recording, &(), &mut || {
                a.apply(backend, &p, &mut q)?;
                backend.dot_into(n, &p, &q, &mut s, krylov::PQ)?;
                match pointwise {
                    Some(Pointwise::Identity) => backend.cg_update(n, &mut s, &p, &q, x, &mut r, None, Some(&mut recorded))?,
                    Some(Pointwise::Scale(d)) => backend.cg_update(n, &mut s, &p, &q, x, &mut r, Some((d, &mut z)), Some(&mut recorded))?,
                    None => {
                        backend.cg_update(n, &mut s, &p, &q, x, &mut r, None, None)?;
                        m.apply(backend, &r, &mut z)?;
                        backend.dot_into(n, &r, &z, &mut s, krylov::RZN)?;
                        backend.cg_advance(&mut s, &mut recorded)?;
                    }
                }
                backend.cg_direction(&s, if identity { &r } else { &z }, &mut p)
            })?;
        }
        let state = backend.download(&s)?;
        if state[krylov::STATUS] != krylov::RUNNING {
            break state;
        }
        window.next(state[krylov::COUNT] as usize, state[krylov::RES]);
    };
    let iterations = state[krylov::COUNT] as usize;
    let recorded = backend.download(&recorded)?;
    history.extend_from_slice(&recorded[1..=iterations.min(capacity - 1)]);
    let iteration_seconds = start.elapsed().as_secs_f64();
    let res = state[krylov::RES];
    match state[krylov::STATUS] {
        krylov::INDEFINITE => Err(crate::Error::InvalidArgument("CG: the operator is not positive definite".into())),
        krylov::DIVERGED => Err(crate::Error::InvalidArgument(format!("CG diverged: the residual is {res}"))),
        _ => Ok(CgReport { iterations, relative_residual: res, converged: res <= opts.rtol, history, iteration_seconds }),
    }
}

/// Iterations whose relative residuals are kept in the report; a solve
/// allowed more records only the first ones.
const MAX_HISTORY: usize = 1 << 20;

/// The scalar slots at the start of the iterations.
fn scalars(rz: f64, scale: f64, res: f64, opts: CgOptions, capacity: usize) -> Vec<f64> {
    let mut s = vec![0.0; krylov::SLOTS];
    s[krylov::RZ] = rz;
    s[krylov::STATUS] = krylov::RUNNING;
    s[krylov::SCALE] = scale;
    s[krylov::RTOL] = opts.rtol;
    s[krylov::MAX] = opts.max_iterations as f64;
    s[krylov::CAPACITY] = capacity as f64;
    s[krylov::RES] = res;
    s
}

/// How many iterations run between two looks at the scalars: each look
/// waits for the device, each iteration past the stop is wasted work. The
/// window doubles while the residual gives no estimate, and otherwise
/// covers the iterations the last rate of convergence predicts are left.
struct Window {
    size: usize,
    last: (usize, f64),
    rtol: f64,
    limit: usize,
}

/// The longest window.
const MAX_WINDOW: usize = 32;

impl Window {
    fn new(res: f64, opts: CgOptions) -> Self {
        Self { size: 1, last: (0, res), rtol: opts.rtol, limit: opts.max_iterations }
    }

    fn next(&mut self, count: usize, res: f64) {
        let (k0, r0) = self.last;
        let grown = (2 * self.size).min(MAX_WINDOW);
        self.size = if count > k0 && res < r0 && res > 0.0 {
            let rate = (res / r0).ln() / (count - k0) as f64;
            let predicted = ((self.rtol / res).ln() / rate).ceil();
            if predicted.is_finite() { (predicted.max(1.0) as usize).min(grown) } else { grown }
        } else {
            grown
        };
        self.size = self.size.min(self.limit.saturating_sub(count).max(1));
        self.last = (count, res);
    }
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
