//! Every SpMV format behind [`Spmv`] on both backends: the CPU runs the
//! per-row or per-lane functions of `fem_kernels::sparse` on rayon, the GPU
//! the kernels of `fem_kernels::gpu::spmv` built from the same functions.

use super::cusparse::CusparseCsr;
use super::ellt::{ell_with_source, EllT};
use super::params::SpmvParams;
use super::warp::{EllWarp, Numbering};
use super::{Spmv, SpmvFormat};
use crate::operator::csr::Csr;
use crate::operator::ell::Ell;
use crate::operator::gpu::{restride, GpuCsr, GpuEll};
use crate::operator::LinearOperator;
use crate::{Backend, CpuBackend, CudaBackend, Error, Result, Scalar};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use fem_kernels::sparse::NONE;

/// The format `f` of `csr` on the CPU.
pub fn prepare_cpu<T: Scalar>(
    cpu: &CpuBackend,
    csr: &Csr<T>,
    f: SpmvFormat,
    p: &SpmvParams,
) -> Result<Box<dyn Spmv<CpuBackend, T>>> {
    p.validate()?;
    Ok(match f {
        SpmvFormat::Csr => Box::new(csr.clone()),
        SpmvFormat::Ell => {
            let (ell, src) = ell_with_source(csr)?;
            Box::new(WithSource { m: ell, src })
        }
        SpmvFormat::EllT => Box::new(EllT::new(cpu, csr, p.ellt_threads)?),
        SpmvFormat::Cusparse => {
            return Err(Error::InvalidArgument(
                "cuSPARSE runs on the CUDA backend only".into(),
            ))
        }
        k => {
            let (k2, numbering) = k.warp().expect("a K format");
            Box::new(EllWarp::new(
                cpu,
                csr,
                csr.n_rows,
                k2.then_some(p.threshold),
                numbering,
            )?)
        }
    })
}

/// The format `f` of `csr` on the GPU: ELL-WARP in the original
/// numbering built there from the CSR arrays ([`super::device_warp`]),
/// the others converted on the host and uploaded.
pub fn prepare_gpu<T: Scalar>(
    gpu: &CudaBackend,
    cpu: &CpuBackend,
    csr: &Csr<T>,
    f: SpmvFormat,
    p: &SpmvParams,
) -> Result<Box<dyn Spmv<CudaBackend, T>>> {
    p.validate()?;
    Ok(match f {
        SpmvFormat::Csr => Box::new(GpuCsr::from_csr(gpu, csr, p.csr_threads)?),
        SpmvFormat::Ell => {
            let (ell, src) = ell_with_source(csr)?;
            let m = GpuEll::upload(gpu, &ell)?;
            let src = gpu.htod(&restride(&src, ell.n_rows, m.ld, NONE))?;
            Box::new(WithSource { m, src })
        }
        SpmvFormat::EllT => Box::new(GpuEllT::upload(
            gpu,
            &EllT::new(cpu, csr, p.ellt_threads)?,
            p.block,
        )?),
        SpmvFormat::Cusparse => Box::new(CusparseCsr::new(gpu, csr)?),
        k => {
            let (k2, numbering) = k.warp().expect("a K format");
            let threshold = k2.then_some(p.threshold);
            if numbering == Numbering::Remap {
                return Ok(Box::new(GpuEllWarp::stored(gpu, csr, csr.n_rows, threshold, p.block)?));
            }
            Box::new(GpuEllWarp::upload(gpu, &EllWarp::new(cpu, csr, csr.n_rows, threshold, numbering)?, p.block)?)
        }
    })
}

/// A format and its slot → CSR position map (for the reordering).
pub struct WithSource<M, S> {
    /// The matrix in its format (ELLPACK on the host or the GPU).
    pub m: M,
    /// Slot → position in the CSR value array (`NONE` for padding), in the
    /// same memory as `m`: new values of the same pattern are a gather through it.
    pub src: S,
}

impl<T: Scalar> Spmv<CpuBackend, T> for Csr<T> {
    fn numbering(&self) -> Option<&[u32]> {
        None
    }
    fn matrix_bytes(&self) -> usize {
        self.nnz() * (T::BYTES + 4) + (self.n_rows + 1) * 4
    }
    fn reorder(&mut self, _cpu: &CpuBackend, csr_val: &Vec<T>) -> Result<()> {
        self.val.copy_from_slice(csr_val);
        Ok(())
    }
}

impl<T: Scalar> LinearOperator<CpuBackend, T> for WithSource<Ell<T>, Vec<u32>> {
    fn rows(&self) -> usize {
        self.m.n_rows
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        LinearOperator::apply(&self.m, cpu, x, y)
    }
    fn diagonal(&self, b: &CpuBackend) -> Result<<CpuBackend as Backend>::Vector<T>> {
        self.m.diagonal(b)
    }
    fn name(&self) -> String {
        "ell".into()
    }
}

impl<T: Scalar> Spmv<CpuBackend, T> for WithSource<Ell<T>, Vec<u32>> {
    fn numbering(&self) -> Option<&[u32]> {
        None
    }
    fn matrix_bytes(&self) -> usize {
        self.m.slots() * (T::BYTES + 4)
    }
    fn reorder(&mut self, cpu: &CpuBackend, csr_val: &Vec<T>) -> Result<()> {
        super::gather_into(cpu, &self.src, csr_val, &mut self.m.val);
        Ok(())
    }
}

impl<T: Scalar> LinearOperator<CpuBackend, T> for EllT<T> {
    fn rows(&self) -> usize {
        self.n_rows
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        if crate::error::product_lens("ellt spmv", self.n_rows, x.len(), y.len())? {
            self.spmv(cpu, x, y);
        }
        Ok(())
    }
    fn name(&self) -> String {
        format!("ellt-t{}", self.threads_per_row)
    }
}

impl<T: Scalar> Spmv<CpuBackend, T> for EllT<T> {
    fn numbering(&self) -> Option<&[u32]> {
        None
    }
    fn matrix_bytes(&self) -> usize {
        ellt_bytes::<T>(self.read_slots(), self.len.len())
    }
    fn reorder(&mut self, cpu: &CpuBackend, csr_val: &Vec<T>) -> Result<()> {
        self.refill(cpu, csr_val);
        Ok(())
    }
}

impl<T: Scalar> LinearOperator<CpuBackend, T> for EllWarp<T> {
    fn rows(&self) -> usize {
        self.n_rows
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        crate::error::same_len("ell-warp spmv", x.len(), self.n_cols)?;
        crate::error::same_len("ell-warp spmv", y.len(), self.n_rows)?;
        self.spmv(cpu, x, y);
        Ok(())
    }
    fn name(&self) -> String {
        EllWarp::name(self)
    }
}

impl<T: Scalar> Spmv<CpuBackend, T> for EllWarp<T> {
    fn numbering(&self) -> Option<&[u32]> {
        (!self.remaps()).then_some(&self.perm[..])
    }
    fn matrix_bytes(&self) -> usize {
        warp_bytes::<T>(self)
    }
    fn reorder(&mut self, cpu: &CpuBackend, csr_val: &Vec<T>) -> Result<()> {
        self.refill(cpu, csr_val);
        Ok(())
    }
}

fn ellt_bytes<T: Scalar>(slots: usize, lens: usize) -> usize {
    slots * (T::BYTES + 4) + lens * 4
}

fn warp_bytes<T: Scalar>(m: &EllWarp<T>) -> usize {
    slots_bytes::<T>(m.slots(), m.slices.len(), if m.remaps() { m.n_rows } else { 0 })
}

/// Bytes an ELL-WARP product reads: `slots` columns and values, `slices`
/// slices of four words, and `perm_rows` permutation entries (the rows of
/// the original numbering's formats, none for the renumbered ones).
pub(crate) fn slots_bytes<T: Scalar>(slots: usize, slices: usize, perm_rows: usize) -> usize {
    slots * (T::BYTES + 4) + slices * 16 + perm_rows * 4
}

/// The slices as the kernels read them: four words each.
pub(crate) fn slice_words(slices: &[fem_kernels::sparse::Slice]) -> Vec<u32> {
    slices.iter().flat_map(|s| [s.offset, s.width, s.row, s.shift]).collect()
}

/// `dst[pos[k]] += src[k]` by atomic adds on the GPU, skipping `u32::MAX`
/// (`dst` as it was: zero it, or fill it with a base, first): residuals
/// and tangents assembled through their position maps.
pub fn gpu_scatter_add<T: Scalar>(gpu: &CudaBackend, pos: &CudaSlice<u32>, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<()> {
    let n = pos.len();
    if n == 0 {
        return Ok(());
    }
    let f = gpu.kernel::<T>("scatter_add")?;
    unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(pos).arg(src).arg(dst).launch(gpu.grid::<T>(n, 0)) }?;
    Ok(())
}

/// `to[i] = from[src[i]]` on the GPU (the reordering of values).
pub fn gpu_gather<T: Scalar>(
    gpu: &CudaBackend,
    src: &CudaSlice<u32>,
    from: &CudaSlice<T>,
    to: &mut CudaSlice<T>,
) -> Result<()> {
    gpu_gather_on(gpu, gpu.stream(), src, from, to)
}

/// [`gpu_gather`] queued on `stream` (of `gpu`'s context).
pub fn gpu_gather_on<T: Scalar>(
    gpu: &CudaBackend,
    stream: &cudarc::driver::CudaStream,
    src: &CudaSlice<u32>,
    from: &CudaSlice<T>,
    to: &mut CudaSlice<T>,
) -> Result<()> {
    crate::error::same_len("gather values", src.len(), to.len())?;
    let n = to.len();
    if n == 0 {
        return Ok(());
    }
    let f = gpu.kernel::<T>("gather_values")?;
    unsafe {
        stream
            .launch_builder(&f)
            .arg(&n)
            .arg(src)
            .arg(from)
            .arg(to)
            .launch(gpu.grid::<T>(n, 0))
    }?;
    Ok(())
}

impl<T: Scalar> Spmv<CudaBackend, T> for GpuCsr<T> {
    fn numbering(&self) -> Option<&[u32]> {
        None
    }
    fn matrix_bytes(&self) -> usize {
        self.col.len() * (T::BYTES + 4) + self.row_ptr.len() * 4
    }
    fn reorder(&mut self, gpu: &CudaBackend, csr_val: &CudaSlice<T>) -> Result<()> {
        Ok(gpu.stream().memcpy_dtod(csr_val, &mut self.val)?)
    }
}

impl<T: Scalar> LinearOperator<CudaBackend, T> for WithSource<GpuEll<T>, CudaSlice<u32>> {
    fn rows(&self) -> usize {
        self.m.n_rows
    }
    fn apply(&self, gpu: &CudaBackend, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        LinearOperator::apply(&self.m, gpu, x, y)
    }
    fn diagonal(&self, b: &CudaBackend) -> Result<<CudaBackend as Backend>::Vector<T>> {
        self.m.diagonal(b)
    }
    fn name(&self) -> String {
        "ell".into()
    }
}

impl<T: Scalar> Spmv<CudaBackend, T> for WithSource<GpuEll<T>, CudaSlice<u32>> {
    fn numbering(&self) -> Option<&[u32]> {
        None
    }
    fn matrix_bytes(&self) -> usize {
        self.m.n_rows * self.m.width * (T::BYTES + 4)
    }
    fn reorder(&mut self, gpu: &CudaBackend, csr_val: &CudaSlice<T>) -> Result<()> {
        gpu_gather(gpu, &self.src, csr_val, &mut self.m.val)
    }
}

impl<T: Scalar> LinearOperator<CudaBackend, T> for CusparseCsr<T> {
    fn rows(&self) -> usize {
        self.n_rows
    }
    fn apply(&self, gpu: &CudaBackend, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        self.spmv(gpu, x, y)
    }
    fn name(&self) -> String {
        "cusparse".into()
    }
}

impl<T: Scalar> Spmv<CudaBackend, T> for CusparseCsr<T> {
    fn numbering(&self) -> Option<&[u32]> {
        None
    }
    fn matrix_bytes(&self) -> usize {
        self.nnz * (T::BYTES + 4) + (self.n_rows + 1) * 4
    }
    fn reorder(&mut self, gpu: &CudaBackend, csr_val: &CudaSlice<T>) -> Result<()> {
        Ok(gpu.stream().memcpy_dtod(csr_val, &mut self.val)?)
    }
}

/// ELLR-T on the GPU.
pub struct GpuEllT<T: Scalar> {
    /// Rows of the matrix.
    pub n_rows: usize,
    read_slots: usize,
    /// Threads per block of the launches.
    pub block: u32,
    /// Threads that share a row; picks the kernel specialised for that count.
    pub threads_per_row: usize,
    /// Stored entries of each row.
    pub len: CudaSlice<u32>,
    /// Column of every slot, in the layout of [`EllT::col`].
    pub col: CudaSlice<u32>,
    /// Value of every slot, laid out as `col`.
    pub val: CudaSlice<T>,
    /// Slot → CSR position (`NONE` for padding), for the reordering of values.
    pub src: CudaSlice<u32>,
}

impl<T: Scalar> GpuEllT<T> {
    /// Copies `m` to the GPU, to be launched in blocks of `block` threads; fails
    /// with [`Error::OutOfDeviceMemory`] when its arrays do not fit.
    pub fn upload(gpu: &CudaBackend, m: &EllT<T>, block: u32) -> Result<Self> {
        gpu.ensure_free(m.slots() * (8 + T::BYTES) + m.n_rows * 4)?;
        Ok(Self {
            n_rows: m.n_rows,
            read_slots: m.read_slots(),
            block,
            threads_per_row: m.threads_per_row,
            len: gpu.htod(&m.len)?,
            col: gpu.htod(&m.col)?,
            val: gpu.upload(&m.val)?,
            src: gpu.htod(&m.src)?,
        })
    }
}

impl<T: Scalar> LinearOperator<CudaBackend, T> for GpuEllT<T> {
    fn rows(&self) -> usize {
        self.n_rows
    }
    fn apply(&self, gpu: &CudaBackend, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        if !crate::error::product_lens("ellt spmv", self.n_rows, x.len(), y.len())? {
            return Ok(());
        }
        let f = gpu.function(&format!(
            "fem_ellt_spmv_tpr{}_{}",
            self.threads_per_row,
            T::NAME
        ))?;
        let cfg = blocks_of(self.n_rows * self.threads_per_row, self.block);
        unsafe {
            gpu.stream()
                .launch_builder(&f)
                .arg(&self.n_rows)
                .arg(&self.len)
                .arg(&self.col)
                .arg(&self.val)
                .arg(x)
                .arg(y)
                .launch(cfg)
        }?;
        Ok(())
    }
    fn name(&self) -> String {
        format!("ellt-t{}", self.threads_per_row)
    }
}

impl<T: Scalar> Spmv<CudaBackend, T> for GpuEllT<T> {
    fn numbering(&self) -> Option<&[u32]> {
        None
    }
    fn matrix_bytes(&self) -> usize {
        ellt_bytes::<T>(self.read_slots, self.len.len())
    }
    fn reorder(&mut self, gpu: &CudaBackend, csr_val: &CudaSlice<T>) -> Result<()> {
        gpu_gather(gpu, &self.src, csr_val, &mut self.val)
    }
    fn set_block(&mut self, block: u32) {
        self.block = block;
    }
}

/// `threads` threads in blocks of `block`.
pub(crate) fn blocks_of(threads: usize, block: u32) -> LaunchConfig {
    let blocks = threads.div_ceil(block as usize).clamp(1, u32::MAX as usize) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// ELL-WARP on the GPU.
pub struct GpuEllWarp<T: Scalar> {
    /// Format name (k1, k2r, ...), as [`EllWarp::name`].
    pub name: String,
    /// Rows of the matrix (the length of `y`).
    pub n_rows: usize,
    /// Columns of the matrix (the length of `x`).
    pub n_cols: usize,
    /// Number of slices; the kernel runs one warp per slice.
    pub n_slices: usize,
    /// Threads per block of the launches.
    pub block: u32,
    /// Whether `y` is written through `perm` (K1, K2) rather than in the sorted
    /// numbering (the renumbered variants).
    pub remap: bool,
    /// `Slice`s as four `u32` each.
    pub slices: CudaSlice<u32>,
    /// Column of every slot, in the layout of [`EllWarp::col`].
    pub col: CudaSlice<u32>,
    /// Value of every slot, laid out as `col`.
    pub val: CudaSlice<T>,
    /// Sorted position → original row (a single 0 when the host matrix has none,
    /// since the kernel reads it only when it remaps).
    pub perm: CudaSlice<u32>,
    /// Slot → CSR position (`NONE` for padding), for the reordering of values.
    pub src: CudaSlice<u32>,
    /// The host copy of the permutation.
    pub host_perm: Vec<u32>,
    pub(crate) bytes: usize,
}

impl<T: Scalar> GpuEllWarp<T> {
    /// Copies `m` to the GPU, to be launched in blocks of `block` threads; fails
    /// with [`Error::OutOfDeviceMemory`] when its arrays do not fit.
    pub fn upload(gpu: &CudaBackend, m: &EllWarp<T>, block: u32) -> Result<Self> {
        gpu.ensure_free(m.slots() * (8 + T::BYTES) + m.slices.len() * 16 + m.n_rows * 4)?;
        let flat = slice_words(&m.slices);
        // The kernel reads `perm` only when it remaps; keep it non-empty.
        let perm = if m.perm.is_empty() {
            vec![0]
        } else {
            m.perm.clone()
        };
        Ok(Self {
            name: m.name(),
            n_rows: m.n_rows,
            n_cols: m.n_cols,
            n_slices: m.slices.len(),
            block,
            remap: m.remaps(),
            slices: gpu.htod(&flat)?,
            col: gpu.htod(&m.col)?,
            val: gpu.upload(&m.val)?,
            perm: gpu.htod(&perm)?,
            src: gpu.htod(&m.src)?,
            host_perm: m.perm.clone(),
            bytes: warp_bytes(m),
        })
    }

    /// `y = A x`, or `y = P x` for the pattern `P` of `A` when `unit`.
    pub fn spmv_with(
        &self,
        gpu: &CudaBackend,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
        unit: bool,
    ) -> Result<()> {
        crate::error::same_len("ell-warp spmv", x.len(), self.n_cols)?;
        crate::error::same_len("ell-warp spmv", y.len(), self.n_rows)?;
        if self.n_slices == 0 {
            return Ok(());
        }
        let f = gpu.function(&format!(
            "fem_warp_spmv_remap{}_unit{}_{}",
            self.remap as u8,
            unit as u8,
            T::NAME
        ))?;
        let cfg = blocks_of(self.n_slices * 32, self.block);
        unsafe {
            gpu.stream()
                .launch_builder(&f)
                .arg(&self.n_slices)
                .arg(&self.n_rows)
                .arg(&self.slices)
                .arg(&self.col)
                .arg(&self.val)
                .arg(&self.perm)
                .arg(x)
                .arg(y)
                .launch(cfg)
        }?;
        Ok(())
    }
}

impl<T: Scalar> LinearOperator<CudaBackend, T> for GpuEllWarp<T> {
    fn rows(&self) -> usize {
        self.n_rows
    }
    fn apply(&self, gpu: &CudaBackend, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        self.spmv_with(gpu, x, y, false)
    }
    fn name(&self) -> String {
        self.name.clone()
    }
}

impl<T: Scalar> Spmv<CudaBackend, T> for GpuEllWarp<T> {
    fn numbering(&self) -> Option<&[u32]> {
        (!self.remap).then_some(&self.host_perm[..])
    }
    fn matrix_bytes(&self) -> usize {
        self.bytes
    }
    fn reorder(&mut self, gpu: &CudaBackend, csr_val: &CudaSlice<T>) -> Result<()> {
        gpu_gather(gpu, &self.src, csr_val, &mut self.val)
    }
    fn set_block(&mut self, block: u32) {
        self.block = block;
    }
}
