//! `fem bp` across ranks: the unit cube's element grid split into bricks,
//! one a rank ([`Bricks`]), each rank building only its piece (its brick,
//! one layer of elements beyond its high faces, and its ghost nodes);
//! the operator applied on L-vectors as a solver applies it, the halo
//! exchanged before every product (device to device through NCCL between
//! GPUs), and the same Jacobi-CG solve as on one rank with global sums.
//! Under `mpirun` it runs on any number of ranks, one included, so that
//! one rank's figures are measured the same way.

use super::{size_cells, BpOptions};
use fem_host::distributed::newton::cores;
use fem_host::memory::peak_rss_bytes;
use fem_host::distributed::{agree, Bricks, Communicator, Distributed, Halo, HaloBackend, HaloOperator, Overlap, Partition, Piece};
use fem_host::mesh::spectral::SpectralBox;
use fem_host::operator::tensor::gpu::GpuTensor;
use fem_host::operator::tensor::{tuning, Problem, TensorOperator};
use fem_host::operator::LinearOperator;
use fem_host::tune::Tuning;
use fem_host::{AnyBackend, Backend, CpuBackend, Error, Result};
use serde::Serialize;
use fem_host::stages::{Laps, StageSeconds};
use std::time::Instant;

/// What a run across ranks measured; per-rank figures in rank order.
#[derive(Clone, Debug, Serialize)]
pub struct AcrossReport {
    /// The benchmark problem.
    pub problem: Problem,
    /// Polynomial degree N.
    pub degree: usize,
    /// Ranks.
    pub ranks: usize,
    /// Bricks along x, y, z.
    pub bricks: [usize; 3],
    /// The split's quality (cut element faces, imbalance).
    pub partition: Partition,
    /// Elements of the whole mesh.
    pub elements: usize,
    /// Nodes of the whole mesh: the global L-vector's length.
    pub global_nodes: usize,
    /// The backend of each rank, as rank 0's describes itself.
    pub backend: String,
    /// The GPU kernel variant (`cpu-sum-factorised` on the CPU).
    pub kernel: String,
    /// How halo values travel: `nccl`, `host`, or `none` on one rank.
    pub halo_transport: String,
    /// Elements each rank applies (its brick and the layer beyond).
    pub rank_elements: Vec<usize>,
    /// Nodes each rank owns.
    pub owned_nodes: Vec<usize>,
    /// Ghost nodes of each rank.
    pub ghost_nodes: Vec<usize>,
    /// Median over the repeats of the slowest rank's seconds per
    /// application: halo exchange, gather, element kernel and scatter.
    pub seconds_per_apply: f64,
    /// Whether the products of the elements that read no ghost ran while
    /// the exchange travelled (on the GPU).
    pub overlapped: bool,
    /// The same with the exchange first and then every element, where the
    /// product overlapped: what the overlap saves.
    pub sequential_seconds_per_apply: Option<f64>,
    /// The same without the exchange (each rank's local product alone).
    pub local_seconds_per_apply: f64,
    /// Global nodes a second, in 10⁹.
    pub gdofs_per_second: f64,
    /// Applications back to back in each timed batch.
    pub applications_per_repeat: usize,
    /// Each rank's seconds of halo exchange an application (the host's
    /// time to queue it where it goes through NCCL).
    pub halo_seconds_per_apply: Vec<f64>,
    /// Bytes each rank sends and receives an application.
    pub halo_bytes_per_apply: Vec<usize>,
    /// max |y − y_cpu| / max |y_cpu| of the owned rows, the CPU operator
    /// applied to the same piece (0 on the CPU backend).
    pub max_rel_error_vs_cpu: f64,
    /// ‖A x‖ of the global test vector: the same on any number of ranks.
    pub product_norm: f64,
    /// The Jacobi-CG solve, when asked for.
    pub solve: Option<super::SolveReport>,
    /// Each rank's seconds building its piece, mesh, operator and halo.
    pub setup_seconds: Vec<f64>,
    /// Rank 0's seconds by stage, from the start to the report.
    pub stages: Vec<StageSeconds>,
    /// Each rank's peak resident host memory in bytes.
    pub peak_rss_bytes: Vec<usize>,
    /// The cores each rank may run on.
    pub cores: Vec<usize>,
}

/// The test vector's value at lattice node `g`: a function of the global
/// node, so every split applies the operator to the same vector.
fn test_value(g: u32) -> f64 {
    (g as u64).wrapping_mul(2_654_435_761) as u32 as f64 / u32::MAX as f64 - 0.5
}

/// One rank's part of the run of `o` on `any`, collective over `comm`.
pub fn run(o: &BpOptions, any: &AnyBackend, comm: &dyn Communicator, tuning: &Tuning, progress: &dyn Fn(&str)) -> Result<AcrossReport> {
    if o.tune || o.cpu_time {
        return Err(Error::InvalidArgument("across ranks fem bp times the operator and solves; tune the launch and time the CPU on one rank".into()));
    }
    if o.p_multigrid.is_some() {
        return Err(Error::InvalidArgument("across ranks fem bp's solve takes Jacobi-CG: p-multigrid's Q1 level is of the whole grid on one rank".into()));
    }
    if o.solve.is_some() && o.problem == Problem::Bp1 {
        return Err(Error::InvalidArgument("the solve uses the screened Poisson operator: choose bp3.5 or bp3.0".into()));
    }
    let mut marks = Laps::new();
    let cells = size_cells(o)?;
    // the degree and sizes, refused alike on every rank
    SpectralBox::check(o.degree, cells)?;
    progress("pieces");
    let bricks = Bricks::new(cells, comm.size())?;
    let piece = bricks.piece(comm, o.degree)?;
    marks.lap("piece");
    progress("mesh and geometric factors");
    let (mesh, interior) = agree(comm, bricks.mesh(comm.rank(), o.degree, o.deformation, &piece))?;
    marks.lap("mesh");
    let op = TensorOperator { interior, ..agree(comm, TensorOperator::new(o.problem, &mesh, o.lambda))? };
    marks.lap("operator");
    let made = Made { bricks, piece, mesh, op };
    match any {
        AnyBackend::Cuda(gpu) => {
            let launch = tuning::resolve(o.problem, o.degree, made.op.elements, true, &o.launch, tuning);
            let local = agree(comm, GpuTensor::with_launch(gpu, &made.op, launch))?;
            let kernel = format!("{:?}", local.kernel);
            on(o, gpu, comm, &made, (&local, Some(&local)), kernel, marks, progress)
        }
        AnyBackend::Cpu(cpu) => on(o, cpu, comm, &made, (&made.op, None), "cpu-sum-factorised".into(), marks, progress),
    }
}

/// What every rank built before its backend.
struct Made {
    bricks: Bricks,
    piece: Piece,
    mesh: SpectralBox,
    op: TensorOperator,
}

/// The run on this rank's backend `b`, its piece's product `local` (and
/// the same in two parts where its interior overlaps the exchange).
#[allow(clippy::too_many_arguments)]
fn on<B: HaloBackend>(o: &BpOptions, b: &B, comm: &dyn Communicator, m: &Made, (local, overlap): (&dyn LinearOperator<B, f64>, Option<&dyn Overlap<B>>), kernel: String, mut marks: Laps, progress: &dyn Fn(&str)) -> Result<AcrossReport> {
    let piece = &m.piece;
    let halo = agree(comm, Halo::new(b, comm, piece, 1))?;
    let d = Distributed::new(b, comm, piece.owned);
    let across = match overlap {
        Some(o) => HaloOperator::overlapped(o, &halo)?,
        None => HaloOperator::new(local, &halo)?,
    };
    let plain = HaloOperator::new(local, &halo)?;
    let xh: Vec<f64> = piece.nodes.iter().map(|&g| test_value(g)).collect();
    let x = b.upload(&xh)?;
    let mut y = b.zeros(piece.len())?;
    // the first exchange also connects the ranks
    across.apply(&d, &x, &mut y)?;
    b.synchronize()?;
    marks.lap("upload, halo and first product");
    let setup = marks.stages().iter().map(|s| s.seconds).sum::<f64>();
    progress("CPU reference");
    let yh = b.download(&y)?;
    let error = match b.kind() {
        fem_host::BackendKind::Cpu => 0.0,
        _ => {
            let cpu = CpuBackend::new(None)?;
            let mut reference = vec![0.0; piece.len()];
            m.op.apply(&cpu, &xh, &mut reference)?;
            let scale = comm_max(comm, reference[..piece.owned].iter().fold(0.0f64, |s, v| s.max(v.abs())))?;
            comm_max(comm, yh[..piece.owned].iter().zip(&reference).fold(0.0f64, |s, (a, r)| s.max((a - r).abs())))? / scale
        }
    };
    let product_norm = comm.sum_one(yh[..piece.owned].iter().map(|v| v * v).sum())?.sqrt();
    marks.lap("check against the CPU");
    progress("timing");
    let one = slowest(b, comm, 3, || across.apply(&d, &x, &mut y))? / 3.0;
    let batch = ((1e-3 / one).ceil() as usize).clamp(1, 1000);
    slowest(b, comm, batch, || across.apply(&d, &x, &mut y))?;
    halo.restart_counts();
    let seconds = median_of(o, b, comm, batch, || across.apply(&d, &x, &mut y))?;
    // the exchanges of the timed applications across ranks
    let applications = (batch * o.repeats.max(1)) as f64;
    let (halo_seconds, halo_bytes) = (halo.seconds(), halo.bytes());
    let sequential = match overlap {
        Some(_) => Some(median_of(o, b, comm, batch, || plain.apply(&d, &x, &mut y))?),
        None => None,
    };
    let local_seconds = median_of(o, b, comm, batch, || local.apply(b, &x, &mut y))?;
    marks.lap("timing");
    let solve = match o.solve {
        Some(rtol) => {
            progress("Jacobi-CG");
            let mut s = super::solve::jacobi(&d, &across, &m.op, &m.mesh, rtol, piece.owned)?;
            s.max_nodal_error = comm_max(comm, s.max_nodal_error)?;
            marks.lap("solve: right-hand side and Jacobi");
            marks.split_last("solve: CG", s.seconds);
            Some(s)
        }
        None => None,
    };
    let gather = |v: f64| comm.all_gather(&[v]);
    let counts = |v: usize| -> Result<Vec<usize>> { Ok(gather(v as f64)?.into_iter().map(|x| x as usize).collect()) };
    let halo_seconds = gather(halo_seconds)?.into_iter().map(|s| s / applications).collect();
    let halo_bytes = counts(halo_bytes)?.into_iter().map(|n| (n as f64 / applications).round() as usize).collect();
    Ok(AcrossReport {
        problem: o.problem,
        degree: o.degree,
        ranks: comm.size(),
        bricks: m.bricks.grid,
        partition: m.bricks.partition(),
        elements: m.bricks.cells.iter().product(),
        global_nodes: piece.global,
        backend: b.name(),
        kernel,
        halo_transport: match (comm.size(), halo.linked()) {
            (1, _) => "none",
            (_, true) => "nccl",
            _ => "host",
        }
        .into(),
        rank_elements: counts(m.op.elements)?,
        owned_nodes: counts(piece.owned)?,
        ghost_nodes: counts(piece.len() - piece.owned)?,
        seconds_per_apply: seconds,
        overlapped: overlap.is_some(),
        sequential_seconds_per_apply: sequential,
        local_seconds_per_apply: local_seconds,
        gdofs_per_second: piece.global as f64 / seconds / 1e9,
        applications_per_repeat: batch,
        halo_seconds_per_apply: halo_seconds,
        halo_bytes_per_apply: halo_bytes,
        max_rel_error_vs_cpu: error,
        product_norm,
        solve,
        setup_seconds: gather(setup)?,
        stages: marks.into_stages(),
        peak_rss_bytes: counts(peak_rss_bytes())?,
        cores: counts(cores())?,
    })
}

/// The largest of every rank's `v`.
fn comm_max(comm: &dyn Communicator, v: f64) -> Result<f64> {
    Ok(comm.all_gather(&[v])?.into_iter().fold(f64::NEG_INFINITY, f64::max))
}

/// Seconds of `batch` applications of `f` on every rank, started together,
/// until the slowest rank ends.
fn slowest<B: Backend>(b: &B, comm: &dyn Communicator, batch: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    b.synchronize()?;
    comm.sum_one(0.0)?;
    let t = Instant::now();
    for _ in 0..batch {
        f()?;
    }
    b.synchronize()?;
    comm_max(comm, t.elapsed().as_secs_f64())
}

/// The median over the repeats of the seconds an application of `f`
/// takes across ranks, in batches of `batch`.
fn median_of<B: Backend>(o: &BpOptions, b: &B, comm: &dyn Communicator, batch: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut all = (0..o.repeats.max(1)).map(|_| Ok(slowest(b, comm, batch, &mut f)? / batch as f64)).collect::<Result<Vec<f64>>>()?;
    Ok(median(&mut all))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
