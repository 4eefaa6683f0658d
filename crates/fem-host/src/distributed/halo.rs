//! The halo exchange: each rank sends the owned values its neighbours read
//! as ghosts and fills its own ghost rows from their owners, before every
//! operator application. The values to send are packed on the backend
//! (a gather on the device for the GPU). Between GPUs the packed values go
//! device to device through NCCL, on a stream of the exchange's own that
//! the backend's stream waits for, so a product waits for its ghosts
//! without the host and the work queued between the post and the wait
//! (interior elements) runs beside the exchange; elsewhere (the CPU, or GPUs
//! without NCCL, or `FEM_NCCL=off`) they cross through the host and the
//! [`Communicator`].

use super::comm::Communicator;
use super::piece::Piece;
use crate::{Backend, CpuBackend, CudaBackend, Error, Result};
use cudarc::driver::CudaSlice;
use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::rc::Rc;

/// What a backend does for the halo exchange.
pub trait HaloBackend: Backend {
    /// Rows to send, as the backend reads them.
    type SendList;
    /// The send list of rows `rows`.
    fn send_list(&self, rows: &[u32]) -> Result<Self::SendList>;
    /// `out ← x[rows]` on the host.
    fn pack(&self, list: &Self::SendList, x: &Self::Vector<f64>, out: &mut [f64]) -> Result<()>;
    /// `x[at..at + v.len()] ← v`.
    fn write_at(&self, x: &mut Self::Vector<f64>, at: usize, v: &[f64]) -> Result<()>;
    /// A device-to-device link among the ranks (NCCL between GPUs).
    type Link;
    /// The link among `comm`'s ranks, made collectively: `None` where the
    /// backend has none or some rank lacks it (all ranks agree).
    fn link(&self, comm: &dyn Communicator) -> Result<Option<Self::Link>>;
    /// Queues the exchange of `x`'s values through `link`, after the work
    /// queued so far on the backend: the rows of each send list to its
    /// rank, the ghost rows `recv` of `x` from theirs (through `received`,
    /// a buffer for each, made on first use); [`Self::wait_linked`] makes
    /// the backend's later work wait for it.
    fn post_linked(&self, link: &Self::Link, send: &[(usize, Self::SendList, usize)], recv: &[(usize, Range<usize>)], received: &mut Vec<Self::Vector<f64>>, x: &mut Self::Vector<f64>) -> Result<()>;
    /// The backend's work queued from now on waits for the exchange
    /// [`Self::post_linked`] queued.
    fn wait_linked(&self, link: &Self::Link) -> Result<()>;
    /// `halo`'s exchange posted into the ghost rows of `x` itself, held
    /// shared, where the backend's vectors let it (device memory): `false`
    /// where the caller must exchange into a copy. The ghost rows of a
    /// distributed vector are the halo's to fill whoever holds the
    /// vector; this saves an operator the copy of its input (on an H200,
    /// 0.39 of BP5's 4.26 ms at 99M nodes). [`Halo::wait`] ends it.
    fn post_in_place(&self, halo: &Halo<Self>, comm: &dyn Communicator, x: &Self::Vector<f64>) -> Result<bool>
    where
        Self: Sized;
}

impl HaloBackend for CpuBackend {
    type SendList = Vec<u32>;
    fn send_list(&self, rows: &[u32]) -> Result<Vec<u32>> {
        Ok(rows.to_vec())
    }
    fn pack(&self, list: &Vec<u32>, x: &Vec<f64>, out: &mut [f64]) -> Result<()> {
        out.iter_mut().zip(list).for_each(|(o, &r)| *o = x[r as usize]);
        Ok(())
    }
    fn write_at(&self, x: &mut Vec<f64>, at: usize, v: &[f64]) -> Result<()> {
        x[at..at + v.len()].copy_from_slice(v);
        Ok(())
    }
    type Link = std::convert::Infallible;
    fn link(&self, _: &dyn Communicator) -> Result<Option<Self::Link>> {
        Ok(None)
    }
    fn post_linked(&self, link: &Self::Link, _: &[(usize, Vec<u32>, usize)], _: &[(usize, Range<usize>)], _: &mut Vec<Vec<f64>>, _: &mut Vec<f64>) -> Result<()> {
        match *link {}
    }
    fn wait_linked(&self, link: &Self::Link) -> Result<()> {
        match *link {}
    }
    fn post_in_place(&self, _: &Halo<Self>, _: &dyn Communicator, _: &Vec<f64>) -> Result<bool> {
        Ok(false)
    }
}

/// NCCL among the ranks' GPUs: one communicator for every halo of a solve
/// (each level of a hierarchy has its own), made once.
pub struct NcclLink {
    /// NCCL's communicator, which queues on `stream`.
    comm: cudarc::nccl::Comm,
    /// The exchanges' stream, beside the backend's: work queued on the
    /// backend's stream between an exchange's post and its wait runs
    /// while the values travel.
    stream: std::sync::Arc<cudarc::driver::CudaStream>,
    /// The backend's work an exchange waits for.
    ready: cudarc::driver::CudaEvent,
    /// An exchange's end, which the backend's later work waits for.
    done: cudarc::driver::CudaEvent,
}

fn nccl_error(e: cudarc::nccl::result::NcclError) -> Error {
    Error::InvalidArgument(format!("NCCL: {e:?}"))
}

/// The rows on the device and a buffer the gather fills.
pub struct DeviceSendList {
    rows: CudaSlice<u32>,
    packed: RefCell<CudaSlice<f64>>,
}

impl HaloBackend for CudaBackend {
    type SendList = DeviceSendList;
    fn send_list(&self, rows: &[u32]) -> Result<DeviceSendList> {
        Ok(DeviceSendList { rows: self.htod(rows)?, packed: RefCell::new(self.zeros(rows.len())?) })
    }
    fn pack(&self, list: &DeviceSendList, x: &CudaSlice<f64>, out: &mut [f64]) -> Result<()> {
        let mut packed = list.packed.borrow_mut();
        crate::sparse::device::gpu_gather(self, &list.rows, x, &mut packed)?;
        self.stream().memcpy_dtoh(&*packed, out)?;
        Ok(())
    }
    fn write_at(&self, x: &mut CudaSlice<f64>, at: usize, v: &[f64]) -> Result<()> {
        self.stream().memcpy_htod(v, &mut x.slice_mut(at..at + v.len()))?;
        Ok(())
    }
    type Link = NcclLink;
    fn link(&self, comm: &dyn Communicator) -> Result<Option<NcclLink>> {
        // SAFETY: only probes whether the library can be opened.
        let here = std::env::var("FEM_NCCL").as_deref() != Ok("off") && unsafe { cudarc::nccl::sys::is_culib_present() };
        if comm.size() < 2 || !comm.all_ok(here)? {
            return Ok(None);
        }
        // NCCL takes one rank a GPU: ranks sharing one exchange through the host
        let uuid = self.stream().context().uuid()?;
        let bytes: Vec<f64> = uuid.bytes.iter().map(|&b| b as u8 as f64).collect();
        let all = comm.all_gather(&bytes)?;
        let mut devices: Vec<&[f64]> = all.chunks(bytes.len()).collect();
        devices.sort_by(|a, b| a.partial_cmp(b).expect("bytes"));
        if devices.windows(2).any(|w| w[0] == w[1]) {
            return Ok(None);
        }
        // rank 0's unique id, to every rank
        let words: Vec<u64> = match comm.rank() {
            0 => cudarc::nccl::Id::new().map_err(nccl_error)?.internal().chunks(8).map(|c| c.iter().enumerate().fold(0u64, |w, (k, &b)| w | ((b as u8 as u64) << (8 * k)))).collect(),
            _ => Vec::new(),
        };
        let sent = vec![words; comm.size()];
        let got = comm.all_to_all(&sent)?;
        let mut id = [0 as std::ffi::c_char; 128];
        for (k, b) in id.iter_mut().enumerate() {
            *b = (got[0][k / 8] >> (8 * (k % 8))) as u8 as std::ffi::c_char;
        }
        // the highest priority: the exchange's kernels take SMs as the
        // element kernel's blocks free them, rather than after it
        self.stream().context().bind_to_thread()?;
        let (_, highest) = cudarc::driver::result::stream::get_priority_range()?;
        let stream = self.stream().context().new_stream_with_priority(highest)?;
        stream.join(self.stream())?;
        let nccl = cudarc::nccl::Comm::from_rank(stream.clone(), comm.rank(), comm.size(), cudarc::nccl::Id::uninit(id)).map_err(nccl_error)?;
        let event = || self.stream().context().new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING));
        Ok(Some(NcclLink { comm: nccl, stream, ready: event()?, done: event()? }))
    }
    fn post_linked(&self, link: &NcclLink, send: &[(usize, DeviceSendList, usize)], recv: &[(usize, Range<usize>)], received: &mut Vec<CudaSlice<f64>>, x: &mut CudaSlice<f64>) -> Result<()> {
        link.ready.record(self.stream())?;
        link.stream.wait(&link.ready)?;
        for (_, list, _) in send {
            crate::sparse::device::gpu_gather_on(self, &link.stream, &list.rows, x, &mut list.packed.borrow_mut())?;
        }
        if received.len() != recv.len() {
            *received = recv.iter().map(|(_, r)| self.zeros(r.len())).collect::<Result<_>>()?;
        }
        let packed: Vec<_> = send.iter().map(|(_, l, _)| l.packed.borrow()).collect();
        {
            // sends and receives in one group: no pair of ranks waits on the other
            let mut group = link.comm.group();
            for ((q, _, _), p) in send.iter().zip(&packed) {
                group.send(p.as_view(), *q as i32).map_err(nccl_error)?;
            }
            for ((q, _), buf) in recv.iter().zip(received.iter_mut()) {
                group.recv(buf.as_view_mut(), *q as i32).map_err(nccl_error)?;
            }
        }
        for ((_, r), buf) in recv.iter().zip(received.iter()) {
            link.stream.memcpy_dtod(buf, &mut x.slice_mut(r.clone()))?;
        }
        link.done.record(&link.stream)?;
        Ok(())
    }
    fn wait_linked(&self, link: &NcclLink) -> Result<()> {
        self.stream().wait(&link.done)?;
        Ok(())
    }
    fn post_in_place(&self, halo: &Halo<Self>, comm: &dyn Communicator, x: &CudaSlice<f64>) -> Result<bool> {
        use cudarc::driver::DevicePtr;
        let (ptr, sync) = x.device_ptr(self.stream());
        // SAFETY: the alias covers x's allocation and is used, in stream
        // order, only to queue the exchange; `leak` then gives it up
        // without freeing x's memory.
        let mut alias = unsafe { self.stream().upgrade_device_ptr::<f64>(ptr, x.len()) };
        let posted = halo.post(self, comm, &mut alias);
        alias.leak();
        drop(sync);
        posted.map(|_| true)
    }
}

/// One rank's halo exchange of an `nc`-component field.
pub struct Halo<B: HaloBackend> {
    /// Owned rows: ghosts start here.
    owned_rows: usize,
    /// Rows of the piece, owned and ghost.
    rows: usize,
    send: Vec<(usize, B::SendList, usize)>,
    /// Ghost rows from each owner, from `owned_rows` on.
    recv: Vec<(usize, Range<usize>)>,
    seconds: Cell<f64>,
    values: Cell<usize>,
    link: Option<Rc<B::Link>>,
    /// The linked exchange's buffer for each owner's ghosts.
    received: RefCell<Vec<B::Vector<f64>>>,
}

impl<B: HaloBackend> Halo<B> {
    /// The exchange of `piece`'s ghosts among `comm`'s ranks, for `nc`
    /// components a node. Collective (the ranks set up their link).
    pub fn new(b: &B, comm: &dyn Communicator, piece: &Piece, nc: usize) -> Result<Self> {
        let rows = |nodes: &[u32]| -> Vec<u32> { nodes.iter().flat_map(|&n| (0..nc as u32).map(move |c| n * nc as u32 + c)).collect() };
        let send: Vec<(usize, Vec<u32>)> = piece.send.iter().map(|(q, nodes)| (*q, rows(nodes))).collect();
        let recv = piece.recv.iter().map(|(q, r)| (*q, r.start * nc..r.end * nc)).collect();
        let link = b.link(comm)?.map(Rc::new);
        Self::from_lists(b, piece.owned * nc, piece.len() * nc, &send, recv, link)
    }

    /// The exchange of a vector of `rows` rows whose first `owned_rows`
    /// this rank owns: the rows `send` names go to each rank, the ghost
    /// rows of `recv` come from each (a hierarchy's coarser levels, whose
    /// rows are no mesh's nodes). `link` may be another halo's
    /// ([`Halo::shared_link`]): the ranks connect once.
    pub fn from_lists(b: &B, owned_rows: usize, rows: usize, send: &[(usize, Vec<u32>)], recv: Vec<(usize, Range<usize>)>, link: Option<Rc<B::Link>>) -> Result<Self> {
        let send = send.iter().map(|(q, r)| Ok((*q, b.send_list(r)?, r.len()))).collect::<Result<_>>()?;
        Ok(Self { owned_rows, rows, send, recv, seconds: Cell::new(0.0), values: Cell::new(0), link, received: RefCell::new(Vec::new()) })
    }

    /// This halo's device-to-device link, for other halos among the same
    /// ranks.
    pub fn shared_link(&self) -> Option<Rc<B::Link>> {
        self.link.clone()
    }

    /// Rows this rank owns.
    pub fn owned_rows(&self) -> usize {
        self.owned_rows
    }

    /// Rows of the piece: owned, then ghosts.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Whether the values go device to device (NCCL), not through the host.
    pub fn linked(&self) -> bool {
        self.link.is_some()
    }

    /// Fills the ghost rows of `x` with their owners' values: queued on
    /// the device when linked, done when it returns otherwise.
    pub fn update(&self, b: &B, comm: &dyn Communicator, x: &mut B::Vector<f64>) -> Result<()> {
        self.post(b, comm, x)?;
        self.wait(b)
    }

    /// Starts the exchange of `x`: between GPUs it is queued on the
    /// link's stream, and the backend's work queued before [`Self::wait`]
    /// runs beside it (the products of the elements that read no ghost);
    /// through the host it is done here.
    pub fn post(&self, b: &B, comm: &dyn Communicator, x: &mut B::Vector<f64>) -> Result<()> {
        let start = std::time::Instant::now();
        match &self.link {
            Some(link) => b.post_linked(link, &self.send, &self.recv, &mut self.received.borrow_mut(), x)?,
            None => self.through_host(b, comm, x)?,
        }
        let sent: usize = self.send.iter().map(|s| s.2).sum();
        self.values.set(self.values.get() + sent + self.rows - self.owned_rows);
        self.seconds.set(self.seconds.get() + start.elapsed().as_secs_f64());
        Ok(())
    }

    /// The backend's work queued from now on reads the ghost rows the
    /// posted exchange fills.
    pub fn wait(&self, b: &B) -> Result<()> {
        match &self.link {
            Some(link) => b.wait_linked(link),
            None => Ok(()),
        }
    }

    /// The exchange through the host: packed values down, across by the
    /// communicator, ghosts up.
    fn through_host(&self, b: &B, comm: &dyn Communicator, x: &mut B::Vector<f64>) -> Result<()> {
        let mut packed: Vec<Vec<f64>> = Vec::with_capacity(self.send.len());
        for (_, list, n) in &self.send {
            let mut out = vec![0.0; *n];
            b.pack(list, x, &mut out)?;
            packed.push(out);
        }
        let mut ghosts = vec![0.0; self.rows - self.owned_rows];
        {
            let sends: Vec<(usize, &[f64])> = self.send.iter().zip(&packed).map(|((q, _, _), v)| (*q, v.as_slice())).collect();
            let mut rest = ghosts.as_mut_slice();
            let mut recvs: Vec<(usize, &mut [f64])> = Vec::with_capacity(self.recv.len());
            for (q, r) in &self.recv {
                let (head, tail) = std::mem::take(&mut rest).split_at_mut(r.len());
                recvs.push((*q, head));
                rest = tail;
            }
            comm.exchange(&sends, &mut recvs)?;
        }
        match ghosts.is_empty() {
            true => Ok(()),
            false => b.write_at(x, self.owned_rows, &ghosts),
        }
    }

    /// Counts exchanges from here on (the set-up's first exchange, which
    /// connects the ranks, is not the solve's).
    pub fn restart_counts(&self) {
        self.seconds.set(0.0);
        self.values.set(0);
    }

    /// Seconds spent in exchanges so far, packing and copies included.
    pub fn seconds(&self) -> f64 {
        self.seconds.get()
    }

    /// Bytes this rank sent and received in exchanges so far.
    pub fn bytes(&self) -> usize {
        self.values.get() * std::mem::size_of::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::{Partition, Partitioner, Threads};
    use crate::mesh::simplex::SimplexBox;
    use crate::space::Space;

    #[test]
    fn ghosts_receive_their_owners_values() {
        let mesh = SimplexBox::unstructured(3, 3, 7).build().unwrap();
        let space = Space::simplex(&mesh, 1).unwrap();
        // uneven parts (the curve cuts 5 runs of unequal shape), and more
        // ranks than cells: most own nothing
        for (ranks, how) in [(5, Partitioner::Curve), (2, Partitioner::Metis), (space.n_cells() + 3, Partitioner::Metis)] {
            let partition = Partition::new(&space, ranks, how).unwrap();
            let pieces = Piece::split(&space, &partition).unwrap();
            let ok = Threads::run(ranks, |c| {
                let cpu = CpuBackend::new(Some(1)).unwrap();
                let piece = &pieces[c.rank()];
                let nc = 2;
                let halo = Halo::new(&cpu, c, piece, nc).unwrap();
                // owned rows hold a value of their global row, ghosts NaN until filled
                let value = |g: u32, k: usize| (g as usize * nc + k) as f64 + 0.5;
                let mut x: Vec<f64> = (0..piece.len() * nc).map(|r| if r < piece.owned * nc { value(piece.nodes[r / nc], r % nc) } else { f64::NAN }).collect();
                halo.update(&cpu, c, &mut x).unwrap();
                (0..piece.len() * nc).all(|r| x[r] == value(piece.nodes[r / nc], r % nc))
            });
            assert!(ok.iter().all(|&o| o), "{ranks} ranks by {how:?}: {ok:?}");
        }
    }
}
