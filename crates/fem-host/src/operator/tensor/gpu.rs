//! The tensor-product operators on the GPU: the 1D tables, geometric
//! factors and element-to-node map uploaded once; each application is one
//! launch of the degree's specialised kernel (`fem_bp1_n<N>_f64`, ...,
//! `fem_bp1_trilinear_n<N>_f64` where it recomputes the geometric factors).

use super::tuning::BpLaunch;
use super::{Problem, TensorOperator};
use crate::operator::LinearOperator;
use crate::space::restriction::GpuRestriction;
use crate::{Backend, CudaBackend, Error, Result};
use cudarc::driver::sys::CUfunction_attribute_enum;
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use fem_core::tensor::gl_points;
use fem_kernels::tensor::{table_offsets, BpKernel};
use serde::{Deserialize, Serialize};

/// Highest degree of the one-thread-per-node BP3.5 kernel.
pub const MAX_DEGREE_3D: usize = 7;

/// Threads a block aims for when elements are small.
const TARGET_THREADS: usize = 256;

/// An operator's device data and its launch shape.
pub struct GpuTensor<'a> {
    gpu: &'a CudaBackend,
    /// The host operator whose data were uploaded.
    pub op: &'a TensorOperator,
    /// The kernel variant launched (see [`kernel_for`]).
    pub kernel: BpKernel,
    /// Elements per block (`blockDim.y`).
    pub elements_per_block: usize,
    /// Resident warps per SM the registers were budgeted for (0: the
    /// compiler's choice).
    pub min_warps: usize,
    /// Where the line kernel keeps a thread's column ([`Column::Registers`]
    /// for the other kernels).
    pub column: Column,
    /// Slices ahead of the line kernel's shared factor ring (0: the
    /// factors pass through registers).
    pub ring: usize,
    /// Whether the launched kernel recomputes the geometric factors from
    /// the elements' corners ([`uses_corners`]) rather than reading them;
    /// its factor ring is then dropped.
    pub recomputes: bool,
    f: CudaFunction,
    tab: CudaSlice<f64>,
    /// The tables a kernel takes by value: I, glD and D (see [`param_tables`]).
    params: [Box<ParamTables>; 3],
    geo: CudaSlice<f64>,
    /// The elements' corners, where they are trilinear.
    corners: Option<CudaSlice<f64>>,
    /// The points of the problem's 1D rule, then their weights (the
    /// recomputing kernels' table: GLL for BP3.5, GL for BP1 and BP3.0).
    rule: CudaSlice<f64>,
    /// The operator's restriction, whose map the kernels read in their
    /// own loops.
    restriction: GpuRestriction,
}

/// Highest degree of the BP3.5 line-contraction kernel; the 2D slices
/// take the higher degrees (H100, 1e7 DOFs, N = 8: the lines with the
/// column in shared memory 0.90 of the copy, the slices 0.82, both tuned).
pub const MAX_DEGREE_LINES: usize = 8;

/// Where the BP3.5 line kernel keeps a thread's z-column between its
/// passes: registers cost no shared-memory traffic, shared memory frees
/// 30–60 registers per thread and so may let twice the warps reside.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Column {
    /// In registers.
    Registers,
    /// In the element's shared work array.
    Shared,
}

/// The kernel for a problem and degree: BP3.5 may take the 3D thread
/// structure, else line contractions up to [`MAX_DEGREE_LINES`] and 2D
/// thread slices above.
pub fn kernel_for(problem: Problem, degree: usize, threads_3d: bool) -> BpKernel {
    match (problem, threads_3d) {
        (Problem::Bp1, _) => BpKernel::Mass,
        (Problem::Bp35, false) if degree <= MAX_DEGREE_LINES => BpKernel::CollocatedLines,
        (Problem::Bp35, false) => BpKernel::Collocated,
        (Problem::Bp35, true) => BpKernel::Collocated3d,
        (Problem::Bp30, _) => BpKernel::Quadrature,
    }
}

/// Highest degree whose kernels can recompute the geometric factors
/// (BP1's, BP3.0's and BP3.5's line kernel).
pub const MAX_DEGREE_RECOMPUTE: usize = 8;

/// Whether `kernel` at `degree` has a variant that reads the elements'
/// corners and recomputes the geometric factors at each point: BP1's,
/// BP3.0's and BP3.5's line kernel up to [`MAX_DEGREE_RECOMPUTE`].
pub fn recomputes_at(kernel: BpKernel, degree: usize) -> bool {
    matches!(kernel, BpKernel::Mass | BpKernel::Quadrature | BpKernel::CollocatedLines) && degree <= MAX_DEGREE_RECOMPUTE
}

/// Whether `kernel` on `op` can read the elements' corners and recompute
/// the geometric factors at each point: where it has such a variant
/// ([`recomputes_at`]) and the elements are trilinear
/// ([`TensorOperator::corners`]). The factors cost 7 values a point, 56
/// bytes (BP1's one, 8), where the vectors and the map of an application
/// on L-vectors cost about 24 a node, and BP1 and BP3.0 have more points
/// than nodes; recomputed, they cost registers and arithmetic, and the
/// tuner finds where that pays ([`BpLaunch::recompute`]).
pub fn uses_corners(op: &TensorOperator, kernel: BpKernel) -> bool {
    op.corners.is_some() && recomputes_at(kernel, op.degree)
}

/// Launch `l` as it runs on `op`: its kernel, and `l` recomputing the
/// factors only where it asks and [`uses_corners`], its factor ring
/// dropped where it does (a ring streams the stored factors). An error
/// for a ring the kernel has not.
fn effective(op: &TensorOperator, l: &BpLaunch) -> Result<(BpKernel, BpLaunch)> {
    let kernel = kernel_for(op.problem, op.degree, l.threads_3d);
    if l.ring > 0 && !(has_ring(kernel, op.degree) && RING_AHEAD.contains(&l.ring) && l.column != Some(Column::Registers)) {
        return Err(Error::InvalidArgument(format!(
            "a factor ring of {} slices: BP3.5's line kernel has one {RING_AHEAD:?} slices deep for N in {RING_DEGREES:?}, with its column in shared memory",
            l.ring
        )));
    }
    let recompute = l.recompute && uses_corners(op, kernel);
    Ok((kernel, BpLaunch { ring: if recompute { 0 } else { l.ring }, recompute, ..*l }))
}

/// The kernel's PTX name (`corners`: the one recomputing the factors).
fn kernel_name(kernel: BpKernel, degree: usize, column: Column, ring: usize, corners: bool) -> String {
    let base = match kernel {
        BpKernel::Mass => "bp1",
        BpKernel::Collocated => "bp35",
        BpKernel::Collocated3d => "bp35_3d",
        BpKernel::CollocatedLines => "bp35_lines",
        BpKernel::Quadrature => "bp30",
    };
    if ring > 0 {
        return format!("fem_bp35_lines_ring_n{degree}_ahead{ring}_f64");
    }
    let col = if kernel == BpKernel::CollocatedLines { format!("_shared_col{}", (column == Column::Shared) as u8) } else { String::new() };
    let source = if corners { "_trilinear" } else { "" };
    format!("fem_{base}{source}_n{degree}{col}_f64")
}

/// Shared bytes of a launch of `epb` elements per block with the factor
/// ring `ring` slices deep (0: none).
fn shared_bytes(kernel: BpKernel, degree: usize, epb: usize, ring: usize) -> usize {
    8 * kernel.shared_len_with_ring(degree + 1, gl_points(degree), epb, ring)
}

/// Degrees of BP3.5's line kernel with the geometric factors through a
/// shared ring (`fem_bp35_lines_ring_n<N>_ahead<A>_f64`), and the depths
/// it is compiled for.
pub const RING_DEGREES: std::ops::RangeInclusive<usize> = 7..=8;
/// See [`RING_DEGREES`].
pub const RING_AHEAD: [usize; 3] = [2, 3, 4];

/// Whether `kernel` at `degree` has a factor ring: BP3.5's line kernel at
/// [`RING_DEGREES`].
pub fn has_ring(kernel: BpKernel, degree: usize) -> bool {
    kernel == BpKernel::CollocatedLines && RING_DEGREES.contains(&degree)
}

/// The built-in ring depth: two slices ahead for BP3.5's line kernel at
/// N = 8 (unless its column is to stay in registers), none elsewhere.
/// H100, the 4096-element and 1e7-DOF meshes, one element per block: N = 8
/// 0.881 → 0.926 and 0.932 → 0.981 of the copy against the column in
/// shared memory with the factors in registers; N = 7 gains at 4096
/// elements and loses at 1e7 DOFs, N = 5 and 6 lose 5–10 % (the tuner
/// tries the ring at N = 7 and 8).
pub fn default_ring(kernel: BpKernel, degree: usize, column: Option<Column>) -> usize {
    if has_ring(kernel, degree) && degree == 8 && column != Some(Column::Registers) {
        2
    } else {
        0
    }
}

/// Shared memory a default launch may take without opting in. Raising it
/// to 96 KB (what every sm_80+ GPU allows) was measured on an H100 at 1e7
/// DOFs and left: BP3.5 N = 8 0.76 → 0.90 of the copy, BP3.0 N = 6, 7
/// 0.87 → 0.92 and 0.49 → 0.63, but BP3.5 N = 7 0.98 → 0.92 and BP3.0
/// N = 8, 9 0.61 → 0.56 and 0.82 → 0.61; the tuner finds the larger
/// blocks where they pay.
const DEFAULT_SHARED_BYTES: usize = 48 * 1024;

/// Elements per block: enough small elements to fill `TARGET_THREADS`,
/// within the block's thread and shared-memory limits (with a factor
/// ring `ring` slices deep).
pub fn default_elements_per_block(kernel: BpKernel, degree: usize, ring: usize) -> usize {
    let threads = kernel.threads(degree + 1, gl_points(degree));
    let mut epb = (TARGET_THREADS / threads).max(1);
    while epb > 1 && shared_bytes(kernel, degree, epb, ring) > DEFAULT_SHARED_BYTES {
        epb -= 1;
    }
    epb
}

impl<'a> GpuTensor<'a> {
    /// Uploads `op`'s tables, geometric factors and map; `threads_3d` picks
    /// the 3D thread structure for BP3.5, `elements_per_block` defaults to
    /// [`default_elements_per_block`], the rest of the launch is built in
    /// ([`BpLaunch::builtin`]). An error when the launch exceeds the
    /// device's limits.
    pub fn new(gpu: &'a CudaBackend, op: &'a TensorOperator, threads_3d: bool, elements_per_block: Option<usize>) -> Result<Self> {
        let l = BpLaunch::builtin(op.problem, op.degree, threads_3d);
        Self::with_launch(gpu, op, BpLaunch { elements_per_block: elements_per_block.unwrap_or(l.elements_per_block), ..l })
    }

    /// Uploads `op`'s data for launch `l`: its variant, elements per
    /// block, registers budgeted for `min_warps` resident warps per SM (0:
    /// the compiler's choice), the line kernel's column (`None`: the one
    /// that lets more warps reside, registers on a tie) and factor ring.
    pub fn with_launch(gpu: &'a CudaBackend, op: &'a TensorOperator, l: BpLaunch) -> Result<Self> {
        let (kernel, run) = effective(op, &l)?;
        let (f, column) = choose_column(gpu, op, kernel, &run)?;
        let b = &op.tables.basis;
        let packed = packed_tables(b);
        debug_assert_eq!(packed.len(), table_offsets(op.degree + 1, gl_points(op.degree))[6]);
        let corners = op.corners.as_deref().unwrap_or_default();
        let (points, weights) = op.problem.points().rule(b);
        gpu.ensure_free(8 * (op.factors.len() + corners.len()) + 4 * op.restriction.map.len() + 8 * packed.len())?;
        Ok(Self {
            gpu,
            op,
            kernel,
            elements_per_block: l.elements_per_block,
            min_warps: l.min_warps,
            column,
            ring: run.ring,
            recomputes: run.recompute,
            f,
            tab: gpu.upload(&packed)?,
            params: [param_tables(&b.interp, b.gq, b.nq), param_tables(&b.gl_diff, b.gq, b.gq), param_tables(&b.diff, b.nq, b.nq)],
            geo: gpu.upload(&op.factors)?,
            corners: op.corners.as_ref().map(|c| gpu.upload(c)).transpose()?,
            rule: gpu.upload(&[points, weights].concat())?,
            restriction: op.restriction.upload(gpu)?,
        })
    }

    /// Another copy of the operator's device data under the same launch: a
    /// benchmark cycles through copies so that each application finds its
    /// data out of L2 (`fem_host::roofline::cold_sets`).
    pub fn replica(&self) -> Result<Self> {
        let corners = self.corners.as_ref().map_or(0, |c| c.len());
        self.gpu.ensure_free(8 * (self.geo.len() + corners) + 4 * self.restriction.len() + 8 * self.tab.len())?;
        Ok(Self {
            tab: self.gpu.stream().clone_dtod(&self.tab)?,
            params: self.params.clone(),
            geo: self.gpu.stream().clone_dtod(&self.geo)?,
            corners: self.corners.as_ref().map(|c| self.gpu.stream().clone_dtod(c)).transpose()?,
            rule: self.gpu.stream().clone_dtod(&self.rule)?,
            restriction: self.restriction.replica(self.gpu)?,
            f: self.f.clone(),
            ..*self
        })
    }

    /// Switches to another launch (the tuner's candidates), keeping the
    /// uploaded data.
    pub fn set_launch(&mut self, l: BpLaunch) -> Result<()> {
        let (kernel, run) = effective(self.op, &l)?;
        (self.f, self.column) = choose_column(self.gpu, self.op, kernel, &run)?;
        (self.kernel, self.elements_per_block, self.min_warps, self.ring, self.recomputes) = (kernel, run.elements_per_block, run.min_warps, run.ring, run.recompute);
        Ok(())
    }

    fn config(&self, elements: usize) -> LaunchConfig {
        let (nq, gq) = (self.op.degree + 1, gl_points(self.op.degree));
        let epb = self.elements_per_block;
        LaunchConfig {
            grid_dim: (elements.div_ceil(epb) as u32, 1, 1),
            block_dim: (self.kernel.threads(nq, gq) as u32, epb as u32, 1),
            shared_mem_bytes: shared_bytes(self.kernel, self.op.degree, epb, self.ring) as u32,
        }
    }

    fn launch(&self, assembled: bool, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        self.launch_range(assembled, 0..self.op.elements, x, y)
    }

    /// The launch over the elements `elements` only: their factors and
    /// map from the range's first element.
    fn launch_range(&self, assembled: bool, elements: std::ops::Range<usize>, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        let ne = elements.len();
        if ne == 0 {
            return Ok(());
        }
        // an element's factors: NGEO at each of its quadrature points
        let per = fem_core::tensor::NGEO * self.op.problem.points().per_direction(&self.op.tables.basis).pow(3);
        let np = self.op.np();
        let geo = match (&self.corners, self.recomputes) {
            (Some(c), true) => c.slice(elements.start * 24..elements.end * 24),
            _ => self.geo.slice(elements.start * per..elements.end * per),
        };
        let map = self.restriction.map.slice(elements.start * np..elements.end * np);
        let flag = assembled as u32;
        let mut l = self.gpu.stream().launch_builder(&self.f);
        l.arg(&ne);
        if self.op.problem != Problem::Bp1 {
            l.arg(&self.op.lambda);
        }
        match self.kernel {
            BpKernel::Mass => l.arg(&*self.params[0]),
            BpKernel::Quadrature => l.arg(&*self.params[0]).arg(&*self.params[1]),
            BpKernel::CollocatedLines => l.arg(&*self.params[2]),
            BpKernel::Collocated | BpKernel::Collocated3d => l.arg(&self.tab),
        };
        if self.recomputes {
            l.arg(&self.rule);
        }
        l.arg(&geo).arg(&flag).arg(&map).arg(x).arg(y);
        unsafe { l.launch(self.config(ne)) }?;
        Ok(())
    }

    /// `y = A_E x` on E-vectors.
    pub fn apply_elements(&self, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        crate::error::same_len("bp apply", x.len(), self.op.element_dofs())?;
        crate::error::same_len("bp apply", y.len(), self.op.element_dofs())?;
        self.launch(false, x, y)
    }
}

/// The kernel's function and column: `column` where given, else for the
/// line kernel the column that lets more warps reside in the launch
/// (registers on a tie: no extra shared-memory traffic), which the
/// driver's occupancy query knows from the compiled registers. The ring
/// kernel keeps its column in shared memory.
fn choose_column(gpu: &CudaBackend, op: &TensorOperator, kernel: BpKernel, l: &BpLaunch) -> Result<(CudaFunction, Column)> {
    let load = |c: Column| launchable(gpu, op, kernel, l, c);
    match (kernel, l.column) {
        (_, _) if l.ring > 0 => Ok((load(Column::Shared)?, Column::Shared)),
        (BpKernel::CollocatedLines, Some(c)) => Ok((load(c)?, c)),
        (BpKernel::CollocatedLines, None) => {
            let (r, s) = (load(Column::Registers)?, load(Column::Shared)?);
            let (nq, gq) = (op.degree + 1, gl_points(op.degree));
            let shared = shared_bytes(kernel, op.degree, l.elements_per_block, 0);
            let threads = (kernel.threads(nq, gq) * l.elements_per_block) as u32;
            let blocks = |f: &CudaFunction| f.occupancy_max_active_blocks_per_multiprocessor(threads, shared, None);
            Ok(if blocks(&s)? > blocks(&r)? { (s, Column::Shared) } else { (r, Column::Registers) })
        }
        _ => Ok((load(Column::Registers)?, Column::Registers)),
    }
}

/// The kernel's function, checked against the degree, the block's thread
/// and shared-memory limits and the ring's kernels, with large shared
/// memory opted in; compiled with registers for `min_warps` resident
/// warps per SM when that is > 0.
fn launchable(gpu: &CudaBackend, op: &TensorOperator, kernel: BpKernel, l: &BpLaunch, column: Column) -> Result<CudaFunction> {
    if kernel == BpKernel::Collocated3d && op.degree > MAX_DEGREE_3D {
        return Err(Error::InvalidArgument(format!("the 3D thread structure takes degrees up to {MAX_DEGREE_3D} ((N + 1)³ threads per element)")));
    }
    let (nq, gq, epb) = (op.degree + 1, gl_points(op.degree), l.elements_per_block);
    let threads = kernel.threads(nq, gq) * epb;
    let props = gpu.props();
    if epb == 0 || threads > props.max_threads_per_block as usize {
        return Err(Error::InvalidArgument(format!("{epb} elements per block need {threads} threads (at most {})", props.max_threads_per_block)));
    }
    let shared = shared_bytes(kernel, op.degree, epb, l.ring);
    if shared > props.shared_mem_per_block_optin as usize {
        return Err(Error::InvalidArgument(format!("{epb} elements per block need {shared} bytes of shared memory (at most {})", props.shared_mem_per_block_optin)));
    }
    // bounded by the block, or the largest degrees' registers would not fit it
    let blocks = l.min_warps.div_ceil(threads.div_ceil(32));
    let f = gpu.function_for_block(&kernel_name(kernel, op.degree, column, l.ring, l.recompute), threads as u32, blocks as u32)?;
    if shared > props.shared_mem_per_block as usize {
        f.set_attribute(CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)?;
    }
    Ok(f)
}

/// `[I | Iᵀ | D | Dᵀ | glD | glDᵀ]`, the layout of `fem_kernels::tensor`.
pub fn packed_tables(b: &super::basis::Basis1d) -> Vec<f64> {
    use super::basis::transpose;
    let (nq, gq) = (b.nq, b.gq);
    [
        b.interp.clone(),
        transpose(&b.interp, gq, nq),
        b.diff.clone(),
        transpose(&b.diff, nq, nq),
        b.gl_diff.clone(),
        transpose(&b.gl_diff, gq, gq),
    ]
    .concat()
}

/// Capacity of [`ParamTables`]: 4 KiB, the launch-parameter limit.
const PARAM_VALUES: usize = 512;

/// Launch-parameter tables: the driver copies as many bytes as the
/// kernel's parameter declares (`fem_kernels::tensor::Half`), so one buffer
/// of the largest size serves every degree.
type ParamTables = [f64; PARAM_VALUES];

/// The stored rows (the first `⌈rows / 2⌉`) of the row-major `rows × cols`
/// matrix `m`, as `Half` lays them out; the rest of the buffer is zero.
pub fn param_tables(m: &[f64], rows: usize, cols: usize) -> Box<ParamTables> {
    let n = rows.div_ceil(2) * cols;
    let mut t = Box::new([0.0; PARAM_VALUES]);
    t[..n].copy_from_slice(&m[..n]);
    t
}

/// The assembled operator `Rᵀ A_E R` on L-vectors: gather and atomic
/// scatter fused into the element kernel.
impl LinearOperator<CudaBackend, f64> for GpuTensor<'_> {
    fn rows(&self) -> usize {
        self.op.restriction.rows()
    }
    fn apply(&self, gpu: &CudaBackend, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        crate::error::same_len("bp apply", x.len(), self.rows())?;
        crate::error::same_len("bp apply", y.len(), self.rows())?;
        gpu.stream().memset_zeros(y)?;
        self.launch(true, x, y)
    }
    fn diagonal(&self, gpu: &CudaBackend) -> Result<CudaSlice<f64>> {
        gpu.upload(&self.op.assembled_diagonal())
    }
    fn name(&self) -> String {
        format!("{:?}", self.op.problem).to_lowercase()
    }
}

/// The operator's first [`TensorOperator::interior`] elements read only a
/// rank's owned rows: they run while the halo exchange travels, the rest
/// after it.
impl crate::distributed::Overlap<CudaBackend> for GpuTensor<'_> {
    fn interior(&self, gpu: &CudaBackend, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        crate::error::same_len("bp apply", x.len(), self.rows())?;
        crate::error::same_len("bp apply", y.len(), self.rows())?;
        gpu.stream().memset_zeros(y)?;
        self.launch_range(true, 0..self.op.interior, x, y)
    }
    fn rest(&self, _: &CudaBackend, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        self.launch_range(true, self.op.interior..self.op.elements, x, y)
    }
}
