//! `fem demo`: the minimal surface from a Gmsh file to pictures, and
//! `fem demo kernels`.

use crate::*;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct DemoArgs {
    #[command(subcommand)]
    pub(crate) what: Option<DemoWhat>,
    /// Where to run: the GPU when usable (auto), or a named backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub(crate) backend: BackendArg,
    /// Uniform refinements of the mesh (default: 5 on the GPU, 3 on the CPU).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=9))]
    pub(crate) refine: Option<u32>,
    /// Polynomial degree.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub(crate) degree: u32,
    /// A 2D triangle mesh (.msh) inside |x|, |y| < 1.5 instead of the shipped disk.
    #[arg(long)]
    pub(crate) mesh: Option<PathBuf>,
    /// Folder for minimal-surface.vtu and .png (made if missing).
    #[arg(long, default_value = ".")]
    pub(crate) out: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Subcommand)]
pub(crate) enum DemoWhat {
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

pub(crate) fn demo(a: &DemoArgs) -> CliResult {
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

pub(crate) fn demo_kernels(backend: BackendArg, size: Option<usize>, precision: Precision, repeats: usize, json: bool) -> CliResult {
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
