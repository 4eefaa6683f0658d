//! Smoothed-aggregation set-up on the GPU, for a scalar field (one
//! unknown a node, the constants as near-nullspace): every stage of
//! [`super::hierarchy`] runs on the device, nothing but scalars comes
//! back until the coarsest level (a few hundred rows) is inverted on the
//! host. Validation, strength, aggregation and the tentative prolongator
//! are the per-item functions of [`fem_kernels::amg`] that the CPU set-up
//! calls too, so both find the same aggregates; the products are
//! cuSPARSE's ([`crate::sparse::spgemm`]).

use super::{defects, lap, AmgOptions, AmgStats, LevelStats, SetupSeconds, DEFECTS};
use crate::operator::csr::Csr;
use crate::operator::gpu::{csr_spmv, GpuCsr};
use crate::solver::multigrid::{Multigrid, StoredLevel};
use crate::sparse::spgemm::{DeviceCsr, Sparse};
use crate::{Backend, CudaBackend, Error, Result, Scalar};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use std::time::Instant;

/// Threads per row of the levels' CSR products: the coarse operators of
/// aggregation hold 20 to 60 entries a row.
const THREADS_PER_ROW: usize = 8;

/// One level on the way down: its operator, diagonal and ρ(D⁻¹A), and the
/// prolongation from the next coarser level with its transpose (as
/// [`StoredLevel`] holds them).
struct Built {
    a: DeviceCsr,
    diag: CudaSlice<f64>,
    rho: f64,
    p: Option<(DeviceCsr, DeviceCsr)>,
}

/// The hierarchy of the symmetric positive definite `a` (rows sorted),
/// built on the GPU, as a multigrid preconditioner in precision `T`.
/// Errors as [`super::hierarchy`]'s; smoothers that are set up from host
/// matrices (SPAI(1), SAINV, ℓ1-Jacobi) are refused: the caller sets
/// those up on the host.
pub fn build<T: Scalar>(gpu: &CudaBackend, a: &DeviceCsr, o: &AmgOptions) -> Result<(Multigrid<CudaBackend, T>, AmgStats)> {
    let mut seconds = SetupSeconds::default();
    let t = Instant::now();
    let sparse = Sparse::new(gpu)?;
    let diag = diagonal(gpu, a)?;
    check(gpu, a, &diag)?;
    seconds.strength += lap(t);
    let fine = Built { a: copy(gpu, a)?, diag, rho: 0.0, p: None };
    let mut levels = vec![fine];
    let mut b = gpu.upload(&vec![1.0f64; a.n_rows])?;
    while levels.len() < o.max_levels.max(1) {
        let top = levels.last_mut().expect("the finest level is there");
        if top.a.n_rows <= o.max_coarse {
            break;
        }
        let Some((coarse, coarse_b, rho, transfers)) = coarsen(gpu, &sparse, top, &b, o, &mut seconds)? else { break };
        (top.rho, top.p) = (rho, Some(transfers));
        levels.push(coarse);
        b = coarse_b;
    }
    if levels.len() == 1 && a.n_rows > o.cycle.dense_coarse {
        return Err(Error::InvalidArgument(format!("AMG found no coarser level for {} rows at strength threshold {} (lower it)", a.n_rows, o.strength)));
    }
    let t = Instant::now();
    let stats = statistics(&levels, seconds);
    let coarsest = download(gpu, &levels.last().expect("a level").a)?;
    let stored = levels.into_iter().rev().map(|l| store(gpu, l)).collect::<Result<Vec<_>>>()?;
    let mut mg = Multigrid::from_stored(gpu, stored, o.cycle, coarsest.converted())?;
    mg.invert_coarsest(gpu, &coarsest.converted())?;
    let mut stats = stats;
    stats.seconds.upload = lap(t);
    Ok((mg, stats))
}

/// The next coarser level of `top` with near-nullspace `b`, its own
/// near-nullspace, ρ(D⁻¹A) of `top` and the prolongation to `top` with
/// its transpose; `None` where aggregation gains nothing.
#[allow(clippy::type_complexity)]
fn coarsen(gpu: &CudaBackend, sparse: &Sparse, top: &Built, b: &CudaSlice<f64>, o: &AmgOptions, s: &mut SetupSeconds) -> Result<Option<(Built, CudaSlice<f64>, f64, (DeviceCsr, DeviceCsr))>> {
    let (a, n) = (&top.a, top.a.n_rows);
    let t = Instant::now();
    let strong = strength(gpu, a, &top.diag, o.strength)?;
    s.strength += lap(t);
    let t = Instant::now();
    let (agg, n_agg) = aggregate(gpu, a, &strong)?;
    drop(strong);
    s.aggregation += lap(t);
    if n_agg == 0 || n_agg >= n {
        return Ok(None);
    }
    let t = Instant::now();
    let (tp, coarse_b) = tentative(gpu, &agg, n_agg, b)?;
    s.tentative += lap(t);
    let t = Instant::now();
    let rho = spectral_radius(gpu, a, &top.diag)?;
    let step = jacobi_step(gpu, a, &top.diag, o.prolongation_omega / rho)?;
    let p = sparse.multiply(gpu, &step, &tp)?;
    drop((step, tp));
    s.smoothing += lap(t);
    let t = Instant::now();
    let pt = sparse.transpose(gpu, &p)?;
    let ap = sparse.multiply(gpu, a, &p)?;
    let coarse = sparse.multiply(gpu, &pt, &ap)?;
    drop(ap);
    let diag = diagonal(gpu, &coarse)?;
    s.galerkin += lap(t);
    Ok(Some((Built { a: coarse, diag, rho: 0.0, p: None }, coarse_b, rho, (p, pt))))
}

/// A one-dimensional launch over `n` items, grid-stride.
fn grid(gpu: &CudaBackend, n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(256).clamp(1, gpu.props().sm_count as usize * 8) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
}

fn diagonal(gpu: &CudaBackend, a: &DeviceCsr) -> Result<CudaSlice<f64>> {
    let mut d = gpu.zeros::<f64>(a.n_rows)?;
    let n = a.n_rows;
    unsafe { gpu.stream().launch_builder(&gpu.function("fem_amg_diagonal")?).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(&a.val).arg(&mut d).launch(grid(gpu, n)) }?;
    Ok(d)
}

/// Refuses, as the CPU set-up does, an operator that is not symmetric
/// positive definite as far as rows can tell.
fn check(gpu: &CudaBackend, a: &DeviceCsr, diag: &CudaSlice<f64>) -> Result<()> {
    let s = gpu.stream();
    let mut first = s.clone_htod(&[u32::MAX; 4])?;
    let n = a.n_rows;
    unsafe { s.launch_builder(&gpu.function("fem_amg_defects")?).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(&a.val).arg(diag).arg(&mut first).launch(grid(gpu, n)) }?;
    let bits = s.clone_dtoh(&first)?;
    // the kernel's bit b is DEFECTS' entry of that value
    let found = DEFECTS.map(|d| Some(bits[d.trailing_zeros() as usize] as usize).filter(|&r| r != u32::MAX as usize));
    if found.iter().all(Option::is_none) {
        return Ok(());
    }
    let row = |r: usize| -> Vec<f64> {
        let rp = s.clone_dtoh(&a.row_ptr.slice(r..r + 2)).unwrap_or_default();
        rp.get(1).and_then(|_| s.clone_dtoh(&a.val.slice(rp[0] as usize..rp[1] as usize)).ok()).unwrap_or_default()
    };
    let d = s.clone_dtoh(diag)?;
    defects(n, found, |r| row(r).into_iter().find(|v| !v.is_finite()), |r| d[r])
}

/// The strong couplings as a mask over `a`'s entries.
fn strength(gpu: &CudaBackend, a: &DeviceCsr, diag: &CudaSlice<f64>, theta: f64) -> Result<CudaSlice<u8>> {
    let mut strong = gpu.stream().alloc_zeros::<u8>(a.nnz().max(1))?;
    let n = a.n_rows;
    unsafe { gpu.stream().launch_builder(&gpu.function("fem_amg_strength")?).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(&a.val).arg(diag).arg(&theta).arg(&mut strong).launch(grid(gpu, n)) }?;
    Ok(strong)
}

/// Every node's aggregate ([`fem_kernels::amg::NONE`] for none) and the
/// number of aggregates, as [`super::mis::aggregate`] finds them.
fn aggregate(gpu: &CudaBackend, a: &DeviceCsr, strong: &CudaSlice<u8>) -> Result<(CudaSlice<u32>, usize)> {
    let (s, n, cfg) = (gpu.stream(), a.n_rows, grid(gpu, a.n_rows));
    let mut keys = s.alloc_zeros::<u64>(n)?;
    let mut max1 = s.alloc_zeros::<u64>(n)?;
    let mut max2 = s.alloc_zeros::<u64>(n)?;
    let mut undecided = s.alloc_zeros::<u32>(1)?;
    let nb_max = gpu.function("fem_amg_neighbourhood_max")?;
    let update = gpu.function("fem_amg_mis_update")?;
    unsafe { s.launch_builder(&gpu.function("fem_amg_initial_keys")?).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(strong).arg(&mut keys).launch(cfg) }?;
    loop {
        s.memset_zeros(&mut undecided)?;
        unsafe {
            s.launch_builder(&nb_max).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(strong).arg(&keys).arg(&mut max1).launch(cfg)?;
            s.launch_builder(&nb_max).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(strong).arg(&max1).arg(&mut max2).launch(cfg)?;
            s.launch_builder(&update).arg(&n).arg(&mut keys).arg(&max2).arg(&mut undecided).launch(cfg)?;
        }
        if s.clone_dtoh(&undecided)?[0] == 0 {
            break;
        }
    }
    drop((max1, max2));
    let mut flags = s.alloc_zeros::<u32>(n)?;
    unsafe { s.launch_builder(&gpu.function("fem_amg_roots")?).arg(&n).arg(&keys).arg(&mut flags).launch(cfg) }?;
    let (id, roots) = gpu.exclusive_scan(&flags)?;
    let mut first = flags; // reused: the roots' flags are in `id` now
    unsafe { s.launch_builder(&gpu.function("fem_amg_root_aggregate")?).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(strong).arg(&keys).arg(&id).arg(&mut first).launch(cfg) }?;
    let mut agg = s.alloc_zeros::<u32>(n)?;
    unsafe { s.launch_builder(&gpu.function("fem_amg_join_aggregate")?).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(strong).arg(&first).arg(&mut agg).launch(cfg) }?;
    Ok((agg, roots as usize))
}

/// The tentative prolongator of the single near-nullspace vector `b`
/// (`b_i / ‖b‖` of its aggregate in each aggregated row) and the coarse
/// near-nullspace (the aggregates' norms).
fn tentative(gpu: &CudaBackend, agg: &CudaSlice<u32>, n_agg: usize, b: &CudaSlice<f64>) -> Result<(DeviceCsr, CudaSlice<f64>)> {
    let (s, n, cfg) = (gpu.stream(), agg.len(), grid(gpu, agg.len()));
    let mut flags = s.alloc_zeros::<u32>(n)?;
    let mut norm = s.alloc_zeros::<f64>(n_agg)?;
    unsafe { s.launch_builder(&gpu.function("fem_amg_aggregate_norms")?).arg(&n).arg(agg).arg(b).arg(&mut flags).arg(&mut norm).launch(cfg) }?;
    let (row_ptr, nnz) = gpu.exclusive_scan(&flags)?;
    let mut col = s.alloc_zeros::<u32>(nnz as usize)?;
    let mut val = s.alloc_zeros::<f64>(nnz as usize)?;
    unsafe {
        s.launch_builder(&gpu.function("fem_amg_tentative")?).arg(&n).arg(agg).arg(b).arg(&norm).arg(&row_ptr).arg(&mut col).arg(&mut val).launch(cfg)?;
        s.launch_builder(&gpu.function("fem_amg_sqrt")?).arg(&n_agg).arg(&mut norm).launch(grid(gpu, n_agg))?;
    }
    Ok((DeviceCsr { n_rows: n, n_cols: n_agg, row_ptr, col, val }, norm))
}

/// `y = A x` on the device.
fn spmv(gpu: &CudaBackend, a: &DeviceCsr, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
    csr_spmv(gpu, THREADS_PER_ROW, &a.row_ptr, &a.col, &a.val, x, y)
}

/// ρ(D⁻¹A) as [`super::spectral_radius`] estimates it: 20 power
/// iterations of `D^{-1/2} A D^{-1/2}` from the same start, raised by 5 %.
fn spectral_radius(gpu: &CudaBackend, a: &DeviceCsr, diag: &CudaSlice<f64>) -> Result<f64> {
    let (s, n, cfg) = (gpu.stream(), a.n_rows, grid(gpu, a.n_rows));
    // D^{-1/2} (the diagonal is positive: checked on the finest level, and
    // a Galerkin product keeps it so)
    let mut root = s.clone_dtod(diag)?;
    let mut scale = gpu.zeros::<f64>(n)?;
    unsafe {
        s.launch_builder(&gpu.function("fem_amg_sqrt")?).arg(&n).arg(&mut root).launch(cfg)?;
        s.launch_builder(&gpu.kernel::<f64>("reciprocal")?).arg(&n).arg(&root).arg(&mut scale).launch(gpu.grid::<f64>(n, 0))?;
    }
    let mut x = gpu.zeros::<f64>(n)?;
    let mut u = gpu.zeros::<f64>(n)?;
    let mut z = gpu.zeros::<f64>(n)?;
    let product = gpu.function("fem_amg_scaled_product")?;
    unsafe { s.launch_builder(&gpu.function("fem_amg_hash_start")?).arg(&n).arg(&mut x).launch(cfg) }?;
    let mut lambda = 0.0;
    for _ in 0..20 {
        let norm = gpu.norm2(&x)?;
        if norm == 0.0 {
            break;
        }
        let inv = 1.0 / norm;
        unsafe { s.launch_builder(&product).arg(&n).arg(&inv).arg(&x).arg(&scale).arg(&mut u).launch(cfg) }?;
        spmv(gpu, a, &u, &mut z)?;
        let one = 1.0f64;
        unsafe { s.launch_builder(&product).arg(&n).arg(&one).arg(&z).arg(&scale).arg(&mut x).launch(cfg) }?;
        lambda = gpu.norm2(&x)?;
    }
    Ok(1.05 * lambda)
}

/// `I − s D⁻¹A` on `a`'s pattern.
fn jacobi_step(gpu: &CudaBackend, a: &DeviceCsr, diag: &CudaSlice<f64>, scale: f64) -> Result<DeviceCsr> {
    // the pattern's copy, with values the kernel writes
    gpu.ensure_free(a.bytes())?;
    let s = gpu.stream();
    let mut step = DeviceCsr { n_rows: a.n_rows, n_cols: a.n_cols, row_ptr: s.clone_dtod(&a.row_ptr)?, col: s.clone_dtod(&a.col)?, val: s.alloc_zeros(a.nnz())? };
    let n = a.n_rows;
    unsafe { gpu.stream().launch_builder(&gpu.function("fem_amg_jacobi_step")?).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(&a.val).arg(diag).arg(&scale).arg(&mut step.val).launch(grid(gpu, n)) }?;
    Ok(step)
}

/// A copy of `a` on the device.
fn copy(gpu: &CudaBackend, a: &DeviceCsr) -> Result<DeviceCsr> {
    gpu.ensure_free(a.bytes())?;
    let s = gpu.stream();
    Ok(DeviceCsr { n_rows: a.n_rows, n_cols: a.n_cols, row_ptr: s.clone_dtod(&a.row_ptr)?, col: s.clone_dtod(&a.col)?, val: s.clone_dtod(&a.val)? })
}

/// A small matrix brought to the host.
fn download(gpu: &CudaBackend, a: &DeviceCsr) -> Result<Csr<f64>> {
    let s = gpu.stream();
    Ok(Csr { n_rows: a.n_rows, row_ptr: s.clone_dtoh(&a.row_ptr)?, col: s.clone_dtoh(&a.col)?, val: s.clone_dtoh(&a.val)? })
}

/// Sizes and complexities, as [`super::hierarchy`] reports them.
fn statistics(levels: &[Built], seconds: SetupSeconds) -> AmgStats {
    let stats: Vec<LevelStats> = levels.iter().map(|l| LevelStats { rows: l.a.n_rows, nonzeros: l.a.nnz() }).collect();
    let (n0, z0) = (stats[0].rows.max(1) as f64, stats[0].nonzeros.max(1) as f64);
    let grid_complexity = stats.iter().map(|l| l.rows as f64).sum::<f64>() / n0;
    let operator_complexity = stats.iter().map(|l| l.nonzeros as f64).sum::<f64>() / z0;
    AmgStats { levels: stats, operator_complexity, grid_complexity, seconds }
}

/// A built level as the multigrid cycles take it, in precision `T`.
fn store<T: Scalar>(gpu: &CudaBackend, l: Built) -> Result<StoredLevel<CudaBackend, T>> {
    let a: GpuCsr<T> = l.a.into_gpu(gpu, THREADS_PER_ROW, Some(&l.diag))?;
    let mut inv_diag = gpu.zeros::<T>(a.n_rows)?;
    if a.n_rows > 0 {
        let d = a.diag.as_ref().expect("stored with its diagonal");
        let f = gpu.kernel::<T>("reciprocal")?;
        let n = a.n_rows;
        unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(d).arg(&mut inv_diag).launch(gpu.grid::<T>(n, 0)) }?;
    }
    let p = match l.p {
        Some((p, pt)) => Some((Box::new(p.into_gpu::<T>(gpu, THREADS_PER_ROW, None)?) as _, Box::new(pt.into_gpu::<T>(gpu, THREADS_PER_ROW, None)?) as _)),
        None => None,
    };
    Ok(StoredLevel { a: Box::new(a), inv_diag, rho: l.rho, p })
}
