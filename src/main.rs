//! The `fem` command line.
//!
//! Exit codes: 0 success, 1 error (message on stderr) or failed check,
//! 2 usage error.

use clap::{Parser, Subcommand, ValueEnum};
use fem::host::{with_backend, AnyBackend, BackendChoice};
use indicatif::{ProgressBar, ProgressStyle};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "fem", version, about = "Finite-element computation on NVIDIA GPUs, with a CPU backend")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
    /// Run the vector kernels (copy, axpy, axpby, dot, norm), check them
    /// against the CPU backend and report bandwidth against the copy roofline.
    ///
    /// Examples:
    ///   fem demo                       # GPU if present, else CPU
    ///   fem demo --backend cpu --size 1000000
    ///   fem demo --backend cuda --precision f32 --json
    Demo {
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
        Command::Demo { backend, size, precision, repeats, json } => demo(backend, size, precision, repeats as usize, json),
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

fn info(json: bool) -> CliResult {
    let info = fem::info::gather();
    if json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        print!("{info}");
    }
    Ok(true)
}

fn demo(backend: BackendArg, size: Option<usize>, precision: Precision, repeats: usize, json: bool) -> CliResult {
    let choice = match backend {
        BackendArg::Auto => BackendChoice::Auto,
        BackendArg::Cpu => BackendChoice::Cpu,
        BackendArg::Cuda => BackendChoice::Cuda,
    };
    let (any, why_not_gpu) = fem::open_backend(choice)?;
    if !json {
        match &why_not_gpu {
            Some(why) => eprintln!("backend: cpu (auto; GPU not used: {why})"),
            None => eprintln!("backend: {} ({})", any.kind(), any.name()),
        }
    }
    let n = size.unwrap_or(match any {
        AnyBackend::Cuda(_) => 1 << 26,
        AnyBackend::Cpu(_) => 1 << 23,
    });
    let bar = if json { ProgressBar::hidden() } else { ProgressBar::new(fem::demo::STEPS as u64) };
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
        Precision::F32 => fem::demo::run::<_, f32>(b, gpu, n, repeats, step),
        Precision::F64 => fem::demo::run::<_, f64>(b, gpu, n, repeats, step),
    })?;
    bar.finish_and_clear();
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
    }
    Ok(report.passed)
}
