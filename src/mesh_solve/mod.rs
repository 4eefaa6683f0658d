//! `fem solve --mesh FILE --physics {poisson,elasticity,radiation,neo-hookean,mass}`: a
//! `#[fem_kernel]` physics on the cells of a Gmsh file (triangles,
//! quadrilaterals, tetrahedra or hexahedra, first or second order), with
//! Dirichlet, Neumann and (radiation) nonlinear Robin conditions by
//! physical group and a chosen load, on the file's mesh or its uniform
//! refinements, solved by the library's Newton (one update for the linear
//! physics) with a Krylov method preconditioned by Jacobi, SSOR or
//! multigrid, resident on either backend.

use crate::expression::Expression;
use fem_host::distributed::{Communicator, Partitioner, Ranks, Serial};
use fem_host::io::gmsh::GmshMesh;
use fem_host::io::npy::{self, SystemInfo};
use fem_host::operator::pointwise::Aux;
use fem_host::problem::nonlinear::time::{integrate, Forcing, Scheme, TimeOptions, TimeReport};
use fem_host::problem::nonlinear::{self, NewtonOps, NewtonOptions, NewtonReport, Precond, Setup};
use fem_host::solver::ordering::Ordering;
use fem_host::space::integrate::l2_error;
use fem_host::space::{BoundaryPart, NestedSpaces, Space};
use fem_host::stages::{Laps, StageSeconds};
use fem_host::{with_backend, AnyBackend, Backend, CpuBackend, Error, Result};
use fem_kernels::pointwise::Kernels;
use problem::Problem;
use serde::Serialize;
use std::time::Instant;

/// `body` with the type `K` the kernels of physics `p`.
macro_rules! with_physics {
    ($p:expr, $k:ident => $body:expr) => {
        match $p {
            $crate::mesh_solve::Physics::Poisson => {
                type $k = fem_kernels::physics::Poisson;
                $body
            }
            $crate::mesh_solve::Physics::Elasticity => {
                type $k = fem_kernels::physics::Elasticity;
                $body
            }
            $crate::mesh_solve::Physics::Radiation => {
                type $k = fem_kernels::physics::Radiation;
                $body
            }
            $crate::mesh_solve::Physics::NeoHookean => {
                type $k = fem_kernels::physics::NeoHookean;
                $body
            }
            $crate::mesh_solve::Physics::Mass => {
                type $k = fem_kernels::physics::Mass;
                $body
            }
        }
    };
}
pub(crate) use with_physics;

mod across;
mod problem;

/// The physics a mesh is solved for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Physics {
    /// −Δu = f.
    Poisson,
    /// −∇·σ(u) = f, isotropic linear elasticity.
    Elasticity,
    /// −Δu = f with the cooling condition ∂u/∂n + u + u|u|³ = g on the
    /// Robin groups (the boundary term of [`Radiation`]): nonlinear.
    Radiation,
    /// Compressible neo-Hookean hyperelasticity, −∇·P(∇u) = f in the
    /// reference configuration: nonlinear.
    NeoHookean,
    /// u = f in L²: the mass matrix, the L² projection of the load.
    Mass,
}

impl Physics {
    /// Whether the unknown has a component per dimension.
    pub fn is_vector(self) -> bool {
        matches!(self, Self::Elasticity | Self::NeoHookean)
    }
}

/// The volume load f.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum LoadKind {
    /// f = d π² Π sin(π xₐ) (every component): −Δu = f has u = Π sin(π xₐ)
    /// on the unit box. Nearly an eigenvector on uniform grids, so CG
    /// converges in a few iterations: for error checks, not solver speed.
    Sine,
    /// f = 1 (Poisson), f = (0, …, −1) (elasticity: weight).
    One,
    /// The finite-element function of random node values in \[−1, 1\]
    /// (drawn from each node's position, so the same in any numbering):
    /// every mode excited, for solver benchmarks.
    Random,
    /// f = 0: the solution is driven by its boundary values and fluxes.
    Zero,
    /// f given by expressions of x, y, z and t: one for every component,
    /// or one per component.
    Expression(Vec<Expression>),
}

/// A boundary condition's physical group and its values, each an
/// expression of x, y, z and t (a constant is one too): the Dirichlet
/// values (none: zero; one: every component; or one per component), the
/// Neumann flux (Poisson) or traction (elasticity: one value = pressure-like
/// v·n, or d components), or the Robin g (not of t).
#[derive(Clone, Debug)]
pub struct GroupValue {
    /// Physical group name or number.
    pub group: String,
    /// The values.
    pub value: Vec<Expression>,
}

impl GroupValue {
    /// `group` with constant values.
    pub fn constant(group: &str, value: &[f64]) -> Self {
        Self { group: group.into(), value: value.iter().map(|&v| Expression::constant(v)).collect() }
    }
}

/// What to solve.
#[derive(Clone, Debug)]
pub struct MeshSolveOptions {
    /// The physics.
    pub physics: Physics,
    /// Polynomial degree (P1/P2 on simplices, Q_p on tensor cells as far as
    /// the physics has kernels).
    pub degree: usize,
    /// Uniform refinements of the file's mesh before solving; multigrid
    /// ([`Precond::Multigrid`] in `newton`) uses every level.
    pub refine: usize,
    /// Dirichlet values on these boundary groups; empty: u = 0 on every
    /// boundary facet not in a Neumann or Robin group.
    pub dirichlet: Vec<GroupValue>,
    /// Neumann conditions.
    pub neumann: Vec<GroupValue>,
    /// Robin conditions of [`Physics::Radiation`]: each group's g (one value).
    pub robin: Vec<GroupValue>,
    /// The volume load.
    pub load: LoadKind,
    /// Young's modulus and Poisson's ratio (elasticity).
    pub young: f64,
    /// Poisson's ratio, in (−1, 0.5).
    pub poisson_ratio: f64,
    /// Newton and Krylov tolerances.
    pub newton: NewtonOptions,
    /// How the nodes of every level are numbered (a random load is drawn
    /// from the nodes' positions, so it is the same load in any).
    pub ordering: Ordering,
    /// Time stepping of M u̇ + R(u) = 0 from u = 0 (for Poisson the heat
    /// equation) instead of the stationary solve.
    pub time: Option<Transient>,
    /// How the cells are split among ranks (read across ranks only).
    pub partitioner: Partitioner,
    /// Write the first Newton update's linear system (the tangent at the
    /// start and minus the residual there) into this folder as NumPy
    /// arrays ([`fem_host::io::npy::write_system`]), for another solver,
    /// before solving (one rank, stationary problems).
    pub write_system: Option<std::path::PathBuf>,
    /// p-multigrid's degrees below the space's ([`Precond::PMultigrid`]):
    /// `Degrees(vec![1])` for two levels.
    pub pmg_levels: crate::bp::PmgLevels,
}

/// Time stepping.
#[derive(Clone, Copy, Debug)]
pub struct Transient {
    /// The time step.
    pub dt: f64,
    /// Steps to take.
    pub steps: usize,
    /// θ-method or BDF2.
    pub scheme: Scheme,
    /// Hand every this many steps' solution to the callback (0: none).
    pub every: usize,
}

/// What a solve did.
#[derive(Clone, Debug, Serialize)]
pub struct MeshSolveReport {
    /// The physics.
    pub physics: Physics,
    /// Cell shape and degree, e.g. `tetrahedron P2`.
    pub element: String,
    /// Cells of the mesh.
    pub cells: usize,
    /// Rows of the system (nodes × components).
    pub rows: usize,
    /// Rows held by Dirichlet conditions.
    pub fixed_rows: usize,
    /// The nodes' numbering.
    pub ordering: Ordering,
    /// The load.
    pub load: LoadKind,
    /// ‖u_h − u‖_L2 where the exact solution is known (Poisson, sine
    /// load, u = 0 on the whole boundary of the unit square or cube).
    pub l2_error: Option<f64>,
    /// Seconds to read nothing but build the space, conditions, load and
    /// the tangent's pattern on the host.
    pub host_setup_seconds: f64,
    /// Those seconds by stage, in order: `mesh` (the file's cells),
    /// `spaces` (refinement and every level's space), `numbering` (the
    /// nodes' ordering), `boundary` (conditions and load), across ranks
    /// `partition` (the cells' ranks, on rank 0) and `shares` (rank 0
    /// cutting and sending every rank's share; elsewhere waiting for and
    /// receiving it), `pattern` (the tangent's pattern, Dirichlet layout
    /// and multigrid levels); each with the host memory at its end.
    pub host_setup_split: Vec<StageSeconds>,
    /// The Newton solve (its own set-up on the backend, then the phases);
    /// of the last step when time stepping.
    pub newton: NewtonReport,
    /// The time steps, when time stepping.
    pub time: Option<TimeReport>,
    /// Every rank's share, when solved across ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<Ranks>,
    /// Seconds from the mesh in memory to the solution on the host.
    pub total_seconds: f64,
}

/// Solves `o` on the cells of `file` with backend `any`; the space, the
/// solution (`node·nc + component`) and the report. When time stepping,
/// `each(space, step, t, u)` sees every `o.time.every`-th step's solution.
pub fn run(
    any: &AnyBackend,
    file: &GmshMesh,
    o: &MeshSolveOptions,
    stage: &(dyn Fn(&str) + Sync),
    each: &mut dyn FnMut(&Space, usize, f64, &[f64]) -> Result<()>,
) -> Result<(Space, Vec<f64>, MeshSolveReport)> {
    let s = run_on(any, &Serial, file, o, stage, each)?;
    let (space, u) = s.whole.ok_or_else(|| Error::InvalidArgument("a one-rank solve keeps its whole solution".into()))?;
    Ok((space, u, s.report))
}

/// What one rank gets from a solve.
pub struct Solution {
    /// The whole space and solution (`node·nc + component`): on the one
    /// rank, or on rank 0 of several.
    pub whole: Option<(Space, Vec<f64>)>,
    /// This rank's piece, when solved across ranks.
    pub piece: Option<RankPiece>,
    /// What the solve did (on rank 0 of several, with every rank's share).
    pub report: MeshSolveReport,
}

/// A rank's piece of a solution across ranks.
pub struct RankPiece {
    /// The piece's subspace.
    pub space: Space,
    /// The solution there, ghosts filled.
    pub u: Vec<f64>,
    /// The whole space's node of every node of the piece.
    pub nodes: Vec<u32>,
    /// The cells the partition gives this rank (indices into the
    /// subspace's cells): what its output piece shows.
    pub own_cells: Vec<u32>,
}

/// [`run`] on the ranks of `comm`, each with its backend `any` (one rank:
/// the same as [`run`]).
pub fn run_on(
    any: &AnyBackend,
    comm: &dyn Communicator,
    file: &GmshMesh,
    o: &MeshSolveOptions,
    stage: &(dyn Fn(&str) + Sync),
    each: &mut dyn FnMut(&Space, usize, f64, &[f64]) -> Result<()>,
) -> Result<Solution> {
    if comm.size() > 1 {
        return across::run(any, comm, file, o, stage);
    }
    let mut marks = Laps::new();
    let cpu = CpuBackend::new(None)?;
    let problem = Problem::build(file, o, &cpu, &mut marks, stage)?;
    stage("pattern");
    let (aux, at, boundary) = problem.aux(o)?;
    let forcing_load = |t: f64, f: &mut [f64]| match problem.load_at(&o.load, t) {
        Ok(l) => f.copy_from_slice(&l.values),
        // the same parts built the load at t = 0: not reached
        Err(_) => f.fill(f64::NAN),
    };
    let forcing = Forcing { boundary: Some(&problem.constraints), load: problem.moving_load.then_some(&forcing_load as &(dyn Fn(f64, &mut [f64]) + Sync)) };
    let one = One { any, cpu: &cpu, problem: &problem, aux: at.view(&aux), boundary, forcing: &forcing, o };
    let (u, newton, time, host) = with_physics!(o.physics, K => solve_one::<K>(&one, &mut marks, stage, each))?;
    stage("error");
    let space = problem.space();
    let sizes = Sizes { element: element(space), cells: space.n_cells(), rows: space.n_dofs * problem.nc, fixed_rows: problem.constraints.n_fixed(), l2_error: l2_if_known(space, &u, o) };
    let report = sizes.report(o, host, marks, newton, time, None);
    let Problem { mut nested, .. } = problem;
    let space = nested.spaces.pop().expect("the finest level");
    Ok(Solution { whole: Some((space, u)), piece: None, report })
}


/// The sizes and error a report gives.
struct Sizes {
    element: String,
    cells: usize,
    rows: usize,
    fixed_rows: usize,
    l2_error: Option<f64>,
}

impl Sizes {
    /// The report of a solve of `o` of these sizes.
    fn report(self, o: &MeshSolveOptions, host: f64, marks: Laps, newton: NewtonReport, time: Option<TimeReport>, ranks: Option<Ranks>) -> MeshSolveReport {
        let total_seconds = marks.elapsed();
        MeshSolveReport {
            physics: o.physics,
            element: self.element,
            cells: self.cells,
            rows: self.rows,
            fixed_rows: self.fixed_rows,
            ordering: o.ordering,
            load: o.load.clone(),
            l2_error: self.l2_error,
            host_setup_seconds: host,
            host_setup_split: marks.into_stages(),
            newton,
            time,
            ranks,
            total_seconds,
        }
    }
}

/// The cell shape and degree, e.g. `tetrahedron P2`.
fn element(space: &Space) -> String {
    format!("{} {}{}", space.shape.name(), if space.shape.is_simplex() { "P" } else { "Q" }, space.degree)
}

/// ‖u_h − u‖_L2 where the exact solution is known: Poisson (u = Π sin(π xₐ))
/// or the mass (u = f) with the sine load and u = 0 on the whole boundary
/// of the unit square or cube.
fn l2_if_known(space: &Space, u: &[f64], o: &MeshSolveOptions) -> Option<f64> {
    let d = space.shape.dim();
    let unit_box = space.dof_coords.iter().all(|x| x[..d].iter().all(|&v| (-1e-12..=1.0 + 1e-12).contains(&v))) && space.dof_coords.iter().any(|x| x[..d].iter().all(|&v| v > 1.0 - 1e-12));
    let scale = match o.physics {
        Physics::Poisson => 1.0,
        Physics::Mass => d as f64 * std::f64::consts::PI * std::f64::consts::PI,
        _ => return None,
    };
    let exact_known = o.load == LoadKind::Sine && o.neumann.is_empty() && o.dirichlet.is_empty() && unit_box;
    exact_known.then(|| l2_error(space, 1, u, |x, e| e[0] = scale * problem::sine(x, d)))
}

/// What the one-rank solve of a physics reads.
struct One<'a> {
    any: &'a AnyBackend,
    cpu: &'a CpuBackend,
    problem: &'a Problem,
    aux: Aux<'a>,
    boundary: Option<&'a BoundaryPart>,
    forcing: &'a Forcing<'a>,
    o: &'a MeshSolveOptions,
}

/// Physics `K` set up and solved on one rank: u, Newton's report, the
/// time steps' and the host set-up seconds.
fn solve_one<K: Kernels<f64> + 'static>(c: &One, marks: &mut Laps, stage: &dyn Fn(&str), each: &mut dyn FnMut(&Space, usize, f64, &[f64]) -> Result<()>) -> Result<(Vec<f64>, NewtonReport, Option<TimeReport>, f64)> {
    let space = c.problem.space();
    let stationary = c.o.time.is_none();
    let setup = with_backend!(c.any, |b| Setup::<K>::for_newton_on(b, c.cpu, space, c.aux, &c.problem.constraints, Some(&c.problem.load), &c.o.newton, stationary))?;
    let setup = match c.boundary {
        Some(part) => setup.with_boundary_term(space, part)?,
        None => setup,
    };
    if let Some(dir) = &c.o.write_system {
        stage("writing the linear system");
        write_system(c, &setup, dir)?;
    }
    let mut host = marks.elapsed();
    marks.lap("pattern");
    stage("solve");
    let mut levels = None;
    let (u, n, t) = solve_on(c, setup, &mut levels, each)?;
    // the levels were made once the finest level was on the backend
    if let Some(l) = levels {
        host += l.seconds;
        marks.push(l);
    }
    Ok((u, n, t, host))
}

/// The first Newton update's linear system of `setup` written into `dir`
/// as NumPy arrays.
fn write_system<K: Kernels<f64> + 'static>(c: &One, setup: &Setup<K>, dir: &std::path::Path) -> Result<()> {
    if c.o.time.is_some() {
        return Err(Error::InvalidArgument("the linear system is written for a stationary solve, not for time steps".into()));
    }
    let space = c.problem.space();
    let (a, rhs) = with_backend!(c.any, |b| nonlinear::system_at(b, setup, &c.problem.constraints.initial()))?;
    let info = SystemInfo {
        what: format!("{:?} on {} {} cells, load {:?}: the tangent at the start of Newton and minus the residual there", c.o.physics, space.n_cells(), element(space), c.o.load),
        rows: a.n_rows,
        nonzeros: a.nnz(),
        components: c.problem.nc,
        dim: space.shape.dim(),
        fixed_rows: c.problem.constraints.n_fixed(),
    };
    Ok(npy::write_system(dir, &a, &rhs, &space.dof_coords, &info)?)
}

/// The set-up with the coarser levels of `nested` when multigrid
/// preconditions, with its low-order level when AMG does, made on `b`;
/// `stage` gets their time and the host memory at their end.
fn levels<B: NewtonOps, K: Kernels<f64>>(b: &B, setup: Setup<K>, cpu: &CpuBackend, nested: &NestedSpaces, o: &MeshSolveOptions, stage: &mut Option<StageSeconds>) -> Result<Setup<K>> {
    let start = Instant::now();
    let setup = match o.newton.precond {
        Precond::Multigrid(_) => setup.with_multigrid_on(b, cpu, nested)?,
        Precond::Amg(_) => setup.with_low_order(nested.finest())?,
        Precond::PMultigrid(_) => {
            let space = nested.finest();
            // Q1 is refused by the set-up, with its reason
            let between = match space.degree {
                0 | 1 => Vec::new(),
                p => o.pmg_levels.below(p)?.split_last().map_or(Vec::new(), |(_, d)| d.to_vec()),
            };
            setup.with_p_multigrid_levels_on(b, cpu, space, &between)?
        }
        _ => return Ok(setup),
    };
    *stage = Some(StageSeconds::ended("levels", start.elapsed().as_secs_f64()));
    Ok(setup)
}

/// The stationary solve, or the time steps, of `setup` on `c.any`; the
/// preconditioner's levels added to it, their stage in `stage`.
fn solve_on<K: Kernels<f64> + 'static>(c: &One, setup: Setup<K>, stage: &mut Option<StageSeconds>, each: &mut dyn FnMut(&Space, usize, f64, &[f64]) -> Result<()>) -> Result<(Vec<f64>, NewtonReport, Option<TimeReport>)> {
    let (any, cpu, nested, o) = (c.any, c.cpu, &c.problem.nested, c.o);
    let (space, constraints, forcing) = (c.problem.space(), &c.problem.constraints, c.forcing);
    let Some(t) = o.time else {
        let (u, r) = with_backend!(any, |b| nonlinear::solve_owned(b, setup, &constraints.initial(), &o.newton, &mut |s| levels(b, s, cpu, nested, o, stage), &mut |_| {}))?;
        return Ok((u, r, None));
    };
    let setup = with_backend!(any, |b| levels(b, setup, cpu, nested, o, stage))?;
    let opts = TimeOptions { dt: t.dt, steps: t.steps, scheme: t.scheme, newton: o.newton };
    let (u, report) = with_backend!(any, |b| integrate(b, &setup, space, &constraints.initial(), *forcing, &opts, &mut |k, time, v| if t.every > 0 && k % t.every == 0 { each(space, k, time, &b.download(v)?) } else { Ok(()) }))?;
    let mut last = report.steps.last().cloned().ok_or_else(|| Error::InvalidArgument("no time steps".into()))?;
    last.setup_seconds = report.setup_seconds;
    Ok((u, last, Some(report)))
}

/// Lamé's λ and μ of Young's modulus and Poisson's ratio.
pub fn lame(young: f64, nu: f64) -> Result<[f64; 2]> {
    if !(young > 0.0 && young.is_finite() && nu > -1.0 && nu < 0.5) {
        return Err(Error::InvalidArgument(format!(
            "Young's modulus {young} must be positive and Poisson's ratio {nu} in (−1, 0.5)"
        )));
    }
    Ok([
        young * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)),
        young / (2.0 * (1.0 + nu)),
    ])
}

/// Text form of a report.
pub fn describe(r: &MeshSolveReport) -> String {
    let n = &r.newton;
    let mut s = format!(
        "{:?} on {} {} cells: {} rows ({} fixed, {:?} ordering), load {:?}\n",
        r.physics, r.cells, r.element, r.rows, r.fixed_rows, r.ordering, r.load
    );
    s += &format!("{}\n", n.kernels);
    let split: Vec<String> = r.host_setup_split.iter().map(|s| format!("{} {:.3}", s.stage, s.seconds)).collect();
    s += &format!(
        "host set-up {:.3} s ({}), backend set-up {:.3} s, solve {:.3} s ({} Newton update{}, {} {} iterations, {}-preconditioned), total {:.3} s\n",
        r.host_setup_seconds,
        split.join(", "),
        n.setup_seconds,
        n.split.total(),
        n.steps.len(),
        if n.steps.len() == 1 { "" } else { "s" },
        n.krylov_iterations,
        n.krylov,
        n.precond,
        r.total_seconds
    );
    let (first, last) = (
        n.residuals.first().copied().unwrap_or(0.0),
        n.residuals.last().copied().unwrap_or(0.0),
    );
    let relative = if first > 0.0 { last / first } else { 0.0 };
    s += &format!(
        "residual ‖R‖ {first:.2e} → {last:.2e}, relative {relative:.2e}{}",
        if n.converged { "" } else { " (not converged)" }
    );
    if let Some(a) = &n.amg {
        s += &format!("\n{}", crate::solve::describe_amg(a));
    }
    if let Some(p) = &r.ranks {
        let span = |v: &[usize]| format!("{}–{}", v.iter().min().unwrap_or(&0), v.iter().max().unwrap_or(&0));
        let most = |v: &[f64]| v.iter().fold(0.0f64, |m, x| m.max(*x));
        s += &format!(
            "\nacross {} ranks ({:?}: {} facets cut, imbalance {:.3}): owned rows {}, ghost rows {}, halo exchanges ({}) up to {:.3} s and {} bytes a rank, {} global sums up to {:.3} s, peak host memory up to {:.2} GB a rank, {} threads on {} cores a rank",
            p.ranks, p.partition.partitioner, p.partition.cut_facets, p.partition.imbalance, span(&p.owned_rows), span(&p.ghost_rows), p.halo_transport, most(&p.halo_seconds), p.halo_bytes.iter().max().unwrap_or(&0), p.reductions, most(&p.reduction_seconds), *p.peak_rss_bytes.iter().max().unwrap_or(&0) as f64 / 1e9, span(&p.threads), span(&p.cores)
        );
    }
    if let Some(t) = &r.time {
        let its: usize = t.steps.iter().map(|s| s.krylov_iterations).sum();
        s += &format!("\n{} time steps in {:.3} s ({its} Krylov iterations), the last step's residual above", t.steps.len(), t.step_seconds);
    }
    if let Some(e) = r.l2_error {
        s += &format!("\nL2 error {e:.3e}");
    }
    s
}
