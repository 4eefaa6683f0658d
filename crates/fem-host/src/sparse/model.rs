//! The a-priori SpMV model: from the row lengths alone, the bytes each
//! format moves (its padding included), the lanes it keeps busy, and so
//! its time on a machine, without building anything. This is the metric
//! Wong, Kuhl & Darve ask for in their conclusion; the tuner prunes with
//! it, `auto` chooses with it, and it picks the K2 threshold the rule of
//! thumb gets wrong for long uniform rows (few rows, one lane each: the
//! GPU runs out of loads in flight long before it runs out of bandwidth).

use super::ellt::{padded_slots, read_slots, ELLT_THREADS};
use super::params::SpmvParams;
use super::warp::EllWarp;
use super::SpmvFormat;
use crate::operator::csr::Csr;
use crate::operator::gpu::THREADS_PER_ROW;
use crate::{AnyBackend, BackendKind, Result, Scalar};
use fem_kernels::sparse::SLICE_LANES;
use serde::Serialize;

/// What the model needs of a backend.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Which backend: selects the kernels' measured efficiencies; on the CPU
    /// every lane counts as busy and there is no serial-latency bound.
    pub kind: BackendKind,
    /// Device-to-device copy bandwidth (read plus written bytes per second).
    pub bytes_per_second: f64,
    /// Threads the device keeps resident at once (SMs × threads per SM).
    pub resident_threads: usize,
    /// The device's free memory when measured; `None` on the host, whose
    /// memory no storage is refused for.
    pub free_bytes: Option<usize>,
}

impl Machine {
    /// The backend's machine, its copy bandwidth measured on 64 MiB.
    pub fn measure(any: &AnyBackend) -> Result<Self> {
        let bytes = 64 << 20;
        Ok(match any {
            AnyBackend::Cuda(g) => {
                let p = g.props();
                let per_sm = match p.compute_capability {
                    (7, 5) => 1024,
                    (8, 6) | (8, 7) | (8, 9) => 1536,
                    _ => 2048,
                };
                Self {
                    kind: BackendKind::Cuda,
                    bytes_per_second: crate::roofline::copy_bandwidth(g, bytes, 5)?.bytes_per_second,
                    resident_threads: p.sm_count as usize * per_sm,
                    free_bytes: Some(g.free_bytes()?),
                }
            }
            AnyBackend::Cpu(c) => Self {
                kind: BackendKind::Cpu,
                bytes_per_second: crate::roofline::copy_bandwidth(c, bytes, 5)?.bytes_per_second,
                resident_threads: c.threads(),
                free_bytes: None,
            },
        })
    }
}

/// Row lengths, longest first: all the model reads of a matrix.
#[derive(Clone, Debug)]
pub struct RowLengths {
    /// Entries of every row, longest first.
    pub sorted: Vec<u32>,
    /// Nonzeros of the matrix (the sum of `sorted`).
    pub nnz: usize,
}

impl RowLengths {
    /// The row lengths of `csr`.
    pub fn of<T: Scalar>(csr: &Csr<T>) -> Self {
        let mut sorted: Vec<u32> = csr.row_ptr.windows(2).map(|w| w[1] - w[0]).collect();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        Self { sorted, nnz: csr.nnz() }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.sorted.len()
    }

    /// Length of the longest row (0 for an empty matrix).
    pub fn max(&self) -> usize {
        self.sorted.first().copied().unwrap_or(0) as usize
    }
}

/// The model's view of one format with one parameter set.
#[derive(Clone, Debug, Serialize)]
pub struct Prediction {
    /// Bytes one product moves: the format's arrays as the kernel reads them
    /// (padding and metadata included), `x` read once and `y` written once.
    pub bytes: usize,
    /// Threads with work: rows × threads per row, or warps × 32.
    pub lanes: usize,
    /// Fraction of the copy bandwidth the model expects.
    pub efficiency: f64,
    /// Predicted time of one product, in seconds: the streaming time of `bytes`
    /// at `efficiency` of the copy bandwidth, or on the GPU the longest lane's
    /// serial loads when that is longer.
    pub seconds: f64,
    /// Seconds to build the format from CSR (and upload it on the GPU).
    pub conversion_seconds: f64,
}

/// Fraction of the copy bandwidth each kernel reaches on its own bytes
/// with every lane busy, measured on an H200 (benches/gpu/results/spmv)
/// and on the CPU backend: renumbered ELL-WARP streams everything; the
/// remapped variants scatter `y`; ELLR-T and CSR leave lanes of short rows
/// idle or read rows unaligned; plain ELLPACK's padding is in its bytes.
fn kernel_efficiency(f: SpmvFormat, kind: BackendKind) -> f64 {
    use SpmvFormat::*;
    match (kind, f) {
        (BackendKind::Cuda, K1r | K1rs | K2r | K2rs) => 0.98,
        (BackendKind::Cuda, K1 | K2) => 0.90,
        (BackendKind::Cuda, Ell) => 0.87,
        (BackendKind::Cuda, EllT) => 0.50,
        (BackendKind::Cuda, Csr | Cusparse) => 0.80,
        (BackendKind::Cpu, Csr) => 1.0,
        (BackendKind::Cpu, K1r | K1rs | K2r | K2rs) => 0.85,
        (BackendKind::Cpu, K1 | K2) => 0.78,
        (BackendKind::Cpu, EllT) => 0.70,
        (BackendKind::Cpu, Ell) => 0.56,
        (BackendKind::Cpu, Cusparse) => 0.0,
    }
}

/// Host seconds per nonzero to build a format from CSR and upload it,
/// measured with 16 host cores (CSR's is its upload; the CPU backend has
/// CSR already).
fn conversion_per_nonzero(f: SpmvFormat, kind: BackendKind) -> f64 {
    use SpmvFormat::*;
    let ns = match (f, kind) {
        (Csr, BackendKind::Cpu) => 0.0,
        (Csr | Cusparse, _) => 3.4,
        (Ell, _) => 25.0,
        (EllT, _) => 5.5,
        _ => 4.5,
    };
    ns * 1e-9
}

/// Bandwidth a GPU reaches with `lanes` lanes busy: it needs about twice
/// its resident threads in loads to hide memory latency (the K1 collapse
/// on 3D Q4 rows is the square-root fall-off measured below that).
fn parallel_efficiency(lanes: usize, m: &Machine) -> f64 {
    if m.kind == BackendKind::Cpu {
        return 1.0;
    }
    (lanes as f64 / (2.0 * m.resident_threads as f64)).min(1.0).sqrt()
}

/// Seconds one lane spends per entry of its row when the rest of the GPU
/// has finished: a warp of long rows runs its loads one after another
/// (K1 on a power-law matrix, 512 entries in its longest row, takes
/// 87 µs on an H200 whatever the bandwidth).
const GPU_SECONDS_PER_SERIAL_ENTRY: f64 = 0.17e-6;

/// Below four threads per row a warp's CSR loads spread over as many rows
/// as lanes and use a fraction of each memory sector (measured: scalar
/// CSR at 0.4 of four threads per row on FEM rows).
fn csr_coalescing(threads_per_row: usize) -> f64 {
    (threads_per_row as f64 / 4.0).min(1.0).powf(0.6)
}

/// The model's prediction for `f` with `p`, or why `f` cannot hold the
/// matrix (padding beyond bounds, a backend that lacks it).
pub fn predict(f: SpmvFormat, p: &SpmvParams, l: &RowLengths, value_bytes: usize, m: &Machine) -> std::result::Result<Prediction, String> {
    use SpmvFormat::*;
    let (n, nnz, t) = (l.rows(), l.nnz, value_bytes);
    let entry = t + 4;
    let vectors = 2 * n * t;
    let mut eff = kernel_efficiency(f, m.kind);
    // bytes moved, lanes busy, and the longest run of entries one lane reads
    let (bytes, lanes, serial) = match f {
        Cusparse if m.kind == BackendKind::Cpu => return Err("cuSPARSE runs on the CUDA backend only".into()),
        Csr | Cusparse => {
            let tpr = if f == Csr { p.csr_threads } else { 32 };
            // Lanes of a row's last group that find no entry do no work
            // (the CPU walks each row in one thread).
            if m.kind == BackendKind::Cuda {
                eff *= nnz.max(1) as f64 / read_slots(&l.sorted, tpr).max(1) as f64;
                if f == Csr {
                    eff *= csr_coalescing(tpr);
                }
            }
            // cuSPARSE splits long rows itself.
            let serial = if f == Csr { l.max().div_ceil(tpr) } else { 0 };
            (nnz * entry + (n + 1) * 4 + vectors, n * tpr, serial)
        }
        Ell => {
            let slots = padded_slots(n, l.max(), nnz, "ELLPACK").map_err(|e| e.to_string())?;
            (slots * entry + vectors, n, l.max())
        }
        EllT => {
            let groups = l.max().div_ceil(p.ellt_threads);
            padded_slots(n, groups * p.ellt_threads, nnz, "ELLR-T").map_err(|e| e.to_string())?;
            (read_slots(&l.sorted, p.ellt_threads) * entry + n * 4 + vectors, n * p.ellt_threads, groups)
        }
        k => {
            let (k2, numbering) = k.warp().expect("a K format");
            let slices = EllWarp::<f64>::slices(n, |s| l.sorted[s] as usize, k2.then_some(p.threshold)).map_err(|e| e.to_string())?;
            let slots: usize = slices.iter().map(|s| s.width as usize * SLICE_LANES).sum();
            let perm = if numbering == super::warp::Numbering::Remap { n * 4 } else { 0 };
            let widest = slices.iter().map(|s| s.width as usize).max().unwrap_or(0);
            (slots * entry + slices.len() * 16 + perm + vectors, slices.len() * SLICE_LANES, widest)
        }
    };
    eff *= parallel_efficiency(lanes, m);
    let streaming = if n == 0 { 0.0 } else { bytes as f64 / (eff * m.bytes_per_second) };
    let critical = if m.kind == BackendKind::Cuda { serial as f64 * GPU_SECONDS_PER_SERIAL_ENTRY } else { 0.0 };
    let seconds = streaming.max(critical);
    Ok(Prediction { bytes, lanes, efficiency: eff, seconds, conversion_seconds: nnz as f64 * conversion_per_nonzero(f, m.kind) })
}

/// Parameter sets of `f` the model and the tuner choose from: K2
/// thresholds from 1 to the longest row in powers of two (and the rule of
/// thumb of `base`), every ELLR-T and CSR thread count, block sizes 32..256
/// for the formats launched in blocks when `blocks` is set. The model
/// cannot tell block sizes apart, so it ranks them equal. On the CPU only
/// the parameters that change its loops are varied (K2's threshold,
/// ELLR-T's grouping).
pub fn candidates(f: SpmvFormat, base: SpmvParams, l: &RowLengths, kind: BackendKind, blocks: bool) -> Vec<SpmvParams> {
    use SpmvFormat::*;
    let with = |g: &dyn Fn(&mut SpmvParams)| {
        let mut p = base;
        g(&mut p);
        p
    };
    let mut out: Vec<SpmvParams> = match f {
        EllT => ELLT_THREADS.iter().map(|&t| with(&|p| p.ellt_threads = t)).collect(),
        Csr if kind == BackendKind::Cuda => THREADS_PER_ROW.iter().map(|&t| with(&|p| p.csr_threads = t)).collect(),
        K2 | K2r | K2rs => {
            let mut ts: Vec<usize> = std::iter::successors(Some(1usize), |t| (*t < l.max()).then_some(2 * t)).collect();
            ts.push(base.threshold);
            ts.sort_unstable();
            ts.dedup();
            ts.into_iter().map(|v| with(&|p| p.threshold = v)).collect()
        }
        _ => vec![base],
    };
    if blocks && kind == BackendKind::Cuda && (f.warp().is_some() || f == EllT) {
        out = out.iter().flat_map(|p| (32..=256).step_by(32).map(move |block| SpmvParams { block, ..*p })).collect();
    }
    out
}

/// The parameters of `f` the model predicts fastest (`base`'s block kept),
/// with the prediction; `Err` when `f` cannot hold the matrix.
pub fn best_params(f: SpmvFormat, base: SpmvParams, l: &RowLengths, value_bytes: usize, m: &Machine) -> std::result::Result<(SpmvParams, Prediction), String> {
    let mut best: Option<(SpmvParams, Prediction)> = None;
    let mut why = String::new();
    for p in candidates(f, base, l, m.kind, false) {
        match predict(f, &p, l, value_bytes, m) {
            Ok(pr) if best.as_ref().is_none_or(|b| pr.seconds < b.1.seconds) => best = Some((p, pr)),
            Ok(_) => {}
            Err(e) => why = e,
        }
    }
    best.ok_or(why)
}
