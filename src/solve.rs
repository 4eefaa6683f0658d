//! `fem solve`: the Poisson problem of Reguly & Giles on a chosen format,
//! scatter, backend and precision.

use fem_host::mesh::BoxMesh;
use fem_host::problem::poisson::{solve_cpu, solve_cuda, PoissonOptions, PoissonReport};
use fem_host::{AnyBackend, CpuBackend, Result};

/// Runs the solve on the backend `any` in `f32` or `f64`.
pub fn run(any: &AnyBackend, opts: &PoissonOptions, f32: bool) -> Result<PoissonReport> {
    let cpu = CpuBackend::new(None)?;
    match (any, f32) {
        (AnyBackend::Cpu(c), false) => solve_cpu::<f64>(c, opts),
        (AnyBackend::Cpu(c), true) => solve_cpu::<f32>(c, opts),
        (AnyBackend::Cuda(g), false) => solve_cuda::<f64>(g, &cpu, opts),
        (AnyBackend::Cuda(g), true) => solve_cuda::<f32>(g, &cpu, opts),
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
    }
    s += &format!("L2 error {:.3e}", r.l2_error);
    s
}
