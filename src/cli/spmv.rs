//! `fem spmv`, `fem matrix-stats`, `fem matrix-gen` and `fem
//! spmv-assembly`: sparse products of Matrix Market or generated matrices.

use crate::*;

#[derive(clap::Args)]
pub(crate) struct SpmvArgs {
    /// Matrix Market file (coordinate; real, integer or pattern; general or symmetric).
    #[arg(
        long,
        required_unless_present = "generate",
        conflicts_with = "generate"
    )]
    pub(crate) matrix: Option<PathBuf>,
    /// A generated matrix: fem:dim=D,degree=P,rows=N,components=C,unstructured=0|1
    /// or powerlaw:rows=N,xmin=X,alpha=A,max=M,seed=S.
    #[arg(long)]
    pub(crate) generate: Option<String>,
    /// csr, ell, ellt, k1, k1r, k1rs, k2, k2r, k2rs, cusparse; `all` side by
    /// side; `auto` runs them all and reports the fastest. Several may be
    /// given comma-separated.
    #[arg(long, default_value = "auto")]
    pub(crate) format: String,
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub(crate) backend: BackendArg,
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    pub(crate) precision: Precision,
    /// Threads per block of the ELL-WARP and ELLR-T kernels (32..=256 typical).
    #[arg(long)]
    pub(crate) block: Option<u32>,
    /// K2: entries per lane above which a row is split over more lanes.
    #[arg(long)]
    pub(crate) threshold: Option<usize>,
    /// ELLR-T: threads per row (1, 2, 4, 8, 16, 32).
    #[arg(long)]
    pub(crate) threads_per_row: Option<usize>,
    /// CSR: threads per row (1 scalar, up to 32 vector).
    #[arg(long)]
    pub(crate) csr_threads: Option<usize>,
    /// Search each format's parameters (block, threshold, threads) by
    /// measurement first, and keep the winners in the device's tuning file.
    #[arg(long)]
    pub(crate) tune: bool,
    /// Products the matrix will serve, over which `auto` pays back a conversion.
    #[arg(long, default_value_t = 1000.0)]
    pub(crate) products: f64,
    /// Tuning: time only candidates the model predicts within this factor of its best.
    #[arg(long, default_value_t = 1.5)]
    pub(crate) prune: f64,
    /// Timed products per format (the median is reported).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) repeats: u32,
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn spmv(a: &SpmvArgs) -> CliResult {
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

pub(crate) fn source(
    file: Option<PathBuf>,
    generate: Option<String>,
) -> Result<fem::spmv::Source, Box<dyn std::error::Error>> {
    match (file, generate) {
        (Some(f), None) => Ok(fem::spmv::Source::File(f)),
        (None, Some(g)) => Ok(fem::spmv::Source::Generated(g.parse()?)),
        _ => Err("give either a Matrix Market file or --generate SPEC".into()),
    }
}

pub(crate) fn matrix_stats(file: Option<PathBuf>, generate: Option<String>, json: bool) -> CliResult {
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

pub(crate) fn matrix_gen(spec: &str, output: &std::path::Path, symmetric: bool) -> CliResult {
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

pub(crate) fn spmv_assembly(
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
