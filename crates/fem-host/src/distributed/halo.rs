//! The halo exchange: each rank sends the owned values its neighbours read
//! as ghosts and fills its own ghost rows from their owners, before every
//! operator application. The values to send are packed on the backend
//! (a gather on the device for the GPU), so only the halo crosses to the
//! host and between ranks.

use super::comm::Communicator;
use super::piece::Piece;
use crate::{Backend, CpuBackend, CudaBackend, Result};
use cudarc::driver::CudaSlice;
use std::cell::{Cell, RefCell};
use std::ops::Range;

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
}

/// The rows on the device and a buffer the gather fills.
pub struct DeviceSendList {
    rows: CudaSlice<u32>,
    packed: RefCell<CudaSlice<f64>>,
}

impl HaloBackend for CudaBackend {
    type SendList = DeviceSendList;
    fn send_list(&self, rows: &[u32]) -> Result<DeviceSendList> {
        Ok(DeviceSendList { rows: self.stream().clone_htod(rows)?, packed: RefCell::new(self.zeros(rows.len())?) })
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
}

impl<B: HaloBackend> Halo<B> {
    /// The exchange of `piece`'s ghosts, for `nc` components a node.
    pub fn new(b: &B, piece: &Piece, nc: usize) -> Result<Self> {
        let rows = |nodes: &[u32]| -> Vec<u32> { nodes.iter().flat_map(|&n| (0..nc as u32).map(move |c| n * nc as u32 + c)).collect() };
        let send = piece.send.iter().map(|(q, nodes)| Ok((*q, b.send_list(&rows(nodes))?, nodes.len() * nc))).collect::<Result<_>>()?;
        let recv = piece.recv.iter().map(|(q, r)| (*q, r.start * nc..r.end * nc)).collect();
        Ok(Self { owned_rows: piece.owned * nc, rows: piece.len() * nc, send, recv, seconds: Cell::new(0.0), values: Cell::new(0) })
    }

    /// Rows this rank owns.
    pub fn owned_rows(&self) -> usize {
        self.owned_rows
    }

    /// Rows of the piece: owned, then ghosts.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Fills the ghost rows of `x` with their owners' values.
    pub fn update(&self, b: &B, comm: &dyn Communicator, x: &mut B::Vector<f64>) -> Result<()> {
        let start = std::time::Instant::now();
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
        if !ghosts.is_empty() {
            b.write_at(x, self.owned_rows, &ghosts)?;
        }
        self.values.set(self.values.get() + ghosts.len() + packed.iter().map(Vec::len).sum::<usize>());
        self.seconds.set(self.seconds.get() + start.elapsed().as_secs_f64());
        Ok(())
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
