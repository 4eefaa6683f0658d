//! `fem solve`: the Poisson problem of Reguly & Giles on a chosen format,
//! scatter, backend and precision.

use fem_host::mesh::BoxMesh;
use fem_host::problem::poisson::{solve_cpu_with, solve_cuda_with, PoissonOptions, PoissonReport};
use fem_host::space::{Layout, Space};
use fem_host::stages::StageClock;
use fem_host::{with_backend, AnyBackend, CpuBackend, Result};

/// Runs the solve on the backend `any` in `f32` or `f64`.
pub fn run(any: &AnyBackend, opts: &PoissonOptions, f32: bool) -> Result<PoissonReport> {
    run_with(any, opts, f32, &StageClock::new(&|_| {}), None)
}

/// [`run`], timing the solve's stages on `clock`, on the space and rows
/// `ready` where [`fem_host::problem::poisson::discretise`] made them
/// already.
pub fn run_with(any: &AnyBackend, opts: &PoissonOptions, f32: bool, clock: &StageClock, ready: Option<(Space, Layout)>) -> Result<PoissonReport> {
    let cpu = CpuBackend::new(None)?;
    match (any, f32) {
        (AnyBackend::Cpu(c), false) => solve_cpu_with::<f64>(c, opts, clock, ready),
        (AnyBackend::Cpu(c), true) => solve_cpu_with::<f32>(c, opts, clock, ready),
        (AnyBackend::Cuda(g), false) => solve_cuda_with::<f64>(g, &cpu, opts, clock, ready),
        (AnyBackend::Cuda(g), true) => solve_cuda_with::<f32>(g, &cpu, opts, clock, ready),
    }
}

/// The mesh of the command line: `cells` per direction, structured or not.
pub fn mesh(dim: usize, cells: usize, unstructured: bool, seed: u64) -> BoxMesh {
    if unstructured {
        BoxMesh::unstructured(dim, cells, seed)
    } else {
        BoxMesh::structured(dim, cells)
    }
}

/// Cells per direction giving about `dofs` DOFs for Q_p in `dim` dimensions.
pub fn cells_for_dofs(dim: usize, degree: usize, dofs: usize) -> usize {
    (((dofs as f64).powf(1.0 / dim as f64) - 1.0) / degree as f64)
        .round()
        .max(1.0) as usize
}

/// Text form of a report.
pub fn describe(r: &PoissonReport) -> String {
    let mut s = format!(
        "Q{} in {}D: {} cells, {} DOFs ({} rows), format {:?}, {} on {}\n",
        r.degree, r.dim, r.cells, r.dofs, r.rows, r.format, r.precision, r.backend
    );
    s += &format!(
                "assembly {:.3} s ({:.3e} elements/s), CG {} iterations in {:.3} s ({:.1} it/s), relative residual {:.2e}\n",
                r.assembly_seconds, r.elements_per_second, r.iterations, r.solve_seconds, r.cg_iterations_per_second, r.relative_residual
            );
    if let Some(b) = &r.spmv {
        s += &format!(
                    "SpMV {:.1} µs, {:.1} GB/s = {:.3} of the copy roofline ({:.1} GB/s); bytes {} (paper model {})\n",
                    b.seconds * 1e6, b.bytes_per_second / 1e9, b.roofline_fraction, b.copy_bytes_per_second / 1e9, b.bytes, b.model_bytes
                );
        if (b.copy_bytes as f64) < 0.99 * b.bytes as f64 {
            s += &format!("(the copy moved {} bytes: a copy of all the product's bytes does not fit beside the matrix)\n", b.copy_bytes);
        }
    }
    s += &format!("L2 error {:.3e}", r.l2_error);
    s
}

/// Runs the hole benchmark on the backend `any`.
pub fn run_hole(any: &AnyBackend, opts: &fem_host::problem::hole::HoleOptions) -> Result<fem_host::problem::hole::HoleReport> {
    run_hole_with(any, opts, &StageClock::new(&|_| {}))
}

/// [`run_hole`], timing its stages on `clock`.
pub fn run_hole_with(any: &AnyBackend, opts: &fem_host::problem::hole::HoleOptions, clock: &StageClock) -> Result<fem_host::problem::hole::HoleReport> {
    let cpu = CpuBackend::new(None)?;
    with_backend!(any, |b| fem_host::problem::hole::solve_with(b, &cpu, opts, clock))
}

/// Text form of AMG's report: the hierarchy, its complexities and where
/// its set-up time went.
pub fn describe_amg(a: &fem_host::problem::nonlinear::AmgReport) -> String {
    let l = &a.last;
    let s = &l.seconds;
    format!(
        "AMG: {} level{} ({} rows), operator complexity {:.2}, grid complexity {:.2}; {} build{} in {:.3} s (strength {:.3}, aggregation {:.3}, tentative {:.3}, smoothing {:.3}, Galerkin {:.3}, upload {:.3})",
        l.levels.len(),
        if l.levels.len() == 1 { "" } else { "s" },
        l.levels.iter().map(|v| v.rows.to_string()).collect::<Vec<_>>().join(" → "),
        l.operator_complexity,
        l.grid_complexity,
        a.builds,
        if a.builds == 1 { "" } else { "s" },
        a.setup_seconds,
        s.strength,
        s.aggregation,
        s.tentative,
        s.smoothing,
        s.galerkin,
        s.upload
    )
}

/// Text form of a hole report.
pub fn describe_hole(r: &fem_host::problem::hole::HoleReport) -> String {
    let amg = r.amg.as_ref().map_or(String::new(), |a| format!("\n{}", describe_amg(a)));
    format!(
        "hole {}D Q{}: {} levels, {} cells, {} DOFs, {} nonzeros; {:?} + {:?}{} ({:?} ordering), {} on {}\n{} iterations in {} linear solve{} to {:.2e}{}, set-up {:.3} s, operators and preconditioner {:.3} s, solve {:.3} s",
        r.dim,
        r.degree,
        r.levels,
        r.cells,
        r.dofs,
        r.nnz,
        r.solver,
        r.precond,
        r.cycle.map_or(String::new(), |c| format!(" {c:?}-cycle, {} smoothing steps", r.smoothing_steps.unwrap_or(0))),
        r.ordering,
        r.precision,
        r.backend,
        r.iterations,
        r.updates,
        if r.updates == 1 { "" } else { "s" },
        r.relative_residual,
        if r.stalled { format!(", stalled: the residual stopped falling at the floor of {} (ask less of --rtol)", r.precision) } else { String::new() },
        r.setup_seconds,
        r.assembly_seconds,
        r.solve_seconds
    ) + &amg
}
