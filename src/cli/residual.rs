//! `fem residual`: residuals of the shipped `#[fem_kernel]` physics.

use crate::*;

#[derive(clap::Args)]
pub(crate) struct ResidualArgs {
    /// poisson (−∇·(κ∇u) = f, κ and f nodal fields) or elasticity (Lamé parameters per cell).
    #[arg(long, default_value = "poisson")]
    pub(crate) problem: String,
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=3))]
    pub(crate) dim: u32,
    /// Polynomial degree (simplices 1..=2; quad/hex 1..=8 for Poisson; quad 1..=3 and hex 1..=8 for elasticity).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub(crate) degree: u32,
    /// About this many cells.
    #[arg(long, default_value_t = 100_000)]
    pub(crate) cells: usize,
    /// Triangles/tetrahedra (simplex) or quadrilaterals/hexahedra (tensor).
    #[arg(long, value_enum, default_value_t = CellsArg::Simplex)]
    pub(crate) element: CellsArg,
    /// Quadrature points (a rule the physics was generated for; default its first).
    #[arg(long)]
    pub(crate) quadrature: Option<usize>,
    /// Cell blocks per batch (N_bl); default from the tuning file, else ~128 threads.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(crate) blocks: Option<u32>,
    /// Batches per chunk (N_cb) a thread block runs in sequence.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(crate) batches: Option<u32>,
    /// Time the blocks × batches grid first and keep the best in the device's tuning file.
    #[arg(long)]
    pub(crate) tune: bool,
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    pub(crate) precision: Precision,
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub(crate) backend: BackendArg,
    /// Timed evaluations (the median is reported).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) repeats: u32,
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum CellsArg {
    Simplex,
    Tensor,
}

pub(crate) fn residual(a: &ResidualArgs) -> CliResult {
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
    refuse_on_cpu(&any, &[("blocks", "sizes the GPU's thread-transposition launch"), ("batches", "sizes the GPU's thread-transposition launch"), ("tune", "times the GPU's launches")])?;
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
