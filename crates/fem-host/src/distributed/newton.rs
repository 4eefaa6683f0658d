//! Newton's method across ranks: each rank evaluates the residual and the
//! tangent on its piece with the backend's own kernels ([`NewtonOps`]),
//! the owned rows being exact; the Krylov method runs on [`Distributed`]
//! vectors with the halo exchanged before every product; norms and the
//! line search's decisions are global, so every rank takes the same steps.

use super::backend::Distributed;
use super::comm::Communicator;
use super::amg::PartitionedSetup;
use super::halo::Halo;
use super::operator::HaloOperator;
use super::partition::Partition;
use crate::memory::peak_rss_bytes;
use super::piece::Piece;
use crate::problem::nonlinear::assembly::Storage;
use crate::problem::nonlinear::cell_tangent::{cell_inverse_diagonal, CellTangent};
use crate::problem::nonlinear::{line_search, AmgReport, NewtonOps, NewtonOptions, NewtonStep, Precision, Precond, Scatter, Setup};
use crate::problem::phases::{timed, Split};
use crate::solver::multigrid::Matrix;
use crate::solver::{chebyshev, CgOptions, InverseDiagonal};
use crate::sparse::{Spmv, SpmvFormat};
use crate::{Error, Result};
use fem_kernels::pointwise::Kernels;
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

/// What a distributed Newton solve did, the same on every rank except
/// where a field says "this rank".
#[derive(Clone, Debug, Serialize)]
pub struct DistributedReport {
    /// Ranks.
    pub ranks: usize,
    /// Rows of the whole system.
    pub rows: usize,
    /// Rows this rank owns.
    pub owned_rows: usize,
    /// Ghost rows of this rank.
    pub ghost_rows: usize,
    /// The local tangent's format.
    pub format: String,
    /// ‖R‖ at the start and after every update.
    pub residuals: Vec<f64>,
    /// Every update.
    pub steps: Vec<NewtonStep>,
    /// Krylov iterations over all updates.
    pub krylov_iterations: usize,
    /// Whether ‖R‖ reached the tolerance.
    pub converged: bool,
    /// Seconds of this rank's uploads and format set-up.
    pub setup_seconds: f64,
    /// Seconds of the updates (element kernels, assembly, Krylov, line search).
    pub solve_seconds: f64,
    /// Those seconds by phase, as one rank's Newton reports them.
    pub split: Split,
    /// Seconds this rank spent in halo exchanges (packing, copies and
    /// waiting for its neighbours included; on every level of AMG's
    /// hierarchies too).
    pub halo_seconds: f64,
    /// Bytes this rank sent and received in halo exchanges (AMG's levels
    /// included).
    pub halo_bytes: usize,
    /// How halo values travel: `nccl` (device to device, queued on the
    /// stream: `halo_seconds` is then the host's time to queue them) or
    /// `host` (through the host and the communicator).
    pub halo_transport: String,
    /// Global sums (dot products, norms) and the seconds they took.
    pub reductions: usize,
    /// Seconds in global sums, waiting for the slowest rank included.
    pub reduction_seconds: f64,
    /// What AMG did (its partitioned hierarchies), where it preconditioned.
    pub amg: Option<AmgReport>,
}

/// Every rank's figures side by side, for the report of the whole solve.
#[derive(Clone, Debug, Serialize)]
pub struct Ranks {
    /// Ranks.
    pub ranks: usize,
    /// How the cells were split, and how well.
    pub partition: Partition,
    /// Rows each rank owns.
    pub owned_rows: Vec<usize>,
    /// Ghost rows of each rank.
    pub ghost_rows: Vec<usize>,
    /// Each rank's seconds of uploads and format set-up.
    pub setup_seconds: Vec<f64>,
    /// Each rank's seconds of the updates.
    pub solve_seconds: Vec<f64>,
    /// Each rank's seconds in halo exchanges.
    pub halo_seconds: Vec<f64>,
    /// Bytes each rank sent and received in halo exchanges.
    pub halo_bytes: Vec<usize>,
    /// How halo values travel (the same on every rank): `nccl` or `host`.
    pub halo_transport: String,
    /// Global sums (the same on every rank).
    pub reductions: usize,
    /// Each rank's seconds in global sums.
    pub reduction_seconds: Vec<f64>,
    /// Each rank's peak resident host memory in bytes (Linux; 0 elsewhere).
    pub peak_rss_bytes: Vec<usize>,
    /// The cores each rank may run on ([`cores`]): a launcher's binding
    /// shows here.
    pub cores: Vec<usize>,
    /// Threads of each rank's pools.
    pub threads: Vec<usize>,
}

/// The cores this process may run on (its affinity), at least one.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Ranks {
    /// Every rank's figures of `report`, on every rank. Collective.
    pub fn gather(comm: &dyn Communicator, partition: &Partition, report: &DistributedReport) -> Result<Self> {
        let r = report;
        let mine = [r.owned_rows as f64, r.ghost_rows as f64, r.setup_seconds, r.solve_seconds, r.halo_seconds, r.halo_bytes as f64, r.reduction_seconds, peak_rss_bytes() as f64, cores() as f64, rayon::current_num_threads() as f64];
        let all = comm.all_gather(&mine)?;
        let column = |k: usize| -> Vec<f64> { all.chunks_exact(mine.len()).map(|c| c[k]).collect() };
        let count = |k: usize| -> Vec<usize> { column(k).into_iter().map(|v| v as usize).collect() };
        Ok(Self { ranks: comm.size(), partition: partition.clone(), owned_rows: count(0), ghost_rows: count(1), setup_seconds: column(2), solve_seconds: column(3), halo_seconds: column(4), halo_bytes: count(5), halo_transport: r.halo_transport.clone(), reductions: r.reductions, reduction_seconds: column(6), peak_rss_bytes: count(7), cores: count(8), threads: count(9) })
    }
}

/// AMG across ranks: the first level's layout, the near-nullspace, and
/// the cycles of the last hierarchy.
struct Amg<'a, B: NewtonOps + PartitionedSetup> {
    layout: super::Layout,
    low: Option<super::amg::LowLevel>,
    nullspace: crate::solver::amg::Nullspace,
    opts: crate::solver::amg::AmgOptions,
    cpu: crate::CpuBackend,
    mg: Option<crate::solver::multigrid::Multigrid<Distributed<'a, B>, f64>>,
    /// The levels' halos of the current hierarchy.
    halos: Vec<Rc<super::Halo<B>>>,
    /// Seconds and bytes of the halos of earlier hierarchies.
    spent: (f64, usize),
    report: AmgReport,
}

impl<'a, B: NewtonOps + PartitionedSetup> Amg<'a, B> {
    fn new<K: Kernels<f64>>(comm: &dyn Communicator, piece: &Piece, setup: &Setup<K>, opts: crate::solver::amg::AmgOptions) -> Result<Self> {
        let nc = setup.physics.variant.nc;
        let layout = super::Layout::of_piece(comm, piece, nc)?;
        let nullspace = setup.near_nullspace(piece.owned)?;
        // this rank's share of the host's cores
        let cpu = crate::CpuBackend::new(None)?;
        let low = setup.low_order.as_ref().map(|l| super::amg::LowLevel::new(comm, &layout, l, nc)).transpose()?;
        Ok(Self { layout, low, nullspace, opts, cpu, mg: None, halos: Vec::new(), spent: (0.0, 0), report: AmgReport::default() })
    }

    /// The hierarchy of the tangent whose values (of the set-up's pattern)
    /// `kflat` hold, its cycles on `d`, the finest level's products those
    /// of the stored `tangent`.
    #[allow(clippy::too_many_arguments)]
    fn build<K: Kernels<f64>>(&mut self, d: &Distributed<'a, B>, setup: &Setup<K>, kflat: &B::Vector<f64>, tangent: Rc<RefCell<Matrix<B, f64>>>, rho: f64, link: Option<Rc<B::Link>>) -> Result<()> {
        let start = Instant::now();
        self.mg = None; // its memory before the next one's
        self.spent = self.exchanged();
        self.halos.clear();
        let input = super::amg::Input { cpu: &self.cpu, layout: &self.layout, pattern: &setup.csr, values: kflat, block: setup.physics.variant.nc, nullspace: &self.nullspace, low: self.low.as_ref(), rho, finest: tangent, link };
        let built = B::partitioned(d, input, &self.opts)?;
        (self.mg, self.halos) = (Some(built.mg), built.halos);
        self.report.builds += 1;
        self.report.last = built.stats;
        self.report.setup_seconds += start.elapsed().as_secs_f64();
        Ok(())
    }

    /// Seconds and bytes of the exchanges on every level of every
    /// hierarchy so far.
    fn exchanged(&self) -> (f64, usize) {
        self.halos.iter().fold(self.spent, |(s, n), h| (s + h.seconds(), n + h.bytes()))
    }
}

/// Buffers of one piece's residual and tangent.
struct Work<B: NewtonOps> {
    ue: B::Vector<f64>,
    relem: B::Vector<f64>,
    r: B::Vector<f64>,
}

/// The residual at `u` (ghost rows filled) into `w.r`; ‖R‖ over all ranks.
fn residual<B: NewtonOps>(d: &Distributed<'_, B>, state: &B::State, u: &B::Vector<f64>, w: &mut Work<B>, split: &mut Split) -> Result<f64> {
    let b = d.inner;
    timed(b, &mut split.element, || {
        b.gather(state, u, &mut w.ue)?;
        b.elements(state, false, &w.ue, &mut w.relem)
    })?;
    timed(b, &mut split.assembly, || b.assemble(state, false, &w.relem, &mut w.r))?;
    crate::Backend::norm2(d, &w.r)
}

/// The tangent assembled in `format`, or in CSR where that format numbers
/// rows its own way (the halo exchange reads them in the piece's order).
fn local_matrix<B: NewtonOps, K: Kernels<f64>>(b: &B, state: &B::State, setup: &Setup<K>, format: SpmvFormat) -> Result<Box<dyn Spmv<B, f64>>> {
    let m = b.matrix::<K, f64>(state, setup, format)?;
    match m.numbering() {
        None => Ok(m),
        Some(_) => b.matrix::<K, f64>(state, setup, SpmvFormat::Csr),
    }
}

/// Solves R(u) = 0 on `piece` from `initial` (the piece's rows, owned and
/// ghost, fixed rows at their values): the set-up was built on the
/// piece's space. Returns u on the piece (owned rows, then the ghost
/// rows as their owners hold them) and the report. Takes
/// Jacobi, Chebyshev–Jacobi, AMG (a partitioned hierarchy built on the
/// host of every rank, [`super::amg`]) or no preconditioner, with any Krylov
/// method, in f64, the tangent (lagged or not) stored as `o.assembly`
/// says (a sparse format or element matrices, chosen as on one rank by
/// default); an error for options it would not honour.
pub fn solve<B: NewtonOps + PartitionedSetup, K: Kernels<f64> + 'static>(b: &B, comm: &dyn Communicator, piece: &Piece, setup: &Setup<K>, initial: &[f64], o: &NewtonOptions) -> Result<(Vec<f64>, DistributedReport)> {
    let nc = setup.physics.variant.nc;
    if !matches!(o.precond, Precond::Jacobi | Precond::None | Precond::Chebyshev(_) | Precond::Amg(_)) {
        return Err(Error::InvalidArgument(format!("a distributed solve takes Jacobi, Chebyshev, AMG or no preconditioner, not {}", o.precond)));
    }
    if o.precision != Precision::F64 || o.scatter != Scatter::Atomic {
        return Err(Error::InvalidArgument("a distributed solve assembles by atomics and solves in f64: leave the precision and scatter at their defaults".into()));
    }
    crate::error::same_len("piece rows", setup.n_rows(), piece.len() * nc)?;
    crate::error::same_len("initial guess", initial.len(), piece.len() * nc)?;
    let start = Instant::now();
    let halo = Halo::new(b, comm, piece, nc)?;
    let d = Distributed::new(b, comm, halo.owned_rows());
    let storage = o.assembly.resolve(setup, o.precond, o.precision, b.default_format(), b.auto_partial(&setup.physics.variant))?;
    let state = b.prepare(setup, storage.format(), Scatter::Atomic)?;
    // shared with AMG's finest level, which reads the same tangent
    let matrix = storage.format().map(|f| local_matrix(b, &state, setup, f).map(|m| Rc::new(RefCell::new(m)))).transpose()?;
    let n = halo.rows();
    let mut w = Work::<B> { ue: b.zeros(setup.gather.len())?, relem: b.zeros(setup.gather.len())?, r: b.zeros(n)? };
    let values = if matrix.is_some() { setup.csr.nnz() } else { 0 };
    let (mut kelem, mut kflat, mut inv, mut scratch) = (b.zeros(storage.values(setup, Scatter::Atomic))?, b.zeros(values)?, b.zeros(n)?, b.zeros(n)?);
    let (mut u, mut trial, mut delta) = (b.upload(initial)?, b.zeros(n)?, b.zeros(n)?);
    let ghosts = vec![1.0; n - halo.owned_rows()];
    // the first exchange also connects the ranks (NCCL connects lazily)
    halo.update(b, comm, &mut u)?;
    b.synchronize()?;
    halo.restart_counts();
    let setup_seconds = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut split = Split::default();
    let first = residual(&d, &state, &u, &mut w, &mut split)?;
    if !first.is_finite() {
        return Err(Error::InvalidArgument("the residual at the start is not finite".into()));
    }
    let mut residuals = vec![first];
    let tol = (o.rtol * first).max(o.atol);
    let mut steps: Vec<NewtonStep> = Vec::new();
    let mut rho: Option<f64> = None;
    let mut amg = match o.precond {
        Precond::Amg(opts) => Some(Amg::new(comm, piece, setup, opts)?),
        _ => None,
    };
    while *residuals.last().expect("one residual") > tol && steps.len() < o.max_iterations {
        let now = *residuals.last().expect("one residual");
        // a lagged tangent keeps the first update's
        let fresh = steps.is_empty() || !o.lag_tangent;
        if fresh {
            // `w.ue` holds the gather of u from its residual
            timed(b, &mut split.element, || storage.linearise(b, &state, &w.ue, &mut kelem))?;
            timed(b, &mut split.assembly, || {
                match matrix.as_ref() {
                    Some(m) => {
                        b.assemble(&state, true, &kelem, &mut kflat)?;
                        m.borrow_mut().reorder(b, &kflat)?;
                        b.inverse_diagonal(&state, &kflat, &mut inv)?;
                    }
                    None => cell_inverse_diagonal(b, storage, &state, &kelem, None, &mut scratch, &mut inv)?,
                }
                match ghosts.is_empty() {
                    true => Ok(()),
                    false => b.write_at(&mut inv, halo.owned_rows(), &ghosts),
                }
            })?;
            rho = None;
        }
        let lma = CellTangent { storage, state: &state, kelem: &kelem, extra: None, scratch: std::cell::RefCell::new(&mut scratch), n };
        let tangent = matrix.as_ref().map(|m| m.borrow());
        let local: &dyn crate::operator::LinearOperator<B, f64> = match tangent.as_deref() {
            Some(m) => m.as_ref(),
            None => &lma,
        };
        let op = HaloOperator::new(local, &halo)?;
        if let (Some(amg), Some(m)) = (amg.as_mut(), matrix.as_ref()) {
            // a new hierarchy for a new tangent, unless the first is kept
            if fresh && !(amg.opts.keep && amg.mg.is_some()) {
                timed(b, &mut split.precond, || {
                    // ρ(D⁻¹A) of the finest level from the stored tangent, on the device
                    let rho = chebyshev::spectral_radius_of(&d, &op, &inv)?;
                    amg.build(&d, setup, &kflat, m.clone(), rho, halo.shared_link())
                })?;
            }
        }
        let identity = crate::solver::precond::Identity(n);
        let jacobi = InverseDiagonal::<Distributed<'_, B>, f64>(&inv, n);
        let polynomial;
        let m: &dyn crate::operator::LinearOperator<Distributed<'_, B>, f64> = match o.precond {
            Precond::None => &identity,
            Precond::Chebyshev(degree) => {
                // ρ(D⁻¹A) of the whole operator, once a tangent: the power
                // iterations' norms are global
                polynomial = timed(b, &mut split.precond, || chebyshev::Chebyshev::with_radius(&d, &op, &inv, &mut rho, degree))?;
                &polynomial
            }
            Precond::Amg(_) => amg.as_ref().and_then(|a| a.mg.as_ref()).ok_or_else(|| Error::InvalidArgument("AMG across ranks needs the assembled tangent".into()))?,
            _ => &jacobi,
        };
        b.axpby(0.0, &w.r, 0.0, &mut delta)?;
        let opts = CgOptions { rtol: o.krylov_rtol, max_iterations: o.max_krylov, jacobi: false };
        let cg = timed(b, &mut split.solve, || o.krylov.solve(&d, &op, m, &w.r, &mut delta, opts)).map_err(|e| Error::InvalidArgument(format!("Newton update {}: {e}", steps.len() + 1)))?;
        let (alpha, next) = line_search(o, now, steps.len() + 1, |alpha| {
            timed(b, &mut split.solve, || {
                b.copy(&u, &mut trial)?;
                b.axpy(-alpha, &delta, &mut trial)?;
                halo.update(b, comm, &mut trial)
            })?;
            residual(&d, &state, &trial, &mut w, &mut split)
        })?;
        std::mem::swap(&mut u, &mut trial);
        residuals.push(next);
        steps.push(NewtonStep { iteration: steps.len() + 1, residual: next, krylov_iterations: cg.iterations, krylov_converged: cg.converged, step_length: alpha, krylov_history: cg.history });
    }
    // every update ends with the ghosts of u filled
    let local = b.download(&u)?;
    let amg_exchanged = amg.as_ref().map_or((0.0, 0), |a| a.exchanged());
    let (reductions, reduction_seconds) = d.reductions();
    let report = DistributedReport {
        ranks: comm.size(),
        rows: piece.global * nc,
        owned_rows: halo.owned_rows(),
        ghost_rows: n - halo.owned_rows(),
        format: match (matrix.as_ref(), storage) {
            (Some(m), _) => m.borrow().name(),
            (None, Storage::Partial) => "partially assembled (point data, sum factorisation)".into(),
            (None, Storage::MatrixFree) => "matrix-free (sum factorisation)".into(),
            (None, _) => "element matrices (LMA)".into(),
        },
        converged: *residuals.last().expect("one residual") <= tol,
        krylov_iterations: steps.iter().map(|s| s.krylov_iterations).sum(),
        residuals,
        steps,
        setup_seconds,
        solve_seconds: start.elapsed().as_secs_f64(),
        split,
        // the hierarchy's levels exchange too
        halo_seconds: halo.seconds() + amg_exchanged.0,
        halo_bytes: halo.bytes() + amg_exchanged.1,
        halo_transport: if halo.linked() { "nccl" } else { "host" }.into(),
        reductions,
        reduction_seconds,
        amg: amg.map(|a| a.report),
    };
    Ok((local, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::{Partition, Partitioner, Threads};
    use crate::mesh::simplex::SimplexBox;
    use crate::operator::pointwise::Aux;
    use crate::problem::nonlinear;
    use crate::solver::amg::AmgOptions;
    use crate::solver::Krylov;
    use crate::space::{BoundaryPart, Constraints, Load, Space};
    use crate::CpuBackend;
    use fem_kernels::physics::{Elasticity, Poisson};

    /// Auxiliary values: `na` per node or per cell.
    enum Values {
        Nodal(Vec<f64>),
        Cell(Vec<f64>),
    }

    fn aux_of<'a>(v: &Values, x: &'a [f64]) -> Aux<'a> {
        match v {
            Values::Nodal(_) => Aux::Nodal(x),
            Values::Cell(_) => Aux::Cell(x),
        }
    }

    /// The distributed solve on 2, 3 and 4 ranks equals the one-rank solve
    /// (Jacobi-preconditioned there); returns each rank count's reports.
    fn equals_one_rank<K: Kernels<f64> + 'static>(space: &Space, nc: usize, aux: Values, krylov: Krylov, precond: Precond) -> Vec<Vec<DistributedReport>> {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let cons = Constraints::none(space, nc).dirichlet(space, &BoundaryPart::at("x = 0", |x| x[0] < 1e-12), |x, u| u.iter_mut().enumerate().for_each(|(c, u)| *u = x[1] + c as f64)).unwrap();
        // not an eigenvector: the load varies along every axis and component
        let load = Load::zero(space, nc).source(space, |x, f| f.iter_mut().enumerate().for_each(|(c, f)| *f = (3.0 * x[0] + x[1] * x[1] - 2.0 * x[2] + c as f64).cos()));
        // two values a node or a cell, whole or on a piece
        let view = |a: &Values, piece: Option<&Piece>| -> Vec<f64> {
            match (a, piece) {
                (Values::Nodal(v), Some(p)) => p.restrict(2, v),
                (Values::Cell(v), Some(p)) => p.restrict_cells(2, v),
                (Values::Nodal(v) | Values::Cell(v), None) => v.clone(),
            }
        };
        let o = NewtonOptions { krylov_rtol: 1e-13, krylov, precond, ..NewtonOptions::default() };
        let whole = view(&aux, None);
        let setup = Setup::<K>::constrained(&cpu, space, aux_of(&aux, &whole), &cons, Some(&load)).unwrap();
        let (u, _) = nonlinear::solve(&cpu, &setup, &cons.initial(), &NewtonOptions { precond: Precond::Jacobi, ..o }, &mut |_| {}).unwrap();
        let scale = u.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let mut reports = Vec::new();
        for ranks in [2, 3, 4] {
            let partition = Partition::new(space, ranks, Partitioner::Metis).unwrap();
            let pieces = Piece::split(space, &partition).unwrap();
            let out = Threads::run(ranks, |c| {
                let cpu = CpuBackend::new(Some(1)).unwrap();
                let piece = &pieces[c.rank()];
                let local = piece.space(space).unwrap();
                let a = view(&aux, Some(piece));
                let setup = Setup::<K>::constrained(&cpu, &local, aux_of(&aux, &a), &piece.constraints(&local, &cons).unwrap(), Some(&piece.load(&load))).unwrap();
                // AMG's low-order level below a high-order space
                let setup = if matches!(precond, Precond::Amg(_)) { setup.with_low_order(&local).unwrap() } else { setup };
                let (local, report) = solve(&cpu, c, piece, &setup, &piece.restrict(nc, &cons.initial()), &o).unwrap();
                // owned and ghost rows alike hold the solution
                let worst = local.iter().enumerate().fold(0.0f64, |m, (i, a)| m.max((a - u[piece.nodes[i / nc] as usize * nc + i % nc]).abs()));
                assert!(worst <= 1e-10 * scale, "{ranks} ranks, rank {}: the piece is off by {worst:e}", c.rank());
                (piece.gather(c, nc, &local[..piece.owned * nc]).unwrap(), report)
            });
            for (r, (v, report)) in out.iter().enumerate() {
                assert_eq!(v.is_some(), r == 0);
                if let Some(v) = v {
                    let worst = v.iter().zip(&u).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                    assert!(worst <= 1e-10 * scale, "{ranks} ranks: {worst:e} of {scale:e}");
                }
                assert!(report.converged && report.halo_bytes > 0 && report.reductions > 0);
            }
            reports.push(out.into_iter().map(|o| o.1).collect());
        }
        reports
    }

    #[test]
    fn poisson_on_ranks_equals_one_rank() {
        let mesh = SimplexBox::unstructured(3, 4, 5).build().unwrap();
        let space = Space::simplex(&mesh, 2).unwrap();
        let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
        equals_one_rank::<Poisson>(&space, 1, Values::Nodal(coefficients), Krylov::Cg, Precond::Jacobi);
    }

    /// AMG with a partitioned hierarchy of several levels: the same
    /// solution as one rank's, in far fewer iterations than Jacobi takes
    /// across the same ranks.
    #[test]
    fn amg_on_ranks_equals_one_rank_in_fewer_iterations() {
        // P1 aggregated directly; P2 through its low-order level
        for (cells, degree) in [(10, 1), (6, 2)] {
            let mesh = SimplexBox::unstructured(3, cells, 8).build().unwrap();
            let space = Space::simplex(&mesh, degree).unwrap();
            let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
            let amg = AmgOptions { max_coarse: 20, ..AmgOptions::default() };
            let with = equals_one_rank::<Poisson>(&space, 1, Values::Nodal(coefficients.clone()), Krylov::Cg, Precond::Amg(amg));
            let without = equals_one_rank::<Poisson>(&space, 1, Values::Nodal(coefficients), Krylov::Cg, Precond::Jacobi);
            for (w, j) in with.iter().zip(&without) {
                let levels: Vec<usize> = w[0].amg.as_ref().map_or(Vec::new(), |a| a.last.levels.iter().map(|l| l.rows).collect());
                assert!(levels.len() >= 3, "P{degree}, {} ranks: levels {levels:?}", w.len());
                // the low-order level has the mesh's vertices
                assert!(degree == 1 || levels[1] == space.vertices.len(), "P{degree}: levels {levels:?}");
                assert!(3 * w[0].krylov_iterations < j[0].krylov_iterations, "P{degree}, {} ranks: AMG took {} iterations, Jacobi {}", w.len(), w[0].krylov_iterations, j[0].krylov_iterations);
                // a cycle exchanges on every level, several times on the finest:
                // more bytes an iteration than Jacobi's one product
                let per = |r: &DistributedReport| r.halo_bytes as f64 / r.krylov_iterations as f64;
                assert!(per(&w[0]) > 3.0 * per(&j[0]), "P{degree}: {} against {} bytes an iteration", per(&w[0]), per(&j[0]));
            }
        }
    }

    #[test]
    fn elasticity_with_amg_on_ranks_equals_one_rank() {
        let mesh = SimplexBox::unstructured(3, 6, 2).build().unwrap();
        let space = Space::simplex(&mesh, 1).unwrap();
        let lame: Vec<f64> = (0..space.n_cells()).flat_map(|_| [1.0, 0.7]).collect();
        let amg = AmgOptions { max_coarse: 8, ..AmgOptions::default() };
        let reports = equals_one_rank::<Elasticity>(&space, 3, Values::Cell(lame), Krylov::Cg, Precond::Amg(amg));
        assert!(reports.iter().all(|r| r[0].amg.as_ref().is_some_and(|a| a.last.levels.len() >= 2)));
    }

    #[test]
    fn elasticity_on_ranks_equals_one_rank_by_gmres() {
        let mesh = SimplexBox::unstructured(3, 4, 6).build().unwrap();
        let space = Space::simplex(&mesh, 1).unwrap();
        let lame: Vec<f64> = (0..space.n_cells()).flat_map(|_| [1.0, 0.7]).collect();
        equals_one_rank::<Elasticity>(&space, 3, Values::Cell(lame), Krylov::Gmres { restart: 30 }, Precond::Jacobi);
    }
}
