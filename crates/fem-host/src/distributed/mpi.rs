//! [`Communicator`] over MPI (the `mpi` crate on the system's Open MPI or
//! MPICH): one process a rank, started by `mpirun`.

use super::comm::Communicator;
use crate::{Error, Result};
use mpi::datatype::{Partition, PartitionMut};
use mpi::traits::*;
// the name is taken by ours; its methods are still wanted
use mpi::traits::Communicator as _;
use mpi::Count;

/// The world communicator of an MPI job.
pub struct Mpi {
    world: mpi::topology::SimpleCommunicator,
    // MPI is finalised when this drops: after every use of `world`
    _universe: mpi::environment::Universe,
}

impl Mpi {
    /// Whether a launcher (`mpirun`, `mpiexec`, `srun`) started this
    /// process as one of several ranks: only then is MPI initialised, so
    /// that a plain command pays nothing for it.
    pub fn launched() -> bool {
        ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"].iter().any(|v| std::env::var_os(v).is_some())
    }

    /// MPI initialised with the world communicator.
    pub fn init() -> Result<Self> {
        let universe = mpi::initialize().ok_or_else(|| Error::InvalidArgument("MPI was initialised already".into()))?;
        Ok(Self { world: universe.world(), _universe: universe })
    }

    /// Ends every rank of the job with `code`: what a rank that failed
    /// does, so that the others do not wait for it forever.
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}

/// Counts and displacements of `lens`, as MPI takes them.
fn layout(lens: &[usize]) -> Result<(Vec<Count>, Vec<Count>)> {
    let count = |n: usize| Count::try_from(n).map_err(|_| Error::InvalidArgument(format!("{n} values exceed one MPI message")));
    let counts = lens.iter().map(|&n| count(n)).collect::<Result<Vec<_>>>()?;
    let mut displs = Vec::with_capacity(lens.len());
    let mut at = 0;
    for &n in lens {
        displs.push(count(at)?);
        at += n;
    }
    Ok((counts, displs))
}

impl Communicator for Mpi {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }
    fn size(&self) -> usize {
        self.world.size() as usize
    }
    fn sum(&self, v: &mut [f64]) -> Result<()> {
        let send = v.to_vec();
        self.world.all_reduce_into(&send[..], v, mpi::collective::SystemOperation::sum());
        Ok(())
    }
    fn all_to_all(&self, send: &[Vec<u64>]) -> Result<Vec<Vec<u64>>> {
        let n = self.size();
        if send.len() != n {
            return Err(Error::InvalidArgument(format!("an all-to-all of {n} ranks takes {n} lists, not {}", send.len())));
        }
        let lens: Vec<u64> = send.iter().map(|s| s.len() as u64).collect();
        let mut got = vec![0u64; n];
        self.world.all_to_all_into(&lens[..], &mut got[..]);
        let (sc, sd) = layout(&send.iter().map(Vec::len).collect::<Vec<_>>())?;
        let got: Vec<usize> = got.iter().map(|&g| g as usize).collect();
        let (rc, rd) = layout(&got)?;
        let flat: Vec<u64> = send.concat();
        let mut recv = vec![0u64; got.iter().sum()];
        {
            let mut into = PartitionMut::new(&mut recv[..], rc, &rd[..]);
            self.world.all_to_all_varcount_into(&Partition::new(&flat[..], sc, &sd[..]), &mut into);
        }
        let mut out = Vec::with_capacity(n);
        let mut at = 0;
        for g in got {
            out.push(recv[at..at + g].to_vec());
            at += g;
        }
        Ok(out)
    }
    fn exchange(&self, send: &[(usize, &[f64])], recv: &mut [(usize, &mut [f64])]) -> Result<()> {
        mpi::request::scope(|scope| {
            let sends: Vec<_> = send.iter().map(|&(q, v)| self.world.process_at_rank(q as i32).immediate_send(scope, v)).collect();
            let recvs: Vec<_> = recv.iter_mut().map(|(q, buf)| self.world.process_at_rank(*q as i32).immediate_receive_into(scope, &mut **buf)).collect();
            for r in recvs {
                r.wait();
            }
            for s in sends {
                s.wait();
            }
        });
        Ok(())
    }
    fn gather(&self, v: &[f64]) -> Result<Option<Vec<f64>>> {
        let root = self.world.process_at_rank(0);
        let mine = v.len() as u64;
        if self.rank() != 0 {
            root.gather_into(&mine);
            root.gather_varcount_into(v);
            return Ok(None);
        }
        let mut lens = vec![0u64; self.size()];
        root.gather_into_root(&mine, &mut lens[..]);
        let lens: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        let (c, d) = layout(&lens)?;
        let mut out = vec![0.0; lens.iter().sum()];
        {
            let mut into = PartitionMut::new(&mut out[..], c, &d[..]);
            root.gather_varcount_into_root(v, &mut into);
        }
        Ok(Some(out))
    }
    fn wait_idle(&self) -> Result<()> {
        // MPI's blocking calls spin on a core; a pending barrier tested
        // now and then leaves the cores to the rank at work
        let mut pending = self.world.immediate_barrier();
        loop {
            match pending.test() {
                Ok(_) => return Ok(()),
                Err(p) => pending = p,
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    fn all_gather(&self, v: &[f64]) -> Result<Vec<f64>> {
        let n = self.size();
        let mut lens = vec![0u64; n];
        self.world.all_gather_into(&(v.len() as u64), &mut lens[..]);
        let lens: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        let (c, d) = layout(&lens)?;
        let mut out = vec![0.0; lens.iter().sum()];
        {
            let mut into = PartitionMut::new(&mut out[..], c, &d[..]);
            self.world.all_gather_varcount_into(v, &mut into);
        }
        Ok(out)
    }
}
