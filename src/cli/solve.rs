//! `fem solve`: the Poisson and hole problems on generated meshes (a
//! `--mesh` solve goes on in [`super::mesh_solve`]), their arguments and
//! output files.

use crate::*;
use fem::host::problem::poisson::memory;

/// Bytes of GPU storage above which `fem solve` opens the GPU before it
/// makes the mesh, to refuse a problem that cannot fit before any host
/// work. Below it the mesh is made while the GPU's context starts (0.3
/// s): such a problem takes a few seconds of host work at most, and the
/// first allocation that does not fit still refuses it.
const EARLY_CHECK: usize = 8 << 30;

#[derive(clap::Args)]
pub(crate) struct SolveArgs {
    /// The problem: −Δu = Π sin(π xₐ) on the unit square/cube, u = 0 on the boundary.
    #[arg(long, value_enum, default_value_t = ProblemArg::Poisson)]
    pub(crate) problem: ProblemArg,
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=3))]
    pub(crate) dim: u32,
    /// Polynomial degree p of the Q_p elements (2D: 1..=6, 3D: 1..=4).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub(crate) degree: u32,
    /// Cells per direction (default: about --dofs DOFs).
    #[arg(long)]
    pub(crate) cells: Option<usize>,
    /// Solve on the cells of a Gmsh file (MSH 2.2, 4.0 or 4.1, ASCII or
    /// binary) instead of a generated box. Triangles and tetrahedra, and
    /// any mesh with --physics, go through the general pipeline;
    /// quadrilaterals and hexahedra without --physics through the Q_p
    /// Poisson formats (the sine load then assumes the unit square or cube).
    #[arg(long, conflicts_with_all = ["cells", "unstructured"])]
    pub(crate) mesh: Option<PathBuf>,
    /// With --mesh: the physics, solved by Newton and a Jacobi-preconditioned
    /// Krylov method (--krylov) on the chosen backend, on triangles, quadrilaterals, tetrahedra or
    /// hexahedra of any degree the physics has kernels for.
    #[arg(long, value_enum, requires = "mesh")]
    pub(crate) physics: Option<PhysicsArg>,
    /// With --mesh: Neumann conditions, GROUP=VALUE (a flux ∂u/∂n; for
    /// elasticity a traction VALUE·n) or GROUP=tx:ty[:tz] (a traction
    /// vector), comma-separated; each value a number or an expression of
    /// x, y, z and t (`0.1*t*x`; no commas). Without --dirichlet-group, u = 0 holds on
    /// the rest of the boundary.
    #[arg(long, requires = "mesh", value_delimiter = ',', value_parser = cli::mesh_solve::parse_neumann)]
    pub(crate) neumann_group: Vec<(String, Vec<Expression>)>,
    /// With --physics radiation: cooling groups, GROUP=g (∂u/∂n + u + u|u|³ = g
    /// there), comma-separated. Without --dirichlet-group, u = 0 holds on
    /// the rest of the boundary.
    #[arg(long, requires = "mesh", value_delimiter = ',', value_parser = cli::mesh_solve::parse_neumann)]
    pub(crate) robin_group: Vec<(String, Vec<Expression>)>,
    /// With --mesh through the pipeline: the volume load, sine, one,
    /// random, zero, or f as an expression of x, y, z and t (one, or one
    /// per component separated by `:`, e.g. `sin(PI*x)*y`). Random excites
    /// every mode: use it, not sine, to time solvers.
    #[arg(long, default_value = "sine", value_parser = cli::mesh_solve::parse_load)]
    pub(crate) load: LoadKind,
    /// With --physics: the Krylov method of Newton's updates (preconditioned by --precond).
    #[arg(long, value_enum, default_value_t = KrylovArg::Cg)]
    pub(crate) krylov: KrylovArg,
    /// With --mesh: refine the file's mesh uniformly this many times and
    /// solve on the finest; --precond mg uses every level.
    #[arg(long, default_value_t = 0, requires = "mesh")]
    pub(crate) refine: usize,
    /// --krylov gmres: basis vectors kept before a restart.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) restart: u32,
    /// With --physics: time steps of M u̇ + R(u) = 0 from u = 0 (for
    /// Poisson the heat equation u̇ − Δu = f) instead of the stationary
    /// solve; with --vtk OUT.pvd every --vtk-every-th step is written.
    #[arg(long, default_value_t = 0, requires = "physics")]
    pub(crate) time_steps: usize,
    /// With --time-steps: the time step.
    #[arg(long, default_value_t = 0.01)]
    pub(crate) dt: f64,
    /// With --time-steps: the scheme.
    #[arg(long, value_enum, default_value_t = SchemeArg::Bdf2)]
    pub(crate) scheme: SchemeArg,
    /// With --time-steps and --vtk OUT.pvd: write every this many steps.
    #[arg(long, default_value_t = 1)]
    pub(crate) vtk_every: usize,
    /// Elasticity: Young's modulus.
    #[arg(long, default_value_t = 1.0)]
    pub(crate) young: f64,
    /// Elasticity: Poisson's ratio.
    #[arg(long, default_value_t = 0.3)]
    pub(crate) poisson_ratio: f64,
    /// With --mesh: Dirichlet conditions only on these boundary physical
    /// groups (names or numbers, comma-separated), natural conditions
    /// elsewhere: GROUP holds u = 0, GROUP=VALUE every component at VALUE,
    /// GROUP=v1:v2[:v3] a vector, each value a number or an expression of
    /// x, y, z and t (`sin(PI*x)`; no commas; values other than zero go
    /// through the pipeline). The L2 error is then not reported (no exact
    /// solution).
    #[arg(long, requires = "mesh", value_delimiter = ',', value_parser = cli::mesh_solve::parse_dirichlet)]
    pub(crate) dirichlet_group: Vec<(String, Vec<Expression>)>,
    /// With --mesh: material regions, κ per cell physical group as
    /// GROUP=VALUE pairs (names or numbers, comma-separated; other cells
    /// κ = 1), solving −∇·(κ∇u) = f. The L2 error is then not reported.
    #[arg(long, requires = "mesh", value_delimiter = ',', value_parser = parse_region_value)]
    pub(crate) kappa: Vec<(String, f64)>,
    /// Target number of DOFs when --cells is not given.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) dofs: usize,
    /// Perturbed, shuffled, randomly oriented cells instead of a structured grid.
    #[arg(long)]
    pub(crate) unstructured: bool,
    /// Storage of the operator. The Q_p Poisson path (default csr) takes
    /// auto, csr, ell, lazy-ell, lma and matrix-free; --physics (default
    /// auto: element matrices where their product reads fewer bytes and
    /// the preconditioner is Jacobi, else the backend's sparse format)
    /// takes auto, csr, ell, ellt, k1, k2, cusparse and lma.
    #[arg(long, value_enum)]
    pub(crate) format: Option<FormatArg>,
    /// Packed symmetric storage of the element matrices (LMA).
    #[arg(long)]
    pub(crate) symmetric: bool,
    /// How element values are summed without write races: atomic, colour
    /// (the Q_p Poisson kernels on the GPU) or spmv (--physics: 0/1 gather
    /// matrices).
    #[arg(long, value_enum, default_value_t = ScatterArg::Atomic)]
    pub(crate) scatter: ScatterArg,
    /// GPU CSR: threads per row (1, 2, 4, 8, 16 or 32; default from the row lengths).
    #[arg(long)]
    pub(crate) threads_per_row: Option<usize>,
    /// Local assembly: per-point data reused, or recomputed per entry.
    #[arg(long, value_enum, default_value_t = LocalArg::Reuse)]
    pub(crate) local: LocalArg,
    /// DOF numbering: original, aligned, blocked or blocked-aligned
    /// (default: aligned for LMA, original for the other formats).
    #[arg(long)]
    pub(crate) numbering: Option<String>,
    #[arg(long, default_value = "eliminate")]
    pub(crate) dirichlet: String,
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub(crate) backend: BackendArg,
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    pub(crate) precision: Precision,
    /// Relative residual at which the solver stops (default 1e-10; 1e-8 for the hole benchmark).
    #[arg(long)]
    pub(crate) rtol: Option<f64>,
    #[arg(long, default_value_t = 20_000)]
    pub(crate) max_iterations: usize,
    /// Unpreconditioned CG instead of Jacobi.
    #[arg(long)]
    pub(crate) no_jacobi: bool,
    /// Also time one SpMV against a copy of the same bytes on the same
    /// backend (GPU or CPU), CG starting from a random guess.
    #[arg(long)]
    pub(crate) bench: bool,
    /// Write u_h as a VTK file (ParaView's .vtu): on linear cells for
    /// p = 1, on Lagrange cells of order p above; with the exact solution
    /// and the error where it is known, κ and the Gmsh region per cell
    /// with --mesh; the hole problem writes u_h on its finest mesh. With
    /// --physics: a .pvtu writes one .vtu piece a rank beside it, and every
    /// file carries each cell's rank.
    #[arg(long)]
    pub(crate) vtk: Option<PathBuf>,
    /// The VTK file in ASCII instead of base64-encoded binary.
    #[arg(long)]
    pub(crate) vtk_ascii: bool,
    /// A PNG picture of u_h (a 3D solution cut at mid z).
    #[arg(long)]
    pub(crate) png: Option<PathBuf>,
    /// With --physics: write the first Newton update's linear system (the
    /// tangent at the start and minus the residual there: the whole
    /// problem for a linear physics) into this folder as NumPy arrays
    /// (indptr, indices, data, rhs, coordinates and system.json) before
    /// solving, for another solver: `benches/cpu/pyamg_system.py` runs pyamg on it.
    #[arg(long)]
    pub(crate) write_system: Option<PathBuf>,
    /// --format auto: products the operator will serve (CG iterations).
    #[arg(long, default_value_t = 1000.0)]
    pub(crate) products: f64,
    /// Hole problem: the solver.
    #[arg(long, value_enum, default_value_t = SolverArg::Mg)]
    pub(crate) solver: SolverArg,
    /// The preconditioner. Hole problem (default spai; for --solver mg:
    /// the smoother); --physics: jacobi (default), none, ssor, spai (not
    /// with cg), sainv, mg (multigrid by rediscretisation on the levels
    /// of --refine), amg (smoothed aggregation from the tangent), or
    /// chebyshev (the Chebyshev–Jacobi polynomial of --chebyshev-degree;
    /// it and jacobi and none run across ranks), or pmg (p-multigrid for
    /// Q2 and up: Chebyshev–Jacobi of --chebyshev-degree on the tangent
    /// as --format stores it, AMG of the --amg-* options on Q1 of the same
    /// cells).
    #[arg(long, value_enum)]
    pub(crate) precond: Option<PrecondArg>,
    #[command(flatten)]
    pub(crate) amg: AmgArgs,
    /// The smoother of multigrid (hole problem: default spai; --physics
    /// with --precond mg: default jacobi, rebuilt from every tangent).
    #[arg(long, value_enum, default_value_t = SmootherArg::Spai)]
    pub(crate) smoother: SmootherArg,
    /// The multigrid cycle (default f for the hole problem, v for --physics).
    #[arg(long, value_enum)]
    pub(crate) cycle: Option<CycleArg>,
    /// Multigrid's pre- and post-smoothing steps (hole problem: default 8
    /// in 2D, 16 in 3D; --physics: 2).
    #[arg(long)]
    pub(crate) smoothing_steps: Option<usize>,
    /// --precond chebyshev: the polynomial's degree, its products with the
    /// tangent an application (default 3).
    #[arg(long)]
    pub(crate) chebyshev_degree: Option<usize>,
    /// --precond pmg: the levels' degrees below P, descending to 1
    /// (`4,2,1`), or `halving` (P/2, P/4, ..., 1); default 1 (two levels).
    /// The levels between are the physics rediscretised, stored by their
    /// points and smoothed as the finest is.
    #[arg(long)]
    pub(crate) pmg_degrees: Option<String>,
    /// Across ranks (under mpirun): how the cells are split, by METIS's
    /// k-way partition of the dual graph (few facets cut; the default) or
    /// in equal runs along a Morton curve (no graph: faster to make).
    #[arg(long, value_enum)]
    pub(crate) partitioner: Option<PartitionerArg>,
    /// Hole problem: multigrid levels (default 7 in 2D Q1, 6 in 2D Q2, 4 in 3D Q1, 3 in 3D Q2: about 0.5M / 0.1M DOFs).
    #[arg(long)]
    pub(crate) levels: Option<usize>,
    /// DOF ordering on every level (original, 2lv, hie, cm, xyz, stoch): the hole
    /// problem's rows, --physics's nodes.
    #[arg(long, default_value = "original")]
    pub(crate) ordering: String,
    #[arg(long)]
    pub(crate) json: bool,
}

/// `--partitioner`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PartitionerArg {
    /// METIS k-way on the dual graph.
    Metis,
    /// Equal runs of cells along a Morton curve.
    Curve,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProblemArg {
    /// −Δu = Π sin(π xₐ) on the unit square/cube, u = 0 on the boundary.
    Poisson,
    /// −Δu = 1 on a rectangle (box) with a circular (spherical) hole, u = 0
    /// outside, u = 1 on the hole: the multigrid benchmark.
    Hole,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum SolverArg {
    Cg,
    Bicgstab,
    Mg,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum PrecondArg {
    None,
    Jacobi,
    Ssor,
    Spai,
    Sainv,
    Mg,
    Amg,
    Chebyshev,
    Pmg,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum SmootherArg {
    Jacobi,
    Spai,
    Sainv,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum CycleArg {
    V,
    W,
    F,
}

impl From<CycleArg> for fem::host::solver::multigrid::Cycle {
    fn from(c: CycleArg) -> Self {
        match c {
            CycleArg::V => Self::V,
            CycleArg::W => Self::W,
            CycleArg::F => Self::F,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum FormatArg {
    /// The format the model prices cheapest over the expected products.
    Auto,
    Csr,
    Ell,
    LazyEll,
    Lma,
    /// The operator applied without a matrix: the Q_p Poisson kernels, or
    /// with --physics on hexahedra the tangent's linearisation recomputed
    /// at the points by every product.
    MatrixFree,
    /// The tangent partially assembled: point data, sum factorisation
    /// (--physics on quadrilaterals and hexahedra).
    Partial,
    /// ELLR-T (--physics only).
    Ellt,
    /// ELL-WARP, one lane per row (--physics only).
    K1,
    /// ELL-WARP, long rows over several lanes (--physics only).
    K2,
    /// cuSPARSE's CSR (--physics on the GPU only).
    Cusparse,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ScatterArg {
    Atomic,
    Colour,
    Spmv,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum LocalArg {
    Reuse,
    Redundant,
}

pub(crate) fn solve(a: &SolveArgs) -> CliResult {
    if a.mesh.is_none() && crate::launched_ranks() > 1 {
        return Err("across ranks, `fem solve` takes a Gmsh file: --mesh FILE --physics ...".into());
    }
    if a.problem == ProblemArg::Hole {
        return solve_hole(a);
    }
    let start = std::time::Instant::now();
    use fem::host::operator::elements::LocalVariant;
    use fem::host::operator::gpu::Scatter;
    use fem::host::problem::poisson::{Format, PoissonOptions};
    let degree = a.degree as usize;
    let mut regions = None;
    let (mut opts, dim, cells) = match &a.mesh {
        Some(path) => {
            let file = fem::host::io::gmsh::read_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let dirichlet_values = a.dirichlet_group.iter().any(|(_, v)| v.iter().any(|x| x.as_constant() != Some(0.0)));
            if a.physics.is_some() || file.is_simplex() || !a.neumann_group.is_empty() || !a.robin_group.is_empty() || dirichlet_values {
                return cli::mesh_solve::solve(a, &file);
            }
            if crate::launched_ranks() > 1 {
                return Err("across ranks, `fem solve --mesh` runs the pipeline: name --physics".into());
            }
            let (mesh, nodes) = file.to_mesh_and_nodes()?;
            let (dim, n) = (mesh.dim, mesh.n_cells());
            let cells = (n as f64).powf(1.0 / dim as f64).round().max(1.0) as usize;
            let mut o = PoissonOptions::on(fem::host::problem::poisson::MeshSource::Given(std::sync::Arc::new(mesh)), degree);
            if !a.dirichlet_group.is_empty() {
                let groups: Vec<String> = a.dirichlet_group.iter().map(|(g, _)| g.clone()).collect();
                o.dirichlet_facets = Some(std::sync::Arc::new(file.group_facets(&groups, &nodes)?));
            }
            if !a.kappa.is_empty() {
                o.kappa = Some(file.region_values(&a.kappa, 1.0)?.into());
            }
            regions = Some(file.cell_regions());
            (o, dim, cells)
        }
        None => {
            let dim = a.dim as usize;
            let cells = a.cells.unwrap_or_else(|| fem::solve::cells_for_dofs(dim, degree, a.dofs));
            (PoissonOptions::new(fem::solve::mesh(dim, cells, a.unstructured, 1), degree), dim, cells)
        }
    };
    refuse_unread(FORMATS, "the Q_p Poisson formats; they are the pipeline's (--physics) or the hole benchmark's")?;
    opts.dirichlet = a.dirichlet.parse()?;
    let format = a.format.unwrap_or(FormatArg::Csr);
    // options of one format or one backend
    if given("symmetric") && !matches!(format, FormatArg::Lma | FormatArg::Auto) {
        return Err("--symmetric packs the element matrices of --format lma (or of lma chosen by auto)".into());
    }
    if given("products") && !matches!(format, FormatArg::Auto) {
        return Err("--products weighs the choice of --format auto".into());
    }
    if given("threads_per_row") && !matches!(format, FormatArg::Csr | FormatArg::Auto) {
        return Err("--threads-per-row sets the GPU's CSR product (--format csr, or csr chosen by auto)".into());
    }
    opts.format = match format {
        FormatArg::Csr | FormatArg::Auto => Format::Csr,
        FormatArg::Ell => Format::Ell,
        FormatArg::LazyEll => Format::LazyEll,
        FormatArg::Lma => Format::Lma,
        FormatArg::MatrixFree => Format::MatrixFree,
        FormatArg::Ellt | FormatArg::K1 | FormatArg::K2 | FormatArg::Cusparse | FormatArg::Partial => {
            return Err("--format ellt, k1, k2, cusparse and partial store the tangent of --physics; the Q_p Poisson formats are auto, csr, ell, lazy-ell, lma and matrix-free".into())
        }
    };
    opts.symmetric = a.symmetric;
    opts.scatter = match a.scatter {
        ScatterArg::Atomic => Scatter::Atomic,
        ScatterArg::Colour => Scatter::Colour,
        ScatterArg::Spmv => return Err("--scatter spmv sums the element values of --physics; the Q_p Poisson formats scatter by atomic or colour".into()),
    };
    opts.variant = match a.local {
        LocalArg::Reuse => LocalVariant::Reuse,
        LocalArg::Redundant => LocalVariant::Redundant,
    };
    opts.threads_per_row = a.threads_per_row;
    opts.benchmark = a.bench;
    opts.cg.rtol = a.rtol.unwrap_or(1e-10);
    opts.cg.max_iterations = a.max_iterations;
    opts.cg.jacobi = !a.no_jacobi;
    let f32 = matches!(a.precision, Precision::F32);
    if !(a.products >= 1.0 && a.products.is_finite()) {
        return Err("--products must be at least 1".into());
    }
    let numbering = |format: Format| -> Result<_, String> {
        match &a.numbering {
            Some(n) => n.parse(),
            None => Ok(format.default_numbering()),
        }
    };
    let what = format!("{cells}^{dim} cells of degree {degree}");
    let spinner = spinner(a.json, what.clone());
    let show = |stage: &str| spinner.set_message(format!("{what}: {stage}"));
    let clock = fem::host::stages::StageClock::new(&show);
    // A given format fixes the numbering: the mesh and the DOFs are made
    // while the backend starts (the GPU's context takes 0.3 s); `auto`
    // measures the backend first.
    let given_format = !matches!(format, FormatArg::Auto);
    if given_format {
        opts.numbering = numbering(opts.format)?;
    }
    // ... except a problem whose storage on the GPU passes EARLY_CHECK:
    // it waits for the GPU, so that one that cannot fit is refused before
    // its mesh is made, not after a minute of host work
    let value_bytes = if f32 { 4 } else { 8 };
    let early = given_format && memory::device_bytes_at_least(&opts, value_bytes).is_some_and(|b| b > EARLY_CHECK);
    let discretise = || fem::host::problem::poisson::discretise(&opts, &|stage| clock.start(stage));
    let (opened, ready) = std::thread::scope(|s| {
        let opener = s.spawn(|| fem::open_backend_on(backend_choice(a.backend), 0).map_err(|e| e.to_string()));
        if early {
            clock.start("backend start");
            let opened = opener.join();
            let fits = match &opened {
                Ok(Ok((AnyBackend::Cuda(g), _))) => memory::ensure_fits(g, &opts, value_bytes),
                _ => Ok(()),
            };
            return (opened, fits.and_then(|_| discretise()).map(Some));
        }
        let ready = given_format.then(discretise).transpose();
        clock.start("backend start");
        (opener.join(), ready)
    });
    let (any, why_not_gpu) = opened.map_err(|_| "the backend failed to start")??;
    spinner.suspend(|| announce(&any, why_not_gpu.as_deref(), a.json));
    let ready = ready?;
    // the CPU backend sums the element values on the host, computes each
    // element matrix by one contraction per cell and runs its CSR product
    // one row per thread: none of these choices exists there
    refuse_on_cpu(&any, &[("scatter", "chooses how the GPU's element kernels write"), ("threads_per_row", "sets the GPU's CSR product"), ("local", "chooses the GPU's local assembly (per-point data reused or recomputed per entry)")])?;
    let choice = match format {
        FormatArg::Auto => {
            clock.start("format choice");
            let m = fem::host::sparse::model::Machine::measure(&any)?;
            let c = fem::host::problem::poisson::choose_format(dim, degree, cells, if f32 { 4 } else { 8 }, &m, a.products)?;
            opts.format = c.storage.parse()?;
            if !a.json {
                spinner.suspend(|| eprintln!("format: {} (auto, over {} products)", c.storage, a.products));
            }
            opts.numbering = numbering(opts.format)?;
            Some(c)
        }
        _ => None,
    };
    // GPU CSR threads per row: explicit, else tuned (by --bench) earlier, else the default.
    let gpu_csr = matches!(any, AnyBackend::Cuda(_)) && opts.format == Format::Csr && a.threads_per_row.is_none();
    let key = fem::host::problem::poisson::csr_signature(dim, degree, cells, if f32 { "f32" } else { "f64" });
    let mut tuning = gpu_csr.then(|| fem::host::tune::Tuning::open(&any.name()));
    if let (Some(t), false) = (&tuning, a.bench) {
        opts.threads_per_row = t.get::<usize>(&key);
    }
    let mut report = fem::solve::run_with(&any, &opts, f32, &clock, ready)?;
    spinner.finish_and_clear();
    let output = std::time::Instant::now();
    // The benchmark keeps what it found where there is a tuning file to
    // keep it in (none with FEM_TUNING=off, or without a home folder).
    if let (Some(tuning), true, Some(t)) = (tuning.as_mut().filter(|t| t.path.is_some()), a.bench, report.threads_per_row) {
        tuning.file.insert(&key, &t, 0.0, 0.0, fem::host::operator::gpu::THREADS_PER_ROW.len(), 0);
        save_tuning(tuning, a.json)?;
    }
    if let Some(path) = &a.vtk {
        write_solution_vtk(path, &opts, &report, regions.as_deref(), a.vtk_ascii)?;
    }
    if let Some(path) = &a.png {
        fem::picture::nodal_png(path, &format!("u_h, Q{degree}"), "u", &report.field.space, &report.field.dofs).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    use fem::host::stages::StageSeconds;
    report.stages.push(StageSeconds::ended("output", output.elapsed().as_secs_f64()));
    let wall = start.elapsed().as_secs_f64();
    if a.json {
        let mut v = serde_json::to_value(&report)?;
        v["choice"] = serde_json::to_value(&choice)?;
        v["wall_seconds"] = serde_json::to_value(wall)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{}\nwall {wall:.3} s; {}", fem::solve::describe(&report), fem::host::stages::describe(&report.stages));
    }
    Ok(report.cg.converged)
}

pub(crate) fn solve_hole(a: &SolveArgs) -> CliResult {
    use fem::host::problem::hole::{HoleOptions, Precond, Solver};
    use fem::host::solver::multigrid::Smoother;
    refuse_unread(HOLE, "the hole benchmark")?;
    let (dim, degree) = (a.dim as usize, a.degree as usize);
    if degree > 2 {
        return Err("the hole benchmark uses Q1 or Q2 (--degree 1 or 2)".into());
    }
    let levels = a.levels.unwrap_or(match (dim, degree) {
        (2, 1) => 7,
        (2, _) => 6,
        (_, 1) => 4,
        _ => 3,
    });
    if !(1..=12).contains(&levels) {
        return Err(format!("--levels must be 1..=12, not {levels}").into());
    }
    let mut o = HoleOptions::new(dim, degree, levels);
    o.solver = match a.solver {
        SolverArg::Cg => Solver::Cg,
        SolverArg::Bicgstab => Solver::Bicgstab,
        SolverArg::Mg => Solver::Mg,
    };
    o.precond = match a.precond.unwrap_or(PrecondArg::Spai) {
        PrecondArg::None => Precond::None,
        PrecondArg::Jacobi => Precond::Jacobi,
        PrecondArg::Ssor => Precond::Ssor,
        PrecondArg::Spai => Precond::Spai,
        PrecondArg::Sainv => Precond::Sainv,
        PrecondArg::Mg => Precond::Mg,
        PrecondArg::Amg => Precond::Amg,
        PrecondArg::Chebyshev | PrecondArg::Pmg => return Err("--precond chebyshev and pmg precondition the pipeline's solve (--physics); the hole benchmark takes none, jacobi, ssor, spai, sainv, mg or amg".into()),
    };
    AmgArgs::refuse_unless(o.precond == Precond::Amg)?;
    o.amg = a.amg.options()?;
    o.smoother = match a.smoother {
        SmootherArg::Jacobi => Smoother::Jacobi,
        SmootherArg::Spai => Smoother::Spai,
        SmootherArg::Sainv => Smoother::Sainv,
    };
    o.cycle = a.cycle.unwrap_or(CycleArg::F).into();
    o.smoothing_steps = a.smoothing_steps;
    o.ordering = a.ordering.parse()?;
    // u_h and its space are kept only for the files that show them
    o.field = a.vtk.is_some() || a.png.is_some();
    o.rtol = a.rtol.unwrap_or(1e-8);
    o.max_iterations = a.max_iterations;
    o.precision = match a.precision {
        Precision::F32 => fem::host::problem::nonlinear::Precision::F32,
        Precision::F64 => fem::host::problem::nonlinear::Precision::F64,
    };
    let start = std::time::Instant::now();
    let any = open_announced(a.backend, a.json)?;
    let what = format!("hole benchmark, {dim}D Q{degree}, {levels} levels");
    let spinner = spinner(a.json, what.clone());
    let show = |stage: &str| spinner.set_message(format!("{what}: {stage}"));
    let clock = fem::host::stages::StageClock::new(&show);
    let mut report = fem::solve::run_hole_with(&any, &o, &clock)?;
    spinner.finish_and_clear();
    let output = std::time::Instant::now();
    let field = report.field.take();
    if let (Some(path), Some(field)) = (&a.vtk, &field) {
        field.write_vtk(path, "u", None, &[], if a.vtk_ascii { fem::host::io::vtk::Encoding::Ascii } else { fem::host::io::vtk::Encoding::Binary })?;
    }
    if let (Some(path), Some(field)) = (&a.png, &field) {
        fem::picture::nodal_png(path, "hole benchmark, u_h", "u", &field.space, &field.dofs).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    report.stages.push(fem::host::stages::StageSeconds::ended("output", output.elapsed().as_secs_f64()));
    let wall = start.elapsed().as_secs_f64();
    if a.json {
        let mut v = serde_json::to_value(&report)?;
        v["wall_seconds"] = serde_json::to_value(wall)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{}\nwall {wall:.3} s; {}", fem::solve::describe_hole(&report), fem::host::stages::describe(&report.stages));
    }
    Ok(report.converged)
}

/// u_h (Lagrange cells of its degree), and where the exact solution is
/// known the exact one and the error; per cell κ and the Gmsh region.
pub(crate) fn write_solution_vtk(path: &std::path::Path, opts: &fem::host::problem::poisson::PoissonOptions, r: &fem::host::problem::poisson::PoissonReport, regions: Option<&[i32]>, ascii: bool) -> Result<(), Box<dyn std::error::Error>> {
    use fem::host::io::vtk::{Encoding, Field};
    let exact = opts.exact_solution(r.dim);
    let kappa: &[f64] = opts.kappa.as_deref().unwrap_or_default();
    let region: Vec<f64> = regions.map(|g| g.iter().map(|&t| t as f64).collect()).unwrap_or_default();
    let mut cells = Vec::new();
    if !kappa.is_empty() {
        cells.push(Field { name: "kappa", values: kappa });
    }
    if !region.is_empty() {
        cells.push(Field { name: "region", values: &region });
    }
    r.field.write_vtk(path, "u", exact.as_ref().map(|e| &*e.0 as &dyn Fn([f64; 3]) -> f64), &cells, if ascii { Encoding::Ascii } else { Encoding::Binary })?;
    Ok(())
}

/// `GROUP=VALUE` with a group name or number and a finite value.
pub(crate) fn parse_group_value(s: &str) -> Result<(String, f64), String> {
    let (g, v) = s.split_once('=').ok_or_else(|| format!("`{s}`: expected GROUP=VALUE"))?;
    let v: f64 = v.parse().map_err(|_| format!("`{s}`: `{v}` is not a number"))?;
    if g.is_empty() || !v.is_finite() {
        return Err(format!("`{s}`: a group name or number and a finite value"));
    }
    Ok((g.to_string(), v))
}

/// A region's κ: positive.
pub(crate) fn parse_region_value(s: &str) -> Result<(String, f64), String> {
    let (g, v) = parse_group_value(s)?;
    if v > 0.0 { Ok((g, v)) } else { Err(format!("`{s}`: κ must be positive")) }
}
