//! Solve −Δu = sin πx sin πy on a Gmsh mesh of the unit square with Q2
//! elements and write the solution for ParaView (Lagrange cells of order 2).
//!
//!     cargo run --release --example gmsh_poisson -- square.msh out.vtu
//!
//! Without arguments it writes a perturbed 16 × 16 mesh to a temporary
//! file first (`fem mesh-gen` does the same from the command line).

use fem::host::io::{gmsh, vtk};
use fem::host::problem::poisson::{solve_cpu, MeshSource, PoissonOptions};
use fem::host::CpuBackend;
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let input = match args.first() {
        Some(p) => std::path::PathBuf::from(p),
        None => {
            let p = std::env::temp_dir().join("fem-example-square.msh");
            gmsh::write_path(&fem::host::mesh::BoxMesh::unstructured(2, 16, 1).build()?, false, &p)?;
            p
        }
    };
    let mesh = Arc::new(gmsh::read_path(&input)?.to_mesh()?);
    let cpu = CpuBackend::new(None)?;
    let report = solve_cpu::<f64>(&cpu, &PoissonOptions::on(MeshSource::Given(mesh.clone()), 2))?;
    println!("{} DOFs, {} CG iterations, L2 error {:.3e}", report.dofs, report.iterations, report.l2_error);
    let out = args.get(1).cloned().unwrap_or_else(|| std::env::temp_dir().join("fem-example-u.vtu").display().to_string());
    // Q2 cells as VTK Lagrange quadrilaterals of order 2: ParaView shows the
    // quadratic solution, not just its vertex values.
    report.field.write_vtk(out.as_ref(), "u", None, &[], vtk::Encoding::Binary)?;
    println!("wrote {out}");
    Ok(())
}
