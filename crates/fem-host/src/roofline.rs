//! The copy probe: the bandwidth of a device-to-device copy of the same
//! bytes, which every later performance figure is divided by.
//!
//! Bytes are counted read plus written (a copy of B bytes moves 2B), the
//! convention of STREAM and of the papers' effective-bandwidth figures.

use crate::timing::{measure_batched, warm_up, Timing, REFERENCE_WARMUP_SECONDS};
use crate::{Backend, CudaBackend, Result};
use serde::Serialize;

/// A measured copy bandwidth.
#[derive(Clone, Debug, Serialize)]
pub struct CopyBandwidth {
    /// `memcpy` (the driver's or rayon's copy) or `kernel` (fem's copy kernel).
    pub method: &'static str,
    /// Size of the copied buffer.
    pub buffer_bytes: usize,
    /// Bytes read plus written per copy.
    pub bytes_moved: usize,
    /// Time of one copy, summarised over the repeats (seconds, timed by the backend).
    pub timing: Timing,
    /// `bytes_moved / median time`.
    pub bytes_per_second: f64,
}

impl CopyBandwidth {
    fn new(method: &'static str, buffer_bytes: usize, timing: Timing) -> Self {
        let bytes_moved = 2 * buffer_bytes;
        Self { method, buffer_bytes, bytes_moved, timing, bytes_per_second: bytes_moved as f64 / timing.median }
    }
}

/// Buffers of `f64` covering `bytes` (rounded down to whole elements, at least one).
fn probe_len(bytes: usize) -> usize {
    (bytes / 8).max(1)
}

/// Copy bandwidth of the backend's own copy (`cuMemcpyDtoDAsync` on the
/// GPU, a rayon-parallel copy on the CPU).
pub fn copy_bandwidth<B: Backend>(backend: &B, bytes: usize, repeats: usize) -> Result<CopyBandwidth> {
    copy_bandwidth_batched(backend, bytes, repeats, 1)
}

/// As [`copy_bandwidth`], timed as [`measure_batched`] times: the reference
/// for operations timed in batches.
pub fn copy_bandwidth_batched<B: Backend>(backend: &B, bytes: usize, repeats: usize, batch: usize) -> Result<CopyBandwidth> {
    probe(backend, "memcpy", bytes, repeats, batch, 1, |src, dst| backend.copy(src, dst))
}

/// How much more than the L2 cache a cycle of copies of a working set
/// passes through before a copy comes round again: enough that none of
/// it is still cached (H100, BP1 at N = 6: copies of 44 MB and more ran
/// at the DRAM copy's rate, 20–39 MB at up to 1.4 times it).
const COLD_L2_FACTOR: usize = 3;

/// Copies of a working set of `bytes` to cycle through so that each use
/// finds its data out of an L2 cache of `l2_bytes`: 1 once the set alone
/// is three times the cache.
pub fn cold_sets(bytes: usize, l2_bytes: usize) -> usize {
    (COLD_L2_FACTOR * l2_bytes).div_ceil(bytes.max(1)).max(1)
}

/// Times `copy` between two buffers covering `bytes`, warmed up first and
/// measured as [`measure_batched`] measures; with `sets` > 1 each copy
/// takes the next of that many buffer pairs (see [`cold_sets`]).
fn probe<B: Backend>(backend: &B, method: &'static str, bytes: usize, repeats: usize, batch: usize, sets: usize, copy: impl Fn(&B::Vector<f64>, &mut B::Vector<f64>) -> Result<()>) -> Result<CopyBandwidth> {
    let n = probe_len(bytes);
    let src = (0..sets).map(|_| backend.upload(&vec![1.0f64; n])).collect::<Result<Vec<_>>>()?;
    let mut dst = (0..sets).map(|_| backend.zeros::<f64>(n)).collect::<Result<Vec<_>>>()?;
    let mut next = 0;
    let mut cycle = || {
        let k = next % sets;
        next += 1;
        copy(&src[k], &mut dst[k])
    };
    warm_up(backend, REFERENCE_WARMUP_SECONDS, &mut cycle)?;
    let timing = measure_batched(backend, 2, repeats, batch, cycle)?;
    Ok(CopyBandwidth::new(method, n * 8, timing))
}

/// Copy bandwidth of fem's grid-stride copy kernel, the ceiling a simple
/// streaming kernel of our own reaches.
pub fn copy_kernel_bandwidth(gpu: &CudaBackend, bytes: usize, repeats: usize) -> Result<CopyBandwidth> {
    copy_kernel_bandwidth_batched(gpu, bytes, repeats, 1)
}

/// As [`copy_kernel_bandwidth`], timed as [`measure_batched`] times.
pub fn copy_kernel_bandwidth_batched(gpu: &CudaBackend, bytes: usize, repeats: usize, batch: usize) -> Result<CopyBandwidth> {
    probe(gpu, "kernel", bytes, repeats, batch, 1, |src, dst| gpu.copy_kernel(src, dst))
}

/// The faster of the driver's copy and the copy kernel, both timed as
/// [`measure_batched`] times: the driver's copy wins from a few hundred
/// MB (H100: about 2.9 against 2.7 TB/s), while below a few MB each of
/// its calls costs microseconds of set-up that a kernel launch queued
/// behind another does not, and a reference slower than the operator it
/// measures says nothing about the operator.
pub fn best_copy_bandwidth_batched(gpu: &CudaBackend, bytes: usize, repeats: usize, batch: usize) -> Result<CopyBandwidth> {
    best_copy_bandwidth_cycled(gpu, bytes, repeats, batch, 1)
}

/// [`best_copy_bandwidth_batched`] with each copy on the next of `sets`
/// buffer pairs: with [`cold_sets`] of the bytes, the copy of a working
/// set that would fit in L2 reads and writes DRAM, as it does in the
/// paper's copy of the same bytes on a GPU whose L2 is a few MB.
pub fn best_copy_bandwidth_cycled(gpu: &CudaBackend, bytes: usize, repeats: usize, batch: usize, sets: usize) -> Result<CopyBandwidth> {
    gpu.ensure_free(2 * sets * bytes)?;
    let memcpy = probe(gpu, "memcpy", bytes, repeats, batch, sets, |src, dst| gpu.copy(src, dst))?;
    let kernel = probe(gpu, "kernel", bytes, repeats, batch, sets, |src, dst| gpu.copy_kernel(src, dst))?;
    Ok(if kernel.bytes_per_second > memcpy.bytes_per_second { kernel } else { memcpy })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CpuBackend;

    #[test]
    fn cold_sets_cycle_through_three_caches() {
        let l2 = 50 << 20;
        assert_eq!(cold_sets(39 << 20, l2), 4, "39 MB: 156 MB cycled");
        assert_eq!(cold_sets(1, l2), 3 * l2);
        assert_eq!(cold_sets(3 * l2, l2), 1);
        assert_eq!(cold_sets(215 << 20, l2), 1);
        assert_eq!(cold_sets(0, 0), 1);
    }

    #[test]
    fn cycled_probe_times_every_set() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let used = std::cell::RefCell::new(Vec::new());
        let bw = probe(&cpu, "memcpy", 1 << 12, 3, 2, 3, |src: &Vec<f64>, dst: &mut Vec<f64>| {
            used.borrow_mut().push(dst.as_ptr() as usize);
            dst.copy_from_slice(src);
            Ok(())
        })
        .unwrap();
        let used = used.into_inner();
        assert_eq!(bw.buffer_bytes, 1 << 12);
        let distinct: std::collections::BTreeSet<_> = used.iter().collect();
        assert_eq!(distinct.len(), 3, "three destination buffers in turn");
        assert!(used.windows(2).all(|w| w[0] != w[1]), "no buffer twice in a row");
    }

    #[test]
    fn cpu_probe_counts_read_and_write() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let bw = copy_bandwidth(&cpu, 1 << 20, 3).unwrap();
        assert_eq!(bw.buffer_bytes, 1 << 20);
        assert_eq!(bw.bytes_moved, 2 << 20);
        assert_eq!(bw.timing.repeats, 3);
        assert!(bw.bytes_per_second.is_finite() && bw.bytes_per_second > 0.0);
        assert!((bw.bytes_per_second - bw.bytes_moved as f64 / bw.timing.median).abs() < 1e-6 * bw.bytes_per_second);
    }
}
