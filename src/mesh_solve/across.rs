//! A solve across ranks. Rank 0 alone builds the whole problem, with the
//! host's cores to itself while the other ranks idle; it partitions the
//! cells by METIS and cuts every rank's share (its piece, subspace,
//! Dirichlet rows, load and auxiliary values), which it sends each rank
//! in one message. Every rank then sets up and solves on its piece, with
//! the halo exchanged before each product and global sums in the Krylov
//! method; rank 0 gathers the solution.

use super::problem::Problem;
use super::{element, l2_if_known, MeshSolveOptions, RankPiece, Sizes, Solution};
use fem_host::stages::Laps;
use fem_host::distributed::{self, agree, Communicator, Partition, Ranks, Share, Whole};
use fem_host::io::gmsh::GmshMesh;
use fem_host::problem::nonlinear::{NewtonReport, Setup};
use fem_host::{with_backend, AnyBackend, CpuBackend, Error, Result};
use fem_kernels::pointwise::Kernels;

/// What rank 0 keeps of the whole problem: the finest space and the
/// partition, for the gathered solution's error and output.
type Kept = (fem_host::space::Space, Partition);

/// [`super::run_on`] on several ranks.
pub(super) fn run(any: &AnyBackend, comm: &dyn Communicator, file: &GmshMesh, o: &MeshSolveOptions, stage: &(dyn Fn(&str) + Sync)) -> Result<Solution> {
    if o.time.is_some() {
        return Err(Error::InvalidArgument("time stepping runs on one rank; a distributed solve is stationary".into()));
    }
    let mut marks = Laps::new();
    let (kept, share) = if comm.rank() == 0 {
        let ranks = comm.size();
        let made = alone(|cpu| cut(cpu, ranks, file, o, &mut marks, stage));
        // the others idled while rank 0 worked; now they listen
        comm.wait_idle()?;
        let (kept, made) = agree(comm, made)?;
        (Some(kept), agree(comm, Share::scatter(comm, Some(made)))?)
    } else {
        stage("waiting for rank 0's pieces");
        comm.wait_idle()?;
        agree(comm, Ok(()))?;
        (None, agree(comm, Share::scatter(comm, None))?)
    };
    marks.lap("shares");
    stage("pattern");
    let cpu = CpuBackend::new(None)?;
    // u on the piece, its ghosts filled: the output piece's values
    let (local, r, host) = with_physics!(o.physics, K => solve_piece::<K>(any, comm, &cpu, &share, o, &mut marks, stage))?;
    stage("gather");
    let nc = share.constraints.nc;
    let u = share.piece.gather(comm, nc, &local[..share.piece.owned * nc])?;
    let fixed_here = share.constraints.fixed[..share.piece.owned * nc].iter().filter(|&&f| f).count();
    let fixed_rows = comm.sum_one(fixed_here as f64)? as usize;
    let ranks = Ranks::gather(comm, kept.as_ref().map_or(&share.partition, |k| &k.1), &r)?;
    let newton = NewtonReport {
        kernels: format!("{} on each of {} ranks, local tangent {}", any.name(), r.ranks, r.format),
        krylov: o.newton.krylov,
        precond: o.newton.precond,
        precision: o.newton.precision,
        rows: r.rows,
        krylov_iterations: r.krylov_iterations,
        converged: r.converged,
        residuals: r.residuals,
        steps: r.steps,
        setup_seconds: r.setup_seconds,
        split: r.split,
        amg: r.amg,
    };
    let whole = kept.zip(u).map(|((space, _), u)| (space, u));
    let sizes = Sizes {
        element: element(&share.space),
        cells: share.partition.cells.iter().sum(),
        rows: share.piece.global * nc,
        fixed_rows,
        l2_error: whole.as_ref().and_then(|(space, u)| l2_if_known(space, u, o)),
    };
    let report = sizes.report(o, host, marks, newton, None, Some(ranks));
    let piece = RankPiece { space: share.space, u: local, nodes: share.piece.nodes, own_cells: share.piece.own_cells };
    Ok(Solution { whole, piece: Some(piece), report })
}

/// `f` in a pool of all the host's cores: rank 0's work while the other
/// ranks of the host wait.
fn alone<R: Send>(f: impl FnOnce(&CpuBackend) -> Result<R> + Send) -> Result<R> {
    let cpu = CpuBackend::new(Some(distributed::newton::cores()))?;
    cpu.install(|| f(&cpu))
}

/// The whole problem on rank 0, partitioned into `ranks` and cut into
/// their shares; the finest space and partition kept.
fn cut(cpu: &CpuBackend, ranks: usize, file: &GmshMesh, o: &MeshSolveOptions, marks: &mut Laps, stage: &(dyn Fn(&str) + Sync)) -> Result<(Kept, (Share, Vec<Vec<u64>>))> {
    let problem = Problem::build(file, o, cpu, marks, stage)?;
    stage("partition");
    let (aux, at, boundary) = problem.aux(o)?;
    let space = problem.space();
    let partition = Partition::new(space, ranks, o.partitioner)?;
    marks.lap("partition");
    stage("shares");
    let whole = Whole { space, constraints: &problem.constraints, load: &problem.load, aux: at.view(&aux), boundary };
    let made = Share::cut(&whole, &partition)?;
    let Problem { mut nested, .. } = problem;
    let space = nested.spaces.pop().expect("the finest level");
    Ok(((space, partition), made))
}

/// Physics `K` set up on this rank's share and solved across the ranks:
/// u on the piece (ghosts filled), the distributed report, and the host
/// set-up seconds.
fn solve_piece<K: Kernels<f64> + 'static>(any: &AnyBackend, comm: &dyn Communicator, cpu: &CpuBackend, share: &Share, o: &MeshSolveOptions, marks: &mut Laps, stage: &dyn Fn(&str)) -> Result<(Vec<f64>, distributed::DistributedReport, f64)> {
    let local = &share.space;
    let part = share.boundary_part();
    let setup = agree(
        comm,
        Setup::<K>::constrained(cpu, local, share.aux(), &share.constraints, Some(&share.load))
            .and_then(|s| match &part {
                Some(p) => s.with_boundary_term(local, p),
                None => Ok(s),
            })
            .and_then(|s| match o.newton.precond {
                // AMG's low-order level below a high-order space, as on one rank
                fem_host::problem::nonlinear::Precond::Amg(_) => s.with_low_order(local),
                _ => Ok(s),
            }),
    )?;
    let host = marks.elapsed();
    marks.lap("pattern");
    stage("solve");
    let initial = share.constraints.initial();
    let (local, r) = agree(comm, with_backend!(any, |b| distributed::newton::solve(b, comm, &share.piece, &setup, &initial, &o.newton)))?;
    Ok((local, r, host))
}
