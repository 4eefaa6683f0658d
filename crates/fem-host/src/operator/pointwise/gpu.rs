//! The physics on the GPU: thread-transposition launches of the generated
//! entry points, checked against the device's limits first.

use super::nodal::Picked;
use super::sum_factorised::GpuSumFactorised;
use super::{NodalCells, Pointwise};
use crate::{Backend, CudaBackend, Error, Result, Scalar};
use cudarc::driver::sys::CUfunction_attribute_enum;
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use fem_kernels::pointwise::{shared_len, Kernels, Variant};

/// Threads a block may have on every CUDA device.
const MAX_THREADS: usize = 1024;

/// Launch parameters of thread transposition (the paper's Table 2 axes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Transposition {
    /// Cell blocks per batch (N_bl): the thread block has N_bl · N_bs threads.
    pub blocks: usize,
    /// Batches per chunk (N_cb) a thread block runs in sequence.
    pub batches: usize,
}

impl Transposition {
    /// About 128 threads per block and one batch per chunk: a batch's
    /// inputs are all requested at once (asynchronous copies) and the
    /// blocks resident on an SM hide each other's latency, which measured
    /// best for most variants; longer chunks prefetch the next batch while
    /// computing but need twice the shared memory for inputs, which the
    /// largest variants do not have. The tuner (`fem residual --tune`)
    /// searches the paper's grid around it.
    pub fn default_for(v: &Variant) -> Self {
        Self { blocks: (128 / v.block).max(1), batches: 1 }
    }

    /// [`Self::default_for`] with as many fewer cell blocks as it takes for
    /// the residual's (or, when `jacobian`, the tangent's) shared memory of
    /// `bytes`-byte values to fit `limit` bytes: the tangents of the large
    /// variants (vector Q1 hexahedra, Q2) need several times the
    /// residual's. An error when one block does not fit.
    pub fn fitting(v: &Variant, jacobian: bool, bytes: usize, limit: usize) -> Result<Self> {
        let mut t = Self::default_for(v);
        while t.blocks > 1 && bytes * shared_len(v, t.threads(v), jacobian, t.batches) > limit {
            t.blocks -= 1;
        }
        if t.threads(v) > MAX_THREADS {
            return Err(Error::InvalidArgument(format!("a block of {} cells needs {} threads (at most {MAX_THREADS})", v.block, t.threads(v))));
        }
        let need = bytes * shared_len(v, t.threads(v), jacobian, t.batches);
        if need > limit {
            return Err(Error::InvalidArgument(format!("the {} of this variant need {need} bytes of shared memory for one block of {} cells (at most {limit})", if jacobian { "element matrices" } else { "element residuals" }, v.block)));
        }
        Ok(t)
    }

    /// Threads per thread block for variant `v`: N_bl · N_bs.
    pub fn threads(&self, v: &Variant) -> usize {
        self.blocks * v.block
    }
}

/// The physics on the GPU: uploaded table and cell data, output buffers.
pub struct GpuPointwise<T> {
    /// The variant whose entry points are launched.
    pub variant: Variant,
    /// Cells evaluated per launch.
    pub n_cells: usize,
    tab: CudaSlice<T>,
    x: CudaSlice<T>,
    a: CudaSlice<T>,
    /// The time the forms are evaluated at (`Point::t`).
    pub time: T,
    /// The sum-factorised residual and point data of hexahedra from Q2.
    sf: Option<GpuSumFactorised<T>>,
}

impl<T: Scalar> GpuPointwise<T> {
    /// Uploads the table and cell data of `op`; an error when `K` has no
    /// kernels in precision `T` or the device lacks the memory.
    pub fn new<K: Kernels<T>>(gpu: &CudaBackend, op: &Pointwise<T, K>) -> Result<Self> {
        let v = op.variant;
        if !v.precisions.contains(&T::NAME) {
            return Err(Error::InvalidArgument(format!("physics `{}` has no {} kernels", K::NAME, T::NAME)));
        }
        gpu.ensure_free(T::BYTES * (op.tab.len() + op.x.len() + op.a.len() + 2 * op.n_cells * v.n_local()))?;
        // A zero-length buffer is not a valid allocation: P0-free physics
        // still pass a pointer.
        let a = if op.a.is_empty() { gpu.upload(&[T::ZERO])? } else { gpu.upload(&op.a)? };
        Ok(Self { variant: v, n_cells: op.n_cells, tab: gpu.upload(&op.tab)?, x: gpu.upload(&op.x)?, a, time: op.time, sf: GpuSumFactorised::new(gpu, &v, &op.sf_tab)? })
    }
}

impl GpuPointwise<f64> {
    /// [`GpuPointwise::new`] of a physics whose cell data is kept per node
    /// (`cells`, [`Pointwise::on_nodes`]): the node values are sent and
    /// the E-vectors made on the device through the field's gather map
    /// `map` (on the device), a fourth of the bytes sent for Q1 in 2D.
    pub fn from_nodes<K: Kernels<f64>>(gpu: &CudaBackend, op: &Pointwise<f64, K>, cells: &NodalCells, map: &CudaSlice<u32>) -> Result<Self> {
        let v = op.variant;
        let shape = NodalCells::map_shape(&v, op.n_cells, map.len())?;
        let (x, a) = cells.picked(&v)?;
        let a_len = a.as_ref().map_or(op.a.len(), |a| a.len(op.n_cells) + a.nodal.len());
        gpu.ensure_free(8 * (op.tab.len() + x.len(op.n_cells) + x.nodal.len() + a_len + 2 * op.n_cells * v.n_local()))?;
        let x = picked(gpu, &x, op.n_cells, shape, map)?;
        let a = match a {
            Some(a) => picked(gpu, &a, op.n_cells, shape, map)?,
            None if op.a.is_empty() => gpu.upload(&[0.0])?,
            None => gpu.upload(&op.a)?,
        };
        Ok(Self { variant: v, n_cells: op.n_cells, tab: gpu.upload(&op.tab)?, x, a, time: op.time, sf: GpuSumFactorised::new(gpu, &v, &op.sf_tab)? })
    }
}

/// The cell data `p` of `n_cells` cells made on the device
/// (`fem_cells_from_nodes`) through the gather map `map` of a field of
/// `nc` components on `nb` nodes a cell.
fn picked(gpu: &CudaBackend, p: &Picked, n_cells: usize, [nb, nc]: [usize; 2], map: &CudaSlice<u32>) -> Result<CudaSlice<f64>> {
    let s = gpu.stream();
    let n = p.len(n_cells);
    let mut out = s.alloc_zeros::<f64>(n.max(1))?;
    if n > 0 {
        let (picks, nodal) = (gpu.htod(&p.picks)?, gpu.upload(p.nodal)?);
        let (per, n_picks) = (p.per, p.picks.len());
        let f = gpu.function("fem_cells_from_nodes")?;
        // SAFETY: the picks are local nodes below nb and the map covers
        // the cells (checked by the caller); `out` holds n entries
        unsafe { s.launch_builder(&f).arg(&n).arg(&per).arg(&n_picks).arg(&picks).arg(&nb).arg(&nc).arg(map).arg(&nodal).arg(&mut out).launch(gpu.per_item(n)) }?;
    }
    Ok(out)
}

impl<T: Scalar> GpuPointwise<T> {

    /// The entry point and launch shape for `t`, checked against the
    /// device's limits.
    fn prepare(&self, gpu: &CudaBackend, jacobian: bool, t: Transposition) -> Result<(CudaFunction, LaunchConfig)> {
        let v = &self.variant;
        let props = gpu.props();
        let threads = t.threads(v);
        if t.blocks == 0 || t.batches == 0 {
            return Err(Error::InvalidArgument("blocks per batch and batches per chunk must be at least 1".into()));
        }
        if threads > props.max_threads_per_block as usize {
            return Err(Error::InvalidArgument(format!(
                "{} blocks of {} cells need {threads} threads per block (at most {})",
                t.blocks, v.block, props.max_threads_per_block
            )));
        }
        let shared = T::BYTES * shared_len(v, threads, jacobian, t.batches);
        if shared > props.shared_mem_per_block_optin as usize {
            return Err(Error::InvalidArgument(format!("{} blocks per batch need {shared} bytes of shared memory (at most {})", t.blocks, props.shared_mem_per_block_optin)));
        }
        let f = gpu.function(&format!("{}_{}", self.entry(jacobian)?, T::NAME))?;
        if shared > props.shared_mem_per_block as usize {
            f.set_attribute(CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)?;
        }
        let chunk = threads * t.batches;
        let grid = self.n_cells.div_ceil(chunk).max(1);
        if grid > i32::MAX as usize {
            return Err(Error::InvalidArgument(format!("{grid} thread blocks exceed the grid limit")));
        }
        Ok((f, LaunchConfig { grid_dim: (grid as u32, 1, 1), block_dim: (threads as u32, 1, 1), shared_mem_bytes: shared as u32 }))
    }

    /// Element residuals (`false`) or matrices (`true`) for variants
    /// whose thread-transposition launch does not fit shared memory
    /// ([`Transposition::fitting`] says so): the residuals of hexahedra
    /// from Q2 by sum factorisation, the rest with one thread per cell
    /// from global memory (the `_cell` entry points). Refused where a
    /// thread's values exceed [`THREAD_LOCAL_LIMIT`] (vector Q7 and Q8
    /// hexahedra's element matrices, which Newton makes from partial
    /// assembly's point data instead).
    pub fn evaluate_cells(&self, gpu: &CudaBackend, jacobian: bool, u: &CudaSlice<T>, out: &mut CudaSlice<T>) -> Result<()> {
        let v = &self.variant;
        if let (false, Some(sf)) = (jacobian, self.sum_factorised()) {
            self.check_e_vectors(jacobian, u, out)?;
            return sf.launch(gpu, &format!("{}_sf", v.residual), self.n_cells, &u.as_view(), &self.x.as_view(), &self.a.as_view(), &mut out.as_view_mut(), self.time);
        }
        let local = cell_thread_bytes(v, jacobian, T::BYTES);
        if local > THREAD_LOCAL_LIMIT {
            let what = if jacobian { "element matrices" } else { "residuals" };
            return Err(Error::InvalidArgument(format!(
                "the GPU's {what} of {} Q{} with {} components hold {} KB a thread, above the {} KB a GPU thread may have: use partial assembly (--format partial) for this degree",
                v.shape.name(),
                v.degree,
                v.nc,
                local >> 10,
                THREAD_LOCAL_LIMIT >> 10
            )));
        }
        self.check_e_vectors(jacobian, u, out)?;
        let f = gpu.function(&format!("{}_cell_{}", self.entry(jacobian)?, T::NAME))?;
        let (n, batches) = (self.n_cells, 1usize);
        let cfg = LaunchConfig { grid_dim: (n.div_ceil(128).clamp(1, i32::MAX as usize) as u32, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
        unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(&batches).arg(&self.tab).arg(u).arg(&self.x).arg(&self.a).arg(out).arg(&self.time).launch(cfg) }?;
        Ok(())
    }

    /// An error unless `u` and `out` cover the cells' E-vectors.
    fn check_e_vectors(&self, jacobian: bool, u: &CudaSlice<T>, out: &CudaSlice<T>) -> Result<()> {
        if u.len() < self.n_cells * self.variant.n_local() || out.len() < self.out_len(jacobian) {
            return Err(Error::InvalidArgument(format!("E-vectors of {} and {} values do not fit {} cells", u.len(), out.len(), self.n_cells)));
        }
        Ok(())
    }

    /// How [`Self::evaluate_cells`] computes the residual.
    pub fn cells_method(&self) -> &'static str {
        match self.sum_factorised() {
            Some(_) => "sum-factorised",
            None => "one thread per cell",
        }
    }

    /// The residual's or the element matrices' entry point, without its
    /// precision.
    fn entry(&self, jacobian: bool) -> Result<&'static str> {
        match jacobian {
            true => self.variant.jacobian.ok_or_else(|| Error::InvalidArgument("this physics defines no g0..g3".into())),
            false => Ok(self.variant.residual),
        }
    }

    /// Output length of a residual (`false`) or Jacobian (`true`).
    pub fn out_len(&self, jacobian: bool) -> usize {
        let nl = self.variant.n_local();
        self.n_cells * if jacobian { nl * nl } else { nl }
    }

    /// Evaluates into `out` (E-vector layout) from the solution E-vector
    /// `u` already on the device. Longer `u` and `out` keep their tails
    /// (assembly by SpMV reads a zero after the element values; a boundary
    /// term's facets follow the cells).
    pub fn evaluate(&self, gpu: &CudaBackend, jacobian: bool, t: Transposition, u: &CudaSlice<T>, out: &mut CudaSlice<T>) -> Result<()> {
        self.check_e_vectors(jacobian, u, out)?;
        let (f, cfg) = self.prepare(gpu, jacobian, t)?;
        let (n, batches) = (self.n_cells, t.batches);
        let s = gpu.stream();
        unsafe { s.launch_builder(&f).arg(&n).arg(&batches).arg(&self.tab).arg(u).arg(&self.x).arg(&self.a).arg(out).arg(&self.time).launch(cfg) }?;
        Ok(())
    }

    /// The auxiliary fields on the device, for physics whose point data
    /// evolve (history variables).
    pub fn aux_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.a
    }

    /// The auxiliary fields on the device (a single zero when there are none).
    pub fn aux(&self) -> &CudaSlice<T> {
        &self.a
    }

    /// The sum-factorised residual's and point data's table and launch,
    /// for hexahedra from Q2.
    pub fn sum_factorised(&self) -> Option<&GpuSumFactorised<T>> {
        self.sf.as_ref().filter(|_| self.variant.sum_factorised)
    }

    /// The matrix-free action's table and launch, for hexahedra from Q1
    /// ([`Variant::matrix_free`]).
    pub fn matrix_free(&self) -> Option<&GpuSumFactorised<T>> {
        self.sf.as_ref().filter(|_| self.variant.matrix_free)
    }

    /// The table, vertex coordinates and auxiliary fields on the device.
    pub fn inputs(&self) -> (&CudaSlice<T>, &CudaSlice<T>, &CudaSlice<T>) {
        (&self.tab, &self.x, &self.a)
    }

    /// Uploads `u`, evaluates and downloads.
    pub fn evaluate_host(&self, gpu: &CudaBackend, jacobian: bool, t: Transposition, u: &[T]) -> Result<Vec<T>> {
        let ud = gpu.upload(u)?;
        let mut out = gpu.zeros::<T>(self.out_len(jacobian))?;
        self.evaluate(gpu, jacobian, t, &ud, &mut out)?;
        gpu.download(&out)
    }
}

/// Local memory a GPU thread may address (CUDA's limit on every
/// architecture fem builds for).
pub const THREAD_LOCAL_LIMIT: usize = 512 << 10;

/// Bytes a `_cell` thread holds for its cell's point values: the
/// physics' `[c][e][4][4]` blocks at every point for element matrices
/// (`cell_jacobian`); for a residual its `[c][4]` fluxes and 8 more
/// values a point (`cell_residual`). Vector Q7 and Q8 hexahedra's element
/// matrices in f64 exceed [`THREAD_LOCAL_LIMIT`]; their residuals hold
/// 117 KB at vector Q8.
pub fn cell_thread_bytes(v: &Variant, jacobian: bool, bytes: usize) -> usize {
    let per_point = if jacobian { 16 * v.nc * v.nc } else { 4 * v.nc + 8 };
    v.nq * per_point * bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use fem_kernels::physics::Elasticity;

    /// The `_cell` kernels' local frames, residual and element matrices,
    /// are what `cell_thread_bytes` says, to a little scratch (or less,
    /// where the compiler keeps the values in registers), so the refusal
    /// falls where the hardware's limit does; vector Q7 hexahedra's
    /// element matrices are past it.
    #[test]
    fn cell_thread_bytes_bound_the_kernels_frames() {
        use fem_kernels::physics::{NeoHookean, Poisson};
        use fem_kernels::pointwise::Kernels;
        let Some(ptx) = fem_kernels::KERNELS_PTX.sources.first().map(|s| s.ptx) else {
            eprintln!("cell_thread_bytes_bound_the_kernels_frames: skipped (built without PTX)");
            return;
        };
        let variants = <Poisson as Kernels<f64>>::VARIANTS.iter().chain(<Elasticity as Kernels<f64>>::VARIANTS).chain(<NeoHookean as Kernels<f64>>::VARIANTS);
        let mut large = 0;
        // sum-factorised variants have no one-thread-per-cell residual
        for (v, jacobian) in variants.flat_map(|v| [(v, false), (v, true)]).filter(|(v, jacobian)| *jacobian || !v.sum_factorised) {
            let entry = if jacobian { v.jacobian.expect("a Jacobian") } else { v.residual };
            let name = format!(".entry {entry}_cell_f64(");
            let body = &ptx[ptx.find(&name).unwrap_or_else(|| panic!("{name} is not in the PTX"))..];
            let body = &body[..body[1..].find(".entry ").map_or(body.len(), |e| e + 1)];
            let depot = body.find("__local_depot").map_or(0, |i| {
                let size = &body[i..];
                let open = size.find('[').expect("a depot size");
                size[open + 1..open + size[open..].find(']').expect("a closed size")].parse::<usize>().expect("a number")
            });
            let want = cell_thread_bytes(v, jacobian, 8);
            assert!(depot <= want + 4096 && (want < 65536 || depot >= want), "{name}: frame {depot} B, model {want} B");
            large += usize::from(want > THREAD_LOCAL_LIMIT);
        }
        assert!(large >= 4, "vector Q7/Q8 hexahedra exceed the limit");
    }

    /// A launch shrinks to the blocks that fit the shared memory given,
    /// and a variant whose single block does not fit is refused, which
    /// sends the solvers to the one-thread-per-cell entry points.
    #[test]
    fn fitting_shrinks_the_launch_then_refuses() {
        let v = <Elasticity as Kernels<f64>>::VARIANTS.iter().find(|v| v.shape.name() == "hex").expect("a hexahedral variant");
        let one = Transposition { blocks: 1, ..Transposition::default_for(v) };
        let need = |t: Transposition, jacobian: bool| 8 * shared_len(v, t.threads(v), jacobian, t.batches);
        for jacobian in [false, true] {
            let roomy = Transposition::fitting(v, jacobian, 8, usize::MAX).unwrap();
            assert_eq!(roomy, Transposition::default_for(v));
            assert_eq!(Transposition::fitting(v, jacobian, 8, need(one, jacobian)).unwrap().blocks, 1);
            let err = Transposition::fitting(v, jacobian, 8, need(one, jacobian) - 1).unwrap_err().to_string();
            assert!(err.contains("shared memory"), "{err}");
        }
    }
}
