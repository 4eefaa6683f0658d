//! SPAI(1) (Grote & Huckle; Geveler et al. §3.2): the sparse approximate
//! inverse `M` with the pattern of `A` that minimises `‖I − M A‖_F`. The
//! norm splits by rows of `M`: row `k`, supported on the columns `J` of
//! row `k` of `A`, minimises `‖Σ_{j∈J} m_j A(j, :) − e_kᵀ‖₂`, a small
//! least-squares problem in |J| unknowns over the rows of `A` it combines.
//! Every row is independent, so they are built in parallel; each is solved
//! through its normal equations (Gram matrix of the rows of `A`, Cholesky).

use super::backend::PrecondOps;
use super::multigrid::Matrix;
use super::transfer::{transpose, TransposedPattern};
use crate::operator::csr::Csr;
use crate::operator::gpu::GpuCsr;
use crate::sparse::device::gpu_gather;
use crate::sparse::spgemm::zeros_u32;
use crate::sparse::SharedOut;
use crate::{Backend, CpuBackend, CudaBackend, Error, Result, Scalar};
use cudarc::driver::{CudaSlice, PushKernelArg};
use fem_kernels::spai::spai_row;
use rayon::prelude::*;

/// SPAI(1) of the square matrix `a` (columns sorted in every row), its
/// rows in parallel ([`spai_row`], the device's row too).
pub fn spai1<T: Scalar>(cpu: &CpuBackend, a: &Csr<T>) -> Result<Csr<T>> {
    let mut val = vec![T::ZERO; a.nnz()];
    let out = SharedOut(val.as_mut_ptr());
    let longest = (0..a.n_rows).map(|k| (a.row_ptr[k + 1] - a.row_ptr[k]) as usize).max().unwrap_or(0);
    let failed = cpu.install(|| {
        (0..a.n_rows).into_par_iter().map_init(
            || (vec![0.0; longest * longest], vec![0.0; longest]),
            // SAFETY: `a` is a CSR matrix with sorted rows; each row writes
            // only its own positions of `val`, which `out` points into.
            |(g, rhs), k| unsafe { (!spai_row(k, a.row_ptr.as_ptr(), a.col.as_ptr(), a.val.as_ptr(), g, rhs, out.ptr())).then_some(k) },
        ).flatten().min()
    });
    if let Some(k) = failed {
        return Err(Error::InvalidArgument(format!("SPAI(1): the rows coupled to row {k} are linearly dependent")));
    }
    Ok(Csr { n_rows: a.n_rows, row_ptr: a.row_ptr.clone(), col: a.col.clone(), val })
}

/// SPAI(1) of `pattern` with the values `values` (on backend `bk`) built
/// on the host, `M` and `Mᵀ` stored by the backend.
pub fn on_host<B: PrecondOps, T: Scalar, P: Scalar>(bk: &B, cpu: &CpuBackend, pattern: &Csr<P>, values: &B::Vector<T>) -> Result<(Matrix<B, T>, Matrix<B, T>)> {
    let val = bk.download(values)?;
    crate::error::same_len("SPAI(1) values", val.len(), pattern.nnz())?;
    stored(cpu, &pattern.with_values(val), &|m, n| bk.store_matrix(m, n))
}

/// SPAI(1) of the host matrix `a` built on the host, `M` and `Mᵀ` each
/// stored by `upload`.
pub fn stored<B: Backend, T: Scalar>(cpu: &CpuBackend, a: &Csr<T>, upload: &impl Fn(&Csr<T>, usize) -> Result<Matrix<B, T>>) -> Result<(Matrix<B, T>, Matrix<B, T>)> {
    let m = spai1(cpu, a)?;
    let n = m.n_rows;
    Ok((upload(&m, n)?, upload(&transpose(&m, n), n)?))
}

/// SPAI(1) of `pattern` (rows of at most
/// [`DEVICE_SPAI_ROW`](fem_kernels::spai::DEVICE_SPAI_ROW) entries) with
/// the values `values` built on the GPU, a thread a row, and `Mᵀ`
/// gathered from it there: no values come back to the host and no
/// matrix goes up, only the patterns.
pub fn on_device<T: Scalar, P: Scalar>(gpu: &CudaBackend, pattern: &Csr<P>, values: &CudaSlice<T>) -> Result<(GpuCsr<T>, GpuCsr<T>)> {
    let (n, nnz) = (pattern.n_rows, pattern.nnz());
    crate::error::same_len("SPAI(1) values", values.len(), nnz)?;
    gpu.ensure_free(2 * (n + 1) * 4 + nnz * (3 * 4 + 2 * T::BYTES))?;
    let (row_ptr, col) = (gpu.htod(&pattern.row_ptr)?, gpu.htod(&pattern.col)?);
    let mut m = gpu.zeros::<T>(nnz)?;
    let s = gpu.stream();
    let mut failed = s.clone_htod(&[u32::MAX])?;
    if n > 0 {
        let f = gpu.kernel::<T>("spai_rows")?;
        // SAFETY: a CSR matrix of n rows on the device; `m` as long as its values.
        unsafe { s.launch_builder(&f).arg(&n).arg(&row_ptr).arg(&col).arg(values).arg(&mut m).arg(&mut failed).launch(gpu.per_item(n)) }?;
    }
    if let Some(&k) = s.clone_dtoh(&failed)?.first().filter(|&&k| k != u32::MAX) {
        return Err(Error::InvalidArgument(format!("SPAI(1): the rows coupled to row {k} are linearly dependent")));
    }
    // Mᵀ on M's own pattern where it is symmetric (a mesh's always is),
    // its values gathered from the mirrors found there; else transposed
    // on the host
    let (t_ptr, t_col, src) = match mirror_slots(gpu, &row_ptr, &col, n)? {
        Some(src) => (copy(gpu, &row_ptr)?, copy(gpu, &col)?, src),
        None => {
            let t = TransposedPattern::of(&pattern.row_ptr, &pattern.col, n);
            (gpu.htod(&t.row_ptr)?, gpu.htod(&t.col)?, gpu.htod(&t.src)?)
        }
    };
    let mut mt = gpu.zeros::<T>(nnz)?;
    gpu_gather(gpu, &src, &m, &mut mt)?;
    let threads_per_row = GpuCsr::<T>::default_threads_per_row(nnz, n);
    let csr = |row_ptr, col, val| GpuCsr { n_rows: n, n_cols: n, row_ptr, col, val, threads_per_row, diag: None };
    Ok((csr(row_ptr, col, m), csr(t_ptr, t_col, mt)))
}

/// The mirror of every entry of the square `n`-row pattern `(row_ptr,
/// col)` on the device ([`fem_kernels::sparse::mirror_slot`]); `None`
/// where some entry has none (the pattern is not symmetric).
fn mirror_slots(gpu: &CudaBackend, row_ptr: &CudaSlice<u32>, col: &CudaSlice<u32>, n: usize) -> Result<Option<CudaSlice<u32>>> {
    let s = gpu.stream();
    let mut src = zeros_u32(gpu, col.len())?;
    let mut missing = s.clone_htod(&[u32::MAX])?;
    if n > 0 {
        // SAFETY: a square CSR pattern of n rows on the device; `src` as long as its columns
        unsafe { s.launch_builder(&gpu.function("fem_mirror_slots")?).arg(&n).arg(row_ptr).arg(col).arg(&mut src).arg(&mut missing).launch(gpu.per_item(n)) }?;
    }
    Ok((s.clone_dtoh(&missing)?[0] == u32::MAX).then_some(src))
}

/// A copy of `v` on the device (none for nothing).
fn copy(gpu: &CudaBackend, v: &CudaSlice<u32>) -> Result<CudaSlice<u32>> {
    Ok(match v.len() {
        0 => gpu.stream().null()?,
        _ => gpu.stream().clone_dtod(v)?,
    })
}

/// `‖I − M A‖_F` for a square `m` and `a` (CSR, sorted columns).
pub fn inverse_residual<T: Scalar>(cpu: &CpuBackend, m: &Csr<T>, a: &Csr<T>) -> f64 {
    let sq: f64 = cpu.install(|| {
        (0..m.n_rows)
            .into_par_iter()
            .map(|k| {
                // Row k of M A = Σ_j m_kj A(j, :), accumulated sparsely.
                let mut acc: std::collections::BTreeMap<u32, f64> = std::collections::BTreeMap::new();
                for p in m.row_ptr[k] as usize..m.row_ptr[k + 1] as usize {
                    let (j, mv) = (m.col[p] as usize, m.val[p].to_f64());
                    for q in a.row_ptr[j] as usize..a.row_ptr[j + 1] as usize {
                        *acc.entry(a.col[q]).or_insert(0.0) += mv * a.val[q].to_f64();
                    }
                }
                let diag = acc.remove(&(k as u32)).unwrap_or(0.0);
                (1.0 - diag).powi(2) + acc.values().map(|v| v * v).sum::<f64>()
            })
            .sum()
    });
    sq.sqrt()
}

/// The Jacobi inverse `diag(A)⁻¹` as a matrix (for comparisons).
pub fn jacobi_matrix<T: Scalar>(a: &Csr<T>) -> Csr<T> {
    let d = a.diag();
    Csr { n_rows: a.n_rows, row_ptr: (0..=a.n_rows as u32).collect(), col: (0..a.n_rows as u32).collect(), val: d.iter().map(|&v| T::ONE / v).collect() }
}
