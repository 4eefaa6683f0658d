//! The test problem of Reguly & Giles: −Δu = Π sin(π xₐ) on \[0,1\]^D with
//! u = 0 on the boundary, on Q_p elements, and the L2 error of the
//! computed solution against the exact u = Π sin(π xₐ)/(Dπ²).

use crate::mesh::{BoxMesh, Mesh};
use crate::operator::cell_data::CellData;
use crate::operator::csr::Csr;
use crate::operator::elements::{self, LocalVariant};
use crate::operator::ell::{Ell, LazyEll};
use crate::operator::lma::Lma;
use crate::operator::matrix_free::MatrixFree;
use crate::operator::LinearOperator;
use crate::solver::{cg, CgOptions, CgReport};
use crate::space::{DirichletMode, Layout, Numbering, Space};
use crate::operator::gpu::{self as gpu_op, GpuCells, GpuCsr, GpuEll, GpuLma, GpuMatrixFree, Scatter};
use crate::{Backend, CpuBackend, CudaBackend, Result, Scalar};
use crate::stages::{StageClock, StageSeconds};
use std::sync::Arc;
use fem_core::poisson::SinePoisson;
use serde::Serialize;
use std::time::Instant;


mod choice;
mod gpu;
pub mod memory;
pub use choice::*;
pub use gpu::*;

/// Storage of the stiffness matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Compressed sparse rows, assembled globally.
    Csr,
    /// Transposed ELLPACK (rows padded to a common width, slot-major),
    /// assembled globally.
    Ell,
    /// Lazy ELLPACK: every element's entries appended to their rows,
    /// repeated columns kept, so no pattern is built before assembly.
    LazyEll,
    /// Local matrix approach: element matrices kept and applied as
    /// gather, dense product, scatter per cell.
    Lma,
    /// Nothing stored: element matrices recomputed in every product.
    MatrixFree,
}

impl Format {
    /// Every format, in the order the reports list them.
    pub const ALL: [Format; 5] = [Self::Csr, Self::Ell, Self::LazyEll, Self::Lma, Self::MatrixFree];

    /// The name the command line and the reports use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Csr => "csr",
            Self::Ell => "ell",
            Self::LazyEll => "lazy-ell",
            Self::Lma => "lma",
            Self::MatrixFree => "matrix-free",
        }
    }

    /// The DOF numbering that serves this format best when none is asked
    /// for: aligned for LMA (a warp of cells then gathers and scatters
    /// side-by-side DOFs: on an H200, 2D Q2 f64, 0.90 of the copy roofline
    /// against 0.79 in first-encounter order), first-encounter order for
    /// the global formats (ELLPACK 2D Q2 0.83 against 0.79 aligned).
    pub fn default_numbering(self) -> Numbering {
        match self {
            Self::Lma => Numbering::Aligned,
            _ => Numbering::Original,
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| format!("unknown format `{s}` (csr, ell, lazy-ell, lma, matrix-free)"))
    }
}

/// The operator on the rows `layout` of `space` in `format`, the load vector, and the
/// entries a global format stores (CSR nonzeros, ELLPACK slots) for the
/// bytes model of its product; `kappa`: each cell's material factor on κ.
pub fn build_operator<T: Scalar>(
    cpu: &CpuBackend,
    space: &Space,
    layout: &Layout,
    format: Format,
    symmetric: bool,
    kappa: Option<&[f64]>,
) -> Result<(Box<dyn LinearOperator<CpuBackend, T>>, Vec<T>, (usize, usize))> {
    let cd = with_regions(CellData::<T>::new(space, layout), kappa)?;
    if let Format::Csr | Format::Ell = format {
        // summed as the element matrices are computed, none stored
        let (csr, b) = Csr::assemble_cells(cpu, layout, &cd, &SinePoisson)?;
        let stored = (csr.nnz(), csr.max_row_len() * csr.n_rows);
        let op: Box<dyn LinearOperator<CpuBackend, T>> = match format {
            Format::Csr => Box::new(csr),
            _ => Box::new(cpu.install(|| Ell::from_csr(&csr))),
        };
        return Ok((op, b, stored));
    }
    if format == Format::MatrixFree {
        let (op, b) = MatrixFree::new(cpu, layout, cd)?;
        return Ok((Box::new(op), b, (0, 0)));
    }
    let elems = elements::assemble(cpu, &cd, format == Format::Lma && symmetric)?;
    let b = elements::load_vector(&cd, &elems);
    let (op, stored): (Box<dyn LinearOperator<CpuBackend, T>>, _) = match format {
        Format::Csr | Format::Ell | Format::MatrixFree => unreachable!("assembled above"),
        Format::LazyEll => {
            let m = LazyEll::assemble(&cd, &elems);
            let slots = m.0.width * m.0.n_rows;
            (Box::new(m), (0, slots))
        }
        Format::Lma => (Box::new(Lma::new(layout, cd, elems)), (0, 0)),
    };
    Ok((op, b, stored))
}

/// Where the mesh of a solve comes from.
#[derive(Clone, Debug)]
pub enum MeshSource {
    /// Generated on the unit square or cube.
    Box(BoxMesh),
    /// Given whole (read from a file), already validated.
    Given(std::sync::Arc<Mesh>),
}

impl MeshSource {
    /// The mesh: generated anew, or a copy of the given one.
    pub fn build(&self) -> Result<Mesh> {
        match self {
            Self::Box(b) => b.build(),
            Self::Given(m) => Ok(Mesh::clone(m)),
        }
    }
}

/// What to solve and how.
#[derive(Clone, Debug)]
pub struct PoissonOptions {
    /// The mesh of the solve.
    pub mesh: MeshSource,
    /// Degree p of the Q_p elements.
    pub degree: usize,
    /// Order in which the DOFs are numbered.
    pub numbering: Numbering,
    /// How u = 0 on the Dirichlet boundary enters the system.
    pub dirichlet: DirichletMode,
    /// Local assembly: per-point data reused, or recomputed per entry.
    pub variant: LocalVariant,
    /// Storage of the stiffness matrix.
    pub format: Format,
    /// GPU: how element kernels avoid write races.
    pub scatter: Scatter,
    /// GPU CSR: threads per row (default from the row lengths).
    pub threads_per_row: Option<usize>,
    /// LMA: packed symmetric storage of the element matrices.
    pub symmetric: bool,
    /// GPU: also time one SpMV against the copy roofline.
    pub benchmark: bool,
    /// Stopping rule and Jacobi preconditioning of CG.
    pub cg: CgOptions,
    /// Dirichlet conditions on these boundary facets only (facet keys of
    /// the mesh), natural conditions on the rest; `None`: everywhere.
    pub dirichlet_facets: Option<std::sync::Arc<std::collections::HashSet<[u32; 4]>>>,
    /// Material regions: κ of every cell (mesh order), multiplying κ(x).
    pub kappa: Option<Arc<[f64]>>,
    /// The exact solution the L2 error is measured against; `None`: the
    /// sine solution, which holds only with κ = 1 and u = 0 on the whole
    /// boundary of the unit square or cube (otherwise the error is NaN).
    pub exact: Option<Exact>,
}

/// An exact solution u(x) (x padded to three coordinates).
#[derive(Clone)]
pub struct Exact(pub Arc<dyn Fn([f64; 3]) -> f64 + Send + Sync>);

impl std::fmt::Debug for Exact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exact(..)")
    }
}

impl PoissonOptions {
    /// The exact solution the L2 error and output files compare with: the
    /// given one, else the sine solution where it holds (κ = 1, u = 0 on
    /// the whole boundary), else none.
    pub fn exact_solution(&self, dim: usize) -> Option<Exact> {
        match &self.exact {
            Some(e) => Some(e.clone()),
            None if self.dirichlet_facets.is_none() && self.kappa.is_none() => Some(sine_solution(dim)),
            None => None,
        }
    }
}

/// Π sin(π xₐ)/(Dπ²), the exact solution of the sine problem in `dim` dimensions.
pub fn sine_solution(dim: usize) -> Exact {
    Exact(Arc::new(move |x: [f64; 3]| if dim == 2 { SinePoisson::solution([x[0], x[1]]) } else { SinePoisson::solution(x) }))
}

/// The cells with their regions' κ, if any.
fn with_regions<T: Scalar>(cd: CellData<T>, kappa: Option<&[f64]>) -> Result<CellData<T>> {
    match kappa {
        Some(k) => cd.with_kappa(k),
        None => Ok(cd),
    }
}

impl PoissonOptions {
    /// The problem on a generated box mesh; the defaults of
    /// [`on`](Self::on): CSR, eliminated boundary DOFs, Jacobi-CG to a
    /// relative residual of 10⁻¹².
    pub fn new(mesh: BoxMesh, degree: usize) -> Self {
        Self::on(MeshSource::Box(mesh), degree)
    }

    /// The problem on a given mesh (of the unit square or cube, for the
    /// exact solution to hold).
    pub fn on(mesh: MeshSource, degree: usize) -> Self {
        Self {
            mesh,
            degree,
            numbering: Numbering::Original,
            dirichlet: DirichletMode::Eliminate,
            variant: LocalVariant::Reuse,
            format: Format::Csr,
            scatter: Scatter::Atomic,
            threads_per_row: None,
            symmetric: false,
            benchmark: false,
            cg: CgOptions { rtol: 1e-12, jacobi: true, ..CgOptions::default() },
            dirichlet_facets: None,
            kappa: None,
            exact: None,
        }
    }
}

/// The outcome of one solve, as written to the JSON reports.
#[derive(Clone, Debug, Serialize)]
pub struct PoissonReport {
    /// Space dimension, 2 or 3.
    pub dim: usize,
    /// Element degree p.
    pub degree: usize,
    /// Cells of the mesh.
    pub cells: usize,
    /// Global DOFs, boundary ones included.
    pub dofs: usize,
    /// Rows of the solved system: the free DOFs when the boundary is
    /// eliminated, all of them otherwise.
    pub rows: usize,
    /// Storage of the stiffness matrix.
    pub format: Format,
    /// Order of the DOFs.
    pub numbering: Numbering,
    /// How the GPU element kernels avoid write races (the option as given;
    /// unused on the CPU).
    pub scatter: Scatter,
    /// GPU CSR: threads per row used (tuned in benchmarks).
    pub threads_per_row: Option<usize>,
    /// The backend's name (CPU threads or GPU model).
    pub backend: String,
    /// Precision of assembly and solve, `f32` or `f64`.
    pub precision: &'static str,
    /// CG iterations performed.
    pub iterations: usize,
    /// CG's final recursively updated ‖r‖/‖b‖.
    pub relative_residual: f64,
    /// ‖u_h − u‖_{L2} against the exact solution; NaN where none is known.
    pub l2_error: f64,
    /// Time of the assembly in seconds: wall time on the CPU, CUDA-event
    /// time on the GPU (host set-up excluded).
    pub assembly_seconds: f64,
    /// Time of the whole CG solve in seconds, measured the same way.
    pub solve_seconds: f64,
    /// Cells assembled per second (0 for matrix-free, which stores nothing).
    pub elements_per_second: f64,
    /// CG iterations per second of iteration time (set-up excluded; the
    /// whole solve is `solve_seconds`).
    pub cg_iterations_per_second: f64,
    /// SpMV figures, when benchmarked.
    pub spmv: Option<SpmvBench>,
    /// The solve's wall time split by stage, from the mesh to the L2
    /// error (a command adds its own stages, such as output files).
    pub stages: Vec<StageSeconds>,
    /// CG's full report, residual history included (not serialised).
    #[serde(skip)]
    pub cg: CgReport,
    /// u_h with its mesh and space (for output files).
    #[serde(skip)]
    pub field: super::field::QpField,
}

/// One SpMV measured against the copy of the same bytes in the same run.
#[derive(Clone, Debug, Serialize)]
pub struct SpmvBench {
    /// Time of one product, in seconds: the median over 20 timed batches
    /// of back-to-back products (after 3 warm-up runs) of the batch's mean.
    pub seconds: f64,
    /// Bytes the format must move at least: stored matrix and index data,
    /// x read once, y written once.
    pub bytes: usize,
    /// The paper's model (eqs. 17 and 19 generalised to D dimensions and
    /// exact counts): x read once per stored entry, no cache reuse.
    pub model_bytes: usize,
    /// Achieved bandwidth: `bytes` over `seconds`.
    pub bytes_per_second: f64,
    /// `bytes_per_second` over the device-to-device copy bandwidth.
    pub roofline_fraction: f64,
    /// Bandwidth of a device-to-device copy moving `bytes` bytes (read
    /// plus written), measured in the same run and timed alike: the
    /// roofline.
    pub copy_bytes_per_second: f64,
    /// Bytes the copy moved: `bytes` (rounded down to 16), or less where
    /// the device could not hold a second copy of them beside the operator
    /// (the copy rate is flat far below that size).
    pub copy_bytes: usize,
}

/// Receives the name of each stage of a solve as it starts, for a
/// progress display: set-up alone takes a minute at 4M DOFs of 3D Q4.
pub type Stages<'a> = crate::stages::Show<'a>;

/// Solves the problem on the CPU backend in precision `T`.
pub fn solve_cpu<T: Scalar>(cpu: &CpuBackend, opts: &PoissonOptions) -> Result<PoissonReport> {
    solve_cpu_with::<T>(cpu, opts, &StageClock::new(&|_| {}), None)
}

/// [`solve_cpu`], timing its stages on `clock`, on the space and rows
/// `ready` where [`discretise`] made them already.
pub fn solve_cpu_with<T: Scalar>(cpu: &CpuBackend, opts: &PoissonOptions, clock: &StageClock, ready: Option<(Space, Layout)>) -> Result<PoissonReport> {
    let stage = &|s: &str| clock.start(s);
    let (space, layout) = match ready {
        Some(d) => d,
        None => discretise(opts, stage)?,
    };
    stage("assembly");
    let t0 = Instant::now();
    let (op, b, (nnz, slots)) = build_operator::<T>(cpu, &space, &layout, opts.format, opts.symmetric, opts.kappa.as_deref())?;
    let assembly_seconds = t0.elapsed().as_secs_f64();
    // Benchmarks start CG from a random guess, as on the GPU.
    let mut x = if opts.benchmark { crate::conformance::values::<T>(layout.n_rows, 17) } else { vec![T::ZERO; layout.n_rows] };
    stage("CG");
    let t1 = Instant::now();
    let report = cg(cpu, &op, &b, &mut x, opts.cg)?;
    let solve_seconds = t1.elapsed().as_secs_f64();
    let bench = if opts.benchmark {
        stage("timing the product and the copy");
        let bytes = spmv_bytes::<T>(opts.format, &layout, nnz, slots, space.dim(), opts.symmetric);
        Some(bench_spmv(cpu, &*op, &x, bytes, usize::MAX)?)
    } else {
        None
    };
    drop((op, b));
    let mut r = PoissonReport::new::<T>(cpu, space, &layout, opts, cpu.name(), (report, &x, None), assembly_seconds, solve_seconds, stage);
    r.spmv = bench;
    r.stages = clock.finish();
    Ok(r)
}

/// One product of `op` at `x`, timed against a copy of the same bytes
/// (at most `max_buffer` a buffer) on the same backend: both in batches,
/// as CG issues them (on the GPU the atomic formats' zeroing launch and
/// their kernel then queue behind the previous product). `bytes`: the
/// minimum and the model bytes of the product.
fn bench_spmv<B: Backend, T: Scalar>(b: &B, op: &dyn LinearOperator<B, T>, x: &B::Vector<T>, bytes: (usize, usize), max_buffer: usize) -> Result<SpmvBench> {
    let (bytes, model_bytes) = bytes;
    let mut y = b.zeros::<T>(b.len(x))?;
    let t = crate::timing::measure_batched(b, 3, 20, SPMV_BATCH, || op.apply(b, x, &mut y))?;
    let copy = crate::roofline::copy_bandwidth_batched(b, (bytes / 2).min(max_buffer).max(8), 20, SPMV_BATCH)?;
    let bps = bytes as f64 / t.median;
    Ok(SpmvBench { seconds: t.median, bytes, model_bytes, bytes_per_second: bps, roofline_fraction: bps / copy.bytes_per_second, copy_bytes_per_second: copy.bytes_per_second, copy_bytes: copy.bytes_moved })
}

/// The space of the solve and its rows; the mesh is dropped once the
/// space holds what the kernels read of it. Needs no backend: a command
/// makes them while the GPU's context starts.
pub fn discretise(opts: &PoissonOptions, stage: Stages) -> Result<(Space, Layout)> {
    stage("mesh");
    let mesh = opts.mesh.build()?;
    stage("DOF numbering");
    let mut space = Space::tensor_numbered(&mesh, opts.degree, opts.numbering)?;
    drop(mesh);
    stage("boundary");
    if let Some(f) = &opts.dirichlet_facets {
        space.restrict_boundary(f);
    }
    let layout = Layout::new(&space, opts.dirichlet);
    Ok((space, layout))
}

/// Products per timed sample of the SpMV benchmark.
const SPMV_BATCH: usize = 10;

impl PoissonReport {
    /// The report of a solve with solution `x`: the rates derived from the
    /// times, the L2 error (`l2_error` where the device measured it, else
    /// on `cpu`) and the field for output files.
    #[allow(clippy::too_many_arguments)]
    fn new<T: Scalar>(
        cpu: &CpuBackend,
        space: Space,
        layout: &Layout,
        opts: &PoissonOptions,
        backend: String,
        (cg, x, l2_error): (CgReport, &[T], Option<f64>),
        assembly_seconds: f64,
        solve_seconds: f64,
        stage: Stages,
    ) -> Self {
        let rate = |count: usize, seconds: f64| if seconds > 0.0 { count as f64 / seconds } else { 0.0 };
        let (dim, cells) = (space.dim(), space.n_cells());
        stage("solution field");
        let field = super::field::QpField::from_rows(space, layout, x, |_| 0.0);
        let l2_error = l2_error.unwrap_or_else(|| {
            stage("L2 error");
            opts.exact_solution(dim).map_or(f64::NAN, |u| cpu.install(|| field.l2_error(u.0.as_ref())))
        });
        Self {
            dim,
            degree: opts.degree,
            cells,
            dofs: field.space.n_dofs,
            rows: layout.n_rows,
            format: opts.format,
            numbering: opts.numbering,
            scatter: opts.scatter,
            threads_per_row: None,
            backend,
            precision: T::NAME,
            iterations: cg.iterations,
            relative_residual: cg.relative_residual,
            l2_error,
            assembly_seconds,
            solve_seconds,
            elements_per_second: rate(cells, assembly_seconds),
            cg_iterations_per_second: rate(cg.iterations, cg.iteration_seconds),
            spmv: None,
            stages: Vec::new(),
            cg,
            field,
        }
    }
}

/// (minimum bytes, model bytes) of one SpMV of `op` in `format`.
fn spmv_bytes<T: Scalar>(format: Format, layout: &Layout, nnz: usize, slots: usize, dim: usize, symmetric: bool) -> (usize, usize) {
    format_bytes(format, T::BYTES, layout.n_rows, layout.n_cells(), layout.dofs_per_cell, nnz, slots, dim, symmetric)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(opts: impl Fn(usize) -> PoissonOptions, levels: &[usize]) -> (Vec<f64>, f64) {
        let cpu = CpuBackend::new(None).unwrap();
        let errs: Vec<f64> = levels
            .iter()
            .map(|&n| {
                let r = solve_cpu::<f64>(&cpu, &opts(n)).unwrap();
                assert!(r.cg.converged, "CG did not converge at n={n}: {}", r.relative_residual);
                r.l2_error
            })
            .collect();
        let k = levels.len() - 1;
        let order = (errs[k - 1] / errs[k]).ln() / (levels[k] as f64 / levels[k - 1] as f64).ln();
        (errs, order)
    }

    /// L2 error converges at order p + 1 in 2D (p = 1..4 and 6) and 3D
    /// (p = 1..3).
    #[test]
    fn l2_convergence_order_p_plus_1() {
        for (dim, p, levels) in [
            (2, 1, vec![8, 16, 32]),
            (2, 2, vec![4, 8, 16]),
            (2, 3, vec![4, 8]),
            (2, 4, vec![2, 4]),
            (2, 6, vec![2, 4]),
            (3, 1, vec![4, 8]),
            (3, 2, vec![3, 6]),
            (3, 3, vec![2, 4]),
        ] {
            let (errs, order) = rate(|n| PoissonOptions::new(BoxMesh::structured(dim, n), p), &levels);
            eprintln!("structured dim={dim} p={p}: errors {errs:?}, order {order:.3}");
            assert!((order - (p + 1) as f64).abs() < 0.2, "dim={dim} p={p}: errors {errs:?}, order {order:.3}");
        }
    }

    /// u = g(x) Π_{a>0} sin πx_a for −∇·(κ∇u) = Π sin πx_a with κ₁ left
    /// of x = ½ and κ₂ right of it: on each side g = sin πx /(κDπ²) plus
    /// a solution of g'' = (D−1)π² g, chosen so that g(0) = g(1) = 0 and
    /// g and the flux κg' are continuous at ½.
    fn layered(dim: usize, k1: f64, k2: f64, x: [f64; 3]) -> f64 {
        let pi = std::f64::consts::PI;
        let (c, m) = (dim as f64 * pi * pi, pi * ((dim - 1) as f64).sqrt());
        let b1 = (1.0 / k2 - 1.0 / k1) / (c * (m / 2.0).sinh() * (1.0 + k1 / k2));
        let g = if x[0] <= 0.5 { (pi * x[0]).sin() / (k1 * c) + b1 * (m * x[0]).sinh() } else { (pi * x[0]).sin() / (k2 * c) - k1 / k2 * b1 * (m * (1.0 - x[0])).sinh() };
        g * (1..dim).map(|a| (pi * x[a]).sin()).product::<f64>()
    }

    fn two_materials(dim: usize, n: usize, p: usize, format: Format, k1: f64, k2: f64) -> PoissonOptions {
        let mesh = BoxMesh::structured(dim, n).build().unwrap();
        let kappa: Arc<[f64]> = (0..mesh.n_cells()).map(|c| if mesh.centroid(c)[0] < 0.5 { k1 } else { k2 }).collect();
        let mut o = PoissonOptions::on(MeshSource::Given(Arc::new(mesh)), p);
        o.format = format;
        o.kappa = Some(kappa);
        o.exact = Some(Exact(Arc::new(move |x| layered(dim, k1, k2, x))));
        o
    }

    /// Material regions: the layered solution is reached at order p + 1
    /// (cells aligned with the interface), through every way κ enters
    /// (element matrices for CSR/ELLPACK/LMA, the recomputed product of
    /// matrix-free); without its exact solution the error is not reported.
    #[test]
    fn material_regions_converge_to_the_layered_solution() {
        for (dim, p, levels, format) in [
            (2, 1, vec![8, 16], Format::Csr),
            (2, 2, vec![4, 8], Format::Lma),
            (2, 3, vec![4, 8], Format::MatrixFree),
            (3, 2, vec![2, 4], Format::Ell),
        ] {
            let (errs, order) = rate(|n| two_materials(dim, n, p, format, 1.0, 20.0), &levels);
            eprintln!("two materials dim={dim} p={p} {format:?}: errors {errs:?}, order {order:.3}");
            assert!((order - (p + 1) as f64).abs() < 0.25, "dim={dim} p={p}: errors {errs:?}, order {order:.3}");
        }
        // The jump matters: the solution differs from the one-material one
        // by far more than the discretisation error.
        let cpu = CpuBackend::new(None).unwrap();
        let mut o = two_materials(2, 8, 2, Format::Csr, 1.0, 20.0);
        let with = solve_cpu::<f64>(&cpu, &o).unwrap();
        o.exact = Some(Exact(Arc::new(|x| layered(2, 1.0, 1.0, x))));
        assert!(solve_cpu::<f64>(&cpu, &o).unwrap().l2_error > 100.0 * with.l2_error);
        o.exact = None;
        assert!(solve_cpu::<f64>(&cpu, &o).unwrap().l2_error.is_nan());
        o.kappa = Some(vec![1.0; 3].into());
        assert!(solve_cpu::<f64>(&cpu, &o).unwrap_err().to_string().contains("3 material factors for 64 cells"));
        o.kappa = Some(vec![-1.0; 64].into());
        assert!(solve_cpu::<f64>(&cpu, &o).unwrap_err().to_string().contains("positive"));
    }

    /// Every format's product equals the CSR product (to rounding), on
    /// structured and unstructured meshes, in both Dirichlet modes.
    #[test]
    fn every_format_matches_csr() {
        let cpu = CpuBackend::new(None).unwrap();
        for (dim, p) in [(2, 1), (2, 3), (2, 6), (3, 1), (3, 2), (3, 4)] {
            for mesh in [BoxMesh::structured(dim, 3), BoxMesh::unstructured(dim, 3, 21)] {
                let mesh = mesh.build().unwrap();
                let space = Space::tensor(&mesh, p).unwrap();
                for mode in [DirichletMode::Eliminate, DirichletMode::Zero] {
                    let layout = Layout::new(&space, mode);
                    let x = crate::conformance::values::<f64>(layout.n_rows, 3);
                    let mut want = vec![0.0; layout.n_rows];
                    let (csr, b0, _) = build_operator::<f64>(&cpu, &space, &layout, Format::Csr, false, None).unwrap();
                    csr.apply(&cpu, &x, &mut want).unwrap();
                    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                    // Redundant compute costs nb²·nq^D geometry evaluations
                    // per cell: checked where that stays cheap.
                    let variants: &[LocalVariant] = if space.nb() > 64 { &[LocalVariant::Reuse] } else { &[LocalVariant::Reuse, LocalVariant::Redundant] };
                    for format in Format::ALL {
                        for &variant in variants {
                            let (op, b, _) = build_operator::<f64>(&cpu, &space, &layout, format, variant == LocalVariant::Redundant, None).unwrap();
                            let mut got = vec![0.0; layout.n_rows];
                            op.apply(&cpu, &x, &mut got).unwrap();
                            let err = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                            assert!(err <= 1e-12 * scale, "{format:?} {variant:?} dim={dim} p={p} {mode:?}: max error {err:e}");
                            let berr = b.iter().zip(&b0).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                            assert!(berr <= 1e-14, "load vector differs: {berr:e}");
                            let (d, d0) = (op.diagonal(&cpu).unwrap(), csr.diagonal(&cpu).unwrap());
                            assert!(d.iter().zip(&d0).all(|(a, b)| (a - b).abs() <= 1e-12 * scale), "{format:?} diagonal");
                        }
                    }
                }
            }
        }
    }

    /// One Q1 cell with its boundary eliminated leaves no unknowns: every
    /// format builds and applies as the empty operator, and still rejects
    /// vectors of the wrong length.
    #[test]
    fn every_format_handles_a_system_without_unknowns() {
        let cpu = CpuBackend::new(None).unwrap();
        let mesh = BoxMesh::structured(2, 1).build().unwrap();
        let space = Space::tensor(&mesh, 1).unwrap();
        let layout = Layout::new(&space, DirichletMode::Eliminate);
        assert_eq!(layout.n_rows, 0);
        for format in Format::ALL {
            let (op, b, _) = build_operator::<f64>(&cpu, &space, &layout, format, false, None).unwrap();
            assert!(b.is_empty());
            op.apply(&cpu, &Vec::new(), &mut Vec::new()).unwrap();
            let err = op.apply(&cpu, &vec![1.0], &mut Vec::new()).unwrap_err();
            assert!(matches!(err, crate::Error::LengthMismatch { left: 1, right: 0, .. }), "{format:?}: {err}");
        }
    }

    #[test]
    fn lazy_ell_consolidates_to_the_csr_ellpack() {
        let cpu = CpuBackend::new(None).unwrap();
        let mesh = BoxMesh::unstructured(2, 4, 2).build().unwrap();
        let space = Space::tensor(&mesh, 2).unwrap();
        let layout = Layout::new(&space, DirichletMode::Zero);
        let cd = CellData::<f64>::new(&space, &layout);
        let elems = elements::assemble(&cpu, &cd, false).unwrap();
        let lazy = LazyEll::assemble(&cd, &elems);
        let ell = Ell::from_csr(&Csr::assemble(&cpu, &layout, &elems).unwrap());
        let merged = lazy.consolidate();
        assert!(lazy.0.width > ell.width, "lazy rows keep repeated columns");
        assert_eq!((merged.width, &merged.col), (ell.width, &ell.col));
        assert!(merged.val.iter().zip(&ell.val).all(|(a, b)| (a - b).abs() < 1e-13));
    }

    /// The same on perturbed, shuffled, rotated meshes (same random
    /// perturbation pattern at each level, so the rate is meaningful).
    #[test]
    fn l2_convergence_on_unstructured_meshes() {
        for (dim, p, levels) in [(2, 2, vec![8, 16]), (2, 3, vec![4, 8]), (3, 2, vec![3, 6])] {
            let (errs, order) = rate(
                |n| PoissonOptions { format: Format::Lma, numbering: Numbering::BlockedAligned, ..PoissonOptions::new(BoxMesh::unstructured(dim, n, 7), p) },
                &levels,
            );
            eprintln!("unstructured dim={dim} p={p}: errors {errs:?}, order {order:.3}");
            assert!((order - (p + 1) as f64).abs() < 0.2, "dim={dim} p={p}: errors {errs:?}, order {order:.3}");
        }
    }
}

