//! The `fem` command line.
//!
//! Exit codes: 0 success, 1 error (message on stderr) or failed check,
//! 2 usage error.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use fem::host::operator::tensor::gpu::Column;
use fem::host::operator::tensor::tuning::{BpLaunch, UserLaunch};
use fem::host::{with_backend, AnyBackend, BackendChoice};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;

/// Large arrays in transparent huge pages (set-up is page-fault bound
/// without them).
#[global_allocator]
static ALLOC: fem::huge_pages::HugePages = fem::huge_pages::HugePages;

mod cli {
    pub mod amg;
    pub mod bp;
    pub mod cardiac;
    pub mod demo;
    pub mod mesh;
    pub mod mesh_solve;
    pub mod residual;
    pub mod given;
    pub mod solve;
    pub mod spmv;
}
use cli::{amg::*, bp::*, cardiac::*, demo::*, mesh::*, residual::*, solve::*, given::*, spmv::*};
use cli::mesh_solve::{KrylovArg, PhysicsArg, SchemeArg};
use fem::expression::Expression;
use fem::mesh_solve::LoadKind;

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
    /// format), solve (CG iterations per second per format), residual, e2e
    /// (whole `fem solve` commands, each in its own process: wall time,
    /// peak host memory and stages against the assembly and solve inside;
    /// 3D Q1 ELLPACK, Q2 auto and the hole multigrid at --size DOFs).
    ///
    /// Examples:
    ///   fem bench e2e --backend cuda --size 8000000
    ///   fem bench spmv --backend cuda --out results
    ///   fem bench bp --degrees 1-8 --size 10000000
    ///   fem bench solve --backend cpu --size 50000 --degrees 1,2
    Bench {
        /// spmv, bp, assembly, solve, residual or e2e.
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
    let command = Cli::command();
    let matches = command.clone().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // what was given, not defaulted: options a path would ignore are refused
    record_given(&command, &matches);
    let ranks = launched_ranks();
    if ranks > 1 && !matches!(cli.command, Command::Solve(_) | Command::Bp(_)) {
        eprintln!("error: only `fem solve --mesh FILE --physics ...` and `fem bp` run across ranks; this command would run {ranks} times over");
        return ExitCode::from(1);
    }
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

type CliResult = Result<bool, Box<dyn std::error::Error>>;

/// Ranks of the MPI job that started this process (1 without one).
fn launched_ranks() -> usize {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"].iter().find_map(|v| std::env::var(v).ok()?.parse::<usize>().ok()).unwrap_or(1)
}

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
    open_announced_on(b, 0, json)
}

/// [`open_announced`] on GPU `ordinal`.
fn open_announced_on(b: BackendArg, ordinal: usize, json: bool) -> Result<AnyBackend, Box<dyn std::error::Error>> {
    let (any, why_not_gpu) = fem::open_backend_on(backend_choice(b), ordinal)?;
    announce(&any, why_not_gpu.as_deref(), json);
    Ok(any)
}

/// Names the backend a command runs on (and why not the GPU, where it
/// fell back), unless the output is JSON.
fn announce(any: &AnyBackend, why_not_gpu: Option<&str>, json: bool) {
    if !json {
        match why_not_gpu {
            Some(why) => eprintln!("backend: cpu (auto; GPU not used: {why})"),
            None => eprintln!("backend: {} ({})", any.kind(), any.name()),
        }
    }
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

