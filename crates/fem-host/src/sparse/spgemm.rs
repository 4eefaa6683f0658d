//! Sparse products and transposes of CSR matrices on the device, through
//! cuSPARSE (`cusparseSpGEMM`, `cusparseCsr2cscEx2`): the Galerkin
//! products and prolongator smoothing of AMG's set-up on the GPU. A
//! general, tuned SpGEMM is what cuSPARSE is for; the host's products are
//! `solver::amg::product`.

use crate::operator::gpu::GpuCsr;
use crate::{Backend, CudaBackend, Error, Result, Scalar};
use cudarc::cusparse::sys;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use std::ffi::c_void;

/// A CSR matrix of `f64` on the device (`u32` indices, cuSPARSE's
/// `int32`; rows need not be sorted).
pub struct DeviceCsr {
    /// Rows.
    pub n_rows: usize,
    /// Columns.
    pub n_cols: usize,
    /// Row offsets (`n_rows + 1`).
    pub row_ptr: CudaSlice<u32>,
    /// Column of every entry.
    pub col: CudaSlice<u32>,
    /// Value of every entry.
    pub val: CudaSlice<f64>,
}

impl DeviceCsr {
    /// `m` (`n_cols` columns) on the device; a pattern without values
    /// gets zeros.
    pub fn upload(gpu: &CudaBackend, m: &crate::operator::csr::Csr<f64>, n_cols: usize) -> Result<Self> {
        let val = if m.val.is_empty() { gpu.zeros(m.col.len())? } else { gpu.upload(&m.val)? };
        Ok(Self { n_rows: m.n_rows, n_cols, row_ptr: gpu.htod(&m.row_ptr)?, col: gpu.htod(&m.col)?, val })
    }

    /// The matrix on the host.
    pub fn download(&self, gpu: &CudaBackend) -> Result<crate::operator::csr::Csr<f64>> {
        let (col, val) = match self.nnz() {
            0 => (Vec::new(), Vec::new()),
            _ => (gpu.dtoh(&self.col)?, gpu.dtoh(&self.val)?),
        };
        Ok(crate::operator::csr::Csr { n_rows: self.n_rows, row_ptr: gpu.dtoh(&self.row_ptr)?, col, val })
    }

    /// A matrix of `n_rows` empty rows.
    pub fn empty(gpu: &CudaBackend, n_rows: usize, n_cols: usize) -> Result<Self> {
        Ok(Self { n_rows, n_cols, row_ptr: zeros_u32(gpu, n_rows + 1)?, col: zeros_u32(gpu, 0)?, val: gpu.zeros(0)? })
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.col.len()
    }

    /// Bytes of its arrays.
    pub fn bytes(&self) -> usize {
        self.row_ptr.len() * 4 + self.nnz() * 12
    }

    /// The matrix in the backend's CSR SpMV (`threads_per_row` a power of
    /// two up to 32), in precision `T`, with its diagonal `diag` where it
    /// is square.
    pub fn into_gpu<T: Scalar>(self, gpu: &CudaBackend, threads_per_row: usize, diag: Option<&CudaSlice<f64>>) -> Result<GpuCsr<T>> {
        let to_t = |v: &CudaSlice<f64>| -> Result<CudaSlice<T>> {
            let mut out = gpu.zeros::<T>(v.len())?;
            gpu.convert(v, &mut out)?;
            Ok(out)
        };
        let diag = diag.map(to_t).transpose()?;
        let val = to_t(&self.val)?;
        Ok(GpuCsr { n_rows: self.n_rows, n_cols: self.n_cols, row_ptr: self.row_ptr, col: self.col, val, threads_per_row, diag })
    }
}

fn check(what: &str, s: sys::cusparseStatus_t) -> Result<()> {
    s.result().map_err(|e| Error::Cusparse(format!("{what}: {:?}", e.0)))
}

/// `false` where cuSPARSE finds a product too large, else as [`check`].
fn fits(what: &str, s: sys::cusparseStatus_t) -> Result<bool> {
    if s == sys::cusparseStatus_t::CUSPARSE_STATUS_INSUFFICIENT_RESOURCES {
        return Ok(false);
    }
    check(what, s).map(|()| true)
}

/// A cuSPARSE handle on the backend's stream, destroyed when dropped.
pub struct Sparse {
    handle: sys::cusparseHandle_t,
}

impl Sparse {
    /// A handle whose work is queued on `gpu`'s stream.
    pub fn new(gpu: &CudaBackend) -> Result<Self> {
        // SAFETY: only tries to open the shared library.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::Cusparse("libcusparse was not found (add the CUDA library directory to LD_LIBRARY_PATH)".into()));
        }
        let handle = cudarc::cusparse::result::create().map_err(|e| Error::Cusparse(format!("create: {:?}", e.0)))?;
        let me = Self { handle };
        // SAFETY: the handle was just created; the stream outlives it.
        unsafe { check("set stream", sys::cusparseSetStream(handle, gpu.stream().cu_stream() as sys::cudaStream_t))? };
        Ok(me)
    }

    /// `Aᵀ`.
    pub fn transpose(&self, gpu: &CudaBackend, a: &DeviceCsr) -> Result<DeviceCsr> {
        let s = gpu.stream();
        let nnz = a.nnz();
        gpu.ensure_free((a.n_cols + 1) * 4 + nnz * 12)?;
        let mut t = DeviceCsr { n_rows: a.n_cols, n_cols: a.n_rows, row_ptr: s.alloc_zeros(a.n_cols + 1)?, col: s.alloc_zeros(nnz)?, val: s.alloc_zeros(nnz)? };
        if nnz == 0 {
            return Ok(t);
        }
        let (m, n) = (a.n_rows as i32, a.n_cols as i32);
        let (alg, action, base) = (sys::cusparseCsr2CscAlg_t::CUSPARSE_CSR2CSC_ALG1, sys::cusparseAction_t::CUSPARSE_ACTION_NUMERIC, sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO);
        let ty = sys::cudaDataType::CUDA_R_64F;
        // SAFETY: every pointer is a live device array of the sizes cuSPARSE reads.
        unsafe {
            let (av, _g1) = a.val.device_ptr(s);
            let (ar, _g2) = a.row_ptr.device_ptr(s);
            let (ac, _g3) = a.col.device_ptr(s);
            let (tv, _g4) = t.val.device_ptr_mut(s);
            let (tr, _g5) = t.row_ptr.device_ptr_mut(s);
            let (tc, _g6) = t.col.device_ptr_mut(s);
            let mut size = 0usize;
            check("transpose buffer", sys::cusparseCsr2cscEx2_bufferSize(self.handle, m, n, nnz as i32, av as *const c_void, ar as *const i32, ac as *const i32, tv as *mut c_void, tr as *mut i32, tc as *mut i32, ty, action, base, alg, &mut size))?;
            let buffer = s.alloc_zeros::<u8>(size.max(1))?;
            let (bp, _g7) = buffer.device_ptr(s);
            check("transpose", sys::cusparseCsr2cscEx2(self.handle, m, n, nnz as i32, av as *const c_void, ar as *const i32, ac as *const i32, tv as *mut c_void, tr as *mut i32, tc as *mut i32, ty, action, base, alg, bp as *mut c_void))?;
        }
        Ok(t)
    }

    /// `A B`, in runs of `A`'s rows of about [`CHUNK_PRODUCTS`]
    /// intermediate products each: cuSPARSE refuses a product of more than
    /// 2³¹ (`CUSPARSE_STATUS_INSUFFICIENT_RESOURCES`, e.g. the Galerkin
    /// product `A P` of 3D elasticity at 3M rows), and its buffers grow
    /// with them. A run it still refuses is halved.
    pub fn multiply(&self, gpu: &CudaBackend, a: &DeviceCsr, b: &DeviceCsr) -> Result<DeviceCsr> {
        if a.n_cols != b.n_rows {
            return Err(Error::InvalidArgument(format!("SpGEMM: {} columns times {} rows", a.n_cols, b.n_rows)));
        }
        // finite-element rows are alike: the average row of B stands for all
        let products = a.nnz() as f64 * b.nnz() as f64 / b.n_rows.max(1) as f64;
        self.multiply_runs(gpu, a, b, ((products / CHUNK_PRODUCTS).ceil() as usize).clamp(1, a.n_rows.max(1)))
    }

    /// `A B` from the products of `runs` runs of `A`'s rows (at most one
    /// a row), stacked.
    pub fn multiply_runs(&self, gpu: &CudaBackend, a: &DeviceCsr, b: &DeviceCsr, runs: usize) -> Result<DeviceCsr> {
        if runs == 1 {
            match self.multiply_whole(gpu, a, b)? {
                Some(c) => return Ok(c),
                None if a.n_rows > 1 => return self.multiply_runs(gpu, a, b, 2),
                None => return Err(Error::Cusparse("SpGEMM: a single row's product exceeds cuSPARSE's resources".into())),
            }
        }
        let bounds: Vec<usize> = (0..=runs).map(|i| i * a.n_rows / runs).collect();
        let parts = bounds.windows(2).map(|w| self.multiply_runs(gpu, &rows(gpu, a, w[0], w[1])?, b, 1)).collect::<Result<Vec<_>>>()?;
        stack(gpu, b.n_cols, parts)
    }

    /// `A B` in one cuSPARSE product; `None` where cuSPARSE finds it too
    /// large.
    fn multiply_whole(&self, gpu: &CudaBackend, a: &DeviceCsr, b: &DeviceCsr) -> Result<Option<DeviceCsr>> {
        let s = gpu.stream();
        let (op, ty, alg) = (sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE, sys::cudaDataType::CUDA_R_64F, sys::cusparseSpGEMMAlg_t::CUSPARSE_SPGEMM_DEFAULT);
        let (one, zero) = (1.0f64, 0.0f64);
        let (alpha, beta) = (&one as *const f64 as *const c_void, &zero as *const f64 as *const c_void);
        let mut row_ptr = s.alloc_zeros::<u32>(a.n_rows + 1)?;
        let descs = Descriptors::new()?;
        // SAFETY: descriptors point at live device arrays; buffers are
        // allocated at the sizes cuSPARSE asks for and live to the end.
        unsafe {
            let (ma, mb) = (descs.csr(s, a)?, descs.csr(s, b)?);
            let (rp, _g) = row_ptr.device_ptr_mut(s);
            let mut mc = std::ptr::null_mut();
            check("create C", sys::cusparseCreateCsr(&mut mc, a.n_rows as i64, b.n_cols as i64, 0, rp as *mut c_void, std::ptr::null_mut(), std::ptr::null_mut(), I32, I32, BASE, ty))?;
            descs.mats.borrow_mut().push(mc);
            let (ca, cb) = (ma as sys::cusparseConstSpMatDescr_t, mb as sys::cusparseConstSpMatDescr_t);
            let sp = descs.spgemm;
            let mut size1 = 0usize;
            if !fits("work estimation", sys::cusparseSpGEMM_workEstimation(self.handle, op, op, alpha, ca, cb, beta, mc, ty, alg, sp, &mut size1, std::ptr::null_mut()))? {
                return Ok(None);
            }
            let buffer1 = s.alloc_zeros::<u8>(size1.max(1))?;
            let (b1, _g1) = buffer1.device_ptr(s);
            if !fits("work estimation", sys::cusparseSpGEMM_workEstimation(self.handle, op, op, alpha, ca, cb, beta, mc, ty, alg, sp, &mut size1, b1 as *mut c_void))? {
                return Ok(None);
            }
            let mut size2 = 0usize;
            if !fits("compute size", sys::cusparseSpGEMM_compute(self.handle, op, op, alpha, ca, cb, beta, mc, ty, alg, sp, &mut size2, std::ptr::null_mut()))? {
                return Ok(None);
            }
            gpu.ensure_free(size2)?;
            let buffer2 = s.alloc_zeros::<u8>(size2.max(1))?;
            let (b2, _g2) = buffer2.device_ptr(s);
            check("compute", sys::cusparseSpGEMM_compute(self.handle, op, op, alpha, ca, cb, beta, mc, ty, alg, sp, &mut size2, b2 as *mut c_void))?;
            let (mut rows, mut cols, mut nnz) = (0i64, 0i64, 0i64);
            check("size of C", sys::cusparseSpMatGetSize(mc as sys::cusparseConstSpMatDescr_t, &mut rows, &mut cols, &mut nnz))?;
            if nnz > i32::MAX as i64 {
                return Err(Error::InvalidArgument(format!("SpGEMM: {nnz} entries exceed 32-bit indices")));
            }
            gpu.ensure_free(nnz as usize * 12)?;
            let mut col = s.alloc_zeros::<u32>(nnz as usize)?;
            let mut val = s.alloc_zeros::<f64>(nnz as usize)?;
            {
                let (cp, _g3) = col.device_ptr_mut(s);
                let (vp, _g4) = val.device_ptr_mut(s);
                check("set C", sys::cusparseCsrSetPointers(mc, rp as *mut c_void, cp as *mut c_void, vp as *mut c_void))?;
                check("copy", sys::cusparseSpGEMM_copy(self.handle, op, op, alpha, ca, cb, beta, mc, ty, alg, sp))?;
            }
            gpu.synchronize()?; // the buffers go when this scope ends
            drop(_g);
            Ok(Some(DeviceCsr { n_rows: a.n_rows, n_cols: b.n_cols, row_ptr, col, val }))
        }
    }
}

/// Intermediate products one cuSPARSE product is given at most (a
/// quarter of its 2³¹ limit: the estimate takes the rows as alike).
pub const CHUNK_PRODUCTS: f64 = (1u64 << 29) as f64;

/// `n` zeros on the device.
pub(crate) fn zeros_u32(gpu: &CudaBackend, n: usize) -> Result<CudaSlice<u32>> {
    Ok(match n {
        0 => gpu.stream().null()?,
        _ => gpu.stream().alloc_zeros(n)?,
    })
}

/// Rows `r0..r1` of `a` as a matrix of their own (none for an empty range).
pub(crate) fn rows(gpu: &CudaBackend, a: &DeviceCsr, r0: usize, r1: usize) -> Result<DeviceCsr> {
    if r1 <= r0 {
        return DeviceCsr::empty(gpu, 0, a.n_cols);
    }
    let s = gpu.stream();
    let span = s.clone_dtoh(&a.row_ptr.slice(r0..r1 + 1))?;
    let (lo, hi) = (span[0] as usize, span[r1 - r0] as usize);
    let mut row_ptr = s.alloc_zeros::<u32>(r1 - r0 + 1)?;
    shift(gpu, &a.row_ptr.slice(r0..r1 + 1), span[0].wrapping_neg(), &mut row_ptr.slice_mut(..))?;
    Ok(DeviceCsr { n_rows: r1 - r0, n_cols: a.n_cols, row_ptr, col: s.clone_dtod(&a.col.slice(lo..hi))?, val: s.clone_dtod(&a.val.slice(lo..hi))? })
}

/// The matrix whose rows are those of `parts` in turn.
pub(crate) fn stack(gpu: &CudaBackend, n_cols: usize, parts: Vec<DeviceCsr>) -> Result<DeviceCsr> {
    let s = gpu.stream();
    let (n_rows, nnz) = (parts.iter().map(|p| p.n_rows).sum::<usize>(), parts.iter().map(DeviceCsr::nnz).sum::<usize>());
    if nnz > i32::MAX as usize {
        return Err(Error::InvalidArgument(format!("SpGEMM: {nnz} entries exceed 32-bit indices")));
    }
    gpu.ensure_free(nnz * 12 + n_rows * 4)?;
    let mut c = DeviceCsr { n_rows, n_cols, row_ptr: s.alloc_zeros(n_rows + 1)?, col: s.alloc_zeros(nnz)?, val: s.alloc_zeros(nnz)? };
    let (mut row, mut at) = (0, 0);
    for p in parts {
        let (r, z) = (p.n_rows, p.nnz());
        shift(gpu, &p.row_ptr.slice(..), at as u32, &mut c.row_ptr.slice_mut(row..row + r + 1))?;
        if z > 0 {
            s.memcpy_dtod(&p.col, &mut c.col.slice_mut(at..at + z))?;
            s.memcpy_dtod(&p.val, &mut c.val.slice_mut(at..at + z))?;
        }
        (row, at) = (row + r, at + z);
    }
    Ok(c)
}

/// `out = x + delta` (wrapping) on the device.
pub(crate) fn shift(gpu: &CudaBackend, x: &cudarc::driver::CudaView<u32>, delta: u32, out: &mut cudarc::driver::CudaViewMut<u32>) -> Result<()> {
    use cudarc::driver::PushKernelArg;
    let n = x.len();
    unsafe { gpu.stream().launch_builder(&gpu.function("fem_amg_shift")?).arg(&n).arg(x).arg(&delta).arg(out).launch(gpu.per_item(n)) }?;
    Ok(())
}

impl Drop for Sparse {
    fn drop(&mut self) {
        // SAFETY: the handle is live and destroyed once.
        unsafe { sys::cusparseDestroy(self.handle) };
    }
}

const I32: sys::cusparseIndexType_t = sys::cusparseIndexType_t::CUSPARSE_INDEX_32I;
const BASE: sys::cusparseIndexBase_t = sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO;

/// The matrix and SpGEMM descriptors of one product, destroyed together.
struct Descriptors {
    mats: std::cell::RefCell<Vec<sys::cusparseSpMatDescr_t>>,
    spgemm: sys::cusparseSpGEMMDescr_t,
}

impl Descriptors {
    fn new() -> Result<Self> {
        let mut spgemm = std::ptr::null_mut();
        // SAFETY: creates a descriptor destroyed in `drop`.
        unsafe { check("SpGEMM descriptor", sys::cusparseSpGEMM_createDescr(&mut spgemm))? };
        Ok(Self { mats: Default::default(), spgemm })
    }

    /// A descriptor of `m`, which must outlive `self`.
    unsafe fn csr(&self, s: &std::sync::Arc<cudarc::driver::CudaStream>, m: &DeviceCsr) -> Result<sys::cusparseSpMatDescr_t> {
        let (rp, _g1) = m.row_ptr.device_ptr(s);
        let (cp, _g2) = m.col.device_ptr(s);
        let (vp, _g3) = m.val.device_ptr(s);
        let mut d = std::ptr::null_mut();
        check("create CSR", sys::cusparseCreateCsr(&mut d, m.n_rows as i64, m.n_cols as i64, m.nnz() as i64, rp as *mut c_void, cp as *mut c_void, vp as *mut c_void, I32, I32, BASE, sys::cudaDataType::CUDA_R_64F))?;
        self.mats.borrow_mut().push(d);
        Ok(d)
    }
}

impl Drop for Descriptors {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created here and is destroyed once.
        unsafe {
            for &m in self.mats.borrow().iter() {
                sys::cusparseDestroySpMat(m as sys::cusparseConstSpMatDescr_t);
            }
            sys::cusparseSpGEMM_destroyDescr(self.spgemm);
        }
    }
}
