//! Smoothed-aggregation AMG across ranks ([`crate::solver::amg`] on one),
//! with a partitioned hierarchy: every level's rows stay with the rank
//! that owns them, each level has its own ghost rows and halo
//! ([`Layout`]), and the cycles run as [`Multigrid`]'s do on
//! [`Distributed`] vectors, the halo exchanged before every product.
//!
//! Each rank aggregates its own rows (uncoupled aggregation, as MueLu and
//! ML do by default): aggregates never straddle ranks, so the tentative
//! prolongator is local. Its Jacobi smoothing `P = (I − ω/ρ D⁻¹A) T`
//! reads the tentative rows of the ghosts, and `A P` the rows of `P` of
//! the ghosts ([`rows::ghost_rows`]); the Galerkin product's and the
//! restriction `R = Pᵀ`'s entries go to the owners of their coarse rows
//! ([`rows::sum_to_owners`]). ρ(D⁻¹A) comes from power iterations with
//! global norms. The coarsest level is gathered onto every rank and
//! inverted densely there: its solve is one all-gather of the right-hand
//! side ([`Gathered`]).

use super::backend::Distributed;
use super::comm::Communicator;
use super::halo::{Halo, HaloBackend};
use super::layout::{starts, Layout};
use super::operator::{Gathered, HaloMatrix, HaloOperator};
use super::rows;
use crate::operator::csr::Csr;
use crate::solver::amg::{aggregates, lap, product, tentative, AmgOptions, AmgStats, LevelStats, LowOrder, Nullspace};
use crate::solver::multigrid::{Matrix, Multigrid, StoredLevel};
use crate::solver::transfer::transpose;
use crate::solver::{chebyshev, PrecondOps};
use crate::{CpuBackend, Error, Result};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

/// One level of a partitioned hierarchy, on the host.
pub struct Level {
    /// Its rows across ranks.
    pub layout: Layout,
    /// Its operator's owned rows (the ghost rows empty), local columns.
    pub a: Csr<f64>,
    /// ρ(D⁻¹A) of the whole operator (not kept on the coarsest).
    pub rho: f64,
}

/// The transfers between a level and the next coarser one.
pub struct Transfer {
    /// Prolongation: the fine level's owned rows, the coarse level's local
    /// columns.
    pub p: Csr<f64>,
    /// Restriction `Pᵀ`: the coarse level's owned rows, the fine level's
    /// local columns.
    pub r: Csr<f64>,
}

/// A partitioned hierarchy: levels finest first, the transfers between
/// consecutive ones, and the coarsest operator whole (every rank's rows).
pub struct Hierarchy {
    /// Finest first.
    pub levels: Vec<Level>,
    /// `transfers[l]` between `levels[l]` and `levels[l + 1]`.
    pub transfers: Vec<Transfer>,
    /// The coarsest operator, all its rows, global columns.
    pub coarsest: Csr<f64>,
    /// Sizes over all ranks, complexities, this rank's set-up seconds.
    pub stats: AmgStats,
}

/// The matrix of `pattern` with values `val`, only its first `owned` rows
/// kept (the rest empty): a piece's tangent, whose ghost rows are partial
/// sums.
pub fn owned_rows(pattern: &Csr<f64>, mut val: Vec<f64>, owned: usize) -> Csr<f64> {
    let end = pattern.row_ptr[owned] as usize;
    let mut row_ptr = pattern.row_ptr[..=owned].to_vec();
    row_ptr.resize(pattern.n_rows + 1, end as u32);
    val.truncate(end);
    Csr { n_rows: pattern.n_rows, row_ptr, col: pattern.col[..end].to_vec(), val }
}

/// The first coarsening of a high-order operator across ranks
/// ([`crate::solver::amg::low_order`] on one): the vertex interpolation
/// from the mesh's P1/Q1 functions, whose unknowns belong to the owners of
/// the vertices' nodes.
#[derive(Clone, Debug)]
pub struct LowLevel {
    /// The prolongation's owned rows, global columns.
    pub p: Csr<f64>,
    /// Every rank's first low-order row, and the total last.
    pub starts: Vec<usize>,
    /// The near-nullspace on this rank's low-order rows.
    pub nullspace: Nullspace,
}

impl LowLevel {
    /// The low-order level of `low` (built on this rank's piece, whose
    /// rows `layout` numbers, `nc` a node). Collective.
    pub fn new(comm: &dyn Communicator, layout: &Layout, low: &LowOrder, nc: usize) -> Result<Self> {
        let owned_nodes = layout.owned / nc;
        let mut vertex = vec![u32::MAX; layout.rows() / nc];
        let nodes = vertex.len();
        for (v, &n) in low.node.iter().enumerate().filter(|(_, &n)| (n as usize) < nodes) {
            vertex[n as usize] = v as u32;
        }
        let owned: Vec<u32> = vertex[..owned_nodes].iter().copied().filter(|&v| v != u32::MAX).collect();
        let starts = starts(comm, owned.len() * nc)?;
        // the low-order row of every piece row at a vertex: numbered by its
        // owner, the ghosts' from their owners
        let mut id = vec![-1.0f64; layout.rows()];
        let mut next = starts[comm.rank()];
        for n in (0..owned_nodes).filter(|&n| vertex[n] != u32::MAX) {
            for c in 0..nc {
                id[n * nc + c] = next as f64;
                next += 1;
            }
        }
        let one = CpuBackend::new(Some(1))?;
        layout.halo::<CpuBackend>(&one, None)?.update(&one, comm, &mut id)?;
        let column = |vc: u32| -> Option<u32> {
            let (v, c) = (vc as usize / nc, vc as usize % nc);
            let n = *low.node.get(v)? as usize;
            id.get(n * nc + c).filter(|&&g| g >= 0.0).map(|&g| g as u32)
        };
        let end = low.p.row_ptr[layout.owned] as usize;
        let col: Option<Vec<u32>> = low.p.col[..end].iter().map(|&vc| column(vc)).collect();
        let ok = col.is_some() && low.p.n_rows == layout.rows();
        if !comm.all_ok(ok)? {
            return Err(Error::InvalidArgument("AMG across ranks: a low-order unknown whose owner does not number it".into()));
        }
        let p = Csr { n_rows: layout.owned, row_ptr: low.p.row_ptr[..=layout.owned].to_vec(), col: col.expect("checked"), val: low.p.val[..end].to_vec() };
        let k = low.nullspace.k;
        let values = owned.iter().flat_map(|&v| (0..nc).flat_map(move |c| (0..k).map(move |j| (v as usize * nc + c) * k + j))).map(|i| low.nullspace.values[i]).collect();
        Ok(Self { p, starts, nullspace: Nullspace { k, values } })
    }
}

/// What a rank's partitioned set-up starts from: its tangent, stored on
/// the backend, and what AMG needs to know of it.
pub struct Input<'s, B: HaloBackend> {
    /// This rank's share of the host's cores.
    pub cpu: &'s CpuBackend,
    /// The tangent's rows across ranks.
    pub layout: &'s Layout,
    /// The tangent's pattern (the piece's rows, local columns; its ghost
    /// rows are partial sums, not read).
    pub pattern: &'s Csr<f64>,
    /// The pattern's values on the backend.
    pub values: &'s B::Vector<f64>,
    /// Unknowns a node.
    pub block: usize,
    /// The near-nullspace on the owned rows.
    pub nullspace: &'s Nullspace,
    /// The low-order level of a high-order space.
    pub low: Option<&'s LowLevel>,
    /// ρ(D⁻¹A) of the tangent.
    pub rho: f64,
    /// The tangent as stored for its products: the finest level's operator.
    pub finest: Rc<RefCell<Matrix<B, f64>>>,
    /// The ranks' device link.
    pub link: Option<Rc<B::Link>>,
}

/// A partitioned hierarchy's cycles, the halos of its levels (for their
/// seconds and bytes) and its statistics.
pub struct Cycles<'a, B: HaloBackend> {
    /// The cycles.
    pub mg: Multigrid<Distributed<'a, B>, f64>,
    /// Every level's halo.
    pub halos: Vec<Rc<Halo<B>>>,
    /// Sizes, complexities and set-up seconds.
    pub stats: AmgStats,
}

/// Where a backend sets up the partitioned hierarchy: the CPU on the
/// hosts' cores, the GPUs each on their own where the one-GPU set-up's
/// conditions hold ([`super::amg_device`]).
pub trait PartitionedSetup: PrecondOps + HaloBackend {
    /// The cycles of `input`'s tangent across `d`'s ranks. Collective.
    fn partitioned<'a>(d: &Distributed<'a, Self>, input: Input<'_, Self>, o: &AmgOptions) -> Result<Cycles<'a, Self>>;
}

impl PartitionedSetup for CpuBackend {
    fn partitioned<'a>(d: &Distributed<'a, Self>, input: Input<'_, Self>, o: &AmgOptions) -> Result<Cycles<'a, Self>> {
        on_hosts(d, input, o)
    }
}

/// The partitioned hierarchy set up on every rank's host cores, stored
/// on the backend.
pub fn on_hosts<'a, B: PrecondOps + HaloBackend>(d: &Distributed<'a, B>, input: Input<'_, B>, o: &AmgOptions) -> Result<Cycles<'a, B>> {
    let a = owned_rows(input.pattern, d.inner.download(input.values)?, input.layout.owned);
    let h = hierarchy(input.cpu, d.comm, input.layout.clone(), a, input.block, input.nullspace, input.low, Some(input.rho), o)?;
    let t = Instant::now();
    let (mg, halos) = multigrid(d, &h, Some(input.finest), input.link, o)?;
    let mut stats = h.stats;
    stats.seconds.upload = lap(t);
    Ok(Cycles { mg, halos, stats })
}

/// The hierarchy of the operator whose owned rows `a` holds (rows and
/// columns local to `layout`), `block` rows a node, near-nullspace `b` on
/// the owned rows, or through the low-order level `low` (whose
/// near-nullspace then replaces `b`); `rho` is ρ(D⁻¹A) of the operator
/// where it is known (estimated on the device), else it is estimated
/// here. Collective; an error on every rank where one fails.
#[allow(clippy::too_many_arguments)]
pub fn hierarchy(cpu: &CpuBackend, comm: &dyn Communicator, layout: Layout, a: Csr<f64>, block: usize, b: &Nullspace, low: Option<&LowLevel>, mut rho: Option<f64>, o: &AmgOptions) -> Result<Hierarchy> {
    let ok = |what: &str, good: bool| agreed(comm, what, good);
    ok("an operator whose rows are not the layout's or not nodes", a.n_rows == layout.rows() && block > 0 && layout.owned % block == 0 && b.rows() == layout.owned && b.k > 0)?;
    let mut stats = AmgStats::default();
    let (mut levels, mut transfers) = (Vec::new(), Vec::new());
    let (mut layout, mut a, mut b, mut block) = (layout, a, b.clone(), block);
    if let Some(low) = low {
        let t = Instant::now();
        let rho = rho.take().map_or_else(|| radius(cpu, comm, &layout, &a), Ok)?;
        let (level, transfer, next) = coarsen(cpu, comm, Level { layout, a, rho }, low.p.clone(), low.starts.clone())?;
        stats.seconds.galerkin += lap(t);
        levels.push(level);
        transfers.push(transfer);
        (layout, a, b) = (next.layout, next.a, low.nullspace.clone());
    }
    while levels.len() + 1 < o.max_levels.max(1) && layout.total() / block > o.max_coarse {
        let s = &mut stats.seconds;
        // each rank aggregates its own rows
        let (agg, n_agg) = aggregates(cpu, &owned_block(&a, layout.owned), block, o, s)?;
        let coarse = comm.sum_one((n_agg * b.k) as f64)? as usize;
        if coarse == 0 || coarse >= layout.total() {
            break; // nothing coarser to gain
        }
        let t = Instant::now();
        let (tp, coarse_b) = tentative::tentative(cpu, &agg, n_agg, block, &b)?;
        let cstarts = starts(comm, n_agg * b.k)?;
        let tp = shifted(tp, cstarts[comm.rank()] as u32);
        let t_ghost = rows::ghost_rows(comm, &layout, &tp)?;
        s.tentative += lap(t);
        let t = Instant::now();
        let rho = rho.take().map_or_else(|| radius(cpu, comm, &layout, &a), Ok)?;
        let p = smooth(cpu, &layout, &a, &tp, &t_ghost, o.prolongation_omega / rho, coarse)?;
        s.smoothing += lap(t);
        let t = Instant::now();
        let (level, transfer, next) = coarsen(cpu, comm, Level { layout, a, rho }, p, cstarts)?;
        s.galerkin += lap(t);
        levels.push(level);
        transfers.push(transfer);
        (layout, a, b, block) = (next.layout, next.a, coarse_b, b.k);
    }
    let coarsest = whole(cpu, comm, &layout, &layout, &a)?;
    ok(&format!("no coarser level for {} rows (lower the strength threshold)", coarsest.n_rows), coarsest.n_rows <= o.cycle.dense_coarse.max(o.max_coarse * block))?;
    levels.push(Level { layout, a, rho: 0.0 });
    let sizes: Vec<(usize, usize)> = levels.iter().map(|l| (l.layout.owned, l.a.nnz())).collect();
    let stats = statistics(comm, &sizes, stats.seconds)?;
    Ok(Hierarchy { levels, transfers, coarsest, stats })
}

/// `Ok` where `good` holds on every rank, else the same error on all.
pub(super) fn agreed(comm: &dyn Communicator, what: &str, good: bool) -> Result<()> {
    match comm.all_ok(good)? {
        true => Ok(()),
        false => Err(Error::InvalidArgument(format!("AMG across ranks: {what} on some rank"))),
    }
}

/// The statistics of levels of `sizes` (this rank's owned rows and
/// stored entries each, finest first): sizes over all ranks and
/// complexities. Collective.
pub(super) fn statistics(comm: &dyn Communicator, sizes: &[(usize, usize)], seconds: crate::solver::amg::SetupSeconds) -> Result<AmgStats> {
    let mut sums: Vec<f64> = sizes.iter().flat_map(|&(r, z)| [r as f64, z as f64]).collect();
    comm.sum(&mut sums)?;
    let levels: Vec<LevelStats> = sums.chunks(2).map(|s| LevelStats { rows: s[0] as usize, nonzeros: s[1] as usize }).collect();
    let (n0, z0) = (levels[0].rows.max(1) as f64, levels[0].nonzeros.max(1) as f64);
    let grid_complexity = levels.iter().map(|l| l.rows as f64).sum::<f64>() / n0;
    let operator_complexity = levels.iter().map(|l| l.nonzeros as f64).sum::<f64>() / z0;
    Ok(AmgStats { levels, operator_complexity, grid_complexity, seconds })
}

/// The owned rows' coupling among owned rows: what aggregation reads.
fn owned_block(a: &Csr<f64>, owned: usize) -> Csr<f64> {
    let mut m = Csr { n_rows: owned, row_ptr: vec![0], col: Vec::new(), val: Vec::new() };
    for r in 0..owned {
        for k in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
            if (a.col[k] as usize) < owned {
                m.col.push(a.col[k]);
                m.val.push(a.val[k]);
            }
        }
        m.row_ptr.push(m.col.len() as u32);
    }
    m
}

/// `m` with `shift` added to every column: local to global numbers.
fn shifted(mut m: Csr<f64>, shift: u32) -> Csr<f64> {
    m.col.iter_mut().for_each(|c| *c += shift);
    m
}

/// ρ(D⁻¹A) of the whole operator: power iterations on the ranks, from a
/// start that depends on the global rows alone.
fn radius(cpu: &CpuBackend, comm: &dyn Communicator, layout: &Layout, a: &Csr<f64>) -> Result<f64> {
    radius_of(cpu, comm, layout, a, &a.diag(), None)
}

/// ρ(D⁻¹A) of a level on backend `b` across ranks: `local` its product
/// on this rank's rows (ghost rows filled by `layout`'s halo over
/// `link`), `diag` its diagonal; power iterations with global norms from
/// a start that depends on the global rows alone, so the hosts and the
/// GPUs estimate the same.
pub(super) fn radius_of<B: HaloBackend>(b: &B, comm: &dyn Communicator, layout: &Layout, local: &dyn crate::operator::LinearOperator<B, f64>, diag: &[f64], link: Option<Rc<B::Link>>) -> Result<f64> {
    let halo: Halo<B> = layout.halo(b, link)?;
    let d = Distributed::new(b, comm, layout.owned);
    let op = HaloOperator::new(local, &halo)?;
    let scale: Vec<f64> = (0..layout.rows()).map(|i| if i < layout.owned && diag[i] > 0.0 { 1.0 / diag[i].sqrt() } else { 0.0 }).collect();
    let start: Vec<f64> = (0..layout.rows()).map(|i| fem_kernels::amg::hash_unit(layout.global(i))).collect();
    chebyshev::spectral_radius(&d, &op, &b.upload(&scale)?, &start)
}

/// `P = T − s D⁻¹ A T` on the owned rows, global columns; `t` holds the
/// owned rows of `T`, `t_ghost` its ghost rows.
fn smooth(cpu: &CpuBackend, layout: &Layout, a: &Csr<f64>, t: &Csr<f64>, t_ghost: &Csr<f64>, s: f64, width: usize) -> Result<Csr<f64>> {
    let (d, owned) = (a.diag(), layout.owned);
    product::build_within(cpu, owned, width, |r, terms| {
        product::push_row(t, r, 1.0, terms);
        for k in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
            let (j, v) = (a.col[k] as usize, -s * a.val[k] / d[r]);
            match j < owned {
                true => product::push_row(t, j, v, terms),
                false => product::push_row(t_ghost, j - owned, v, terms),
            }
        }
    })
}

/// The next coarser level of `fine` through prolongation `p` (its owned
/// rows, global columns; coarse rows split as `cstarts` says), and the
/// transfers between them.
fn coarsen(cpu: &CpuBackend, comm: &dyn Communicator, fine: Level, p: Csr<f64>, cstarts: Vec<usize>) -> Result<(Level, Transfer, Level)> {
    let (rank, layout, a) = (comm.rank(), &fine.layout, &fine.a);
    let (owned, cfirst, cowned) = (layout.owned, cstarts[rank], cstarts[rank + 1] - cstarts[rank]);
    let p_ghost = rows::ghost_rows(comm, layout, &p)?;
    let width = *cstarts.last().expect("one start");
    let ap = product::build_within(cpu, owned, width, |r, terms| {
        for k in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
            let j = a.col[k] as usize;
            match j < owned {
                true => product::push_row(&p, j, a.val[k], terms),
                false => product::push_row(&p_ghost, j - owned, a.val[k], terms),
            }
        }
    })?;
    // Pᵀ (A P) over this rank's fine rows, summed here by coarse row, then
    // to the owners of the coarse rows
    let pt = transpose(&p, width);
    let partial = product::build_within(cpu, pt.n_rows, width, |c, terms| {
        for k in pt.row_ptr[c] as usize..pt.row_ptr[c + 1] as usize {
            product::push_row(&ap, pt.col[k] as usize, pt.val[k], terms);
        }
    })?;
    drop(ap);
    let mut galerkin = rows::sum_to_owners(cpu, comm, &cstarts, &partial, Some(width), |j| j)?;
    drop(partial);
    unit_empty_rows(&mut galerkin, cfirst as u32);
    // rows of a few distinct columns each: no accumulator as wide as the fine level
    let r = rows::sum_to_owners(cpu, comm, &cstarts, &pt, None, |i| layout.global(i as usize))?;
    drop(pt);
    // the coarse ghosts: what the Galerkin rows and the prolongation read
    let mine = cfirst as u32..(cfirst + cowned) as u32;
    let ghosts: Vec<u32> = galerkin.col.iter().chain(&p.col).copied().filter(|c| !mine.contains(c)).collect();
    let clayout = Layout::new(comm, cowned, ghosts)?;
    let local = |m: Csr<f64>, to: &Layout, rows: usize| localized(cpu, &m, to, rows);
    let (fine_rows, coarse_rows) = (layout.rows(), clayout.rows());
    let found = local(r, layout, coarse_rows).and_then(|r| Ok((r, local(p, &clayout, fine_rows)?, local(galerkin, &clayout, coarse_rows)?)));
    let (r, p, galerkin) = super::comm::agree(comm, found)?;
    Ok((fine, Transfer { p, r }, Level { layout: clayout, a: galerkin, rho: 0.0 }))
}

/// `m` (global columns) in `to`'s local columns, with `rows` rows (those
/// past `m`'s empty), each row's columns ascending (local numbers do not
/// keep the order of global ones: lower ranks' ghosts come after the
/// owned rows); an error for a column `to` does not hold.
fn localized(cpu: &CpuBackend, m: &Csr<f64>, to: &Layout, rows: usize) -> Result<Csr<f64>> {
    use std::sync::atomic::{AtomicU32, Ordering};
    let missing = AtomicU32::new(u32::MAX);
    let out = product::build(cpu, rows, |r, terms| {
        for k in (r < m.n_rows).then(|| m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize).unwrap_or_default() {
            match to.local(m.col[k]) {
                Some(c) => terms.push((c, m.val[k])),
                None => missing.store(m.col[k], Ordering::Relaxed),
            }
        }
    })?;
    match missing.into_inner() {
        u32::MAX => Ok(out),
        g => Err(Error::InvalidArgument(format!("AMG across ranks: rank {} holds no row {g} of a level", to.rank))),
    }
}

/// A unit diagonal in every empty row of `m` (whose row `r` is global row
/// `first + r`): a coarse unknown no fine row prolongs to (a dependent
/// near-nullspace vector) stays zero and the operator invertible.
fn unit_empty_rows(m: &mut Csr<f64>, first: u32) {
    if (0..m.n_rows).all(|r| m.row_len(r) > 0) {
        return;
    }
    let mut out = Csr { n_rows: m.n_rows, row_ptr: vec![0], col: Vec::with_capacity(m.nnz()), val: Vec::with_capacity(m.nnz()) };
    for r in 0..m.n_rows {
        let span = m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize;
        match span.is_empty() {
            true => {
                out.col.push(first + r as u32);
                out.val.push(1.0);
            }
            false => {
                out.col.extend_from_slice(&m.col[span.clone()]);
                out.val.extend_from_slice(&m.val[span]);
            }
        }
        out.row_ptr.push(out.col.len() as u32);
    }
    *m = out;
}

/// The whole matrix of owned rows `a` (rows of `rows`, columns local to
/// `cols`), on every rank, global rows and columns. Collective.
pub(super) fn whole(cpu: &CpuBackend, comm: &dyn Communicator, rows: &Layout, cols: &Layout, a: &Csr<f64>) -> Result<Csr<f64>> {
    let entries: Vec<f64> = (0..rows.owned)
        .flat_map(|r| (a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize).flat_map(move |k| [rows.global(r) as f64, cols.global(a.col[k] as usize) as f64, a.val[k]]))
        .collect();
    let all = comm.all_gather(&entries)?;
    let triples: Vec<(u32, u32, f64)> = all.chunks_exact(3).map(|e| (e[0] as u32, e[1] as u32, e[2])).collect();
    Ok(rows::from_entries(cpu, rows.total(), &triples))
}

/// The cycles of `h` on backend `b` across `comm`'s ranks, as options `o`
/// say: every level's matrices stored in `b`'s format for hierarchies
/// (the finest level's operator `finest` where it is already stored: the
/// tangent itself), each level's halo over `link` (the ranks' device
/// link, made once). The halos come back too, for their seconds and bytes.
#[allow(clippy::type_complexity)]
pub fn multigrid<'a, B: PrecondOps + HaloBackend>(d: &Distributed<'a, B>, h: &Hierarchy, finest: Option<Rc<RefCell<Matrix<B, f64>>>>, link: Option<Rc<B::Link>>, o: &AmgOptions) -> Result<(Multigrid<Distributed<'a, B>, f64>, Vec<Rc<Halo<B>>>)> {
    let b = d.inner;
    let n = h.levels.len();
    let mut finest = finest;
    let stored = (0..n)
        .map(|l| {
            let level = &h.levels[l];
            let rows = level.layout.rows();
            let a = match (l, finest.take()) {
                (0, Some(m)) => m,
                _ => shared(b, &level.a, rows)?,
            };
            let diag = level.a.diag();
            let inv: Vec<f64> = (0..rows).map(|i| if i < level.layout.owned && diag[i] != 0.0 { 1.0 / diag[i] } else { 0.0 }).collect();
            let transfer = match l + 1 < n {
                true => {
                    let (t, coarse) = (&h.transfers[l], &h.levels[l + 1].layout);
                    Some((shared(b, &t.p, coarse.rows())?, shared(b, &t.r, rows)?))
                }
                false => None,
            };
            Ok(Stored { a, inv_diag: b.upload(&inv)?, rho: level.rho, transfer })
        })
        .collect::<Result<Vec<_>>>()?;
    let layouts: Vec<&Layout> = h.levels.iter().map(|l| &l.layout).collect();
    cycles(d, &layouts, stored, &h.coarsest, link, o)
}

/// A level's matrices on the backend, as the cycles across ranks take
/// them: its operator (every local row, local columns), inverse diagonal
/// (zeros on the ghost rows), ρ(D⁻¹A), and the prolongation from the next
/// coarser level with the restriction to it.
pub(super) struct Stored<B: HaloBackend> {
    pub a: Rc<RefCell<Matrix<B, f64>>>,
    pub inv_diag: B::Vector<f64>,
    pub rho: f64,
    pub transfer: Option<(Rc<RefCell<Matrix<B, f64>>>, Rc<RefCell<Matrix<B, f64>>>)>,
}

/// The cycles over `levels` (finest first, on `layouts`; the coarsest
/// operator whole on every rank `coarsest`), each matrix after the halo
/// exchange of the level it reads, the halos over `link`; the halos come
/// back too. Wherever the levels were set up.
#[allow(clippy::type_complexity)]
pub(super) fn cycles<'a, B: PrecondOps + HaloBackend>(d: &Distributed<'a, B>, layouts: &[&Layout], levels: Vec<Stored<B>>, coarsest: &Csr<f64>, link: Option<Rc<B::Link>>, o: &AmgOptions) -> Result<(Multigrid<Distributed<'a, B>, f64>, Vec<Rc<Halo<B>>>)> {
    let b = d.inner;
    let halos: Vec<Rc<Halo<B>>> = layouts.iter().map(|l| Ok(Rc::new(l.halo(b, link.clone())?))).collect::<Result<_>>()?;
    let mut stored = Vec::with_capacity(levels.len());
    // coarsest first, as the multigrid takes them
    for (l, level) in levels.into_iter().enumerate().rev() {
        let rows = layouts[l].rows();
        let a = HaloMatrix::new(level.a, halos[l].clone(), rows)?;
        let p = match level.transfer {
            Some((p, r)) => {
                let prolong = HaloMatrix::new(p, halos[l + 1].clone(), rows)?;
                let restrict = HaloMatrix::new(r, halos[l].clone(), layouts[l + 1].rows())?;
                Some((Box::new(prolong) as _, Box::new(restrict) as _))
            }
            None => None,
        };
        stored.push(StoredLevel { a: Box::new(a), inv_diag: level.inv_diag, rho: level.rho, p });
    }
    let last = layouts.last().ok_or_else(|| Error::InvalidArgument("AMG across ranks: no level".into()))?;
    let empty = Csr { n_rows: last.rows(), row_ptr: vec![0; last.rows() + 1], col: Vec::new(), val: Vec::new() };
    let mut mg = Multigrid::from_stored(d, stored, o.cycle, empty)?;
    mg.solve_coarsest_by(Box::new(Gathered::new(b, coarsest, (*last).clone())?));
    Ok((mg, halos))
}

/// `m` (`cols` columns) in `b`'s format for hierarchies, to share.
fn shared<B: PrecondOps>(b: &B, m: &Csr<f64>, cols: usize) -> Result<Rc<RefCell<Matrix<B, f64>>>> {
    Ok(Rc::new(RefCell::new(b.store_matrix(m, cols)?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::{Partition, Partitioner, Piece, Threads};
    use crate::mesh::simplex::SimplexBox;
    use crate::solver::amg::{self as serial, galerkin};
    use crate::solver::transfer::transpose;
    use crate::space::Space;

    /// The largest difference of two matrices' entries.
    fn distance(a: &Csr<f64>, b: &Csr<f64>, cols: usize) -> f64 {
        let dense = |m: &Csr<f64>| {
            let mut d = vec![0.0; m.n_rows * cols];
            (0..m.n_rows).for_each(|r| (m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize).for_each(|k| d[r * cols + m.col[k] as usize] += m.val[k]));
            d
        };
        assert_eq!(a.n_rows, b.n_rows);
        dense(a).iter().zip(dense(b)).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
    }

    /// Every level of the partitioned hierarchy of the P1 Laplacian, made
    /// whole, is the Galerkin product of the one above through its
    /// prolongation, and the restriction its transpose; on one rank the
    /// hierarchy is the one-rank AMG's.
    #[test]
    fn partitioned_levels_are_galerkin_products() {
        let mesh = SimplexBox::unstructured(3, 6, 4).build().unwrap();
        let space = Space::simplex(&mesh, 1).unwrap();
        let cpu = CpuBackend::new(Some(1)).unwrap();
        // the graph Laplacian of the cells' cliques, shifted: SPD
        let nb = space.nb();
        let entries: Vec<(u32, u32, f64)> = space.cell_dofs.chunks(nb).flat_map(|c| c.iter().flat_map(move |&i| c.iter().map(move |&j| (i, j, if i == j { (nb - 1) as f64 + 0.01 } else { -1.0 })))).collect();
        let whole_a = rows::from_entries(&cpu, space.n_dofs, &entries);
        let o = AmgOptions { max_coarse: 5, ..AmgOptions::default() };
        for ranks in [1, 2, 3] {
            let partition = Partition::new(&space, ranks, Partitioner::Metis).unwrap();
            let pieces = Piece::split(&space, &partition).unwrap();
            let out = Threads::run(ranks, |c| {
                let cpu = CpuBackend::new(Some(1)).unwrap();
                let piece = &pieces[c.rank()];
                let layout = Layout::of_piece(c, piece, 1).unwrap();
                // the owned rows of the whole matrix in the piece's columns
                let local_of: std::collections::HashMap<u32, u32> = piece.nodes.iter().enumerate().map(|(i, &n)| (n, i as u32)).collect();
                let entries: Vec<(u32, u32, f64)> = (0..piece.owned)
                    .flat_map(|i| {
                        let n = piece.nodes[i] as usize;
                        (whole_a.row_ptr[n] as usize..whole_a.row_ptr[n + 1] as usize).map(|k| (i as u32, local_of[&whole_a.col[k]], whole_a.val[k])).collect::<Vec<_>>()
                    })
                    .collect();
                let mut a = rows::from_entries(&cpu, layout.owned, &entries);
                a.row_ptr.resize(layout.rows() + 1, *a.row_ptr.last().unwrap());
                a.n_rows = layout.rows();
                let h = hierarchy(&cpu, c, layout.clone(), a, 1, &Nullspace::constants(piece.owned, 1), None, None, &o).unwrap();
                let levels: Vec<Csr<f64>> = h.levels.iter().map(|l| whole(&cpu, c, &l.layout, &l.layout, &l.a).unwrap()).collect();
                let transfers: Vec<(Csr<f64>, Csr<f64>)> = h.transfers.iter().enumerate().map(|(l, t)| {
                    let (fine, coarse) = (&h.levels[l].layout, &h.levels[l + 1].layout);
                    (whole(&cpu, c, fine, coarse, &t.p).unwrap(), whole(&cpu, c, coarse, fine, &t.r).unwrap())
                }).collect();
                (levels, transfers, h.coarsest, h.levels.iter().map(|l| l.rho).collect::<Vec<_>>())
            });
            let (levels, transfers, coarsest, rho) = &out[0];
            assert!(levels.len() >= 3, "{ranks} ranks: {} levels", levels.len());
            assert!(distance(coarsest, levels.last().unwrap(), coarsest.n_rows) == 0.0);
            for (l, (p, r)) in transfers.iter().enumerate() {
                let nc = levels[l + 1].n_rows;
                assert!(distance(r, &transpose(p, nc), levels[l].n_rows) < 1e-14, "{ranks} ranks, level {l}: R is not Pᵀ");
                let product = galerkin(&cpu, &levels[l], p, nc).unwrap();
                let scale = levels[l + 1].val.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                assert!(distance(&product, &levels[l + 1], nc) < 1e-12 * scale, "{ranks} ranks, level {l}: not PᵀAP");
            }
            if ranks == 1 {
                let one = serial::hierarchy(&cpu, &whole_a, 1, &Nullspace::constants(whole_a.n_rows, 1), &o).unwrap();
                assert_eq!(one.a.len() + 1, levels.len());
                for (l, m) in one.a.iter().rev().enumerate() {
                    assert!(distance(m, &levels[l + 1], m.n_rows) < 1e-12, "level {}", l + 1);
                }
                let mut one_rho = one.rho.clone();
                one_rho.reverse();
                assert!(one_rho.iter().zip(rho).all(|(a, b)| (a - b).abs() < 1e-12 * a), "{one_rho:?} against {rho:?}");
            }
        }
    }
}
