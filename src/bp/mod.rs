//! `fem bp`: the CEED benchmark problems BP1.0, BP3.5 and BP3.0 on a
//! high-order hexahedral mesh of the unit cube: the operator's throughput
//! on the chosen backend against the copy of the bytes it must move, its
//! error against the CPU reference, and optionally a solve of the
//! screened Poisson problem with the assembled matrix-free operator
//! ([`solve`]: CG with Jacobi or p-multigrid).

use fem_host::mesh::spectral::{cells_for, cells_for_dofs, Deformation, SpectralBox};
use fem_host::operator::tensor::gpu::{Column, GpuTensor};
use fem_host::operator::tensor::tuning::{self, BpLaunch, UserLaunch};
use fem_host::tune::{Outcome, SearchOptions, Tuning};
use fem_host::operator::tensor::{Problem, TensorOperator};
use fem_host::operator::LinearOperator;
use fem_host::roofline::{best_copy_bandwidth_cycled, cold_sets, copy_bandwidth, CopyBandwidth};
use fem_host::sparse::bench::test_vector;
use fem_host::timing::{batch_for, measure, measure_batched, warm_up, REFERENCE_WARMUP_SECONDS};
use fem_host::{AnyBackend, Backend, CpuBackend, CudaBackend, Error, Result};
use fem_kernels::tensor::BpKernel;

pub mod across;
pub mod physics;
pub mod solve;
pub use solve::{BpPmg, PmgLevels, SolveReport};
use serde::Serialize;

/// What to run.
#[derive(Clone, Debug)]
pub struct BpOptions {
    /// BP1.0 (mass), BP3.5 or BP3.0 (screened Poisson).
    pub problem: Problem,
    /// Polynomial degree N of the hexahedral elements.
    pub degree: usize,
    /// Mesh size: a number of elements, or at least this many element DOFs.
    pub size: Size,
    /// How the grid of the unit cube is deformed (affine, trilinear, curved).
    pub deformation: Deformation,
    /// The screening parameter λ of BP3.
    pub lambda: f64,
    /// The parts of the GPU launch the user named (variant, elements per
    /// block, register budget, column); the rest from the tuning file,
    /// else the defaults.
    pub launch: UserLaunch,
    /// Timed applications; the median is reported.
    pub repeats: usize,
    /// Apply on L-vectors (gather and atomic scatter fused) rather than
    /// E-vectors.
    pub assembled: bool,
    /// Also time the CPU backend on the same operator.
    pub cpu_time: bool,
    /// Solve the screened Poisson problem to this relative residual.
    pub solve: Option<f64>,
    /// Precondition the solve's CG with p-multigrid instead of Jacobi.
    pub p_multigrid: Option<solve::BpPmg>,
    /// Time every launch (variant, elements per block) first and keep the
    /// fastest in the tuning file.
    pub tune: bool,
    /// Whether the GPU's timed applications and their copy reference find
    /// their data out of L2 or left there by the one before.
    pub l2: L2,
}

/// Where a timed application on the GPU finds its data.
///
/// The paper's roofline is the DRAM copy: on its GPUs (an L2 of a few
/// MB) both the operator and the copy of its bytes stream from DRAM at
/// every size it measures. An H100's 50 MB L2 holds whole working sets
/// of up to about a million DOFs, and then a copy repeated over the same
/// buffers runs from L2 at up to 1.4 times its DRAM rate while an
/// operator bound by its arithmetic does not, so a warm fraction says
/// how the operator compares with L2, not with the paper's roofline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum L2 {
    /// Operator and copy each cycle through enough copies of their data
    /// ([`cold_sets`]) that every application reads and writes DRAM.
    Cold,
    /// Every application on the same data, as a solver applies it.
    Warm,
}

/// How big a mesh to build.
#[derive(Clone, Copy, Debug)]
pub enum Size {
    /// This many elements, factored into a grid as close to a cube as
    /// possible.
    Elements(usize),
    /// The smallest near-cubic grid with at least this many element-local
    /// nodes.
    Dofs(usize),
}

/// The results of one benchmark run, as printed and written to JSON.
#[derive(Clone, Debug, Serialize)]
pub struct BpReport {
    /// The benchmark problem.
    pub problem: Problem,
    /// Polynomial degree N.
    pub degree: usize,
    /// Hexahedral elements in the mesh.
    pub elements: usize,
    /// Unknowns the operator acts on: element nodes (E-vector) or global
    /// nodes (assembled).
    pub dofs: usize,
    /// Element-local nodes, elements · (N + 1)³: the E-vector length.
    pub element_dofs: usize,
    /// Distinct mesh nodes: the L-vector length.
    pub global_nodes: usize,
    /// Whether the operator was applied on L-vectors (see
    /// [`BpOptions::assembled`]).
    pub assembled: bool,
    /// The backend that ran it, as it describes itself (device, threads).
    pub backend: String,
    /// The GPU kernel variant used, or `cpu-sum-factorised`.
    pub kernel: String,
    /// Elements per thread block of the launch (1 on the CPU).
    pub elements_per_block: usize,
    /// The launch's register budget in resident warps per SM (0: the
    /// compiler's choice, and on the CPU).
    pub min_warps: usize,
    /// Where BP3.5's line kernel kept a thread's column (absent for the
    /// other kernels and on the CPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<Column>,
    /// Slices ahead of the shared ring through which BP3.5's line kernel
    /// read the geometric factors (0: through registers, and on the CPU).
    pub ring: usize,
    /// Whether the kernel recomputed the geometric factors at each point
    /// from the elements' corners instead of reading them (`--factors`).
    pub recomputed_factors: bool,
    /// The tuning entry the launch came from (the user's file or the
    /// device's shipped seed; maybe tuned for a nearby mesh size), absent
    /// for the built-in default, a launch named on the command line, and
    /// on the CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_tuned_for: Option<String>,
    /// Median wall time of one operator application, in seconds.
    pub seconds_per_apply: f64,
    /// Applications timed back to back per repeat (each repeat lasts at
    /// least a millisecond on the GPU); the copy reference is timed alike.
    pub applications_per_repeat: usize,
    /// `dofs` processed per second, in 10⁹.
    pub gdofs_per_second: f64,
    /// Floating-point rate by the model's flop count, in TFLOP/s.
    pub tflops: f64,
    /// The paper's model: bytes per application (Table 2).
    pub bytes_moved: usize,
    /// `bytes_moved` per application over its time, in GB/s.
    pub gbytes_per_second: f64,
    /// Copy of the same bytes, measured in the same run.
    pub copy_gbytes_per_second: f64,
    /// Which copy set the roofline: `memcpy` (the driver's) or `kernel`
    /// (fem's copy kernel, faster for small buffers; the GPU takes the
    /// faster of the two).
    pub copy_method: &'static str,
    /// `gbytes_per_second` over `copy_gbytes_per_second` (1 = at the roofline).
    pub roofline_fraction: f64,
    /// On the GPU, whether the timed applications and the copy found their
    /// data out of L2 ([`BpOptions::l2`]); absent on the CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2: Option<L2>,
    /// Copies of the operator's data (and of the copy's buffers) the timed
    /// applications cycled through: more than 1 where a cold L2 needs it.
    pub data_copies: usize,
    /// Flops per byte of the model.
    pub arithmetic_intensity: f64,
    /// max |y − y_cpu| / max |y_cpu| (0 on the CPU backend).
    pub max_rel_error_vs_cpu: f64,
    /// The CPU backend's time per application, when asked for
    /// ([`BpOptions::cpu_time`]).
    pub cpu_seconds_per_apply: Option<f64>,
    /// `cpu_seconds_per_apply / seconds_per_apply`, when the CPU was timed.
    pub speedup_vs_cpu: Option<f64>,
    /// The Jacobi-CG solve, when one was asked for ([`BpOptions::solve`]).
    pub solve: Option<SolveReport>,
    /// The launch's search, when tuning.
    pub tuned: Option<Outcome<BpLaunch>>,
}

/// The solve's name in the progress line.
fn solver_name(o: &BpOptions) -> &'static str {
    if o.p_multigrid.is_some() {
        "p-multigrid CG"
    } else {
        "Jacobi-CG"
    }
}

/// Elements per direction of the options' size.
fn size_cells(o: &BpOptions) -> Result<[usize; 3]> {
    match o.size {
        Size::Elements(e) => cells_for(e),
        Size::Dofs(d) => Ok(cells_for_dofs(d, o.degree)),
    }
}

/// Builds the mesh and operator and runs the benchmark on `backend`, with
/// the launch from `tuning` unless the options fix it (and into `tuning`
/// when tuning).
pub fn run(o: &BpOptions, backend: &AnyBackend, tuning: &mut Tuning, progress: &dyn Fn(&str, Option<(usize, usize)>)) -> Result<BpReport> {
    let cells = size_cells(o)?;
    progress("mesh and geometric factors", None);
    let mesh = SpectralBox::new(o.degree, cells, o.deformation)?;
    let op = TensorOperator::new(o.problem, &mesh, o.lambda)?;
    let x = test_vector(op.element_dofs(), 7);
    let mut report = match backend {
        AnyBackend::Cuda(gpu) => gpu_report(o, gpu, &op, &mesh, &x, tuning, progress)?,
        AnyBackend::Cpu(c) => {
            let mut report = cpu_run(o, c, &op, &x)?;
            if o.tune {
                return Err(Error::InvalidArgument("the BP launch is tuned on the CUDA backend (the CPU backend has no launch to tune)".into()));
            }
            if let Some(rtol) = o.solve {
                progress(solver_name(o), None);
                report.solve = Some(match &o.p_multigrid {
                    Some(pmg) => solve::p_multigrid(c, &op, &op, &mesh, o, pmg, rtol)?,
                    None => solve::jacobi(c, &op, &op, &mesh, rtol, mesh.n_nodes)?,
                });
            }
            report
        }
    };
    report.global_nodes = mesh.n_nodes;
    Ok(report)
}

/// The GPU run: error against the CPU reference, timing, optionally the
/// CPU backend's time and the solve, all with one upload of the operator.
fn gpu_report(o: &BpOptions, gpu: &CudaBackend, op: &TensorOperator, mesh: &SpectralBox, x: &[f64], tuning: &mut Tuning, progress: &dyn Fn(&str, Option<(usize, usize)>)) -> Result<BpReport> {
    let cpu = CpuBackend::new(None)?;
    let mut reference = vec![0.0; op.element_dofs()];
    progress("CPU reference", None);
    cpu.install(|| op.apply_elements(x, &mut reference))?;
    let key = tuning::signature(o.problem, o.degree, op.elements, o.assembled);
    let launch = tuning::resolve(o.problem, o.degree, op.elements, o.assembled, &o.launch, tuning);
    let mut t = GpuTensor::with_launch(gpu, op, launch)?;
    let tuned = if o.tune {
        let so = SearchOptions { prune: f64::INFINITY };
        let out = tuning::tune(gpu, &mut t, o.assembled, o.repeats.clamp(1, 10), &so, |i, n, _| progress("tuning the launch", Some((i, n))))?;
        tuning.record(&key, &out);
        Some(out)
    } else {
        None
    };
    let mut report = gpu_run(o, gpu, &t, x, &reference, &|m| progress(m, None))?;
    report.tuned = tuned;
    report.launch_tuned_for = if o.tune || o.launch.names_any() { None } else { tuning::tuned_launch(o.problem, o.degree, op.elements, o.assembled, tuning).map(|(_, key)| key) };
    if o.cpu_time {
        progress("timing the CPU backend", None);
        let s = cpu_run(o, &cpu, op, x)?.seconds_per_apply;
        report.cpu_seconds_per_apply = Some(s);
        report.speedup_vs_cpu = Some(s / report.seconds_per_apply);
    }
    if let Some(rtol) = o.solve {
        progress(solver_name(o), None);
        report.solve = Some(match &o.p_multigrid {
            Some(pmg) => solve::p_multigrid(gpu, &t, op, mesh, o, pmg, rtol)?,
            None => solve::jacobi(gpu, &t, op, mesh, rtol, mesh.n_nodes)?,
        });
    }
    Ok(report)
}

fn gpu_run(o: &BpOptions, gpu: &CudaBackend, t: &GpuTensor, x: &[f64], reference: &[f64], progress: &dyn Fn(&str)) -> Result<BpReport> {
    let op = t.op;
    progress("GPU operator");
    let xd = gpu.upload(x)?;
    let mut yd = gpu.zeros::<f64>(op.element_dofs())?;
    t.apply_elements(&xd, &mut yd)?;
    let y = gpu.download(&yd)?;
    let err = max_rel_error(&y, reference);
    let kernel = format!("{:?}", t.kernel);
    let sets = match o.l2 {
        L2::Cold => cold_sets(bytes_moved(o, op, t.recomputes), gpu.props().l2_cache_bytes as usize),
        L2::Warm => 1,
    };
    let replicas = (1..sets).map(|_| t.replica()).collect::<Result<Vec<_>>>()?;
    let ts: Vec<&GpuTensor> = std::iter::once(t).chain(&replicas).collect();
    let n = if o.assembled { op.restriction.rows() } else { op.element_dofs() };
    let xs = (0..sets).map(|_| gpu.upload(&test_vector(n, 7))).collect::<Result<Vec<_>>>()?;
    let mut ys = (0..sets).map(|_| gpu.zeros::<f64>(n)).collect::<Result<Vec<_>>>()?;
    let mut next = 0;
    let (seconds, batch) = timed(gpu, o.repeats, || {
        let k = next % sets;
        next += 1;
        if o.assembled {
            ts[k].apply(gpu, &xs[k], &mut ys[k])
        } else {
            ts[k].apply_elements(&xs[k], &mut ys[k])
        }
    })?;
    drop((replicas, xs, ys));
    let mut r = finish(o, gpu, op, seconds, &|b, repeats| best_copy_bandwidth_cycled(gpu, b, repeats, batch, sets), err, kernel, (t.elements_per_block, t.recomputes))?;
    r.applications_per_repeat = batch;
    r.l2 = Some(o.l2);
    r.data_copies = sets;
    r.min_warps = t.min_warps;
    r.column = (t.kernel == BpKernel::CollocatedLines).then_some(t.column);
    r.ring = t.ring;
    Ok(r)
}

/// max |y − reference| / max |reference|: a product's error against the
/// CPU backend's.
fn max_rel_error(y: &[f64], reference: &[f64]) -> f64 {
    let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    y.iter().zip(reference).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / scale
}

/// Median seconds of one application after a warm-up, timed in batches
/// of at least a millisecond back to back (as a solver issues them), and
/// the batch, which the copy reference is then timed with.
fn timed(gpu: &CudaBackend, repeats: usize, mut apply: impl FnMut() -> Result<()>) -> Result<(f64, usize)> {
    let batch = batch_for(warm_up(gpu, REFERENCE_WARMUP_SECONDS, &mut apply)?);
    Ok((measure_batched(gpu, 2, repeats, batch, apply)?.median, batch))
}

fn cpu_run(o: &BpOptions, cpu: &CpuBackend, op: &TensorOperator, x: &[f64]) -> Result<BpReport> {
    let mut y = vec![0.0; op.element_dofs()];
    let repeats = o.repeats.clamp(1, 5);
    let seconds = if o.assembled {
        let n = op.restriction.rows();
        let xl = test_vector(n, 7);
        let mut yl = vec![0.0; n];
        measure(cpu, 1, repeats, || op.apply(cpu, &xl, &mut yl))?.median
    } else {
        measure(cpu, 1, repeats, || cpu.install(|| op.apply_elements(x, &mut y)))?.median
    };
    finish(o, cpu, op, seconds, &|b, repeats| copy_bandwidth(cpu, b, repeats), 0.0, "cpu-sum-factorised".into(), (1, false))
}

/// Bytes, rates and the copy roofline (`copy` of a buffer of the given
/// bytes, timed the given number of times) for a measured time, by a
/// kernel with `epb` elements per block that recomputed the geometric
/// factors or not.
#[allow(clippy::too_many_arguments)]
fn finish<B: Backend>(o: &BpOptions, b: &B, op: &TensorOperator, seconds: f64, copy: &dyn Fn(usize, usize) -> Result<CopyBandwidth>, err: f64, kernel: String, (epb, recomputed): (usize, bool)) -> Result<BpReport> {
    let e = op.elements;
    let n = op.restriction.rows();
    let bytes = bytes_moved(o, op, recomputed);
    let dofs = if o.assembled { n } else { op.element_dofs() };
    let copy = copy(bytes / 2, o.repeats.clamp(3, 20))?;
    let flops = e as f64 * o.problem.flops_per_element(op.degree);
    Ok(BpReport {
        problem: o.problem,
        degree: op.degree,
        elements: e,
        dofs,
        element_dofs: op.element_dofs(),
        global_nodes: n,
        assembled: o.assembled,
        backend: b.name(),
        kernel,
        elements_per_block: epb,
        min_warps: 0,
        column: None,
        ring: 0,
        recomputed_factors: recomputed,
        launch_tuned_for: None,
        seconds_per_apply: seconds,
        applications_per_repeat: 1,
        gdofs_per_second: dofs as f64 / seconds / 1e9,
        tflops: flops / seconds / 1e12,
        bytes_moved: bytes,
        gbytes_per_second: bytes as f64 / seconds / 1e9,
        copy_gbytes_per_second: copy.bytes_per_second / 1e9,
        copy_method: copy.method,
        roofline_fraction: bytes as f64 / seconds / copy.bytes_per_second,
        l2: None,
        data_copies: 1,
        arithmetic_intensity: flops / bytes as f64,
        max_rel_error_vs_cpu: err,
        cpu_seconds_per_apply: None,
        speedup_vs_cpu: None,
        solve: None,
        tuned: None,
    })
}

/// The bytes an application must move (the paper's Table 2): with
/// `assembled`, the map instead of the E-vectors, x read, y zeroed and
/// updated.
fn bytes_moved(o: &BpOptions, op: &TensorOperator, recomputed: bool) -> usize {
    // recomputed, the factors (7 values a point, BP1's one) become 24
    // corner coordinates an element
    let factors = match recomputed {
        true => o.problem.factor_bytes_per_element(op.degree) - 8 * 24,
        false => 0,
    };
    let bytes = op.elements * (o.problem.bytes_per_element(op.degree) - factors);
    if o.assembled {
        bytes - 16 * op.element_dofs() + 4 * op.element_dofs() + 24 * op.restriction.rows()
    } else {
        bytes
    }
}

/// Writes the solve's u_h, the exact solution and the error on Lagrange
/// hexahedra of order N (the elements' own nodes resampled), whole or not
/// at all.
pub fn write_vtk(o: &BpOptions, solve: &SolveReport, path: &std::path::Path, enc: fem_host::io::vtk::Encoding) -> Result<()> {
    use fem_host::io::vtk::Field;
    let mesh = SpectralBox::new(o.degree, size_cells(o)?, o.deformation)?;
    let (mut nodes, mut w) = (vec![0.0; o.degree + 1], vec![0.0; o.degree + 1]);
    fem_core::quadrature::gauss_lobatto(&mut nodes, &mut w);
    let np = mesh.nodes_per_element();
    let coords: Vec<[f64; 3]> = (0..mesh.map.len()).map(|pos| [0, 1, 2].map(|c| mesh.coords[((pos / np) * 3 + c) * np + pos % np])).collect();
    let grid = fem_host::io::vtk_lagrange::LagrangeGrid::new(3, &nodes, &coords)?;
    let u = grid.resample(&mesh.map.iter().map(|&g| solve.u[g as usize]).collect::<Vec<_>>())?;
    let ue: Vec<f64> = grid.points.iter().map(|&x| solve::exact(x)).collect();
    let err: Vec<f64> = u.iter().zip(&ue).map(|(a, b)| a - b).collect();
    grid.write(path, &[Field { name: "u", values: &u }, Field { name: "u_exact", values: &ue }, Field { name: "error", values: &err }], &[], enc)?;
    Ok(())
}
