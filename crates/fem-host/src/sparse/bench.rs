//! The side-by-side SpMV measurement of Wong, Kuhl & Darve §6 on one
//! backend: every format's time per product, effective bandwidth by the
//! paper's definition (matrix bytes: value, column index and one `x` value
//! per nonzero) and by the bytes the format really moves, both against the
//! device copy of the same bytes measured in the same run; the error
//! against CSR in double precision; the cost of converting CSR into the
//! format and α, the products after which the conversion pays off
//! (the paper's Table 4).

use super::params::SpmvParams;
use super::{Spmv, SpmvFormat};
use crate::operator::csr::Csr;
use crate::rng::SplitMix64;
use crate::timing::measure;
use crate::{Backend, CpuBackend, Result, Scalar};
use serde::Serialize;
use std::time::Instant;

/// One format's measurement in the side-by-side SpMV benchmark (one row of
/// the paper's §6 comparison).
#[derive(Clone, Debug, Serialize)]
pub struct SpmvReport {
    /// Format name with its parameter (`csr-t8`, `ellt-t2`, `k2r`, ...).
    pub format: String,
    /// Description of the backend it ran on (device name or CPU thread count).
    pub backend: String,
    /// Scalar type, `f32` or `f64`.
    pub precision: &'static str,
    /// Rows of the matrix.
    pub rows: usize,
    /// Nonzeros of the CSR matrix (padding not counted).
    pub nnz: usize,
    /// The parameters the format was built and launched with.
    pub params: SpmvParams,
    /// Median time of one product `y = A x`, in seconds.
    pub seconds_per_spmv: f64,
    /// The paper's matrix bytes, `nnz · (2 · sizeof(T) + 4)`.
    pub paper_bytes: usize,
    /// Bytes the format moves at least: its stored arrays (padding and
    /// metadata included), `x` read once, `y` written once.
    pub bytes: usize,
    /// `bytes` per second, in GB/s.
    pub gbytes_per_second: f64,
    /// `paper_bytes` per second, in GB/s: the paper's effective bandwidth.
    pub paper_gbytes_per_second: f64,
    /// `gbytes_per_second` over the copy bandwidth of `bytes`.
    pub roofline_fraction: f64,
    /// `paper_gbytes_per_second` over the copy bandwidth of `bytes`; it can
    /// exceed 1, since the paper counts an `x` read per nonzero that caches serve.
    pub paper_roofline_fraction: f64,
    /// Bandwidth of the backend's own copy moving `bytes` (read plus written),
    /// measured in the same run, in GB/s: the roofline both fractions divide by.
    pub copy_gbytes_per_second: f64,
    /// Largest |y − y_csr| against the CSR product in f64.
    pub max_abs_error_vs_csr: f64,
    /// Host time to build the format from CSR (and upload it on the GPU).
    pub convert_seconds: f64,
    /// Time to refill the values from CSR values of the same pattern on
    /// this backend (the reordering done at every new matrix).
    pub reorder_seconds: f64,
    /// The same refill on the CPU backend, for a GPU run.
    pub reorder_seconds_cpu: Option<f64>,
    /// cuSPARSE's time per product over this format's (above 1: faster
    /// than cuSPARSE), when cuSPARSE ran.
    pub speedup_vs_cusparse: Option<f64>,
    /// Products after which reordering on this backend pays off against
    /// cuSPARSE (`None`: never, the format is not faster).
    pub alpha_vs_cusparse: Option<f64>,
    /// The same with the reordering done on the CPU.
    pub alpha_cpu_vs_cusparse: Option<f64>,
}

/// The product of `csr` with `x` in double precision on the CPU.
pub fn reference<T: Scalar>(cpu: &CpuBackend, csr: &Csr<T>, x: &[T]) -> Vec<f64> {
    let c64 = Csr {
        n_rows: csr.n_rows,
        row_ptr: csr.row_ptr.clone(),
        col: csr.col.clone(),
        val: csr.val.iter().map(|v| v.to_f64()).collect(),
    };
    let x64: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
    let mut y = vec![0.0; csr.n_rows];
    c64.spmv(cpu, &x64, &mut y);
    y
}

/// A reproducible input in [−1, 1).
pub fn test_vector<T: Scalar>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| T::from_f64(2.0 * rng.next_f64() - 1.0))
        .collect()
}

/// `y = A x` through `m` with `x`, `y` in the original numbering.
pub fn apply_original<B: Backend, T: Scalar>(b: &B, m: &dyn Spmv<B, T>, x: &[T]) -> Result<Vec<T>> {
    let xd = match m.numbering() {
        Some(perm) => b.upload(&super::permute(perm, x))?,
        None => b.upload(x)?,
    };
    let mut yd = b.zeros::<T>(x.len())?;
    m.apply(b, &xd, &mut yd)?;
    let y = b.download(&yd)?;
    Ok(match m.numbering() {
        Some(perm) => super::unpermute(perm, &y),
        None => y,
    })
}

/// Measures `formats` on backend `b`; `prepare` builds one (timed as the
/// conversion). Formats whose preparation fails are reported through
/// `skipped` and left out.
pub fn run<B: Backend, T: Scalar>(
    b: &B,
    cpu: &CpuBackend,
    csr: &Csr<T>,
    formats: &[(SpmvFormat, SpmvParams)],
    repeats: usize,
    mut prepare: impl FnMut(SpmvFormat, &SpmvParams) -> Result<Box<dyn Spmv<B, T>>>,
    mut cpu_reorder: impl FnMut(SpmvFormat, &SpmvParams) -> Result<Option<f64>>,
    mut progress: impl FnMut(&str, Option<&crate::Error>),
) -> Result<Vec<SpmvReport>> {
    let x = test_vector::<T>(csr.n_rows, 11);
    let y_ref = reference(cpu, csr, &x);
    let csr_val = b.upload(&csr.val)?;
    let mut out = Vec::new();
    for (f, params) in formats {
        let f = *f;
        progress(f.name(), None);
        let t0 = Instant::now();
        let mut m = match prepare(f, params) {
            Ok(m) => m,
            Err(e) => {
                progress(f.name(), Some(&e));
                continue;
            }
        };
        b.synchronize()?;
        let convert_seconds = t0.elapsed().as_secs_f64();
        let y = apply_original(b, m.as_ref(), &x)?;
        let max_abs_error_vs_csr = y
            .iter()
            .zip(&y_ref)
            .map(|(a, r)| (a.to_f64() - r).abs())
            .fold(0.0, f64::max);
        let xd = b.upload(&x)?;
        let mut yd = b.zeros::<T>(csr.n_rows)?;
        let t = measure(b, 3, repeats, || m.apply(b, &xd, &mut yd))?;
        let reorder = if f == SpmvFormat::Csr || f == SpmvFormat::Cusparse {
            0.0
        } else {
            measure(b, 1, repeats.min(10), || m.reorder(b, &csr_val))?.median
        };
        let bytes = m.matrix_bytes() + 2 * csr.n_rows * T::BYTES;
        let paper_bytes = csr.nnz() * (2 * T::BYTES + 4);
        let copy =
            crate::roofline::copy_bandwidth(b, (bytes / 2).max(8), repeats)?.bytes_per_second;
        let (bps, pbps) = (bytes as f64 / t.median, paper_bytes as f64 / t.median);
        out.push(SpmvReport {
            format: m.name(),
            backend: b.name(),
            precision: T::NAME,
            rows: csr.n_rows,
            nnz: csr.nnz(),
            params: *params,
            seconds_per_spmv: t.median,
            paper_bytes,
            bytes,
            gbytes_per_second: bps / 1e9,
            paper_gbytes_per_second: pbps / 1e9,
            roofline_fraction: bps / copy,
            paper_roofline_fraction: pbps / copy,
            copy_gbytes_per_second: copy / 1e9,
            max_abs_error_vs_csr,
            convert_seconds,
            reorder_seconds: reorder,
            reorder_seconds_cpu: if reorder > 0.0 {
                cpu_reorder(f, params)?
            } else {
                None
            },
            speedup_vs_cusparse: None,
            alpha_vs_cusparse: None,
            alpha_cpu_vs_cusparse: None,
        });
    }
    compare_with_cusparse(&mut out);
    Ok(out)
}

/// Fills the speed-up and α of every format against cuSPARSE's report.
fn compare_with_cusparse(reports: &mut [SpmvReport]) {
    let Some(cus) = reports
        .iter()
        .find(|r| r.format == "cusparse")
        .map(|r| r.seconds_per_spmv)
    else {
        return;
    };
    for r in reports.iter_mut() {
        r.speedup_vs_cusparse = Some(cus / r.seconds_per_spmv);
        r.alpha_vs_cusparse = alpha(r.reorder_seconds, r.seconds_per_spmv, cus);
        r.alpha_cpu_vs_cusparse = r
            .reorder_seconds_cpu
            .and_then(|t| alpha(t, r.seconds_per_spmv, cus));
    }
}

/// The smallest α with `t_reorder + α t_format ≤ α t_reference`
/// (Wong et al. eq. 14), `None` when the format is not faster.
pub fn alpha(t_reorder: f64, t_format: f64, t_reference: f64) -> Option<f64> {
    (t_format < t_reference).then(|| (t_reorder / (t_reference - t_format)).ceil())
}

/// The best of `reports` (fastest product).
pub fn fastest(reports: &[SpmvReport]) -> Option<&SpmvReport> {
    reports
        .iter()
        .min_by(|a, b| a.seconds_per_spmv.total_cmp(&b.seconds_per_spmv))
}

/// Times the value refill of format `f` on the CPU (median of `repeats`).
pub fn cpu_reorder_seconds<T: Scalar>(
    cpu: &CpuBackend,
    csr: &Csr<T>,
    f: SpmvFormat,
    p: &SpmvParams,
    repeats: usize,
) -> Result<f64> {
    let mut m = super::device::prepare_cpu(cpu, csr, f, p)?;
    let vals = csr.val.clone();
    Ok(measure(cpu, 1, repeats, || m.reorder(cpu, &vals))?.median)
}
