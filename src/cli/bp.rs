//! `fem bp`: the CEED bake-off problems.

use crate::*;

#[derive(clap::Args)]
pub(crate) struct BpArgs {
    /// bp1 (mass, GL quadrature), bp3.5 (screened Poisson, GLL collocation), bp3.0 (screened Poisson, GL quadrature).
    #[arg(long, default_value = "bp3.5")]
    pub(crate) problem: String,
    /// Polynomial degree N (1..=15); a list `1,3,5` or a range `1-15` runs each (JSON lines).
    #[arg(long, default_value = "7")]
    pub(crate) degree: String,
    /// Number of elements (factored into a near-cubic grid of the unit cube).
    #[arg(long, conflicts_with = "dofs")]
    pub(crate) elements: Option<usize>,
    /// At least this many element DOFs (elements × (N + 1)³) instead.
    #[arg(long)]
    pub(crate) dofs: Option<usize>,
    /// Mesh: affine boxes, trilinear elements (interior vertices moved) or curved elements.
    #[arg(long, value_enum, default_value_t = DeformArg::Trilinear)]
    pub(crate) deform: DeformArg,
    /// Screening parameter λ of BP3.
    #[arg(long, default_value_t = 1.0)]
    pub(crate) lambda: f64,
    /// BP3.5 with one thread per node (N ≤ 7) instead of one per (i, j) column (lines or slices).
    #[arg(long)]
    pub(crate) threads_3d: bool,
    /// Elements per thread block (default: enough to fill 256 threads).
    #[arg(long)]
    pub(crate) elements_per_block: Option<usize>,
    /// Registers budgeted for at least this many resident warps per SM (0: the compiler's choice, the default)
    #[arg(long)]
    pub(crate) min_warps: Option<usize>,
    /// Where BP3.5's line kernel (N ≤ 8) keeps a thread's column (default: where more warps reside).
    #[arg(long, value_enum)]
    pub(crate) column: Option<ColumnArg>,
    /// BP3.5's line kernel at N = 7, 8: the geometric factors through a shared ring this many slices ahead (2, 3, 4; 0: through registers; default: 2 at N = 8).
    #[arg(long)]
    pub(crate) ring: Option<usize>,
    /// The geometric factors of the kernels of BP1, BP3.0 and BP3.5's lines (N ≤ 8): read as stored, or recomputed at each point from the corners of affine or trilinear elements (curved ones read them); auto (the default) as the launch has it, tuned or built in (stored).
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) factors: FactorsArg,
    /// Apply on global nodes (gather and atomic scatter in the kernel) instead of element blocks (always so under mpirun).
    #[arg(long)]
    pub(crate) assembled: bool,
    /// Instead of --problem, the Jacobian of a shipped physics on Q_N hexahedra or quadrilaterals (N ≤ 8, --dim), on L-vectors as Newton's Krylov method applies it.
    #[arg(long, value_enum)]
    pub(crate) physics: Option<crate::cli::mesh_solve::PhysicsArg>,
    /// With --physics: 3 for hexahedra of the unit cube, 2 for
    /// quadrilaterals of the unit square (--elements then counts a square).
    #[arg(long, requires = "physics", default_value_t = 3, value_parser = clap::value_parser!(u8).range(2..=3))]
    pub(crate) dim: u8,
    /// With --physics: how its Jacobian is stored: partial (point data), none (matrix-free), or for comparison lma or a sparse format.
    #[arg(long, requires = "physics", default_value = "partial")]
    pub(crate) level: String,
    /// Also time the CPU backend on the same operator (speed-up in the report).
    #[arg(long)]
    pub(crate) cpu_time: bool,
    /// Solve the screened Poisson problem with CG to this relative residual.
    #[arg(long)]
    pub(crate) solve: Option<f64>,
    /// With --solve: CG's preconditioner, jacobi or pmg (p-multigrid:
    /// Chebyshev–Jacobi on the degree-N operator, the same operator at
    /// degree 1 on the same cells assembled and solved by one AMG cycle
    /// of the --amg-* options).
    #[arg(long, value_enum, requires = "solve", default_value_t = BpPrecondArg::Jacobi)]
    pub(crate) precond: BpPrecondArg,
    /// --precond pmg: Chebyshev's degree on each side of the correction (default 3).
    #[arg(long)]
    pub(crate) chebyshev_degree: Option<usize>,
    /// --precond pmg: the levels' degrees below N, descending to 1 (`4,2,1`),
    /// or `halving` (N/2, N/4, ..., 1); default 1 (two levels).
    #[arg(long)]
    pub(crate) pmg_degrees: Option<String>,
    #[command(flatten)]
    pub(crate) amg: crate::cli::amg::AmgArgs,
    /// With --solve and one degree: write u_h, the exact solution and the
    /// error as a VTK file (.vtu) of Lagrange hexahedra of order N.
    #[arg(long, requires = "solve")]
    pub(crate) vtk: Option<PathBuf>,
    /// Time every launch (thread structure, elements per block) first and
    /// keep the fastest in the device's tuning file.
    #[arg(long)]
    pub(crate) tune: bool,
    /// GPU timing: cold (the operator and the copy cycle through copies of
    /// their data so each application reads DRAM, the paper's roofline) or
    /// warm (the same data every time, which may sit in L2; always so
    /// under mpirun, where products are timed as a solver applies them).
    #[arg(long, value_enum, default_value_t = L2Arg::Cold)]
    pub(crate) l2: L2Arg,
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub(crate) backend: BackendArg,
    /// Timed applications (the median is reported).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) repeats: u32,
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BpPrecondArg {
    Jacobi,
    Pmg,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ColumnArg {
    Registers,
    Shared,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FactorsArg {
    Auto,
    Stored,
    Recomputed,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum L2Arg {
    Cold,
    Warm,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum DeformArg {
    None,
    Trilinear,
    Curved,
}

/// `7`, `1,3,5` or `1-15`.
pub(crate) fn parse_degrees(s: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("bad degree list `{s}` (expected N, N,M,... or N-M)");
    if let Some((a, b)) = s.split_once('-') {
        let (a, b): (usize, usize) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
        return if a <= b { Ok((a..=b).collect()) } else { Err(bad()) };
    }
    s.split(',').map(|d| d.trim().parse().map_err(|_| bad())).collect()
}

pub(crate) fn bp(a: &BpArgs) -> CliResult {
    use fem::bp::Size;
    use fem::host::mesh::spectral::Deformation;
    let degrees = parse_degrees(&a.degree)?;
    let size = match (a.elements, a.dofs) {
        (_, Some(d)) => Size::Dofs(d),
        (Some(e), None) => Size::Elements(e),
        (None, None) => Size::Elements(512),
    };
    let deformation = match a.deform {
        DeformArg::None => Deformation::None,
        DeformArg::Trilinear => Deformation::Trilinear { amplitude: 0.1, seed: 1 },
        DeformArg::Curved => Deformation::Curved { amplitude: 0.05 },
    };
    if let Some(physics) = a.physics {
        return bp_physics(a, physics.physics(), &degrees, size, deformation);
    }
    let problem: fem::host::operator::tensor::Problem = a.problem.parse()?;
    if a.vtk.is_some() && degrees.len() > 1 {
        return Err("--vtk writes one solution: give one --degree".into());
    }
    if let Some(result) = crate::cli::mesh_solve::on_ranks(|comm| bp_across(a, problem, &degrees, size, deformation, comm)) {
        return result;
    }
    let any = open_announced(a.backend, a.json)?;
    refuse_on_cpu(&any, &[("threads_3d", "picks the GPU kernel's threads"), ("elements_per_block", "sizes the GPU's thread blocks"), ("min_warps", "budgets the GPU kernel's registers"), ("column", "places the GPU line kernel's column"), ("ring", "pipelines the GPU line kernel's factors"), ("factors", "picks where the GPU kernel's factors come from"), ("l2", "sets how the GPU's timing meets its L2 cache")])?;
    let mut tuning = fem::host::tune::Tuning::open(&any.name());
    let bar = progress_bar(a.json, String::new());
    for &degree in &degrees {
        let o = options(a, problem, degree, size, deformation)?;
        let r = fem::bp::run(&o, &any, &mut tuning, &|m, step| follow(&bar, &format!("N = {degree}: {m}"), step))?;
        if let (Some(path), Some(s)) = (&a.vtk, &r.solve) {
            fem::bp::write_vtk(&o, s, path, fem::host::io::vtk::Encoding::Binary)?;
        }
        bar.suspend(|| {
            report_degree(a.json, degrees.len() > 1, &r, |r| {
                let mut t = format!(
                    "{} N={} elements={} dofs={} ({}): {:.3e} s/apply, {:.2} GDOF/s, {:.3} TFLOP/s, {:.0} GB/s = {:.3} of copy ({:.0} GB/s), error vs CPU {:.1e}",
                    r.problem.name(), r.degree, r.elements, r.dofs, r.kernel, r.seconds_per_apply, r.gdofs_per_second, r.tflops,
                    r.gbytes_per_second, r.roofline_fraction, r.copy_gbytes_per_second, r.max_rel_error_vs_cpu
                );
                if r.recomputed_factors {
                    t += ", geometric factors recomputed from the elements' corners";
                }
                if let Some(s) = r.speedup_vs_cpu {
                    t += &format!(", {s:.1}× the CPU backend");
                }
                if let Some(k) = &r.launch_tuned_for {
                    t += &format!("\nlaunch from the tuning entry {k}");
                }
                if let Some(o) = &r.tuned {
                    let l = |b: &BpLaunch| {
                        let mut column = b.column.map(|c| format!(", column in {}", if c == Column::Shared { "shared memory" } else { "registers" })).unwrap_or_default();
                        if b.ring > 0 {
                            column += &format!(", factors through a shared ring {} slices ahead", b.ring);
                        }
                        if b.recompute {
                            column += ", factors recomputed from the corners";
                        }
                        format!("{} threads, {} elements per block, register budget {}{column}", if b.threads_3d { "3D" } else { "2D" }, b.elements_per_block, if b.min_warps > 0 { format!("{} warps", b.min_warps) } else { "free".into() })
                    };
                    t += &format!("\ntuned launch: {} at {:.2} µs, {:.2}× the default {} at {:.2} µs ({} timed)", l(&o.best), o.seconds * 1e6, o.margin(), l(&o.default), o.default_seconds * 1e6, o.timed.len());
                }
                if let Some(s) = &r.solve {
                    t += &solve_line(s);
                }
                t
            })
        })?;
    }
    bar.finish_and_clear();
    if a.tune {
        save_tuning(&tuning, a.json)?;
    }
    Ok(true)
}

/// The run of one degree that `a` asks for.
fn options(a: &BpArgs, problem: fem::host::operator::tensor::Problem, degree: usize, size: fem::bp::Size, deformation: fem::host::mesh::spectral::Deformation) -> Result<fem::bp::BpOptions, String> {
    use fem::bp::BpOptions;
    let p_multigrid = p_multigrid(a)?;
    Ok(BpOptions {
        problem,
        degree,
        size,
        deformation,
        lambda: a.lambda,
        launch: UserLaunch {
            threads_3d: a.threads_3d,
            elements_per_block: a.elements_per_block,
            min_warps: a.min_warps,
            column: a.column.map(|c| match c {
                ColumnArg::Registers => Column::Registers,
                ColumnArg::Shared => Column::Shared,
            }),
            ring: a.ring,
            recompute: match a.factors {
                FactorsArg::Auto => None,
                FactorsArg::Stored => Some(false),
                FactorsArg::Recomputed => Some(true),
            },
        },
        repeats: a.repeats as usize,
        assembled: a.assembled,
        cpu_time: a.cpu_time,
        solve: a.solve,
        p_multigrid,
        tune: a.tune,
        l2: match a.l2 {
            L2Arg::Cold => fem::bp::L2::Cold,
            L2Arg::Warm => fem::bp::L2::Warm,
        },
    })
}

/// p-multigrid's options where `--precond pmg` asks for it; an error for
/// its options given without it.
fn p_multigrid(a: &BpArgs) -> Result<Option<fem::bp::BpPmg>, String> {
    if a.precond == BpPrecondArg::Jacobi {
        let named = [&["chebyshev_degree", "pmg_degrees"][..], crate::cli::amg::AMG].concat();
        if named.iter().any(|id| crate::cli::given::given(id)) {
            return Err("--chebyshev-degree, --pmg-degrees and the --amg-* options configure --precond pmg".into());
        }
        return Ok(None);
    }
    let chebyshev = match a.chebyshev_degree.unwrap_or(3) {
        0 => return Err("--chebyshev-degree is at least 1".into()),
        d => d,
    };
    let levels = pmg_levels(a.pmg_degrees.as_deref())?;
    Ok(Some(fem::bp::BpPmg { options: fem::host::problem::nonlinear::PmgOptions { chebyshev, amg: a.amg.options()? }, levels }))
}

/// `--pmg-degrees`: degrees like 4,2,1, or halving; 1 (two levels) unless
/// given. `fem bp --solve` and `fem solve --physics` read it alike.
pub(crate) fn pmg_levels(arg: Option<&str>) -> Result<fem::bp::PmgLevels, String> {
    Ok(match arg {
        None => fem::bp::PmgLevels::Degrees(vec![1]),
        Some("halving") => fem::bp::PmgLevels::Halving,
        Some(list) => fem::bp::PmgLevels::Degrees(list.split(',').map(|d| d.trim().parse().map_err(|_| format!("bad --pmg-degrees `{list}` (expected degrees like 4,2,1, or halving)"))).collect::<Result<_, String>>()?),
    })
}

/// `fem bp` on the ranks of `comm`: one degree, on the GPU of each rank
/// (or its share of the host's cores); rank 0 reports.
fn bp_across(a: &BpArgs, problem: fem::host::operator::tensor::Problem, degrees: &[usize], size: fem::bp::Size, deformation: fem::host::mesh::spectral::Deformation, comm: &dyn fem::host::distributed::Communicator) -> CliResult {
    let [degree] = degrees else { return Err("across ranks fem bp runs one --degree".into()) };
    if a.vtk.is_some() {
        return Err("across ranks fem bp times the operator and solves: --vtk writes one rank's solution".into());
    }
    let quiet = a.json || comm.rank() > 0;
    let any = open_announced_on(a.backend, crate::cli::mesh_solve::local_gpu(comm), quiet)?;
    let tuning = fem::host::tune::Tuning::open(&any.name());
    let bar = progress_bar(quiet, String::new());
    // on global nodes, as a solver applies it
    let o = fem::bp::BpOptions { assembled: true, ..options(a, problem, *degree, size, deformation)? };
    let r = fem::bp::across::run(&o, &any, comm, &tuning, &|m| bar.set_message(format!("N = {degree} on {} ranks: {m}", comm.size())))?;
    bar.finish_and_clear();
    if comm.rank() > 0 {
        return Ok(true);
    }
    print_report(a.json, &r, |r| {
        let mut t = format!(
            "{} N={} elements={} nodes={} on {} ranks ({:?} bricks, {} cut faces, imbalance {:.3}; {}, halo by {}): {:.3e} s/apply ({:.3e} without the exchange), {:.2} GDOF/s, error vs CPU {:.1e}",
            r.problem.name(), r.degree, r.elements, r.global_nodes, r.ranks, r.bricks, r.partition.cut_facets, r.partition.imbalance, r.kernel, r.halo_transport,
            r.seconds_per_apply, r.local_seconds_per_apply, r.gdofs_per_second, r.max_rel_error_vs_cpu
        );
        if let Some(s) = r.sequential_seconds_per_apply {
            t += &format!("\ninterior elements overlapped the exchange: {:.3e} s/apply with the exchange first", s);
        }
        if let Some(s) = &r.solve {
            t += &solve_line(s);
        }
        t += &format!("\nrank 0 by stage: {}", r.stages.iter().map(|s| format!("{} {:.2} s", s.stage, s.seconds)).collect::<Vec<_>>().join(", "));
        t
    })?;
    Ok(true)
}

/// The text report's line of a solve.
fn solve_line(s: &fem::bp::SolveReport) -> String {
    let mut t = format!(
        "\n{}-CG: {} iterations, relative residual {:.1e}, set-up {:.3} s, iterations {:.3} s, max nodal error {:.2e}",
        if s.p_multigrid.is_some() { "p-multigrid" } else { "Jacobi" },
        s.iterations,
        s.relative_residual,
        s.setup_seconds,
        s.seconds,
        s.max_nodal_error
    );
    if let Some(p) = &s.p_multigrid {
        let degrees: Vec<String> = p.degrees.iter().zip(&p.rows).map(|(d, r)| format!("N = {d} ({r} rows)")).collect();
        t += &format!("\nlevels {}, Chebyshev({}), AMG of {} levels (operator complexity {:.2}) at N = 1", degrees.join(", "), p.chebyshev, p.amg.levels.len(), p.amg.operator_complexity);
        t += &format!("\nset-up {}", fem::host::stages::describe(&p.setup));
    }
    t
}

/// `fem bp --physics`: the Jacobian of a shipped physics at each degree.
fn bp_physics(a: &BpArgs, physics: fem::mesh_solve::Physics, degrees: &[usize], size: fem::bp::Size, deformation: fem::host::mesh::spectral::Deformation) -> CliResult {
    use fem::bp::physics::{run, PhysicsOptions};
    crate::cli::given::refuse_all_but(&["physics", "level", "dim", "degree", "elements", "dofs", "deform", "backend", "repeats", "cpu_time", "json"], "--physics (the pipeline's Jacobian on L-vectors; the other options steer the CEED problems' kernels)")?;
    let level: fem::host::problem::nonlinear::Assembly = a.level.parse()?;
    let any = open_announced(a.backend, a.json)?;
    let bar = progress_bar(a.json, String::new());
    for &degree in degrees {
        let o = PhysicsOptions { physics, level, degree, dim: a.dim as usize, size, deformation, repeats: a.repeats as usize, cpu_time: a.cpu_time };
        let r = run(&o, &any, &|m| bar.set_message(format!("N = {degree}: {m}")))?;
        bar.suspend(|| {
            report_degree(a.json, degrees.len() > 1, &r, |r| {
                let mut t = format!(
                    "{:?} N={} elements={} L-DOFs={} ({}): {:.3e} s/apply, {:.2} GDOF/s on L-DOFs ({:.2} on E-DOFs), {:.0} GB/s = {:.3} of copy ({:.0} GB/s), error vs CPU {:.1e}",
                    r.physics, r.degree, r.elements, r.l_dofs, r.operator, r.seconds_per_apply, r.gdofs_per_second, r.e_gdofs_per_second,
                    r.gbytes_per_second, r.roofline_fraction, r.copy_gbytes_per_second, r.max_rel_error_vs_cpu
                );
                if let Some(s) = r.speedup_vs_cpu {
                    t += &format!(", {s:.1}× the CPU backend");
                }
                t
            })
        })?;
    }
    bar.finish_and_clear();
    Ok(true)
}

/// One degree's report: a JSON line where several degrees run, else
/// [`print_report`]'s JSON or `text`.
fn report_degree<R: serde::Serialize>(json: bool, several: bool, r: &R, text: impl FnOnce(&R) -> String) -> Result<(), Box<dyn std::error::Error>> {
    if json && several {
        println!("{}", serde_json::to_string(r)?);
        return Ok(());
    }
    print_report(json, r, text)
}
