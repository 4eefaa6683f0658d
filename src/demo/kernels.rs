//! `fem demo kernels`: runs the BLAS-1 kernels on a backend, checks each result
//! against the CPU backend, and measures bandwidth against the copy
//! roofline of the same bytes in the same run.

use fem_host::conformance::values;
use fem_host::roofline::{copy_bandwidth, copy_kernel_bandwidth, CopyBandwidth};
use fem_host::timing::{measure, Timing};
use fem_host::{Backend, CpuBackend, CudaBackend, Scalar};
use serde::Serialize;

/// One operation's check and timing.
#[derive(Clone, Debug, Serialize)]
pub struct OpReport {
    /// The operation: `copy`, `axpy`, `axpby`, `dot` or `norm2`.
    pub op: &'static str,
    /// Bytes read plus written by one application.
    pub bytes_moved: usize,
    /// Wall times of the timed repeats, in seconds.
    pub timing: Timing,
    /// `bytes_moved` over the median time.
    pub bytes_per_second: f64,
    /// `bytes_per_second` over the copy bandwidth of this run.
    pub roofline_fraction: f64,
    /// Largest difference from the CPU backend, relative to the result's scale.
    pub max_rel_diff_vs_cpu: f64,
    /// Largest difference accepted: 0 (bit-identical) for the elementwise
    /// operations, 2nε for the reductions, whose sums may be ordered differently.
    pub tolerance: f64,
    /// Whether `max_rel_diff_vs_cpu` ≤ `tolerance`.
    pub passed: bool,
}

/// The whole demo: every operation's report and the overall verdict.
#[derive(Clone, Debug, Serialize)]
pub struct DemoReport {
    /// The backend kind (`cpu`, `cuda`).
    pub backend: String,
    /// The backend's description of its device.
    pub device: String,
    /// `f32` or `f64`.
    pub precision: &'static str,
    /// Vector length, in elements.
    pub n: usize,
    /// Timed repeats per operation.
    pub repeats: usize,
    /// The roofline: the backend's own copy of an `n`-element vector.
    pub copy: CopyBandwidth,
    /// fem's copy kernel on the GPU, for comparison with the driver's copy.
    pub copy_kernel: Option<CopyBandwidth>,
    /// One report per operation, in the order run.
    pub ops: Vec<OpReport>,
    /// Result of the device-prelude check kernels (GPU only).
    pub prelude_check: Option<Result<(), String>>,
    /// Whether every operation and the prelude check passed.
    pub passed: bool,
}

/// Steps the demo reports progress on.
pub const STEPS: usize = 7;

/// Runs the demo on `backend` with vectors of `n` elements of `T`;
/// `progress` is called once per step with its name.
pub fn run<B: Backend, T: Scalar>(
    backend: &B,
    gpu: Option<&CudaBackend>,
    n: usize,
    repeats: usize,
    mut progress: impl FnMut(&str),
) -> fem_host::Result<DemoReport> {
    if n == 0 {
        return Err(fem_host::Error::InvalidArgument("the demo needs at least one element".into()));
    }
    let cpu = CpuBackend::new(None)?;
    let x = values::<T>(n, 1);
    let y = values::<T>(n, 2);
    let (dx, mut dy) = (backend.upload(&x)?, backend.upload(&y)?);
    let (alpha, beta) = (T::from_f64(0.5), T::from_f64(-2.0));
    let bytes = T::BYTES * n;

    progress("copy bandwidth");
    let copy = copy_bandwidth(backend, bytes, repeats)?;
    let copy_kernel = gpu.map(|g| copy_kernel_bandwidth(g, bytes, repeats)).transpose()?;
    let roofline = copy.bytes_per_second;
    let report = |op, bytes_moved: usize, timing: Timing, diff: f64, tolerance: f64| {
        let bps = bytes_moved as f64 / timing.median;
        OpReport { op, bytes_moved, timing, bytes_per_second: bps, roofline_fraction: bps / roofline, max_rel_diff_vs_cpu: diff, tolerance, passed: diff <= tolerance }
    };
    let mut ops = Vec::new();

    progress("copy");
    let mut dz = backend.zeros::<T>(n)?;
    backend.copy(&dx, &mut dz)?;
    let diff = max_rel_diff(&backend.download(&dz)?, &x);
    // The roofline is this very copy, so its timing is reused.
    ops.push(report("copy", 2 * bytes, copy.timing, diff, 0.0));

    progress("axpy");
    let mut want = y.clone();
    cpu.axpy(alpha, &x, &mut want)?;
    backend.axpy(alpha, &dx, &mut dy)?;
    let diff = max_rel_diff(&backend.download(&dy)?, &want);
    ops.push(report("axpy", 3 * bytes, measure(backend, 1, repeats, || backend.axpy(alpha, &dx, &mut dy))?, diff, 0.0));

    progress("axpby");
    let mut dy = backend.upload(&y)?;
    let mut want = y.clone();
    cpu.axpby(alpha, &x, beta, &mut want)?;
    backend.axpby(alpha, &dx, beta, &mut dy)?;
    let diff = max_rel_diff(&backend.download(&dy)?, &want);
    // β = 1 while timing keeps the values bounded over the repeats.
    ops.push(report("axpby", 3 * bytes, measure(backend, 1, repeats, || backend.axpby(alpha, &dx, T::ONE, &mut dy))?, diff, 0.0));

    // Reductions: both results are sums in different orders, within n·ε of
    // the scale Σ|xᵢyᵢ| (or ‖x‖²).
    let reduction_tol = 2.0 * n as f64 * T::EPSILON.to_f64();
    progress("dot");
    let dy = backend.upload(&y)?;
    let got = backend.dot(&dx, &dy)?.to_f64();
    let want = cpu.dot(&x, &y)?.to_f64();
    let scale: f64 = x.iter().zip(&y).map(|(a, b)| (a.to_f64() * b.to_f64()).abs()).sum();
    let diff = (got - want).abs() / scale.max(f64::MIN_POSITIVE);
    ops.push(report("dot", 2 * bytes, measure(backend, 1, repeats, || backend.dot(&dx, &dy).map(drop))?, diff, reduction_tol));

    progress("norm2");
    let got = backend.norm2(&dx)?.to_f64();
    let want = cpu.norm2(&x)?.to_f64();
    let diff = (got - want).abs() / want.max(f64::MIN_POSITIVE);
    ops.push(report("norm2", bytes, measure(backend, 1, repeats, || backend.norm2(&dx).map(drop))?, diff, reduction_tol));

    progress("device prelude");
    let prelude_check = gpu.map(fem_host::conformance::check_cuda_prelude);
    let passed = ops.iter().all(|o| o.passed) && prelude_check.as_ref().is_none_or(|r| r.is_ok());
    Ok(DemoReport {
        backend: backend.kind().to_string(),
        device: backend.name(),
        precision: T::NAME,
        n,
        repeats,
        copy,
        copy_kernel,
        ops,
        prelude_check,
        passed,
    })
}

/// Largest `|a − b| / max(|b|, tiny)` over the elements; infinite when the
/// lengths differ.
fn max_rel_diff<T: Scalar>(got: &[T], want: &[T]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    got.iter()
        .zip(want)
        .map(|(g, w)| {
            let (g, w) = (g.to_f64(), w.to_f64());
            if g == w { 0.0 } else { (g - w).abs() / w.abs().max(f64::MIN_POSITIVE) }
        })
        .fold(0.0, f64::max)
}

impl std::fmt::Display for DemoReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "backend: {} ({}), {} vectors of {} elements, median of {} runs", self.backend, self.device, self.precision, self.n, self.repeats)?;
        let gbs = |b: f64| b / 1e9;
        writeln!(f, "copy roofline ({}): {:.1} GB/s (bytes read + written)", self.copy.method, gbs(self.copy.bytes_per_second))?;
        if let Some(k) = &self.copy_kernel {
            writeln!(f, "copy kernel:           {:.1} GB/s ({:.3} of the roofline)", gbs(k.bytes_per_second), k.bytes_per_second / self.copy.bytes_per_second)?;
        }
        writeln!(f, "{:<7} {:>12} {:>12} {:>10} {:>14}  check vs CPU", "op", "time (µs)", "GB/s", "roofline", "max rel diff")?;
        for o in &self.ops {
            writeln!(f, "{:<7} {:>12.1} {:>12.1} {:>10.3} {:>14.2e}  {}", o.op, o.timing.median * 1e6, gbs(o.bytes_per_second), o.roofline_fraction, o.max_rel_diff_vs_cpu, if o.passed { "ok" } else { "FAILED" })?;
        }
        if let Some(p) = &self.prelude_check {
            match p {
                Ok(()) => writeln!(f, "device prelude (indices, shuffles, block sum, atomics, fast math): ok")?,
                Err(e) => writeln!(f, "device prelude: FAILED: {e}")?,
            }
        }
        write!(f, "{}", if self.passed { "all results agree with the CPU backend" } else { "SOME RESULTS DISAGREE WITH THE CPU BACKEND" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_demo_checks_and_measures() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let mut steps = Vec::new();
        let r = run::<_, f64>(&cpu, None, 10_001, 2, |s| steps.push(s.to_string())).unwrap();
        assert!(r.passed, "{r}");
        assert_eq!(steps.len(), STEPS);
        assert_eq!(r.ops.iter().map(|o| o.op).collect::<Vec<_>>(), ["copy", "axpy", "axpby", "dot", "norm2"]);
        assert!(r.ops.iter().all(|o| o.bytes_per_second > 0.0 && o.roofline_fraction > 0.0));
        assert_eq!(r.ops[1].bytes_moved, 3 * 8 * 10_001);
    }

    #[test]
    fn rel_diff_sees_differences() {
        assert_eq!(max_rel_diff(&[1.0f64, 2.0], &[1.0, 2.0]), 0.0);
        assert!((max_rel_diff(&[1.0f64, 2.2], &[1.0, 2.0]) - 0.1).abs() < 1e-12);
        assert_eq!(max_rel_diff(&[1.0f32], &[1.0, 2.0]), f64::INFINITY);
        assert!(run::<_, f32>(&CpuBackend::new(Some(1)).unwrap(), None, 0, 1, |_| {}).is_err());
    }
}
