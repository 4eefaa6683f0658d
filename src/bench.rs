//! `fem bench <suite>`: a named benchmark suite on one backend, written as
//! JSON (everything), Markdown (the table a person reads) and PNG charts
//! (throughput against degree per format; measured points under the copy
//! roofline). Suites: `spmv` (every format on the Q_p stiffness matrices,
//! and how far the model's a-priori choice is from the measured best),
//! `bp` (BP1.0/BP3.5/BP3.0 against degree), `assembly` and `solve` (the
//! Poisson problem per storage format: elements assembled per second, CG
//! iterations per second).

use crate::plot::{self, Series};
use crate::spmv::{Selection, SpmvOptions};
use fem_host::problem::poisson::{Format, PoissonOptions};
use fem_host::sparse::generate::MatrixSpec;
use fem_host::sparse::tuning::Overrides;
use fem_host::tune::{SearchOptions, Tuning};
use fem_host::{AnyBackend, CpuBackend, Error};
use serde::Serialize;
use std::path::{Path, PathBuf};

pub(crate) type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// A benchmark suite, named on the command line and in the output files by
/// its lower-case name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Suite {
    /// Every SpMV format on the 2D and 3D Q_p stiffness matrices, plus the
    /// model's a-priori format against the measured best.
    Spmv,
    /// Poisson assembly per storage format: elements assembled per second.
    Assembly,
    /// Poisson and elasticity residuals on P1/P2 simplices: GFLOP/s.
    Residual,
    /// The CEED problems BP1.0, BP3.5 and BP3.0 against degree: GDOF/s.
    Bp,
    /// Poisson CG solves per storage format: CG iterations per second.
    Solve,
    /// Whole `fem solve` commands, start to solution written, against the
    /// assembly and solve inside them ([`crate::e2e`]).
    E2e,
}

impl std::str::FromStr for Suite {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "spmv" => Self::Spmv,
            "assembly" => Self::Assembly,
            "residual" => Self::Residual,
            "bp" => Self::Bp,
            "solve" => Self::Solve,
            "e2e" => Self::E2e,
            _ => return Err(format!("unknown suite `{s}` (spmv, assembly, residual, bp, solve, e2e)")),
        })
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// The suite to run.
    pub suite: Suite,
    /// Rows (spmv) or DOFs (the others); default by backend.
    pub size: Option<usize>,
    /// Polynomial degrees to measure; default by suite (1..=4 for spmv,
    /// 1..=8 for bp, 1 and 2 for residual, up to Q4 in 2D and Q3 in 3D for
    /// assembly and solve).
    pub degrees: Option<Vec<usize>>,
    /// Single precision instead of double (not available for `bp`).
    pub f32: bool,
    /// Timed repetitions per measurement, passed on to each suite's runs.
    pub repeats: usize,
}

/// One measurement.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// The chart it belongs to (`2D`, `3D`, or empty).
    pub group: String,
    /// The line it belongs to (a format or a problem).
    pub series: String,
    /// Polynomial degree p (N for the BP problems).
    pub degree: usize,
    /// Problem size: matrix rows (spmv) or degrees of freedom.
    pub dofs: usize,
    /// Wall time of one operation: an SpMV, a BP operator application, a
    /// residual evaluation, an assembly or a CG iteration, by suite.
    pub seconds: f64,
    /// The suite's figure of merit, in [`SuiteReport::throughput_unit`].
    pub throughput: f64,
    /// Achieved memory bandwidth in GB/s, where the run measured it.
    pub gbytes_per_second: Option<f64>,
    /// Achieved bandwidth over the copy bandwidth (1 = at the roofline).
    pub roofline_fraction: Option<f64>,
    /// Floating-point rate in GFLOP/s, where the suite counts flops.
    pub gflops: Option<f64>,
    /// Flops per byte.
    pub intensity: Option<f64>,
    /// The solve suite: CG's relative residual after every iteration (the
    /// first entry is the start), drawn in the convergence chart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<f64>>,
    /// The e2e suite: the whole command's memory, work and stages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whole: Option<crate::e2e::WholeCommand>,
}

/// The model's a-priori SpMV choice against the measured best.
#[derive(Clone, Debug, Serialize)]
pub struct AprioriCheck {
    /// The matrix's short name (`fem-3d-p2-c1`, ...).
    pub matrix: String,
    /// The format the cost model chose before any measurement.
    pub a_priori: String,
    /// Measured seconds per SpMV of the a-priori format.
    pub a_priori_seconds: f64,
    /// The fastest format measured.
    pub best: String,
    /// Measured seconds per SpMV of the fastest format.
    pub best_seconds: f64,
    /// a_priori_seconds / best_seconds − 1.
    pub slower_by: f64,
}

/// Everything one suite measured, as written to `<suite>.json`.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteReport {
    /// The suite that ran.
    pub suite: Suite,
    /// The backend it ran on, as it describes itself (device, threads).
    pub backend: String,
    /// `f32` or `f64`.
    pub precision: &'static str,
    /// Unit of [`Point::throughput`]: `GB/s`, `GDOF/s`, `GFLOP/s`,
    /// `elements/s` or `CG iterations/s`.
    pub throughput_unit: &'static str,
    /// Measured device copy bandwidth in GB/s, the roofline the points are
    /// compared with.
    pub copy_gbytes_per_second: f64,
    /// The measurements, in the order they were taken.
    pub points: Vec<Point>,
    /// The a-priori format checks (spmv only; empty otherwise).
    pub a_priori: Vec<AprioriCheck>,
}

/// Runs suite `o.suite` on `any`; `progress(message, step)` follows it.
pub fn run(any: &AnyBackend, o: &BenchOptions, progress: &dyn Fn(&str, Option<(usize, usize)>)) -> BenchResult<SuiteReport> {
    let gpu = matches!(any, AnyBackend::Cuda(_));
    let copy = match any {
        AnyBackend::Cuda(g) => fem_host::roofline::copy_bandwidth(g, 256 << 20, 10)?,
        AnyBackend::Cpu(c) => fem_host::roofline::copy_bandwidth(c, 64 << 20, 5)?,
    }
    .bytes_per_second;
    let precision = if o.f32 { "f32" } else { "f64" };
    let mut report = SuiteReport { suite: o.suite, backend: any.name(), precision, throughput_unit: "", copy_gbytes_per_second: copy / 1e9, points: Vec::new(), a_priori: Vec::new() };
    match o.suite {
        Suite::Spmv => spmv(any, o, gpu, &mut report, progress)?,
        Suite::Bp => bp(any, o, gpu, &mut report, progress)?,
        Suite::Assembly | Suite::Solve => poisson(any, o, gpu, &mut report, progress)?,
        Suite::Residual => residual(any, o, gpu, &mut report, progress)?,
        Suite::E2e => crate::e2e::run(o, gpu, &mut report, progress)?,
    }
    Ok(report)
}

fn spmv(any: &AnyBackend, o: &BenchOptions, gpu: bool, r: &mut SuiteReport, progress: &dyn Fn(&str, Option<(usize, usize)>)) -> BenchResult<()> {
    r.throughput_unit = "GB/s";
    let rows = o.size.unwrap_or(if gpu { 1_000_000 } else { 50_000 });
    let degrees = o.degrees.clone().unwrap_or_else(|| (1..=4).collect());
    let cpu = CpuBackend::new(None)?;
    // The model's parameters everywhere, so the a-priori choice is one of the measured runs.
    let mut tuning = Tuning::at(None, &any.name());
    let opts = SpmvOptions { formats: Selection::All, overrides: Overrides::default(), tune: false, products: 1e6, search: SearchOptions::default(), repeats: o.repeats, };
    let cases: Vec<(usize, usize)> = [2, 3].iter().flat_map(|&d| degrees.iter().map(move |&p| (d, p))).collect();
    for (i, &(dim, degree)) in cases.iter().enumerate() {
        let spec: MatrixSpec = format!("fem:dim={dim},degree={degree},rows={rows}").parse()?;
        progress(&format!("SpMV {dim}D Q{degree}"), Some((i, cases.len())));
        let run = if o.f32 {
            crate::spmv::run::<f32>(any, &spec.name(), &spec.build::<f32>(&cpu)?, &opts, &mut tuning, |_, _| {})?
        } else {
            crate::spmv::run::<f64>(any, &spec.name(), &spec.build::<f64>(&cpu)?, &opts, &mut tuning, |_, _| {})?
        };
        for x in &run.reports {
            let flops = 2.0 * x.nnz as f64;
            r.points.push(Point {
                group: format!("{dim}D"),
                series: crate::spmv::base_name(&x.format).into(),
                degree,
                dofs: x.rows,
                seconds: x.seconds_per_spmv,
                throughput: x.gbytes_per_second,
                gbytes_per_second: Some(x.gbytes_per_second),
                roofline_fraction: Some(x.roofline_fraction),
                gflops: Some(flops / x.seconds_per_spmv / 1e9),
                intensity: Some(flops / x.bytes as f64),
            history: None,
            whole: None,
        });
        }
        r.a_priori.push(a_priori_check(&spec, &run, o.f32)?);
    }
    Ok(())
}

/// The format the model picks for `run`'s matrix (conversion ignored: many
/// products) against the fastest format measured.
fn a_priori_check(spec: &MatrixSpec, run: &crate::spmv::SpmvRun, f32: bool) -> BenchResult<AprioriCheck> {
    use fem_host::sparse::tuning::Context;
    let (precision, value_bytes) = if f32 { ("f32", 4) } else { ("f64", 8) };
    let ctx = Context { stats: &run.stats, lengths: &run.lengths, precision, value_bytes, machine: Some(&run.machine), tuning: None };
    let measured: Vec<fem_host::sparse::SpmvFormat> = run.reports.iter().filter_map(|x| crate::spmv::base_name(&x.format).parse().ok()).collect();
    let (choice, _) = ctx.choose(&measured, 1e6, &Overrides::default())?;
    let time = |f: &str| run.reports.iter().find(|x| crate::spmv::base_name(&x.format) == f).map(|x| x.seconds_per_spmv);
    let best = fem_host::sparse::bench::fastest(&run.reports).ok_or("no format ran")?;
    let a = time(&choice.storage).ok_or("the choice did not run")?;
    Ok(AprioriCheck { matrix: spec.name(), a_priori: choice.storage, a_priori_seconds: a, best: crate::spmv::base_name(&best.format).into(), best_seconds: best.seconds_per_spmv, slower_by: a / best.seconds_per_spmv - 1.0 })
}

fn bp(any: &AnyBackend, o: &BenchOptions, gpu: bool, r: &mut SuiteReport, progress: &dyn Fn(&str, Option<(usize, usize)>)) -> BenchResult<()> {
    use crate::bp::{BpOptions, Size, L2};
    use fem_host::mesh::spectral::Deformation;
    use fem_host::operator::tensor::Problem;
    if o.f32 {
        return Err(Error::InvalidArgument("the BP kernels are instantiated in f64 only".into()).into());
    }
    r.throughput_unit = "GDOF/s";
    let dofs = o.size.unwrap_or(if gpu { 10_000_000 } else { 200_000 });
    let degrees = o.degrees.clone().unwrap_or_else(|| (1..=8).collect());
    let mut tuning = Tuning::open(&any.name());
    let cases: Vec<(Problem, usize)> = [Problem::Bp1, Problem::Bp35, Problem::Bp30].iter().flat_map(|&p| degrees.iter().map(move |&d| (p, d))).collect();
    for (i, &(problem, degree)) in cases.iter().enumerate() {
        progress(&format!("{} N = {degree}", problem.name()), Some((i, cases.len())));
        let bo = BpOptions { problem, degree, size: Size::Dofs(dofs), deformation: Deformation::Trilinear { amplitude: 0.1, seed: 1 }, lambda: 1.0, launch: Default::default(), repeats: o.repeats, assembled: false, cpu_time: false, solve: None, p_multigrid: None, tune: false, l2: L2::Cold };
        let x = crate::bp::run(&bo, any, &mut tuning, &|_, _| {})?;
        r.points.push(Point {
            group: String::new(),
            series: problem.name().into(),
            degree,
            dofs: x.dofs,
            seconds: x.seconds_per_apply,
            throughput: x.gdofs_per_second,
            gbytes_per_second: Some(x.gbytes_per_second),
            roofline_fraction: Some(x.roofline_fraction),
            gflops: Some(x.tflops * 1e3),
            intensity: Some(x.arithmetic_intensity),
            history: None,
            whole: None,
        });
    }
    Ok(())
}

/// Poisson and elasticity residuals on simplices, 2D and 3D, per degree
/// (1 and 2): GFLOP/s by the paper's count against the copy roofline.
fn residual(any: &AnyBackend, o: &BenchOptions, gpu: bool, r: &mut SuiteReport, progress: &dyn Fn(&str, Option<(usize, usize)>)) -> BenchResult<()> {
    use crate::residual::{Cells, Physics, ResidualOptions};
    r.throughput_unit = "GFLOP/s";
    let cells = o.size.unwrap_or(if gpu { 1_000_000 } else { 50_000 });
    let degrees = o.degrees.clone().unwrap_or_else(|| vec![1, 2]);
    if let Some(&p) = degrees.iter().find(|&&p| !(1..=2).contains(&p)) {
        return Err(Error::InvalidArgument(format!("simplex residuals have degrees 1 and 2, not {p}")).into());
    }
    let mut tuning = Tuning::open(&any.name());
    let mut cases = Vec::new();
    for physics in [Physics::Poisson, Physics::Elasticity] {
        for dim in [2, 3] {
            cases.extend(degrees.iter().map(|&p| (physics, dim, p)));
        }
    }
    for (i, &(physics, dim, degree)) in cases.iter().enumerate() {
        progress(&format!("{physics:?} {dim}D P{degree}"), Some((i, cases.len())));
        let ro = ResidualOptions { physics, dim, degree, cells: Cells::Simplex, n_cells: cells, nq: None, blocks: None, batches: None, double: !o.f32, repeats: o.repeats, tune: false };
        let x = crate::residual::run(&ro, any, &mut tuning, &|_, _| {})?;
        r.points.push(Point {
            group: format!("{dim}D"),
            series: format!("{physics:?}").to_lowercase(),
            degree,
            dofs: x.dofs,
            seconds: x.seconds,
            throughput: x.gflops,
            gbytes_per_second: Some(x.gbytes_per_second),
            roofline_fraction: Some(x.roofline_fraction),
            gflops: Some(x.gflops),
            intensity: Some(x.beta_measured),
            history: None,
            whole: None,
        });
    }
    Ok(())
}

fn poisson(any: &AnyBackend, o: &BenchOptions, gpu: bool, r: &mut SuiteReport, progress: &dyn Fn(&str, Option<(usize, usize)>)) -> BenchResult<()> {
    let solve = o.suite == Suite::Solve;
    r.throughput_unit = if solve { "CG iterations/s" } else { "elements/s" };
    let dofs = o.size.unwrap_or(if gpu { 4_000_000 } else { 100_000 });
    let formats: &[Format] = if solve { &Format::ALL } else { &[Format::Csr, Format::Ell, Format::LazyEll, Format::Lma] };
    let mut cases = Vec::new();
    for dim in [2usize, 3] {
        let max = if dim == 2 { 4 } else { 3 };
        for &p in o.degrees.as_deref().unwrap_or(&[1, 2, 3, 4]) {
            if p <= max {
                cases.extend(formats.iter().map(|&f| (dim, p, f)));
            }
        }
    }
    for (i, &(dim, degree, format)) in cases.iter().enumerate() {
        progress(&format!("{dim}D Q{degree} {format:?}"), Some((i, cases.len())));
        let cells = crate::solve::cells_for_dofs(dim, degree, dofs);
        let mut po = PoissonOptions::new(crate::solve::mesh(dim, cells, false, 1), degree);
        po.format = format;
        po.benchmark = gpu && solve;
        po.cg.rtol = 1e-8;
        let x = crate::solve::run(any, &po, o.f32)?;
        let (seconds, throughput) = if solve {
            (x.solve_seconds / x.iterations.max(1) as f64, x.cg_iterations_per_second)
        } else {
            (x.assembly_seconds, x.elements_per_second)
        };
        r.points.push(Point {
            group: format!("{dim}D"),
            series: format.name().into(),
            degree,
            dofs: x.dofs,
            seconds,
            throughput,
            gbytes_per_second: x.spmv.as_ref().map(|b| b.bytes_per_second / 1e9),
            roofline_fraction: x.spmv.as_ref().map(|b| b.roofline_fraction),
            gflops: None,
            intensity: None,
            history: solve.then(|| x.cg.history.clone()),
            whole: None,
        });
    }
    Ok(())
}

/// The Markdown table of a report.
pub fn markdown(r: &SuiteReport) -> String {
    let mut s = format!("# `fem bench {}` on {} ({})\n\nCopy bandwidth {:.0} GB/s.\n\n", serde_json::to_value(r.suite).map(|v| v.as_str().unwrap_or("").to_string()).unwrap_or_default(), r.backend, r.precision, r.copy_gbytes_per_second);
    s += &format!("| group | series | degree | DOFs | seconds | {} | GB/s | roofline | GFLOP/s |\n|---|---|---|---|---|---|---|---|---|\n", r.throughput_unit);
    let opt = |v: Option<f64>, d: usize| v.map_or("-".into(), |v| format!("{v:.d$}"));
    for p in &r.points {
        s += &format!(
            "| {} | {} | {} | {} | {:.3e} | {:.4e} | {} | {} | {} |\n",
            p.group, p.series, p.degree, p.dofs, p.seconds, p.throughput, opt(p.gbytes_per_second, 1), opt(p.roofline_fraction, 3), opt(p.gflops, 1)
        );
    }
    if r.suite == Suite::E2e {
        s += &crate::e2e::markdown(r);
    }
    if !r.a_priori.is_empty() {
        s += "\n## The model's a-priori format against the measured best\n\n| matrix | a-priori | µs | best | µs | slower by |\n|---|---|---|---|---|---|\n";
        for c in &r.a_priori {
            s += &format!("| {} | {} | {:.1} | {} | {:.1} | {:.1}% |\n", c.matrix, c.a_priori, c.a_priori_seconds * 1e6, c.best, c.best_seconds * 1e6, 100.0 * c.slower_by);
        }
    }
    s
}

/// Writes `<suite>.json`, `<suite>.md` and the charts into `dir`, each
/// through a temporary file renamed into place; returns the paths.
pub fn write(r: &SuiteReport, dir: &Path) -> BenchResult<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let name = serde_json::to_value(r.suite)?.as_str().unwrap_or("suite").to_string();
    let mut out = Vec::new();
    let mut put = |file: String, write: &dyn Fn(&Path) -> BenchResult<()>| -> BenchResult<()> {
        let path = dir.join(&file);
        fem_host::io::write_via_temp(&path, write)?;
        out.push(path);
        Ok(())
    };
    put(format!("{name}.json"), &|p| Ok(std::fs::write(p, serde_json::to_string_pretty(r)?)?))?;
    put(format!("{name}.md"), &|p| Ok(std::fs::write(p, markdown(r))?))?;
    if r.suite == Suite::E2e {
        let bars: Vec<(String, Vec<(String, f64)>)> = r.points.iter().filter_map(|p| Some((p.series.clone(), crate::e2e::major_stages(&p.whole.as_ref()?.stages)))).collect();
        let title = format!("fem bench e2e on {} ({}): wall time by stage", r.backend, r.precision);
        put(format!("{name}-stages.png"), &|p| plot::stacked_bars(p, &title, "seconds", &bars))?;
        return Ok(out);
    }
    for g in groups_of(r) {
        let series = lines(r.points.iter().filter(|p| p.group == g), |p| Some((p.degree as f64, p.throughput)));
        let file = if g.is_empty() { format!("{name}-throughput.png") } else { format!("{name}-throughput-{}.png", g.to_lowercase()) };
        let title = format!("fem bench {name} {g} on {} ({})", r.backend, r.precision);
        put(file, &|p| plot::throughput(p, &title, r.throughput_unit, &series))?;
    }
    for g in groups_of(r) {
        let series: Vec<Series> = r.points.iter().filter(|p| p.group == g).filter_map(|p| {
            let h = p.history.as_ref()?;
            Some(Series { name: format!("{} Q{}", p.series, p.degree), points: h.iter().enumerate().map(|(i, &v)| (i as f64, v)).collect() })
        }).collect();
        if series.is_empty() {
            continue;
        }
        let title = format!("fem bench {name} {g}: CG convergence on {} ({})", r.backend, r.precision);
        put(format!("{name}-convergence-{}.png", g.to_lowercase()), &|p| plot::convergence(p, &title, &series))?;
    }
    let roof = lines(r.points.iter().map(|p| Point { group: String::new(), ..p.clone() }).collect::<Vec<_>>().iter(), |p| Some((p.intensity?, p.gflops?)));
    if !roof.is_empty() {
        let title = format!("fem bench {name}: roofline on {} ({})", r.backend, r.precision);
        put(format!("{name}-roofline.png"), &|p| plot::roofline(p, &title, r.copy_gbytes_per_second, &roof))?;
    }
    Ok(out)
}

/// The points' groups in order of appearance.
fn groups_of(r: &SuiteReport) -> Vec<&str> {
    let mut groups: Vec<&str> = r.points.iter().map(|p| p.group.as_str()).collect();
    groups.dedup();
    groups
}

/// Points grouped into one series per name, in order of appearance.
fn lines<'a>(points: impl Iterator<Item = &'a Point>, xy: impl Fn(&Point) -> Option<(f64, f64)>) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for p in points {
        let Some(v) = xy(p) else { continue };
        let name = if p.group.is_empty() { p.series.clone() } else { format!("{} {}", p.series, p.group) };
        match out.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push(v),
            None => out.push(Series { name, points: vec![v] }),
        }
    }
    out
}
