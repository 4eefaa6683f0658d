//! What the preconditioners need of a backend beyond its vector
//! operations: storing a hierarchy's matrices in an SpMV format and
//! building the coloured SSOR, so that generic code (the hole benchmark,
//! Newton's linear systems) builds either on any backend.

use super::amg;
use super::spai;
use super::multigrid::{Matrix, Multigrid};
use super::ssor::{CpuSsor, GpuSsor, GpuSsorMatrix, RowColouring, SsorMatrix};
use crate::operator::csr::Csr;
use crate::operator::gpu::GpuCsr;
use crate::sparse::device::GpuEllWarp;
use crate::sparse::SpmvFormat;
use crate::sparse::warp::{EllWarp, Numbering};
use super::transfer::transpose;
use crate::sparse::device::gpu_gather;
use crate::sparse::device_transpose::DeviceTransposedPattern;
use crate::sparse::device_warp::{DeviceCsrView, DEVICE_WARP_MAX_ROW};
use cudarc::driver::CudaSlice;
use crate::{Backend, CpuBackend, CudaBackend, Error, Result, Scalar};

/// Matrix storage and coloured SSOR of a backend.
pub trait PrecondOps: Backend + Sized + 'static {
    /// The coloured SSOR of this backend.
    type Ssor<T: Scalar>: crate::operator::LinearOperator<Self, T>;
    /// A host CSR matrix of `n_cols` columns (rectangular allowed) in the
    /// backend's SpMV format for hierarchies: ELL-WARP K1, which keeps the
    /// original numbering.
    fn store_matrix<T: Scalar>(&self, m: &Csr<T>, n_cols: usize) -> Result<Matrix<Self, T>>;
    /// A matrix of the CSR pattern `pattern` (`n_cols` columns; its values
    /// are not read) stored as [`PrecondOps::store_matrix`] stores one,
    /// its values zero until [`Spmv::reorder`](crate::sparse::Spmv::reorder)
    /// refills them from CSR values of the pattern: an operator whose
    /// values the backend assembles (Newton's tangents), stored without a
    /// host copy of values.
    fn store_pattern<T: Scalar, U: Scalar>(&self, pattern: &Csr<U>, n_cols: usize) -> Result<Matrix<Self, T>> {
        let mut m = pattern.pattern_only::<T>();
        m.val = vec![T::ZERO; m.col.len()];
        self.store_matrix(&m, n_cols)
    }
    /// The prolongation `p` from `n_coarse` rows and its transpose, the
    /// restriction, stored as [`PrecondOps::store_matrix`] stores them.
    fn store_transfers<T: Scalar>(&self, p: &Csr<T>, n_coarse: usize) -> Result<(Matrix<Self, T>, Matrix<Self, T>)> {
        Ok((self.store_matrix(p, n_coarse)?, self.store_matrix(&transpose(p, n_coarse), p.n_rows)?))
    }
    /// The SpMV format [`PrecondOps::store_matrix`] keeps a matrix of
    /// `n_rows` rows and `nnz` entries in.
    fn stored_format(&self, n_rows: usize, nnz: usize) -> SpmvFormat {
        let _ = (n_rows, nnz);
        SpmvFormat::K1
    }
    /// SSOR sweeping `a` in the order of `colouring` (of `a`'s pattern).
    fn ssor<T: Scalar>(&self, a: &Csr<T>, colouring: &RowColouring) -> Result<Self::Ssor<T>>;
    /// SPAI(1) `M` of the square matrix of pattern `pattern` (ascending
    /// columns; its own values, of any precision, are not read) and values
    /// `values` (on this backend), and `Mᵀ`, both stored for smoothing.
    fn spai<T: Scalar, P: Scalar>(&self, cpu: &CpuBackend, pattern: &Csr<P>, values: &Self::Vector<T>) -> Result<(Matrix<Self, T>, Matrix<Self, T>)>;
    /// Refills the SSOR's matrix from CSR values of its pattern on the
    /// backend (a Newton tangent's values at every update).
    fn ssor_values<T: Scalar>(&self, s: &mut Self::Ssor<T>, csr_val: &Self::Vector<T>) -> Result<()>;
    /// AMG's hierarchy of the operator of pattern `pattern` and values
    /// `values` (on this backend) as a multigrid preconditioner: set up
    /// on the GPU where [`amg::Pattern::on_gpu`] allows, else on the host.
    fn amg<T: Scalar>(&self, cpu: &CpuBackend, pattern: &mut amg::Pattern, values: &Self::Vector<T>, nullspace: &amg::Nullspace, o: &amg::AmgOptions) -> Result<(Multigrid<Self, T>, amg::AmgStats)>;
    /// A number that changes when `values` change (a weighted sum), read
    /// without bringing them back: whether a hierarchy is still current.
    fn fingerprint<T: Scalar>(&self, values: &Self::Vector<T>) -> Result<f64>;
}

impl PrecondOps for CpuBackend {
    type Ssor<T: Scalar> = CpuSsor<T>;

    fn store_matrix<T: Scalar>(&self, m: &Csr<T>, n_cols: usize) -> Result<Matrix<Self, T>> {
        Ok(Box::new(EllWarp::new(self, m, n_cols, None, Numbering::Remap)?))
    }

    fn spai<T: Scalar, P: Scalar>(&self, cpu: &CpuBackend, pattern: &Csr<P>, values: &Vec<T>) -> Result<(Matrix<Self, T>, Matrix<Self, T>)> {
        spai::on_host(self, cpu, pattern, values)
    }

    fn ssor<T: Scalar>(&self, a: &Csr<T>, colouring: &RowColouring) -> Result<CpuSsor<T>> {
        Ok(CpuSsor { matrix: SsorMatrix::Csr(a.clone()), colouring: colouring.clone() })
    }

    fn ssor_values<T: Scalar>(&self, s: &mut CpuSsor<T>, csr_val: &Vec<T>) -> Result<()> {
        match &mut s.matrix {
            SsorMatrix::Csr(a) if a.val.len() == csr_val.len() => Ok(a.val.copy_from_slice(csr_val)),
            _ => Err(Error::InvalidArgument("SSOR values: not the CSR pattern the sweep was built on".into())),
        }
    }

    fn amg<T: Scalar>(&self, cpu: &CpuBackend, pattern: &mut amg::Pattern, values: &Vec<T>, nullspace: &amg::Nullspace, o: &amg::AmgOptions) -> Result<(Multigrid<Self, T>, amg::AmgStats)> {
        pattern.build_on_host(self, cpu, values.iter().map(|v| v.to_f64()).collect(), nullspace, o)
    }

    fn fingerprint<T: Scalar>(&self, values: &Vec<T>) -> Result<f64> {
        Ok(values.iter().enumerate().map(|(k, v)| v.to_f64() * fem_kernels::amg::hash_unit(k as u32)).sum())
    }
}

impl PrecondOps for CudaBackend {
    type Ssor<T: Scalar> = GpuSsor<T>;

    fn stored_format(&self, n_rows: usize, nnz: usize) -> SpmvFormat {
        // rows of 64 entries and more (a dense coarse inverse, the small
        // coarse levels of AMG) share a warp: ELL-WARP's thread a row
        // leaves the GPU waiting on a few long rows
        match nnz >= LONG_ROWS * n_rows.max(1) {
            true => SpmvFormat::Csr,
            false => SpmvFormat::K1,
        }
    }

    fn store_matrix<T: Scalar>(&self, m: &Csr<T>, n_cols: usize) -> Result<Matrix<Self, T>> {
        if self.stored_format(m.n_rows, m.nnz()) == SpmvFormat::Csr {
            let mut g = GpuCsr::from_csr(self, m, GpuCsr::<T>::default_threads_per_row(m.nnz(), m.n_rows))?;
            g.n_cols = n_cols;
            return Ok(Box::new(g));
        }
        Ok(Box::new(GpuEllWarp::stored(self, m, n_cols, None, 128)?))
    }

    fn store_pattern<T: Scalar, U: Scalar>(&self, pattern: &Csr<U>, n_cols: usize) -> Result<Matrix<Self, T>> {
        let (n, nnz) = (pattern.n_rows, pattern.col.len());
        self.ensure_free((n + 1 + nnz) * 4)?;
        let on_device = OnDevice { n_rows: n, n_cols, max_len: pattern.max_row_len(), row_ptr: self.htod(&pattern.row_ptr)?, col: self.htod(&pattern.col)?, val: None };
        self.store_on_device(on_device)
    }

    fn store_transfers<T: Scalar>(&self, p: &Csr<T>, n_coarse: usize) -> Result<(Matrix<Self, T>, Matrix<Self, T>)> {
        let (n, nnz) = (p.n_rows, p.nnz());
        crate::error::same_len("prolongation values", p.val.len(), nnz)?;
        self.ensure_free(2 * ((n + n_coarse + 2) * 4 + nnz * (4 + T::BYTES)) + nnz * 4)?;
        let (row_ptr, col, val) = (self.htod(&p.row_ptr)?, self.htod(&p.col)?, self.upload(&p.val)?);
        let t = DeviceTransposedPattern::of(self, n, n_coarse, &row_ptr, &col)?;
        let mut t_val = self.zeros::<T>(nnz)?;
        gpu_gather(self, &t.src, &val, &mut t_val)?;
        drop(t.src);
        let restriction = OnDevice { n_rows: n_coarse, n_cols: n, max_len: t.width, row_ptr: t.row_ptr, col: t.col, val: Some(t_val) };
        let prolongation = OnDevice { n_rows: n, n_cols: n_coarse, max_len: p.max_row_len(), row_ptr, col, val: Some(val) };
        Ok((self.store_on_device(prolongation)?, self.store_on_device(restriction)?))
    }

    fn spai<T: Scalar, P: Scalar>(&self, cpu: &CpuBackend, pattern: &Csr<P>, values: &CudaSlice<T>) -> Result<(Matrix<Self, T>, Matrix<Self, T>)> {
        // rows past a thread's Gram matrix are solved on the host
        match pattern.max_row_len() <= fem_kernels::spai::DEVICE_SPAI_ROW {
            true => spai::on_device(self, pattern, values).map(|(m, mt)| (Box::new(m) as Matrix<Self, T>, Box::new(mt) as Matrix<Self, T>)),
            false => spai::on_host(self, cpu, pattern, values),
        }
    }

    fn ssor<T: Scalar>(&self, a: &Csr<T>, colouring: &RowColouring) -> Result<GpuSsor<T>> {
        let m = GpuSsorMatrix::Csr(GpuCsr::from_csr(self, a, GpuCsr::<T>::default_threads_per_row(a.nnz(), a.n_rows))?);
        GpuSsor::new(self, m, colouring)
    }

    fn ssor_values<T: Scalar>(&self, s: &mut GpuSsor<T>, csr_val: &cudarc::driver::CudaSlice<T>) -> Result<()> {
        match &mut s.matrix {
            GpuSsorMatrix::Csr(a) if a.val.len() == csr_val.len() => Ok(self.stream().memcpy_dtod(csr_val, &mut a.val)?),
            _ => Err(Error::InvalidArgument("SSOR values: not the CSR pattern the sweep was built on".into())),
        }
    }

    fn amg<T: Scalar>(&self, cpu: &CpuBackend, pattern: &mut amg::Pattern, values: &CudaSlice<T>, nullspace: &amg::Nullspace, o: &amg::AmgOptions) -> Result<(Multigrid<Self, T>, amg::AmgStats)> {
        if pattern.on_gpu(nullspace, o) {
            return pattern.build_on_gpu(self, values, nullspace, o);
        }
        let host = self.download(values)?;
        pattern.build_on_host(self, cpu, host.iter().map(|v| v.to_f64()).collect(), nullspace, o)
    }

    fn fingerprint<T: Scalar>(&self, values: &CudaSlice<T>) -> Result<f64> {
        CudaBackend::fingerprint(self, values)
    }
}

/// A CSR matrix whose arrays are on the device, to be stored.
struct OnDevice<T> {
    n_rows: usize,
    n_cols: usize,
    /// Entries of the longest row.
    max_len: usize,
    row_ptr: CudaSlice<u32>,
    col: CudaSlice<u32>,
    /// `None`: zeros.
    val: Option<CudaSlice<T>>,
}

impl CudaBackend {
    /// `m` stored as [`PrecondOps::store_matrix`] stores a host matrix,
    /// built where it is: ELL-WARP K1 on the device, CSR kept as it is;
    /// a K1 of rows longer than the device's build takes comes back once
    /// to be built on the host.
    fn store_on_device<T: Scalar>(&self, m: OnDevice<T>) -> Result<Matrix<Self, T>> {
        let nnz = m.col.len();
        let val = match m.val {
            Some(v) => v,
            None => self.zeros(nnz)?,
        };
        if self.stored_format(m.n_rows, nnz) == SpmvFormat::Csr {
            let threads_per_row = GpuCsr::<T>::default_threads_per_row(nnz, m.n_rows);
            return Ok(Box::new(GpuCsr { n_rows: m.n_rows, n_cols: m.n_cols, row_ptr: m.row_ptr, col: m.col, val, threads_per_row, diag: None }));
        }
        if m.max_len > DEVICE_WARP_MAX_ROW {
            let host = Csr { n_rows: m.n_rows, row_ptr: self.dtoh(&m.row_ptr)?, col: self.dtoh(&m.col)?, val: self.download(&val)? };
            return self.store_matrix(&host, m.n_cols);
        }
        let d = DeviceCsrView { n_rows: m.n_rows, n_cols: m.n_cols, max_len: m.max_len, row_ptr: &m.row_ptr, col: &m.col, val: Some(&val) };
        Ok(Box::new(GpuEllWarp::on_device(self, &d, None, None, 128)?))
    }
}

/// Average row length from which [`PrecondOps::store_matrix`] stores CSR
/// products of a warp a row on the GPU instead of ELL-WARP.
const LONG_ROWS: usize = 64;
