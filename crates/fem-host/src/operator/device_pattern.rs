//! A CSR pattern on the device and the global formats built from it
//! there: CSR with zero values, ELLPACK column planes, and the slot of
//! every element-matrix entry that global assembly adds into. The host
//! sends the pattern once (row offsets and columns); the per-entry arrays,
//! the planes and the unit diagonal of fixed rows are made where they are
//! used ([`fem_kernels::slots`], one source with the host's checks).

use super::csr::Csr;
use super::gpu::GpuCells;
use crate::sparse::spgemm::{u32s, zeros_u32};
use crate::{CudaBackend, Error, Result, Scalar};
use cudarc::driver::{CudaSlice, PushKernelArg};

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
        Ok(Self { n_rows: csr.n_rows, width: csr.max_row_len(), nnz: csr.nnz(), row_ptr: u32s(gpu, &csr.row_ptr)?, col: u32s(gpu, &csr.col)? })
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
