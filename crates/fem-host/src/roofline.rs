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
    probe(backend, "memcpy", bytes, repeats, batch, |src, dst| backend.copy(src, dst))
}

/// Times `copy` between two buffers covering `bytes`, warmed up first and
/// measured as [`measure_batched`] measures.
fn probe<B: Backend>(backend: &B, method: &'static str, bytes: usize, repeats: usize, batch: usize, copy: impl Fn(&B::Vector<f64>, &mut B::Vector<f64>) -> Result<()>) -> Result<CopyBandwidth> {
    let n = probe_len(bytes);
    let src = backend.upload(&vec![1.0f64; n])?;
    let mut dst = backend.zeros::<f64>(n)?;
    warm_up(backend, REFERENCE_WARMUP_SECONDS, || copy(&src, &mut dst))?;
    let timing = measure_batched(backend, 2, repeats, batch, || copy(&src, &mut dst))?;
    Ok(CopyBandwidth::new(method, n * 8, timing))
}

/// Copy bandwidth of fem's grid-stride copy kernel, the ceiling a simple
/// streaming kernel of our own reaches.
pub fn copy_kernel_bandwidth(gpu: &CudaBackend, bytes: usize, repeats: usize) -> Result<CopyBandwidth> {
    copy_kernel_bandwidth_batched(gpu, bytes, repeats, 1)
}

/// As [`copy_kernel_bandwidth`], timed as [`measure_batched`] times.
pub fn copy_kernel_bandwidth_batched(gpu: &CudaBackend, bytes: usize, repeats: usize, batch: usize) -> Result<CopyBandwidth> {
    probe(gpu, "kernel", bytes, repeats, batch, |src, dst| gpu.copy_kernel(src, dst))
}

/// The faster of the driver's copy and the copy kernel, both timed as
/// [`measure_batched`] times: the driver's copy wins from a few hundred
/// MB (H100: about 2.9 against 2.7 TB/s), while below a few MB each of
/// its calls costs microseconds of set-up that a kernel launch queued
/// behind another does not, and a reference slower than the operator it
/// measures says nothing about the operator.
pub fn best_copy_bandwidth_batched(gpu: &CudaBackend, bytes: usize, repeats: usize, batch: usize) -> Result<CopyBandwidth> {
    let memcpy = copy_bandwidth_batched(gpu, bytes, repeats, batch)?;
    let kernel = copy_kernel_bandwidth_batched(gpu, bytes, repeats, batch)?;
    Ok(if kernel.bytes_per_second > memcpy.bytes_per_second { kernel } else { memcpy })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CpuBackend;

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
