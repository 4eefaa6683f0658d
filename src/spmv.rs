//! `fem spmv` and `fem matrix-stats`: a Matrix Market file or a generated
//! matrix, every SpMV format side by side on one backend.

use fem_host::io::matrix_market;
use fem_host::operator::csr::Csr;
use fem_host::sparse::bench::{self, SpmvReport};
use fem_host::sparse::device::{prepare_cpu, prepare_gpu};
use fem_host::sparse::generate::MatrixSpec;
use fem_host::sparse::params::SpmvParams;
use fem_host::sparse::stats::RowStats;
use fem_host::sparse::SpmvFormat;
use fem_host::{AnyBackend, CpuBackend, Result, Scalar};
use serde::Serialize;
use std::path::PathBuf;

/// Where the matrix comes from.
#[derive(Clone, Debug)]
pub enum Source {
    File(PathBuf),
    Generated(MatrixSpec),
}

impl Source {
    pub fn name(&self) -> String {
        match self {
            Self::File(p) => p.file_stem().map_or_else(
                || p.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            ),
            Self::Generated(s) => s.name(),
        }
    }

    pub fn load<T: Scalar>(&self, cpu: &CpuBackend) -> Result<Csr<T>> {
        match self {
            Self::File(p) => Ok(matrix_market::read_path(p)?.to_csr()?),
            Self::Generated(s) => s.build(cpu),
        }
    }
}

/// What `fem spmv` measures.
#[derive(Clone, Debug)]
pub struct SpmvOptions {
    /// Formats to run; `None`: every format, and the report names the fastest.
    pub formats: Option<Vec<SpmvFormat>>,
    /// Fixed parameters (`None` fields take the a-priori default).
    pub block: Option<u32>,
    pub threshold: Option<usize>,
    pub ellt_threads: Option<usize>,
    pub csr_threads: Option<usize>,
    /// Sweep each format's parameters and keep the fastest.
    pub tune: bool,
    pub repeats: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct SpmvRun {
    pub matrix: String,
    pub stats: RowStats,
    pub a_priori: SpmvParams,
    /// The fastest format of the run.
    pub best: Option<String>,
    pub reports: Vec<SpmvReport>,
    /// Formats that could not be built, and why (padding beyond bounds,
    /// cuSPARSE not loadable, ...).
    pub skipped: Vec<Skipped>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub format: String,
    pub reason: String,
}

/// The a-priori parameters with the fixed ones applied.
fn base_params(stats: &RowStats, o: &SpmvOptions) -> SpmvParams {
    let mut p = SpmvParams::a_priori(stats);
    p.block = o.block.unwrap_or(p.block);
    p.threshold = o.threshold.unwrap_or(p.threshold);
    p.ellt_threads = o.ellt_threads.unwrap_or(p.ellt_threads);
    p.csr_threads = o.csr_threads.unwrap_or(p.csr_threads);
    p
}

/// Runs the comparison on `any` in precision `T`; `progress(format, error)`
/// hears of each format as it starts, or fails to build.
pub fn run<T: Scalar>(
    any: &AnyBackend,
    matrix: &str,
    csr: &Csr<T>,
    o: &SpmvOptions,
    mut progress: impl FnMut(&str),
) -> Result<SpmvRun> {
    let cpu = CpuBackend::new(None)?;
    let skipped = std::cell::RefCell::new(Vec::new());
    let mut progress = |f: &str, e: Option<&fem_host::Error>| match e {
        None => progress(f),
        Some(e) => skipped.borrow_mut().push(Skipped {
            format: f.to_string(),
            reason: e.to_string(),
        }),
    };
    let stats = RowStats::of(csr);
    let base = base_params(&stats, o);
    base.validate()?;
    let gpu = matches!(any, AnyBackend::Cuda(_));
    let formats: Vec<SpmvFormat> = o.formats.clone().unwrap_or_else(|| {
        SpmvFormat::ALL
            .into_iter()
            .filter(|f| gpu || *f != SpmvFormat::Cusparse)
            .collect()
    });
    let mut chosen = Vec::new();
    for &f in &formats {
        let params = if o.tune {
            progress(&format!("tuning {}", f.name()), None);
            let cands = bench::candidates(f, base, &stats);
            let reps = o.repeats.clamp(1, 10);
            let tuned = match any {
                AnyBackend::Cpu(c) => {
                    bench::tune(c, csr, f, &cands, reps, |f, p| prepare_cpu(c, csr, f, p))
                }
                AnyBackend::Cuda(g) => bench::tune(g, csr, f, &cands, reps, |f, p| {
                    prepare_gpu(g, &cpu, csr, f, p)
                }),
            };
            match tuned {
                Ok(p) => p,
                Err(e) => {
                    progress(f.name(), Some(&e));
                    continue;
                }
            }
        } else {
            base
        };
        chosen.push((f, params));
    }
    let reports = match any {
        AnyBackend::Cpu(c) => bench::run(
            c,
            &cpu,
            csr,
            &chosen,
            o.repeats,
            |f, p| prepare_cpu(c, csr, f, p),
            |_, _| Ok(None),
            &mut progress,
        )?,
        AnyBackend::Cuda(g) => {
            let reps = o.repeats.clamp(1, 10);
            let cpu_reorder =
                |f, p: &SpmvParams| bench::cpu_reorder_seconds(&cpu, csr, f, p, reps).map(Some);
            bench::run(
                g,
                &cpu,
                csr,
                &chosen,
                o.repeats,
                |f, p| prepare_gpu(g, &cpu, csr, f, p),
                cpu_reorder,
                &mut progress,
            )?
        }
    };
    let best = bench::fastest(&reports).map(|r| r.format.clone());
    Ok(SpmvRun {
        matrix: matrix.to_string(),
        stats,
        a_priori: base,
        best,
        reports,
        skipped: skipped.into_inner(),
    })
}

/// A text table of a run.
pub fn describe(r: &SpmvRun) -> String {
    let s = &r.stats;
    let mut out = format!(
        "{}: {} rows, {} nonzeros, rows {}..{} (mean {:.1}); a-priori block {}, K2 threshold {}, ELLR-T {} threads, CSR {} threads\n",
        r.matrix, s.rows, s.nnz, s.min_row, s.max_row, s.mean_row, r.a_priori.block, r.a_priori.threshold, r.a_priori.ellt_threads, r.a_priori.csr_threads
    );
    out += "format      µs/SpMV    GB/s  roofline  paper GB/s  paper roofline  vs cuSPARSE  α GPU α CPU  convert s  max |err|\n";
    for x in &r.reports {
        out += &format!(
            "{:<10} {:>9.2} {:>7.1} {:>9.3} {:>11.1} {:>15.3} {:>12} {:>5} {:>5} {:>10.3} {:>10.2e}\n",
            x.format,
            x.seconds_per_spmv * 1e6,
            x.gbytes_per_second,
            x.roofline_fraction,
            x.paper_gbytes_per_second,
            x.paper_roofline_fraction,
            x.speedup_vs_cusparse.map_or("-".into(), |v| format!("{v:.2}×")),
            alpha_text(x.alpha_vs_cusparse, x),
            alpha_text(x.alpha_cpu_vs_cusparse, x),
            x.convert_seconds,
            x.max_abs_error_vs_csr
        );
    }
    for k in &r.skipped {
        out += &format!("skipped {}: {}\n", k.format, k.reason);
    }
    if let Some(b) = &r.best {
        out += &format!("fastest: {b}");
    }
    out
}

/// α as text: the count, ∞ when the format never pays off, - when unknown.
fn alpha_text(a: Option<f64>, r: &SpmvReport) -> String {
    match (a, r.speedup_vs_cusparse) {
        (Some(v), _) => format!("{v}"),
        (None, Some(s)) if s <= 1.0 => "∞".into(),
        _ => "-".into(),
    }
}
