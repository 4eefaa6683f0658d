//! The communication a distributed solve needs, behind one trait: global
//! sums (Krylov methods' dot products), neighbour exchanges (halo values),
//! an all-to-all (rank 0's shares of the problem, at set-up), gathers
//! (the solution, for output; every rank's figures) and an idle wait. [`Serial`] is the one-rank
//! case, [`Threads`] runs ranks as threads of one process (the tests'
//! harness: uneven partitions and empty ranks without `mpirun`), and
//! `Mpi` (feature `mpi`) is the real thing.

use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Barrier, Condvar, Mutex};

/// Messages between the ranks of one distributed solve. Every method is
/// collective (all ranks call it, in the same order) except that
/// [`Communicator::exchange`] involves only the ranks named.
pub trait Communicator {
    /// This rank, from 0.
    fn rank(&self) -> usize;
    /// Ranks in all.
    fn size(&self) -> usize;
    /// Replaces every entry of `v` by its sum over the ranks.
    fn sum(&self, v: &mut [f64]) -> Result<()>;
    /// `send[q]` goes to rank `q`; returns what each rank sent here.
    fn all_to_all(&self, send: &[Vec<u64>]) -> Result<Vec<Vec<u64>>>;
    /// Sends each `(rank, values)` of `send` and fills each `(rank,
    /// buffer)` of `recv` with what that rank sends here (the lengths
    /// agreed beforehand).
    fn exchange(&self, send: &[(usize, &[f64])], recv: &mut [(usize, &mut [f64])]) -> Result<()>;
    /// Every rank's `v`, concatenated in rank order, on every rank.
    fn all_gather(&self, v: &[f64]) -> Result<Vec<f64>>;

    /// The sum of `x` over the ranks.
    fn sum_one(&self, x: f64) -> Result<f64> {
        let mut v = [x];
        self.sum(&mut v)?;
        Ok(v[0])
    }
    /// Every rank's `v`, concatenated in rank order, on rank 0 (`None`
    /// elsewhere): the solution for output, without a copy on every rank.
    fn gather(&self, v: &[f64]) -> Result<Option<Vec<f64>>> {
        let all = self.all_gather(v)?;
        Ok((self.rank() == 0).then_some(all))
    }
    /// Waits until every rank has called it, the waiting ranks idle rather
    /// than spinning: for a rank that works alone (rank 0 building the
    /// pieces) with the host's cores to itself.
    fn wait_idle(&self) -> Result<()> {
        self.sum_one(0.0).map(|_| ())
    }
    /// Whether every rank passes `ok`: the same answer on all ranks, so
    /// that one rank's error stops them all instead of leaving the others
    /// waiting in the next collective.
    fn all_ok(&self, ok: bool) -> Result<bool> {
        Ok(self.sum_one(if ok { 0.0 } else { 1.0 })? == 0.0)
    }
}

/// Every rank's `Result` made one: `Ok` on all ranks when all succeeded,
/// else an error on every rank (its own where it failed).
pub fn agree<T>(comm: &dyn Communicator, r: Result<T>) -> Result<T> {
    if comm.all_ok(r.is_ok())? {
        return r;
    }
    match r {
        Err(e) => Err(e),
        Ok(_) => Err(Error::InvalidArgument("another rank failed; its message says why".into())),
    }
}

/// One rank: sums and gathers are the values themselves.
#[derive(Clone, Copy, Debug, Default)]
pub struct Serial;

impl Communicator for Serial {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn sum(&self, _: &mut [f64]) -> Result<()> {
        Ok(())
    }
    fn all_to_all(&self, send: &[Vec<u64>]) -> Result<Vec<Vec<u64>>> {
        Ok(send.to_vec())
    }
    fn exchange(&self, send: &[(usize, &[f64])], recv: &mut [(usize, &mut [f64])]) -> Result<()> {
        if send.iter().any(|s| s.0 != 0) || recv.iter().any(|r| r.0 != 0) {
            return Err(Error::InvalidArgument("a one-rank exchange names another rank".into()));
        }
        Ok(())
    }
    fn all_gather(&self, v: &[f64]) -> Result<Vec<f64>> {
        Ok(v.to_vec())
    }
}

/// Mailboxes shared by the ranks of [`Threads`].
struct Shared {
    size: usize,
    /// Point-to-point messages by (from, to), in order.
    mail: Mutex<HashMap<(usize, usize), std::collections::VecDeque<Vec<u8>>>>,
    arrived: Condvar,
    barrier: Barrier,
}

/// A rank of a distributed solve run as a thread: [`Threads::run`] starts
/// `size` of them in one process, with the same collective semantics as
/// MPI ranks.
pub struct Threads {
    rank: usize,
    shared: Arc<Shared>,
}

impl Threads {
    /// Runs `f(comm)` on `size` ranks, one thread each, and returns their
    /// results in rank order.
    pub fn run<R: Send>(size: usize, f: impl Fn(&Threads) -> R + Sync) -> Vec<R> {
        let shared = Arc::new(Shared { size, mail: Mutex::new(HashMap::new()), arrived: Condvar::new(), barrier: Barrier::new(size) });
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..size)
                .map(|rank| {
                    let (shared, f) = (shared.clone(), &f);
                    s.spawn(move || f(&Threads { rank, shared }))
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a rank's thread panicked")).collect()
        })
    }

    fn post(&self, to: usize, bytes: Vec<u8>) {
        let mut mail = self.shared.mail.lock().expect("mailbox");
        mail.entry((self.rank, to)).or_default().push_back(bytes);
        self.shared.arrived.notify_all();
    }

    fn take(&self, from: usize) -> Vec<u8> {
        let mut mail = self.shared.mail.lock().expect("mailbox");
        loop {
            if let Some(m) = mail.get_mut(&(from, self.rank)).and_then(|q| q.pop_front()) {
                return m;
            }
            mail = self.shared.arrived.wait(mail).expect("mailbox");
        }
    }

    /// Everyone's bytes, in rank order.
    fn gather_bytes(&self, mine: Vec<u8>) -> Vec<Vec<u8>> {
        for q in 0..self.shared.size {
            self.post(q, mine.clone());
        }
        let all = (0..self.shared.size).map(|q| self.take(q)).collect();
        // no rank starts the next collective's posts before all have read
        self.shared.barrier.wait();
        all
    }
}

fn to_bytes<T: Copy>(v: &[T]) -> Vec<u8> {
    // SAFETY: plain numbers (f64, u64) viewed as their bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }.to_vec()
}

fn from_bytes<T: Copy + Default>(b: &[u8]) -> Vec<T> {
    let mut out = vec![T::default(); b.len() / std::mem::size_of::<T>()];
    // SAFETY: the bytes of plain numbers of the same type, copied back.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), out.as_mut_ptr() as *mut u8, out.len() * std::mem::size_of::<T>()) };
    out
}

impl Communicator for Threads {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.shared.size
    }
    fn sum(&self, v: &mut [f64]) -> Result<()> {
        let all = self.gather_bytes(to_bytes(v));
        // summed in rank order on every rank: the same result everywhere
        v.fill(0.0);
        for b in all {
            v.iter_mut().zip(from_bytes::<f64>(&b)).for_each(|(s, x)| *s += x);
        }
        Ok(())
    }
    fn all_to_all(&self, send: &[Vec<u64>]) -> Result<Vec<Vec<u64>>> {
        if send.len() != self.size() {
            return Err(Error::InvalidArgument(format!("an all-to-all of {} ranks takes {} lists, not {}", self.size(), self.size(), send.len())));
        }
        for (q, s) in send.iter().enumerate() {
            self.post(q, to_bytes(s));
        }
        let out = (0..self.size()).map(|q| from_bytes(&self.take(q))).collect();
        self.shared.barrier.wait();
        Ok(out)
    }
    fn exchange(&self, send: &[(usize, &[f64])], recv: &mut [(usize, &mut [f64])]) -> Result<()> {
        for &(q, v) in send {
            self.post(q, to_bytes(v));
        }
        for (q, buf) in recv.iter_mut() {
            let v: Vec<f64> = from_bytes(&self.take(*q));
            if v.len() != buf.len() {
                return Err(Error::InvalidArgument(format!("rank {} sent {} values where rank {} expects {}", q, v.len(), self.rank, buf.len())));
            }
            buf.copy_from_slice(&v);
        }
        Ok(())
    }
    fn all_gather(&self, v: &[f64]) -> Result<Vec<f64>> {
        Ok(self.gather_bytes(to_bytes(v)).iter().flat_map(|b| from_bytes::<f64>(b)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_sum_gather_and_exchange_like_ranks() {
        let out = Threads::run(3, |c| {
            let mut v = [c.rank() as f64, 1.0];
            c.sum(&mut v).unwrap();
            let all = c.all_gather(&vec![c.rank() as f64; c.rank()]).unwrap();
            // everyone sends its rank to the next, receives from the previous
            let (next, prev) = ((c.rank() + 1) % 3, (c.rank() + 2) % 3);
            let mut got = [0.0];
            c.exchange(&[(next, &[c.rank() as f64 * 10.0])], &mut [(prev, &mut got)]).unwrap();
            let lists: Vec<Vec<u64>> = (0..3).map(|q| vec![(c.rank() * 10 + q) as u64]).collect();
            let back = c.all_to_all(&lists).unwrap();
            let ok = c.all_ok(c.rank() != 1).unwrap();
            c.wait_idle().unwrap();
            let root = c.gather(&[c.rank() as f64 + 0.5]).unwrap();
            (v, all, got[0], back, ok, root)
        });
        for (r, (v, all, got, back, ok, root)) in out.into_iter().enumerate() {
            assert_eq!(root, (r == 0).then(|| vec![0.5, 1.5, 2.5]));
            assert_eq!(v, [3.0, 3.0]);
            assert_eq!(all, vec![1.0, 2.0, 2.0]);
            assert_eq!(got, ((r + 2) % 3) as f64 * 10.0);
            assert_eq!(back, (0..3).map(|q| vec![(q * 10 + r) as u64]).collect::<Vec<_>>());
            assert!(!ok);
        }
    }
}
