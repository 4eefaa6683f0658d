//! `fem spmv` and `fem matrix-stats`: a Matrix Market file or a generated
//! matrix, every SpMV format side by side on one backend.

use fem_host::io::matrix_market;
use fem_host::operator::csr::Csr;
use fem_host::sparse::bench::{self, SpmvReport};
use fem_host::sparse::device::{prepare_cpu, prepare_gpu};
use fem_host::sparse::generate::MatrixSpec;
use fem_host::sparse::params::SpmvParams;
use fem_host::sparse::model::{Machine, RowLengths};
use fem_host::sparse::stats::RowStats;
use fem_host::sparse::tuning::{choice_signature, signature, tune_format, Context, Origin, Overrides};
use fem_host::sparse::SpmvFormat;
use fem_host::tune::select::{choose, Choice, Costed};
use fem_host::tune::{Outcome, SearchOptions, Tuning};
use fem_host::{AnyBackend, CpuBackend, Result, Scalar};
use serde::Serialize;
use std::path::PathBuf;

/// Where the matrix comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A Matrix Market coordinate file.
    File(PathBuf),
    /// A matrix generated from a spec (`fem:dim=3,degree=2,...`).
    Generated(MatrixSpec),
}

impl Source {
    /// The label used in reports: the file's stem or the spec's short name.
    pub fn name(&self) -> String {
        match self {
            Self::File(p) => p.file_stem().map_or_else(
                || p.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            ),
            Self::Generated(s) => s.name(),
        }
    }

    /// The matrix in CSR on the host: read and converted, or generated
    /// (assembled with `cpu`).
    pub fn load<T: Scalar>(&self, cpu: &CpuBackend) -> Result<Csr<T>> {
        match self {
            Self::File(p) => Ok(matrix_market::read_path(p)?.to_csr()?),
            Self::Generated(s) => s.build(cpu),
        }
    }
}

/// Which formats `fem spmv` runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    /// The one the model (or a measured choice in the tuning file, or with
    /// `tune` a measurement now) finds cheapest over the expected products.
    Auto,
    /// Every format the backend has, side by side.
    All,
    /// These formats, in this order.
    List(Vec<SpmvFormat>),
}

/// What `fem spmv` measures.
#[derive(Clone, Debug)]
pub struct SpmvOptions {
    /// Which formats to run.
    pub formats: Selection,
    /// Parameters fixed by the user; the rest come from the tuning file,
    /// else from the model.
    pub overrides: Overrides,
    /// Search each format's parameters (and, for `auto`, the format) by
    /// measurement and record the winners in the tuning file.
    pub tune: bool,
    /// Products the matrix will serve: what a conversion is paid back over.
    pub products: f64,
    /// How widely the tuning search times candidates (its pruning factor).
    pub search: SearchOptions,
    /// Timed products per format (the median is reported); tuning uses at
    /// most 10.
    pub repeats: usize,
}

/// Everything one `fem spmv` run measured and decided.
#[derive(Clone, Debug, Serialize)]
pub struct SpmvRun {
    /// The matrix's label (see [`Source::name`]).
    pub matrix: String,
    /// Row-length statistics of the matrix.
    pub stats: RowStats,
    /// The rule-of-thumb parameters from the row lengths.
    pub a_priori: SpmvParams,
    /// The backend as the cost model sees it, with the copy bandwidth
    /// measured at the start of the run.
    pub machine: Machine,
    /// The chosen format (`auto`) or the fastest of the run.
    pub best: Option<String>,
    /// How `auto` chose, cheapest first.
    pub choice: Option<Choice>,
    /// Where the `auto` choice came from: the model, the tuning file, or
    /// (when tuning) this run's measurements.
    pub choice_origin: Option<Origin>,
    /// Where each format's parameters came from (before explicit ones).
    pub origins: Vec<(String, Origin)>,
    /// Each format's search, when tuning.
    pub tuned: Vec<TunedFormat>,
    /// The measurement of each format that ran.
    pub reports: Vec<SpmvReport>,
    /// Formats that could not be built, and why (padding beyond bounds,
    /// cuSPARSE not loadable, ...).
    pub skipped: Vec<Skipped>,
    /// The row lengths the model read.
    #[serde(skip)]
    pub lengths: RowLengths,
}

/// A format left out of the run.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    /// The format's name.
    pub format: String,
    /// The error that prevented building or tuning it.
    pub reason: String,
}

/// One format's search: the winner against the model's default.
#[derive(Clone, Debug, Serialize)]
pub struct TunedFormat {
    /// The format's name.
    pub format: String,
    /// The tuning-file key the winner was recorded under.
    pub signature: String,
    /// The search: winner, default and every candidate timed.
    pub outcome: Outcome<SpmvParams>,
    /// The default's time over the winner's (≥ 1).
    pub margin: f64,
}

/// Runs `o` on `any` in precision `T`, reading (and when tuning, filling)
/// `tuning`. `progress(message, Some((done, total)))` follows the search.
pub fn run<T: Scalar>(
    any: &AnyBackend,
    matrix: &str,
    csr: &Csr<T>,
    o: &SpmvOptions,
    tuning: &mut Tuning,
    mut progress: impl FnMut(&str, Option<(usize, usize)>),
) -> Result<SpmvRun> {
    let cpu = CpuBackend::new(None)?;
    let stats = RowStats::of(csr);
    let lengths = RowLengths::of(csr);
    let a_priori = SpmvParams::a_priori(&stats);
    o.overrides.apply(a_priori).validate()?;
    progress("measuring the copy bandwidth", None);
    let machine = Machine::measure(any)?;
    let gpu = matches!(any, AnyBackend::Cuda(_));
    let available: Vec<SpmvFormat> = SpmvFormat::ALL.into_iter().filter(|f| gpu || *f != SpmvFormat::Cusparse).collect();
    let mut skipped = Vec::new();
    let (mut choice, mut choice_origin) = (None, None);
    let formats: Vec<SpmvFormat> = match &o.formats {
        Selection::All => available.clone(),
        Selection::List(l) => l.clone(),
        Selection::Auto => {
            let ctx = context(&stats, &lengths, &machine, Some(&*tuning), T::NAME, T::BYTES);
            let (c, origin) = ctx.choose(&available, o.products, &o.overrides)?;
            let formats = if o.tune { shortlist(&c, o.search.prune) } else { vec![c.storage.parse().expect("a format name")] };
            (choice, choice_origin) = (Some(c), Some(origin));
            formats
        }
    };
    let mut chosen = Vec::new();
    let mut origins = Vec::new();
    let mut tuned = Vec::new();
    for &f in &formats {
        let ctx = context(&stats, &lengths, &machine, Some(&*tuning), T::NAME, T::BYTES);
        let (params, origin) = ctx.resolve(f, &o.overrides);
        origins.push((f.name().to_string(), origin));
        if !o.tune {
            chosen.push((f, params));
            continue;
        }
        let ctx = Context { tuning: None, ..ctx };
        let (model_params, _) = ctx.resolve(f, &o.overrides);
        let reps = o.repeats.clamp(1, 10);
        let mut step = |i: usize, n: usize, _: &SpmvParams| progress(&format!("tuning {}", f.name()), Some((i, n)));
        let outcome = match any {
            AnyBackend::Cpu(c) => tune_format(c, csr, f, &ctx, model_params, &o.overrides, &o.search, reps, |f, p| prepare_cpu(c, csr, f, p), &mut step),
            AnyBackend::Cuda(g) => tune_format(g, csr, f, &ctx, model_params, &o.overrides, &o.search, reps, |f, p| prepare_gpu(g, &cpu, csr, f, p), &mut step),
        };
        match outcome {
            Ok(out) => {
                let key = signature(f, T::NAME, &stats);
                tuning.record(&key, &out);
                chosen.push((f, out.best));
                tuned.push(TunedFormat { format: f.name().into(), signature: key, margin: out.margin(), outcome: out });
            }
            Err(e) => skipped.push(Skipped { format: f.name().into(), reason: e.to_string() }),
        }
    }
    let mut on_format = |f: &str, e: Option<&fem_host::Error>| match e {
        None => progress(&format!("measuring {f}"), None),
        Some(e) => skipped.push(Skipped { format: f.to_string(), reason: e.to_string() }),
    };
    let reports = match any {
        AnyBackend::Cpu(c) => bench::run(c, &cpu, csr, &chosen, o.repeats, |f, p| prepare_cpu(c, csr, f, p), |_, _| Ok(None), &mut on_format)?,
        AnyBackend::Cuda(g) => {
            let reps = o.repeats.clamp(1, 10);
            let cpu_reorder = |f, p: &SpmvParams| bench::cpu_reorder_seconds(&cpu, csr, f, p, reps).map(Some);
            bench::run(g, &cpu, csr, &chosen, o.repeats, |f, p| prepare_gpu(g, &cpu, csr, f, p), cpu_reorder, &mut on_format)?
        }
    };
    if o.tune {
        if let Some(c) = choice.as_mut() {
            *c = measured_choice(&reports, c, o.products)?;
            tuning.file.insert(&choice_signature(T::NAME, &stats, o.products), &c.storage, c.total_seconds, 0.0, reports.len(), 0);
            choice_origin = Some(Origin::Tuned);
        }
    }
    let best = match &choice {
        Some(c) => Some(c.storage.clone()),
        None => bench::fastest(&reports).map(|r| r.format.clone()),
    };
    Ok(SpmvRun { matrix: matrix.to_string(), stats, a_priori, machine, best, choice, choice_origin, origins, tuned, reports, skipped, lengths })
}

fn context<'a>(stats: &'a RowStats, lengths: &'a RowLengths, machine: &'a Machine, tuning: Option<&'a Tuning>, precision: &'static str, value_bytes: usize) -> Context<'a> {
    Context { stats, lengths, precision, value_bytes, machine: Some(machine), tuning }
}

/// Formats of the model's ranking worth measuring: available, and within
/// `prune` of the cheapest prediction.
fn shortlist(c: &Choice, prune: f64) -> Vec<SpmvFormat> {
    let best = c.ranking.first().map_or(0.0, |r| r.total(c.products));
    c.ranking
        .iter()
        .filter(|r| r.unavailable.is_none() && r.total(c.products) <= prune * best)
        .map(|r| r.storage.parse().expect("a format name"))
        .collect()
}

/// The choice again, priced by the measured products and conversions.
fn measured_choice(reports: &[SpmvReport], model: &Choice, products: f64) -> Result<Choice> {
    let costed = reports
        .iter()
        .map(|r| Costed {
            storage: base_name(&r.format).into(),
            product_seconds: r.seconds_per_spmv,
            conversion_seconds: r.convert_seconds,
            unavailable: None,
        })
        .collect();
    let mut c = choose(costed, products)?;
    let rest: Vec<Costed> = model.ranking.iter().filter(|m| !c.ranking.iter().any(|r| r.storage == m.storage)).cloned().collect();
    c.ranking.extend(rest);
    Ok(c)
}

/// `csr-t4` → `csr`: a report's format without its parameter.
pub fn base_name(f: &str) -> &str {
    f.split_once("-t").map_or(f, |(b, _)| b)
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
    for t in &r.tuned {
        out += &tuned_line(t);
    }
    if let Some(c) = &r.choice {
        let ranking: Vec<String> = c.ranking.iter().map(|x| match &x.unavailable {
            None => format!("{} {:.3} ms", x.storage, 1e3 * x.total(c.products)),
            Some(_) => format!("{} unavailable", x.storage),
        }).collect();
        out += &format!("auto over {} products ({:?}): {}\n", c.products, r.choice_origin.unwrap_or(Origin::Model), ranking.join(", "));
    }
    for k in &r.skipped {
        out += &format!("skipped {}: {}\n", k.format, k.reason);
    }
    if let Some(b) = &r.best {
        out += &format!("{}: {b}", if r.choice.is_some() { "chosen" } else { "fastest" });
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

/// One format's search as a line: the winner, its time and its margin
/// over the default.
pub fn tuned_line(t: &TunedFormat) -> String {
    let o = &t.outcome;
    let f: SpmvFormat = t.format.parse().expect("a format name");
    format!(
        "tuned {}: {} at {:.2} µs, {:.2}× the default {} at {:.2} µs ({} timed, {} pruned by the model)\n",
        t.format,
        o.best.describe(f),
        o.seconds * 1e6,
        t.margin,
        o.default.describe(f),
        o.default_seconds * 1e6,
        o.timed.len(),
        o.pruned
    )
}
