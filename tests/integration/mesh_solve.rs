//! `fem solve --mesh FILE --physics ...` on every kind of Gmsh file the
//! reader accepts, and its refusals of bad input.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

fn fem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fem"))
        .env("FEM_TUNING", "off")
        .args(args)
        .output()
        .unwrap()
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/gmsh")
        .join(name)
        .display()
        .to_string()
}

/// Runs a solve with `--json` and returns the report.
fn solve_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["solve", "--backend", "cpu", "--json"];
    all.extend_from_slice(args);
    let out = fem(&all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Triangles, quadrilaterals and tetrahedra written by `fem mesh-gen` in
/// ASCII and binary, and Gmsh's own tet10 and hex27 files, all solve; on
/// the unit box the error of the sine load is small.
#[test]
fn every_kind_of_mesh_file_solves() {
    let dir = common::scratch("mesh-solve-kinds");
    let mut files = Vec::new();
    for (name, args) in [
        ("tri.msh", vec!["--dim", "2", "--cells", "8", "--simplex"]),
        ("quad.msh", vec!["--dim", "2", "--cells", "8", "--binary"]),
        (
            "tet.msh",
            vec!["--dim", "3", "--cells", "3", "--simplex", "--binary"],
        ),
        ("hex.msh", vec!["--dim", "3", "--cells", "3"]),
    ] {
        let path = dir.join(name).display().to_string();
        let mut all = vec!["mesh-gen"];
        all.extend_from_slice(&args);
        all.push(&path);
        assert!(fem(&all).status.success());
        files.push((path, true));
    }
    for f in [
        "tet10-v41.msh",
        "tet10-v22-bin.msh",
        "hex27-v41-bin.msh",
        "hex27-v40.msh",
        "disk-v41.msh",
    ] {
        files.push((fixture(f), false));
    }
    for (path, unit_box) in &files {
        let mut errors = Vec::new();
        for degree in ["1", "2"] {
            let r = solve_json(&["--mesh", path, "--physics", "poisson", "--degree", degree]);
            assert_eq!(
                r["newton"]["converged"], true,
                "{path} degree {degree}: {r}"
            );
            errors.push(r["l2_error"].as_f64());
        }
        if *unit_box {
            // ‖u‖ is 2^(−d/2); the second degree gains much on these coarse meshes
            let (e1, e2) = (errors[0].unwrap(), errors[1].unwrap());
            assert!(
                e1 < 0.2 && e2 < e1 / 4.0,
                "{path}: L2 errors {e1:e}, {e2:e}"
            );
        } else {
            assert_eq!(
                errors,
                [None, None],
                "{path}: no exact solution off the unit box"
            );
        }
        let r = solve_json(&[
            "--mesh",
            path,
            "--physics",
            "elasticity",
            "--degree",
            "1",
            "--load",
            "random",
        ]);
        assert_eq!(r["newton"]["converged"], true, "{path} elasticity: {r}");
        // the methods for unsymmetric tangents reach the tolerance too
        for krylov in ["bicgstab", "gmres"] {
            let r = solve_json(&["--mesh", path, "--physics", "elasticity", "--degree", "1", "--load", "random", "--krylov", krylov, "--restart", "30"]);
            assert_eq!(r["newton"]["converged"], true, "{path} {krylov}: {r}");
            assert!(r["newton"]["steps"].as_array().unwrap().len() <= 1, "{path} {krylov}: {r}");
        }
    }
}

/// A clamped beam of Gmsh hexahedra under its weight and a traction on
/// the clamped group's opposite end bends down, and writes its VTU.
#[test]
fn groups_name_dirichlet_and_neumann_parts_and_the_vtu_is_written() {
    let dir = common::scratch("mesh-solve-groups");
    let vtu = dir.join("beam.vtu").display().to_string();
    let r = solve_json(&[
        "--mesh",
        &fixture("hex27-v41.msh"),
        "--physics",
        "elasticity",
        "--degree",
        "1",
        "--dirichlet-group",
        "clamped",
        "--load",
        "one",
        "--vtk",
        &vtu,
    ]);
    assert_eq!(r["newton"]["converged"], true);
    assert_eq!(
        r["fixed_rows"],
        3 * 9,
        "the clamped face's 3 × 3 nodes, three components each: {r}"
    );
    let text = std::fs::read_to_string(&vtu).unwrap();
    assert!(text.contains("UnstructuredGrid") && text.contains("\"u\""));
}

/// Unknown groups, groups of the wrong dimension and physics/element
/// pairs without kernels are errors: exit 1, a message, no output file.
#[test]
fn bad_input_is_a_clear_error_and_writes_nothing() {
    let dir = common::scratch("mesh-solve-bad");
    let vtu = dir.join("u.vtu").display().to_string();
    let hex = fixture("hex27-v41.msh");
    let tet = fixture("tet10-v41.msh");
    for (args, says) in [
        (
            vec![
                "--mesh",
                &hex,
                "--physics",
                "poisson",
                "--dirichlet-group",
                "nowhere",
            ],
            "no boundary physical group `nowhere`",
        ),
        (
            vec![
                "--mesh",
                &hex,
                "--physics",
                "poisson",
                "--dirichlet-group",
                "beam",
            ],
            "no boundary physical group `beam`",
        ),
        (
            vec![
                "--mesh",
                &hex,
                "--physics",
                "poisson",
                "--neumann-group",
                "nowhere=1",
            ],
            "no boundary physical group `nowhere`",
        ),
        (
            vec!["--mesh", &hex, "--physics", "radiation", "--robin-group", "clamped=1", "--degree", "3"],
            "no hex P3 variant",
        ),
        (
            vec!["--mesh", &tet, "--physics", "poisson", "--degree", "3"],
            "degree",
        ),
        (
            vec!["--mesh", &fixture("mixed-v41.msh"), "--physics", "poisson"],
            "mix",
        ),
        (
            vec!["--mesh", &hex, "--physics", "poisson", "--format", "lazy-ell"],
            "stores its tangent as auto, csr",
        ),
        (
            vec!["--mesh", &hex, "--physics", "poisson", "--format", "lma", "--precond", "ssor"],
            "preconditioned by Jacobi",
        ),
        (
            vec!["--mesh", &hex, "--physics", "poisson", "--format", "cusparse"],
            "cuSPARSE runs on the CUDA backend only",
        ),
        (
            vec!["--mesh", &hex, "--physics", "poisson", "--precond", "mg"],
            "--refine",
        ),
        (
            vec!["--mesh", &hex, "--physics", "poisson", "--precond", "spai"],
            "SPAI(1) is not symmetric",
        ),
        (
            vec!["--mesh", &hex, "--physics", "poisson", "--cycle", "w"],
            "--precond mg",
        ),
        (
            vec!["--mesh", &hex, "--physics", "poisson", "--degree", "4", "--refine", "1", "--precond", "mg"],
            "do not nest",
        ),
    ] {
        let mut all = vec!["solve", "--backend", "cpu", "--vtk", &vtu];
        all.extend_from_slice(&args);
        let out = fem(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!Path::new(&vtu).exists(), "{args:?} wrote {vtu}");
    }
    // a .pvd series without time steps
    let pvd = dir.join("u.pvd").display().to_string();
    let out = fem(&["solve", "--backend", "cpu", "--mesh", &hex, "--physics", "poisson", "--vtk", &pvd]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--time-steps") && !Path::new(&pvd).exists());
}

/// `--refine` solves on the refined mesh of a Gmsh file with its groups:
/// the clamped face holds (2^r + 1)² nodes and the error of the sine load
/// falls at order p + 1; Jacobi, SSOR, SAINV, SPAI(1) (with BiCGStab) and
/// multigrid converge, SAINV in fewer iterations than Jacobi, multigrid
/// in a handful (the library tests compare their solutions).
#[test]
fn refined_meshes_keep_their_groups_and_every_preconditioner_agrees() {
    let hex = fixture("hex27-v41.msh");
    let mut jacobi = 0;
    for (precond, refine, smoother) in [("jacobi", "2", None), ("ssor", "2", None), ("sainv", "2", None), ("spai", "2", None), ("mg", "2", None), ("mg", "1", None), ("mg", "2", Some("spai")), ("mg", "2", Some("sainv"))] {
        let mut args = vec!["--mesh", &hex, "--physics", "elasticity", "--degree", "1", "--dirichlet-group", "clamped", "--load", "random", "--refine", refine, "--precond", precond, "--rtol", "1e-11"];
        args.extend(smoother.iter().flat_map(|s| ["--smoother", s]));
        if precond == "spai" {
            args.extend(["--krylov", "bicgstab"]);
        }
        let r = solve_json(&args);
        assert_eq!(r["newton"]["converged"], true, "{precond}: {r}");
        let nodes = if refine == "2" { 9 * 9 } else { 5 * 5 };
        assert_eq!(r["fixed_rows"], 3 * nodes, "{precond}, refine {refine}: {r}");
        let its = r["newton"]["krylov_iterations"].as_u64().unwrap();
        // the coarse levels are made once the finest is on the backend:
        // their host time is a stage of the host's set-up, after the
        // pattern's, and only multigrid makes them
        let stages: Vec<&str> = r["host_setup_split"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
        let seconds: f64 = r["host_setup_split"].as_array().unwrap().iter().map(|s| s["seconds"].as_f64().unwrap()).sum();
        assert_eq!(stages.ends_with(&["pattern", "levels"]), precond == "mg", "{precond}: {stages:?}");
        assert!((seconds - r["host_setup_seconds"].as_f64().unwrap()).abs() < 1e-3, "{precond}: {r}");
        if precond == "jacobi" {
            jacobi = its;
        } else if precond == "mg" {
            assert!(3 * its < jacobi, "multigrid {its} against Jacobi {jacobi} iterations");
        } else if precond == "sainv" {
            assert!(its < jacobi, "SAINV {its} against Jacobi {jacobi} iterations");
        }
    }
    let out = fem(&["solve", "--backend", "cpu", "--mesh", &hex, "--physics", "poisson", "--smoother", "spai"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(1) && err.contains("configure --precond mg"), "{err}");
    let dir = common::scratch("mesh-solve-refine");
    let tri = dir.join("tri.msh").display().to_string();
    assert!(fem(&["mesh-gen", "--dim", "2", "--cells", "2", "--simplex", &tri]).status.success());
    let errors: Vec<f64> = ["2", "3"].iter().map(|r| solve_json(&["--mesh", &tri, "--physics", "poisson", "--degree", "2", "--refine", r, "--precond", "mg"])["l2_error"].as_f64().unwrap()).collect();
    let rate = (errors[0] / errors[1]).log2();
    assert!((rate - 3.0).abs() < 0.3, "P2 on refined triangles: {errors:?}, order {rate}");
}

/// `--ordering` renumbers the nodes of every level of --physics: the same
/// solution (its L2 error) and, with Jacobi-smoothed multigrid, the same
/// iterations in any order; the report names the ordering, and an
/// unknown one is an error.
#[test]
fn the_pipeline_solves_in_any_ordering() {
    let dir = common::scratch("mesh-solve-ordering");
    let tri = dir.join("tri.msh").display().to_string();
    assert!(fem(&["mesh-gen", "--dim", "2", "--cells", "3", "--simplex", &tri]).status.success());
    let run = |ordering: &str| solve_json(&["--mesh", &tri, "--physics", "poisson", "--degree", "2", "--refine", "2", "--precond", "mg", "--rtol", "1e-12", "--ordering", ordering]);
    let want = run("original");
    for (given, named) in [("cm", "cuthill-mckee"), ("hie", "hierarchical"), ("stoch", "random")] {
        let r = run(given);
        assert_eq!(r["ordering"], named);
        let (e, w) = (r["l2_error"].as_f64().unwrap(), want["l2_error"].as_f64().unwrap());
        assert!((e - w).abs() < 1e-9 * w, "{given}: L2 error {e} against {w}");
        let its = |r: &serde_json::Value| r["newton"]["krylov_iterations"].as_u64().unwrap();
        assert!(its(&r).abs_diff(its(&want)) <= 1, "{given}: {} against {} iterations", its(&r), its(&want));
    }
    let out = fem(&["solve", "--backend", "cpu", "--mesh", &tri, "--physics", "poisson", "--ordering", "sideways"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(1) && err.contains("unknown ordering"), "{err}");
}

/// `--format` stores the tangent of --physics in any sparse format or as
/// element matrices, which give the same solution (the same L2 error of
/// the sine load's), its values summed by atomics or (`--scatter spmv`)
/// by gather matrices; the report names the storage and the sum.
/// `--scatter colour` is the Q_p Poisson kernels' and `spmv` the
/// pipeline's: each refused on the other path.
#[test]
fn every_tangent_storage_gives_the_same_solution() {
    let dir = common::scratch("mesh-solve-storage");
    let hex = dir.join("hex.msh").display().to_string();
    assert!(fem(&["mesh-gen", "--dim", "3", "--cells", "4", &hex]).status.success());
    let reference = solve_json(&["--mesh", &hex, "--physics", "poisson", "--degree", "2", "--format", "csr", "--rtol", "1e-12"]);
    for (format, says) in [("lma", "element matrices"), ("k2", "assembled in k2"), ("ell", "assembled in ell"), ("auto", "the tangent")] {
        for scatter in ["atomic", "spmv"] {
            let r = solve_json(&["--mesh", &hex, "--physics", "poisson", "--degree", "2", "--format", format, "--scatter", scatter, "--rtol", "1e-12"]);
            assert_eq!(r["newton"]["converged"], true, "{format}: {r}");
            let kernels = r["newton"]["kernels"].as_str().unwrap();
            assert!(kernels.contains(says) && kernels.contains("SpMV") == (scatter == "spmv"), "{format}, {scatter}: {kernels}");
            let (a, b) = (r["l2_error"].as_f64().unwrap(), reference["l2_error"].as_f64().unwrap());
            assert!((a - b).abs() < 1e-6 * b, "{format}, {scatter}: L2 error {a:e} against {b:e}");
        }
    }
    for (format, says) in [("partial", "partially assembled"), ("matrix-free", "matrix-free")] {
        let r = solve_json(&["--mesh", &hex, "--physics", "poisson", "--degree", "2", "--format", format, "--rtol", "1e-12"]);
        let kernels = r["newton"]["kernels"].as_str().unwrap();
        assert!(r["newton"]["converged"] == true && kernels.contains(says), "{format}: {r}");
        let (a, b) = (r["l2_error"].as_f64().unwrap(), reference["l2_error"].as_f64().unwrap());
        assert!((a - b).abs() < 1e-6 * b, "{format}: L2 error {a:e} against {b:e}");
    }
    for (args, says) in [(["--physics", "poisson", "--scatter", "colour"], "--physics sums by atomic or spmv"), (["--format", "csr", "--scatter", "spmv"], "the Q_p Poisson formats scatter by atomic or colour")] {
        let mut all = vec!["solve", "--backend", "cpu", "--mesh", &hex];
        all.extend_from_slice(&args);
        let out = fem(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code() == Some(1) && err.contains(says), "{args:?}: {err}");
    }
}

/// Neo-Hookean hyperelasticity under a random load takes several Newton
/// updates and takes the same ones with the tangent partially assembled
/// or matrix-free; on tetrahedra, which have no matrix-free
/// tangent, asking for one is an error that says why.
#[test]
fn neo_hookean_solves_partially_assembled_or_matrix_free() {
    let dir = common::scratch("mesh-solve-neo-hookean");
    let (hex, tet) = (dir.join("hex.msh").display().to_string(), dir.join("tet.msh").display().to_string());
    assert!(fem(&["mesh-gen", "--dim", "3", "--cells", "3", &hex]).status.success());
    assert!(fem(&["mesh-gen", "--dim", "3", "--cells", "2", "--simplex", &tet]).status.success());
    let run = |format: &str| solve_json(&["--mesh", &hex, "--physics", "neo-hookean", "--degree", "2", "--load", "random", "--young", "0.1", "--format", format, "--rtol", "1e-10"]);
    let (partial, free) = (run("partial"), run("matrix-free"));
    let steps = |r: &serde_json::Value| r["newton"]["steps"].as_array().unwrap().len();
    assert!(partial["newton"]["converged"] == true && free["newton"]["converged"] == true, "{partial}\n{free}");
    assert!(steps(&partial) > 1 && steps(&partial) == steps(&free), "{} and {} updates", steps(&partial), steps(&free));
    assert!(free["newton"]["kernels"].as_str().unwrap().contains("matrix-free"), "{free}");
    // the same Newton iterates: residual norms equal to the Krylov tolerance
    let residuals = |r: &serde_json::Value| -> Vec<f64> { r["newton"]["residuals"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect() };
    let (a, b) = (residuals(&partial), residuals(&free));
    assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= 1e-8 * a[0]), "{a:?} against {b:?}");
    let out = fem(&["solve", "--backend", "cpu", "--mesh", &tet, "--physics", "neo-hookean", "--degree", "1", "--format", "matrix-free"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(1) && err.contains("hexahedra"), "{err}");
}

/// Time steps write a `.pvd` series of every k-th step; the heat
/// equation's solution grows towards the stationary one, which it does not
/// pass; a bad time step is an error.
#[test]
fn time_steps_write_a_pvd_series() {
    let dir = common::scratch("mesh-solve-time");
    let pvd = dir.join("heat.pvd").display().to_string();
    let disk = fixture("disk-v41.msh");
    let steady = solve_json(&["--mesh", &disk, "--physics", "poisson", "--degree", "2", "--load", "one", "--vtk", &dir.join("steady.vtu").display().to_string()]);
    assert_eq!(steady["newton"]["converged"], true);
    let r = solve_json(&["--mesh", &disk, "--physics", "poisson", "--degree", "2", "--load", "one", "--time-steps", "12", "--dt", "0.02", "--scheme", "crank-nicolson", "--vtk", &pvd, "--vtk-every", "4"]);
    assert_eq!(r["time"]["steps"].as_array().unwrap().len(), 12, "{r}");
    let text = std::fs::read_to_string(&pvd).unwrap();
    for k in [4, 8, 12] {
        let piece = format!("heat-{k:05}.vtu");
        assert!(text.contains(&piece) && dir.join(&piece).exists(), "{piece}: {text}");
    }
    assert!(!dir.join("heat-00002.vtu").exists());
    let max_of = |file: &str| {
        let fields = fem::host::io::vtk::read_fields(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap();
        fields.iter().find(|f| f.0 == "u").unwrap().1.iter().fold(0.0f64, |m, v| m.max(*v))
    };
    let (early, late, limit) = (max_of("heat-00004.vtu"), max_of("heat-00012.vtu"), max_of("steady.vtu"));
    assert!(0.0 < early && early < late && late < limit * 1.001, "{early} {late} {limit}");
    let out = fem(&["solve", "--backend", "cpu", "--mesh", &disk, "--physics", "poisson", "--time-steps", "2", "--dt=0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("time step"));
}

/// `--physics radiation` cools through Robin groups: a nonlinear boundary
/// term, so Newton takes several updates (quadratically convergent at the
/// end) with every preconditioner; Robin groups without that physics, or
/// that physics without them, are errors.
#[test]
fn radiation_cools_through_robin_groups() {
    let dir = common::scratch("mesh-solve-robin");
    let hex = dir.join("hex.msh").display().to_string();
    assert!(fem(&["mesh-gen", "--dim", "3", "--cells", "2", &hex]).status.success());
    let mut jacobi = 0;
    for precond in ["jacobi", "mg"] {
        let r = solve_json(&["--mesh", &hex, "--physics", "radiation", "--degree", "2", "--robin-group", "xmax=4,ymin=-2", "--load", "one", "--refine", "1", "--precond", precond]);
        let n = &r["newton"];
        assert_eq!(n["converged"], true, "{precond}: {r}");
        let res: Vec<f64> = n["residuals"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert!(res.len() > 3, "a nonlinear condition takes several updates: {res:?}");
        let rel: Vec<f64> = res.iter().map(|v| v / res[0]).collect();
        assert!(rel.windows(2).filter(|w| w[0] < 1e-2 && w[1] > 1e-11).all(|w| w[1] < 10.0 * w[0] * w[0]), "{precond}: {rel:?}");
        let its = n["krylov_iterations"].as_u64().unwrap();
        if precond == "jacobi" {
            jacobi = its;
        } else {
            assert!(2 * its < jacobi, "multigrid {its} against Jacobi {jacobi} iterations");
        }
    }
    for (args, want) in [
        (vec!["--physics", "poisson", "--robin-group", "xmax=1"], "boundary term of radiation"),
        (vec!["--physics", "radiation"], "name at least one"),
        (vec!["--physics", "radiation", "--robin-group", "xmax=1:2"], "one value"),
        (vec!["--physics", "radiation", "--robin-group", "nowhere=1"], "nowhere"),
    ] {
        let vtu = dir.join("no.vtu");
        let mut all = vec!["solve", "--backend", "cpu", "--mesh", &hex, "--vtk", vtu.to_str().unwrap()];
        all.extend_from_slice(&args);
        let out = fem(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!vtu.exists(), "{args:?} wrote output");
    }
}

/// Poisson of `degree` with the `dirichlet` groups, the `load`, and time
/// steps if any, Newton's updates solved to 10⁻¹².
fn poisson_options(degree: usize, dirichlet: Vec<fem::mesh_solve::GroupValue>, load: fem::mesh_solve::LoadKind, time: Option<fem::mesh_solve::Transient>) -> fem::mesh_solve::MeshSolveOptions {
    let mut newton = fem::host::problem::nonlinear::NewtonOptions::default();
    newton.krylov_rtol = 1e-12;
    fem::mesh_solve::MeshSolveOptions { physics: fem::mesh_solve::Physics::Poisson, degree, refine: 0, dirichlet, neumann: Vec::new(), robin: Vec::new(), load, young: 1.0, poisson_ratio: 0.3, newton, ordering: fem::host::solver::ordering::Ordering::Original, time, partitioner: fem::host::distributed::Partitioner::Metis, write_system: None, pmg_levels: fem::bp::PmgLevels::Degrees(vec![1]) }
}

/// Dirichlet values by group: u = 1 on `xmin` and u = 0 on `xmax` of the
/// unit square, natural conditions on y = 0 and 1 and no load give
/// u = 1 − x, which Q1 and Q2 hold at every node; u = 2.5 on the rim of
/// the P2 disk gives u ≡ 2.5. The command routes such values through the
/// pipeline, and a vector value on a scalar field is refused before any
/// work.
#[test]
fn dirichlet_groups_take_values() {
    use fem::host::{AnyBackend, CpuBackend};
    use fem::mesh_solve::{run, GroupValue, LoadKind};
    let dir = common::scratch("mesh-solve-dirichlet-values");
    let cpu = AnyBackend::Cpu(CpuBackend::new(Some(2)).unwrap());
    let quad = dir.join("quad.msh").display().to_string();
    assert!(fem(&["mesh-gen", "--dim", "2", "--cells", "4", &quad]).status.success());
    let group = |g: &str, value: Vec<f64>| GroupValue::constant(g, &value);
    let disk = fixture("disk-v41.msh");
    let cases: [(&str, usize, Vec<GroupValue>, fn(&[f64; 3]) -> f64); 3] = [
        (&quad, 1, vec![group("xmin", vec![1.0]), group("xmax", Vec::new())], |x| 1.0 - x[0]),
        (&quad, 2, vec![group("xmin", vec![1.0]), group("xmax", Vec::new())], |x| 1.0 - x[0]),
        (&disk, 2, vec![group("rim", vec![2.5])], |_| 2.5),
    ];
    for (path, degree, dirichlet, exact) in cases {
        let file = fem::host::io::gmsh::read_path(Path::new(path)).unwrap();
        let o = poisson_options(degree, dirichlet, LoadKind::Zero, None);
        let (space, u, report) = run(&cpu, &file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
        assert!(report.newton.converged, "{path} p = {degree}");
        let err = space.dof_coords.iter().zip(&u).fold(0.0f64, |m, (x, v)| m.max((v - exact(x)).abs()));
        assert!(err < 1e-9, "{path} p = {degree}: u differs from the exact solution by {err:e}");
    }
    // the command line: values route through the pipeline, with or
    // without --physics
    let r = solve_json(&["--mesh", &quad, "--dirichlet-group", "xmin=1,xmax", "--load", "zero"]);
    assert_eq!(r["newton"]["converged"], true, "{r}");
    assert_eq!(r["load"], "Zero", "{r}");
    let out = fem(&["solve", "--backend", "cpu", "--mesh", &quad, "--physics", "poisson", "--dirichlet-group", "xmin=1:2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Dirichlet group `xmin`: 2 values; give one"), "{err}");
}

/// Values as expressions of x, y, z and t. Stationary: u = x² + xy − y²/2
/// (−Δu = −1) held on every side of the square is reproduced exactly by
/// Q2, and u = 1 + x − 2y on the rim of the (curved) P2 disk by P2. In time: u = t·x solves u̇ − Δu = x
/// with u = t·x on x = 0, 1 and no flux on y = 0, 1; backward Euler and
/// Q1 reproduce it at every node, the boundary values and the load moving
/// with t. On the command line the same expressions solve, and bad ones
/// are clear errors before any work.
#[test]
fn expressions_drive_boundary_values_and_loads() {
    use fem::expression::Expression;
    use fem::host::problem::nonlinear::time::Scheme;
    use fem::host::{AnyBackend, CpuBackend};
    use fem::mesh_solve::{run, GroupValue, LoadKind, Transient};
    let dir = common::scratch("mesh-solve-expressions");
    let cpu = AnyBackend::Cpu(CpuBackend::new(Some(2)).unwrap());
    let quad = dir.join("quad.msh").display().to_string();
    assert!(fem(&["mesh-gen", "--dim", "2", "--cells", "4", &quad]).status.success());
    let value = |g: &str, e: &str| GroupValue { group: g.into(), value: vec![Expression::parse(e).unwrap()] };
    let (square, plane) = ("x^2 + x*y - y^2/2", "1 + x - 2*y");
    let sides: Vec<GroupValue> = ["xmin", "xmax", "ymin", "ymax"].iter().map(|g| value(g, square)).collect();
    let options = |degree, dirichlet, load: &str, time| poisson_options(degree, dirichlet, LoadKind::Expression(vec![Expression::parse(load).unwrap()]), time);
    let disk = fixture("disk-v41.msh");
    let cases = [(&quad, sides, square, "-1"), (&disk, vec![value("rim", plane)], plane, "0")];
    for (path, dirichlet, exact, load) in cases {
        let u_exact = Expression::parse(exact).unwrap();
        let file = fem::host::io::gmsh::read_path(Path::new(path)).unwrap();
        let (space, u, report) = run(&cpu, &file, &options(2, dirichlet, load, None), &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
        assert!(report.newton.converged, "{path}");
        let err = space.dof_coords.iter().zip(&u).fold(0.0f64, |m, (x, v)| m.max((v - u_exact.at(x, 0.0)).abs()));
        assert!(err < 1e-9, "{path}: u differs from the exact solution by {err:e}");
    }
    let file = fem::host::io::gmsh::read_path(Path::new(&quad)).unwrap();
    let moving = vec![value("xmin", "t*x"), value("xmax", "t*x")];
    let time = Transient { dt: 0.25, steps: 4, scheme: Scheme::Theta(1.0), every: 1 };
    let mut seen = Vec::new();
    let (space, u, _) = run(&cpu, &file, &options(1, moving, "x", Some(time)), &|_| {}, &mut |s, _, t, u| {
        seen.push(s.dof_coords.iter().zip(u).fold(0.0f64, |m, (x, v)| m.max((v - t * x[0]).abs())));
        Ok(())
    })
    .unwrap();
    assert!(seen.len() >= 4, "{seen:?}");
    assert!(seen.iter().all(|&e| e < 1e-9), "u = t·x missed by {seen:?}");
    assert!(space.dof_coords.iter().zip(&u).all(|(x, v)| (v - x[0]).abs() < 1e-9));
    // the command line
    let r = solve_json(&["--mesh", &quad, "--physics", "poisson", "--dirichlet-group", "xmin=sin(PI*y),xmax", "--neumann-group", "ymin=x*(1-x)", "--load", "1 + x*y"]);
    assert_eq!(r["newton"]["converged"], true, "{r}");
    assert_eq!(r["load"]["Expression"][0], "1 + x*y", "{r}");
    for (args, says) in [(["--load", "2*w"]), (["--dirichlet-group", "xmin=sin(PI*x"])].iter().zip(["names `w`", "not an expression"]) {
        let mut all = vec!["solve", "--backend", "cpu", "--mesh", &quad, "--physics", "poisson"];
        all.extend_from_slice(args);
        let out = fem(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code() == Some(2) && err.contains(says), "{args:?}: {err}");
    }
}

/// `--physics mass` solves u = f in L²: with the sine load its error
/// against f falls at order p + 1 under refinement, Q1 and Q2.
#[test]
fn mass_projects_the_load_at_order_p_plus_one() {
    let dir = common::scratch("mesh-solve-mass");
    let quad = dir.join("quad.msh").display().to_string();
    assert!(fem(&["mesh-gen", "--dim", "2", "--cells", "2", &quad]).status.success());
    for (degree, order) in [("1", 2.0), ("2", 3.0)] {
        let errors: Vec<f64> = ["2", "3"].iter().map(|r| solve_json(&["--mesh", &quad, "--physics", "mass", "--degree", degree, "--refine", r, "--rtol", "1e-12"])["l2_error"].as_f64().unwrap()).collect();
        let rate = (errors[0] / errors[1]).log2();
        assert!((rate - order).abs() < 0.3, "Q{degree}: {errors:?}, order {rate}");
    }
}

/// `--precond pmg` on Q3 hexahedra, partially assembled and matrix-free:
/// Jacobi's solution (its L2 error) in a fraction of its iterations; on
/// Q1 it is an error.
#[test]
fn p_multigrid_preconditions_high_order_solves() {
    let dir = common::scratch("mesh-solve-pmg");
    let hex = dir.join("hex.msh").display().to_string();
    assert!(fem(&["mesh-gen", "--dim", "3", "--cells", "3", "--unstructured", &hex]).status.success());
    let run = |format: &str, precond: &str| solve_json(&["--mesh", &hex, "--physics", "poisson", "--degree", "3", "--format", format, "--precond", precond, "--rtol", "1e-10"]);
    let jacobi = run("partial", "jacobi");
    let its = |r: &serde_json::Value| r["newton"]["krylov_iterations"].as_u64().unwrap();
    for format in ["partial", "matrix-free"] {
        let r = run(format, "pmg");
        let (a, b) = (r["l2_error"].as_f64().unwrap(), jacobi["l2_error"].as_f64().unwrap());
        assert!((a - b).abs() < 1e-6 * b, "{format}: L2 error {a:e} against Jacobi's {b:e}");
        assert!(4 * its(&r) < its(&jacobi), "{format}: {} against Jacobi's {} iterations", its(&r), its(&jacobi));
    }
    // a level of degree 2 between: the same solution in no more iterations
    let two = run("partial", "pmg");
    let three = solve_json(&["--mesh", &hex, "--physics", "poisson", "--degree", "3", "--format", "partial", "--precond", "pmg", "--pmg-degrees", "2,1", "--rtol", "1e-10"]);
    let (a, b) = (three["l2_error"].as_f64().unwrap(), jacobi["l2_error"].as_f64().unwrap());
    assert!((a - b).abs() < 1e-6 * b && its(&three) <= its(&two), "Q3 → Q2 → Q1: {} iterations against {}, L2 error {a:e} against {b:e}", its(&three), its(&two));
    for (args, says) in [
        (&["--degree", "1", "--precond", "pmg"][..], "Q1 already"),
        (&["--degree", "3", "--precond", "pmg", "--pmg-degrees", "3,1"], "descend"),
        (&["--degree", "3", "--precond", "jacobi", "--pmg-degrees", "halving"], "configures --precond pmg"),
    ] {
        let mut all = vec!["solve", "--backend", "cpu", "--mesh", &hex, "--physics", "poisson"];
        all.extend_from_slice(args);
        let out = fem(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code() == Some(1) && err.contains(says), "{args:?}: {err}");
    }
}

/// The values of a little-endian `.npy` array of 8- or 4-byte elements,
/// as f64 (the test's reader of what `fem::host::io::npy` writes).
fn read_npy(path: &Path) -> Vec<f64> {
    let bytes = std::fs::read(path).unwrap();
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
    let data = &bytes[10 + len..];
    match &header[11..14] {
        "<f8" => data.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect(),
        "<i8" => data.chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        "<i4" => data.chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        d => panic!("{}: dtype {d}", path.display()),
    }
}

/// `--write-system` writes the first Newton update's system: for Q2
/// elasticity with a displaced side and a random load, the written
/// tangent times fem's update (u minus the start) is the written
/// right-hand side, the sizes in system.json are the solve's, and NumPy
/// (where Python has it) reads the arrays to the same product. Time steps
/// and a path that cannot be a folder are refused, writing nothing.
#[test]
fn the_written_system_is_the_one_newton_solves() {
    use fem::host::{AnyBackend, CpuBackend};
    use fem::mesh_solve::{run, GroupValue, LoadKind, Physics};
    let dir = common::scratch("mesh-solve-write-system");
    let quad = dir.join("quad.msh").display().to_string();
    assert!(fem(&["mesh-gen", "--dim", "2", "--cells", "5", &quad]).status.success());
    let cpu = AnyBackend::Cpu(CpuBackend::new(Some(2)).unwrap());
    let file = fem::host::io::gmsh::read_path(Path::new(&quad)).unwrap();
    let out = dir.join("system");
    let mut o = poisson_options(2, vec![GroupValue::constant("xmin", &[0.1, -0.05])], LoadKind::Random, None);
    o.physics = Physics::Elasticity;
    o.write_system = Some(out.clone());
    let (space, u, report) = run(&cpu, &file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
    assert!(report.newton.converged);
    let info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("system.json")).unwrap()).unwrap();
    assert_eq!((info["rows"].as_u64(), info["components"].as_u64(), info["dim"].as_u64()), (Some(u.len() as u64), Some(2), Some(2)), "{info}");
    assert_eq!(info["fixed_rows"].as_u64(), Some(report.fixed_rows as u64), "{info}");
    let (ptr, col, val, rhs) = (read_npy(&out.join("indptr.npy")), read_npy(&out.join("indices.npy")), read_npy(&out.join("data.npy")), read_npy(&out.join("rhs.npy")));
    assert_eq!(read_npy(&out.join("coordinates.npy")).len(), 2 * space.n_dofs);
    // the start: the held values, zero elsewhere
    let start: Vec<f64> = (0..u.len()).map(|r| if space.dof_coords[r / 2][0] < 1e-12 { [0.1, -0.05][r % 2] } else { 0.0 }).collect();
    let update: Vec<f64> = u.iter().zip(&start).map(|(a, b)| a - b).collect();
    let product: Vec<f64> = (0..u.len()).map(|r| (ptr[r] as usize..ptr[r + 1] as usize).map(|k| val[k] * update[col[k] as usize]).sum()).collect();
    let scale = rhs.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let err = product.iter().zip(&rhs).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(scale > 0.0 && err < 1e-8 * scale, "A (u − u₀) differs from the written right-hand side by {err:e} (of {scale:e})");
    let numpy = std::process::Command::new("python3").args(["-c", "import numpy, scipy"]).output();
    if numpy.is_ok_and(|o| o.status.success()) {
        fem::host::io::npy::write(&out.join("update.npy"), &[update.len()], update.iter().copied()).unwrap();
        let script = "import numpy as np, scipy.sparse as sp, sys\nd = sys.argv[1]\nl = lambda n: np.load(d + '/' + n + '.npy')\nb = l('rhs')\nA = sp.csr_matrix((l('data'), l('indices'), l('indptr')), shape=(len(b), len(b)))\nprint(np.abs(A @ l('update') - b).max() / np.abs(b).max())";
        let py = std::process::Command::new("python3").args(["-c", script, out.to_str().unwrap()]).output().unwrap();
        let rel: f64 = String::from_utf8_lossy(&py.stdout).trim().parse().unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&py.stderr)));
        assert!(rel < 1e-8, "NumPy reads a system off by {rel:e}");
    } else {
        eprintln!("SKIPPED: NumPy's reading of the arrays (python3 with numpy and scipy is not installed)");
    }
    let blocked = dir.join("a-file");
    std::fs::write(&blocked, "x").unwrap();
    let (refused, under_file) = (dir.join("refused"), blocked.join("sub"));
    for (target, extra, want) in [(&refused, vec!["--time-steps", "2"], "stationary"), (&under_file, vec![], "cannot write")] {
        let mut args = vec!["solve", "--backend", "cpu", "--mesh", &quad, "--physics", "poisson", "--write-system", target.to_str().unwrap()];
        args.extend_from_slice(&extra);
        let r = fem(&args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
        assert!(!target.exists(), "{extra:?} wrote {}", target.display());
    }
}
