//! Newton's method for a `#[fem_kernel]` physics on a nodal space with
//! Dirichlet values on the boundary, on either backend and resident there:
//! per iteration the residual and tangent are evaluated and assembled on
//! the backend, the update solved by a Krylov method (CG, BiCGStab,
//! GMRES or Richardson) on the tangent, assembled in a sparse format or
//! kept as element matrices ([`assembly`]), preconditioned by Jacobi,
//! SSOR, SPAI(1), SAINV or multigrid by rediscretisation ([`precond`]),
//! and a backtracking line search halves the step until the residual norm
//! falls; only norms come back to the host.
//!
//! A physics' boundary term (`bf0`: Neumann and Robin conditions) acts on
//! the facets [`Setup::with_boundary_term`] names: each facet is one more
//! element after the cells, gathered from and scattered into its cell's
//! rows, so the residual and the tangent take it in the same two passes.
//!
//! Boundary rows are fixed: their residual entries and every tangent
//! entry in a fixed row or column are skipped by the assembly (position
//! `u32::MAX`), and fixed diagonals start at 1, so the update is zero
//! there and u keeps its boundary values.

pub mod assembly;
pub(crate) mod cell_tangent;
pub mod cpu;
pub mod gpu;
pub mod linear;
pub mod p_multigrid;
pub mod precond;
pub mod setup;
pub mod sizes;
pub mod tangent;
pub mod time;

pub use assembly::{Assembly, Scatter};
use linear::Linear;
pub use linear::Precision;
pub use precond::{AmgReport, Levels, PmgOptions, Precond};
pub use setup::Setup;
use setup::as_residual_base;
pub use sizes::NewtonSizes;
/// The Krylov method that solves Newton's linear systems.
pub use crate::solver::Krylov;

use assembly::Storage;
use cell_tangent::{cell_inverse_diagonal, CellTangent};

use super::phases::{timed, Split};
use crate::operator::csr::Csr;
use crate::solver::{CgOptions, Jacobi, PrecondOps};
use crate::operator::LinearOperator;
use crate::sparse::{Spmv, SpmvFormat};
use crate::{Backend, CpuBackend, Error, Result};
use fem_kernels::pointwise::Kernels;
use serde::Serialize;
use std::time::Instant;

/// Position that the assembly skips.
const NONE: u32 = u32::MAX;

/// What differs between the backends.
pub trait NewtonOps: PrecondOps {
    /// The sparsity pattern of `n_rows` rows from the cells' rows
    /// `cell_rows` (`[c·nb + i]`, every row free), values zero: the host's
    /// ([`Csr::cells_pattern`] on `cpu`'s threads) unless the backend
    /// builds the same one faster.
    fn cells_pattern(&self, cpu: &CpuBackend, n_rows: usize, nb: usize, cell_rows: &[u32]) -> Result<Csr<f64>> {
        Csr::cells_pattern(cpu, n_rows, nb, cell_rows, &[])
    }

    /// Whether the backend makes the element kernels' cell data from the
    /// nodes itself ([`Setup::cells`]), where the host's E-vectors would
    /// be the largest arrays of its set-up.
    fn gathers_cells(&self) -> bool {
        false
    }

    /// Refuses `what`, which stores `bytes` on the backend at the least,
    /// when its free memory is smaller ([`Error::ProblemTooLarge`] on a
    /// device; [`Error::HostMemoryTooSmall`] where the backend's memory
    /// is the host's, as the CPU backend's is).
    fn ensure_fits(&self, what: &str, bytes: usize) -> Result<()> {
        crate::memory::ensure_host(what, bytes)
    }

    /// Uploaded data and prepared kernels.
    type State;
    /// Copies the set-up to the backend, to sum element values by
    /// `scatter` (atomics or SpMV) and assemble the tangent in `tangent`;
    /// with `None` the tangent's assembly maps stay behind (its element
    /// matrices are applied as they are). Element arrays summed by SpMV
    /// are [`assembly::padded`].
    fn prepare<K: Kernels<f64> + 'static>(&self, setup: &Setup<K>, tangent: Option<SpmvFormat>, scatter: Scatter) -> Result<Self::State>;
    /// The physics' auxiliary fields (E-vector layout for nodal fields,
    /// per cell otherwise) as the element kernels read them.
    fn aux<'s>(&self, s: &'s Self::State) -> &'s Self::Vector<f64>;
    /// The same, to update between solves: point histories, such as an
    /// ionic model's state, moved forward after each time step.
    fn aux_mut<'s>(&self, s: &'s mut Self::State) -> &'s mut Self::Vector<f64>;
    /// E-vector `ue` of the global `u`.
    fn gather(&self, s: &Self::State, u: &Self::Vector<f64>, ue: &mut Self::Vector<f64>) -> Result<()>;
    /// Element residuals, or element tangents when `jacobian`.
    fn elements(&self, s: &Self::State, jacobian: bool, ue: &Self::Vector<f64>, out: &mut Self::Vector<f64>) -> Result<()>;
    /// Replaces what the residual's assembly starts from (the set-up's
    /// `residual_base`: minus the load in free rows).
    fn set_residual_base(&self, s: &mut Self::State, base: &[f64]) -> Result<()>;
    /// The time the physics' pointwise functions see (`Point::t`) in the
    /// evaluations that follow.
    fn set_time(&self, s: &mut Self::State, t: f64);
    /// The global residual, or the tangent's CSR values when `matrix`.
    fn assemble(&self, s: &Self::State, matrix: bool, elem: &Self::Vector<f64>, out: &mut Self::Vector<f64>) -> Result<()>;
    /// 1 / diagonal of the tangent's CSR values.
    fn inverse_diagonal(&self, s: &Self::State, kflat: &Self::Vector<f64>, inv: &mut Self::Vector<f64>) -> Result<()>;
    /// The sparse format the tangent is assembled in by default.
    fn default_format(&self) -> SpmvFormat;
    /// The tangent's pattern in `format` and precision `T`, for the
    /// Krylov method (values refilled at every update).
    fn matrix<K: Kernels<f64>, T: crate::Scalar>(&self, s: &Self::State, setup: &Setup<K>, format: SpmvFormat) -> Result<Box<dyn Spmv<Self, T>>>;
    /// `y ← K x` for the element matrices `kelem`, fixed rows and columns
    /// left out, `y = x` in fixed rows.
    fn element_product(&self, s: &Self::State, kelem: &Self::Vector<f64>, x: &Self::Vector<f64>, y: &mut Self::Vector<f64>) -> Result<()>;
    /// `d ←` the diagonal of the matrix of element matrices `kelem` (1 in fixed rows).
    fn element_diagonal(&self, s: &Self::State, kelem: &Self::Vector<f64>, d: &mut Self::Vector<f64>) -> Result<()>;
    /// Whether `auto` stores the tangent of variant `v` partially
    /// assembled (with Jacobi, from degree 2): where this backend's
    /// partial product was measured the faster choice.
    fn auto_partial(&self, v: &fem_kernels::pointwise::Variant) -> bool;
    /// Partial assembly's point data of the cells at the solution
    /// E-vector `ue` ([`crate::operator::pointwise::partial`]), and after
    /// them a boundary term's linearisation by its facet points
    /// ([`Setup::facet_point_values`]).
    fn points(&self, s: &Self::State, ue: &Self::Vector<f64>, g: &mut Self::Vector<f64>) -> Result<()>;
    /// The matrix-free tangent's linearisation point: the solution
    /// E-vector `ue` at the head of `held`, a boundary term's point data
    /// after it, as [`Self::points`] makes them.
    fn hold_state(&self, s: &Self::State, ue: &Self::Vector<f64>, held: &mut Self::Vector<f64>) -> Result<()>;
    /// `y ← F x + (I − F) A (I − F) x`, A partially assembled from point
    /// data `g` (F: the fixed rows), a boundary term's included.
    fn partial_product(&self, s: &Self::State, g: &Self::Vector<f64>, x: &Self::Vector<f64>, y: &mut Self::Vector<f64>) -> Result<()>;
    /// `d ← diag(F + (I − F) A (I − F))` likewise.
    fn partial_diagonal(&self, s: &Self::State, g: &Self::Vector<f64>, d: &mut Self::Vector<f64>) -> Result<()>;
    /// `y ← F x + (I − F) J(u) (I − F) x`, the Jacobian's matrix-free
    /// action at the state `held` ([`Self::hold_state`]) on the cells
    /// ([`crate::operator::pointwise::matrix_free`]), a boundary term's
    /// from its point data.
    fn free_product(&self, s: &Self::State, held: &Self::Vector<f64>, x: &Self::Vector<f64>, y: &mut Self::Vector<f64>) -> Result<()>;
    /// `d ← diag(F + (I − F) J(u) (I − F))` likewise.
    fn free_diagonal(&self, s: &Self::State, held: &Self::Vector<f64>, d: &mut Self::Vector<f64>) -> Result<()>;
    /// The backend and its kernels, for reports.
    fn describe(&self, s: &Self::State) -> String;
}

/// When to stop.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct NewtonOptions {
    /// Converged when ‖R‖ ≤ max(rtol · ‖R₀‖, atol).
    pub rtol: f64,
    /// Absolute floor of the residual norm.
    pub atol: f64,
    /// Newton updates at most.
    pub max_iterations: usize,
    /// Relative tolerance of the Krylov method on each update.
    pub krylov_rtol: f64,
    /// CG iterations per update at most.
    pub max_krylov: usize,
    /// Step halvings of the line search at most.
    pub max_halvings: usize,
    /// How a step length is accepted.
    pub line_search: LineSearch,
    /// The Krylov method of the updates.
    pub krylov: Krylov,
    /// Its preconditioner.
    pub precond: Precond,
    /// How the tangent is stored for it.
    pub assembly: Assembly,
    /// How element residuals and tangents are summed into global ones:
    /// atomics (the default) or SpMV with 0/1 gather matrices
    /// (deterministic); not by colour.
    pub scatter: Scatter,
    /// Keep the first update's tangent and preconditioner for the
    /// following updates (modified Newton, PETSc's `-snes_lag_jacobian
    /// -2`): for a linear problem, whose tangent never changes, the
    /// updates after the first are iterative refinement at no assembly.
    pub lag_tangent: bool,
    /// Precision of the linear solves: f32 solves each update on rounded
    /// copies of the tangent, to no less than
    /// [`linear::F32_KRYLOV_FLOOR`], and Newton's f64 residual refines.
    pub precision: Precision,
}

/// How Newton's step length is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LineSearch {
    /// Halve the step until ‖R‖ falls (Armijo on the residual norm, as
    /// PETSc's `bt`): robust far from the solution.
    Backtracking,
    /// Take the full step unless the residual there is not finite (PETSc's
    /// `basic`): for problems where ‖R‖ is a poor merit function, such as
    /// slender hyperelastic structures, whose internal forces dwarf the
    /// load, so that a good step may raise ‖R‖ on the way.
    Full,
}

impl LineSearch {
    /// Whether a step of length `alpha` that took ‖R‖ from `now` to
    /// `next` is taken. A step to where the physics is undefined (a
    /// non-finite residual) counts as no decrease.
    pub fn accepts(self, now: f64, next: f64, alpha: f64) -> bool {
        match self {
            LineSearch::Backtracking => next < (1.0 - 1e-4 * alpha) * now,
            LineSearch::Full => next.is_finite(),
        }
    }
}

/// The step length of Newton update `update` from ‖R‖ = `now`: 1, halved
/// until `o.line_search` accepts ‖R‖ at the step, which `residual(alpha)`
/// evaluates (leaving the trial state behind), at most `o.max_halvings`
/// times; the length and ‖R‖ there. A step to where the physics is
/// undefined (a non-finite residual) counts as no decrease.
pub fn line_search(o: &NewtonOptions, now: f64, update: usize, mut residual: impl FnMut(f64) -> Result<f64>) -> Result<(f64, f64)> {
    let mut alpha = 1.0;
    loop {
        let next = residual(alpha)?;
        if o.line_search.accepts(now, next, alpha) {
            return Ok((alpha, next));
        }
        if alpha <= 0.5f64.powi(o.max_halvings as i32) {
            return Err(Error::InvalidArgument(format!("Newton update {update}: no step length down to {alpha} lowers ‖R‖ = {now:.3e}; start closer to the solution")));
        }
        alpha *= 0.5;
    }
}

impl Default for NewtonOptions {
    fn default() -> Self {
        Self { rtol: 1e-10, atol: 1e-13, max_iterations: 30, krylov_rtol: 1e-10, max_krylov: 20_000, max_halvings: 10, line_search: LineSearch::Backtracking, krylov: Krylov::Cg, precond: Precond::Jacobi, assembly: Assembly::Auto, scatter: Scatter::Atomic, lag_tangent: false, precision: Precision::F64 }
    }
}

/// One Newton update.
#[derive(Clone, Debug, Serialize)]
pub struct NewtonStep {
    /// Number of the update, from 1.
    pub iteration: usize,
    /// ‖R‖ after it.
    pub residual: f64,
    /// CG iterations of its linear solve.
    pub krylov_iterations: usize,
    /// Whether CG reached its tolerance within its iteration limit (an
    /// update that did not is still taken: inexact Newton).
    pub krylov_converged: bool,
    /// The step length the line search took (1 = the full Newton step).
    pub step_length: f64,
    /// The Krylov method's relative residual estimate after each of its
    /// iterations, the start (1) first; left out of JSON reports.
    #[serde(skip)]
    pub krylov_history: Vec<f64>,
}

/// Newton's linear solves in the precision of [`NewtonOptions::precision`].
enum Solve<B: NewtonOps> {
    F64(Linear<B, f64>),
    F32(Linear<B, f32>),
}

/// The outcome of a solve.
#[derive(Clone, Debug, Serialize)]
pub struct NewtonReport {
    /// The backend and its kernels.
    pub kernels: String,
    /// The Krylov method of the updates.
    pub krylov: Krylov,
    /// Its preconditioner.
    pub precond: Precond,
    /// Precision of the linear solves.
    pub precision: Precision,
    /// Rows of the system (nodes × components), fixed ones included.
    pub rows: usize,
    /// ‖R‖ at the start and after every update.
    pub residuals: Vec<f64>,
    /// Every update.
    pub steps: Vec<NewtonStep>,
    /// CG iterations over all updates.
    pub krylov_iterations: usize,
    /// Whether ‖R‖ reached the tolerance.
    pub converged: bool,
    /// Seconds of uploads and format set-up on the backend.
    pub setup_seconds: f64,
    /// Seconds per phase of the iterations (element evaluation, assembly,
    /// the preconditioner's set-up, CG and the line search's vector
    /// updates under `solve`).
    pub split: Split,
    /// AMG's hierarchy and set-up time, where it preconditions (its
    /// set-up also counts under `split.precond`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amg: Option<precond::AmgReport>,
}

/// Solves R(u) = 0 from `initial` (whose fixed rows hold the Dirichlet
/// values, kept throughout) on backend `b`; `progress` sees every update.
/// Returns u on the host and the report; an error when the tangent is not
/// positive definite, the line search finds no decrease or the residual
/// stops being finite.
pub fn solve<B: NewtonOps, K: Kernels<f64> + 'static>(b: &B, setup: &Setup<K>, initial: &[f64], o: &NewtonOptions, progress: &mut dyn FnMut(&NewtonStep)) -> Result<(Vec<f64>, NewtonReport)> {
    crate::error::same_len("initial guess", initial.len(), setup.n_rows())?;
    solve_in(b, Workspace::new(b, setup, o)?, initial, o, progress)
}

/// [`solve`] of a set-up nothing else needs: its host copies go as the
/// backend takes them, and `levels` adds its preconditioner's levels
/// after that ([`Workspace::of_setup_then`]), which lowers the host's
/// peak memory of a large solve.
pub fn solve_owned<B: NewtonOps, K: Kernels<f64> + 'static>(b: &B, setup: Setup<K>, initial: &[f64], o: &NewtonOptions, levels: Then<'_, K>, progress: &mut dyn FnMut(&NewtonStep)) -> Result<(Vec<f64>, NewtonReport)> {
    crate::error::same_len("initial guess", initial.len(), setup.n_rows())?;
    solve_in(b, Workspace::of_setup_then(b, setup, o, levels)?, initial, o, progress)
}

/// What [`Workspace::of_setup_then`] does to a set-up once its finest
/// level is on the backend: adds the coarse levels of multigrid or AMG's
/// low-order level ([`Setup::with_multigrid_on`], [`Setup::with_low_order`]).
pub type Then<'a, K> = &'a mut dyn FnMut(Setup<K>) -> Result<Setup<K>>;

/// Newton from `initial` in the workspace `w`.
fn solve_in<B: NewtonOps>(b: &B, mut w: Workspace<B>, initial: &[f64], o: &NewtonOptions, progress: &mut dyn FnMut(&NewtonStep)) -> Result<(Vec<f64>, NewtonReport)> {
    let mut u = b.upload(initial)?;
    let report = NewtonReport { setup_seconds: w.setup_seconds, ..w.newton(b, &mut u, o, None, progress)? };
    Ok((b.download(&u)?, report))
}

/// The tangent `∂R/∂u` at `u` (fixed rows and columns as the solve holds
/// them: a unit diagonal), assembled on backend `b` and returned on the
/// host: for a look at the operator, or to hand it to another solver.
pub fn tangent_at<B: NewtonOps, K: Kernels<f64> + 'static>(b: &B, setup: &Setup<K>, u: &[f64]) -> Result<Csr<f64>> {
    Ok(linearised_at(b, setup, u, false)?.0)
}

/// The linear system of a Newton update from `u`: the tangent at `u` (as
/// [`tangent_at`]) and minus the residual there, on the host. From the
/// start ([`Constraints::initial`](crate::space::Constraints::initial))
/// of a linear physics it is the whole problem: for handing it to
/// another solver, as `fem solve --write-system` does.
pub fn system_at<B: NewtonOps, K: Kernels<f64> + 'static>(b: &B, setup: &Setup<K>, u: &[f64]) -> Result<(Csr<f64>, Vec<f64>)> {
    let (a, r) = linearised_at(b, setup, u, true)?;
    Ok((a, r.unwrap_or_default().into_iter().map(|v| -v).collect()))
}

/// The tangent at `u`, and the residual there if `residual`.
fn linearised_at<B: NewtonOps, K: Kernels<f64> + 'static>(b: &B, setup: &Setup<K>, u: &[f64], residual: bool) -> Result<(Csr<f64>, Option<Vec<f64>>)> {
    crate::error::same_len("state", u.len(), setup.n_rows())?;
    let state = b.prepare(setup, Some(b.default_format()), Scatter::Atomic)?;
    let (u, mut ue) = (b.upload(u)?, b.zeros(setup.gather.len())?);
    let (mut kelem, mut kflat) = (b.zeros(setup.entry_len())?, b.zeros(setup.csr.nnz())?);
    b.gather(&state, &u, &mut ue)?;
    b.elements(&state, true, &ue, &mut kelem)?;
    b.assemble(&state, true, &kelem, &mut kflat)?;
    let r = match residual {
        true => {
            let (mut relem, mut r) = (b.zeros(assembly::padded(setup.gather.len(), Scatter::Atomic))?, b.zeros(setup.n_rows())?);
            b.elements(&state, false, &ue, &mut relem)?;
            b.assemble(&state, false, &relem, &mut r)?;
            Some(b.download(&r)?)
        }
        false => None,
    };
    Ok((setup.csr.with_values(b.download(&kflat)?), r))
}

/// Linear terms a time step adds to the residual: the residual becomes
/// `weight · R(u) + c · M u − rhs` and the tangent `weight · K + c · M`.
pub struct Extra<'a, B: Backend> {
    /// Factor on R and its tangent.
    pub weight: f64,
    /// Factor on the mass matrix.
    pub c: f64,
    /// M in the tangent's format, zero in fixed rows (its fixed columns
    /// carry Dirichlet values that change in time into the free rows).
    pub mass: &'a dyn Spmv<B, f64>,
    /// M's CSR values (zero in fixed rows and columns).
    pub mass_values: &'a B::Vector<f64>,
    /// M's diagonal (zero in fixed rows).
    pub mass_diagonal: &'a B::Vector<f64>,
    /// The known part.
    pub rhs: &'a B::Vector<f64>,
}

/// The tangent's CSR values `kflat` from the element tangents `kelem`,
/// as `weight · K + c · M` with `M`'s values when a time step's terms are
/// given: every level of a solve assembles its tangent through this.
pub(super) fn tangent_values<B: NewtonOps>(b: &B, state: &B::State, kelem: &B::Vector<f64>, kflat: &mut B::Vector<f64>, step: Option<(&Extra<B>, &B::Vector<f64>)>) -> Result<()> {
    b.assemble(state, true, kelem, kflat)?;
    match step {
        Some((e, mass)) => b.axpby(e.c, mass, e.weight, kflat),
        None => Ok(()),
    }
}

/// What a Newton solve keeps on the backend: the prepared physics, the
/// tangent's format and the work vectors, reused by every solve of a
/// time-dependent problem.
pub struct Workspace<B: NewtonOps> {
    state: B::State,
    storage: Storage,
    trial: B::Vector<f64>,
    ue: B::Vector<f64>,
    relem: B::Vector<f64>,
    kelem: B::Vector<f64>,
    r: B::Vector<f64>,
    kflat: B::Vector<f64>,
    delta: B::Vector<f64>,
    mu: B::Vector<f64>,
    /// The tangent's f64 inverse diagonal.
    jacobi: Jacobi<B, f64>,
    /// The tangent (`None` for element matrices), its preconditioner and
    /// the Krylov method's vectors, in the solve's precision.
    linear: Solve<B>,
    n: usize,
    /// Seconds of [`Workspace::new`]: uploads and format set-up.
    pub setup_seconds: f64,
}

/// A set-up on the backend before its preconditioner: the tangent's
/// storage, the uploaded state and the lengths of the element vectors
/// (`ue`, `relem`, `kelem`).
struct Uploaded<B: NewtonOps> {
    storage: Storage,
    state: B::State,
    lengths: [usize; 3],
}

impl<B: NewtonOps> Workspace<B> {
    /// Uploads `setup`, stores its tangent as `o.assembly` says, builds
    /// the preconditioner `o.precond` and allocates the work vectors.
    pub fn new<K: Kernels<f64> + 'static>(b: &B, setup: &Setup<K>, o: &NewtonOptions) -> Result<Self> {
        let start = Instant::now();
        let uploaded = Self::upload(b, setup, o)?;
        Self::finish(b, setup, o, uploaded, start)
    }

    /// [`Workspace::new`] of a set-up nothing else needs: the host's
    /// copies of its finest cell data (coordinates and auxiliary
    /// E-vectors, a set-up's largest arrays) and of its maps go as soon
    /// as the backend holds its own, before the preconditioner is built,
    /// where they would add to the set-up's peak of host memory.
    pub fn of_setup<K: Kernels<f64> + 'static>(b: &B, setup: Setup<K>, o: &NewtonOptions) -> Result<Self> {
        Self::of_setup_then(b, setup, o, &mut Ok)
    }

    /// [`Workspace::of_setup`] with the preconditioner's levels added by
    /// `levels` once the finest level is on the backend and the host has
    /// let go of its cell data and maps: the coarse levels are then made
    /// without those beside them, where the host's memory peaked. Their
    /// time is the host's, not counted in `setup_seconds`.
    pub fn of_setup_then<K: Kernels<f64> + 'static>(b: &B, mut setup: Setup<K>, o: &NewtonOptions, levels: Then<'_, K>) -> Result<Self> {
        let start = Instant::now();
        let uploaded = Self::upload(b, &setup, o)?;
        setup.release_uploaded();
        let host = Instant::now();
        let mut setup = levels(setup)?;
        let host = host.elapsed();
        setup.release_aux();
        Self::finish(b, &setup, o, uploaded, start + host)
    }

    /// The options checked, the tangent's storage chosen and `setup`
    /// uploaded; the lengths of its element vectors.
    fn upload<K: Kernels<f64> + 'static>(b: &B, setup: &Setup<K>, o: &NewtonOptions) -> Result<Uploaded<B>> {
        if o.scatter == Scatter::Colour {
            return Err(Scatter::Colour.unavailable("Newton's assembly"));
        }
        if o.precond == Precond::Spai && matches!(o.krylov, Krylov::Cg) {
            return Err(Error::InvalidArgument("SPAI(1) is not symmetric, so it does not precondition CG: use BiCGStab, GMRES or Richardson, or SAINV".into()));
        }
        let storage = o.assembly.resolve(setup, o.precond, o.precision, b.default_format(), b.auto_partial(&setup.physics.variant))?;
        let state = b.prepare(setup, storage.format(), o.scatter)?;
        let lengths = [setup.gather.len(), assembly::padded(setup.gather.len(), o.scatter), storage.values(setup, o.scatter)];
        Ok(Uploaded { storage, state, lengths })
    }

    /// The tangent's storage, the preconditioner and the work vectors of
    /// the prepared `setup`.
    fn finish<K: Kernels<f64> + 'static>(b: &B, setup: &Setup<K>, o: &NewtonOptions, uploaded: Uploaded<B>, start: Instant) -> Result<Self> {
        let Uploaded { storage, state, lengths: [ue, relem, kelem] } = uploaded;
        let n = setup.n_rows();
        let values = match storage {
            Storage::Sparse(_) => setup.csr.nnz(),
            Storage::Lma | Storage::Partial | Storage::MatrixFree => 0,
        };
        let linear = match o.precision {
            Precision::F64 => Solve::F64(Linear::new(b, &state, setup, storage.format(), o)?),
            Precision::F32 => Solve::F32(Linear::new(b, &state, setup, storage.format(), o)?),
        };
        let mut w = Self {
            storage,
            linear,
            trial: b.zeros(n)?,
            ue: b.zeros(ue)?,
            relem: b.zeros(relem)?,
            kelem: b.zeros(kelem)?,
            r: b.zeros(n)?,
            kflat: b.zeros(values)?,
            delta: b.zeros(n)?,
            mu: b.zeros(n)?,
            jacobi: Jacobi::zeros(b, n)?,
            n,
            setup_seconds: 0.0,
            state,
        };
        b.synchronize()?;
        w.setup_seconds = start.elapsed().as_secs_f64();
        Ok(w)
    }

    /// Another matrix in the tangent's format (the backend's default one
    /// when the tangent is element matrices), its values `values` (CSR
    /// values of the set-up's pattern, on the backend): the mass matrix of
    /// a time-dependent problem.
    pub fn matrix_like<K: Kernels<f64>>(&self, b: &B, setup: &Setup<K>, values: &B::Vector<f64>) -> Result<Box<dyn Spmv<B, f64>>> {
        let format = match self.storage {
            Storage::Sparse(f) => f,
            Storage::Lma | Storage::Partial | Storage::MatrixFree => b.default_format(),
        };
        let mut m = b.matrix(&self.state, setup, format)?;
        m.reorder(b, values)?;
        Ok(m)
    }

    /// Scales the set-up's load by `factor` for the solves that follow:
    /// load stepping (continuation) on one workspace, without preparing
    /// the backend again.
    pub fn set_load_factor<K: Kernels<f64>>(&mut self, b: &B, setup: &Setup<K>, factor: f64) -> Result<()> {
        let base: Vec<f64> = setup.residual_base.iter().map(|v| v * factor).collect();
        self.set_residual_base(b, &base)
    }

    /// Replaces what the residual's assembly starts from: minus the load
    /// in free rows, zero in fixed ones (the set-up's `residual_base`
    /// form), for the solves that follow.
    pub fn set_residual_base(&mut self, b: &B, base: &[f64]) -> Result<()> {
        b.set_residual_base(&mut self.state, base)
    }

    /// Gives multigrid's coarse levels the mass matrices of `setup`'s
    /// levels, from `fine`, the finest one's values of its pattern
    /// ([`Levels::masses`]), for time steps; nothing without multigrid.
    pub fn set_level_masses<K: Kernels<f64>>(&mut self, b: &B, cpu: &CpuBackend, setup: &Setup<K>, fine: &[f64]) -> Result<()> {
        let prepared_levels = match &self.linear {
            Solve::F64(l) => l.precond.levels(),
            Solve::F32(l) => l.precond.levels(),
        };
        let (Some(levels), true) = (&setup.levels, prepared_levels) else { return Ok(()) };
        let masses = levels.masses(cpu, &setup.csr, fine)?;
        match &mut self.linear {
            Solve::F64(l) => l.precond.set_masses(b, &masses),
            Solve::F32(l) => l.precond.set_masses(b, &masses),
        }
    }

    /// The time the physics' pointwise functions see (`Point::t`) in the
    /// solves and residuals that follow (0 until set).
    pub fn set_time(&mut self, b: &B, t: f64) {
        b.set_time(&mut self.state, t);
        match &mut self.linear {
            Solve::F64(l) => l.precond.set_time(b, t),
            Solve::F32(l) => l.precond.set_time(b, t),
        }
    }

    /// R(u) at the solution of the last [`Workspace::newton`], which ran
    /// with `e`'s terms, into `out`: recovered from the residual that ended
    /// it (weight · R + c · M u − rhs, with M u beside it) instead of
    /// evaluating the physics again, as the θ-method's explicit part at the
    /// next step needs.
    pub fn last_physics_residual(&self, b: &B, e: &Extra<B>, out: &mut B::Vector<f64>) -> Result<()> {
        b.copy(&self.r, out)?;
        b.axpy(-e.c, &self.mu, out)?;
        b.axpby(1.0 / e.weight, e.rhs, 1.0 / e.weight, out)
    }

    /// The physics' auxiliary fields on the backend, as its element
    /// kernels read them.
    pub fn aux(&self, b: &B) -> &B::Vector<f64> {
        b.aux(&self.state)
    }

    /// The physics' auxiliary fields on the backend, to update between
    /// solves (the hook of point histories: an ionic model's state moved
    /// forward after each time step), and beside them the E-vector of the
    /// point where the last [`Workspace::newton`] ended: its solution's.
    /// The coarse levels of multigrid keep the fields they were built with.
    pub fn aux_with_solution(&mut self, b: &B) -> (&mut B::Vector<f64>, &B::Vector<f64>) {
        (b.aux_mut(&mut self.state), &self.ue)
    }

    /// The backend's kernels and the tangent's storage, for reports.
    pub fn describe(&self, b: &B) -> String {
        format!("{}, {}", b.describe(&self.state), self.storage.describe())
    }

    /// R(u) (no extra terms) into `out`.
    pub fn residual_into(&mut self, b: &B, u: &B::Vector<f64>, out: &mut B::Vector<f64>) -> Result<()> {
        let mut split = Split::default();
        Self::residual(b, &self.state, u, &mut self.ue, &mut self.relem, out, &mut self.mu, None, &mut split)?;
        Ok(())
    }

    /// ‖·‖ of the residual at `at` (with `extra`'s terms), left in `r`,
    /// with the E-vector of `at` left in `ue`.
    #[allow(clippy::too_many_arguments)]
    fn residual(b: &B, state: &B::State, at: &B::Vector<f64>, ue: &mut B::Vector<f64>, relem: &mut B::Vector<f64>, r: &mut B::Vector<f64>, mu: &mut B::Vector<f64>, extra: Option<&Extra<B>>, split: &mut Split) -> Result<f64> {
        timed(b, &mut split.element, || {
            b.gather(state, at, ue)?;
            b.elements(state, false, ue, relem)
        })?;
        timed(b, &mut split.assembly, || b.assemble(state, false, relem, r))?;
        if let Some(e) = extra {
            timed(b, &mut split.solve, || {
                e.mass.apply(b, at, mu)?;
                b.axpby(e.c, mu, e.weight, r)?;
                b.axpy(-1.0, e.rhs, r)
            })?;
        }
        b.norm2(r)
    }

    /// Newton from `u` (updated in place), with `extra`'s terms if any; its
    /// report counts no set-up (that is the workspace's).
    pub fn newton(&mut self, b: &B, u: &mut B::Vector<f64>, o: &NewtonOptions, extra: Option<&Extra<B>>, progress: &mut dyn FnMut(&NewtonStep)) -> Result<NewtonReport> {
        let n = self.n;
        let mut split = Split::default();
        let first = Self::residual(b, &self.state, u, &mut self.ue, &mut self.relem, &mut self.r, &mut self.mu, extra, &mut split)?;
        if !first.is_finite() {
            return Err(Error::InvalidArgument("the residual at the start is not finite".into()));
        }
        let mut residuals = vec![first];
        let tol = (o.rtol * residuals[0]).max(o.atol);
        let mut steps = Vec::new();
        while *residuals.last().expect("one residual") > tol && steps.len() < o.max_iterations {
            let now = *residuals.last().expect("one residual");
            // `ue` holds the gather of u from its residual.
            let (state, ue, kelem, kflat) = (&self.state, &self.ue, &mut self.kelem, &mut self.kflat);
            let (linear, jacobi, d, storage) = (&mut self.linear, &mut self.jacobi, &mut self.trial, self.storage);
            // a lagged tangent keeps the first update's
            let fresh = steps.is_empty() || !o.lag_tangent;
            if fresh {
                timed(b, &mut split.element, || storage.linearise(b, state, ue, kelem))?;
                timed(b, &mut split.assembly, || {
                    match storage {
                        Storage::Sparse(_) => {
                            tangent_values(b, state, kelem, kflat, extra.map(|e| (e, e.mass_values)))?;
                            b.inverse_diagonal(state, kflat, &mut jacobi.inv_diag)?;
                        }
                        Storage::Lma | Storage::Partial | Storage::MatrixFree => cell_inverse_diagonal(b, storage, state, kelem, extra, d, &mut jacobi.inv_diag)?,
                    }
                    match linear {
                        Solve::F64(l) => l.update(b, kflat, &jacobi.inv_diag),
                        Solve::F32(l) => l.update(b, kflat, &jacobi.inv_diag),
                    }
                })?;
                timed(b, &mut split.precond, || match linear {
                    Solve::F64(l) => l.update_precond(b, u, kflat, &jacobi.inv_diag, extra),
                    Solve::F32(l) => l.update_precond(b, u, kflat, &jacobi.inv_diag, extra),
                })?;
            }
            let opts = CgOptions { rtol: o.krylov_rtol, max_iterations: o.max_krylov, jacobi: false };
            let (r, delta, kelem, inv) = (&self.r, &mut self.delta, &self.kelem, &self.jacobi.inv_diag);
            let scratch = std::cell::RefCell::new(&mut self.mu);
            let cg = timed(b, &mut split.solve, || {
                let lma = CellTangent { storage, state, kelem, extra, scratch, n };
                let elements = storage.by_cells().then_some(&lma as &dyn LinearOperator<B, f64>);
                match linear {
                    Solve::F64(l) => l.solve(b, o.krylov, elements, inv, r, delta, opts),
                    Solve::F32(l) => l.solve(b, o.krylov, elements, inv, r, delta, opts),
                }
            })
            .map_err(|e| Error::InvalidArgument(format!("Newton update {}: {e}", steps.len() + 1)))?;
            let (alpha, next) = line_search(o, now, steps.len() + 1, |alpha| {
                let (trial, delta) = (&mut self.trial, &self.delta);
                timed(b, &mut split.solve, || {
                    b.copy(u, trial)?;
                    b.axpy(-alpha, delta, trial)
                })?;
                Self::residual(b, &self.state, &self.trial, &mut self.ue, &mut self.relem, &mut self.r, &mut self.mu, extra, &mut split)
            })?;
            std::mem::swap(u, &mut self.trial);
            residuals.push(next);
            let s = NewtonStep { iteration: steps.len() + 1, residual: next, krylov_iterations: cg.iterations, krylov_converged: cg.converged, step_length: alpha, krylov_history: cg.history };
            progress(&s);
            steps.push(s);
        }
        let converged = *residuals.last().expect("one residual") <= tol;
        Ok(NewtonReport { kernels: self.describe(b), krylov: o.krylov, precond: o.precond, precision: o.precision, rows: n, krylov_iterations: steps.iter().map(|s| s.krylov_iterations).sum(), residuals, steps, converged, setup_seconds: 0.0, split, amg: match &self.linear {
            Solve::F64(l) => l.precond.amg(),
            Solve::F32(l) => l.precond.amg(),
        } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::simplex::SimplexBox;
    use crate::operator::pointwise::Aux;
    use crate::space::Space;
    use fem_kernels::physics::Poisson;

    /// −Δu = 0 with the boundary values of a linear function: P1 and P2
    /// reproduce it, so the fixed rows and the skipped entries are right.
    #[test]
    fn dirichlet_rows_reproduce_a_linear_solution() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        for dim in [2, 3] {
            let mesh = SimplexBox::unstructured(dim, 3, 4).build().unwrap();
            for degree in [1, 2] {
                let space = Space::simplex(&mesh, degree).unwrap();
                let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
                let setup = Setup::<Poisson>::with_aux(&cpu, &space, Aux::Nodal(&coefficients)).unwrap();
                let exact = |x: &[f64; 3]| 1.0 + x[0] - 2.0 * x[1] + 0.5 * x[2];
                // fixed rows skip every entry of theirs, and so do their columns
                let nl = space.nb();
                for (k, &p) in setup.entry_pos().iter().enumerate() {
                    let (e, i, j) = (k / (nl * nl), k / nl % nl, k % nl);
                    let (r, c) = (setup.gather[e * nl + i] as usize, setup.gather[e * nl + j] as usize);
                    assert_eq!(p == NONE, setup.fixed[r] || setup.fixed[c]);
                }
                let start: Vec<f64> = space.dof_coords.iter().zip(&space.boundary).map(|(x, &b)| if b { exact(x) } else { 0.0 }).collect();
                let (u, r) = solve(&cpu, &setup, &start, &NewtonOptions::default(), &mut |_| {}).unwrap();
                assert!(r.converged && r.steps.len() == 1, "{dim}D P{degree}: {:?}", r.residuals);
                let worst = u.iter().zip(&space.dof_coords).map(|(v, x)| (v - exact(x)).abs()).fold(0.0, f64::max);
                assert!(worst < 1e-9, "{dim}D P{degree}: {worst:e}");
            }
        }
    }

    /// CG, BiCGStab and GMRES solve the same updates to the same solution.
    #[test]
    fn every_krylov_method_gives_the_same_solution() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let mesh = SimplexBox::unstructured(2, 6, 2).build().unwrap();
        let space = Space::simplex(&mesh, 2).unwrap();
        let setup = Setup::<fem_kernels::physics::MinimalSurface>::new(&cpu, &space).unwrap();
        let start: Vec<f64> = space.dof_coords.iter().zip(&space.boundary).map(|(x, &b)| if b { x[0] * x[1] } else { 0.0 }).collect();
        let mut solutions = Vec::new();
        for krylov in [Krylov::Cg, Krylov::BiCgStab, Krylov::Gmres { restart: 20 }] {
            let o = NewtonOptions { krylov, ..Default::default() };
            let (u, r) = solve(&cpu, &setup, &start, &o, &mut |_| {}).unwrap();
            assert!(r.converged && r.steps.iter().all(|s| s.krylov_converged), "{krylov:?}: {:?}", r.residuals);
            solutions.push(u);
        }
        for u in &solutions[1..] {
            let diff = u.iter().zip(&solutions[0]).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(diff < 1e-9, "{diff:e}");
        }
    }

    /// A workspace's load factor scales the set-up's load: on a linear
    /// problem with zero boundary values, half the load gives half the
    /// solution, and a factor of 1 restores it, without a new workspace.
    #[test]
    fn a_load_factor_scales_the_load_on_one_workspace() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let space = Space::simplex(&SimplexBox::unstructured(2, 4, 3).build().unwrap(), 2).unwrap();
        let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
        let bcs = crate::space::Constraints::none(&space, 1).dirichlet(&space, &crate::space::BoundaryPart::All, |_, u| u[0] = 0.0).unwrap();
        let load = crate::space::Load::zero(&space, 1).source(&space, |x, f| f[0] = 1.0 + x[0] * x[1]);
        let setup = Setup::<Poisson>::constrained(&cpu, &space, Aux::Nodal(&coefficients), &bcs, Some(&load)).unwrap();
        let o = NewtonOptions { rtol: 1e-12, krylov_rtol: 1e-13, ..Default::default() };
        let mut w = Workspace::new(&cpu, &setup, &o).unwrap();
        let mut solve_at = |factor: f64| {
            w.set_load_factor(&cpu, &setup, factor).unwrap();
            let mut u = bcs.initial();
            assert!(w.newton(&cpu, &mut u, &o, None, &mut |_| {}).unwrap().converged);
            u
        };
        let (full, half, again) = (solve_at(1.0), solve_at(0.5), solve_at(1.0));
        let scale = full.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(scale > 1e-3);
        for ((f, h), a) in full.iter().zip(&half).zip(&again) {
            assert!((f - 2.0 * h).abs() < 1e-9 * scale && (f - a).abs() < 1e-12 * scale, "{f} {h} {a}");
        }
    }

    #[test]
    fn a_wrong_length_start_is_an_error() {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let space = Space::simplex(&SimplexBox::unstructured(2, 2, 1).build().unwrap(), 1).unwrap();
        let setup = Setup::<fem_kernels::physics::MinimalSurface>::new(&cpu, &space).unwrap();
        assert!(solve(&cpu, &setup, &[0.0; 3], &NewtonOptions::default(), &mut |_| {}).is_err());
    }
}
