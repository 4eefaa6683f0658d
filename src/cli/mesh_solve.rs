//! `fem solve --mesh FILE --physics ...`: the command-line side of
//! [`fem::mesh_solve`] (arguments, progress, output files).

use crate::{given, open_announced_on, AmgArgs, refuse_unread, spinner, SmootherArg, CliResult, CycleArg, FormatArg, PartitionerArg, PrecondArg, ScatterArg, SolveArgs, PIPELINE};
use clap::ValueEnum;
use fem::host::io::gmsh::GmshMesh;
use fem::host::io::vtk::{write_collection, write_nodal, Encoding, Field};
use fem::host::problem::nonlinear::time::Scheme;
use fem::host::space::Space;
use fem::host::problem::nonlinear::{Assembly, Krylov, NewtonOptions, Precision, Precond, Scatter};
use fem::host::sparse::SpmvFormat;
use fem::expression::{components, Expression};
use fem::host::distributed::{Communicator, Partitioner, Serial};
use fem::mesh_solve::{describe, run_on, GroupValue, LoadKind, MeshSolveOptions, Physics, Transient};

/// `--physics`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PhysicsArg {
    /// −Δu = f.
    Poisson,
    /// Isotropic linear elasticity, −∇·σ(u) = f.
    Elasticity,
    /// −Δu = f cooled through --robin-group: ∂u/∂n + u + u|u|³ = g (nonlinear).
    Radiation,
    /// Compressible neo-Hookean hyperelasticity, −∇·P(∇u) = f (nonlinear,
    /// the Lamé parameters of --young and --poisson-ratio).
    NeoHookean,
    /// u = f in L² (the mass matrix: the load's L² projection).
    Mass,
}

impl PhysicsArg {
    /// The physics named.
    pub fn physics(self) -> Physics {
        match self {
            Self::Poisson => Physics::Poisson,
            Self::Elasticity => Physics::Elasticity,
            Self::Radiation => Physics::Radiation,
            Self::NeoHookean => Physics::NeoHookean,
            Self::Mass => Physics::Mass,
        }
    }
}

/// `--krylov`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KrylovArg {
    /// Conjugate gradients (symmetric positive definite tangents).
    Cg,
    /// BiCGStab.
    Bicgstab,
    /// GMRES(m), m = --restart.
    Gmres,
    /// Preconditioned Richardson, x ← x + M (b − A x): with --precond mg,
    /// multigrid cycles as the solver.
    Richardson,
}

/// `--load`: sine (f = d π² Π sin(π xₐ), the manufactured load, nearly an
/// eigenvector on uniform grids), one (f = 1; elasticity: weight (0, …,
/// −1)), random (node values in [−1, 1], fixed seed: for solver
/// benchmarks), zero, or expressions of x, y, z, t (one, or one per
/// component separated by `:`).
pub fn parse_load(s: &str) -> Result<LoadKind, String> {
    Ok(match s {
        "sine" => LoadKind::Sine,
        "one" => LoadKind::One,
        "random" => LoadKind::Random,
        "zero" => LoadKind::Zero,
        _ => LoadKind::Expression(components(s).map_err(|e| format!("{e} (or one of sine, one, random, zero)"))?),
    })
}

/// The command line's (group, values) pairs as the solve takes them.
fn group_values(pairs: &[(String, Vec<Expression>)]) -> Vec<GroupValue> {
    pairs.iter().map(|(g, v)| GroupValue { group: g.clone(), value: v.clone() }).collect()
}

/// A Dirichlet group: GROUP (u = 0 there), GROUP=VALUE or GROUP=v1:v2[:v3].
pub fn parse_dirichlet(s: &str) -> Result<(String, Vec<Expression>), String> {
    match s.contains('=') {
        true => parse_neumann(s),
        false if s.is_empty() => Err("an empty group name".into()),
        false => Ok((s.to_string(), Vec::new())),
    }
}

/// A Neumann group: GROUP=VALUE or GROUP=v1:v2[:v3], each value a number
/// or an expression of x, y, z and t.
pub fn parse_neumann(s: &str) -> Result<(String, Vec<Expression>), String> {
    let (g, v) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected GROUP=VALUE or GROUP=v1:v2[:v3]"))?;
    let values = components(v).map_err(|e| format!("`{s}`: {e}"))?;
    if g.is_empty() || values.is_empty() || values.len() > 3 {
        return Err(format!(
            "`{s}`: a group name or number and one to three values"
        ));
    }
    Ok((g.to_string(), values))
}

/// Node values as ParaView reads them: scalars, or vectors of three
/// components (2D vectors padded with zero).
fn vtk_values(u: &[f64], nc: usize) -> Vec<f64> {
    if nc == 1 {
        u.to_vec()
    } else {
        u.chunks(nc).flat_map(|c| (0..3).map(move |k| c.get(k).copied().unwrap_or(0.0))).collect()
    }
}

/// `path` (`.pvtu`) and one `.vtu` piece a rank beside it (`STEM-RANK.vtu`,
/// the cells the partition gives that rank, with u and the cells' rank),
/// each rank writing its own from its `space` (`own_cells` of it) and the
/// values `u` there; rank 0 writes the `.pvtu` once all pieces are there.
fn write_pieces(path: &std::path::Path, comm: &dyn Communicator, space: &Space, u: &[f64], own_cells: &[u32], enc: Encoding) -> Result<(), Box<dyn std::error::Error>> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("u");
    let name = |r: usize| format!("{stem}-{r:04}.vtu");
    let (nb, nc) = (space.nb(), u.len() / space.n_dofs.max(1));
    let mut nodes: Vec<u32> = own_cells.iter().flat_map(|&c| space.cell_dofs[c as usize * nb..(c as usize + 1) * nb].iter().copied()).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let (shown, _) = space.subspace(own_cells, &nodes)?;
    let values: Vec<f64> = nodes.iter().flat_map(|&g| u[g as usize * nc..(g as usize + 1) * nc].iter().copied()).collect();
    let here = path.with_file_name(name(comm.rank()));
    let me = comm.rank() as f64;
    let wrote = write_nodal(&here, &shown, &[Field { name: "u", values: &vtk_values(&values, nc) }], &[Field { name: "rank", values: &vec![me; own_cells.len()] }], enc).map_err(|e| format!("cannot write {}: {e}", here.display()));
    // every piece written before the collection names them
    fem::host::distributed::agree(comm, wrote.map_err(fem::host::Error::InvalidArgument))?;
    if comm.rank() == 0 {
        let pieces: Vec<String> = (0..comm.size()).map(name).collect();
        let components = if nc == 1 { 1 } else { 3 };
        fem::host::io::vtk::write_parallel(path, &pieces, &[("u", components)], &[("rank", 1)]).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// `--scheme`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemeArg {
    /// θ = 1.
    BackwardEuler,
    /// θ = ½.
    CrankNicolson,
    /// Second-order backward differences.
    Bdf2,
}

/// `--format` as the storage of Newton's tangent.
fn assembly(a: &SolveArgs) -> Result<Assembly, String> {
    Ok(match a.format.unwrap_or(FormatArg::Auto) {
        FormatArg::Auto => Assembly::Auto,
        FormatArg::Lma => Assembly::Lma,
        FormatArg::Partial => Assembly::Partial,
        FormatArg::Csr => Assembly::Sparse(SpmvFormat::Csr),
        FormatArg::Ell => Assembly::Sparse(SpmvFormat::Ell),
        FormatArg::Ellt => Assembly::Sparse(SpmvFormat::EllT),
        FormatArg::K1 => Assembly::Sparse(SpmvFormat::K1),
        FormatArg::K2 => Assembly::Sparse(SpmvFormat::K2),
        FormatArg::Cusparse => Assembly::Sparse(SpmvFormat::Cusparse),
        FormatArg::MatrixFree => Assembly::MatrixFree,
        FormatArg::LazyEll => return Err("--physics stores its tangent as auto, csr, ell, ellt, k1, k2, cusparse, lma, partial or matrix-free; lazy-ell is a format of the Q_p Poisson path".into()),
    })
}

/// `--precond`, `--cycle` and `--smoothing-steps` as Newton's preconditioner.
fn precond(a: &SolveArgs) -> Result<Precond, String> {
    let p = match a.precond.unwrap_or(PrecondArg::Jacobi) {
        PrecondArg::None => Precond::None,
        PrecondArg::Jacobi => Precond::Jacobi,
        PrecondArg::Ssor => Precond::Ssor,
        PrecondArg::Spai => Precond::Spai,
        PrecondArg::Sainv => Precond::Sainv,
        PrecondArg::Amg => Precond::Amg(a.amg.options()?),
        PrecondArg::Chebyshev => Precond::Chebyshev(chebyshev_degree(a)?),
        PrecondArg::Pmg => Precond::PMultigrid(fem::host::problem::nonlinear::PmgOptions { chebyshev: chebyshev_degree(a)?, amg: a.amg.options()? }),
        PrecondArg::Mg if a.refine == 0 => return Err("--precond mg needs --refine 1 or more: its levels are the file's mesh and its uniform refinements".into()),
        PrecondArg::Mg => match Precond::multigrid() {
            Precond::Multigrid(o) => {
                use fem::host::solver::multigrid::{MgOptions, Smoother};
                let steps = a.smoothing_steps.unwrap_or(o.pre);
                // Jacobi damped as Newton's default; SPAI(1) undamped and
                // SAINV by ½, as Geveler et al.
                let (smoother, omega) = match (given("smoother"), a.smoother) {
                    (false, _) | (true, SmootherArg::Jacobi) => (Smoother::Jacobi, o.omega),
                    (true, SmootherArg::Spai) => (Smoother::Spai, 1.0),
                    (true, SmootherArg::Sainv) => (Smoother::Sainv, 0.5),
                };
                Precond::Multigrid(MgOptions { cycle: a.cycle.unwrap_or(CycleArg::V).into(), pre: steps, post: steps, smoother, omega, ..o })
            }
            other => other,
        },
    };
    if !matches!(p, Precond::Multigrid(_)) && (a.cycle.is_some() || a.smoothing_steps.is_some() || given("smoother")) {
        return Err("--cycle, --smoothing-steps and --smoother configure --precond mg".into());
    }
    AmgArgs::refuse_unless(matches!(p, Precond::Amg(_) | Precond::PMultigrid(_)))?;
    if a.chebyshev_degree.is_some() && !matches!(p, Precond::Chebyshev(_) | Precond::PMultigrid(_)) {
        return Err("--chebyshev-degree configures --precond chebyshev and pmg".into());
    }
    if a.pmg_degrees.is_some() && !matches!(p, Precond::PMultigrid(_)) {
        return Err("--pmg-degrees configures --precond pmg".into());
    }
    Ok(p)
}

/// `--chebyshev-degree`, 3 unless given.
fn chebyshev_degree(a: &SolveArgs) -> Result<usize, String> {
    match a.chebyshev_degree.unwrap_or(3) {
        0 => Err("--chebyshev-degree is at least 1".into()),
        k => Ok(k),
    }
}

/// Solves `a` on `file` (read from `--mesh`): on the ranks of an MPI job
/// when `mpirun` started this process, else on one.
pub fn solve(a: &SolveArgs, file: &GmshMesh) -> CliResult {
    on_ranks(|comm| solve_on(a, file, comm)).unwrap_or_else(|| solve_on(a, file, &Serial))
}

/// `f` on the ranks of an MPI job when `mpirun` started this process
/// (`None` otherwise); an error on one rank ends them all, for the others
/// may wait in a collective.
pub(crate) fn on_ranks(f: impl FnOnce(&dyn Communicator) -> CliResult) -> Option<CliResult> {
    #[cfg(feature = "mpi")]
    if fem::host::distributed::mpi::Mpi::launched() {
        share_cores();
        let mpi = match fem::host::distributed::mpi::Mpi::init() {
            Ok(m) => m,
            Err(e) => return Some(Err(e.into())),
        };
        let result = f(&mpi);
        if let Err(e) = &result {
            if mpi.size() > 1 {
                eprintln!("error on rank {}: {e}", mpi.rank());
                mpi.abort(1);
            }
        }
        return Some(result);
    }
    #[cfg(not(feature = "mpi"))]
    let _ = f;
    None
}

/// The ranks of one host share its cores: each rank's thread pools take
/// its share, unless `RAYON_NUM_THREADS` says otherwise. Called before
/// MPI starts threads of its own.
#[cfg(feature = "mpi")]
fn share_cores() {
    let local = ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"].iter().find_map(|v| std::env::var(v).ok()?.parse::<usize>().ok());
    let Some(local) = local else { return };
    widen_binding(local);
    if local > 1 && std::env::var_os("RAYON_NUM_THREADS").is_none() {
        let cores = fem::host::distributed::newton::cores();
        std::env::set_var("RAYON_NUM_THREADS", (cores / local).max(1).to_string());
    }
}

/// A launcher's default binding can leave a rank fewer cores than its
/// share of the host (Open MPI binds each of two ranks to one core, all
/// its threads with it). Such a rank takes its launcher's cores (the
/// parent process's affinity) instead, and shares them with the host's
/// other ranks through its thread count; a binding of at least its share
/// (`--map-by slot:PE=n`, `--bind-to none`) stays as given.
#[cfg(all(feature = "mpi", target_os = "linux"))]
fn widen_binding(local: usize) {
    // SAFETY: cpu_set_t is plain bits, filled by the kernel; the calls
    // read and set this thread's affinity (threads started later inherit it).
    unsafe {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let (mut mine, mut launcher): (libc::cpu_set_t, libc::cpu_set_t) = (std::mem::zeroed(), std::mem::zeroed());
        if libc::sched_getaffinity(0, size, &mut mine) != 0 || libc::sched_getaffinity(libc::getppid(), size, &mut launcher) != 0 {
            return;
        }
        let (have, host) = (libc::CPU_COUNT(&mine) as usize, libc::CPU_COUNT(&launcher) as usize);
        if have < (host / local).max(1) {
            libc::sched_setaffinity(0, size, &launcher);
        }
    }
}

#[cfg(all(feature = "mpi", not(target_os = "linux")))]
fn widen_binding(_: usize) {}

/// The rank's GPU: its rank among the processes of its host, modulo the
/// GPUs there.
pub(crate) fn local_gpu(comm: &dyn Communicator) -> usize {
    let local = ["OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"].iter().find_map(|v| std::env::var(v).ok()?.parse::<usize>().ok()).unwrap_or(comm.rank());
    local % fem::host::backend::cuda::device_count().unwrap_or(1).max(1)
}

/// [`solve`] on the ranks of `comm`; rank 0 reports and writes the files.
fn solve_on(a: &SolveArgs, file: &GmshMesh, comm: &dyn Communicator) -> CliResult {
    refuse_unread(PIPELINE, "the pipeline's solve of --physics (its --format stores the tangent, in f64, and it preconditions with Jacobi, SSOR or multigrid); they are the Q_p Poisson formats' or the hole benchmark's")?;
    let precond = precond(a)?;
    if a.write_system.is_some() && (comm.size() > 1 || a.time_steps > 0) {
        return Err("--write-system writes one rank's stationary system: run it without mpirun and --time-steps".into());
    }
    if a.partitioner.is_some() && comm.size() == 1 {
        return Err("--partitioner splits the cells among ranks: run under mpirun -np R".into());
    }
    if a.time_steps == 0 && a.vtk.as_ref().is_some_and(|p| p.extension().is_some_and(|e| e == "pvd")) {
        return Err("a .pvd series is written by --time-steps; name a .vtu file for one solution".into());
    }
    let physics = a.physics.unwrap_or(PhysicsArg::Poisson).physics();
    let load = a.load.clone();
    let nonlinear = matches!(physics, Physics::Radiation | Physics::NeoHookean);
    let rtol = a.rtol.unwrap_or(1e-10);
    let newton = NewtonOptions {
        rtol,
        krylov_rtol: 0.5 * rtol,
        max_krylov: a.max_iterations,
        // one update solves the linear physics (in f32 a few refine it,
        // on its one tangent)
        max_iterations: if nonlinear { 30 } else { 5 },
        lag_tangent: !nonlinear,
        krylov: match a.krylov {
            KrylovArg::Cg => Krylov::Cg,
            KrylovArg::Bicgstab => Krylov::BiCgStab,
            KrylovArg::Gmres => Krylov::Gmres { restart: a.restart as usize },
            KrylovArg::Richardson => Krylov::Richardson,
        },
        precond,
        assembly: assembly(a)?,
        scatter: match a.scatter {
            ScatterArg::Atomic => Scatter::Atomic,
            ScatterArg::Spmv => Scatter::Spmv,
            ScatterArg::Colour => return Err("--scatter colour orders the writes of the Q_p Poisson kernels; --physics sums by atomic or spmv".into()),
        },
        precision: match a.precision {
            crate::Precision::F32 => Precision::F32,
            crate::Precision::F64 => Precision::F64,
        },
        ..Default::default()
    };
    let o = MeshSolveOptions {
        physics,
        degree: a.degree as usize,
        refine: a.refine,
        dirichlet: group_values(&a.dirichlet_group),
        neumann: group_values(&a.neumann_group),
        robin: group_values(&a.robin_group),
        load,
        young: a.young,
        poisson_ratio: a.poisson_ratio,
        newton,
        ordering: a.ordering.parse()?,
        partitioner: match a.partitioner {
            Some(PartitionerArg::Curve) => Partitioner::Curve,
            _ => Partitioner::Metis,
        },
        write_system: a.write_system.clone(),
        pmg_levels: crate::cli::bp::pmg_levels(a.pmg_degrees.as_deref())?,
        time: match a.time_steps {
            0 => None,
            steps => Some(Transient {
                dt: a.dt,
                steps,
                scheme: match a.scheme {
                    SchemeArg::BackwardEuler => Scheme::Theta(1.0),
                    SchemeArg::CrankNicolson => Scheme::Theta(0.5),
                    SchemeArg::Bdf2 => Scheme::Bdf2,
                },
                every: if a.vtk.as_ref().is_some_and(|p| p.extension().is_some_and(|e| e == "pvd")) { a.vtk_every.max(1) } else { 0 },
            }),
        },
    };
    let quiet = a.json || comm.rank() > 0;
    let any = open_announced_on(a.backend, local_gpu(comm), quiet)?;
    let what = format!(
        "{physics:?} on {}",
        a.mesh
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
    let bar = spinner(quiet, what.clone());
    let enc = if a.vtk_ascii { Encoding::Ascii } else { Encoding::Binary };
    let mut series = Vec::new();
    let mut snapshot = |space: &Space, step: usize, t: f64, u: &[f64]| -> fem::host::Result<()> {
        let pvd = a.vtk.as_ref().expect("a series has a .pvd path");
        let name = format!("{}-{step:05}.vtu", pvd.file_stem().and_then(|s| s.to_str()).unwrap_or("u"));
        let path = pvd.with_file_name(&name);
        let nc = u.len() / space.n_dofs.max(1);
        write_nodal(&path, space, &[Field { name: "u", values: &vtk_values(u, nc) }], &[], enc).map_err(|e| fem::host::Error::InvalidArgument(format!("cannot write {}: {e}", path.display())))?;
        series.push((t, name));
        Ok(())
    };
    let solution = run_on(&any, comm, file, &o, &|stage| bar.set_message(format!("{what}: {stage}")), &mut snapshot)?;
    bar.finish_and_clear();
    let report = &solution.report;
    if let Some(path) = a.vtk.as_ref().filter(|p| p.extension().is_some_and(|e| e == "pvtu")) {
        match (&solution.piece, &solution.whole) {
            (Some(p), _) => write_pieces(path, comm, &p.space, &p.u, &p.own_cells, enc)?,
            (None, Some((space, u))) => write_pieces(path, comm, space, u, &(0..space.n_cells() as u32).collect::<Vec<_>>(), enc)?,
            (None, None) => {}
        }
    }
    if comm.rank() > 0 {
        return Ok(report.newton.converged);
    }
    let (space, u) = solution.whole.as_ref().ok_or("rank 0 holds no whole solution")?;
    let nc = report.rows / space.n_dofs.max(1);
    // each cell's rank: the partition's, or 0 on one rank
    let ranks: Vec<f64> = match &report.ranks {
        Some(p) => p.partition.rank.iter().map(|&r| r as f64).collect(),
        None => vec![0.0; space.n_cells()],
    };
    match &a.vtk {
        Some(path) if o.time.is_some_and(|t| t.every > 0) => write_collection(path, &series).map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        Some(path) if path.extension().is_some_and(|e| e == "pvtu") => {}
        Some(path) => {
            let cells = if report.ranks.is_some() { vec![Field { name: "rank", values: &ranks }] } else { Vec::new() };
            write_nodal(path, &space, &[Field { name: "u", values: &vtk_values(&u, nc) }], &cells, enc).map_err(|e| format!("cannot write {}: {e}", path.display()))?
        }
        None => {}
    }
    if let Some(path) = &a.png {
        let magnitude: Vec<f64> = u
            .chunks(nc)
            .map(|c| c.iter().map(|v| v * v).sum::<f64>().sqrt())
            .collect();
        let (title, label) = if nc == 1 {
            (format!("u_h, {}", report.element), "u")
        } else {
            (format!("|u_h|, {}", report.element), "|u|")
        };
        fem::picture::nodal_png(path, &title, label, &space, &magnitude)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{}", describe(&report));
    }
    Ok(report.newton.converged)
}
