//! The `fem` command line.
//!
//! Exit codes: 0 success, 1 error (message on stderr) or failed check,
//! 2 usage error.

use clap::{Parser, Subcommand, ValueEnum};
use fem::host::operator::tensor::gpu::Column;
use fem::host::operator::tensor::tuning::{BpLaunch, UserLaunch};
use fem::host::{with_backend, AnyBackend, BackendChoice};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;

mod cli {
    pub mod mesh_solve;
}
use cli::mesh_solve::{KrylovArg, LoadArg, PhysicsArg, SchemeArg};

#[derive(Parser)]
#[command(name = "fem", version, about = "Finite-element computation on NVIDIA GPUs, with a CPU backend")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Solve a finite-element problem and report error, iterations and timings.
    ///
    /// Examples:
    ///   fem solve --dim 2 --degree 3 --cells 64
    ///   fem solve --dim 3 --degree 2 --dofs 4000000 --format lma --scatter colour --backend cuda --json
    ///   fem solve --format matrix-free --precision f32 --unstructured --cells 32
    ///   fem solve --dim 3 --degree 2 --format auto --products 2000 --backend cuda
    ///   fem solve --mesh part.msh --degree 3 --dirichlet-group outer --kappa core=20 --vtk u.vtu
    ///   fem solve --problem hole --dim 2 --degree 2 --vtk hole.vtu
    Solve(Box<SolveArgs>),
    /// Multiply a sparse matrix by a vector in every SpMV format (ELL-WARP
    /// K1/K2 and variants, ELLR-T, ELLPACK, CSR, cuSPARSE), side by side.
    ///
    /// Examples:
    ///   fem spmv --matrix heart.mtx --format k1
    ///   fem spmv --generate fem:dim=3,degree=2,rows=1000000 --format all --backend cuda --json
    ///   fem spmv --generate powerlaw:rows=1000000,max=4700 --format auto --tune
    Spmv(Box<SpmvArgs>),
    /// Apply a high-order tensor-product operator (CEED BP1.0 mass, BP3.5
    /// collocated or BP3.0 quadrature screened Poisson) on hexahedra and
    /// report throughput against the copy roofline and the CPU reference.
    ///
    /// Examples:
    ///   fem bp --problem bp3.5 --degree 7 --elements 4096
    ///   fem bp --problem bp1 --degree 1-15 --dofs 10000000 --backend cuda --json
    ///   fem bp --problem bp3.0 --degree 4 --elements 512 --deform curved --solve 1e-8 --vtk bp.vtu
    Bp(Box<BpArgs>),
    /// Evaluate the residual of a shipped pointwise physics (`#[fem_kernel]`)
    /// on a perturbed, shuffled simplex (or quad/hex) mesh of the unit
    /// square/cube by thread transposition, and report GFLOP/s by the
    /// paper's count, the bytes moved against the copy roofline and the
    /// difference to the CPU backend.
    ///
    /// Examples:
    ///   fem residual --problem poisson --dim 2 --cells 1000000 --backend cuda
    ///   fem residual --problem elasticity --dim 3 --degree 2 --blocks 4 --batches 8 --precision f32 --json
    ///   fem residual --problem poisson --dim 3 --cells 1000000 --tune
    Residual(Box<ResidualArgs>),
    /// Simulate cardiac electrophysiology: the Aliev–Panfilov monodomain
    /// model (Wong, Kuhl & Darve §2) on P1 tetrahedra with one-point
    /// integration, backward Euler, global Newton on the potential with the
    /// recovery variable solved locally at the integration points, Jacobi-PCG,
    /// assembly by ELL-WARP (or cuSPARSE) SpMV or atomics. Prints Newton and
    /// CG iterations and the time split per step; writes a ParaView series.
    /// Lengths in mm, time in model units (≈ 12.9 ms), potential 0 (rest) to 1.
    ///
    /// Examples:
    ///   fem cardiac --mesh generated:30000 --dt 0.1 --steps 200 --vtk out/heart.pvd --vtk-every 10
    ///   fem cardiac --mesh generated:300000 --steps 50 --backend cuda --assembly atomic --json
    ///   fem cardiac --mesh heart.msh --fibre 0,0,1 --stimulus 0,0,-30,5,0,1,1 --spmv cusparse
    Cardiac(Box<CardiacArgs>),
    /// Tune an operation on this device: time the candidate kernels and
    /// launch parameters the model does not rule out, print the winner and
    /// its margin over the default, and keep it in the device's tuning file
    /// ($FEM_TUNING_DIR, else ~/.cache/fem), which later runs read by
    /// themselves. Parameters given explicitly are not varied and always win.
    ///
    /// Examples:
    ///   fem tune spmv --generate fem:dim=3,degree=4,rows=150000 --format k2r
    ///   fem tune spmv --matrix heart.mtx --format auto --products 200
    ///   fem tune bp --problem bp3.5 --degree 1-8 --dofs 10000000
    Tune {
        #[command(subcommand)]
        operation: TuneOp,
    },
    /// Run a named benchmark suite and write <suite>.json, <suite>.md and PNG
    /// charts (throughput against degree per format or problem; a roofline
    /// chart of measured points under the copy bandwidth) into --out.
    ///
    /// Suites: spmv (every format on the Q_p stiffness matrices, and the
    /// model's a-priori format against the measured best), bp (BP1.0, BP3.5,
    /// BP3.0 against degree), assembly (elements assembled per second per
    /// format), solve (CG iterations per second per format), residual.
    ///
    /// Examples:
    ///   fem bench spmv --backend cuda --out results
    ///   fem bench bp --degrees 1-8 --size 10000000
    ///   fem bench solve --backend cpu --size 50000 --degrees 1,2
    Bench {
        /// spmv, bp, assembly, solve or residual.
        suite: String,
        /// Rows of each matrix (spmv) or DOFs of each problem (default by backend).
        #[arg(long)]
        size: Option<usize>,
        /// Degrees to run: N, N,M,... or N-M (default per suite).
        #[arg(long)]
        degrees: Option<String>,
        #[arg(long, value_enum, default_value_t = Precision::F64)]
        precision: Precision,
        #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
        backend: BackendArg,
        /// Timed repetitions per measurement (the median is reported).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        repeats: u32,
        /// Folder for the JSON, Markdown and PNG files.
        #[arg(long, default_value = "bench-results")]
        out: PathBuf,
        /// Print the report as JSON too.
        #[arg(long)]
        json: bool,
    },
    /// Print the row statistics of a matrix (Wong et al., Table 2 columns).
    ///
    /// Examples:
    ///   fem matrix-stats heart.mtx
    ///   fem matrix-stats --generate powerlaw:rows=100000 --json
    MatrixStats {
        /// Matrix Market file.
        file: Option<PathBuf>,
        /// A generated matrix instead of a file (see `fem spmv --help`).
        #[arg(long)]
        generate: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Write a generated box mesh of the unit square or cube as a Gmsh file
    /// (format 4.1, quadrilaterals or hexahedra).
    ///
    /// Examples:
    ///   fem mesh-gen --dim 2 --cells 32 square.msh
    ///   fem mesh-gen --dim 3 --cells 8 --unstructured --binary cube.msh
    MeshGen {
        output: PathBuf,
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=3))]
        dim: u32,
        #[arg(long, default_value_t = 8)]
        cells: usize,
        /// Perturbed interior vertices, shuffled numbering and orientation.
        #[arg(long)]
        unstructured: bool,
        /// Binary instead of ASCII.
        #[arg(long)]
        binary: bool,
        /// MSH format version.
        #[arg(long, value_enum, default_value_t = MshVersion::V41)]
        format: MshVersion,
        /// Triangles or tetrahedra (each box cell split) instead of
        /// quadrilaterals or hexahedra.
        #[arg(long)]
        simplex: bool,
    },
    /// Describe a Gmsh mesh file: format, nodes, elements per type,
    /// physical groups, bounding box and cell quality (scaled Jacobian).
    ///
    /// Examples:
    ///   fem mesh-info part.msh
    ///   fem mesh-info part.msh --json
    MeshInfo {
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write a generated matrix as a Matrix Market file.
    ///
    /// Examples:
    ///   fem matrix-gen fem:dim=2,degree=3,rows=100000 q3.mtx
    ///   fem matrix-gen powerlaw:rows=10000,alpha=2.2 web.mtx
    MatrixGen {
        /// fem:dim=D,degree=P,rows=N,components=C,unstructured=0|1 or powerlaw:rows=N,xmin=X,alpha=A,max=M,seed=S
        spec: String,
        output: PathBuf,
        /// Store the lower triangle only (`symmetric`), when the matrix is symmetric.
        #[arg(long)]
        symmetric: bool,
    },
    /// Assemble a Q_p Poisson matrix on the GPU by SpMV (race-free) and by
    /// atomic scatter, and compare.
    ///
    /// Examples:
    ///   fem spmv-assembly --dim 2 --degree 2 --rows 4000000 --json
    SpmvAssembly {
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=3))]
        dim: u32,
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=4))]
        degree: u32,
        #[arg(long, default_value_t = 1_000_000)]
        rows: usize,
        /// K2 threshold (K1 when absent).
        #[arg(long)]
        threshold: Option<usize>,
        #[arg(long, value_enum, default_value_t = Precision::F64)]
        precision: Precision,
        #[arg(long, default_value_t = 20)]
        repeats: usize,
        #[arg(long)]
        json: bool,
    },
    /// Show the backends available, the GPU and the embedded PTX targets.
    ///
    /// Examples:
    ///   fem info
    ///   fem info --json
    Info {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The first run: a nonlinear finite-element solve from a Gmsh file to
    /// pictures. The minimal surface equation (a #[fem_kernel] physics) on
    /// P2 triangles of the disk fem ships, with Scherk's surface as
    /// boundary data and exact solution; Newton on the GPU when there is
    /// one, else on the CPU; writes minimal-surface.vtu and .png.
    ///
    /// Examples:
    ///   fem demo                       # GPU if present, else CPU
    ///   fem demo --backend cpu --refine 2 --out results
    ///   fem demo --mesh my-disk.msh --json
    ///   fem demo kernels               # the vector kernels against the copy roofline
    Demo(Box<DemoArgs>),
}

#[derive(Subcommand)]
enum TuneOp {
    /// SpMV formats' parameters (and with --format auto the format), as `fem spmv --tune`.
    Spmv(Box<SpmvArgs>),
    /// The BP operators' launch (thread structure, elements per block), as `fem bp --tune`.
    Bp(Box<BpArgs>),
}

#[derive(clap::Args)]
struct SolveArgs {
    /// The problem: −Δu = Π sin(π xₐ) on the unit square/cube, u = 0 on the boundary.
    #[arg(long, value_enum, default_value_t = ProblemArg::Poisson)]
    problem: ProblemArg,
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=3))]
    dim: u32,
    /// Polynomial degree p of the Q_p elements (2D: 1..=6, 3D: 1..=4).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=8))]
    degree: u32,
    /// Cells per direction (default: about --dofs DOFs).
    #[arg(long)]
    cells: Option<usize>,
    /// Solve on the cells of a Gmsh file (MSH 2.2, 4.0 or 4.1, ASCII or
    /// binary) instead of a generated box. Triangles and tetrahedra, and
    /// any mesh with --physics, go through the general pipeline;
    /// quadrilaterals and hexahedra without --physics through the Q_p
    /// Poisson formats (the sine load then assumes the unit square or cube).
    #[arg(long, conflicts_with_all = ["cells", "unstructured"])]
    mesh: Option<PathBuf>,
    /// With --mesh: the physics, solved by Newton and a Jacobi-preconditioned
    /// Krylov method (--krylov) on the chosen backend, on triangles, quadrilaterals, tetrahedra or
    /// hexahedra of any degree the physics has kernels for.
    #[arg(long, value_enum, requires = "mesh")]
    physics: Option<PhysicsArg>,
    /// With --mesh: Neumann conditions, GROUP=VALUE (a flux ∂u/∂n; for
    /// elasticity a traction VALUE·n) or GROUP=tx:ty[:tz] (a traction
    /// vector), comma-separated. Without --dirichlet-group, u = 0 holds on
    /// the rest of the boundary.
    #[arg(long, requires = "mesh", value_delimiter = ',', value_parser = cli::mesh_solve::parse_neumann)]
    neumann_group: Vec<(String, Vec<f64>)>,
    /// With --physics radiation: cooling groups, GROUP=g (∂u/∂n + u + u|u|³ = g
    /// there), comma-separated. Without --dirichlet-group, u = 0 holds on
    /// the rest of the boundary.
    #[arg(long, requires = "mesh", value_delimiter = ',', value_parser = cli::mesh_solve::parse_neumann)]
    robin_group: Vec<(String, Vec<f64>)>,
    /// With --mesh through the pipeline: the volume load (random excites
    /// every mode: use it, not sine, to time solvers).
    #[arg(long, value_enum, default_value_t = LoadArg::Sine)]
    load: LoadArg,
    /// With --physics: the Krylov method of Newton's updates (preconditioned by --precond).
    #[arg(long, value_enum, default_value_t = KrylovArg::Cg)]
    krylov: KrylovArg,
    /// With --mesh: refine the file's mesh uniformly this many times and
    /// solve on the finest; --precond mg uses every level.
    #[arg(long, default_value_t = 0, requires = "mesh")]
    refine: usize,
    /// --krylov gmres: basis vectors kept before a restart.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    restart: u32,
    /// With --physics: time steps of M u̇ + R(u) = 0 from u = 0 (for
    /// Poisson the heat equation u̇ − Δu = f) instead of the stationary
    /// solve; with --vtk OUT.pvd every --vtk-every-th step is written.
    #[arg(long, default_value_t = 0, requires = "physics")]
    time_steps: usize,
    /// With --time-steps: the time step.
    #[arg(long, default_value_t = 0.01)]
    dt: f64,
    /// With --time-steps: the scheme.
    #[arg(long, value_enum, default_value_t = SchemeArg::Bdf2)]
    scheme: SchemeArg,
    /// With --time-steps and --vtk OUT.pvd: write every this many steps.
    #[arg(long, default_value_t = 1)]
    vtk_every: usize,
    /// Elasticity: Young's modulus.
    #[arg(long, default_value_t = 1.0)]
    young: f64,
    /// Elasticity: Poisson's ratio.
    #[arg(long, default_value_t = 0.3)]
    poisson_ratio: f64,
    /// With --mesh: u = 0 only on these boundary physical groups (names or
    /// numbers, comma-separated), natural conditions elsewhere; the L2 error
    /// is then not reported (no exact solution).
    #[arg(long, requires = "mesh", value_delimiter = ',')]
    dirichlet_group: Vec<String>,
    /// With --mesh: material regions, κ per cell physical group as
    /// GROUP=VALUE pairs (names or numbers, comma-separated; other cells
    /// κ = 1), solving −∇·(κ∇u) = f. The L2 error is then not reported.
    #[arg(long, requires = "mesh", value_delimiter = ',', value_parser = parse_region_value)]
    kappa: Vec<(String, f64)>,
    /// Target number of DOFs when --cells is not given.
    #[arg(long, default_value_t = 1_000_000)]
    dofs: usize,
    /// Perturbed, shuffled, randomly oriented cells instead of a structured grid.
    #[arg(long)]
    unstructured: bool,
    /// Storage of the operator. The Q_p Poisson path (default csr) takes
    /// auto, csr, ell, lazy-ell, lma and matrix-free; --physics (default
    /// auto: element matrices where their product reads fewer bytes and
    /// the preconditioner is Jacobi, else the backend's sparse format)
    /// takes auto, csr, ell, ellt, k1, k2, cusparse and lma.
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Packed symmetric storage of the element matrices (LMA).
    #[arg(long)]
    symmetric: bool,
    /// How GPU element kernels avoid write races.
    #[arg(long, value_enum, default_value_t = ScatterArg::Atomic)]
    scatter: ScatterArg,
    /// GPU CSR: threads per row (1, 2, 4, 8, 16 or 32; default from the row lengths).
    #[arg(long)]
    threads_per_row: Option<usize>,
    /// Local assembly: per-point data reused, or recomputed per entry.
    #[arg(long, value_enum, default_value_t = LocalArg::Reuse)]
    local: LocalArg,
    /// DOF numbering: original, aligned, blocked or blocked-aligned
    /// (default: aligned for LMA, original for the other formats).
    #[arg(long)]
    numbering: Option<String>,
    #[arg(long, default_value = "eliminate")]
    dirichlet: String,
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    precision: Precision,
    /// Relative residual at which the solver stops (default 1e-10; 1e-8 for the hole benchmark).
    #[arg(long)]
    rtol: Option<f64>,
    #[arg(long, default_value_t = 20_000)]
    max_iterations: usize,
    /// Unpreconditioned CG instead of Jacobi.
    #[arg(long)]
    no_jacobi: bool,
    /// Also time one SpMV against a copy of the same bytes on the same
    /// backend (GPU or CPU), CG starting from a random guess.
    #[arg(long)]
    bench: bool,
    /// Write u_h as a VTK file (ParaView's .vtu): on linear cells for
    /// p = 1, on Lagrange cells of order p above; with the exact solution
    /// and the error where it is known, κ and the Gmsh region per cell
    /// with --mesh; the hole problem writes u_h on its finest mesh.
    #[arg(long)]
    vtk: Option<PathBuf>,
    /// The VTK file in ASCII instead of base64-encoded binary.
    #[arg(long)]
    vtk_ascii: bool,
    /// A PNG picture of u_h (a 3D solution cut at mid z).
    #[arg(long)]
    png: Option<PathBuf>,
    /// --format auto: products the operator will serve (CG iterations).
    #[arg(long, default_value_t = 1000.0)]
    products: f64,
    /// Hole problem: the solver.
    #[arg(long, value_enum, default_value_t = SolverArg::Mg)]
    solver: SolverArg,
    /// The preconditioner. Hole problem (default spai; for --solver mg:
    /// the smoother); --physics: jacobi (default), ssor, or mg (multigrid
    /// by rediscretisation on the levels of --refine).
    #[arg(long, value_enum)]
    precond: Option<PrecondArg>,
    /// Hole problem: the smoother of a multigrid preconditioner.
    #[arg(long, value_enum, default_value_t = SmootherArg::Spai)]
    smoother: SmootherArg,
    /// The multigrid cycle (default f for the hole problem, v for --physics).
    #[arg(long, value_enum)]
    cycle: Option<CycleArg>,
    /// Multigrid's pre- and post-smoothing steps (hole problem: default 8
    /// in 2D, 16 in 3D; --physics: 2).
    #[arg(long)]
    smoothing_steps: Option<usize>,
    /// Hole problem: multigrid levels (default 7 in 2D Q1, 6 in 2D Q2, 4 in 3D Q1, 3 in 3D Q2: about 0.5M / 0.1M DOFs).
    #[arg(long)]
    levels: Option<usize>,
    /// Hole problem: DOF ordering on every level (original, 2lv, hie, cm, xyz, stoch).
    #[arg(long, default_value = "original")]
    ordering: String,
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct SpmvArgs {
    /// Matrix Market file (coordinate; real, integer or pattern; general or symmetric).
    #[arg(
        long,
        required_unless_present = "generate",
        conflicts_with = "generate"
    )]
    matrix: Option<PathBuf>,
    /// A generated matrix: fem:dim=D,degree=P,rows=N,components=C,unstructured=0|1
    /// or powerlaw:rows=N,xmin=X,alpha=A,max=M,seed=S.
    #[arg(long)]
    generate: Option<String>,
    /// csr, ell, ellt, k1, k1r, k1rs, k2, k2r, k2rs, cusparse; `all` side by
    /// side; `auto` runs them all and reports the fastest. Several may be
    /// given comma-separated.
    #[arg(long, default_value = "auto")]
    format: String,
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    precision: Precision,
    /// Threads per block of the ELL-WARP and ELLR-T kernels (32..=256 typical).
    #[arg(long)]
    block: Option<u32>,
    /// K2: entries per lane above which a row is split over more lanes.
    #[arg(long)]
    threshold: Option<usize>,
    /// ELLR-T: threads per row (1, 2, 4, 8, 16, 32).
    #[arg(long)]
    threads_per_row: Option<usize>,
    /// CSR: threads per row (1 scalar, up to 32 vector).
    #[arg(long)]
    csr_threads: Option<usize>,
    /// Search each format's parameters (block, threshold, threads) by
    /// measurement first, and keep the winners in the device's tuning file.
    #[arg(long)]
    tune: bool,
    /// Products the matrix will serve, over which `auto` pays back a conversion.
    #[arg(long, default_value_t = 1000.0)]
    products: f64,
    /// Tuning: time only candidates the model predicts within this factor of its best.
    #[arg(long, default_value_t = 1.5)]
    prune: f64,
    /// Timed products per format (the median is reported).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    repeats: u32,
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProblemArg {
    /// −Δu = Π sin(π xₐ) on the unit square/cube, u = 0 on the boundary.
    Poisson,
    /// −Δu = 1 on a rectangle (box) with a circular (spherical) hole, u = 0
    /// outside, u = 1 on the hole: the multigrid benchmark.
    Hole,
}

#[derive(Clone, Copy, ValueEnum)]
enum SolverArg {
    Cg,
    Bicgstab,
    Mg,
}

#[derive(Clone, Copy, ValueEnum)]
enum PrecondArg {
    None,
    Jacobi,
    Ssor,
    Spai,
    Sainv,
    Mg,
}

#[derive(Clone, Copy, ValueEnum)]
enum SmootherArg {
    Jacobi,
    Spai,
    Sainv,
}

#[derive(Clone, Copy, ValueEnum)]
enum CycleArg {
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
enum FormatArg {
    /// The format the model prices cheapest over the expected products.
    Auto,
    Csr,
    Ell,
    LazyEll,
    Lma,
    MatrixFree,
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
enum ScatterArg {
    Atomic,
    Colour,
}

#[derive(Clone, Copy, ValueEnum)]
enum LocalArg {
    Reuse,
    Redundant,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    Auto,
    Cpu,
    Cuda,
}

#[derive(Clone, Copy, ValueEnum)]
enum Precision {
    F32,
    F64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info { json } => info(json),
        Command::Demo(args) => match args.what {
            Some(DemoWhat::Kernels { backend, size, precision, repeats, json }) => demo_kernels(backend, size, precision, repeats as usize, json),
            None => demo(&args),
        },
        Command::Solve(args) => solve(&args),
        Command::Spmv(args) => spmv(&args),
        Command::Bp(args) => bp(&args),
        Command::Residual(args) => residual(&args),
        Command::Cardiac(args) => cardiac(&args),
        Command::Bench { suite, size, degrees, precision, backend, repeats, out, json } => bench(&suite, size, degrees.as_deref(), precision, backend, repeats as usize, &out, json),
        Command::Tune { operation: TuneOp::Spmv(mut args) } => {
            args.tune = true;
            spmv(&args)
        }
        Command::Tune { operation: TuneOp::Bp(mut args) } => {
            args.tune = true;
            bp(&args)
        }
        Command::MatrixStats { file, generate, json } => matrix_stats(file, generate, json),
        Command::MatrixGen { spec, output, symmetric } => matrix_gen(&spec, &output, symmetric),
        Command::MeshGen { output, dim, cells, unstructured, binary, format, simplex } => mesh_gen(&output, dim as usize, cells, unstructured, binary, format, simplex),
        Command::MeshInfo { file, json } => mesh_info(&file, json),
        Command::SpmvAssembly { dim, degree, rows, threshold, precision, repeats, json } => {
            spmv_assembly(dim as usize, degree as usize, rows, threshold, precision, repeats, json)
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
struct DemoArgs {
    #[command(subcommand)]
    what: Option<DemoWhat>,
    /// Where to run: the GPU when usable (auto), or a named backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Uniform refinements of the mesh (default: 5 on the GPU, 3 on the CPU).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=9))]
    refine: Option<u32>,
    /// Polynomial degree.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=2))]
    degree: u32,
    /// A 2D triangle mesh (.msh) inside |x|, |y| < 1.5 instead of the shipped disk.
    #[arg(long)]
    mesh: Option<PathBuf>,
    /// Folder for minimal-surface.vtu and .png (made if missing).
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum DemoWhat {
    /// Run the vector kernels (copy, axpy, axpby, dot, norm), check them
    /// against the CPU backend and report bandwidth against the copy roofline.
    ///
    /// Examples:
    ///   fem demo kernels                       # GPU if present, else CPU
    ///   fem demo kernels --backend cpu --size 1000000
    ///   fem demo kernels --backend cuda --precision f32 --json
    Kernels {
        /// Where to run: the GPU when usable (auto), or a named backend.
        #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
        backend: BackendArg,
        /// Vector length (default: 2^26 on the GPU, 2^23 on the CPU).
        #[arg(long)]
        size: Option<usize>,
        #[arg(long, value_enum, default_value_t = Precision::F64)]
        precision: Precision,
        /// Timed repetitions per operation (the median is reported).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        repeats: u32,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Args)]
struct BpArgs {
    /// bp1 (mass, GL quadrature), bp3.5 (screened Poisson, GLL collocation), bp3.0 (screened Poisson, GL quadrature).
    #[arg(long, default_value = "bp3.5")]
    problem: String,
    /// Polynomial degree N (1..=15); a list `1,3,5` or a range `1-15` runs each (JSON lines).
    #[arg(long, default_value = "7")]
    degree: String,
    /// Number of elements (factored into a near-cubic grid of the unit cube).
    #[arg(long, conflicts_with = "dofs")]
    elements: Option<usize>,
    /// At least this many element DOFs (elements × (N + 1)³) instead.
    #[arg(long)]
    dofs: Option<usize>,
    /// Mesh: affine boxes, trilinear elements (interior vertices moved) or curved elements.
    #[arg(long, value_enum, default_value_t = DeformArg::Trilinear)]
    deform: DeformArg,
    /// Screening parameter λ of BP3.
    #[arg(long, default_value_t = 1.0)]
    lambda: f64,
    /// BP3.5 with one thread per node (N ≤ 7) instead of one per (i, j) column (lines or slices).
    #[arg(long)]
    threads_3d: bool,
    /// Elements per thread block (default: enough to fill 256 threads).
    #[arg(long)]
    elements_per_block: Option<usize>,
    /// Registers budgeted for at least this many resident warps per SM (0: the compiler's choice, the default)
    #[arg(long)]
    min_warps: Option<usize>,
    /// Where BP3.5's line kernel (N ≤ 8) keeps a thread's column (default: where more warps reside).
    #[arg(long, value_enum)]
    column: Option<ColumnArg>,
    /// BP3.5's line kernel at N = 7, 8: the geometric factors through a shared ring this many slices ahead (2, 3, 4; 0: through registers; default: 2 at N = 8).
    #[arg(long)]
    ring: Option<usize>,
    /// Apply on global nodes (gather and atomic scatter in the kernel) instead of element blocks.
    #[arg(long)]
    assembled: bool,
    /// Also time the CPU backend on the same operator (speed-up in the report).
    #[arg(long)]
    cpu_time: bool,
    /// Solve the screened Poisson problem with Jacobi-CG to this relative residual.
    #[arg(long)]
    solve: Option<f64>,
    /// With --solve and one degree: write u_h, the exact solution and the
    /// error as a VTK file (.vtu) of Lagrange hexahedra of order N.
    #[arg(long, requires = "solve")]
    vtk: Option<PathBuf>,
    /// Time every launch (thread structure, elements per block) first and
    /// keep the fastest in the device's tuning file.
    #[arg(long)]
    tune: bool,
    /// GPU timing: cold (the operator and the copy cycle through copies of
    /// their data so each application reads DRAM, the paper's roofline) or
    /// warm (the same data every time, which may sit in L2).
    #[arg(long, value_enum, default_value_t = L2Arg::Cold)]
    l2: L2Arg,
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Timed applications (the median is reported).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    repeats: u32,
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum ColumnArg {
    Registers,
    Shared,
}

#[derive(Clone, Copy, ValueEnum)]
enum L2Arg {
    Cold,
    Warm,
}

#[derive(Clone, Copy, ValueEnum)]
enum DeformArg {
    None,
    Trilinear,
    Curved,
}

/// `7`, `1,3,5` or `1-15`.
fn parse_degrees(s: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("bad degree list `{s}` (expected N, N,M,... or N-M)");
    if let Some((a, b)) = s.split_once('-') {
        let (a, b): (usize, usize) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
        return if a <= b { Ok((a..=b).collect()) } else { Err(bad()) };
    }
    s.split(',').map(|d| d.trim().parse().map_err(|_| bad())).collect()
}

fn bp(a: &BpArgs) -> CliResult {
    use fem::bp::{BpOptions, Size};
    use fem::host::mesh::spectral::Deformation;
    let problem: fem::host::operator::tensor::Problem = a.problem.parse()?;
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
    if a.vtk.is_some() && degrees.len() > 1 {
        return Err("--vtk writes one solution: give one --degree".into());
    }
    let any = open_announced(a.backend, a.json)?;
    let mut tuning = fem::host::tune::Tuning::open(&any.name());
    let bar = progress_bar(a.json, String::new());
    for &degree in &degrees {
        let o = BpOptions {
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
            },
            repeats: a.repeats as usize,
            assembled: a.assembled,
            cpu_time: a.cpu_time,
            solve: a.solve,
            tune: a.tune,
            l2: match a.l2 {
                L2Arg::Cold => fem::bp::L2::Cold,
                L2Arg::Warm => fem::bp::L2::Warm,
            },
        };
        let r = fem::bp::run(&o, &any, &mut tuning, &|m, step| follow(&bar, &format!("N = {degree}: {m}"), step))?;
        if let (Some(path), Some(s)) = (&a.vtk, &r.solve) {
            fem::bp::write_vtk(&o, s, path, fem::host::io::vtk::Encoding::Binary)?;
        }
        bar.suspend(|| -> Result<(), Box<dyn std::error::Error>> {
            if a.json && degrees.len() > 1 {
                println!("{}", serde_json::to_string(&r)?);
                return Ok(());
            }
            print_report(a.json, &r, |r| {
                let mut t = format!(
                    "{} N={} elements={} dofs={} ({}): {:.3e} s/apply, {:.2} GDOF/s, {:.3} TFLOP/s, {:.0} GB/s = {:.3} of copy ({:.0} GB/s), error vs CPU {:.1e}",
                    r.problem.name(), r.degree, r.elements, r.dofs, r.kernel, r.seconds_per_apply, r.gdofs_per_second, r.tflops,
                    r.gbytes_per_second, r.roofline_fraction, r.copy_gbytes_per_second, r.max_rel_error_vs_cpu
                );
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
                        format!("{} threads, {} elements per block, register budget {}{column}", if b.threads_3d { "3D" } else { "2D" }, b.elements_per_block, if b.min_warps > 0 { format!("{} warps", b.min_warps) } else { "free".into() })
                    };
                    t += &format!("\ntuned launch: {} at {:.2} µs, {:.2}× the default {} at {:.2} µs ({} timed)", l(&o.best), o.seconds * 1e6, o.margin(), l(&o.default), o.default_seconds * 1e6, o.timed.len());
                }
                if let Some(s) = &r.solve {
                    t += &format!("\nJacobi-CG: {} iterations, relative residual {:.1e}, {:.3} s, max nodal error {:.2e}", s.iterations, s.relative_residual, s.seconds, s.max_nodal_error);
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

#[derive(clap::Args)]
struct ResidualArgs {
    /// poisson (−∇·(κ∇u) = f, κ and f nodal fields) or elasticity (Lamé parameters per cell).
    #[arg(long, default_value = "poisson")]
    problem: String,
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=3))]
    dim: u32,
    /// Polynomial degree (simplices 1..=2; quad/hex 1..=2 for Poisson, 1 for elasticity).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4))]
    degree: u32,
    /// About this many cells.
    #[arg(long, default_value_t = 100_000)]
    cells: usize,
    /// Triangles/tetrahedra (simplex) or quadrilaterals/hexahedra (tensor).
    #[arg(long, value_enum, default_value_t = CellsArg::Simplex)]
    element: CellsArg,
    /// Quadrature points (a rule the physics was generated for; default its first).
    #[arg(long)]
    quadrature: Option<usize>,
    /// Cell blocks per batch (N_bl); default from the tuning file, else ~128 threads.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    blocks: Option<u32>,
    /// Batches per chunk (N_cb) a thread block runs in sequence.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    batches: Option<u32>,
    /// Time the blocks × batches grid first and keep the best in the device's tuning file.
    #[arg(long)]
    tune: bool,
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    precision: Precision,
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Timed evaluations (the median is reported).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    repeats: u32,
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct CardiacArgs {
    /// generated:N (the heart-like shell with about N nodes) or a Gmsh file of tetrahedra.
    #[arg(long, default_value = "generated:30000")]
    mesh: String,
    /// Time step (model units).
    #[arg(long, default_value_t = 0.1)]
    dt: f64,
    #[arg(long, default_value_t = 100)]
    steps: usize,
    /// x,y,z,radius[,start,duration,amplitude] (a current in a ball), apex (15% of the mesh size at its lowest point, on for one time unit) or none.
    #[arg(long, default_value = "apex")]
    stimulus: String,
    /// Isotropic conductivity (mm²/unit).
    #[arg(long, default_value_t = 10.0)]
    d_iso: f64,
    /// Extra conductivity along the fibres.
    #[arg(long, default_value_t = 20.0)]
    d_ani: f64,
    /// Fibre direction for meshes read from files (the generated heart has its own).
    #[arg(long, default_value = "1,0,0")]
    fibre: String,
    /// With a .msh mesh: material regions, a positive factor on both
    /// conductivities per cell physical group as GROUP=F pairs (names or
    /// numbers, comma-separated; other cells 1), e.g. slow border zones.
    #[arg(long, value_delimiter = ',', value_parser = parse_conductivity)]
    conductivity: Vec<(String, f64)>,
    /// Assembly of residual and matrix: spmv (race-free, by gather-matrix SpMV) or atomic.
    #[arg(long, default_value = "spmv")]
    assembly: String,
    /// SpMV of the assembly and CG on the GPU: warp (ELL-WARP) or cusparse.
    #[arg(long, default_value = "warp")]
    spmv: String,
    /// Relative tolerance of CG on each Newton update.
    #[arg(long, default_value_t = 1e-9)]
    cg_rtol: f64,
    /// A ParaView time series: the .pvd collection (pieces are written beside it).
    #[arg(long)]
    vtk: Option<std::path::PathBuf>,
    /// Steps between VTU files.
    #[arg(long, default_value_t = 10)]
    vtk_every: usize,
    /// A PNG picture of the activation times at the end (3D: cut at mid z).
    #[arg(long)]
    png: Option<std::path::PathBuf>,
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// JSON (with every step's report) on stdout instead of text.
    #[arg(long)]
    json: bool,
}

fn cardiac(a: &CardiacArgs) -> CliResult {
    use fem::cardiac::{CardiacOptions, MeshSpec, StimulusSpec};
    use fem::host::problem::cardiac::{Config, Model};
    let fibre: Vec<f64> = a.fibre.split(',').map(|w| w.trim().parse::<f64>()).collect::<Result<_, _>>().map_err(|_| format!("--fibre `{}` is not x,y,z", a.fibre))?;
    if fibre.len() != 3 {
        return Err(format!("--fibre `{}` is not x,y,z", a.fibre).into());
    }
    let o = CardiacOptions {
        mesh: a.mesh.parse::<MeshSpec>()?,
        fibre: [fibre[0], fibre[1], fibre[2]],
        conductivity: a.conductivity.clone(),
        model: Model { d_iso: a.d_iso, d_ani: a.d_ani, dt: a.dt },
        stimulus: a.stimulus.parse::<StimulusSpec>()?,
        steps: a.steps,
        config: Config { assembly: a.assembly.parse()?, kernel: a.spmv.parse()?, cg_rtol: a.cg_rtol, ..Config::default() },
        vtk: a.vtk.clone().map(|p| (p, a.vtk_every)),
        per_step: a.json,
        png: a.png.clone(),
    };
    let any = open_announced(a.backend, a.json)?;
    let bar = progress_bar(a.json, String::new());
    bar.set_length(a.steps as u64);
    let json = a.json;
    let r = fem::cardiac::run(&o, &any, &mut |m, s| match s {
        None => bar.set_message(m.to_string()),
        Some(s) => {
            bar.set_position(s.step as u64);
            if !json {
                let t = &s.split;
                bar.println(format!(
                    "step {:5} t = {:8.3}: Newton {} CG {:4} | element {:8.3} ms assembly {:8.3} ms solve {:8.3} ms transfer {:7.3} ms",
                    s.step, s.time, s.newton_iterations, s.cg_iterations, t.element * 1e3, t.assembly * 1e3, t.solve * 1e3, t.transfer * 1e3
                ));
            }
        }
    })?;
    bar.finish_and_clear();
    print_report(a.json, &r, |r| {
        let (s, t) = (&r.summary, r.summary.split.total().max(1e-300));
        let pct = |x: f64| 100.0 * x / t;
        format!(
            "{} on {}: {} nodes, {} tetrahedra; {}\n{} steps of {} to t = {:.3}: {} Newton, {} CG iterations; {:.3e} s per step (element {:.1}%, assembly {:.1}%, solve {:.1}%, transfer {:.1}%), set-up {:.2} s\nactivated {:.1}% of nodes{}, max φ {:.3}{}",
            r.mesh,
            r.backend,
            r.nodes,
            r.cells,
            r.kernels,
            r.steps,
            r.dt,
            r.time,
            s.newton_iterations,
            s.cg_iterations,
            s.seconds_per_step,
            pct(s.split.element),
            pct(s.split.assembly),
            pct(s.split.solve),
            pct(s.split.transfer),
            r.setup_seconds,
            100.0 * r.activated_fraction,
            r.last_activation.map(|t| format!(", the last at t = {t:.3}")).unwrap_or_default(),
            r.max_phi,
            if r.vtk_files.is_empty() { String::new() } else { format!("\nwrote {}", r.vtk_files.last().expect("non-empty")) }
        )
    })?;
    Ok(true)
}

#[derive(Clone, Copy, ValueEnum)]
enum CellsArg {
    Simplex,
    Tensor,
}

fn residual(a: &ResidualArgs) -> CliResult {
    use fem::residual::{Cells, ResidualOptions};
    let o = ResidualOptions {
        physics: a.problem.parse()?,
        dim: a.dim as usize,
        degree: a.degree as usize,
        cells: match a.element {
            CellsArg::Simplex => Cells::Simplex,
            CellsArg::Tensor => Cells::Tensor,
        },
        n_cells: a.cells,
        nq: a.quadrature,
        blocks: a.blocks.map(|b| b as usize),
        batches: a.batches.map(|b| b as usize),
        double: matches!(a.precision, Precision::F64),
        repeats: a.repeats as usize,
        tune: a.tune,
    };
    let any = open_announced(a.backend, a.json)?;
    let mut tuning = fem::host::tune::Tuning::open(&any.name());
    let bar = progress_bar(a.json, String::new());
    let r = fem::residual::run(&o, &any, &mut tuning, &|m, step| follow(&bar, m, step))?;
    bar.finish_and_clear();
    if a.tune && r.tuned.is_some() {
        save_tuning(&tuning, a.json)?;
    }
    print_report(a.json, &r, |r| {
        let mut t = format!(
            "{:?} {}D {} P{} (q = {}) cells={} dofs={} {} on {}: {:.3e} s, {:.1} GFLOP/s (eq. 7), {:.0} GB/s = {:.3} of copy ({:.0} GB/s), β paper {:.2} / moved {:.2} flop/B, error vs CPU {:.1e} abs {:.1e} rel",
            r.problem, r.dim, r.element, r.degree, r.quadrature_points, r.cells, r.dofs, r.precision, r.backend, r.seconds, r.gflops,
            r.gbytes_per_second, r.roofline_fraction, r.copy_gbytes_per_second, r.beta_paper, r.beta_measured, r.max_abs_error_vs_cpu, r.max_rel_error_vs_cpu
        );
        if let (Some(b), Some(c)) = (r.blocks_per_batch, r.batches_per_chunk) {
            t += &format!(", {b} blocks of {} cells per batch, {c} batches per chunk", r.cell_block);
        }
        if let Some(s) = r.speedup_vs_cpu {
            t += &format!(", {s:.1}× the CPU backend");
        }
        if let Some(x) = &r.tuned {
            t += &format!(
                "\ntuned: {} blocks × {} batches at {:.2} µs, {:.2}× the default {} × {} ({} timed)",
                x.best.blocks, x.best.batches, x.best_seconds * 1e6, x.default_seconds / x.best_seconds, x.default.blocks, x.default.batches, x.timed
            );
        }
        t
    })?;
    Ok(true)
}

type CliResult = Result<bool, Box<dyn std::error::Error>>;

#[allow(clippy::too_many_arguments)]
fn bench(suite: &str, size: Option<usize>, degrees: Option<&str>, precision: Precision, backend: BackendArg, repeats: usize, out: &std::path::Path, json: bool) -> CliResult {
    use fem::bench::{BenchOptions, Suite};
    let suite: Suite = suite.parse()?;
    let degrees = degrees.map(parse_degrees).transpose()?;
    if degrees.as_ref().is_some_and(|d| d.iter().any(|&p| p == 0)) || size == Some(0) {
        return Err("--degrees and --size must be positive".into());
    }
    let o = BenchOptions { suite, size, degrees, f32: matches!(precision, Precision::F32), repeats };
    let any = open_announced(backend, json)?;
    let bar = progress_bar(json, String::new());
    let report = fem::bench::run(&any, &o, &|m, step| follow(&bar, m, step))?;
    bar.finish_and_clear();
    let files = fem::bench::write(&report, out)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{}", fem::bench::markdown(&report));
        for f in files {
            eprintln!("wrote {}", f.display());
        }
    }
    Ok(true)
}

fn info(json: bool) -> CliResult {
    let info = fem::info::gather();
    if json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        print!("{info}");
    }
    Ok(true)
}

/// Opens the backend, saying on stderr which one runs (and why not the GPU)
/// unless the output is JSON.
fn open_announced(b: BackendArg, json: bool) -> Result<AnyBackend, Box<dyn std::error::Error>> {
    let (any, why_not_gpu) = fem::open_backend(backend_choice(b))?;
    if !json {
        match &why_not_gpu {
            Some(why) => eprintln!("backend: cpu (auto; GPU not used: {why})"),
            None => eprintln!("backend: {} ({})", any.kind(), any.name()),
        }
    }
    Ok(any)
}

/// A spinner with `message`, hidden for JSON output.
fn spinner(json: bool, message: String) -> ProgressBar {
    let bar = if json { ProgressBar::hidden() } else { ProgressBar::new_spinner() };
    bar.set_message(message);
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// A bar that is a spinner until it learns a count, hidden for JSON output.
fn progress_bar(json: bool, message: String) -> ProgressBar {
    let bar = spinner(json, message);
    bar.set_style(ProgressStyle::with_template("{spinner} {msg} {bar:20} {pos}/{len}").expect("static template"));
    bar
}

/// Shows `message`, and the step of a counted search when there is one.
fn follow(bar: &ProgressBar, message: &str, step: Option<(usize, usize)>) {
    bar.set_message(message.to_string());
    match step {
        Some((done, total)) => {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
        None => {
            bar.set_length(0);
            bar.set_position(0);
        }
    }
}

/// Writes the tuning file, saying where unless the output is JSON.
fn save_tuning(t: &fem::host::tune::Tuning, json: bool) -> Result<(), Box<dyn std::error::Error>> {
    t.save()?;
    if !json {
        if let Some(p) = &t.path {
            eprintln!("tuning file: {}", p.display());
        }
    }
    Ok(())
}

/// Prints `report` as JSON or through `text`.
fn print_report<R: serde::Serialize>(json: bool, report: &R, text: impl FnOnce(&R) -> String) -> Result<(), Box<dyn std::error::Error>> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        println!("{}", text(report));
    }
    Ok(())
}

fn backend_choice(b: BackendArg) -> BackendChoice {
    match b {
        BackendArg::Auto => BackendChoice::Auto,
        BackendArg::Cpu => BackendChoice::Cpu,
        BackendArg::Cuda => BackendChoice::Cuda,
    }
}

fn solve(a: &SolveArgs) -> CliResult {
    if a.problem == ProblemArg::Hole {
        return solve_hole(a);
    }
    use fem::host::operator::elements::LocalVariant;
    use fem::host::operator::gpu::Scatter;
    use fem::host::problem::poisson::{Format, PoissonOptions};
    let degree = a.degree as usize;
    let mut regions = None;
    let (mut opts, dim, cells) = match &a.mesh {
        Some(path) => {
            let file = fem::host::io::gmsh::read_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
            if a.physics.is_some() || file.is_simplex() || !a.neumann_group.is_empty() || !a.robin_group.is_empty() {
                return cli::mesh_solve::solve(a, &file);
            }
            let (mesh, nodes) = file.to_mesh_and_nodes()?;
            let (dim, n) = (mesh.dim, mesh.n_cells());
            let cells = (n as f64).powf(1.0 / dim as f64).round().max(1.0) as usize;
            let mut o = PoissonOptions::on(fem::host::problem::poisson::MeshSource::Given(std::sync::Arc::new(mesh)), degree);
            if !a.dirichlet_group.is_empty() {
                o.dirichlet_facets = Some(std::sync::Arc::new(file.group_facets(&a.dirichlet_group, &nodes)?));
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
    opts.dirichlet = a.dirichlet.parse()?;
    let format = a.format.unwrap_or(FormatArg::Csr);
    opts.format = match format {
        FormatArg::Csr | FormatArg::Auto => Format::Csr,
        FormatArg::Ell => Format::Ell,
        FormatArg::LazyEll => Format::LazyEll,
        FormatArg::Lma => Format::Lma,
        FormatArg::MatrixFree => Format::MatrixFree,
        FormatArg::Ellt | FormatArg::K1 | FormatArg::K2 | FormatArg::Cusparse => {
            return Err("--format ellt, k1, k2 and cusparse store the tangent of --physics; the Q_p Poisson formats are auto, csr, ell, lazy-ell, lma and matrix-free".into())
        }
    };
    opts.symmetric = a.symmetric;
    opts.scatter = match a.scatter {
        ScatterArg::Atomic => Scatter::Atomic,
        ScatterArg::Colour => Scatter::Colour,
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
    let any = open_announced(a.backend, a.json)?;
    let f32 = matches!(a.precision, Precision::F32);
    if !(a.products >= 1.0 && a.products.is_finite()) {
        return Err("--products must be at least 1".into());
    }
    let choice = match format {
        FormatArg::Auto => {
            let m = fem::host::sparse::model::Machine::measure(&any)?;
            let c = fem::host::problem::poisson::choose_format(dim, degree, cells, if f32 { 4 } else { 8 }, &m, a.products)?;
            opts.format = c.storage.parse()?;
            if !a.json {
                eprintln!("format: {} (auto, over {} products)", c.storage, a.products);
            }
            Some(c)
        }
        _ => None,
    };
    opts.numbering = match &a.numbering {
        Some(n) => n.parse()?,
        None => opts.format.default_numbering(),
    };
    // GPU CSR threads per row: explicit, else tuned (by --bench) earlier, else the default.
    let gpu_csr = matches!(any, AnyBackend::Cuda(_)) && opts.format == Format::Csr && a.threads_per_row.is_none();
    let key = fem::host::problem::poisson::csr_signature(dim, degree, cells, if f32 { "f32" } else { "f64" });
    let mut tuning = gpu_csr.then(|| fem::host::tune::Tuning::open(&any.name()));
    if let (Some(t), false) = (&tuning, a.bench) {
        opts.threads_per_row = t.get::<usize>(&key);
    }
    let what = format!("{cells}^{dim} cells of degree {degree}");
    let spinner = spinner(a.json, what.clone());
    let report = fem::solve::run_with(&any, &opts, f32, &|stage| spinner.set_message(format!("{what}: {stage}")))?;
    spinner.finish_and_clear();
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
        fem::picture::qp_field_png(path, &format!("u_h, Q{degree}"), "u", &report.field).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if a.json {
        let mut v = serde_json::to_value(&report)?;
        v["choice"] = serde_json::to_value(&choice)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{}", fem::solve::describe(&report));
    }
    Ok(report.cg.converged)
}

fn demo(a: &DemoArgs) -> CliResult {
    let any = open_announced(a.backend, a.json)?;
    let refine = a.refine.map_or(if matches!(any, AnyBackend::Cuda(_)) { 5 } else { 3 }, |r| r as usize);
    let o = fem::demo::DemoOptions { mesh: a.mesh.clone(), refine, degree: a.degree as usize, out: Some(a.out.clone()), newton: Default::default() };
    let bar = spinner(a.json, "minimal surface".to_string());
    let report = fem::demo::run(&any, &o, &|s| bar.set_message(format!("minimal surface: {s}")), &mut |s| {
        if !a.json {
            bar.println(format!("Newton {:2}: ‖R‖ = {:.3e}, {} CG iterations, step length {}", s.iteration, s.residual, s.krylov_iterations, s.step_length));
        }
    })?;
    bar.finish_and_clear();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    Ok(report.newton.converged)
}

fn demo_kernels(backend: BackendArg, size: Option<usize>, precision: Precision, repeats: usize, json: bool) -> CliResult {
    let any = open_announced(backend, json)?;
    let n = size.unwrap_or(match any {
        AnyBackend::Cuda(_) => 1 << 26,
        AnyBackend::Cpu(_) => 1 << 23,
    });
    let bar = if json { ProgressBar::hidden() } else { ProgressBar::new(fem::demo::kernels::STEPS as u64) };
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("static template"));
    let gpu = match &any {
        AnyBackend::Cuda(g) => Some(g),
        AnyBackend::Cpu(_) => None,
    };
    let step = |s: &str| {
        bar.set_message(s.to_string());
        bar.inc(1);
    };
    let report = with_backend!(&any, |b| match precision {
        Precision::F32 => fem::demo::kernels::run::<_, f32>(b, gpu, n, repeats, step),
        Precision::F64 => fem::demo::kernels::run::<_, f64>(b, gpu, n, repeats, step),
    })?;
    bar.finish_and_clear();
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
    }
    Ok(report.passed)
}

fn source(
    file: Option<PathBuf>,
    generate: Option<String>,
) -> Result<fem::spmv::Source, Box<dyn std::error::Error>> {
    match (file, generate) {
        (Some(f), None) => Ok(fem::spmv::Source::File(f)),
        (None, Some(g)) => Ok(fem::spmv::Source::Generated(g.parse()?)),
        _ => Err("give either a Matrix Market file or --generate SPEC".into()),
    }
}

fn spmv(a: &SpmvArgs) -> CliResult {
    use fem::host::sparse::SpmvFormat;
    let src = source(a.matrix.clone(), a.generate.clone())?;
    use fem::spmv::Selection;
    let formats = match a.format.as_str() {
        "auto" => Selection::Auto,
        "all" => Selection::All,
        list => Selection::List(
            list.split(',')
                .map(|f| f.trim().parse::<SpmvFormat>())
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    if !(a.products >= 1.0 && a.products.is_finite()) || !(a.prune >= 1.0) {
        return Err("--products and --prune must be at least 1".into());
    }
    let opts = fem::spmv::SpmvOptions {
        formats,
        overrides: fem::host::sparse::tuning::Overrides {
            block: a.block,
            threshold: a.threshold,
            ellt_threads: a.threads_per_row,
            csr_threads: a.csr_threads,
        },
        tune: a.tune,
        products: a.products,
        search: fem::host::tune::SearchOptions { prune: a.prune },
        repeats: a.repeats as usize,
    };
    let any = open_announced(a.backend, a.json)?;
    let mut tuning = fem::host::tune::Tuning::open(&any.name());
    let bar = progress_bar(a.json, format!("loading {}", src.name()));
    let cpu = fem::host::CpuBackend::new(None)?;
    let progress = |m: &str, step: Option<(usize, usize)>| follow(&bar, m, step);
    let run = match a.precision {
        Precision::F32 => {
            fem::spmv::run::<f32>(&any, &src.name(), &src.load::<f32>(&cpu)?, &opts, &mut tuning, progress)?
        }
        Precision::F64 => {
            fem::spmv::run::<f64>(&any, &src.name(), &src.load::<f64>(&cpu)?, &opts, &mut tuning, progress)?
        }
    };
    bar.finish_and_clear();
    if a.tune {
        save_tuning(&tuning, a.json)?;
    }
    if run.reports.is_empty() {
        let why: Vec<String> = run
            .skipped
            .iter()
            .map(|k| format!("{}: {}", k.format, k.reason))
            .collect();
        return Err(format!("no format could be measured ({})", why.join("; ")).into());
    }
    if a.json {
        let one = matches!(&opts.formats, Selection::Auto) || matches!(&opts.formats, Selection::List(f) if f.len() == 1);
        let value = if one {
            // One answer: the chosen (or only) format's report, with the matrix and the rest beside it.
            let best = run
                .best
                .as_ref()
                .and_then(|b| run.reports.iter().find(|r| fem::spmv::base_name(&r.format) == b))
                .or_else(|| fem::host::sparse::bench::fastest(&run.reports))
                .expect("not empty");
            let mut v = serde_json::to_value(best)?;
            v["matrix"] = serde_json::to_value(&run.matrix)?;
            v["stats"] = serde_json::to_value(&run.stats)?;
            v["candidates"] = serde_json::to_value(&run.reports)?;
            v["skipped"] = serde_json::to_value(&run.skipped)?;
            v["choice"] = serde_json::to_value(&run.choice)?;
            v["choice_origin"] = serde_json::to_value(run.choice_origin)?;
            v["origins"] = serde_json::to_value(&run.origins)?;
            v["tuned"] = serde_json::to_value(&run.tuned)?;
            v
        } else {
            serde_json::to_value(&run)?
        };
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!("{}", fem::spmv::describe(&run));
    }
    Ok(true)
}

fn matrix_stats(file: Option<PathBuf>, generate: Option<String>, json: bool) -> CliResult {
    use fem::host::sparse::stats::RowStats;
    let src = source(file, generate)?;
    let cpu = fem::host::CpuBackend::new(None)?;
    let stats = RowStats::of(&src.load::<f64>(&cpu)?);
    if json {
        let mut v = serde_json::to_value(&stats)?;
        v["matrix"] = serde_json::to_value(src.name())?;
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "{}\n{}",
            RowStats::table_header(),
            stats.table_row(&src.name())
        );
    }
    Ok(true)
}

/// u_h (Lagrange cells of its degree), and where the exact solution is
/// known the exact one and the error; per cell κ and the Gmsh region.
fn write_solution_vtk(path: &std::path::Path, opts: &fem::host::problem::poisson::PoissonOptions, r: &fem::host::problem::poisson::PoissonReport, regions: Option<&[i32]>, ascii: bool) -> Result<(), Box<dyn std::error::Error>> {
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
fn parse_group_value(s: &str) -> Result<(String, f64), String> {
    let (g, v) = s.split_once('=').ok_or_else(|| format!("`{s}`: expected GROUP=VALUE"))?;
    let v: f64 = v.parse().map_err(|_| format!("`{s}`: `{v}` is not a number"))?;
    if g.is_empty() || !v.is_finite() {
        return Err(format!("`{s}`: a group name or number and a finite value"));
    }
    Ok((g.to_string(), v))
}

/// A region's κ: positive.
fn parse_region_value(s: &str) -> Result<(String, f64), String> {
    let (g, v) = parse_group_value(s)?;
    if v > 0.0 { Ok((g, v)) } else { Err(format!("`{s}`: κ must be positive")) }
}

/// A region's conductivity factor: positive.
fn parse_conductivity(s: &str) -> Result<(String, f64), String> {
    let (g, v) = parse_group_value(s)?;
    if v > 0.0 { Ok((g, v)) } else { Err(format!("`{s}`: a conductivity factor must be positive")) }
}

/// A Gmsh format version on the command line.
#[derive(Clone, Copy, ValueEnum)]
enum MshVersion {
    #[value(name = "2.2")]
    V22,
    #[value(name = "4.0")]
    V40,
    #[value(name = "4.1")]
    V41,
}

#[allow(clippy::too_many_arguments)]
fn mesh_gen(output: &std::path::Path, dim: usize, cells: usize, unstructured: bool, binary: bool, format: MshVersion, simplex: bool) -> CliResult {
    use fem::host::io::gmsh::{self, FileFormat, GmshMesh, Version};
    let version = match format {
        MshVersion::V22 => Version::V2_2,
        MshVersion::V40 => Version::V4_0,
        MshVersion::V41 => Version::V4_1,
    };
    let file = if simplex {
        use fem::host::mesh::simplex::SimplexBox;
        let b = if unstructured { SimplexBox::unstructured(dim, cells, 1) } else { SimplexBox { dim, cells, perturb: 0.0, shuffle: false, seed: 1 } };
        GmshMesh::from_simplex_mesh(&b.build()?)
    } else {
        let mesh = fem::solve::mesh(dim, cells, unstructured, 1).build()?;
        GmshMesh::from_box_mesh(&mesh, &vec![0; mesh.n_cells()], &["domain"])?
    };
    let bytes = gmsh::write_to(&file, FileFormat { version, binary })?;
    fem::host::io::atomic_write(output, &bytes).map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    let cells = file.blocks.iter().filter(|b| b.kind.dim() == dim).map(|b| b.len()).sum::<usize>();
    eprintln!("wrote {} (MSH {version}, {cells} cells, {} vertices)", output.display(), file.nodes.len());
    Ok(true)
}

fn mesh_info(file: &std::path::Path, json: bool) -> CliResult {
    let mesh = fem::host::io::gmsh::read_path(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let info = mesh.info();
    if json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        println!("file: {}", file.display());
        print!("{info}");
    }
    Ok(true)
}

fn matrix_gen(spec: &str, output: &std::path::Path, symmetric: bool) -> CliResult {
    use fem::host::io::matrix_market;
    let spec: fem::host::sparse::generate::MatrixSpec = spec.parse()?;
    let cpu = fem::host::CpuBackend::new(None)?;
    let csr = spec.build::<f64>(&cpu)?;
    if symmetric && !matrix_market::is_symmetric(&csr, 1e-12) {
        return Err("the matrix is not symmetric; write it without --symmetric".into());
    }
    matrix_market::write_path(&csr, symmetric, output)?;
    eprintln!(
        "wrote {} ({} rows, {} nonzeros)",
        output.display(),
        csr.n_rows,
        csr.nnz()
    );
    Ok(true)
}

fn spmv_assembly(
    dim: usize,
    degree: usize,
    rows: usize,
    threshold: Option<usize>,
    precision: Precision,
    repeats: usize,
    json: bool,
) -> CliResult {
    use fem::host::sparse::assembly::bench_gpu;
    let gpu = fem::cuda(0)?;
    let cpu = fem::host::CpuBackend::new(None)?;
    let r = match precision {
        Precision::F32 => bench_gpu::<f32>(&gpu, &cpu, dim, degree, rows, threshold, repeats)?,
        Precision::F64 => bench_gpu::<f64>(&gpu, &cpu, dim, degree, rows, threshold, repeats)?,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "Q{} {}D, {} rows, {} nonzeros from {} element entries: matrix by SpMV ({}) {:.1} µs vs atomic {:.1} µs; load {:.1} µs vs {:.1} µs; max |diff| {:.2e}",
            r.degree, r.dim, r.rows, r.nnz, r.element_entries, r.kernel, r.spmv_seconds * 1e6, r.atomic_seconds * 1e6, r.load_spmv_seconds * 1e6, r.load_atomic_seconds * 1e6, r.max_abs_diff
        );
    }
    Ok(true)
}

fn solve_hole(a: &SolveArgs) -> CliResult {
    use fem::host::problem::hole::{HoleOptions, Precond, Solver};
    use fem::host::solver::multigrid::Smoother;
    let (dim, degree) = (a.dim as usize, a.degree as usize);
    if degree > 2 {
        return Err("the hole benchmark uses Q1 or Q2 (--degree 1 or 2)".into());
    }
    if a.bench {
        return Err("--bench times one product of the Q_p Poisson formats; the hole benchmark reports its set-up and solve times without it".into());
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
    };
    o.smoother = match a.smoother {
        SmootherArg::Jacobi => Smoother::Jacobi,
        SmootherArg::Spai => Smoother::Spai,
        SmootherArg::Sainv => Smoother::Sainv,
    };
    o.cycle = a.cycle.unwrap_or(CycleArg::F).into();
    o.smoothing_steps = a.smoothing_steps;
    o.ordering = a.ordering.parse()?;
    o.rtol = a.rtol.unwrap_or(1e-8);
    o.max_iterations = a.max_iterations;
    let any = open_announced(a.backend, a.json)?;
    let spinner = spinner(a.json, format!("hole benchmark, {dim}D Q{degree}, {levels} levels"));
    let report = fem::solve::run_hole(&any, &o, matches!(a.precision, Precision::F32))?;
    spinner.finish_and_clear();
    if let Some(path) = &a.vtk {
        report.field.write_vtk(path, "u", None, &[], if a.vtk_ascii { fem::host::io::vtk::Encoding::Ascii } else { fem::host::io::vtk::Encoding::Binary })?;
    }
    if let Some(path) = &a.png {
        fem::picture::qp_field_png(path, "hole benchmark, u_h", "u", &report.field).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    print_report(a.json, &report, fem::solve::describe_hole)?;
    Ok(report.converged)
}
