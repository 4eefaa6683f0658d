//! A CSR pattern on the device and the global formats built from it
//! there: CSR with zero values, ELLPACK column planes, and the slot of
//! every element-matrix entry that global assembly adds into. The pattern
//! is made on the device from the cells' map ([`DevicePattern::of_cells`])
//! or, where its rows are too long for that, sent by the host once (row
//! offsets and columns); the per-entry arrays, the planes and the unit
//! diagonal of fixed rows are made where they are used
//! ([`fem_kernels::slots`], one source with the host's checks).

use super::csr::Csr;
use super::gpu::GpuCells;
use crate::sparse::spgemm::zeros_u32;
use crate::{CudaBackend, Error, Result, Scalar};
use cudarc::driver::{CudaSlice, PushKernelArg};
use rayon::prelude::*;

/// Row offsets and ascending columns of a sparsity pattern, on the device.
pub struct DevicePattern {
    /// Number of rows.
    pub n_rows: usize,
    /// Entries of the longest row.
    pub width: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Row offsets, as in [`Csr::row_ptr`].
    pub row_ptr: CudaSlice<u32>,
    /// Columns, ascending within a row.
    pub col: CudaSlice<u32>,
}

impl DevicePattern {
    /// Uploads the pattern of `csr` (its values are not read).
    pub fn upload<T: Scalar>(gpu: &CudaBackend, csr: &Csr<T>) -> Result<Self> {
        gpu.ensure_free((csr.row_ptr.len() + csr.nnz()) * 4)?;
        Ok(Self { n_rows: csr.n_rows, width: csr.max_row_len(), nnz: csr.nnz(), row_ptr: gpu.htod(&csr.row_ptr)?, col: gpu.htod(&csr.col)? })
    }

    /// The pattern of the matrix assembled from `cells`, built on the
    /// device ([`fem_kernels::pattern`], one source with
    /// [`Csr::pattern`]): the same rows and ascending columns as the
    /// host's. `None` where a row has more than
    /// [`DEVICE_ROW_COLUMNS`](fem_kernels::pattern::DEVICE_ROW_COLUMNS)
    /// columns (high degrees), for the host to build.
    pub fn of_cells<T: Scalar>(gpu: &CudaBackend, cells: &GpuCells<T>) -> Result<Option<Self>> {
        Self::of_map(gpu, cells.n_rows, cells.ne, cells.nb, &cells.map, &cells.fixed_flags)
    }

    /// The pattern of `n_rows` rows of the cells whose rows are
    /// `cell_rows` (`[e·nb + i]`, cell after cell, every row free: a
    /// Newton set-up's gather map), built on the device as
    /// [`DevicePattern::of_cells`] builds it and brought to the host,
    /// values zero: the same rows and ascending columns as
    /// [`Csr::cells_pattern`]'s. `None` where a row has more columns than
    /// the device collects.
    pub fn host_pattern(gpu: &CudaBackend, n_rows: usize, nb: usize, cell_rows: &[u32]) -> Result<Option<Csr<f64>>> {
        if nb == 0 || cell_rows.len() % nb != 0 {
            return Err(Error::InvalidArgument(format!("{} cell rows are not whole cells of {nb}", cell_rows.len())));
        }
        let ne = cell_rows.len() / nb;
        if ne == 0 {
            return Ok(None);
        }
        if let Some(r) = cell_rows.par_iter().find_any(|&&r| r as usize >= n_rows) {
            return Err(Error::InvalidArgument(format!("a cell's row {r} is past the pattern's {n_rows} rows")));
        }
        gpu.ensure_free((2 * cell_rows.len() + n_rows) * 4)?;
        let s = gpu.stream();
        let rows = gpu.htod(cell_rows)?;
        let mut map = indices(gpu, cell_rows.len())?;
        let f = gpu.function("fem_pattern_transposed_rows")?;
        unsafe { s.launch_builder(&f).arg(&ne).arg(&nb).arg(&rows).arg(&mut map).launch(gpu.per_item(cell_rows.len())) }?;
        drop(rows);
        let free = s.alloc_zeros::<u8>(n_rows.max(1))?;
        let Some(p) = Self::of_map(gpu, n_rows, ne, nb, &map, &free)? else { return Ok(None) };
        drop(map);
        let col = if p.nnz == 0 { Vec::new() } else { gpu.dtoh(&p.col)? };
        let row_ptr = gpu.dtoh(&p.row_ptr)?;
        Ok(Some(Csr { n_rows, row_ptr, col, val: vec![0.0; p.nnz] }))
    }

    /// [`DevicePattern::of_cells`] of the transposed map `map`
    /// (`[i·ne + e]`, entries flagged fixed or [`NONE`](fem_kernels::sparse::NONE)) and the
    /// rows' fixed flags.
    fn of_map(gpu: &CudaBackend, n: usize, ne: usize, nb: usize, map: &CudaSlice<u32>, fixed_flags: &CudaSlice<u8>) -> Result<Option<Self>> {
        let entries = ne * nb;
        // counts and fill, rows' cells (at most one per entry), lengths and offsets
        gpu.ensure_free((entries + 4 * n + 2) * 4)?;
        let s = gpu.stream();
        let mut count = indices(gpu, n)?;
        unsafe { s.launch_builder(&gpu.function("fem_pattern_cell_counts")?).arg(&entries).arg(map).arg(&mut count).launch(gpu.per_item(entries)) }?;
        let (start, total) = gpu.exclusive_scan(&count)?;
        let mut fill = count; // counted into `start` now
        s.memset_zeros(&mut fill)?;
        let mut around = indices(gpu, (total as usize).max(1))?;
        unsafe { s.launch_builder(&gpu.function("fem_pattern_cells_around")?).arg(&ne).arg(&entries).arg(map).arg(&start).arg(&mut fill).arg(&mut around).launch(gpu.per_item(entries)) }?;
        let mut len = fill;
        let mut width = indices(gpu, 1)?;
        let f = gpu.function("fem_pattern_row_lengths")?;
        unsafe { s.launch_builder(&f).arg(&n).arg(&ne).arg(&nb).arg(map).arg(&start).arg(&around).arg(fixed_flags).arg(&mut len).arg(&mut width).launch(gpu.per_item(n)) }?;
        let width = s.clone_dtoh(&width)?[0];
        if width == u32::MAX {
            return Ok(None);
        }
        if width as usize * n > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!("a pattern of {n} rows up to {width} columns wide may pass the 2³² entries of its u32 row offsets")));
        }
        let (row_ptr, nnz) = gpu.exclusive_scan(&len)?;
        drop(len);
        let mut col = indices(gpu, nnz as usize)?;
        let f = gpu.function("fem_pattern_columns")?;
        unsafe { s.launch_builder(&f).arg(&n).arg(&ne).arg(&nb).arg(map).arg(&start).arg(&around).arg(fixed_flags).arg(&row_ptr).arg(&mut col).launch(gpu.per_item(n)) }?;
        Ok(Some(Self { n_rows: n, width: width as usize, nnz: nnz as usize, row_ptr, col }))
    }

    /// `n_rows` rows without entries, `width` slots wide: its ELLPACK
    /// planes hold every row's own index in every slot (a lazy ELLPACK
    /// before its rows are appended).
    pub fn empty(gpu: &CudaBackend, n_rows: usize, width: usize) -> Result<Self> {
        Ok(Self { n_rows, width, nnz: 0, row_ptr: indices(gpu, n_rows + 1)?, col: gpu.stream().null()? })
    }

    /// The slot of every entry of every element matrix of `cells`
    /// (`[(i·nb + j)·ne + e]`, `u32::MAX` where the entry does not enter):
    /// in CSR's values when `ld` is 0, in ELLPACK planes `ld` apart
    /// otherwise.
    pub fn entry_slots<T: Scalar>(&self, gpu: &CudaBackend, cells: &GpuCells<T>, ld: usize) -> Result<CudaSlice<u32>> {
        if cells.n_rows != self.n_rows {
            return Err(Error::LengthMismatch { op: "rows of the cells and of the pattern", left: cells.n_rows, right: self.n_rows });
        }
        let n = cells.nb * cells.nb * cells.ne;
        let mut pos = indices(gpu, n)?;
        let f = gpu.function("fem_entry_slots")?;
        unsafe { gpu.stream().launch_builder(&f).arg(&cells.ne).arg(&cells.nb).arg(&cells.map).arg(&self.row_ptr).arg(&self.col).arg(&ld).arg(&mut pos).launch(gpu.per_item(n)) }?;
        Ok(pos)
    }

    /// The column planes of the pattern as a transposed ELLPACK of
    /// `width` slots a row, planes `ld ≥ n_rows` apart (padding: the row
    /// itself).
    pub fn ell_columns(&self, gpu: &CudaBackend, ld: usize) -> Result<CudaSlice<u32>> {
        if ld < self.n_rows {
            return Err(Error::InvalidArgument(format!("plane stride {ld} below {} rows", self.n_rows)));
        }
        let n = self.width * ld;
        let mut col = indices(gpu, n)?;
        let f = gpu.function("fem_ell_columns")?;
        unsafe { gpu.stream().launch_builder(&f).arg(&self.n_rows).arg(&ld).arg(&self.width).arg(&self.row_ptr).arg(&self.col).arg(&mut col).launch(gpu.per_item(n)) }?;
        Ok(col)
    }

    /// `val` = 1 at the first slot (its diagonal) of every row where
    /// `fixed` is nonzero: CSR slots when `ld` is 0, ELLPACK ones
    /// otherwise.
    pub fn unit_fixed_rows<T: Scalar>(&self, gpu: &CudaBackend, fixed: &CudaSlice<T>, ld: usize, val: &mut CudaSlice<T>) -> Result<()> {
        if fixed.len() != self.n_rows {
            return Err(Error::LengthMismatch { op: "fixed-row mask and rows", left: fixed.len(), right: self.n_rows });
        }
        let n = self.n_rows;
        let f = gpu.function(&format!("fem_unit_fixed_rows_{}", T::NAME))?;
        unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(&self.row_ptr).arg(&ld).arg(fixed).arg(val).launch(gpu.per_item(n)) }?;
        Ok(())
    }
}

/// `n` zeroed indices on the device, refused before allocating when
/// they do not fit.
fn indices(gpu: &CudaBackend, n: usize) -> Result<CudaSlice<u32>> {
    gpu.ensure_free(n * 4)?;
    zeros_u32(gpu, n)
}
