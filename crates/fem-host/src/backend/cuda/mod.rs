//! The CUDA backend: one context and stream on one device, the embedded PTX
//! loaded as a module, vectors as `CudaSlice<T>`.
//!
//! The driver library is loaded dynamically, so this compiles and the CPU
//! backend runs on machines without CUDA; [`CudaBackend::new`] says why a
//! GPU cannot be used rather than panicking.

mod props;
pub(crate) mod prelude;
mod scan;
mod staging;

pub use props::{theoretical_bandwidth, DeviceProps};

use super::recording::{Graph, Recorded, Recording};
use super::{Backend, BackendKind};
use crate::error::{first, same_len, Error};
use crate::{Result, Scalar};
use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use fem_build::{PtxSet, SplitPtx};
use fem_kernels::krylov;
use fem_kernels::launch::{grid_blocks, packets, BLOCK, FINAL_BLOCK, WARP};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A vector in GPU memory.
pub type DeviceVec<T> = CudaSlice<T>;

/// Blocks per SM of a grid-stride launch: full occupancy at [`BLOCK`]
/// threads, and a bound on the number of reduction partials.
const BLOCKS_PER_SM: u32 = 8;

/// A GPU with the fem kernels available.
///
/// Kernels are JIT-compiled on first use, each in a module of its own (the
/// PTX's common part plus that one entry): the full module takes the driver
/// most of a minute to compile, one kernel a fraction of a second.
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// The modules kernels are looked up in, the ones added last first.
    ptx: Vec<SplitPtx<'static>>,
    functions: Mutex<HashMap<String, (Arc<CudaModule>, CudaFunction)>>,
    props: DeviceProps,
    ptx_arch: &'static str,
    /// Reduction partials (one per block) and the final value, reused by
    /// every reduction on the stream.
    scratch: Mutex<CudaSlice<f64>>,
    /// The count of blocks done, by which the last block of a reduction
    /// whose result stays on the device knows it is last (zero between
    /// launches).
    ticket: Mutex<CudaSlice<u32>>,
    /// Whether [`Backend::replay`] records CUDA graphs (unless
    /// `FEM_CUDA_GRAPHS=off`: the same work launched one kernel at a time,
    /// to compare).
    graphs: bool,
    /// Page-locked buffers of large copies, made on first use.
    staging: Mutex<Option<staging::Staging>>,
}

/// Whether a CUDA driver and at least one device are present.
pub fn device_count() -> Result<usize> {
    // SAFETY: only probes whether the shared library can be opened.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::CudaUnavailable("the NVIDIA driver library (libcuda.so) was not found".into()));
    }
    let n = CudaContext::device_count().map_err(|e| Error::CudaUnavailable(format!("cannot query devices: {e}")))?;
    Ok(n.max(0) as usize)
}

/// A context on device `ordinal`, or why there is none.
pub fn open_context(ordinal: usize) -> Result<Arc<CudaContext>> {
    let count = device_count()?;
    if ordinal >= count {
        return Err(Error::CudaUnavailable(format!("no CUDA device {ordinal} ({count} present)")));
    }
    Ok(CudaContext::new(ordinal)?)
}

impl CudaBackend {
    /// Opens device `ordinal` and loads the best module of `ptx` for it.
    pub fn new(ordinal: usize, ptx: &'static PtxSet) -> Result<Self> {
        let ctx = open_context(ordinal)?;
        if !ptx.is_built() {
            return Err(Error::PtxNotBuilt(ptx.unavailable.unwrap_or("no PTX embedded").to_string()));
        }
        // One stream only: cudarc's cross-stream event tracking is not
        // needed. Not the legacy default stream, which cannot be captured
        // into a CUDA graph (`Backend::replay`).
        unsafe { ctx.disable_event_tracking() };
        let props = DeviceProps::read(&ctx)?;
        let (major, minor) = props.compute_capability;
        let src = ptx.best_for(major, minor).ok_or_else(|| Error::NoCompatiblePtx {
            major,
            minor,
            archs: ptx.archs().join(", "),
        })?;
        let stream = ctx.new_stream()?;
        // two partials per block (CG's fused update), or one and the sum
        let scratch = stream.alloc_zeros::<f64>(2 * (props.sm_count * BLOCKS_PER_SM) as usize + 1)?;
        let ticket = stream.alloc_zeros::<u32>(1)?;
        Ok(Self {
            ctx,
            stream,
            ptx: vec![SplitPtx::new(src.ptx)],
            functions: Mutex::new(HashMap::new()),
            props,
            ptx_arch: src.arch,
            scratch: Mutex::new(scratch),
            ticket: Mutex::new(ticket),
            graphs: std::env::var("FEM_CUDA_GRAPHS").as_deref() != Ok("off"),
            staging: Mutex::new(None),
        })
    }

    /// Adds the kernels of another PTX (a user's `#[fem_kernel]` crate
    /// compiled by [`fem_build::PtxBuilder`]) to those of the library: a
    /// kernel is looked up there first. Its best module for this device is
    /// taken, as [`CudaBackend::new`] does.
    pub fn with_kernels(mut self, ptx: &'static PtxSet) -> Result<Self> {
        if !ptx.is_built() {
            return Err(Error::PtxNotBuilt(ptx.unavailable.unwrap_or("no PTX embedded").to_string()));
        }
        let (major, minor) = self.props.compute_capability;
        let src = ptx.best_for(major, minor).ok_or_else(|| Error::NoCompatiblePtx { major, minor, archs: ptx.archs().join(", ") })?;
        self.ptx.insert(0, SplitPtx::new(src.ptx));
        Ok(self)
    }

    /// Properties of the open device, read once when the backend was created.
    pub fn props(&self) -> &DeviceProps {
        &self.props
    }

    /// The embedded architecture that was loaded (`sm_80`, ...).
    pub fn ptx_arch(&self) -> &'static str {
        self.ptx_arch
    }

    /// The single stream all of this backend's copies and launches are queued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The CUDA context of the open device.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// A kernel by its PTX name, compiled and loaded on first use.
    pub fn function(&self, name: &str) -> Result<CudaFunction> {
        self.cached(name, name, || self.ptx.iter().find_map(|p| p.module(name)))
    }

    /// [`Self::function`] compiled for blocks of at most `threads` threads
    /// (`.maxntid`), with registers for `blocks` of them per SM when
    /// `blocks` > 0 (`.minnctapersm`): for kernels whose register use would
    /// otherwise leave such a block unlaunchable, or too few resident.
    /// Cached per bound.
    pub fn function_for_block(&self, name: &str, threads: u32, blocks: u32) -> Result<CudaFunction> {
        self.cached(&format!("{name}#{threads}#{blocks}"), name, || self.ptx.iter().find_map(|p| p.module_for_block(name, threads, blocks)))
    }

    /// Kernel `name` from the cache under `key`, else compiled from the
    /// module text `module` gives and cached.
    fn cached(&self, key: &str, name: &str, module: impl FnOnce() -> Option<String>) -> Result<CudaFunction> {
        let mut cache = self.functions.lock().expect("kernel cache poisoned");
        if let Some((_, f)) = cache.get(key) {
            return Ok(f.clone());
        }
        let text = module().ok_or_else(|| Error::MissingKernel(name.to_string()))?;
        let module = self.ctx.load_module(cudarc::nvrtc::Ptx::from_src(text))?;
        let f = module.load_function(name).map_err(|_| Error::MissingKernel(name.to_string()))?;
        cache.insert(key.to_string(), (module, f.clone()));
        Ok(f)
    }

    /// Kernels compiled and loaded so far.
    pub fn loaded_kernels(&self) -> usize {
        self.functions.lock().expect("kernel cache poisoned").len()
    }

    /// The `T` instantiation of a generic kernel: `fem_<base>_<f32|f64>`.
    pub fn kernel<T: Scalar>(&self, base: &str) -> Result<CudaFunction> {
        self.function(&format!("fem_{base}_{}", T::NAME))
    }

    /// Launch shape of a streaming kernel over `n` elements of `T` (one
    /// 16-byte packet per thread and iteration), with `shared` bytes of
    /// dynamic shared memory.
    pub fn grid<T: Scalar>(&self, n: usize, shared: u32) -> LaunchConfig {
        let blocks = grid_blocks(packets(n, T::BYTES), BLOCK, self.props.sm_count * BLOCKS_PER_SM);
        LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: shared }
    }

    /// Launch shape of a grid-stride kernel of one thread per item over
    /// `n` items: blocks of 256, at most 8 a multiprocessor.
    pub fn per_item(&self, n: usize) -> LaunchConfig {
        let blocks = n.div_ceil(256).clamp(1, self.props.sm_count as usize * 8) as u32;
        LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
    }

    /// Device memory free now, in bytes.
    pub fn free_bytes(&self) -> Result<usize> {
        Ok(self.ctx.mem_get_info()?.0)
    }

    /// Device memory free for an allocation of `needs` bytes. The stream
    /// frees into the device's memory pool, which the driver counts as
    /// used until the stream synchronises and the pool is trimmed, and
    /// from which the stream's next allocations are served: a set-up that
    /// let go of gigabytes of transients (the cells' upload) would be
    /// refused on a stale reading. So a reading short of `needs` is taken
    /// again after both.
    fn free_for(&self, needs: usize) -> Result<usize> {
        let free = self.free_bytes()?;
        if free >= needs || !self.ctx.has_async_alloc() {
            return Ok(free);
        }
        self.stream.synchronize()?;
        let mut pool = std::ptr::null_mut();
        // SAFETY: the device's default pool, which the stream allocates
        // from; trimming releases only blocks no allocation holds
        unsafe {
            cudarc::driver::sys::cuDeviceGetDefaultMemPool(&mut pool, self.ctx.cu_device()).result()?;
            cudarc::driver::sys::cuMemPoolTrimTo(pool, 0).result()?;
        }
        self.free_bytes()
    }

    /// Refuses `what`, a problem that stores `needs` bytes on the device at
    /// the least, when fewer are free ([`Error::ProblemTooLarge`]): checked
    /// from its sizes before any of it is made.
    pub fn ensure_problem_fits(&self, what: &str, needs: usize) -> Result<()> {
        let free = self.free_for(needs)?;
        if needs > free {
            return Err(Error::ProblemTooLarge { what: what.to_string(), needs, free });
        }
        Ok(())
    }

    /// Fails before allocating when the device lacks the memory, rather
    /// than leaving the driver to fail mid-computation.
    pub fn ensure_free(&self, bytes: usize) -> Result<()> {
        let free = self.free_for(bytes)?;
        if bytes > free {
            return Err(Error::OutOfDeviceMemory { requested: bytes, free });
        }
        Ok(())
    }

    /// `dst ← src` with the copy kernel (the driver's copy is
    /// [`Backend::copy`]); the roofline probe measures both.
    pub fn copy_kernel<T: Scalar>(&self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<()> {
        same_len("copy_kernel", src.len(), dst.len())?;
        let f = self.kernel::<T>("copy")?;
        let n = src.len();
        unsafe { self.stream.launch_builder(&f).arg(&n).arg(src).arg(dst).launch(self.grid::<T>(n, 0)) }?;
        Ok(())
    }

    /// `Σ x_k h(k)` with pseudo-random weights `h`
    /// ([`fem_kernels::amg::hash_unit`]): whether values changed, told
    /// without reading them back.
    pub fn fingerprint<T: Scalar>(&self, x: &CudaSlice<T>) -> Result<f64> {
        Ok(self.reduce::<T>("fingerprint", x.len(), &[x])?.to_f64())
    }

    /// Runs the `<base>_partial` kernel over `inputs` (each of length `n`),
    /// which writes one partial per block, then sums the partials on the
    /// device and reads back the one value.
    fn reduce<T: Scalar>(&self, base: &str, n: usize, inputs: &[&CudaSlice<T>]) -> Result<T> {
        let shared = (BLOCK / WARP) * T::BYTES as u32;
        let cfg = self.grid::<T>(n, shared);
        let blocks = cfg.grid_dim.0 as usize;
        let partial_fn = self.kernel::<T>(&format!("{base}_partial"))?;
        let sum_fn = self.kernel::<T>("sum")?;
        let mut scratch = self.scratch.lock().expect("reduction scratch poisoned");
        let mut view = partials::<T>(&mut scratch, blocks + 1)?;
        let (mut partial, mut out) = view.split_at_mut(blocks);
        let mut launch = self.stream.launch_builder(&partial_fn);
        launch.arg(&n);
        for x in inputs {
            launch.arg(*x);
        }
        launch.arg(&mut partial);
        unsafe { launch.launch(cfg) }?;
        let final_cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (FINAL_BLOCK, 1, 1),
            shared_mem_bytes: (FINAL_BLOCK / WARP) * T::BYTES as u32,
        };
        unsafe { self.stream.launch_builder(&sum_fn).arg(&blocks).arg(&mut partial).arg(&mut out).launch(final_cfg) }?;
        let v = self.stream.clone_dtoh(&out)?;
        Ok(v[0])
    }
}

/// The first `len` values of `T` of the reduction scratch.
fn partials<T: Scalar>(scratch: &mut CudaSlice<f64>, len: usize) -> Result<cudarc::driver::CudaViewMut<'_, T>> {
    // SAFETY: the f64 scratch holds at least `len` values of T (T is at most 8 bytes).
    unsafe { scratch.transmute_mut::<T>(len) }.ok_or_else(|| Error::InvalidArgument(format!("a reduction of {len} partials exceeds the scratch")))
}

impl Backend for CudaBackend {
    type Vector<T: Scalar> = CudaSlice<T>;

    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn name(&self) -> String {
        self.props.name.clone()
    }

    fn zeros<T: Scalar>(&self, n: usize) -> Result<CudaSlice<T>> {
        if n == 0 {
            return Ok(self.stream.null()?);
        }
        self.ensure_free(n * T::BYTES)?;
        Ok(self.stream.alloc_zeros(n)?)
    }

    fn upload<T: Scalar>(&self, data: &[T]) -> Result<CudaSlice<T>> {
        self.htod(data)
    }

    fn write<T: Scalar>(&self, data: &[T], v: &mut CudaSlice<T>) -> Result<()> {
        crate::error::same_len("written values", data.len(), v.len())?;
        self.htod_into(data, v)
    }

    fn download<T: Scalar>(&self, v: &CudaSlice<T>) -> Result<Vec<T>> {
        self.dtoh(v)
    }

    fn len<T: Scalar>(&self, v: &CudaSlice<T>) -> usize {
        v.len()
    }

    fn copy<T: Scalar>(&self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<()> {
        same_len("copy", src.len(), dst.len())?;
        if !src.is_empty() {
            self.stream.memcpy_dtod(src, dst)?;
        }
        Ok(())
    }

    fn convert<S: Scalar, T: Scalar>(&self, src: &CudaSlice<S>, dst: &mut CudaSlice<T>) -> Result<()> {
        same_len("convert", src.len(), dst.len())?;
        let n = src.len();
        // the kernel's precision names the wider side; same precisions copy
        let f = match (S::NAME, T::NAME) {
            (s, t) if s == t => self.kernel::<S>("copy")?,
            (_, "f32") => self.kernel::<S>("to_single")?,
            _ => self.kernel::<T>("from_single")?,
        };
        unsafe { self.stream.launch_builder(&f).arg(&n).arg(src).arg(dst).launch(self.grid::<S>(n, 0)) }?;
        Ok(())
    }

    fn axpy<T: Scalar>(&self, alpha: T, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        same_len("axpy", x.len(), y.len())?;
        let f = self.kernel::<T>("axpy")?;
        let n = x.len();
        unsafe { self.stream.launch_builder(&f).arg(&n).arg(&alpha).arg(x).arg(y).launch(self.grid::<T>(n, 0)) }?;
        Ok(())
    }

    fn axpby<T: Scalar>(&self, alpha: T, x: &CudaSlice<T>, beta: T, y: &mut CudaSlice<T>) -> Result<()> {
        same_len("axpby", x.len(), y.len())?;
        let f = self.kernel::<T>("axpby")?;
        let n = x.len();
        unsafe {
            self.stream.launch_builder(&f).arg(&n).arg(&alpha).arg(x).arg(&beta).arg(y).launch(self.grid::<T>(n, 0))
        }?;
        Ok(())
    }

    fn mul<T: Scalar>(&self, x: &CudaSlice<T>, y: &CudaSlice<T>, z: &mut CudaSlice<T>) -> Result<()> {
        same_len("mul", x.len(), y.len())?;
        same_len("mul", x.len(), z.len())?;
        let f = self.kernel::<T>("mul")?;
        let n = x.len();
        unsafe { self.stream.launch_builder(&f).arg(&n).arg(x).arg(y).arg(z).launch(self.grid::<T>(n, 0)) }?;
        Ok(())
    }

    fn reciprocal<T: Scalar>(&self, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        same_len("reciprocal", x.len(), y.len())?;
        let f = self.kernel::<T>("reciprocal")?;
        let n = x.len();
        unsafe { self.stream.launch_builder(&f).arg(&n).arg(x).arg(y).launch(self.grid::<T>(n, 0)) }?;
        Ok(())
    }

    fn dot_first<T: Scalar>(&self, n: usize, x: &CudaSlice<T>, y: &CudaSlice<T>) -> Result<T> {
        first("dot", n, x.len().min(y.len()))?;
        self.reduce("dot", n, &[x, y])
    }

    fn sumsq_first<T: Scalar>(&self, n: usize, x: &CudaSlice<T>) -> Result<T> {
        first("sum of squares", n, x.len())?;
        self.reduce::<T>("sumsq", n, &[x])
    }

    fn dot_into<T: Scalar>(&self, n: usize, x: &CudaSlice<T>, y: &CudaSlice<T>, s: &mut CudaSlice<f64>, slot: usize) -> Result<()> {
        first("dot_into", n, x.len().min(y.len()))?;
        crate::error::scalar_slots("dot_into", slot, 1, s.len())?;
        let cfg = self.grid::<T>(n, (BLOCK / WARP) * T::BYTES as u32);
        let f = self.kernel::<T>("dot_to_slot")?;
        let mut scratch = self.scratch.lock().expect("reduction scratch poisoned");
        let mut ticket = self.ticket.lock().expect("reduction ticket poisoned");
        let mut partial = partials::<T>(&mut scratch, cfg.grid_dim.0 as usize)?;
        unsafe { self.stream.launch_builder(&f).arg(&n).arg(x).arg(y).arg(&mut partial).arg(&mut *ticket).arg(s).arg(&slot).launch(cfg) }?;
        Ok(())
    }

    fn cg_update<T: Scalar>(
        &self,
        n: usize,
        s: &mut CudaSlice<f64>,
        p: &CudaSlice<T>,
        q: &CudaSlice<T>,
        x: &mut CudaSlice<T>,
        r: &mut CudaSlice<T>,
        jacobi: Option<(&CudaSlice<T>, &mut CudaSlice<T>)>,
        history: Option<&mut CudaSlice<f64>>,
    ) -> Result<()> {
        let len = x.len();
        crate::error::cg_update_lengths(n, s.len(), len, [p.len(), q.len(), r.len()], jacobi.as_ref().map(|(d, z)| (d.len(), z.len())))?;
        let cfg = self.grid::<T>(len, (BLOCK / WARP) * T::BYTES as u32);
        let f = self.kernel::<T>("cg_update")?;
        let mut scratch = self.scratch.lock().expect("reduction scratch poisoned");
        let mut ticket = self.ticket.lock().expect("reduction ticket poisoned");
        let mut partial = partials::<T>(&mut scratch, 2 * cfg.grid_dim.0 as usize)?;
        let null = 0u64;
        let mut launch = self.stream.launch_builder(&f);
        launch.arg(&len).arg(&n).arg(&mut *s).arg(p).arg(q).arg(x).arg(r);
        match jacobi {
            Some((d, z)) => launch.arg(d).arg(z),
            None => launch.arg(&null).arg(&null),
        };
        launch.arg(&mut partial).arg(&mut *ticket);
        match history {
            Some(h) => launch.arg(h),
            None => launch.arg(&null),
        };
        unsafe { launch.launch(cfg) }?;
        Ok(())
    }

    fn cg_advance(&self, s: &mut CudaSlice<f64>, history: &mut CudaSlice<f64>) -> Result<()> {
        crate::error::scalar_slots("cg_advance", 0, krylov::SLOTS, s.len())?;
        let f = self.function("fem_cg_advance")?;
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (WARP, 1, 1), shared_mem_bytes: 0 };
        unsafe { self.stream.launch_builder(&f).arg(s).arg(history).launch(cfg) }?;
        Ok(())
    }

    fn cg_direction<T: Scalar>(&self, s: &CudaSlice<f64>, z: &CudaSlice<T>, p: &mut CudaSlice<T>) -> Result<()> {
        crate::error::scalar_slots("cg_direction", 0, krylov::SLOTS, s.len())?;
        same_len("cg_direction", z.len(), p.len())?;
        let f = self.kernel::<T>("cg_direction")?;
        let n = p.len();
        unsafe { self.stream.launch_builder(&f).arg(&n).arg(s).arg(z).arg(p).launch(self.grid::<T>(n, 0)) }?;
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        Ok(self.stream.synchronize()?)
    }

    fn time(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let start = self.stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        f()?;
        let end = self.stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        end.synchronize()?;
        Ok(start.elapsed_ms(&end)? as f64 * 1e-3)
    }

    fn replay<K: PartialEq + Clone>(&self, recording: &Recording<K>, key: &K, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        // inside another recording's capture: becomes part of that graph
        if !self.graphs || self.stream.capture_status()? != cudarc::driver::sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return f();
        }
        let mut state = recording.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.0.as_ref() != Some(key) {
            *state = (Some(key.clone()), Recorded::Empty);
        }
        match &state.1 {
            Recorded::Graph(g) => return Ok(g.0.launch()?),
            Recorded::Refused => return f(),
            Recorded::Empty => {
                // first as it is: what it loads (modules, kernels) is not
                // loaded while capturing
                state.1 = Recorded::Ran;
                return f();
            }
            Recorded::Ran => {}
        }
        // captured, not run: the graph's first launch runs it
        self.stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let ran = f();
        let ended = self.stream.end_capture(CUgraphInstantiate_flags(0));
        match (ran, ended) {
            (Ok(()), Ok(Some(g))) => {
                g.launch()?;
                state.1 = Recorded::Graph(Graph(g));
                Ok(())
            }
            _ => {
                state.1 = Recorded::Refused;
                f()
            }
        }
    }
}
