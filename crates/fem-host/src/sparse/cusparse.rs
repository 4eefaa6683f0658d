//! cuSPARSE's CSR SpMV (generic API, `cusparseSpMV`), loaded dynamically
//! with the rest of CUDA: the reference every format is compared with.

use crate::operator::csr::Csr;
use crate::{Backend, CudaBackend, Error, Result, Scalar};
use cudarc::cusparse::sys;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use std::ffi::c_void;

/// A CSR matrix on the device with its cuSPARSE descriptors and work
/// buffer, preprocessed for repeated products.
pub struct CusparseCsr<T: Scalar> {
    handle: sys::cusparseHandle_t,
    mat: sys::cusparseSpMatDescr_t,
    vx: sys::cusparseDnVecDescr_t,
    vy: sys::cusparseDnVecDescr_t,
    /// Rows of the matrix (the length of `y`).
    pub n_rows: usize,
    /// Columns of the matrix (the length of `x`).
    pub n_cols: usize,
    /// Stored nonzeros.
    pub nnz: usize,
    _row_ptr: CudaSlice<u32>,
    _col: CudaSlice<u32>,
    /// The CSR values the descriptor points at; new values of the same pattern
    /// are copied into it in place.
    pub val: CudaSlice<T>,
    buffer: CudaSlice<u8>,
}

fn check(what: &str, s: sys::cusparseStatus_t) -> Result<()> {
    s.result()
        .map_err(|e| Error::Cusparse(format!("{what}: {:?}", e.0)))
}

fn data_type<T: Scalar>() -> sys::cudaDataType {
    if T::BYTES == 8 {
        sys::cudaDataType::CUDA_R_64F
    } else {
        sys::cudaDataType::CUDA_R_32F
    }
}

impl<T: Scalar> CusparseCsr<T> {
    /// Whether the cuSPARSE library can be loaded.
    pub fn available() -> bool {
        // SAFETY: only tries to open the shared library.
        unsafe { sys::is_culib_present() }
    }

    /// The square matrix `csr` on the GPU, preprocessed for `cusparseSpMV`;
    /// fails with [`Error::Cusparse`] when the library is missing or a call fails.
    pub fn new(gpu: &CudaBackend, csr: &Csr<T>) -> Result<Self> {
        Self::rectangular(gpu, csr, csr.n_rows)
    }

    /// A matrix of `n_cols` columns (the gather matrices of assembly by
    /// SpMV are not square).
    pub fn rectangular(gpu: &CudaBackend, csr: &Csr<T>, n_cols: usize) -> Result<Self> {
        if !Self::available() {
            return Err(Error::Cusparse(
                "libcusparse was not found (add the CUDA library directory to LD_LIBRARY_PATH)"
                    .into(),
            ));
        }
        gpu.ensure_free(csr.nnz() * (4 + T::BYTES) + csr.row_ptr.len() * 4)?;
        let s = gpu.stream();
        let (row_ptr, col, val) = (
            gpu.htod(&csr.row_ptr)?,
            gpu.htod(&csr.col)?,
            gpu.upload(&csr.val)?,
        );
        let mut x = gpu.zeros::<T>(n_cols.max(1))?;
        let mut y = gpu.zeros::<T>(csr.n_rows.max(1))?;
        let (n, m) = (csr.n_rows as i64, n_cols as i64);
        let handle = cudarc::cusparse::result::create()
            .map_err(|e| Error::Cusparse(format!("create: {:?}", e.0)))?;
        let mut me = Self {
            handle,
            mat: std::ptr::null_mut(),
            vx: std::ptr::null_mut(),
            vy: std::ptr::null_mut(),
            n_rows: csr.n_rows,
            n_cols,
            nnz: csr.nnz(),
            _row_ptr: row_ptr,
            _col: col,
            val,
            buffer: s.alloc_zeros::<u8>(1)?,
        };
        // SAFETY: descriptors point at device arrays `me` owns for its lifetime.
        unsafe {
            check(
                "set stream",
                sys::cusparseSetStream(handle, s.cu_stream() as sys::cudaStream_t),
            )?;
            let (rp, _g1) = me._row_ptr.device_ptr(s);
            let (cp, _g2) = me._col.device_ptr(s);
            let (vp, _g3) = me.val.device_ptr(s);
            check(
                "create CSR",
                sys::cusparseCreateCsr(
                    &mut me.mat,
                    n,
                    m,
                    me.nnz as i64,
                    rp as *mut c_void,
                    cp as *mut c_void,
                    vp as *mut c_void,
                    sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                    data_type::<T>(),
                ),
            )?;
            let (xp, _g4) = x.device_ptr_mut(s);
            let (yp, _g5) = y.device_ptr_mut(s);
            check(
                "create x",
                sys::cusparseCreateDnVec(&mut me.vx, m, xp as *mut c_void, data_type::<T>()),
            )?;
            check(
                "create y",
                sys::cusparseCreateDnVec(&mut me.vy, n, yp as *mut c_void, data_type::<T>()),
            )?;
            let (one, zero) = (T::ONE, T::ZERO);
            let mut size = 0usize;
            check(
                "buffer size",
                sys::cusparseSpMV_bufferSize(
                    handle,
                    OP,
                    &one as *const T as *const c_void,
                    me.mat,
                    me.vx,
                    &zero as *const T as *const c_void,
                    me.vy,
                    data_type::<T>(),
                    ALG,
                    &mut size,
                ),
            )?;
            me.buffer = s.alloc_zeros::<u8>(size.max(1))?;
            let (bp, _g6) = me.buffer.device_ptr_mut(s);
            check(
                "preprocess",
                sys::cusparseSpMV_preprocess(
                    handle,
                    OP,
                    &one as *const T as *const c_void,
                    me.mat,
                    me.vx,
                    &zero as *const T as *const c_void,
                    me.vy,
                    data_type::<T>(),
                    ALG,
                    bp as *mut c_void,
                ),
            )?;
        }
        gpu.synchronize()?;
        Ok(me)
    }

    /// `y = A x`.
    pub fn spmv(&self, gpu: &CudaBackend, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        crate::error::same_len("cusparse spmv", x.len(), self.n_cols)?;
        crate::error::same_len("cusparse spmv", y.len(), self.n_rows)?;
        if self.n_rows == 0 {
            return Ok(());
        }
        let s = gpu.stream();
        let (one, zero) = (T::ONE, T::ZERO);
        // SAFETY: x, y and the buffer are live device arrays of the right sizes.
        unsafe {
            let (xp, _g1) = x.device_ptr(s);
            let (yp, _g2) = y.device_ptr_mut(s);
            let (bp, _g3) = self.buffer.device_ptr(s);
            check(
                "set x",
                sys::cusparseDnVecSetValues(self.vx, xp as *mut c_void),
            )?;
            check(
                "set y",
                sys::cusparseDnVecSetValues(self.vy, yp as *mut c_void),
            )?;
            check(
                "SpMV",
                sys::cusparseSpMV(
                    self.handle,
                    OP,
                    &one as *const T as *const c_void,
                    self.mat,
                    self.vx,
                    &zero as *const T as *const c_void,
                    self.vy,
                    data_type::<T>(),
                    ALG,
                    bp as *mut c_void,
                ),
            )
        }
    }
}

const OP: sys::cusparseOperation_t = sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
const ALG: sys::cusparseSpMVAlg_t = sys::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT;

impl<T: Scalar> Drop for CusparseCsr<T> {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created once (or is null) and is destroyed once.
        unsafe {
            if !self.vx.is_null() {
                sys::cusparseDestroyDnVec(self.vx);
            }
            if !self.vy.is_null() {
                sys::cusparseDestroyDnVec(self.vy);
            }
            if !self.mat.is_null() {
                sys::cusparseDestroySpMat(self.mat);
            }
            let _ = cudarc::cusparse::result::destroy(self.handle);
        }
    }
}
