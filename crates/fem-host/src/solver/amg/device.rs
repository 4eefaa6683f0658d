//! Smoothed-aggregation set-up on the GPU, for a scalar or a vector field
//! (up to [`MAX_BLOCK`] unknowns a node) with any near-nullspace (the
//! constants, rigid-body modes): every stage of [`super::hierarchy`] runs
//! on the device, nothing but scalars comes back until the coarsest level
//! (a few hundred nodes) is inverted on the host. Validation, the node
//! graph, strength, aggregation and the fit of the near-nullspace on
//! every aggregate are the per-item functions of [`fem_kernels::amg`]
//! that the CPU set-up calls too, so both find the same aggregates and
//! prolongators; the products are cuSPARSE's ([`crate::sparse::spgemm`]).

use super::{defects, lap, AmgOptions, AmgStats, LevelStats, Nullspace, SetupSeconds, DEFECTS};
use crate::operator::LinearOperator;
use crate::operator::gpu::{csr_spmv, GpuCsr};
use crate::solver::multigrid::{Multigrid, StoredLevel};
use crate::sparse::spgemm::{DeviceCsr, Sparse};
use crate::{Backend, CudaBackend, Error, Result, Scalar};
use cudarc::driver::{CudaSlice, PushKernelArg};
use fem_kernels::amg::nodes::MAX_BLOCK;
use std::time::Instant;

/// Threads per row of `a`'s CSR products, from its average row: the
/// levels' rows hold 7 (P1) to 200 entries (the small coarse levels, where
/// a thread a row would leave the GPU waiting on a few long rows).
pub(crate) fn threads_per_row(a: &DeviceCsr) -> usize {
    GpuCsr::<f64>::default_threads_per_row(a.nnz(), a.n_rows)
}

/// One level on the way down: its operator, diagonal and ρ(D⁻¹A), and the
/// prolongation from the next coarser level with its transpose (as
/// [`StoredLevel`] holds them).
struct Built {
    a: DeviceCsr,
    diag: CudaSlice<f64>,
    rho: f64,
    p: Option<(DeviceCsr, DeviceCsr)>,
}

/// The hierarchy of the symmetric positive definite `a` (rows sorted,
/// `block` a node) with near-nullspace `b`, built on the GPU, as a
/// multigrid preconditioner in precision `T`. With `low`, the
/// prolongation from a low-order level (p-multigrid, as
/// [`super::low_order::build`]), that level comes first and `b` is its
/// near-nullspace. Errors as [`super::hierarchy`]'s; the smoothers are
/// Jacobi's and Chebyshev's (the others are set up from host matrices, on
/// the host).
pub fn build<T: Scalar>(gpu: &CudaBackend, a: &DeviceCsr, block: usize, b: &Nullspace, low: Option<&DeviceCsr>, o: &AmgOptions) -> Result<(Multigrid<CudaBackend, T>, AmgStats)> {
    let b_rows = low.map_or(a.n_rows, |p| p.n_cols);
    if !(1..=MAX_BLOCK).contains(&block) || a.n_rows % block != 0 || b.k == 0 || b.k > MAX_BLOCK || b.rows() != b_rows || low.is_some_and(|p| p.n_rows != a.n_rows) {
        return Err(Error::InvalidArgument(format!("AMG on the GPU: {} rows of {block} unknowns a node with {} near-nullspace vectors of {} rows", a.n_rows, b.k, b.rows())));
    }
    let mut seconds = SetupSeconds::default();
    let t = Instant::now();
    let sparse = Sparse::new(gpu)?;
    let diag = diagonal(gpu, a)?;
    check(gpu, a, &diag)?;
    seconds.strength += lap(t);
    let fine = Built { a: copy(gpu, a)?, diag, rho: 0.0, p: None };
    let mut levels = vec![fine];
    let (mut b, k, mut block) = (gpu.upload(&b.values)?, b.k, block);
    if let Some(p) = low {
        let top = levels.last_mut().expect("the finest level is there");
        let t = Instant::now();
        top.rho = spectral_radius(gpu, &top.a, &top.diag)?;
        seconds.smoothing += lap(t);
        let t = Instant::now();
        let p = copy(gpu, p)?;
        let (coarse, pt) = galerkin(gpu, &sparse, &top.a, &p)?;
        seconds.galerkin += lap(t);
        top.p = Some((p, pt));
        levels.push(coarse);
    }
    // the levels below a low-order one count as the host's below the operator
    while levels.len() < o.max_levels.max(1) + low.is_some() as usize {
        let top = levels.last_mut().expect("the finest level is there");
        if top.a.n_rows / block <= o.max_coarse {
            break;
        }
        let Some((coarse, coarse_b, rho, transfers)) = coarsen(gpu, &sparse, top, block, (&b, k), o, &mut seconds)? else { break };
        (top.rho, top.p) = (rho, Some(transfers));
        levels.push(coarse);
        (b, block) = (coarse_b, k);
    }
    if levels.len() == 1 && a.n_rows > o.cycle.dense_coarse {
        return Err(Error::InvalidArgument(format!("AMG found no coarser level for {} rows at strength threshold {} (lower it)", a.n_rows, o.strength)));
    }
    let t = Instant::now();
    let stats = statistics(&levels, seconds);
    let coarsest = levels.last().expect("a level").a.download(gpu)?;
    let stored = levels.into_iter().rev().map(|l| store(gpu, l)).collect::<Result<Vec<_>>>()?;
    let mut mg = Multigrid::from_stored(gpu, stored, o.cycle, coarsest.converted())?;
    mg.invert_coarsest(gpu, &coarsest.converted())?;
    let mut stats = stats;
    stats.seconds.upload = lap(t);
    Ok((mg, stats))
}

/// The next coarser level of `top` (`block` rows a node) with the `k`
/// near-nullspace vectors `b`, its own near-nullspace, ρ(D⁻¹A) of `top`
/// and the prolongation to `top` with its transpose; `None` where
/// aggregation gains nothing.
#[allow(clippy::type_complexity)]
fn coarsen(gpu: &CudaBackend, sparse: &Sparse, top: &Built, block: usize, (b, k): (&CudaSlice<f64>, usize), o: &AmgOptions, s: &mut SetupSeconds) -> Result<Option<(Built, CudaSlice<f64>, f64, (DeviceCsr, DeviceCsr))>> {
    let (a, n) = (&top.a, top.a.n_rows);
    let t = Instant::now();
    // a vector field aggregates its nodes: the graph of their couplings
    let nodes = if block > 1 { Some(node_graph(gpu, a, block)?) } else { None };
    let (graph, graph_diag) = match &nodes {
        Some((g, d)) => (g, d),
        None => (a, &top.diag),
    };
    let strong = strength(gpu, graph, graph_diag, o.strength)?;
    s.strength += lap(t);
    let t = Instant::now();
    let (agg, n_agg) = aggregate(gpu, graph, &strong)?;
    drop((strong, nodes));
    s.aggregation += lap(t);
    if n_agg == 0 || n_agg * k >= n {
        return Ok(None);
    }
    let t = Instant::now();
    let (tp, coarse_b) = tentative(gpu, &agg, n_agg, block, (b, k))?;
    s.tentative += lap(t);
    let t = Instant::now();
    let rho = spectral_radius(gpu, a, &top.diag)?;
    let step = jacobi_step(gpu, a, &top.diag, o.prolongation_omega / rho)?;
    let p = sparse.multiply(gpu, &step, &tp)?;
    drop((step, tp));
    s.smoothing += lap(t);
    let t = Instant::now();
    let (coarse, pt) = galerkin(gpu, sparse, a, &p)?;
    s.galerkin += lap(t);
    Ok(Some((coarse, coarse_b, rho, (p, pt))))
}

/// The level below `a` through `p`: `Pᵀ A P` with its diagonal, where a
/// row of zeros or of nothing (a dependent near-nullspace vector's, a
/// held vertex's) is a unit diagonal as the host's [`super::galerkin`]
/// makes it; and `Pᵀ`.
fn galerkin(gpu: &CudaBackend, sparse: &Sparse, a: &DeviceCsr, p: &DeviceCsr) -> Result<(Built, DeviceCsr)> {
    let pt = sparse.transpose(gpu, p)?;
    let ap = sparse.multiply(gpu, a, p)?;
    let coarse = unit_rows(gpu, sparse.multiply(gpu, &pt, &ap)?)?;
    drop(ap);
    let diag = diagonal(gpu, &coarse)?;
    Ok((Built { a: coarse, diag, rho: 0.0, p: None }, pt))
}

/// `a` with a unit diagonal for each row of zeros or of nothing (`a`
/// itself where there is none).
pub(crate) fn unit_rows(gpu: &CudaBackend, a: DeviceCsr) -> Result<DeviceCsr> {
    let (s, n) = (gpu.stream(), a.n_rows);
    let mut len = s.alloc_zeros::<u32>(n)?;
    let mut found = s.alloc_zeros::<u32>(1)?;
    unsafe { s.launch_builder(&gpu.function("fem_amg_unit_row_lengths")?).arg(&n).arg(&a.row_ptr).arg(&a.val).arg(&mut len).arg(&mut found).launch(gpu.per_item(n)) }?;
    if s.clone_dtoh(&found)?[0] == 0 {
        return Ok(a);
    }
    let (row_ptr, nnz) = gpu.exclusive_scan(&len)?;
    let mut out = DeviceCsr { n_rows: n, n_cols: a.n_cols, row_ptr, col: s.alloc_zeros(nnz as usize)?, val: s.alloc_zeros(nnz as usize)? };
    unsafe { s.launch_builder(&gpu.function("fem_amg_unit_rows")?).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(&a.val).arg(&out.row_ptr).arg(&mut out.col).arg(&mut out.val).launch(gpu.per_item(n)) }?;
    Ok(out)
}

pub(crate) fn diagonal(gpu: &CudaBackend, a: &DeviceCsr) -> Result<CudaSlice<f64>> {
    crate::operator::gpu::csr_diagonal(gpu, &a.row_ptr, &a.col, &a.val)
}

/// Refuses, as the CPU set-up does, an operator that is not symmetric
/// positive definite as far as rows can tell.
fn check(gpu: &CudaBackend, a: &DeviceCsr, diag: &CudaSlice<f64>) -> Result<()> {
    let s = gpu.stream();
    let mut first = s.clone_htod(&[u32::MAX; 4])?;
    let n = a.n_rows;
    unsafe { s.launch_builder(&gpu.function("fem_amg_defects")?).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(&a.val).arg(diag).arg(&mut first).launch(gpu.per_item(n)) }?;
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
pub(crate) fn strength(gpu: &CudaBackend, a: &DeviceCsr, diag: &CudaSlice<f64>, theta: f64) -> Result<CudaSlice<u8>> {
    let mut strong = gpu.stream().alloc_zeros::<u8>(a.nnz().max(1))?;
    let n = a.n_rows;
    unsafe { gpu.stream().launch_builder(&gpu.function("fem_amg_strength")?).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(&a.val).arg(diag).arg(&theta).arg(&mut strong).launch(gpu.per_item(n)) }?;
    Ok(strong)
}

/// Every node's aggregate ([`fem_kernels::amg::NONE`] for none) and the
/// number of aggregates, as [`super::mis::aggregate`] finds them.
pub(crate) fn aggregate(gpu: &CudaBackend, a: &DeviceCsr, strong: &CudaSlice<u8>) -> Result<(CudaSlice<u32>, usize)> {
    let (s, n, cfg) = (gpu.stream(), a.n_rows, gpu.per_item(a.n_rows));
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

/// The graph of the nodes of `a` (`block` rows each) weighted by the
/// Frobenius norms of their couplings, and its diagonal.
pub(crate) fn node_graph(gpu: &CudaBackend, a: &DeviceCsr, block: usize) -> Result<(DeviceCsr, CudaSlice<f64>)> {
    let (s, n) = (gpu.stream(), a.n_rows / block);
    let mut count = s.alloc_zeros::<u32>(n)?;
    unsafe { s.launch_builder(&gpu.function("fem_amg_node_count")?).arg(&n).arg(&block).arg(&a.row_ptr).arg(&a.col).arg(&mut count).launch(gpu.per_item(n)) }?;
    let (row_ptr, nnz) = gpu.exclusive_scan(&count)?;
    drop(count);
    let mut g = DeviceCsr { n_rows: n, n_cols: n, row_ptr, col: s.alloc_zeros(nnz as usize)?, val: s.alloc_zeros(nnz as usize)? };
    unsafe { s.launch_builder(&gpu.function("fem_amg_node_couplings")?).arg(&n).arg(&block).arg(&a.row_ptr).arg(&a.col).arg(&a.val).arg(&g.row_ptr).arg(&mut g.col).arg(&mut g.val).launch(gpu.per_item(n)) }?;
    let diag = diagonal(gpu, &g)?;
    Ok((g, diag))
}

/// The tentative prolongator of the `k` near-nullspace vectors `b` on the
/// aggregates `agg` of nodes of `block` rows (`k` entries in every
/// aggregated row, zeros kept) and the coarse near-nullspace (`k` vectors
/// on `n_agg·k` rows), as [`super::tentative::tentative`] fits them.
pub(crate) fn tentative(gpu: &CudaBackend, agg: &CudaSlice<u32>, n_agg: usize, block: usize, (b, k): (&CudaSlice<f64>, usize)) -> Result<(DeviceCsr, CudaSlice<f64>)> {
    let (s, n, cfg) = (gpu.stream(), agg.len(), gpu.per_item(agg.len()));
    let rows = n * block;
    let mut size = s.alloc_zeros::<u32>(n_agg)?;
    let mut row_len = s.alloc_zeros::<u32>(rows)?;
    let k32 = k as u32;
    unsafe { s.launch_builder(&gpu.function("fem_amg_aggregate_sizes")?).arg(&n).arg(&block).arg(&k32).arg(agg).arg(&mut size).arg(&mut row_len).launch(cfg) }?;
    let (start, aggregated) = gpu.exclusive_scan(&size)?;
    let (row_ptr, nnz) = gpu.exclusive_scan(&row_len)?;
    drop(row_len);
    let mut fill = size; // reused: the sizes are in `start` now
    s.memset_zeros(&mut fill)?;
    let mut nodes = s.alloc_zeros::<u32>((aggregated as usize).max(1))?;
    unsafe { s.launch_builder(&gpu.function("fem_amg_aggregate_nodes")?).arg(&n).arg(agg).arg(&start).arg(&mut fill).arg(&mut nodes).launch(cfg) }?;
    let mut col = s.alloc_zeros::<u32>(nnz as usize)?;
    let mut val = s.alloc_zeros::<f64>(nnz as usize)?;
    let mut coarse = s.alloc_zeros::<f64>(n_agg * k * k)?;
    unsafe {
        s.launch_builder(&gpu.function("fem_amg_fit")?).arg(&n_agg).arg(&start).arg(&mut nodes).arg(&block).arg(&k).arg(b).arg(&row_ptr).arg(&mut col).arg(&mut val).arg(&mut coarse).launch(gpu.per_item(n_agg))?;
    }
    Ok((DeviceCsr { n_rows: rows, n_cols: n_agg * k, row_ptr, col, val }, coarse))
}

/// `y = A x` on the device.
fn spmv(gpu: &CudaBackend, a: &DeviceCsr, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
    csr_spmv(gpu, threads_per_row(a), &a.row_ptr, &a.col, &a.val, x, y)
}

/// A device CSR matrix as an operator, for the power iterations.
pub(crate) struct Product<'a>(pub(crate) &'a DeviceCsr);

impl LinearOperator<CudaBackend, f64> for Product<'_> {
    fn rows(&self) -> usize {
        self.0.n_rows
    }
    fn apply(&self, gpu: &CudaBackend, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        spmv(gpu, self.0, x, y)
    }
    fn name(&self) -> String {
        "csr".into()
    }
}

/// ρ(D⁻¹A) as [`super::spectral_radius`] estimates it, on the device:
/// the same iterations from the same start.
fn spectral_radius(gpu: &CudaBackend, a: &DeviceCsr, diag: &CudaSlice<f64>) -> Result<f64> {
    let (s, n, cfg) = (gpu.stream(), a.n_rows, gpu.per_item(a.n_rows));
    // D^{-1/2} (the diagonal is positive: checked on the finest level, and
    // a Galerkin product keeps it so)
    let mut root = s.clone_dtod(diag)?;
    let mut scale = gpu.zeros::<f64>(n)?;
    unsafe {
        s.launch_builder(&gpu.function("fem_amg_sqrt")?).arg(&n).arg(&mut root).launch(cfg)?;
        s.launch_builder(&gpu.kernel::<f64>("reciprocal")?).arg(&n).arg(&root).arg(&mut scale).launch(gpu.grid::<f64>(n, 0))?;
    }
    crate::solver::chebyshev::spectral_radius(gpu, &Product(a), &scale, &super::power_start(n))
}

/// `I − s D⁻¹A` on `a`'s pattern.
pub(crate) fn jacobi_step(gpu: &CudaBackend, a: &DeviceCsr, diag: &CudaSlice<f64>, scale: f64) -> Result<DeviceCsr> {
    // the pattern's copy, with values the kernel writes
    gpu.ensure_free(a.bytes())?;
    let s = gpu.stream();
    let mut step = DeviceCsr { n_rows: a.n_rows, n_cols: a.n_cols, row_ptr: s.clone_dtod(&a.row_ptr)?, col: s.clone_dtod(&a.col)?, val: s.alloc_zeros(a.nnz())? };
    let n = a.n_rows;
    unsafe { gpu.stream().launch_builder(&gpu.function("fem_amg_jacobi_step")?).arg(&n).arg(&a.row_ptr).arg(&a.col).arg(&a.val).arg(diag).arg(&scale).arg(&mut step.val).launch(gpu.per_item(n)) }?;
    Ok(step)
}

/// A copy of `a` on the device.
fn copy(gpu: &CudaBackend, a: &DeviceCsr) -> Result<DeviceCsr> {
    gpu.ensure_free(a.bytes())?;
    let s = gpu.stream();
    Ok(DeviceCsr { n_rows: a.n_rows, n_cols: a.n_cols, row_ptr: s.clone_dtod(&a.row_ptr)?, col: s.clone_dtod(&a.col)?, val: s.clone_dtod(&a.val)? })
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
    let tpr = threads_per_row(&l.a);
    let a: GpuCsr<T> = l.a.into_gpu(gpu, tpr, Some(&l.diag))?;
    let mut inv_diag = gpu.zeros::<T>(a.n_rows)?;
    if a.n_rows > 0 {
        let d = a.diag.as_ref().expect("stored with its diagonal");
        let f = gpu.kernel::<T>("reciprocal")?;
        let n = a.n_rows;
        unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(d).arg(&mut inv_diag).launch(gpu.grid::<T>(n, 0)) }?;
    }
    let p = match l.p {
        Some((p, pt)) => {
            let (tp, tpt) = (threads_per_row(&p), threads_per_row(&pt));
            Some((Box::new(p.into_gpu::<T>(gpu, tp, None)?) as _, Box::new(pt.into_gpu::<T>(gpu, tpt, None)?) as _))
        }
        None => None,
    };
    Ok(StoredLevel { a: Box::new(a), inv_diag, rho: l.rho, p })
}
