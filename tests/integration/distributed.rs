//! `mpirun -np R fem solve --mesh FILE --physics ...` on 2, 3 and 4 CPU
//! ranks gives the one-rank solution, `mpirun -np R fem bp` the one-rank
//! product and solve, and a rank's error ends every rank.

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `mpirun` if present (CI installs it: there its absence fails the test).
fn mpirun() -> Option<&'static str> {
    let there = Command::new("mpirun").arg("--version").output().is_ok_and(|o| o.status.success());
    if !there {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI installs Open MPI (.ci/setup), but mpirun is missing");
        eprintln!("skipped: no mpirun on this machine");
    }
    there.then_some("mpirun")
}

/// Runs `fem args` on `ranks` ranks (one: without mpirun), failing the
/// test past a minute (a rank left waiting).
fn fem_on(ranks: usize, args: &[&str]) -> Output {
    let mut cmd = match ranks {
        1 => Command::new(env!("CARGO_BIN_EXE_fem")),
        r => {
            let mut c = Command::new("mpirun");
            c.args(["--oversubscribe", "-np", &r.to_string(), env!("CARGO_BIN_EXE_fem")]);
            c
        }
    };
    // one thread a rank: the ranks share the machine's cores
    let mut child = cmd
        .env("FEM_TUNING", "off")
        .env("RAYON_NUM_THREADS", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("{ranks} ranks of {args:?} still running after a minute");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The solution written to `vtu` by a solve on `ranks` ranks, and its report.
fn solution(ranks: usize, args: &[&str], vtu: &str) -> (Vec<f64>, serde_json::Value) {
    let mut all = vec!["solve", "--backend", "cpu", "--json", "--vtk", vtu];
    all.extend_from_slice(args);
    let out = fem_on(ranks, &all);
    assert!(out.status.success(), "{ranks} ranks, {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fields = fem::host::io::vtk::read_fields(&std::fs::read_to_string(vtu).unwrap()).unwrap();
    (fields.into_iter().find(|f| f.0 == "u").unwrap().1, report)
}

#[test]
fn ranks_solve_as_one_rank_does() {
    let Some(_) = mpirun() else { return };
    let dir = common::scratch("distributed");
    let (tet, hex) = (dir.join("tet.msh").display().to_string(), dir.join("hex.msh").display().to_string());
    for (path, args) in [(&tet, vec!["--dim", "3", "--cells", "5", "--simplex", "--unstructured"]), (&hex, vec!["--dim", "3", "--cells", "4", "--unstructured"])] {
        let mut all = vec!["mesh-gen"];
        all.extend_from_slice(&args);
        all.push(path);
        assert!(fem_on(1, &all).status.success());
    }
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("poisson P2", vec!["--mesh", &tet, "--physics", "poisson", "--degree", "2", "--load", "random"]),
        ("elasticity Q1", vec!["--mesh", &hex, "--physics", "elasticity", "--dirichlet-group", "xmin", "--load", "one", "--krylov", "gmres"]),
        ("radiation Q2, Newton", vec!["--mesh", &hex, "--physics", "radiation", "--degree", "2", "--robin-group", "xmax=4,ymin=-2", "--load", "one"]),
        ("poisson P2, Chebyshev", vec!["--mesh", &tet, "--physics", "poisson", "--degree", "2", "--load", "random", "--precond", "chebyshev"]),
        ("poisson Q3, element matrices", vec!["--mesh", &hex, "--physics", "poisson", "--degree", "3", "--load", "random", "--format", "lma"]),
        ("elasticity Q2, ELLPACK", vec!["--mesh", &hex, "--physics", "elasticity", "--degree", "2", "--dirichlet-group", "xmin", "--load", "one", "--format", "ell"]),
        ("elasticity Q2, matrix-free", vec!["--mesh", &hex, "--physics", "elasticity", "--degree", "2", "--dirichlet-group", "xmin", "--load", "one", "--format", "matrix-free"]),
        ("poisson P2, AMG", vec!["--mesh", &tet, "--physics", "poisson", "--degree", "2", "--load", "random", "--precond", "amg"]),
        ("elasticity Q1, AMG", vec!["--mesh", &hex, "--physics", "elasticity", "--dirichlet-group", "xmin", "--load", "one", "--precond", "amg"]),
    ];
    let mut iterations = Vec::new();
    for (name, args) in cases {
        let mut args = args;
        args.extend_from_slice(&["--rtol", "1e-12"]);
        let one = dir.join("one.vtu").display().to_string();
        let (u1, r1) = solution(1, &args, &one);
        let scale = u1.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(scale > 0.0 && r1.get("ranks").is_none(), "{name}");
        iterations.push(r1["newton"]["krylov_iterations"].as_u64().unwrap());
        for ranks in [2, 3, 4] {
            let vtu = dir.join(format!("r{ranks}.vtu")).display().to_string();
            let (u, r) = solution(ranks, &args, &vtu);
            let worst = u.iter().zip(&u1).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(worst <= 1e-10 * scale, "{name} on {ranks} ranks: {worst:e} of {scale:e}");
            let p = &r["ranks"];
            assert_eq!(p["ranks"], ranks, "{name}");
            let owned: u64 = p["owned_rows"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).sum();
            assert_eq!(owned, r["rows"].as_u64().unwrap(), "{name}: every row owned once");
            assert!(p["partition"]["cut_facets"].as_u64().unwrap() > 0 && p["halo_bytes"].as_array().unwrap().iter().all(|b| b.as_u64().unwrap() > 0), "{name}: {p}");
            assert_eq!(r["newton"]["steps"].as_array().unwrap().len(), r1["newton"]["steps"].as_array().unwrap().len(), "{name}: the same Newton updates");
            // the tangent stored as asked, on every rank as on one
            let kernels = r["newton"]["kernels"].as_str().unwrap();
            assert!(!name.contains("element") || kernels.contains("LMA"), "{name}: {kernels}");
            assert!(!name.contains("ELLPACK") || kernels.contains("ell"), "{name}: {kernels}");
            assert!(!name.contains("matrix-free") || kernels.contains("matrix-free"), "{name}: {kernels}");
            // AMG across ranks reports its partitioned hierarchy
            assert!(!name.contains("AMG") || r["newton"]["amg"]["builds"].as_u64() == Some(1), "{name}: {}", r["newton"]);
        }
    }
    // the degree-3 polynomial takes far fewer iterations than Jacobi on the same problem
    assert!(2 * iterations[3] < iterations[0], "Chebyshev {} against Jacobi {}", iterations[3], iterations[0]);
}

/// `--vtk u.pvtu` writes one piece a rank (its cells, each with its rank)
/// and the collection naming them; `--vtk u.vtu` the whole with the ranks.
#[test]
fn ranks_write_their_pieces_and_the_partition() {
    let Some(_) = mpirun() else { return };
    let dir = common::scratch("distributed-vtk");
    let tet = dir.join("tet.msh").display().to_string();
    assert!(fem_on(1, &["mesh-gen", "--dim", "3", "--cells", "4", "--simplex", &tet]).status.success());
    let (pvtu, vtu) = (dir.join("u.pvtu"), dir.join("u.vtu"));
    // the pieces by METIS, the whole by the Morton curve
    for (path, partitioner) in [(&pvtu, "metis"), (&vtu, "curve")] {
        let out = fem_on(3, &["solve", "--backend", "cpu", "--mesh", &tet, "--physics", "poisson", "--load", "random", "--json", "--partitioner", partitioner, "--vtk", path.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["ranks"]["partition"]["partitioner"].as_str().unwrap().to_lowercase(), partitioner);
    }
    // one rank has nothing to split
    let out = fem_on(1, &["solve", "--backend", "cpu", "--mesh", &tet, "--physics", "poisson", "--partitioner", "curve"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("mpirun"));
    let text = std::fs::read_to_string(&pvtu).unwrap();
    let mut cells = 0;
    for r in 0..3 {
        let name = format!("u-{r:04}.vtu");
        assert!(text.contains(&format!("<Piece Source=\"{name}\"/>")), "{text}");
        let fields = fem::host::io::vtk::read_fields(&std::fs::read_to_string(dir.join(&name)).unwrap()).unwrap();
        let rank = &fields.iter().find(|f| f.0 == "rank").unwrap().1;
        assert!(!rank.is_empty() && rank.iter().all(|&v| v == r as f64), "piece {r}: {rank:?}");
        cells += rank.len();
    }
    // 4³ cubes of 6 tetrahedra
    assert_eq!(cells, 384);
    let fields = fem::host::io::vtk::read_fields(&std::fs::read_to_string(&vtu).unwrap()).unwrap();
    let rank = &fields.iter().find(|f| f.0 == "rank").unwrap().1;
    assert_eq!(rank.len(), 384);
    assert!((0..3).all(|r| rank.contains(&(r as f64))));
}

#[test]
fn an_error_on_the_ranks_ends_them_all() {
    let Some(_) = mpirun() else { return };
    let dir = common::scratch("distributed-errors");
    let tet = dir.join("tet.msh").display().to_string();
    assert!(fem_on(1, &["mesh-gen", "--dim", "2", "--cells", "4", "--simplex", &tet]).status.success());
    for (args, want) in [
        (vec!["solve", "--backend", "cpu", "--mesh", &tet, "--physics", "poisson", "--precond", "ssor"], "Jacobi, Chebyshev, AMG or no preconditioner"),
        (vec!["solve", "--backend", "cpu", "--mesh", &tet, "--physics", "poisson", "--time-steps", "2"], "time stepping runs on one rank"),
        (vec!["solve", "--backend", "cpu", "--mesh", &tet, "--physics", "poisson", "--precision", "f32"], "leave the precision and scatter"),
        (vec!["solve", "--backend", "cpu", "--mesh", &tet, "--physics", "poisson", "--format", "lma", "--precond", "amg"], "element matrices (LMA) are preconditioned by Jacobi, Chebyshev"),
        (vec!["info"], "only `fem solve --mesh FILE --physics ...` and `fem bp` run across ranks"),
        // 3 ranks do not split 2×2×2 elements into bricks
        (vec!["bp", "--backend", "cpu", "--degree", "2", "--elements", "8"], "do not split 2×2×2 elements into bricks"),
        (vec!["bp", "--backend", "cpu", "--degree", "2-3"], "runs one --degree"),
    ] {
        let out = fem_on(3, &args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// Ranks as threads of this process (no mpirun): rank 0 gathers the
/// one-rank solution, every rank's piece holds it at its nodes (ghosts
/// filled), the pieces' own cells cover every cell once, and the report
/// counts what the one-rank report does.
#[test]
fn every_rank_holds_its_piece_of_the_solution() {
    use fem::mesh_solve::{run, run_on, LoadKind, MeshSolveOptions, Physics};
    let mesh = fem::host::mesh::BoxMesh::unstructured(3, 4, 9).build().unwrap();
    let file = fem::host::io::gmsh::GmshMesh::from_box_mesh(&mesh, &vec![0; mesh.n_cells()], &["domain"]).unwrap();
    let mut newton = fem::host::problem::nonlinear::NewtonOptions::default();
    newton.krylov_rtol = 1e-12;
    let o = MeshSolveOptions { physics: Physics::Elasticity, degree: 2, refine: 0, dirichlet: Vec::new(), neumann: Vec::new(), robin: Vec::new(), load: LoadKind::Random, young: 1.0, poisson_ratio: 0.3, newton, ordering: fem::host::solver::ordering::Ordering::Original, time: None, partitioner: fem::host::distributed::Partitioner::Metis, write_system: None, pmg_levels: fem::bp::PmgLevels::Degrees(vec![1]) };
    let cpu = fem::host::AnyBackend::Cpu(fem::host::CpuBackend::new(Some(1)).unwrap());
    let (space, want, one) = run(&cpu, &file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
    let (nc, scale) = (want.len() / space.n_dofs, want.iter().fold(0.0f64, |m, v| m.max(v.abs())));
    for ranks in [2, 3] {
        let out = fem::host::distributed::Threads::run(ranks, |comm| run_on(&cpu, comm, &file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap());
        let mut shown = 0;
        for (r, s) in out.iter().enumerate() {
            let p = s.piece.as_ref().unwrap();
            let worst = p.u.iter().enumerate().fold(0.0f64, |m, (i, a)| m.max((a - want[p.nodes[i / nc] as usize * nc + i % nc]).abs()));
            assert!(worst <= 1e-10 * scale, "rank {r} of {ranks}: piece off by {worst:e}");
            assert_eq!(s.whole.is_some(), r == 0);
            if let Some((whole, u)) = &s.whole {
                assert_eq!(whole.n_dofs, space.n_dofs);
                let worst = u.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(worst <= 1e-10 * scale, "{ranks} ranks: gathered off by {worst:e}");
            }
            shown += p.own_cells.len();
            let rep = &s.report;
            assert_eq!((rep.cells, rep.rows, rep.fixed_rows), (one.cells, one.rows, one.fixed_rows), "rank {r} of {ranks}");
            // rank 0 partitions and cuts the shares; the others receive theirs
            let stages: Vec<&str> = rep.host_setup_split.iter().map(|s| s.stage.as_str()).collect();
            assert_eq!(stages.contains(&"partition"), r == 0, "{stages:?}");
            assert!(stages.ends_with(&["shares", "pattern"]), "{stages:?}");
        }
        assert_eq!(shown, space.n_cells(), "{ranks} ranks");
    }
}

/// `fem bp` on 1 (under mpirun), 2, 3 and 4 ranks: bricks that split the
/// grid unevenly, the same product of the same global vector, and the
/// same Jacobi-CG solve as `fem bp` on one rank without mpirun.
#[test]
fn bp_on_ranks_applies_and_solves_as_one_rank() {
    let Some(_) = mpirun() else { return };
    let args = ["bp", "--backend", "cpu", "--problem", "bp3.0", "--degree", "3", "--elements", "90", "--deform", "curved", "--solve", "1e-10", "--repeats", "1", "--json"];
    let out = fem_on(1, &[&args[..], &["--assembled"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let one: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut first: Option<f64> = None;
    for ranks in [1, 2, 3, 4] {
        let mut c = Command::new("mpirun");
        c.args(["--oversubscribe", "-np", &ranks.to_string(), env!("CARGO_BIN_EXE_fem")]).args(args);
        let out = c.env("RAYON_NUM_THREADS", "1").env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1").env("FEM_TUNING", "off").output().unwrap();
        assert!(out.status.success(), "{ranks} ranks: {}", String::from_utf8_lossy(&out.stderr));
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let num = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"));
        assert_eq!((r["ranks"].as_u64(), r["global_nodes"].as_u64()), (Some(ranks as u64), one["global_nodes"].as_u64()));
        let owned: u64 = r["owned_nodes"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(Some(owned), one["global_nodes"].as_u64(), "{ranks} ranks own every node once");
        let cells: u64 = r["partition"]["cells"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(cells, 90);
        // the norm of the product of the same vector, whatever the split
        let norm = num(&r, "product_norm");
        let want = *first.get_or_insert(norm);
        assert!((norm - want).abs() <= 1e-12 * want, "{ranks} ranks: ‖Ax‖ {norm} against {want}");
        assert_eq!(r["halo_bytes_per_apply"].as_array().unwrap().iter().any(|b| b.as_u64() > Some(0)), ranks > 1);
        // the solve of one rank: its iterations (give or take rounding) and error
        let (s, w) = (&r["solve"], &one["solve"]);
        assert_eq!(s["converged"].as_bool(), Some(true), "{ranks} ranks");
        let (its, want_its) = (num(s, "iterations"), num(w, "iterations"));
        assert!((its - want_its).abs() <= 2.0, "{ranks} ranks: {its} iterations against {want_its}");
        let (e, we) = (num(s, "max_nodal_error"), num(w, "max_nodal_error"));
        assert!((e - we).abs() <= 1e-6 * we, "{ranks} ranks: error {e:e} against {we:e}");
    }
}
