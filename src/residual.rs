//! `fem residual`: the residual of a shipped `#[fem_kernel]` physics
//! (Poisson with variable coefficient, linear elasticity) on a perturbed,
//! shuffled mesh of the unit square or cube, timed on the chosen backend,
//! with the paper's flop count (Knepley, Rupp & Terrel eq. 7) and balance
//! (eq. 8), the bytes actually moved, the copy roofline measured in the
//! same run, and the difference to the CPU variant.

use fem_host::mesh::simplex::SimplexBox;
use fem_host::mesh::BoxMesh;
use fem_host::operator::pointwise::tuning::{resolve, signature, tune};
use fem_host::operator::pointwise::{paper_balance, paper_flops_per_cell, Aux, GpuPointwise, Pointwise, Transposition};
use fem_host::roofline::copy_bandwidth;
use fem_host::space::Space;
use fem_host::timing::measure;
use fem_host::tune::Tuning;
use fem_host::{AnyBackend, Backend, CpuBackend, CudaBackend, Error, Result, Scalar};
use fem_kernels::physics::{Elasticity, Poisson};
use fem_kernels::pointwise::Kernels;
use serde::Serialize;

/// The shipped physics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Physics {
    /// −∇·(κ∇u) = f with nodal κ(x) = 1 + x₀x₁ and f(x) = sin(πx₀).
    Poisson,
    /// Linear elasticity, `dim` components, with cellwise Lamé parameters
    /// alternating between two materials.
    Elasticity,
}

impl std::str::FromStr for Physics {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "poisson" => Ok(Self::Poisson),
            "elasticity" => Ok(Self::Elasticity),
            _ => Err(format!("unknown problem `{s}` (poisson, elasticity)")),
        }
    }
}

/// Cell shape family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cells {
    /// Triangles or tetrahedra (P_p).
    Simplex,
    /// Quadrilaterals or hexahedra (Q_p).
    Tensor,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct ResidualOptions {
    /// The physics whose residual is evaluated.
    pub physics: Physics,
    /// Spatial dimension, 2 or 3.
    pub dim: usize,
    /// Polynomial degree of the space; a generated variant must exist for it.
    pub degree: usize,
    /// Simplices or tensor cells.
    pub cells: Cells,
    /// About this many cells.
    pub n_cells: usize,
    /// Quadrature points (default: the first variant generated).
    pub nq: Option<usize>,
    /// Cell blocks per batch (N_bl) of the GPU launch; `None`: tuned or default.
    pub blocks: Option<usize>,
    /// Batches per chunk (N_cb) of the GPU launch; `None`: tuned or default.
    pub batches: Option<usize>,
    /// `f64` if set, else `f32`.
    pub double: bool,
    /// Timed evaluations; the median is reported.
    pub repeats: usize,
    /// Time the Table 2 grid first and keep the best in the tuning file.
    pub tune: bool,
}

/// The outcome of one evaluation benchmark, as printed and written to JSON.
#[derive(Clone, Debug, Serialize)]
pub struct ResidualReport {
    /// The physics evaluated.
    pub problem: Physics,
    /// Spatial dimension.
    pub dim: usize,
    /// Cell shape: `tri`, `tet`, `quad` or `hex`.
    pub element: String,
    /// Polynomial degree of the basis.
    pub degree: usize,
    /// Quadrature points per cell of the variant used.
    pub quadrature_points: usize,
    /// Cells in the mesh.
    pub cells: usize,
    /// Global unknowns: nodes times components.
    pub dofs: usize,
    /// `f32` or `f64`.
    pub precision: &'static str,
    /// The backend that ran it, as it describes itself (device, threads).
    pub backend: String,
    /// Cells per cell block, LCM(N_q, N_b·N_comp).
    pub cell_block: usize,
    /// GPU launch (none on the CPU, which runs whole cells per task, nor
    /// where no block fits shared memory and the GPU runs one cell per thread).
    pub blocks_per_batch: Option<usize>,
    /// Batches per chunk (N_cb) a thread block runs in sequence.
    pub batches_per_chunk: Option<usize>,
    /// Threads per thread block, N_bl · N_bs.
    pub threads_per_block: Option<usize>,
    /// Median wall time of one residual evaluation, in seconds.
    pub seconds: f64,
    /// The paper's flop count (eq. 7) over the measured time; for the
    /// sum-factorised hexahedra from Q2, their own count
    /// (`sum_factorised::flops_per_cell`).
    pub gflops: f64,
    /// Bytes one evaluation must move: E-vectors read, element residuals
    /// written.
    pub bytes_moved: usize,
    /// `bytes_moved` over the measured time, in GB/s.
    pub gbytes_per_second: f64,
    /// Copy of the same bytes, measured in the same run, in GB/s.
    pub copy_gbytes_per_second: f64,
    /// `gbytes_per_second` over `copy_gbytes_per_second` (1 = at the roofline).
    pub roofline_fraction: f64,
    /// The paper's algorithmic balance (eq. 8) at this precision.
    pub beta_paper: f64,
    /// Flops (eq. 7) per byte this implementation moves.
    pub beta_measured: f64,
    /// max |r − r_cpu| over the element residuals (0 on the CPU backend).
    pub max_abs_error_vs_cpu: f64,
    /// `max_abs_error_vs_cpu` / max |r_cpu|.
    pub max_rel_error_vs_cpu: f64,
    /// The CPU variant's median time per evaluation (GPU runs only).
    pub cpu_seconds: Option<f64>,
    /// `cpu_seconds / seconds` (GPU runs only).
    pub speedup_vs_cpu: Option<f64>,
    /// Set when `--tune` timed the grid: (blocks, batches, µs) of the best
    /// and of the default.
    pub tuned: Option<TunedReport>,
}

/// The launch search of `--tune`.
#[derive(Clone, Debug, Serialize)]
pub struct TunedReport {
    /// The fastest launch measured (the default when nothing beat it).
    pub best: Transposition,
    /// Its measured seconds per evaluation.
    pub best_seconds: f64,
    /// The default launch, always timed.
    pub default: Transposition,
    /// Its measured seconds per evaluation.
    pub default_seconds: f64,
    /// Launches timed.
    pub timed: usize,
}

/// The space of the run, with data for the physics.
fn build_space(o: &ResidualOptions) -> Result<Space> {
    if !(2..=3).contains(&o.dim) {
        return Err(Error::InvalidArgument(format!("dimension must be 2 or 3, not {}", o.dim)));
    }
    if o.n_cells == 0 {
        return Err(Error::InvalidArgument("--cells must be at least 1".into()));
    }
    match o.cells {
        Cells::Simplex => Space::simplex(&SimplexBox::unstructured(o.dim, SimplexBox::divisions_for(o.dim, o.n_cells), 1).build()?, o.degree),
        Cells::Tensor => {
            let n = ((o.n_cells as f64).powf(1.0 / o.dim as f64).round() as usize).max(1);
            Space::tensor(&BoxMesh::unstructured(o.dim, n, 1).build()?, o.degree)
        }
    }
}

/// Runs the evaluation on `any`.
pub fn run(o: &ResidualOptions, any: &AnyBackend, tuning: &mut Tuning, progress: &dyn Fn(&str, Option<(usize, usize)>)) -> Result<ResidualReport> {
    progress("mesh and space", None);
    let space = build_space(o)?;
    match (o.physics, o.double) {
        (Physics::Poisson, true) => run_typed::<f64, Poisson>(o, &space, any, tuning, progress),
        (Physics::Poisson, false) => run_typed::<f32, Poisson>(o, &space, any, tuning, progress),
        (Physics::Elasticity, true) => run_typed::<f64, Elasticity>(o, &space, any, tuning, progress),
        (Physics::Elasticity, false) => run_typed::<f32, Elasticity>(o, &space, any, tuning, progress),
    }
}

/// Auxiliary data: κ(x) = 1 + x₀x₁ and f(x) = sin(πx₀) at the nodes for
/// Poisson; Lamé parameters alternating between two materials for
/// elasticity.
fn aux_data(physics: Physics, space: &Space) -> Vec<f64> {
    match physics {
        Physics::Poisson => space.interpolate(2, |x, o| {
            o[0] = 1.0 + x[0] * x[1];
            o[1] = (std::f64::consts::PI * x[0]).sin();
        }),
        Physics::Elasticity => (0..space.n_cells()).flat_map(|c| if c % 2 == 0 { [1.0, 0.5] } else { [10.0, 4.0] }).collect(),
    }
}

fn run_typed<T: Scalar, K: Kernels<T>>(
    o: &ResidualOptions,
    space: &Space,
    any: &AnyBackend,
    tuning: &mut Tuning,
    progress: &dyn Fn(&str, Option<(usize, usize)>),
) -> Result<ResidualReport> {
    let aux = aux_data(o.physics, space);
    let aux = if o.physics == Physics::Poisson { Aux::Nodal(&aux) } else { Aux::Cell(&aux) };
    let op = Pointwise::<T, K>::new(space, o.nq, aux)?;
    let v = op.variant;
    let u_global = space.interpolate(v.nc, |x, out| out.iter_mut().enumerate().for_each(|(c, u)| *u = x[0] * x[0] + (c as f64 + 1.0) * x[1] - x[2]));
    let u: Vec<T> = space.gather(v.nc, &u_global).into_iter().map(T::from_f64).collect();
    let cpu = CpuBackend::new(None)?;
    progress("CPU residual", None);
    let reference = op.residual_cpu(&cpu, &u)?;
    let repeats = o.repeats.max(1);
    let (backend, seconds, result, launch, tuned, cpu_seconds) = match any {
        AnyBackend::Cuda(gpu) => {
            let (seconds, result, launch, tuned) = gpu_run::<T, K>(o, gpu, &op, &u, tuning, progress)?;
            progress("CPU timing", None);
            // The reference run above was the warm-up.
            let cpu_seconds = measure(&cpu, 0, repeats.min(5), || op.residual_cpu(&cpu, &u).map(drop))?.median;
            (gpu.name(), seconds, result, launch, tuned, Some(cpu_seconds))
        }
        AnyBackend::Cpu(c) => {
            progress("CPU timing", None);
            let seconds = measure(c, 0, repeats.min(5), || op.residual_cpu(c, &u).map(drop))?.median;
            (c.name(), seconds, reference.clone(), None, None, None)
        }
    };
    let (abs, scale) = result.iter().zip(&reference).fold((0.0f64, 0.0f64), |(m, s), (a, b)| (m.max((a.to_f64() - b.to_f64()).abs()), s.max(b.to_f64().abs())));
    let bytes = op.residual_bytes();
    progress("copy roofline", None);
    let copy = match any {
        AnyBackend::Cuda(g) => copy_bandwidth(g, bytes / 2, 20)?,
        AnyBackend::Cpu(c) => copy_bandwidth(c, bytes / 2, 5)?,
    };
    // the paper's count of thread transposition, or of the sum-factorised
    // residual that hexahedra from Q2 take instead
    let per_cell = if v.sum_factorised { fem_host::operator::pointwise::sum_factorised::flops_per_cell(&v) } else { paper_flops_per_cell(&v) };
    let flops = per_cell * op.n_cells as f64;
    Ok(ResidualReport {
        problem: o.physics,
        dim: v.dim(),
        element: v.shape.name().to_string(),
        degree: v.degree,
        quadrature_points: v.nq,
        cells: op.n_cells,
        dofs: space.n_dofs * v.nc,
        precision: T::NAME,
        backend,
        cell_block: v.block,
        blocks_per_batch: launch.map(|l| l.blocks),
        batches_per_chunk: launch.map(|l| l.batches),
        threads_per_block: launch.map(|l| l.threads(&v)),
        seconds,
        gflops: flops / seconds / 1e9,
        bytes_moved: bytes,
        gbytes_per_second: bytes as f64 / seconds / 1e9,
        copy_gbytes_per_second: copy.bytes_per_second / 1e9,
        roofline_fraction: bytes as f64 / seconds / copy.bytes_per_second,
        beta_paper: paper_balance(&v, T::BYTES),
        beta_measured: flops / bytes as f64,
        max_abs_error_vs_cpu: abs,
        max_rel_error_vs_cpu: abs / scale.max(f64::MIN_POSITIVE),
        cpu_seconds,
        speedup_vs_cpu: cpu_seconds.map(|c| c / seconds),
        tuned,
    })
}

/// Seconds, the residual, the launch (`None`: the fallback of
/// [`GpuPointwise::evaluate_cells`]) and the tuning.
type GpuRun<T> = (f64, Vec<T>, Option<Transposition>, Option<TunedReport>);

fn gpu_run<T: Scalar, K: Kernels<T>>(
    o: &ResidualOptions,
    gpu: &CudaBackend,
    op: &Pointwise<T, K>,
    u: &[T],
    tuning: &mut Tuning,
    progress: &dyn Fn(&str, Option<(usize, usize)>),
) -> Result<GpuRun<T>> {
    let v = op.variant;
    progress("upload", None);
    let dev = GpuPointwise::new(gpu, op)?;
    let ud = gpu.upload(u)?;
    let mut out = gpu.zeros::<T>(dev.out_len(false))?;
    if o.blocks.is_none() && o.batches.is_none() && (v.sum_factorised || Transposition::fitting(&v, false, T::BYTES, gpu.props().shared_mem_per_block_optin as usize).is_err()) {
        // what the solvers take: sum-factorised on hexahedra from Q2, or
        // where no block of this variant fits shared memory one thread
        // per cell
        progress(&format!("GPU residual, {}", dev.cells_method()), None);
        let seconds = measure(gpu, 2, o.repeats, || dev.evaluate_cells(gpu, false, &ud, &mut out))?.median;
        return Ok((seconds, gpu.download(&out)?, None, None));
    }
    let key = signature(K::NAME, &v, T::NAME, op.n_cells);
    let mut tuned = None;
    if o.tune && o.blocks.is_none() && o.batches.is_none() {
        let outcome = tune(gpu, &dev, &ud, o.repeats.clamp(3, 20), |i, n, t| progress(&format!("tuning {} blocks × {} batches", t.blocks, t.batches), Some((i, n))))?;
        tuning.record(&key, &outcome);
        tuned = Some(TunedReport { best: outcome.best, best_seconds: outcome.seconds, default: outcome.default, default_seconds: outcome.default_seconds, timed: outcome.timed.len() });
    }
    let launch = resolve(K::NAME, &v, T::NAME, op.n_cells, o.blocks, o.batches, tuning);
    progress("GPU residual", None);
    let seconds = measure(gpu, 2, o.repeats, || dev.evaluate(gpu, false, launch, &ud, &mut out))?.median;
    Ok((seconds, gpu.download(&out)?, Some(launch), tuned))
}
