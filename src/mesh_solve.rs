//! `fem solve --mesh FILE --physics {poisson,elasticity,radiation}`: a
//! `#[fem_kernel]` physics on the cells of a Gmsh file (triangles,
//! quadrilaterals, tetrahedra or hexahedra, first or second order), with
//! Dirichlet, Neumann and (radiation) nonlinear Robin conditions by
//! physical group and a chosen load, on the file's mesh or its uniform
//! refinements, solved by the library's Newton (one update for the linear
//! physics) with a Krylov method preconditioned by Jacobi, SSOR or
//! multigrid, resident on either backend.

use crate::expression::Expression;
use fem_host::io::gmsh::GmshMesh;
use fem_host::operator::pointwise::Aux;
use fem_host::problem::nonlinear::time::{integrate, Forcing, Scheme, TimeOptions, TimeReport};
use fem_host::problem::nonlinear::{self, NewtonOptions, NewtonReport, Setup};
use fem_kernels::pointwise::Kernels;
use fem_host::rng::SplitMix64;
use fem_host::space::integrate::l2_error;
use fem_host::space::{BoundaryPart, Constraints, Load, NestedSpaces, Space};
use fem_host::problem::nonlinear::Precond;
use fem_host::solver::ordering::Ordering;
use fem_host::distributed::{self, agree, Communicator, Partition, Partitioner, Piece, Ranks, Serial};
use fem_host::{with_backend, AnyBackend, Backend, CpuBackend, Error, Result};
use fem_kernels::physics::{Elasticity, Poisson, Radiation};
use serde::Serialize;
use std::collections::HashSet;
use std::f64::consts::PI;
use std::time::Instant;

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
    /// `partition` (the cells' ranks and this rank's piece), `pattern` (the
    /// tangent's pattern, Dirichlet layout and multigrid levels).
    pub host_setup_split: Vec<(String, f64)>,
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
    stage: &dyn Fn(&str),
    each: &mut dyn FnMut(&Space, usize, f64, &[f64]) -> Result<()>,
) -> Result<(Space, Vec<f64>, MeshSolveReport)> {
    run_on(any, &Serial, file, o, stage, each)
}

/// [`run`] on the ranks of `comm`, each with its backend `any` (one rank:
/// the same as [`run`]): every rank returns the whole solution and the
/// report.
pub fn run_on(
    any: &AnyBackend,
    comm: &dyn Communicator,
    file: &GmshMesh,
    o: &MeshSolveOptions,
    stage: &dyn Fn(&str),
    each: &mut dyn FnMut(&Space, usize, f64, &[f64]) -> Result<()>,
) -> Result<(Space, Vec<f64>, MeshSolveReport)> {
    let start = Instant::now();
    let (mut split, mut last) = (Vec::new(), Instant::now());
    // the seconds since the last mark, as stage `name`
    let mut mark = |name: &str| {
        split.push((name.to_string(), last.elapsed().as_secs_f64()));
        last = Instant::now();
    };
    stage("space");
    let (cells, nodes) = file.cell_mesh()?;
    mark("mesh");
    let cpu = CpuBackend::new(None)?;
    let nested = NestedSpaces::new(cells, o.degree, o.refine + 1)?;
    mark("spaces");
    let mut nested = nested.renumbered(&cpu, o.ordering, 7)?;
    mark("numbering");
    let space = nested.finest();
    let d = space.shape.dim();
    let nc = if o.physics == Physics::Elasticity { d } else { 1 };
    stage("boundary conditions and load");
    // facets of the natural (Neumann, Robin) conditions
    let mut natural_keys = HashSet::new();
    let robin = robin_data(file, &nodes, space, o, &mut natural_keys)?;
    let mut neumann = Vec::new();
    for n in &o.neumann {
        let part = file.boundary(std::slice::from_ref(&n.group), &nodes)?;
        if let BoundaryPart::Facets { keys, .. } = &part {
            natural_keys.extend(keys.iter().copied());
        }
        let v = n.value.len();
        if !(v == 1 || (v == d && nc == d)) {
            let or = if nc == d { format!(" or {d}") } else { String::new() };
            return Err(Error::InvalidArgument(format!("Neumann group `{}`: {v} values; give one{or}", n.group)));
        }
        neumann.push((part, n.value.clone()));
    }
    let mut constraints = Constraints::none(space, nc);
    if o.dirichlet.is_empty() {
        let keys: HashSet<[u32; 4]> = space
            .facets
            .iter()
            .map(|f| f.key)
            .filter(|k| !natural_keys.contains(k))
            .collect();
        // a boundary cooled all round needs no Dirichlet part
        if !(robin.is_some() && keys.is_empty()) {
            let rest = BoundaryPart::Facets {
                name: "boundary outside the Neumann and Robin groups".into(),
                keys,
            };
            constraints = constraints.dirichlet(space, &rest, |_, u| u.fill(0.0))?;
        }
    }
    // where groups share nodes, the later group's values hold there
    for g in &o.dirichlet {
        let values = dirichlet_values(g, nc)?;
        let part = file.boundary(std::slice::from_ref(&g.group), &nodes)?;
        let fill = move |x: &[f64; 3], t: f64, u: &mut [f64]| u.iter_mut().zip(&values).for_each(|(u, e)| *u = e.at(x, t));
        constraints = match g.value.iter().any(Expression::depends_on_time) {
            true => constraints.dirichlet_in_time(space, &part, fill)?,
            false => constraints.dirichlet(space, &part, |x, u| fill(x, 0.0, u))?,
        };
    }
    if let LoadKind::Expression(f) = &o.load {
        if !(f.len() == 1 || f.len() == nc) {
            return Err(Error::InvalidArgument(format!("the load has {} components; give one{}", f.len(), if nc > 1 { format!(" or {nc}") } else { String::new() })));
        }
    }
    let load = natural_load(space, nc, &neumann, &o.load, 0.0)?;
    let moving_load = neumann.iter().any(|(_, v)| v.iter().any(Expression::depends_on_time)) || matches!(&o.load, LoadKind::Expression(f) if f.iter().any(Expression::depends_on_time));
    let forcing_load = |t: f64, f: &mut [f64]| match natural_load(space, nc, &neumann, &o.load, t) {
        Ok(l) => f.copy_from_slice(&l.values),
        // the same parts built the load at t = 0: not reached
        Err(_) => f.fill(f64::NAN),
    };
    let forcing = Forcing { boundary: Some(&constraints), load: moving_load.then_some(&forcing_load as &(dyn Fn(f64, &mut [f64]) + Sync)) };
    mark("boundary");
    stage("pattern");
    let lame = lame(o.young, o.poisson_ratio)?;
    let ctx = Context { any, comm, cpu: &cpu, nested: &nested, constraints: &constraints, load: &load, forcing: &forcing, o, start };
    let (u, newton, time, host, ranks) = match o.physics {
        Physics::Poisson => {
            let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
            solve_physics::<Poisson>(&ctx, AuxValues::Nodal(coefficients), None, &mut mark, stage, each)?
        }
        Physics::Radiation => {
            let (part, g) = robin.ok_or_else(|| Error::InvalidArgument("radiation needs Robin groups".into()))?;
            let aux: Vec<f64> = g.iter().flat_map(|&g| [0.0, g]).collect();
            solve_physics::<Radiation>(&ctx, AuxValues::Nodal(aux), Some(&part), &mut mark, stage, each)?
        }
        Physics::Elasticity => {
            let cells: Vec<f64> = (0..space.n_cells()).flat_map(|_| lame).collect();
            solve_physics::<Elasticity>(&ctx, AuxValues::Cell(cells), None, &mut mark, stage, each)?
        }
    };
    stage("error");
    let unit_box = space
        .dof_coords
        .iter()
        .all(|x| x[..d].iter().all(|&v| (-1e-12..=1.0 + 1e-12).contains(&v)))
        && space
            .dof_coords
            .iter()
            .any(|x| x[..d].iter().all(|&v| v > 1.0 - 1e-12));
    let exact_known = o.physics == Physics::Poisson
        && o.load == LoadKind::Sine
        && o.neumann.is_empty()
        && o.dirichlet.is_empty()
        && unit_box;
    let l2 = exact_known.then(|| l2_error(&space, 1, &u, |x, e| e[0] = sine(x, d)));
    let element = format!(
        "{} {}{}",
        space.shape.name(),
        if space.shape.is_simplex() { "P" } else { "Q" },
        space.degree
    );
    let report = MeshSolveReport {
        physics: o.physics,
        element,
        cells: space.n_cells(),
        rows: space.n_dofs * nc,
        fixed_rows: constraints.n_fixed(),
        ordering: o.ordering,
        load: o.load.clone(),
        l2_error: l2,
        host_setup_seconds: host,
        host_setup_split: split,
        newton,
        time,
        ranks,
        total_seconds: start.elapsed().as_secs_f64(),
    };
    let space = nested.spaces.pop().expect("the finest level");
    Ok((space, u, report))
}

/// The Robin groups of `o` as one boundary part and the nodal g (each
/// group's value on its nodes), their facet keys added to `taken`; `None`
/// without Robin groups. An error when the physics has no Robin term or
/// needs one, or a group has other than one value.
fn robin_data(file: &GmshMesh, nodes: &[u32], space: &Space, o: &MeshSolveOptions, taken: &mut HashSet<[u32; 4]>) -> Result<Option<(BoundaryPart, Vec<f64>)>> {
    match (o.physics == Physics::Radiation, o.robin.is_empty()) {
        (false, true) => return Ok(None),
        (false, false) => return Err(Error::InvalidArgument(format!("Robin groups are the boundary term of radiation, not of {:?}", o.physics))),
        (true, true) => return Err(Error::InvalidArgument("radiation cools through Robin groups: name at least one (GROUP=g)".into())),
        (true, false) => {}
    }
    let (mut keys, mut g) = (HashSet::new(), vec![0.0; space.n_dofs]);
    for r in &o.robin {
        let [v] = &r.value[..] else {
            return Err(Error::InvalidArgument(format!("Robin group `{}`: one value g, not {}", r.group, r.value.len())));
        };
        if v.depends_on_time() {
            return Err(Error::InvalidArgument(format!("Robin group `{}`: g = {v} changes in time; the cooling data are fixed", r.group)));
        }
        let part = file.boundary(std::slice::from_ref(&r.group), nodes)?;
        let facets = part.facets(space)?;
        keys.extend(facets.iter().map(|f| f.key));
        for (node, _) in space.facet_mask(facets).iter().enumerate().filter(|m| *m.1) {
            g[node] = v.at(&space.dof_coords[node], 0.0);
        }
    }
    taken.extend(keys.iter().copied());
    Ok(Some((BoundaryPart::Facets { name: "the Robin groups".into(), keys }, g)))
}

/// A physics' auxiliary values: a run of them for every node, or for
/// every cell.
enum AuxValues {
    Nodal(Vec<f64>),
    Cell(Vec<f64>),
}

impl AuxValues {
    /// The values as the physics takes them.
    fn view(&self) -> Aux<'_> {
        match self {
            Self::Nodal(v) => Aux::Nodal(v),
            Self::Cell(v) => Aux::Cell(v),
        }
    }

    /// The values on `piece` of `space`.
    fn on(&self, piece: &Piece, space: &Space) -> Self {
        match self {
            Self::Nodal(v) => Self::Nodal(piece.restrict(v.len() / space.n_dofs.max(1), v)),
            Self::Cell(v) => Self::Cell(piece.restrict_cells(v.len() / space.n_cells().max(1), v)),
        }
    }
}

/// What every physics' solve reads.
struct Context<'a> {
    any: &'a AnyBackend,
    comm: &'a dyn Communicator,
    cpu: &'a CpuBackend,
    nested: &'a NestedSpaces,
    constraints: &'a Constraints,
    load: &'a Load,
    forcing: &'a Forcing<'a>,
    o: &'a MeshSolveOptions,
    start: Instant,
}

/// What a physics' solve gives: u, Newton's report, the time steps',
/// the host set-up seconds, and every rank's share.
type Solved = (Vec<f64>, NewtonReport, Option<TimeReport>, f64, Option<Ranks>);

/// Physics `K` with auxiliary values `aux` and boundary term on
/// `boundary`, set up and solved on one rank or across the ranks.
fn solve_physics<K: Kernels<f64> + 'static>(c: &Context, aux: AuxValues, boundary: Option<&BoundaryPart>, mark: &mut dyn FnMut(&str), stage: &dyn Fn(&str), each: &mut dyn FnMut(&Space, usize, f64, &[f64]) -> Result<()>) -> Result<Solved> {
    if c.comm.size() > 1 {
        return solve_distributed::<K>(c, aux, boundary, mark, stage);
    }
    let space = c.nested.finest();
    let setup = Setup::<K>::constrained(c.cpu, space, aux.view(), c.constraints, Some(c.load))?;
    let setup = match boundary {
        Some(part) => setup.with_boundary_term(space, part)?,
        None => setup,
    };
    let setup = levels(setup, c.cpu, c.nested, c.o)?;
    let host = c.start.elapsed().as_secs_f64();
    mark("pattern");
    stage("solve");
    let (u, n, t) = solve_on(c.any, &setup, space, c.constraints, c.forcing, c.o, each)?;
    Ok((u, n, t, host, None))
}

/// [`solve_physics`] across ranks: the cells split by METIS, each rank
/// assembling its piece and Newton's updates solved on all.
fn solve_distributed<K: Kernels<f64> + 'static>(c: &Context, aux: AuxValues, boundary: Option<&BoundaryPart>, mark: &mut dyn FnMut(&str), stage: &dyn Fn(&str)) -> Result<Solved> {
    let (space, comm, o) = (c.nested.finest(), c.comm, c.o);
    if o.time.is_some() {
        return Err(Error::InvalidArgument("time stepping runs on one rank; a distributed solve is stationary".into()));
    }
    let partition = Partition::shared(comm, space, Partitioner::Metis)?;
    let piece = Piece::new(comm, space, &partition)?;
    mark("partition");
    let nc = c.constraints.nc;
    let setup = agree(
        comm,
        piece.space(space).and_then(|local| {
            let setup = Setup::<K>::constrained(c.cpu, &local, aux.on(&piece, space).view(), &piece.constraints(&local, c.constraints)?, Some(&piece.load(c.load)))?;
            match boundary {
                // a piece away from the boundary term's facets has none of it
                Some(part) if part.facets(&local).is_ok() => setup.with_boundary_term(&local, part),
                _ => Ok(setup),
            }
        }),
    )?;
    let host = c.start.elapsed().as_secs_f64();
    mark("pattern");
    stage("solve");
    let initial = piece.restrict(nc, &c.constraints.initial());
    let (owned, r) = agree(comm, with_backend!(c.any, |b| distributed::newton::solve(b, comm, &piece, &setup, &initial, &o.newton)))?;
    let u = piece.assemble(comm, nc, &owned)?;
    let ranks = Ranks::gather(comm, &partition, &r)?;
    let newton = NewtonReport {
        kernels: format!("{} on each of {} ranks, local tangent {}", c.any.name(), r.ranks, r.format),
        krylov: o.newton.krylov,
        precond: o.newton.precond,
        precision: o.newton.precision,
        rows: r.rows,
        krylov_iterations: r.krylov_iterations,
        converged: r.converged,
        residuals: r.residuals,
        steps: r.steps,
        setup_seconds: r.setup_seconds,
        split: r.split,
        amg: None,
    };
    Ok((u, newton, None, host, Some(ranks)))
}

/// The set-up with the coarser levels of `nested` when multigrid
/// preconditions, with its low-order level when AMG does.
fn levels<K: Kernels<f64>>(setup: Setup<K>, cpu: &CpuBackend, nested: &NestedSpaces, o: &MeshSolveOptions) -> Result<Setup<K>> {
    match o.newton.precond {
        Precond::Multigrid(_) => setup.with_multigrid(cpu, nested),
        Precond::Amg(_) => setup.with_low_order(nested.finest()),
        _ => Ok(setup),
    }
}

/// The stationary solve, or the time steps, of `setup` on `any`.
fn solve_on<K: Kernels<f64> + 'static>(
    any: &AnyBackend,
    setup: &Setup<K>,
    space: &Space,
    constraints: &Constraints,
    forcing: &Forcing,
    o: &MeshSolveOptions,
    each: &mut dyn FnMut(&Space, usize, f64, &[f64]) -> Result<()>,
) -> Result<(Vec<f64>, NewtonReport, Option<TimeReport>)> {
    let Some(t) = o.time else {
        let (u, r) = with_backend!(any, |b| nonlinear::solve(b, setup, &constraints.initial(), &o.newton, &mut |_| {}))?;
        return Ok((u, r, None));
    };
    let opts = TimeOptions { dt: t.dt, steps: t.steps, scheme: t.scheme, newton: o.newton };
    let (u, report) = with_backend!(any, |b| integrate(b, setup, space, &constraints.initial(), *forcing, &opts, &mut |k, time, v| if t.every > 0 && k % t.every == 0 { each(space, k, time, &b.download(v)?) } else { Ok(()) }))?;
    let mut last = report.steps.last().cloned().ok_or_else(|| Error::InvalidArgument("no time steps".into()))?;
    last.setup_seconds = report.setup_seconds;
    Ok((u, last, Some(report)))
}

/// Π sin(π xₐ) over the first `d` coordinates.
fn sine(x: &[f64; 3], d: usize) -> f64 {
    x[..d].iter().map(|&v| (PI * v).sin()).product()
}

/// The `nc` values a Dirichlet group holds: zero without values, one
/// value in every component, or one per component.
fn dirichlet_values(g: &GroupValue, nc: usize) -> Result<Vec<Expression>> {
    match g.value.len() {
        0 => Ok(vec![Expression::constant(0.0); nc]),
        1 => Ok(vec![g.value[0].clone(); nc]),
        n if n == nc => Ok(g.value.clone()),
        n => Err(Error::InvalidArgument(format!("Dirichlet group `{}`: {n} values; give one{}", g.group, if nc > 1 { format!(" or {nc}") } else { String::new() }))),
    }
}

/// The load at time `t`: the Neumann groups' fluxes or tractions (on
/// their parts, one value along the outward normal n for a vector field,
/// else one per component) and the volume load of `kind`.
fn natural_load(space: &Space, nc: usize, neumann: &[(BoundaryPart, Vec<Expression>)], kind: &LoadKind, t: f64) -> Result<Load> {
    let mut load = Load::zero(space, nc);
    for (part, v) in neumann {
        load = load.neumann(space, part, |x, normal, g| {
            for (c, gc) in g.iter_mut().enumerate() {
                *gc = if v.len() == 1 && nc > 1 { v[0].at(x, t) * normal[c] } else { v[c.min(v.len() - 1)].at(x, t) };
            }
        })?;
    }
    volume_load(space, nc, kind, t, load)
}

/// `load` plus the volume load of `kind` at time `t`.
fn volume_load(space: &Space, nc: usize, kind: &LoadKind, t: f64, load: Load) -> Result<Load> {
    let d = space.shape.dim();
    Ok(match kind {
        LoadKind::Sine => load.source(space, |x, f| f.fill(d as f64 * PI * PI * sine(x, d))),
        LoadKind::One if nc == 1 => load.source(space, |_, f| f[0] = 1.0),
        LoadKind::One => load.source(space, |_, f| {
            f.fill(0.0);
            f[nc - 1] = -1.0;
        }),
        LoadKind::Random => {
            // drawn from each node's position, so that any numbering of
            // the nodes sees the same load
            let nodal: Vec<f64> = (0..space.n_dofs * nc)
                .map(|r| {
                    let x = space.dof_coords[r / nc];
                    let seed = x.iter().fold(2024 + (r % nc) as u64, |h, v| (h ^ v.to_bits()).wrapping_mul(0x0100_0000_01b3));
                    2.0 * SplitMix64::new(seed).next_f64() - 1.0
                })
                .collect();
            load.nodal_source(space, &nodal)?
        }
        LoadKind::Zero => load,
        LoadKind::Expression(e) => load.source(space, |x, f| f.iter_mut().enumerate().for_each(|(c, f)| *f = e[c.min(e.len() - 1)].at(x, t))),
    })
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
    let split: Vec<String> = r.host_setup_split.iter().map(|(k, v)| format!("{k} {v:.3}")).collect();
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
            "\nacross {} ranks ({:?}: {} facets cut, imbalance {:.3}): owned rows {}, ghost rows {}, halo exchanges ({}) up to {:.3} s and {} bytes a rank, {} global sums up to {:.3} s, peak host memory up to {:.2} GB a rank",
            p.ranks, p.partition.partitioner, p.partition.cut_facets, p.partition.imbalance, span(&p.owned_rows), span(&p.ghost_rows), p.halo_transport, most(&p.halo_seconds), p.halo_bytes.iter().max().unwrap_or(&0), p.reductions, most(&p.reduction_seconds), *p.peak_rss_bytes.iter().max().unwrap_or(&0) as f64 / 1e9
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
