//! `Aᵀ` of a CSR matrix on the device ([`fem_kernels`]' `transpose_*`
//! kernels): the same rows, ascending columns and source positions as the
//! host's [`TransposedPattern`](crate::solver::transfer::TransposedPattern),
//! made where the matrix already is instead of on the host and sent
//! (multigrid's restrictions, `Pᵀ`, took 0.1 s of host time and as much
//! again of copies on a 6M-row hierarchy).

use super::spgemm::zeros_u32;
use crate::{CudaBackend, Error, Result};
use cudarc::driver::{CudaSlice, PushKernelArg};

/// The pattern of `Aᵀ` on the device and where its values come from.
pub struct DeviceTransposedPattern {
    /// Row offsets of `Aᵀ` (`n_cols + 1`).
    pub row_ptr: CudaSlice<u32>,
    /// Column of every entry of `Aᵀ`: the row of `A` it comes from,
    /// ascending within a row.
    pub col: CudaSlice<u32>,
    /// Position in `A` of every entry of `Aᵀ`.
    pub src: CudaSlice<u32>,
    /// Entries of the longest row of `Aᵀ`.
    pub width: usize,
}

impl DeviceTransposedPattern {
    /// Of the CSR pattern (`row_ptr`, `col`) of `n_rows` rows and `n_cols`
    /// columns on the device; an error where a column is `n_cols` or more.
    pub fn of(gpu: &CudaBackend, n_rows: usize, n_cols: usize, row_ptr: &CudaSlice<u32>, col: &CudaSlice<u32>) -> Result<Self> {
        crate::error::same_len("row offsets", row_ptr.len(), n_rows + 1)?;
        let nnz = col.len();
        gpu.ensure_free((3 * (n_cols + 1) + 2 * nnz + 2) * 4)?;
        let s = gpu.stream();
        if nnz == 0 {
            return Ok(Self { row_ptr: zeros_u32(gpu, n_cols + 1)?, col: zeros_u32(gpu, 0)?, src: zeros_u32(gpu, 0)?, width: 0 });
        }
        if n_cols == 0 {
            return Err(Error::InvalidArgument(format!("a transpose of {nnz} entries in no column")));
        }
        let (mut count, mut flags) = (zeros_u32(gpu, n_cols)?, s.clone_htod(&[0u32, 0])?);
        unsafe { s.launch_builder(&gpu.function("fem_transpose_counts")?).arg(&nnz).arg(col).arg(&n_cols).arg(&mut count).arg(&mut flags).launch(gpu.per_item(nnz)) }?;
        if s.clone_dtoh(&flags)?[0] != 0 {
            return Err(Error::InvalidArgument(format!("a transpose's column past its {n_cols} columns")));
        }
        let (start, total) = gpu.exclusive_scan(&count)?;
        if total as usize != nnz {
            return Err(Error::InvalidArgument(format!("a transpose placed {total} of {nnz} entries")));
        }
        let mut fill = count;
        s.memset_zeros(&mut fill)?;
        let (mut t_col, mut src) = (zeros_u32(gpu, nnz)?, zeros_u32(gpu, nnz)?);
        unsafe { s.launch_builder(&gpu.function("fem_transpose_fill")?).arg(&n_rows).arg(row_ptr).arg(col).arg(&start).arg(&mut fill).arg(&mut t_col).arg(&mut src).launch(gpu.per_item(n_rows)) }?;
        // the longest row in the flags' second word
        let mut width = flags.slice_mut(1..2);
        unsafe { s.launch_builder(&gpu.function("fem_transpose_sort_rows")?).arg(&n_cols).arg(&start).arg(&mut t_col).arg(&mut src).arg(&mut width).launch(gpu.per_item(n_cols)) }?;
        let width = s.clone_dtoh(&flags)?[1] as usize;
        Ok(Self { row_ptr: start, col: t_col, src, width })
    }
}
