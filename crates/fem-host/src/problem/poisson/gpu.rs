//! The problem on the GPU: the operator in every format assembled there
//! by the Reguly–Giles kernels, and the solve.

use super::*;
use crate::operator::device_pattern::DevicePattern;
use cudarc::driver::CudaSlice;

/// An operator assembled on the GPU and what a benchmark reports of it.
pub struct GpuOperator<T: Scalar> {
    /// The operator.
    pub op: Box<dyn LinearOperator<CudaBackend, T>>,
    /// Its load vector.
    pub load: crate::backend::cuda::DeviceVec<T>,
    /// Device time of the assembly (CUDA events); host set-up (pattern,
    /// positions, colourings) is not part of it, as in the paper.
    pub assembly_seconds: f64,
    /// CSR: the threads per row of the product.
    pub threads_per_row: Option<usize>,
    /// Stored entries of a global format for the bytes model: CSR
    /// nonzeros and ELLPACK slots (padding included, lazy or not).
    pub stored: (usize, usize),
    /// The cells on the device, for what else runs on them (the error).
    pub cells: Arc<GpuCells<T>>,
}

/// The operator of `layout` in `format` on the GPU, naming its stages
/// to `stage` as they start.
pub fn build_gpu_operator<T: Scalar>(
    gpu: &CudaBackend,
    cpu: &CpuBackend,
    space: &Space,
    layout: &Layout,
    opts: &PoissonOptions,
    stage: Stages,
) -> Result<GpuOperator<T>> {
    if opts.scatter == Scatter::Spmv {
        return Err(Scatter::Spmv.unavailable("the Q_p Poisson kernels"));
    }
    stage("uploads");
    let cells = Arc::new(GpuCells::upload(gpu, space, layout, opts.kappa.as_deref(), opts.scatter)?);
    let mut b = gpu.zeros::<T>(layout.n_rows)?;
    // JIT-compile the assembly kernels before anything is timed.
    stage("kernel compilation");
    let colour = if opts.scatter == Scatter::Colour { "_colour" } else { "" };
    let lma = |sym: bool| format!("_sym{}_redundant{}", sym as u8, (opts.variant == LocalVariant::Redundant) as u8);
    match opts.format {
        Format::Csr | Format::Ell => cells.preload(gpu, &format!("assemble_global{colour}"), "")?,
        Format::LazyEll => {
            cells.preload(gpu, "assemble_lma", "_sym0_redundant0")?;
            cells.preload(gpu, &format!("lazy_ell_append{colour}"), "")?;
        }
        Format::Lma => cells.preload(gpu, "assemble_lma", &lma(opts.symmetric))?,
        Format::MatrixFree => {}
    }
    let global = |val: &mut crate::backend::cuda::DeviceVec<T>, pos: &CudaSlice<u32>, b: &mut crate::backend::cuda::DeviceVec<T>| -> Result<f64> {
        stage("assembly");
        gpu.time(&mut || gpu_op::assemble_global(gpu, &cells, pos, val, b, opts.scatter))
    };
    let (mut chosen_tpr, mut stored) = (None, (0, 0));
    let (op, seconds): (Box<dyn LinearOperator<CudaBackend, T>>, f64) = match opts.format {
        Format::Csr | Format::Ell => {
            // The pattern is built on the device (on the host, and sent
            // once, where its rows are too long for that); the format, the
            // unit diagonal of fixed rows and the slot of every element
            // entry are made from it there.
            stage("sparsity");
            let pattern = match DevicePattern::of_cells(gpu, &cells)? {
                Some(p) => p,
                None => {
                    let csr = Csr::<T>::pattern(cpu, layout)?;
                    stage("uploads");
                    DevicePattern::upload(gpu, &csr)?
                }
            };
            stored = (pattern.nnz, pattern.width * pattern.n_rows);
            stage("format build");
            let fixed = cells.fixed_mask.as_ref();
            if opts.format == Format::Csr {
                let tpr = opts.threads_per_row.unwrap_or_else(|| GpuCsr::<T>::default_threads_per_row(pattern.nnz, pattern.n_rows));
                let pos = pattern.entry_slots(gpu, &cells, 0)?;
                let mut m = GpuCsr::on_pattern(gpu, pattern, fixed, tpr)?;
                let t = global(&mut m.val, &pos, &mut b)?;
                drop(pos);
                if opts.benchmark && opts.threads_per_row.is_none() {
                    stage("tuning the product");
                    m.threads_per_row = tune_threads_per_row(gpu, &mut m)?;
                }
                chosen_tpr = Some(m.threads_per_row);
                stage("diagonal");
                m.cache_diagonal(gpu)?;
                (Box::new(m), t)
            } else {
                let mut m = GpuEll::on_pattern(gpu, &pattern, fixed)?;
                let pos = pattern.entry_slots(gpu, &cells, m.ld)?;
                drop(pattern);
                let t = global(&mut m.val, &pos, &mut b)?;
                drop(pos);
                stage("diagonal");
                m.cache_diagonal(gpu)?;
                (Box::new(m), t)
            }
        }
        Format::LazyEll => {
            stage("assembly");
            let mut prep = Some(GpuEll::prepare_lazy(gpu, &cells)?);
            let mut m = None;
            let t = gpu.time(&mut || {
                m = Some(GpuEll::assemble_lazy(gpu, &cells, prep.take().expect("prepared once"), opts.scatter)?);
                Ok(())
            })?;
            let mut m = m.expect("assembled");
            stored = (0, m.width * m.n_rows);
            m.cache_diagonal(gpu)?;
            let (_, load) = gpu_op::assemble_lma(gpu, &cells, true, opts.variant)?;
            b = gpu_op::load_vector(gpu, &cells, &load)?;
            (Box::new(m), t)
        }
        Format::Lma => {
            stage("assembly");
            let mut out = None;
            let t = gpu.time(&mut || {
                out = Some(gpu_op::assemble_lma(gpu, &cells, opts.symmetric, opts.variant)?);
                Ok(())
            })?;
            let (vals, load) = out.expect("assembled");
            b = gpu_op::load_vector(gpu, &cells, &load)?;
            (Box::new(GpuLma::new(gpu, cells.clone(), vals, opts.symmetric, opts.scatter)?), t)
        }
        Format::MatrixFree => {
            stage("assembly");
            let (m, load) = GpuMatrixFree::new(gpu, cells.clone(), opts.scatter)?;
            b = load;
            (Box::new(m), 0.0)
        }
    };
    Ok(GpuOperator { op, load: b, assembly_seconds: seconds, threads_per_row: chosen_tpr, stored, cells })
}

/// The threads per row whose CSR SpMV is fastest (median of 5 after a
/// warm-up), as Reguly & Giles tune per degree (Fig. 6).
pub(super) fn tune_threads_per_row<T: Scalar>(gpu: &CudaBackend, m: &mut GpuCsr<T>) -> Result<usize> {
    let x = gpu.upload(&crate::conformance::values::<T>(m.n_rows, 5))?;
    let mut y = gpu.zeros::<T>(m.n_rows)?;
    let mut best = (f64::MAX, m.threads_per_row);
    for &t in &gpu_op::THREADS_PER_ROW {
        m.threads_per_row = t;
        let time = crate::timing::measure(gpu, 1, 5, || m.apply(gpu, &x, &mut y))?.median;
        if time < best.0 {
            best = (time, t);
        }
    }
    Ok(best.1)
}

/// Solves the problem on the GPU in precision `T`; the CPU backend is used
/// for set-up and the error measurement.
pub fn solve_cuda<T: Scalar>(gpu: &CudaBackend, cpu: &CpuBackend, opts: &PoissonOptions) -> Result<PoissonReport> {
    solve_cuda_with::<T>(gpu, cpu, opts, &StageClock::new(&|_| {}), None)
}

/// [`solve_cuda`], timing its stages on `clock`, on the space and rows
/// `ready` where [`discretise`] made them already.
pub fn solve_cuda_with<T: Scalar>(gpu: &CudaBackend, cpu: &CpuBackend, opts: &PoissonOptions, clock: &StageClock, ready: Option<(Space, Layout)>) -> Result<PoissonReport> {
    let stage = &|s: &str| clock.start(s);
    memory::ensure_fits(gpu, opts, T::BYTES)?;
    let (space, layout) = match ready {
        Some(d) => d,
        None => discretise(opts, stage)?,
    };
    let GpuOperator { op, load: b, assembly_seconds, threads_per_row, stored: (nnz, slots), cells } = build_gpu_operator::<T>(gpu, cpu, &space, &layout, opts, stage)?;
    stage("CG set-up");
    // Benchmarks start CG from a random guess: the load is an eigenfunction
    // of the Laplacian, so from zero CG would stop after a few iterations.
    let mut x = if opts.benchmark { gpu.upload(&crate::conformance::values::<T>(layout.n_rows, 17))? } else { gpu.zeros::<T>(layout.n_rows)? };
    // One untimed iteration compiles every kernel CG uses.
    let mut warm = gpu.zeros::<T>(layout.n_rows)?;
    cg(gpu, &op, &b, &mut warm, CgOptions { max_iterations: 1, ..opts.cg })?;
    let mut report = None;
    stage("CG");
    let solve_seconds = gpu.time(&mut || {
        report = Some(cg(gpu, &op, &b, &mut x, opts.cg)?);
        Ok(())
    })?;
    let report = report.expect("solved");
    let bench = if opts.benchmark {
        stage("timing the product and the copy");
        let bytes = spmv_bytes::<T>(opts.format, &layout, nnz, slots, space.dim(), opts.symmetric);
        Some(bench_spmv(gpu, &*op, &x, bytes, gpu.free_bytes()? * 2 / 5)?)
    } else {
        None
    };
    // The sine problem's error on the device; any other exact solution
    // is a host function, evaluated there.
    let l2_error = if opts.exact.is_none() && opts.exact_solution(space.dim()).is_some() {
        stage("L2 error");
        Some(cells.sine_l2_error(gpu, &x)?)
    } else {
        None
    };
    stage("download");
    let xh = gpu.download(&x)?;
    drop((op, b, x, warm, cells));
    let mut r = PoissonReport::new::<T>(cpu, space, &layout, opts, gpu.name(), (report, &xh, l2_error), assembly_seconds, solve_seconds, stage);
    r.threads_per_row = threads_per_row;
    r.spmv = bench;
    r.stages = clock.finish();
    Ok(r)
}
