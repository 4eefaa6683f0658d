//! ELL-WARP (K1, K2; the original numbering) built on the GPU from a CSR
//! matrix there ([`fem_kernels::sparse::warp_lane_slots`] and the row
//! sort of the `warp` kernels), instead of on the host and sent: the same
//! permutation, slices, columns and source positions as
//! [`EllWarp::new`], checked against it by the GPU tests. Only the number
//! of rows of each length comes back, for the slices.

use super::device::{slice_words, slots_bytes, GpuEllWarp};
use super::spgemm::zeros_u32;
use super::warp::{EllWarp, Numbering};
use crate::operator::csr::Csr;
use crate::{Backend, CudaBackend, Error, Result, Scalar};
use cudarc::driver::{CudaSlice, PushKernelArg};
use fem_kernels::sparse::{NONE, SLICE_LANES, WARP_SORT_CHUNK};

/// Longest row the device sorts by length (a count per length and chunk
/// of rows); longer rows are built on the host.
pub const DEVICE_WARP_MAX_ROW: usize = 1024;

/// CSR arrays on the GPU, borrowed, as the device's ELL-WARP build reads
/// them (the owned device CSR of the sparse products is
/// [`crate::sparse::spgemm::DeviceCsr`]).
pub struct DeviceCsrView<'a, T> {
    /// Rows.
    pub n_rows: usize,
    /// Columns (the length of `x`).
    pub n_cols: usize,
    /// Entries of the longest row.
    pub max_len: usize,
    /// Row offsets (`n_rows + 1`).
    pub row_ptr: &'a CudaSlice<u32>,
    /// Columns, ascending or not, as the slots are to hold them.
    pub col: &'a CudaSlice<u32>,
    /// Values; `None` leaves them zero (refilled later by `reorder`).
    pub val: Option<&'a CudaSlice<T>>,
}

impl<T: Scalar> GpuEllWarp<T> {
    /// K1 (`threshold` `None`) or K2 of `m`, built on the GPU, launched in
    /// blocks of `block` threads; `pad` is the column of every padding
    /// slot (`None`: the row's first). An error where a row is longer than
    /// [`DEVICE_WARP_MAX_ROW`] or the arrays do not fit.
    pub fn on_device(gpu: &CudaBackend, m: &DeviceCsrView<'_, T>, threshold: Option<usize>, pad: Option<u32>, block: u32) -> Result<Self> {
        let (n, max_len) = (m.n_rows, m.max_len);
        if max_len > DEVICE_WARP_MAX_ROW {
            return Err(Error::InvalidArgument(format!("a row of {max_len} entries is longer than the device's ELL-WARP build takes ({DEVICE_WARP_MAX_ROW})")));
        }
        crate::error::same_len("row offsets", m.row_ptr.len(), n + 1)?;
        let (perm, first) = row_order(gpu, n, max_len, m.row_ptr)?;
        // sorted row s has the length of the key whose rows hold it
        let len = |s: usize| max_len - (first.partition_point(|&f| f as usize <= s) - 1);
        let slices = EllWarp::<T>::slices(n, len, threshold)?;
        let slots = slices.last().map_or(0, |s| s.offset as usize + s.width as usize * SLICE_LANES);
        gpu.ensure_free(slots * (8 + T::BYTES) + slices.len() * 16)?;
        let d_slices = gpu.htod(&slice_words(&slices))?;
        let (mut col, mut src) = (zeros_u32(gpu, slots)?, zeros_u32(gpu, slots)?);
        if !slices.is_empty() {
            let (ns, pad) = (slices.len(), pad.unwrap_or(NONE));
            let f = gpu.function("fem_warp_slots")?;
            unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(&ns).arg(&d_slices).arg(&perm).arg(m.row_ptr).arg(m.col).arg(&pad).arg(&mut col).arg(&mut src).launch(gpu.per_item(ns * SLICE_LANES)) }?;
        }
        let mut val = gpu.zeros::<T>(slots)?;
        if let Some(v) = m.val {
            super::device::gpu_gather(gpu, &src, v, &mut val)?;
        }
        let name = format!("k{}", if threshold.is_some() { 2 } else { 1 });
        let bytes = slots_bytes::<T>(slots, slices.len(), n);
        Ok(Self { name, n_rows: n, n_cols: m.n_cols, n_slices: slices.len(), block, remap: true, slices: d_slices, col, val, perm, src, host_perm: Vec::new(), bytes })
    }

    /// [`GpuEllWarp::on_device`] of the host matrix `csr` (`n_cols`
    /// columns, values included): its CSR arrays are sent, not the
    /// padded slots and their permutation and sources.
    pub fn from_csr(gpu: &CudaBackend, csr: &Csr<T>, n_cols: usize, threshold: Option<usize>, block: u32) -> Result<Self> {
        gpu.ensure_free((csr.n_rows + 1 + csr.nnz()) * 4 + csr.nnz() * T::BYTES)?;
        let (row_ptr, col, val) = (gpu.htod(&csr.row_ptr)?, gpu.htod(&csr.col)?, gpu.upload(&csr.val)?);
        let m = DeviceCsrView { n_rows: csr.n_rows, n_cols, max_len: csr.max_row_len(), row_ptr: &row_ptr, col: &col, val: Some(&val) };
        Self::on_device(gpu, &m, threshold, None, block)
    }

    /// K1 or K2 of the host matrix `csr` in the original numbering: built
    /// on the GPU ([`GpuEllWarp::from_csr`]) where its rows allow, on the
    /// host and sent where a row is longer than [`DEVICE_WARP_MAX_ROW`].
    pub fn stored(gpu: &CudaBackend, csr: &Csr<T>, n_cols: usize, threshold: Option<usize>, block: u32) -> Result<Self> {
        if csr.max_row_len() <= DEVICE_WARP_MAX_ROW {
            return Self::from_csr(gpu, csr, n_cols, threshold, block);
        }
        Self::upload(gpu, &EllWarp::new(&crate::CpuBackend::new(None)?, csr, n_cols, threshold, Numbering::Remap)?, block)
    }
}

/// The `n` rows ordered longest first, rows of one length in their order
/// (a stable counting sort by chunks of rows), and where the sorted rows
/// of each key (`max_len` less the length) begin, with `n` last.
fn row_order(gpu: &CudaBackend, n: usize, max_len: usize, row_ptr: &CudaSlice<u32>) -> Result<(CudaSlice<u32>, Vec<u32>)> {
    if n == 0 {
        return Ok((zeros_u32(gpu, 1)?, vec![0; max_len + 2]));
    }
    let (s, chunks, keys) = (gpu.stream(), n.div_ceil(WARP_SORT_CHUNK), max_len + 1);
    gpu.ensure_free((2 * keys * chunks + keys + n + 2) * 4)?;
    let mut count = zeros_u32(gpu, keys * chunks)?;
    unsafe { s.launch_builder(&gpu.function("fem_warp_length_counts")?).arg(&n).arg(&chunks).arg(&max_len).arg(row_ptr).arg(&mut count).launch(gpu.per_item(chunks)) }?;
    let (mut start, total) = gpu.exclusive_scan(&count)?;
    drop(count);
    if total as usize != n {
        return Err(Error::InvalidArgument(format!("ELL-WARP row sort placed {total} of {n} rows: a row longer than {max_len}")));
    }
    let mut first = zeros_u32(gpu, keys + 1)?;
    unsafe { s.launch_builder(&gpu.function("fem_warp_key_starts")?).arg(&keys).arg(&chunks).arg(&start).arg(&mut first).launch(gpu.per_item(keys + 1)) }?;
    let first = s.clone_dtoh(&first)?;
    let mut perm = zeros_u32(gpu, n)?;
    unsafe { s.launch_builder(&gpu.function("fem_warp_place_rows")?).arg(&n).arg(&chunks).arg(&max_len).arg(row_ptr).arg(&mut start).arg(&mut perm).launch(gpu.per_item(chunks)) }?;
    Ok((perm, first))
}
