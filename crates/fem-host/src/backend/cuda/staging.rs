//! Copies of large arrays between the host and the device through two
//! page-locked buffers that every host thread fills or empties.
//!
//! The driver copies pageable memory through a staging buffer of its own,
//! one thread at a time: 6.5–7 GB/s on an H200's host, where a DMA from
//! page-locked memory runs at 54 GB/s. A set-up sends several GB (cell
//! coordinates, gather maps, patterns), so the copies here alternate two
//! page-locked chunks: while the device reads one, the host's threads
//! write the next. Locking the caller's own arrays instead would cost
//! about as much as copying them.

use super::CudaBackend;
use crate::Result;
use crate::sparse::SharedOut;
use cudarc::driver::{CudaEvent, CudaSlice, DeviceRepr, PinnedHostSlice, ValidAsZeroBits};
use rayon::prelude::*;

/// Bytes in each page-locked buffer: 0.3 ms of DMA, enough for the
/// host's threads to fill the other one meanwhile.
const CHUNK_BYTES: usize = 16 << 20;

/// Arrays smaller than this go through the driver's own copy.
const STAGED_BYTES: usize = 4 << 20;

/// Bytes each host thread copies at a time.
const PIECE_BYTES: usize = 1 << 20;

/// The two buffers and the event of the last copy that used each.
pub(super) struct Staging {
    buffers: [PinnedHostSlice<u8>; 2],
    done: [Option<CudaEvent>; 2],
}

impl Staging {
    fn new(gpu: &CudaBackend) -> Result<Self> {
        // SAFETY: bytes are written before they are read
        let alloc = || unsafe { gpu.ctx.alloc_pinned_with_flags::<u8>(CHUNK_BYTES, 0) };
        Ok(Self { buffers: [alloc()?, alloc()?], done: [None, None] })
    }

    /// Buffer `k`'s address once the device has finished with it.
    fn ready(&mut self, k: usize) -> Result<SharedOut<u8>> {
        if let Some(e) = self.done[k].take() {
            e.synchronize()?;
        }
        Ok(SharedOut(self.buffers[k].as_mut_ptr()?))
    }
}

/// `len` bytes from `src` to `dst` by all host threads, in pieces.
fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    let (src, dst) = (SharedOut(src as *mut u8), SharedOut(dst));
    (0..len.div_ceil(PIECE_BYTES)).into_par_iter().for_each(|p| {
        let (s, d) = (src, dst);
        let at = p * PIECE_BYTES;
        // SAFETY: pieces are disjoint and within both arrays
        unsafe { std::ptr::copy_nonoverlapping(s.0.add(at), d.0.add(at), PIECE_BYTES.min(len - at)) };
    });
}

impl CudaBackend {
    /// `data` in a new device array: staged for large arrays, by the
    /// driver for small ones and inside a graph's capture.
    pub fn htod<T: DeviceRepr + ValidAsZeroBits>(&self, data: &[T]) -> Result<CudaSlice<T>> {
        if data.is_empty() {
            return Ok(self.stream.null()?);
        }
        self.ensure_free(std::mem::size_of_val(data))?;
        if !self.stages(std::mem::size_of_val(data)) {
            return Ok(self.stream.clone_htod(data)?);
        }
        // SAFETY: every element is written below before the array is used
        let mut dst = unsafe { self.stream.alloc::<T>(data.len())? };
        self.staged_htod(data, &mut dst)?;
        Ok(dst)
    }

    /// `data` into `dst` (as long), staged as [`CudaBackend::htod`] is.
    pub fn htod_into<T: DeviceRepr>(&self, data: &[T], dst: &mut CudaSlice<T>) -> Result<()> {
        crate::error::same_len("copied values", data.len(), dst.len())?;
        match self.stages(std::mem::size_of_val(data)) {
            true => self.staged_htod(data, dst),
            false if data.is_empty() => Ok(()),
            false => Ok(self.stream.memcpy_htod(data, dst)?),
        }
    }

    /// The device array `v` on the host, staged for large arrays.
    pub fn dtoh<T: DeviceRepr + ValidAsZeroBits>(&self, v: &CudaSlice<T>) -> Result<Vec<T>> {
        let n = v.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        if !self.stages(n * std::mem::size_of::<T>()) {
            return Ok(self.stream.clone_dtoh(v)?);
        }
        let per = CHUNK_BYTES / std::mem::size_of::<T>();
        let mut out: Vec<T> = Vec::with_capacity(n);
        let dst = out.as_mut_ptr() as *mut u8;
        let mut staging = self.staging()?;
        let staging = staging.as_mut().expect("made by staging()");
        // chunk c goes to buffer c % 2; the host empties chunk c while the
        // device fills chunk c + 1
        let chunks = n.div_ceil(per);
        let mut buffer = [SharedOut(std::ptr::null_mut()); 2];
        let send = |c: usize, staging: &mut Staging, buffer: &mut [SharedOut<u8>; 2]| -> Result<()> {
            let (k, at) = (c % 2, c * per);
            let len = per.min(n - at);
            buffer[k] = staging.ready(k)?;
            // SAFETY: the buffer holds `per` elements; no copy is in flight into it
            let host = unsafe { std::slice::from_raw_parts_mut(buffer[k].0 as *mut T, len) };
            self.stream.memcpy_dtoh(&v.slice(at..at + len), host)?;
            staging.done[k] = Some(self.stream.record_event(None)?);
            Ok(())
        };
        send(0, staging, &mut buffer)?;
        for c in 0..chunks {
            if c + 1 < chunks {
                send(c + 1, staging, &mut buffer)?;
            }
            let (k, at) = (c % 2, c * per);
            let len = per.min(n - at);
            staging.done[k].take().map(|e| e.synchronize()).transpose()?;
            let size = std::mem::size_of::<T>();
            // SAFETY: `out` has room for `n` elements
            copy_bytes(buffer[k].0, unsafe { dst.add(at * size) }, len * size);
        }
        // SAFETY: every element was copied in
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// Whether a copy of `bytes` goes through the page-locked buffers: not
    /// inside a graph's capture (nor where the stream cannot tell).
    fn stages(&self, bytes: usize) -> bool {
        bytes >= STAGED_BYTES && self.stream.capture_status().is_ok_and(|s| s == cudarc::driver::sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// The buffers, made on first use and kept.
    fn staging(&self) -> Result<std::sync::MutexGuard<'_, Option<Staging>>> {
        let mut s = self.staging.lock().expect("staging lock");
        if s.is_none() {
            *s = Some(Staging::new(self)?);
        }
        Ok(s)
    }

    fn staged_htod<T: DeviceRepr>(&self, data: &[T], dst: &mut CudaSlice<T>) -> Result<()> {
        let (n, size) = (data.len(), std::mem::size_of::<T>());
        let per = CHUNK_BYTES / size;
        let mut staging = self.staging()?;
        let staging = staging.as_mut().expect("made by staging()");
        for (c, chunk) in data.chunks(per).enumerate() {
            let k = c % 2;
            let buffer = staging.ready(k)?;
            copy_bytes(chunk.as_ptr() as *const u8, buffer.0, std::mem::size_of_val(chunk));
            // SAFETY: the buffer now holds the chunk's elements
            let host = unsafe { std::slice::from_raw_parts(buffer.0 as *const T, chunk.len()) };
            let at = c * per;
            self.stream.memcpy_htod(host, &mut dst.slice_mut(at..at + chunk.len()))?;
            staging.done[k] = Some(self.stream.record_event(None)?);
        }
        debug_assert!(n == dst.len());
        Ok(())
    }
}
