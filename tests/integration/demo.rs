//! `fem demo`: Newton on the minimal surface equation (a `#[fem_kernel]`
//! physics) converges quadratically, its P1/P2 errors against Scherk's
//! surface fall at orders 2 and 3, the GPU gives the CPU's solution, and
//! the command writes a `.vtu` and a `.png` that read back.

use crate::common;
use common::scratch;
use fem::demo::{run, scherk, DemoOptions};
use fem::host::mesh::simplex::SimplexMesh;
use fem::host::problem::nonlinear::{self, NewtonOptions, Setup};
use fem::host::space::Space;
use fem::host::{AnyBackend, CpuBackend};
use fem::kernels::physics::MinimalSurface;

fn options(refine: usize, degree: usize) -> DemoOptions {
    DemoOptions { mesh: None, refine, degree, out: None, newton: NewtonOptions::default() }
}

fn cpu() -> AnyBackend {
    AnyBackend::Cpu(CpuBackend::new(Some(2)).unwrap())
}

#[test]
fn newton_converges_quadratically_and_the_error_falls_at_order_p_plus_one() {
    let any = cpu();
    for (degree, order) in [(1, 1.8), (2, 2.7)] {
        let errors: Vec<f64> = (0..2)
            .map(|refine| {
                let r = run(&any, &options(refine, degree), &|_| {}, &mut |_| {}).unwrap();
                let res = &r.newton.residuals;
                assert!(r.newton.converged && res.len() <= 8, "P{degree}: {res:?}");
                // quadratic: once small, each residual above rounding is below a constant times the square of the last
                for w in res.windows(2).filter(|w| w[0] < 1e-2 && w[1] > 1e-12) {
                    assert!(w[1] < 100.0 * w[0] * w[0], "P{degree}: {res:?}");
                }
                assert!(r.newton.steps.iter().all(|s| s.step_length == 1.0), "full steps from the harmonic lift");
                assert!(r.max_nodal_error < 1e-2 && r.l2_error > 0.0);
                r.l2_error
            })
            .collect();
        let rate = (errors[0] / errors[1]).log2();
        assert!(rate > order, "P{degree}: L2 errors {errors:?}, rate {rate}");
    }
}

/// The solve on `b` of the minimal surface on the disk refined once, P2,
/// from the boundary data with the interior at the exact solution's
/// nodal values perturbed (so Newton has work to do but starts close).
fn surface_on<B: nonlinear::NewtonOps>(b: &B) -> (Vec<f64>, nonlinear::NewtonReport, Space) {
    let mesh = fem::host::io::gmsh::read(fem::demo::DISK_MSH).unwrap().to_simplex_mesh().unwrap().refined(1).unwrap();
    let space = Space::simplex(&mesh, 2).unwrap();
    let setup = Setup::<MinimalSurface>::new(&CpuBackend::new(Some(2)).unwrap(), &space).unwrap();
    let start: Vec<f64> = space.dof_coords.iter().zip(&space.boundary).map(|(x, &bd)| scherk(x) * if bd { 1.0 } else { 0.9 }).collect();
    let (u, r) = nonlinear::solve(b, &setup, &start, &NewtonOptions::default(), &mut |_| {}).unwrap();
    (u, r, space)
}

#[test]
fn boundary_values_stay_and_the_gpu_gives_the_cpus_solution() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let (u, report, space) = surface_on(&cpu);
    assert!(report.converged);
    for (i, x) in space.dof_coords.iter().enumerate() {
        if space.boundary[i] {
            assert_eq!(u[i], scherk(x), "node {i} is fixed");
        }
    }
    let Some(gpu) = common::gpu("boundary_values_stay_and_the_gpu_gives_the_cpus_solution") else { return };
    let (ug, rg, _) = surface_on(&gpu);
    assert!(rg.converged);
    assert_eq!(rg.steps.len(), report.steps.len());
    let worst = u.iter().zip(&ug).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(worst < 1e-10, "GPU and CPU solutions differ by {worst:e}");
}

#[test]
fn bad_meshes_are_refused_with_the_reason() {
    let dir = scratch("demo-bad");
    let tets = dir.join("tets.msh");
    let m = fem::host::mesh::simplex::SimplexBox::unstructured(3, 2, 1).build().unwrap();
    std::fs::write(&tets, fem::host::io::gmsh::write_to(&fem::host::io::gmsh::GmshMesh::from_simplex_mesh(&m), Default::default()).unwrap()).unwrap();
    let far = dir.join("far.msh");
    let mut square: SimplexMesh = fem::host::mesh::simplex::SimplexBox::unstructured(2, 3, 1).build().unwrap();
    square.coords.iter_mut().for_each(|x| x[0] *= 4.0);
    std::fs::write(&far, fem::host::io::gmsh::write_to(&fem::host::io::gmsh::GmshMesh::from_simplex_mesh(&square), Default::default()).unwrap()).unwrap();
    for (path, says) in [(&tets, "triangles, not tetrahedra"), (&far, "outside |x|, |y| < 1.5")] {
        let mut o = options(0, 2);
        o.mesh = Some(path.clone());
        let e = run(&cpu(), &o, &|_| {}, &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
}

fn fem_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_fem")).current_dir(dir).env("FEM_TUNING", "off").args(args).output().unwrap()
}

#[test]
fn fem_demo_writes_a_vtu_and_a_picture() {
    let dir = scratch("demo-cli");
    let out = fem_in(&dir, &["demo", "--backend", "cpu", "--refine", "1", "--out", "results", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((j["degree"].as_u64(), j["cells"].as_u64(), j["newton"]["converged"].as_bool()), (Some(2), Some(757 * 4), Some(true)));
    assert!(j["l2_error"].as_f64().unwrap() < 1e-5 && j["newton"]["krylov_iterations"].as_u64().unwrap() > 0);
    for stage in ["mesh", "space", "backend_setup", "lift", "newton", "error", "output", "total"] {
        assert!(j["stages"][stage].as_f64().unwrap() >= 0.0, "{stage}");
    }
    let vtu = dir.join("results/minimal-surface.vtu");
    let text = std::fs::read_to_string(&vtu).unwrap();
    let fields = fem::host::io::vtk::read_fields(&text).unwrap();
    let get = |n: &str| fields.iter().find(|f| f.0 == n).unwrap_or_else(|| panic!("{n}")).1.clone();
    let (u, exact, err) = (get("u"), get("u_exact"), get("error"));
    assert_eq!(u.len(), j["dofs"].as_u64().unwrap() as usize);
    assert!(u.iter().zip(&exact).zip(&err).all(|((a, b), e)| (a - b - e).abs() < 1e-15 && e.abs() < 1e-4));
    // quadratic triangles: six points per cell, VTK type 22
    assert!(text.contains("NumberOfCells=\"3028\""));
    let img = image::open(dir.join("results/minimal-surface.png")).unwrap();
    assert_eq!((img.width(), img.height()), (900, 760));
    // text mode, into the current directory
    let out = fem_in(&dir, &["demo", "--backend", "cpu", "--refine", "0", "--degree", "1"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Newton:") && text.contains("error against Scherk's surface") && text.contains("wrote ./minimal-surface.png"), "{text}");
    assert!(dir.join("minimal-surface.vtu").exists());
    // usage, a refinement that cannot fit, and bad output folders
    assert_eq!(fem_in(&dir, &["demo", "--degree", "3"]).status.code(), Some(2));
    let out = fem_in(&dir, &["demo", "--backend", "cpu", "--refine", "9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("GB of host memory"), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(dir.join("a-file"), "x").unwrap();
    let out = fem_in(&dir, &["demo", "--backend", "cpu", "--refine", "0", "--out", "a-file"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
}
