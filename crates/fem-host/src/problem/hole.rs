//! The multigrid benchmark of Geveler et al.: −Δu = 1 on a rectangle with
//! a circular hole (3D: a box with a spherical hole), u = 0 on the outer
//! and u = 1 on the inner boundary, on an unstructured mesh refined
//! uniformly into a hierarchy; solved by CG, BiCGStab or multigrid with
//! the preconditioners and smoothers of [`crate::solver`], on any backend,
//! stopping at a relative residual of 1e-8 by default.
//!
//! It is the pipeline's Poisson physics on nested spaces of the curved
//! refinement ([`NestedSpaces::with_refinement`]), renumbered by the
//! paper's orderings ([`NestedSpaces::renumbered`]), with Dirichlet
//! values on the boundary and one Newton update
//! ([`crate::problem::nonlinear`]) whose Krylov method and preconditioner
//! are the benchmark's; multigrid as the solver is Richardson's iteration
//! with one cycle per step. In f32 the linear solves run in single
//! precision and Newton's f64 residual refines them.

use crate::mesh::hole::HoleDomain;
use crate::operator::pointwise::Aux;
use crate::mesh::Mesh;
use crate::problem::nonlinear::{Assembly, Krylov, LineSearch, NewtonOps, NewtonOptions, NewtonSizes, Precision, Scatter, Setup, Workspace};
use crate::problem::nonlinear::precond::DENSE_COARSE;
use crate::problem::nonlinear::Precond as Pipeline;
use crate::solver::amg::AmgOptions;
use crate::solver::multigrid::{Cycle, MgOptions, Smoother};
use crate::solver::ordering::Ordering;
use crate::space::nested::refined_sizes;
use crate::space::{BoundaryPart, CellMesh, Constraints, NestedSpaces};
use crate::stages::{StageClock, StageSeconds};
use crate::sparse::SpmvFormat;
use crate::{CpuBackend, Error, Result};
use fem_kernels::physics::Poisson;
use serde::Serialize;
use std::time::Instant;

/// The iterative method of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Solver {
    /// Preconditioned conjugate gradients; needs a symmetric
    /// preconditioner, so not SPAI.
    Cg,
    /// Preconditioned BiCGStab, which also takes the nonsymmetric SPAI(1).
    Bicgstab,
    /// Multigrid cycles as the solver; [`Precond`] then names the smoother
    /// (Jacobi, SAINV, otherwise SPAI).
    Mg,
}

/// The preconditioner of CG or BiCGStab (the smoother of solver `mg`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precond {
    /// None: M = I.
    None,
    /// The inverse diagonal, M = D⁻¹.
    Jacobi,
    /// Multi-colour SSOR (symmetric Gauss–Seidel), each colour's rows in
    /// parallel; not a multigrid smoother.
    Ssor,
    /// SPAI(1), the sparse approximate inverse on the pattern of A; not
    /// symmetric, so not with CG.
    Spai,
    /// SAINV, the factored approximate inverse Z D⁻¹ Zᵀ (symmetric).
    Sainv,
    /// One multigrid V-cycle with [`HoleOptions::smoother`]; not with
    /// solver `mg`.
    Mg,
    /// Smoothed-aggregation AMG from the finest operator alone
    /// ([`HoleOptions::amg`]); with solver `mg`, its cycles are the solver.
    Amg,
}

/// What to build and how to solve it.
#[derive(Clone, Debug)]
pub struct HoleOptions {
    /// 2 (rectangle with a circular hole) or 3 (box with a spherical hole).
    pub dim: usize,
    /// Degree p of the Q_p elements.
    pub degree: usize,
    /// Levels of the hierarchy, the coarse mesh included: the finest mesh
    /// is refined `levels − 1` times.
    pub levels: usize,
    /// The iterative method.
    pub solver: Solver,
    /// The preconditioner (for solver `mg`, the smoother).
    pub precond: Precond,
    /// Multigrid smoother (solver `mg`, or preconditioner `mg`).
    pub smoother: Smoother,
    /// Multigrid cycle of solver `mg` (preconditioner `mg` always uses a
    /// V-cycle).
    pub cycle: Cycle,
    /// AMG's set-up and cycle, for preconditioner `amg`.
    pub amg: AmgOptions,
    /// Pre- and post-smoothing steps (default: the paper's 8 in 2D, 16 in 3D).
    pub smoothing_steps: Option<usize>,
    /// Renumbering of the rows of every level (Geveler et al. §4): it
    /// changes the matrices' bandwidth and memory access, and what the
    /// order-dependent SAINV and SSOR compute.
    pub ordering: Ordering,
    /// Stop at a relative residual ‖r‖/‖b‖ ≤ rtol.
    pub rtol: f64,
    /// Iterations (or multigrid cycles) per linear solve after which it
    /// stops unconverged.
    pub max_iterations: usize,
    /// Precision of the linear solves (f32: refined in f64 by Newton's
    /// residual).
    pub precision: Precision,
    /// Whether the report keeps u_h with its space, for output. Without
    /// it, under multigrid, the finest space's geometry goes once its
    /// set-up is made and the rest of it once the coarse levels are (at
    /// first a third of the set-up's host memory).
    pub field: bool,
}

impl HoleOptions {
    /// Q_`degree` on `levels` levels in `dim` dimensions, solved by
    /// multigrid F-cycles smoothed by SPAI(1) in the original ordering, to
    /// rtol 10⁻⁸ in at most 20 000 cycles, keeping u_h.
    pub fn new(dim: usize, degree: usize, levels: usize) -> Self {
        Self {
            dim,
            degree,
            levels,
            solver: Solver::Mg,
            precond: Precond::Spai,
            smoother: Smoother::Spai,
            cycle: Cycle::F,
            amg: AmgOptions::default(),
            smoothing_steps: None,
            ordering: Ordering::Original,
            rtol: 1e-8,
            max_iterations: 20_000,
            precision: Precision::F64,
            field: true,
        }
    }

    /// The pipeline's Krylov method and preconditioner for these options.
    fn method(&self) -> Result<(Krylov, Pipeline)> {
        let krylov = match self.solver {
            Solver::Cg => Krylov::Cg,
            Solver::Bicgstab => Krylov::BiCgStab,
            Solver::Mg => Krylov::Richardson,
        };
        let precond = match (self.solver, self.precond) {
            (_, Precond::Amg) => Pipeline::Amg(self.amg),
            (Solver::Mg, Precond::Ssor | Precond::Mg) => return Err(Error::InvalidArgument("multigrid smooths with jacobi, spai or sainv (--precond names the smoother)".into())),
            (Solver::Mg, Precond::Jacobi) => Pipeline::Multigrid(self.mg_options(Smoother::Jacobi)),
            (Solver::Mg, Precond::Sainv) => Pipeline::Multigrid(self.mg_options(Smoother::Sainv)),
            (Solver::Mg, _) => Pipeline::Multigrid(self.mg_options(Smoother::Spai)),
            (_, Precond::Mg) => Pipeline::Multigrid(MgOptions { cycle: Cycle::V, ..self.mg_options(self.smoother) }),
            (_, Precond::None) => Pipeline::None,
            (_, Precond::Jacobi) => Pipeline::Jacobi,
            (_, Precond::Ssor) => Pipeline::Ssor,
            (_, Precond::Spai) => Pipeline::Spai,
            (_, Precond::Sainv) => Pipeline::Sainv,
        };
        Ok((krylov, precond))
    }

    /// The paper's cycle, its coarsest level solved exactly (one dense
    /// product on the backend) where the paper runs BiCGStab to 10⁻²,
    /// whose reductions each wait for the device.
    fn mg_options(&self, smoother: Smoother) -> MgOptions {
        let mut o = MgOptions { dense_coarse: DENSE_COARSE, ..MgOptions::paper(self.dim, smoother) };
        o.cycle = self.cycle;
        if let Some(s) = self.smoothing_steps {
            (o.pre, o.post) = (s, s);
        }
        o
    }
}

/// The outcome of one benchmark run, as written to the JSON reports.
#[derive(Clone, Debug, Serialize)]
pub struct HoleReport {
    /// Always `"hole"`: tags the record among other problems' reports.
    pub problem: &'static str,
    /// Space dimension, 2 or 3.
    pub dim: usize,
    /// Element degree p.
    pub degree: usize,
    /// Levels of the hierarchy.
    pub levels: usize,
    /// Cells of the finest mesh.
    pub cells: usize,
    /// Free DOFs of the finest level (the unknowns; the system's other
    /// rows hold the Dirichlet values).
    pub dofs: usize,
    /// Stored nonzeros of the finest matrix.
    pub nnz: usize,
    /// The iterative method.
    pub solver: Solver,
    /// The preconditioner option as given.
    pub precond: Precond,
    /// The multigrid smoother in use; `None` without multigrid.
    pub smoother: Option<Smoother>,
    /// The multigrid cycle in use; `None` without multigrid.
    pub cycle: Option<Cycle>,
    /// Pre- and post-smoothing steps; `None` without multigrid.
    pub smoothing_steps: Option<usize>,
    /// Row ordering of the levels.
    pub ordering: Ordering,
    /// The backend's name (CPU threads or GPU model).
    pub backend: String,
    /// Precision of the linear solves, `f32` or `f64`.
    pub precision: Precision,
    /// Iterations (or multigrid cycles) over all linear solves.
    pub iterations: usize,
    /// Linear solves: one in f64, a few in f32, each refining the last
    /// from the f64 residual.
    pub updates: usize,
    /// ‖b − A x‖/‖b − A x₀‖ in f64, evaluated afresh from the solution
    /// (not a Krylov recurrence's estimate).
    pub relative_residual: f64,
    /// Whether `relative_residual` reached `rtol`.
    pub converged: bool,
    /// Whether a multigrid solve stopped early, unconverged, because its
    /// cycles no longer lowered the residual
    /// ([`crate::solver::multigrid::stalled`]: `rtol` below the precision's
    /// floor).
    pub stalled: bool,
    /// Meshes, spaces, orderings, Dirichlet values, the physics on every
    /// level and its uploads.
    pub setup_seconds: f64,
    /// The operators of every level (element kernels and assembly on the
    /// backend) and the preconditioner or smoothers built from them
    /// (SPAI(1) and SAINV on the host).
    pub assembly_seconds: f64,
    /// Wall time of the iterations, in seconds (synchronised with the
    /// device).
    pub solve_seconds: f64,
    /// ‖r‖/‖b‖ after every iteration, the start first: each linear solve's
    /// own estimates, scaled to the first residual.
    pub history: Vec<f64>,
    /// The command's wall time by stage: the set-up's (mesh hierarchy,
    /// ordering, boundary values, coefficients, sparsity, coarse levels,
    /// uploads), then Newton's phases (element kernels, assembly,
    /// preconditioner set-up, solve) and the solution's download.
    pub stages: Vec<StageSeconds>,
    /// AMG's hierarchy and set-up (counted in `assembly_seconds`), for
    /// preconditioner `amg`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amg: Option<crate::problem::nonlinear::AmgReport>,
    /// u_h on the finest mesh, the hole's Dirichlet values included (for
    /// output files), where [`HoleOptions::field`] asks for it.
    #[serde(skip)]
    pub field: Option<super::field::QpField>,
}

/// Refuses, before its mesh is made, a benchmark whose finest level
/// alone would not fit: on the backend, what Newton's set-up uploads
/// there ([`NewtonSizes`], its pattern counted as the diagonal); on the
/// host, the finest space (cell nodes and vertices, node and vertex
/// positions), the physics' cell data where the host keeps it, the maps
/// and the pattern, and on the CPU backend what it stores as well (its
/// memory is the host's). The command holds more than either: a problem
/// refused would not have fit.
fn ensure_fits<B: NewtonOps>(bk: &B, coarse: &Mesh, o: &HoleOptions, newton: &NewtonOptions) -> Result<()> {
    let refinements = o.levels.saturating_sub(1);
    let (cells, dofs) = refined_sizes(coarse, o.degree, refinements)?;
    let (_, vertices) = refined_sizes(coarse, 1, refinements)?;
    let what = format!("the hole benchmark in {}D, Q{} on {} levels ({cells} cells, {dofs} nodes)", o.dim, o.degree, o.levels);
    let (nb, nv) = ((o.degree + 1).pow(o.dim as u32), 1usize << o.dim);
    let sizes = NewtonSizes::before_pattern(cells, nb, dofs);
    bk.ensure_fits(&what, sizes.device_bytes(false, newton.scatter == Scatter::Spmv))?;
    let words = |count: usize, bytes: usize| count.saturating_mul(bytes);
    // per cell: node and vertex ids (4 B), the gather and residual maps
    // (4 B a node each); per node: its position (24 B), κ and f (16 B),
    // the pattern's diagonal (12 B), row start and diagonal position (4 B
    // each), residual base (8 B) and fixed flag; per vertex its position;
    // and the physics' cell data: per cell, the coordinates (8 B a
    // component) and κ and f at its nodes (16 B a node), or per node
    // where the backend makes those itself (8 B a component, 16 B)
    let cell_data = match bk.gathers_cells() {
        true => words(dofs, 8 * o.dim + 16),
        false => words(cells, 8 * nv * o.dim + 16 * nb),
    };
    // the CPU backend's "device" is the host: what it stores there adds
    let backend = match bk.kind() {
        crate::BackendKind::Cpu => sizes.device_bytes(false, newton.scatter == Scatter::Spmv),
        _ => 0,
    };
    let host = [words(cells, 4 * (nb + nv) + 8 * nb), words(dofs, 24 + 16 + 12 + 8 + 8 + 1), words(vertices, 24), cell_data, backend];
    crate::memory::ensure_host(&what, host.iter().fold(0usize, |s, &b| s.saturating_add(b)))
}

/// Builds and solves the benchmark on backend `bk`.
pub fn solve<B: NewtonOps + 'static>(bk: &B, cpu: &CpuBackend, o: &HoleOptions) -> Result<HoleReport> {
    solve_with(bk, cpu, o, &StageClock::new(&|_| {}))
}

/// [`solve`], timing its stages on `clock`.
pub fn solve_with<B: NewtonOps + 'static>(bk: &B, cpu: &CpuBackend, o: &HoleOptions, clock: &StageClock) -> Result<HoleReport> {
    let (krylov, precond) = o.method()?;
    let t0 = Instant::now();
    clock.start("mesh hierarchy");
    let domain = HoleDomain::benchmark(o.dim);
    let coarse = domain.coarse()?;
    let newton = NewtonOptions {
        rtol: o.rtol,
        atol: 0.0,
        max_iterations: 10,
        krylov_rtol: o.rtol,
        max_krylov: o.max_iterations,
        line_search: LineSearch::Full,
        krylov,
        precond,
        // ELL-WARP K1, the format of every multigrid level
        assembly: Assembly::Sparse(SpmvFormat::K1),
        lag_tangent: true,
        precision: o.precision,
        ..Default::default()
    };
    ensure_fits(bk, &coarse, o, &newton)?;
    let coarse = CellMesh::Tensor(coarse);
    let nested = NestedSpaces::with_refinement(coarse, o.degree, o.levels, &|m| domain.refine(m))?;
    clock.start("ordering");
    let nested = nested.renumbered(cpu, o.ordering, 7)?;
    let space = nested.finest();
    clock.start("boundary values");
    let mut constraints = Constraints::none(space, 1).dirichlet(space, &BoundaryPart::All, |x, u| u[0] = if domain.is_inner(*x) { 1.0 } else { 0.0 })?;
    // Newton's start holds the Dirichlet values: on the backend from
    // here, the host's copy let go of before the set-up is made
    let mut u = bk.upload(&constraints.values)?;
    constraints.values = Vec::new();
    clock.start("coefficients");
    // κ = 1 and the load f = 1 as the physics' nodal fields: the load
    // ∫ f φ is integrated with the residual, on the backend, where a host
    // load vector took an E-vector and the transposed restriction. They
    // are written into the physics' own copy: the array it is copied
    // from is never written, so the system never makes its pages
    // resident (100 MB at 6.3M Q1 nodes)
    let unwritten = vec![0.0; 2 * space.n_dofs];
    clock.start("sparsity");
    let mut physics = Setup::<Poisson>::physics_on(bk, space, None, Aux::Nodal(&unwritten))?;
    drop(unwritten);
    match &mut physics {
        (_, Some(nodal)) => nodal.aux.fill(1.0),
        (physics, None) => physics.a.fill(1.0),
    }
    let mut nested = nested;
    if !o.field && matches!(precond, Pipeline::Multigrid(_)) {
        // the physics holds the node coordinates it reads, and the set-up
        // and multigrid's levels read only the finest space's cells'
        // nodes: its geometry goes before the pattern is made (400 MB at
        // 6.3M Q1 nodes)
        nested.release_finest_geometry();
    }
    let space = nested.finest();
    let setup = Setup::of_physics_on(bk, cpu, space, physics, &constraints, None)?;
    let cells = space.n_cells();
    clock.start("uploads");
    // what the report needs; the finest level goes to the backend and
    // the host lets go of its cell data and maps before the coarse levels
    // are made, each space once they no longer read it (the coarse ones
    // live on in their levels' set-ups; the finest is kept for output
    // only)
    let (free, nnz) = (setup.n_rows() - constraints.n_fixed(), setup.csr.nnz());
    drop(constraints);
    let mut nested = Some(nested);
    let mut finest = None;
    let mut levels = |setup: Setup<Poisson>| {
        clock.start("coarse levels");
        let mut nested = nested.take().expect("the levels are made once");
        let setup = match precond {
            Pipeline::Multigrid(_) => {
                let (setup, kept) = setup.with_multigrid_owned(bk, cpu, nested, o.field)?;
                finest = kept;
                setup
            }
            Pipeline::Amg(_) => {
                let setup = setup.with_low_order(nested.finest())?;
                finest = nested.spaces.pop().filter(|_| o.field);
                setup
            }
            _ => {
                finest = nested.spaces.pop().filter(|_| o.field);
                setup
            }
        };
        clock.start("uploads");
        Ok(setup)
    };
    let mut w = Workspace::of_setup_then(bk, setup, &newton, &mut levels)?;
    let setup_seconds = t0.elapsed().as_secs_f64();
    clock.start(NEWTON);
    let r = w.newton(bk, &mut u, &newton, None, &mut |_| {})?;
    clock.start("download");
    let dofs = bk.download(&u)?;
    let stages = with_phases(clock.finish(), &r.split);
    let first = r.residuals[0].max(f64::MIN_POSITIVE);
    let mut history = vec![1.0];
    for (s, &start) in r.steps.iter().zip(&r.residuals) {
        history.extend(s.krylov_history.iter().skip(1).map(|h| h * start / first));
    }
    let mg = match precond {
        Pipeline::Multigrid(m) => Some(m),
        _ => None,
    };
    Ok(HoleReport {
        problem: "hole",
        dim: o.dim,
        degree: o.degree,
        levels: o.levels,
        cells,
        dofs: free,
        nnz,
        solver: o.solver,
        precond: o.precond,
        smoother: mg.map(|m| m.smoother),
        cycle: mg.map(|m| m.cycle),
        smoothing_steps: mg.map(|m| m.pre),
        ordering: o.ordering,
        backend: bk.name(),
        precision: o.precision,
        iterations: r.krylov_iterations,
        updates: r.steps.len(),
        relative_residual: r.residuals.last().copied().unwrap_or(0.0) / first,
        converged: r.converged,
        stalled: !r.converged && r.steps.iter().any(|s| !s.krylov_converged && crate::solver::multigrid::stalled(&s.krylov_history)),
        setup_seconds,
        assembly_seconds: r.split.element + r.split.assembly + r.split.precond,
        solve_seconds: r.split.solve,
        history,
        stages,
        amg: r.amg,
        field: finest.map(|space| super::field::QpField { dofs, space }),
    })
}

/// The stage in which Newton runs, reported as its phases.
const NEWTON: &str = "Newton";

/// `stages` with Newton's replaced by its phases in `split`, and what
/// they leave of it (residual norms, the line search's decisions).
fn with_phases(stages: Vec<StageSeconds>, split: &crate::problem::phases::Split) -> Vec<StageSeconds> {
    let phases = [("element kernels", split.element), ("assembly", split.assembly), ("preconditioner", split.precond), ("solve", split.solve)];
    let mut out = Vec::with_capacity(stages.len() + phases.len());
    for s in stages {
        if s.stage != NEWTON {
            out.push(s);
            continue;
        }
        out.extend(phases.iter().map(|&(stage, seconds)| StageSeconds::new(stage, seconds)));
        // Newton's memory at its end, on what is left of it
        out.push(StageSeconds { stage: "Newton, other".into(), seconds: (s.seconds - split.total()).max(0.0), ..s });
    }
    out
}
