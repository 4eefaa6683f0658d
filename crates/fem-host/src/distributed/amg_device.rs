//! The partitioned hierarchy of [`super::amg`] set up on each rank's GPU:
//! the one-GPU set-up's stages ([`crate::solver::amg::device`]) on the
//! rank's rows, with only the rows that cross ranks going through the
//! hosts. Aggregation reads the coupling among a rank's owned rows, as on
//! the hosts, so both find the same aggregates. A product that reads
//! ghost rows (`A T`, `A P`, `R (A P)`) takes them from their owners:
//! the rows a rank sends are taken out on its GPU, exchanged through
//! [`rows::exchange_rows`] and stacked under its own. The restriction is
//! the rank's coarse rows of `Pᵀ` over its owned and ghost fine rows, so
//! no Galerkin entry is summed across ranks. Coarse columns are numbered
//! locally on the device from the scan of the ghost columns' flags, in
//! [`Layout`]'s order (owned, then ghosts ascending).

use super::amg::{agreed, on_hosts, radius_of, statistics, whole, Cycles, Input, PartitionedSetup, Stored};
use super::backend::Distributed;
use super::comm::Communicator;
use super::layout::{starts, Layout};
use super::rows;
use crate::operator::csr::Csr;
use crate::solver::amg::device::{aggregate, diagonal, jacobi_step, node_graph, strength, tentative, threads_per_row, unit_rows, Product};
use crate::solver::amg::{gpu_sets_up, lap, AmgOptions, SetupSeconds};
use crate::solver::multigrid::Matrix;
use crate::sparse::spgemm::{self, zeros_u32, DeviceCsr, Sparse};
use crate::{Backend, CudaBackend, Error, Result};
use cudarc::driver::{CudaSlice, PushKernelArg};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

impl PartitionedSetup for CudaBackend {
    fn partitioned<'a>(d: &Distributed<'a, Self>, input: Input<'_, Self>, o: &AmgOptions) -> Result<Cycles<'a, Self>> {
        let k = input.low.map_or(input.nullspace.k, |l| l.nullspace.k);
        match gpu_sets_up(input.block, k, o) {
            true => on_gpus(d, input, o),
            false => on_hosts(d, input, o),
        }
    }
}

/// One level on the device: its rows across ranks, its operator (every
/// local row, the ghost rows empty; local columns), its diagonal (zeros
/// on the ghost rows), ρ(D⁻¹A), and the prolongation from the next
/// coarser level (this level's rows) with the restriction to it.
struct Built {
    layout: Layout,
    a: DeviceCsr,
    diag: CudaSlice<f64>,
    rho: f64,
    transfer: Option<(DeviceCsr, DeviceCsr)>,
}

/// The partitioned hierarchy of `input`'s tangent set up on every rank's
/// GPU, stored there. Collective: a bad input or a level that cannot be
/// coarsened is an error on every rank; a device error on one rank (out
/// of memory in a product) is not agreed yet, and leaves the others
/// waiting in their next exchange.
pub fn on_gpus<'a>(d: &Distributed<'a, CudaBackend>, input: Input<'_, CudaBackend>, o: &AmgOptions) -> Result<Cycles<'a, CudaBackend>> {
    let (gpu, comm, layout) = (d.inner, d.comm, input.layout);
    let (owned, block) = (layout.owned, input.block);
    let good = input.pattern.n_rows == layout.rows() && block > 0 && owned % block == 0 && input.nullspace.rows() == owned && input.values.len() == input.pattern.nnz();
    agreed(comm, "a tangent whose rows are not the layout's or not nodes", good)?;
    let mut seconds = SetupSeconds::default();
    let t = Instant::now();
    let sparse = Sparse::new(gpu)?;
    let a = owned_tangent(gpu, input.pattern, input.values, owned)?;
    let diag = diagonal(gpu, &a)?;
    seconds.strength += lap(t);
    let mut levels = vec![Built { layout: layout.clone(), a, diag, rho: input.rho, transfer: None }];
    let (mut b, mut k, mut block) = (gpu.upload(&input.nullspace.values)?, input.nullspace.k, block);
    let mut rho_known = true;
    if let Some(low) = input.low {
        let top = levels.last_mut().expect("the finest level");
        let t = Instant::now();
        let p = DeviceCsr::upload(gpu, &low.p, *low.starts.last().expect("one start"))?;
        let (coarse, transfer) = coarsen(gpu, &sparse, comm, top, p, &low.starts)?;
        seconds.galerkin += lap(t);
        top.transfer = Some(transfer);
        levels.push(coarse);
        (b, k, rho_known) = (gpu.upload(&low.nullspace.values)?, low.nullspace.k, false);
    }
    while levels.len() < o.max_levels.max(1) {
        let top = levels.last_mut().expect("the finest level");
        if top.layout.total() / block <= o.max_coarse {
            break;
        }
        let Some((coarse, coarse_b)) = coarser(d, &sparse, top, block, (&b, k), rho_known, input.link.clone(), o, &mut seconds)? else { break };
        levels.push(coarse);
        (b, block, rho_known) = (coarse_b, k, false);
    }
    let last = levels.last().expect("a level");
    let coarsest = whole(input.cpu, comm, &last.layout, &last.layout, &last.a.download(gpu)?)?;
    agreed(comm, &format!("no coarser level for {} rows (lower the strength threshold)", coarsest.n_rows), coarsest.n_rows <= o.cycle.dense_coarse.max(o.max_coarse * block))?;
    let sizes: Vec<(usize, usize)> = levels.iter().map(|l| (l.layout.owned, l.a.nnz())).collect();
    let mut stats = statistics(comm, &sizes, seconds)?;
    let t = Instant::now();
    let layouts: Vec<Layout> = levels.iter().map(|l| l.layout.clone()).collect();
    let mut finest = Some(input.finest);
    let stored = levels.into_iter().map(|l| store(gpu, l, finest.take())).collect::<Result<Vec<_>>>()?;
    let (mg, halos) = super::amg::cycles(d, &layouts.iter().collect::<Vec<_>>(), stored, &coarsest, input.link, o)?;
    stats.seconds.upload = lap(t);
    Ok(Cycles { mg, halos, stats })
}

/// The next coarser level of `top` (`block` rows a node, near-nullspace
/// `b` of `k` vectors on its owned rows) and that level's
/// near-nullspace; `top` gets its ρ (estimated unless `rho_known`) and
/// its transfers. `None` where aggregation gains nothing on any rank.
#[allow(clippy::too_many_arguments)]
fn coarser(d: &Distributed<'_, CudaBackend>, sparse: &Sparse, top: &mut Built, block: usize, (b, k): (&CudaSlice<f64>, usize), rho_known: bool, link: Option<Rc<<CudaBackend as super::halo::HaloBackend>::Link>>, o: &AmgOptions, s: &mut SetupSeconds) -> Result<Option<(Built, CudaSlice<f64>)>> {
    let (gpu, comm) = (d.inner, d.comm);
    let owned = top.layout.owned;
    let t = Instant::now();
    // each rank aggregates its own rows, from their coupling among themselves
    let own = owned_block(gpu, &top.a, owned)?;
    let (graph, graph_diag) = match block > 1 {
        true => node_graph(gpu, &own, block)?,
        false => {
            let diag = diagonal(gpu, &own)?;
            (own, diag)
        }
    };
    let strong = strength(gpu, &graph, &graph_diag, o.strength)?;
    s.strength += lap(t);
    let t = Instant::now();
    let (agg, n_agg) = aggregate(gpu, &graph, &strong)?;
    drop((strong, graph, graph_diag));
    s.aggregation += lap(t);
    let coarse = comm.sum_one((n_agg * k) as f64)? as usize;
    if coarse == 0 || coarse >= top.layout.total() {
        return Ok(None);
    }
    let t = Instant::now();
    let cstarts = starts(comm, n_agg * k)?;
    let (mut tp, coarse_b) = match n_agg {
        0 => (DeviceCsr::empty(gpu, owned, coarse)?, gpu.zeros::<f64>(0)?),
        _ => tentative(gpu, &agg, n_agg, block, (b, k))?,
    };
    shift_columns(gpu, &mut tp, cstarts[comm.rank()] as u32, coarse)?;
    let t_ghost = ghost_rows(gpu, comm, &top.layout, &tp)?;
    let t_stack = spgemm::stack(gpu, coarse, vec![tp, t_ghost])?;
    s.tentative += lap(t);
    let t = Instant::now();
    if !rho_known {
        top.rho = radius(d, &top.layout, &top.a, &top.diag, link)?;
    }
    let step = jacobi_step(gpu, &top.a, &top.diag, o.prolongation_omega / top.rho)?;
    let p = truncated(gpu, sparse.multiply(gpu, &step, &t_stack)?, owned)?;
    drop((step, t_stack));
    s.smoothing += lap(t);
    let t = Instant::now();
    let (level, transfer) = coarsen(gpu, sparse, comm, top, p, &cstarts)?;
    s.galerkin += lap(t);
    top.transfer = Some(transfer);
    Ok(Some((level, coarse_b)))
}

/// The level below `fine` through the prolongation `p` (its owned rows,
/// global columns; coarse rows split as `cstarts` says) and the
/// transfers between them: `P` on the fine rows and `R` on the coarse
/// ones, in local columns.
fn coarsen(gpu: &CudaBackend, sparse: &Sparse, comm: &dyn Communicator, fine: &Built, p: DeviceCsr, cstarts: &[usize]) -> Result<(Built, (DeviceCsr, DeviceCsr))> {
    let layout = &fine.layout;
    let (owned, width) = (layout.owned, *cstarts.last().expect("one start"));
    let (cfirst, cowned) = (cstarts[comm.rank()], cstarts[comm.rank() + 1] - cstarts[comm.rank()]);
    let p_ghost = ghost_rows(gpu, comm, layout, &p)?;
    let p_all = spgemm::stack(gpu, width, vec![p, p_ghost])?;
    let ap = truncated(gpu, sparse.multiply(gpu, &fine.a, &p_all)?, owned)?;
    let ap_ghost = ghost_rows(gpu, comm, layout, &ap)?;
    let ap_all = spgemm::stack(gpu, width, vec![ap, ap_ghost])?;
    // every fine row a coarse row of this rank restricts from is held
    // here: a fine row prolongs to an aggregate through its couplings to
    // the aggregate's rows, all owned here
    let pt = sparse.transpose(gpu, &p_all)?;
    let r = spgemm::rows(gpu, &pt, cfirst, cfirst + cowned)?;
    drop(pt);
    let mut g = sparse.multiply(gpu, &r, &ap_all)?;
    drop(ap_all);
    let mut p = truncated(gpu, p_all, owned)?;
    // the coarse ghosts: what the Galerkin rows and the prolongation read
    let s = gpu.stream();
    let mut flags = zeros_u32(gpu, width)?;
    for m in [&g, &p] {
        let (n, first, end) = (m.nnz(), cfirst as u32, (cfirst + cowned) as u32);
        if n > 0 {
            unsafe { s.launch_builder(&gpu.function("fem_amg_mark_outside")?).arg(&n).arg(&m.col).arg(&first).arg(&end).arg(&mut flags).launch(gpu.per_item(n)) }?;
        }
    }
    let ghosts: Vec<u32> = s.clone_dtoh(&flags)?.iter().enumerate().filter(|(_, &f)| f != 0).map(|(c, _)| c as u32).collect();
    let clayout = Layout::new(comm, cowned, ghosts)?;
    let (ids, _) = gpu.exclusive_scan(&flags)?;
    drop(flags);
    for m in [&mut g, &mut p] {
        let (n, first, own) = (m.nnz(), cfirst as u32, cowned as u32);
        if n > 0 {
            unsafe { s.launch_builder(&gpu.function("fem_amg_localize")?).arg(&n).arg(&mut m.col).arg(&first).arg(&own).arg(&ids).launch(gpu.per_item(n)) }?;
        }
        m.n_cols = clayout.rows();
    }
    // local numbers do not keep the order of global ones: two transposes
    // sort each row, as the hosts' levels are
    let g = sparse.transpose(gpu, &unit_rows(gpu, g)?)?;
    let g = padded(gpu, sparse.transpose(gpu, &g)?, clayout.rows())?;
    let diag = diagonal(gpu, &g)?;
    let transfer = (padded(gpu, p, layout.rows())?, padded(gpu, r, clayout.rows())?);
    Ok((Built { layout: clayout, a: g, diag, rho: 0.0, transfer: None }, transfer))
}

/// The rows of `layout`'s ghosts, in its order, from their owners' `m`
/// (owned rows, global columns): each rank's sent rows taken out on its
/// GPU, exchanged through the hosts. Collective.
fn ghost_rows(gpu: &CudaBackend, comm: &dyn Communicator, layout: &Layout, m: &DeviceCsr) -> Result<DeviceCsr> {
    let list = rows::sent_rows(layout);
    let sent = match list.is_empty() {
        true => Csr { n_rows: 0, row_ptr: vec![0], col: Vec::new(), val: Vec::new() },
        false => take(gpu, m, &list)?.download(gpu)?,
    };
    DeviceCsr::upload(gpu, &rows::exchange_rows(comm, layout, &sent)?, m.n_cols)
}

/// The matrix of `m`'s rows `list` in turn.
fn take(gpu: &CudaBackend, m: &DeviceCsr, list: &[u32]) -> Result<DeviceCsr> {
    let (n, rows) = (list.len(), gpu.htod(list)?);
    let mut len = zeros_u32(gpu, n)?;
    let s = gpu.stream();
    unsafe { s.launch_builder(&gpu.function("fem_amg_take_lengths")?).arg(&n).arg(&rows).arg(&m.row_ptr).arg(&mut len).launch(gpu.per_item(n)) }?;
    let (row_ptr, nnz) = gpu.exclusive_scan(&len)?;
    let mut out = DeviceCsr { n_rows: n, n_cols: m.n_cols, row_ptr, col: zeros_u32(gpu, nnz as usize)?, val: gpu.zeros(nnz as usize)? };
    unsafe { s.launch_builder(&gpu.function("fem_amg_take")?).arg(&n).arg(&rows).arg(&m.row_ptr).arg(&m.col).arg(&m.val).arg(&out.row_ptr).arg(&mut out.col).arg(&mut out.val).launch(gpu.per_item(n)) }?;
    Ok(out)
}

/// The first `owned` rows of `a` in columns below `owned`: the coupling
/// among a rank's owned rows, which its aggregation reads.
fn owned_block(gpu: &CudaBackend, a: &DeviceCsr, owned: usize) -> Result<DeviceCsr> {
    let (n, limit) = (owned, owned as u32);
    let mut len = zeros_u32(gpu, n)?;
    let s = gpu.stream();
    if n == 0 {
        return DeviceCsr::empty(gpu, 0, 0);
    }
    unsafe { s.launch_builder(&gpu.function("fem_amg_block_lengths")?).arg(&n).arg(&limit).arg(&a.row_ptr).arg(&a.col).arg(&mut len).launch(gpu.per_item(n)) }?;
    let (row_ptr, nnz) = gpu.exclusive_scan(&len)?;
    let mut out = DeviceCsr { n_rows: n, n_cols: n, row_ptr, col: zeros_u32(gpu, nnz as usize)?, val: gpu.zeros(nnz as usize)? };
    unsafe { s.launch_builder(&gpu.function("fem_amg_block_entries")?).arg(&n).arg(&limit).arg(&a.row_ptr).arg(&a.col).arg(&a.val).arg(&out.row_ptr).arg(&mut out.col).arg(&mut out.val).launch(gpu.per_item(n)) }?;
    Ok(out)
}

/// The tangent's owned rows (its pattern's, values on the device) with
/// its ghost rows empty: the finest level.
fn owned_tangent(gpu: &CudaBackend, pattern: &Csr<f64>, values: &CudaSlice<f64>, owned: usize) -> Result<DeviceCsr> {
    let end = pattern.row_ptr[owned] as usize;
    let mut row_ptr = pattern.row_ptr[..=owned].to_vec();
    row_ptr.resize(pattern.n_rows + 1, end as u32);
    let mut val = gpu.zeros::<f64>(end)?;
    if end > 0 {
        gpu.stream().memcpy_dtod(&values.slice(..end), &mut val)?;
    }
    Ok(DeviceCsr { n_rows: pattern.n_rows, n_cols: pattern.n_rows, row_ptr: gpu.htod(&row_ptr)?, col: gpu.htod(&pattern.col[..end])?, val })
}

/// `m` with `shift` added to its columns, now `n_cols` of them.
fn shift_columns(gpu: &CudaBackend, m: &mut DeviceCsr, shift: u32, n_cols: usize) -> Result<()> {
    if m.nnz() > 0 {
        let col = gpu.stream().clone_dtod(&m.col)?;
        spgemm::shift(gpu, &col.slice(..), shift, &mut m.col.slice_mut(..))?;
    }
    m.n_cols = n_cols;
    Ok(())
}

/// The first `owned` rows of `m` (its entries kept as they are where the
/// later rows are empty).
fn truncated(gpu: &CudaBackend, m: DeviceCsr, owned: usize) -> Result<DeviceCsr> {
    let s = gpu.stream();
    let end = s.clone_dtoh(&m.row_ptr.slice(owned..=owned))?[0] as usize;
    if end < m.nnz() {
        return spgemm::rows(gpu, &m, 0, owned);
    }
    let row_ptr = s.clone_dtod(&m.row_ptr.slice(..=owned))?;
    Ok(DeviceCsr { n_rows: owned, row_ptr, ..m })
}

/// `m` with empty rows after its own, `rows` in all: its entries as they are.
fn padded(gpu: &CudaBackend, m: DeviceCsr, rows: usize) -> Result<DeviceCsr> {
    let (s, n, nnz) = (gpu.stream(), m.n_rows, m.nnz() as u32);
    if rows == n {
        return Ok(m);
    }
    let mut row_ptr = zeros_u32(gpu, rows + 1)?;
    s.memcpy_dtod(&m.row_ptr, &mut row_ptr.slice_mut(..=n))?;
    let tail = zeros_u32(gpu, rows - n)?;
    spgemm::shift(gpu, &tail.slice(..), nnz, &mut row_ptr.slice_mut(n + 1..))?;
    Ok(DeviceCsr { n_rows: rows, row_ptr, ..m })
}



/// ρ(D⁻¹A) of the level `a` (diagonal `diag`) across ranks, as the hosts
/// estimate it ([`radius_of`]).
fn radius(d: &Distributed<'_, CudaBackend>, layout: &Layout, a: &DeviceCsr, diag: &CudaSlice<f64>, link: Option<Rc<<CudaBackend as super::halo::HaloBackend>::Link>>) -> Result<f64> {
    radius_of(d.inner, d.comm, layout, &Product(a), &d.inner.download(diag)?, link)
}

/// A level as the cycles take it: its operator `finest` where the tangent
/// is already stored, its inverse diagonal over its owned rows.
fn store(gpu: &CudaBackend, l: Built, finest: Option<Rc<RefCell<Matrix<CudaBackend, f64>>>>) -> Result<Stored<CudaBackend>> {
    let (rows, owned) = (l.layout.rows(), l.layout.owned);
    let mut inv_diag = gpu.zeros::<f64>(rows)?;
    if owned > 0 {
        let f = gpu.kernel::<f64>("reciprocal")?;
        unsafe { gpu.stream().launch_builder(&f).arg(&owned).arg(&l.diag).arg(&mut inv_diag).launch(gpu.grid::<f64>(owned, 0)) }?;
    }
    let matrix = |m: DeviceCsr, diag: Option<&CudaSlice<f64>>| -> Result<Rc<RefCell<Matrix<CudaBackend, f64>>>> {
        let tpr = threads_per_row(&m);
        Ok(Rc::new(RefCell::new(Box::new(m.into_gpu::<f64>(gpu, tpr, diag)?))))
    };
    let a = match finest {
        Some(m) => m,
        None => matrix(l.a, Some(&l.diag))?,
    };
    let transfer = l.transfer.map(|(p, r)| Ok::<_, Error>((matrix(p, None)?, matrix(r, None)?))).transpose()?;
    Ok(Stored { a, inv_diag, rho: l.rho, transfer })
}
