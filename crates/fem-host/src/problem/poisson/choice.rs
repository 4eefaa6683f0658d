//! What `--format auto` weighs: each format's bytes per product and the
//! storage it takes for the Q_p Poisson operator.

use super::*;
use crate::error::GIB;

/// (minimum bytes, the paper's model bytes) of one product in `format`
/// with `t`-byte values, `n` rows, `ne` cells of `nb` DOFs, `nnz` CSR
/// nonzeros and `slots` ELLPACK slots.
#[allow(clippy::too_many_arguments)]
pub fn format_bytes(format: Format, t: usize, n: usize, ne: usize, nb: usize, nnz: usize, slots: usize, dim: usize, symmetric: bool) -> (usize, usize) {
    let vectors = 2 * n * t;
    match format {
        Format::Csr => (nnz * (t + 4) + (n + 1) * 4 + vectors, nnz * (2 * t + 4) + (n + 1) * 4 + n * t),
        Format::Ell | Format::LazyEll => (slots * (t + 4) + vectors, slots * (2 * t + 4) + n * t),
        Format::Lma => {
            let stored = if symmetric { nb * (nb + 1) / 2 } else { nb * nb };
            (ne * stored * t + ne * nb * 4 + vectors, ne * stored * t + ne * nb * (4 + 2 * t))
        }
        Format::MatrixFree => {
            let geo = ne * (1 << dim) * dim * t;
            (geo + ne * nb * 4 + vectors, geo + ne * nb * (4 + 2 * t))
        }
    }
}

/// Fraction of the copy bandwidth each format's GPU product reaches on its
/// bytes, and the flop rate of the matrix-free recomputation (bound by
/// registers and latency, not by the FMA units), measured on an H200
/// (`fem bench solve`, benches/gpu/results/tune). The CPU backend streams
/// CSR best and recomputes at about 2 GFLOP/s per thread.
pub(super) fn format_efficiency(f: Format, gpu: bool) -> f64 {
    match (f, gpu) {
        (Format::Csr, true) => 0.75,
        (Format::Ell | Format::LazyEll, true) => 0.85,
        (Format::Lma, true) => 0.8,
        (Format::Csr, false) => 1.0,
        (_, false) => 0.7,
        (Format::MatrixFree, true) => 1.0,
    }
}

/// The storage `auto` takes for the Q_p Poisson operator on `cells`
/// cells per direction: each format priced as `products` products (its
/// bytes over the copy bandwidth at its efficiency; matrix-free as the
/// flops of recomputing every element matrix) plus writing what it stores
/// once. A format whose storage and CG's vectors would not fit in the
/// device's free memory ([`super::memory`]) is unavailable.
pub fn choose_format(dim: usize, degree: usize, cells: usize, value_bytes: usize, m: &crate::sparse::model::Machine, products: f64) -> Result<crate::tune::select::Choice> {
    use crate::tune::select::{choose, Costed};
    let gpu = m.kind == crate::BackendKind::Cuda;
    // the eliminated pattern's own sizes, the ones the memory check reads
    let sizes = super::memory::BoxSizes::new(dim, degree, cells);
    let (n, ne, nb, nnz, slots) = (sizes.rows, sizes.cells, sizes.nb, sizes.nnz, sizes.slots);
    if [n, nnz, slots, ne.saturating_mul(nb)].iter().any(|&v| v > 1 << 40) {
        return Err(crate::Error::InvalidArgument(format!("Q{degree} Poisson on {cells}^{dim} cells passes every storage's index range")));
    }
    let options = Format::ALL.iter().map(|&f| {
        let (bytes, _) = format_bytes(f, value_bytes, n, ne, nb, nnz, slots, dim, false);
        let stream = bytes as f64 / (format_efficiency(f, gpu) * m.bytes_per_second);
        let product_seconds = if f == Format::MatrixFree {
            let q = (degree + 1).pow(dim as u32);
            let flops = ne as f64 * (q * nb * nb * 2 * dim) as f64;
            let rate = if gpu { 3e11 } else { 2e9 * m.resident_threads as f64 };
            stream.max(flops / rate)
        } else {
            stream
        };
        let stored = bytes.saturating_sub(2 * n * value_bytes) as f64;
        let conversion_seconds = if f == Format::MatrixFree { 0.0 } else { stored / m.bytes_per_second };
        let needs = sizes.device_bytes(f, value_bytes, dim, false);
        let unavailable = m.free_bytes.filter(|&free| needs > free).map(|free| format!("needs at least {:.1} GiB, {:.1} GiB free", needs as f64 / GIB, free as f64 / GIB));
        Costed { storage: f.name().into(), product_seconds, conversion_seconds, unavailable }
    });
    choose(options.collect(), products)
}

/// The tuning-file signature of the GPU CSR product of the Q_p Poisson
/// operator, whose threads per row `--bench` tunes (Reguly & Giles, Fig. 6).
pub fn csr_signature(dim: usize, degree: usize, cells: usize, precision: &str) -> String {
    let rows = (cells * degree + 1).pow(dim as u32);
    format!("poisson-csr/{dim}d/q{degree}/{precision}/rows={}", crate::tune::pow2_bucket(rows))
}
