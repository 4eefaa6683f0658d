//! `fem bp --physics`: the Jacobian of each shipped physics on L-vectors,
//! partially assembled or matrix-free, its figures and the byte model,
//! on the CPU and (where a device is present) on the GPU against the
//! CPU's product; and the refusals of options it does not read.

use crate::common::{self, fem};
use fem::bp::physics::{bytes_moved, run, PhysicsOptions};
use fem::bp::Size;
use fem::host::mesh::spectral::Deformation;
use fem::host::problem::nonlinear::Assembly;
use fem::host::AnyBackend;
use fem::mesh_solve::Physics;

const PHYSICS: [Physics; 4] = [Physics::Mass, Physics::Poisson, Physics::Elasticity, Physics::NeoHookean];

fn options(physics: Physics, level: Assembly, degree: usize) -> PhysicsOptions {
    PhysicsOptions { physics, level, degree, dim: 3, size: Size::Elements(8), deformation: Deformation::Trilinear { amplitude: 0.1, seed: 1 }, repeats: 2, cpu_time: false }
}

/// On 2³ cells: the L- and E-DOFs of the space, rates from the time, and
/// the byte model of the level.
#[test]
fn physics_products_report_l_and_e_dofs() {
    let any = AnyBackend::Cpu(fem::host::CpuBackend::new(Some(2)).unwrap());
    for physics in PHYSICS {
        let nc = if physics.is_vector() { 3 } else { 1 };
        for (level, degree) in [(Assembly::Partial, 2), (Assembly::MatrixFree, 3)] {
            let r = run(&options(physics, level, degree), &any, &|_| {}).unwrap();
            let side = 2 * degree + 1;
            assert_eq!((r.elements, r.l_dofs, r.e_dofs), (8, nc * side.pow(3), nc * 8 * (degree + 1).pow(3)), "{physics:?} {level}");
            assert!(r.seconds_per_apply > 0.0 && r.gdofs_per_second > 0.0 && r.roofline_fraction > 0.0);
            assert!((r.e_gdofs_per_second / r.gdofs_per_second - r.e_dofs as f64 / r.l_dofs as f64).abs() < 1e-9);
            assert_eq!(r.max_rel_error_vs_cpu, 0.0);
            assert_eq!(r.operator, if level == Assembly::Partial { "partial" } else { "matrix-free" });
        }
    }
    // the model: point data against the state (where the Jacobian reads
    // it: neo-Hookean's, not linear elasticity's), vertices and fields
    let q2 = |vs: &'static [fem::kernels::pointwise::Variant]| vs.iter().find(|v| v.degree == 2 && v.shape == fem::kernels::fem_core::shape::Shape::Hexahedron).unwrap();
    let v = q2(<fem::kernels::physics::Elasticity as fem::kernels::pointwise::Kernels<f64>>::VARIANTS);
    let (partial, free) = (bytes_moved(v, Assembly::Partial, 10, 100, None).unwrap(), bytes_moved(v, Assembly::MatrixFree, 10, 100, None).unwrap());
    let e = 10 * 81;
    assert_eq!(partial, 4 * e + 8 * 10 * 27 * 81 + 48 * 100);
    assert_eq!(free, 4 * e + 8 * 10 * (24 + 2) + 48 * 100);
    let nh = q2(<fem::kernels::physics::NeoHookean as fem::kernels::pointwise::Kernels<f64>>::VARIANTS);
    assert_eq!(bytes_moved(nh, Assembly::MatrixFree, 10, 100, None).unwrap(), 4 * e + 8 * e + 8 * 10 * (24 + 2) + 48 * 100);
    assert!(bytes_moved(v, Assembly::Sparse("csr".parse().unwrap()), 10, 100, None).is_err());
}

/// With `dim` 2 the physics run on a square of quadrilaterals: 2² cells,
/// the L- and E-DOFs of Q_N there (two components for elasticity), the
/// point data's bytes in the model; a degree a physics has no kernels for
/// on quadrilaterals is a clear error.
#[test]
fn quadrilateral_products_report_their_space() {
    let any = AnyBackend::Cpu(fem::host::CpuBackend::new(Some(2)).unwrap());
    for (physics, degree, nc) in [(Physics::Mass, 3, 1), (Physics::Poisson, 8, 1), (Physics::Elasticity, 2, 2)] {
        let o = PhysicsOptions { dim: 2, size: Size::Elements(4), ..options(physics, Assembly::Partial, degree) };
        let r = run(&o, &any, &|_| {}).unwrap();
        let side = 2 * degree + 1;
        assert_eq!((r.dim, r.elements, r.l_dofs, r.e_dofs), (2, 4, nc * side * side, nc * 4 * (degree + 1).pow(2)), "{physics:?} Q{degree}");
        assert!(r.bytes_moved > 4 * r.e_dofs + 48 * r.l_dofs, "{physics:?}: {} bytes", r.bytes_moved);
        assert!(r.seconds_per_apply > 0.0 && r.roofline_fraction > 0.0);
    }
    let o = PhysicsOptions { dim: 2, size: Size::Elements(4), ..options(Physics::Elasticity, Assembly::Partial, 5) };
    let e = run(&o, &any, &|_| {}).unwrap_err();
    assert!(e.to_string().contains("no Q5 Quadrilateral"), "{e}");
    let o = PhysicsOptions { dim: 4, ..options(Physics::Poisson, Assembly::Partial, 2) };
    assert!(run(&o, &any, &|_| {}).unwrap_err().to_string().contains("not dim 4"));
}

/// The GPU's product of every physics at both levels equals the CPU's.
#[test]
fn gpu_physics_products_equal_the_cpus() {
    let Some(gpu) = common::gpu("gpu_physics_products_equal_the_cpus") else { return };
    let any = AnyBackend::Cuda(gpu);
    for physics in PHYSICS {
        for level in [Assembly::Partial, Assembly::MatrixFree] {
            for degree in [1, 2, 5, 8] {
                let r = run(&options(physics, level, degree), &any, &|_| {}).unwrap();
                assert!(r.max_rel_error_vs_cpu < 1e-12, "{physics:?} {level} Q{degree}: {:e}", r.max_rel_error_vs_cpu);
                assert!(r.roofline_fraction > 0.0);
            }
        }
    }
    // partial assembly on quadrilaterals, sizes not a multiple of the
    // block's elements
    for (physics, degrees) in [(Physics::Poisson, &[1, 2, 5, 8][..]), (Physics::Elasticity, &[1, 2, 3])] {
        for &degree in degrees {
            let o = PhysicsOptions { dim: 2, size: Size::Elements(49), ..options(physics, Assembly::Partial, degree) };
            let r = run(&o, &any, &|_| {}).unwrap();
            assert!(r.max_rel_error_vs_cpu < 1e-12, "{physics:?} quadrilaterals Q{degree}: {:e}", r.max_rel_error_vs_cpu);
        }
    }
}

/// The command: JSON with the fields; options of the CEED
/// problems' kernels, auto, radiation and curved cells are errors.
#[test]
fn bp_physics_command_and_refusals() {
    let out = fem(&["bp", "--physics", "neo-hookean", "--level", "none", "--degree", "2", "--elements", "8", "--backend", "cpu", "--repeats", "2", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["physics"].as_str(), v["level"].as_str(), v["l_dofs"].as_u64()), (Some("NeoHookean"), Some("none"), Some(3 * 125)));
    for key in ["gdofs_per_second", "e_gdofs_per_second", "roofline_fraction", "bytes_moved"] {
        assert!(v[key].as_f64().unwrap() > 0.0, "{key}");
    }
    for (args, says) in [
        (&["--physics", "poisson", "--tune"][..], "--tune does not apply"),
        (&["--physics", "poisson", "--problem", "bp1"], "--problem does not apply"),
        (&["--physics", "poisson", "--level", "auto"], "not auto"),
        (&["--physics", "radiation"], "choose poisson"),
        (&["--physics", "mass", "--deform", "curved"], "trilinearly"),
        (&["--physics", "mass", "--degree", "9"], "degree 1 to 8"),
        (&["--physics", "mass", "--level", "diagonal"], "unknown assembly"),
    ] {
        let mut all = vec!["bp", "--backend", "cpu", "--elements", "1"];
        all.extend_from_slice(args);
        let out = fem(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code() == Some(1) && err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(fem(&["bp", "--level", "none", "--backend", "cpu"]).status.code(), Some(2), "--level needs --physics");
    assert_eq!(fem(&["bp", "--dim", "2", "--backend", "cpu"]).status.code(), Some(2), "--dim needs --physics");
    let out = fem(&["bp", "--physics", "poisson", "--dim", "2", "--degree", "4", "--elements", "9", "--backend", "cpu", "--repeats", "2", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["dim"].as_u64(), v["elements"].as_u64(), v["l_dofs"].as_u64()), (Some(2), Some(9), Some(13 * 13)), "{v}");
}
