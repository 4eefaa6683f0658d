//! The `fem` binary: output formats and exit codes (0 ok, 1 error, 2 usage).

use crate::common;
use common::{fem, scratch};

fn has_gpu() -> bool {
    fem::host::backend::cuda::device_count().is_ok_and(|n| n > 0)
}

#[test]
fn info_json_lists_backends_and_ptx() {
    let out = fem(&["info", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let backends = v["backends"].as_array().unwrap();
    assert_eq!(backends[0]["name"], "cpu");
    assert_eq!(backends[0]["available"], true);
    assert_eq!(backends[1]["name"], "cuda");
    assert_eq!(backends[1]["available"], has_gpu() && fem::KERNELS_PTX.is_built());
    assert_eq!(v["ptx"]["kernel_crate"], "fem-kernels");
    let targets = v["ptx"]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), fem::KERNELS_PTX.sources.len());
    if let Some(t) = targets.first() {
        assert!(t["kernels"].as_array().unwrap().iter().any(|k| k == "fem_dot_partial_f64"));
    }
}

#[test]
fn info_text_names_the_ptx_targets() {
    let out = fem(&["info"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("backends:") && text.contains("cpu   available"));
    for s in fem::KERNELS_PTX.sources {
        assert!(text.contains(&format!("embedded PTX: fem-kernels for {}", s.arch)), "{text}");
    }
}

#[test]
fn cpu_demo_passes_and_reports_bandwidth() {
    let out = fem(&["demo", "kernels", "--backend", "cpu", "--size", "100003", "--repeats", "3", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["passed"], true);
    assert_eq!(v["backend"], "cpu");
    assert_eq!(v["n"], 100003);
    assert!(v["copy"]["bytes_per_second"].as_f64().unwrap() > 0.0);
    assert_eq!(v["ops"].as_array().unwrap().len(), 5);
}

#[test]
fn cpu_demo_text_in_single_precision() {
    let out = fem(&["demo", "kernels", "--backend", "cpu", "--size", "4097", "--repeats", "2", "--precision", "f32"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("f32 vectors of 4097 elements") && text.contains("all results agree"), "{text}");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(fem(&["demo", "--backend", "opencl"]).status.code(), Some(2));
    assert_eq!(fem(&["demo", "kernels", "--repeats", "0"]).status.code(), Some(2));
    assert_eq!(fem(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(fem(&[]).status.code(), Some(2));
}

#[test]
fn errors_exit_1_with_a_message() {
    let out = fem(&["demo", "kernels", "--backend", "cpu", "--size", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: invalid argument"));
    if !has_gpu() {
        let out = fem(&["demo", "kernels", "--backend", "cuda"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("CUDA is not available"));
    }
}

#[test]
fn help_has_examples() {
    let out = fem(&["demo", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("fem demo --backend cpu --refine 2"));
    let out = fem(&["demo", "kernels", "--help"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("fem demo kernels --backend cpu"));
}

#[test]
fn spmv_json_reports_the_fields_of_the_issue() {
    let out = fem(&[
        "spmv",
        "--generate",
        "fem:dim=2,degree=2,rows=3000",
        "--format",
        "k1r",
        "--backend",
        "cpu",
        "--repeats",
        "3",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "k1r");
    for k in [
        "rows",
        "nnz",
        "seconds_per_spmv",
        "gbytes_per_second",
        "roofline_fraction",
        "max_abs_error_vs_csr",
    ] {
        assert!(v[k].is_number(), "{k} missing: {v}");
    }
    assert!(v["max_abs_error_vs_csr"].as_f64().unwrap() < 1e-12);
    assert_eq!(v["nnz"], v["stats"]["nnz"]);
}

#[test]
fn spmv_all_formats_side_by_side_from_a_written_file() {
    let dir = scratch("cli-mm");
    let path = dir.join("q2.mtx");
    let p = path.to_str().unwrap();
    let out = fem(&[
        "matrix-gen",
        "fem:dim=2,degree=2,rows=2000",
        p,
        "--symmetric",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = fem(&[
        "spmv",
        "--matrix",
        p,
        "--format",
        "all",
        "--backend",
        "cpu",
        "--repeats",
        "2",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["format"].as_str().unwrap())
        .collect();
    for f in ["ell", "k1", "k1r", "k1rs", "k2", "k2r", "k2rs"] {
        assert!(names.contains(&f), "{f} missing from {names:?}");
    }
    assert!(
        names.iter().any(|n| n.starts_with("csr")) && names.iter().any(|n| n.starts_with("ellt"))
    );
    assert!(v["reports"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["max_abs_error_vs_csr"].as_f64().unwrap() < 1e-12));
    let out = fem(&["matrix-stats", p]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("matrix\tnz\tnrows\tbytes\tminrow\tmaxrow\tnz/nrows"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn spmv_rejects_malformed_files_and_impossible_formats() {
    let dir = scratch("cli-bad");
    let bad = dir.join("bad.mtx");
    std::fs::write(
        &bad,
        "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n3 1 2\n",
    )
    .unwrap();
    let out = fem(&[
        "spmv",
        "--matrix",
        bad.to_str().unwrap(),
        "--backend",
        "cpu",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 4: row 3 is outside 1..=2"));
    let out = fem(&[
        "spmv",
        "--generate",
        "powerlaw:rows=5000,max=3000",
        "--format",
        "ell",
        "--backend",
        "cpu",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("use an ELL-WARP format"));
    let out = fem(&[
        "spmv",
        "--generate",
        "fem:dim=2,degree=1,rows=500",
        "--format",
        "k3",
        "--backend",
        "cpu",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let out = fem(&[
        "matrix-gen",
        "powerlaw:rows=100",
        dir.join("p.mtx").to_str().unwrap(),
        "--symmetric",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "an unsymmetric matrix cannot be written as symmetric"
    );
    assert!(!dir.join("p.mtx").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn hole_benchmark_json_has_the_solver_fields() {
    let out = fem(&["solve", "--problem", "hole", "--dim", "2", "--degree", "1", "--levels", "3", "--solver", "mg", "--precond", "spai", "--backend", "cpu", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in ["dofs", "iterations", "relative_residual", "setup_seconds", "solve_seconds"] {
        assert!(v[k].is_number(), "{k} missing: {v}");
    }
    assert!(v["relative_residual"].as_f64().unwrap() <= 1e-8);
    assert_eq!((v["solver"].as_str(), v["cycle"].as_str()), (Some("mg"), Some("f")));
    let out = fem(&["solve", "--problem", "hole", "--solver", "cg", "--precond", "spai", "--levels", "2", "--backend", "cpu"]);
    assert_eq!(out.status.code(), Some(1), "SPAI is refused as a CG preconditioner");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not symmetric"));
    let out = fem(&["solve", "--problem", "hole", "--levels", "2", "--backend", "cpu", "--bench"]);
    assert_eq!(out.status.code(), Some(1), "--bench is refused, not ignored");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bench"));
    // 12 levels of 3D Q2 (10^13 nodes) are refused with their size before
    // the mesh is made, and no output file is started
    let vtk = scratch("cli-hole-too-large").join("u.vtu");
    let out = fem(&["solve", "--problem", "hole", "--dim", "3", "--degree", "2", "--levels", "12", "--backend", "cpu", "--vtk", vtk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("12 levels") && err.contains("GiB of host memory"), "{err}");
    assert!(!vtk.exists());
}

#[test]
fn bp_reports_throughput_and_solves() {
    let out = fem(&["bp", "--problem", "bp3.0", "--degree", "2", "--elements", "8", "--backend", "cpu", "--repeats", "2", "--solve", "1e-10", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["problem"], "bp3.0");
    assert_eq!(v["dofs"], 8 * 27);
    for key in ["seconds_per_apply", "gdofs_per_second", "tflops", "roofline_fraction"] {
        assert!(v[key].as_f64().unwrap() > 0.0, "{key}");
    }
    assert_eq!(v["max_rel_error_vs_cpu"], 0.0);
    assert!(v["solve"]["converged"].as_bool().unwrap());
    // the L2 mode is the GPU's: the CPU's own data, once
    assert_eq!((v.get("l2"), v["data_copies"].as_u64()), (None, Some(1)));
    // several degrees: one JSON object per line
    let out = fem(&["bp", "--problem", "bp1", "--degree", "1-3", "--elements", "2", "--backend", "cpu", "--repeats", "1", "--json"]);
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.iter().map(|v| v["degree"].as_u64().unwrap()).collect::<Vec<_>>(), vec![1, 2, 3]);
}

#[test]
fn bp_solves_with_p_multigrid() {
    let out = fem(&["bp", "--problem", "bp3.5", "--degree", "3", "--elements", "27", "--backend", "cpu", "--repeats", "1", "--solve", "1e-8", "--precond", "pmg", "--chebyshev-degree", "2", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["solve"];
    assert_eq!((s["preconditioner"].as_str(), s["converged"].as_bool()), (Some("p-multigrid"), Some(true)));
    assert_eq!((s["p_multigrid"]["rows"][1].as_u64(), s["p_multigrid"]["chebyshev"].as_u64()), (Some(64), Some(2)));
    assert!(s["setup_seconds"].as_f64().unwrap() > 0.0 && s["p_multigrid"]["amg"]["levels"].as_array().is_some_and(|l| !l.is_empty()));
    let stages: Vec<&str> = s["p_multigrid"]["setup"].as_array().unwrap().iter().map(|st| st["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["levels", "degree-1 assembly", "AMG", "operators and transfers", "smoothers"]);
    // pmg's options without it, and pmg without a solve, are refused
    let out = fem(&["bp", "--degree", "3", "--elements", "8", "--backend", "cpu", "--solve", "1e-8", "--chebyshev-degree", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--precond pmg"));
    assert_eq!(fem(&["bp", "--degree", "3", "--backend", "cpu", "--precond", "pmg"]).status.code(), Some(2), "clap: --precond needs --solve");
    // halving from N = 4: levels 4, 2, 1; a list that does not end at 1 is refused
    let out = fem(&["bp", "--problem", "bp3.5", "--degree", "4", "--elements", "8", "--backend", "cpu", "--repeats", "1", "--solve", "1e-8", "--precond", "pmg", "--pmg-degrees", "halving", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["solve"]["p_multigrid"]["degrees"], serde_json::json!([4, 2, 1]));
    let out = fem(&["bp", "--degree", "4", "--elements", "8", "--backend", "cpu", "--solve", "1e-8", "--precond", "pmg", "--pmg-degrees", "3,2"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn bp_rejects_bad_input() {
    for args in [&["bp", "--problem", "bp9", "--backend", "cpu"][..], &["bp", "--degree", "16", "--backend", "cpu"], &["bp", "--problem", "bp1", "--solve", "1e-8", "--degree", "1", "--elements", "1", "--backend", "cpu"]] {
        let out = fem(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("error"), "{args:?}");
    }
    assert_eq!(fem(&["bp", "--degree", "x"]).status.code(), Some(1));
    assert_eq!(fem(&["bp", "--l2", "lukewarm", "--backend", "cpu"]).status.code(), Some(2), "clap refuses an unknown L2 mode");
}

#[test]
fn residual_json_has_the_fields_of_the_issue() {
    for (problem, dim, degree) in [("poisson", "2", "1"), ("elasticity", "3", "2")] {
        let out = fem(&["residual", "--problem", problem, "--dim", dim, "--degree", degree, "--cells", "3000", "--backend", "cpu", "--repeats", "2", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for k in ["cells", "seconds", "gflops", "gbytes_per_second", "roofline_fraction", "max_abs_error_vs_cpu", "beta_paper", "beta_measured"] {
            assert!(v[k].is_number(), "{problem}: {k} missing in {v}");
        }
        assert_eq!(v["problem"], problem);
        assert_eq!(v["element"], if dim == "2" { "tri" } else { "tet" });
        let cells = v["cells"].as_u64().unwrap();
        assert!((1500..6000).contains(&cells), "about 3000 cells, got {cells}");
        assert!(v["seconds"].as_f64().unwrap() > 0.0 && v["gflops"].as_f64().unwrap() > 0.0);
        // on the CPU the CPU is the reference
        assert_eq!(v["max_abs_error_vs_cpu"].as_f64(), Some(0.0));
    }
    let out = fem(&["residual", "--problem", "poisson", "--element", "tensor", "--dim", "3", "--degree", "2", "--cells", "500", "--backend", "cpu", "--repeats", "1", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["element"].as_str(), v["quadrature_points"].as_u64()), (Some("hex"), Some(27)));
}

#[test]
fn residual_rejects_bad_input() {
    for (args, says) in [
        (vec!["residual", "--problem", "stokes"], "unknown problem"),
        (vec!["residual", "--degree", "3"], "degree 1 or 2"),
        (vec!["residual", "--quadrature", "7", "--cells", "100"], "7 quadrature points"),
        (vec!["residual", "--problem", "elasticity", "--element", "tensor", "--degree", "4", "--cells", "100"], "no quad P4 variant"),
        (vec!["residual", "--cells", "0"], "at least 1"),
    ] {
        let mut args = args.clone();
        args.extend(["--backend", "cpu"]);
        let out = fem(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(fem(&["residual", "--dim", "4"]).status.code(), Some(2));
    let help = fem(&["residual", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("fem residual --problem elasticity"));
}

/// A Gmsh 4.1 ASCII file of the tetrahedra of a slab.
fn slab_msh(path: &std::path::Path) {
    let mesh = fem::host::mesh::heart::slab([12.0, 3.0, 3.0], [8, 2, 2]).unwrap();
    let (nn, ne) = (mesh.coords.len(), mesh.n_cells());
    let mut s = format!("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 {nn} 1 {nn}\n3 1 0 {nn}\n");
    (1..=nn).for_each(|t| s += &format!("{t}\n"));
    mesh.coords.iter().for_each(|x| s += &format!("{} {} {}\n", x[0], x[1], x[2]));
    s += &format!("$EndNodes\n$Elements\n1 {ne} 1 {ne}\n3 1 4 {ne}\n");
    for (e, c) in mesh.cells.iter().enumerate() {
        s += &format!("{} {} {} {} {}\n", e + 1, c[0] + 1, c[1] + 1, c[2] + 1, c[3] + 1);
    }
    s += "$EndElements\n";
    std::fs::write(path, s).unwrap();
}

/// The slab of [`slab_msh`] in two volumes: physical group 1 `healthy`
/// (x < 6) and 2 `border` (the rest).
fn slab_regions_msh(path: &std::path::Path) {
    let mesh = fem::host::mesh::heart::slab([12.0, 3.0, 3.0], [8, 2, 2]).unwrap();
    let nn = mesh.coords.len();
    let mut s = format!("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$PhysicalNames\n2\n3 1 \"healthy\"\n3 2 \"border\"\n$EndPhysicalNames\n");
    s += "$Entities\n0 0 0 2\n1 0 0 0 0 0 0 1 1 0\n2 0 0 0 0 0 0 1 2 0\n$EndEntities\n";
    s += &format!("$Nodes\n1 {nn} 1 {nn}\n3 1 0 {nn}\n");
    (1..=nn).for_each(|t| s += &format!("{t}\n"));
    mesh.coords.iter().for_each(|x| s += &format!("{} {} {}\n", x[0], x[1], x[2]));
    let side: Vec<usize> = mesh.cells.iter().map(|c| (c[..4].iter().map(|&v| mesh.coords[v as usize][0]).sum::<f64>() >= 24.0) as usize).collect();
    let ne = mesh.n_cells();
    s += &format!("$EndNodes\n$Elements\n2 {ne} 1 {ne}\n");
    let mut tag = 1;
    for r in 0..2 {
        let cells: Vec<&[u32; 4]> = mesh.cells.iter().zip(&side).filter(|(_, &k)| k == r).map(|(c, _)| c).collect();
        s += &format!("3 {} 4 {}\n", r + 1, cells.len());
        for c in cells {
            s += &format!("{tag} {} {} {} {}\n", c[0] + 1, c[1] + 1, c[2] + 1, c[3] + 1);
            tag += 1;
        }
    }
    s += "$EndElements\n";
    std::fs::write(path, s).unwrap();
}

#[test]
fn cardiac_conductivity_regions_from_physical_groups() {
    let dir = scratch("cardiac-regions");
    let (msh, pvd) = (dir.join("slab2.msh"), dir.join("slab.pvd"));
    slab_regions_msh(&msh);
    let out = fem(&["cardiac", "--mesh", msh.to_str().unwrap(), "--conductivity", "border=0.25", "--steps", "2", "--stimulus", "0,1.5,1.5,3", "--vtk", pvd.to_str().unwrap(), "--vtk-every", "2", "--backend", "cpu", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let fields = fem::host::io::vtk::read_fields(&std::fs::read_to_string(dir.join("slab_000002.vtu")).unwrap()).unwrap();
    let c = &fields.iter().find(|f| f.0 == "conductivity").expect("conductivity written").1;
    assert_eq!(c.len(), 192);
    assert_eq!((c.iter().filter(|&&f| f == 1.0).count(), c.iter().filter(|&&f| f == 0.25).count()), (96, 96));
    for (args, says) in [
        (vec!["--mesh", msh.to_str().unwrap(), "--conductivity", "scar=0.5"], "no cell physical group `scar`"),
        (vec!["--mesh", "generated:3000", "--conductivity", "1=0.5"], "need a .msh mesh"),
    ] {
        let out = fem(&[&["cardiac", "--steps", "1", "--backend", "cpu"], &args[..]].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(fem(&["cardiac", "--mesh", msh.to_str().unwrap(), "--conductivity", "border=0"]).status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cardiac_json_vtk_series_and_gmsh_meshes() {
    let dir = scratch("cardiac");
    let pvd = dir.join("heart.pvd");
    let out = fem(&["cardiac", "--mesh", "generated:3000", "--steps", "6", "--dt", "0.2", "--vtk", pvd.to_str().unwrap(), "--vtk-every", "3", "--backend", "cpu", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["nodes"].as_u64().unwrap() > 2000 && v["cells"].as_u64().unwrap() > v["nodes"].as_u64().unwrap());
    assert_eq!(v["steps"], 6);
    let steps = v["per_step"].as_array().unwrap();
    assert_eq!(steps.len(), 6);
    // The stimulus makes Newton work in every step, and CG in every Newton iteration.
    assert!(steps.iter().all(|s| s["newton_iterations"].as_u64().unwrap() >= 1 && s["cg_iterations"].as_u64().unwrap() >= s["newton_iterations"].as_u64().unwrap()));
    assert!(v["summary"]["split"]["solve"].as_f64().unwrap() > 0.0);
    assert!(v["activated_fraction"].as_f64().unwrap() > 0.0);
    // Steps 0, 3 and 6 and the collection naming them.
    let collection = std::fs::read_to_string(&pvd).unwrap();
    for k in [0, 3, 6] {
        let name = format!("heart_{k:06}.vtu");
        assert!(collection.contains(&name), "{collection}");
        let fields = fem::host::io::vtk::read_fields(&std::fs::read_to_string(dir.join(&name)).unwrap()).unwrap();
        let phi = &fields.iter().find(|f| f.0 == "phi").unwrap().1;
        assert_eq!(phi.len() as u64, v["nodes"].as_u64().unwrap());
        let fibre = &fields.iter().find(|f| f.0 == "fibre").unwrap().1;
        assert_eq!(fibre.len() as u64, 3 * v["cells"].as_u64().unwrap());
        if k == 0 {
            assert!(phi.iter().all(|&p| p == 0.0));
        } else {
            assert!(phi.iter().any(|&p| p > 0.1), "step {k} shows no excitation");
        }
    }
    // A Gmsh file of tetrahedra, stimulated at one end.
    let msh = dir.join("slab.msh");
    slab_msh(&msh);
    let out = fem(&["cardiac", "--mesh", msh.to_str().unwrap(), "--steps", "5", "--stimulus", "0,1.5,1.5,3", "--backend", "cpu"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("81 nodes, 192 tetrahedra") && text.contains("5 steps"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cardiac_rejects_bad_input() {
    let dir = scratch("cardiac-bad");
    let hexes = dir.join("hex.msh");
    fem::host::io::gmsh::write_path(&fem::host::mesh::BoxMesh::structured(3, 2).build().unwrap(), false, &hexes).unwrap();
    let pvd = dir.join("never.pvd");
    for (args, says) in [
        (vec!["cardiac", "--mesh", "generated:10"], "N ≥ 100"),
        (vec!["cardiac", "--mesh", "heart.stl"], "neither generated:N nor a .msh"),
        (vec!["cardiac", "--mesh", hexes.to_str().unwrap()], "Hexahedron8 (8), which this solver cannot use: the simplex solvers take triangles and tetrahedra"),
        (vec!["cardiac", "--mesh", "generated:3000", "--dt", "0"], "dt > 0"),
        (vec!["cardiac", "--mesh", "generated:3000", "--stimulus", "1,2"], "x,y,z,radius"),
        (vec!["cardiac", "--mesh", "generated:3000", "--assembly", "colour"], "unknown assembly"),
        (vec!["cardiac", "--mesh", "generated:3000", "--steps", "0"], "at least 1"),
        (vec!["cardiac", "--mesh", "generated:3000", "--vtk", "out.vtu"], ".pvd"),
        (vec!["cardiac", "--mesh", "generated:3000", "--steps", "1", "--dt", "1000", "--vtk", pvd.to_str().unwrap()], "smaller time step"),
    ] {
        let mut args = args.clone();
        args.extend(["--backend", "cpu"]);
        let out = fem(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // A failed run leaves no collection behind.
    assert!(!pvd.exists());
    assert_eq!(fem(&["cardiac", "--steps", "x"]).status.code(), Some(2));
    assert!(String::from_utf8_lossy(&fem(&["cardiac", "--help"]).stdout).contains("fem cardiac --mesh generated:30000"));
    std::fs::remove_dir_all(&dir).ok();
}

/// `--vtk` on the hole benchmark (u_h on its finest mesh, 1 on the hole,
/// 0 outside, f = 1 ≥ 0 so u_h ≥ 0) and on the BP3 solve (Lagrange
/// hexahedra of order N near its exact solution).
#[test]
fn hole_and_bp_write_vtk_files() {
    use fem::host::io::vtk::read_fields;
    let dir = scratch("cli-vtk");
    let hole = dir.join("hole.vtu");
    let out = fem(&["solve", "--problem", "hole", "--dim", "2", "--degree", "2", "--levels", "3", "--backend", "cpu", "--json", "--vtk", hole.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&hole).unwrap();
    let u = &read_fields(&text).unwrap()[0].1;
    assert!(text.contains(&format!("NumberOfPoints=\"{}\"", u.len())));
    let (lo, hi) = u.iter().fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    assert!(lo > -1e-6 && hi >= 1.0 - 1e-12, "u_h in [{lo}, {hi}]");

    let bp = dir.join("bp.vtu");
    let out = fem(&["bp", "--problem", "bp3.5", "--degree", "4", "--elements", "27", "--deform", "curved", "--solve", "1e-10", "--backend", "cpu", "--json", "--vtk", bp.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&bp).unwrap();
    let fields = read_fields(&text).unwrap();
    let get = |n: &str| fields.iter().find(|f| f.0 == n).unwrap().1.clone();
    let (u, exact, err) = (get("u"), get("u_exact"), get("error"));
    assert_eq!(u.len(), 27 * 125);
    assert!(err.iter().all(|e| e.abs() < 0.01), "max error {}", err.iter().fold(0.0f64, |m, e| m.max(e.abs())));
    assert!(u.iter().zip(&exact).zip(&err).all(|((a, b), e)| (a - b - e).abs() < 1e-15));
    // --vtk needs --solve, and one degree
    assert_eq!(fem(&["bp", "--degree", "4", "--backend", "cpu", "--vtk", bp.to_str().unwrap()]).status.code(), Some(2));
    let out = fem(&["bp", "--degree", "2,3", "--solve", "1e-6", "--backend", "cpu", "--vtk", bp.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("one --degree"));
}

#[test]
fn solve_numbering_defaults_to_what_serves_the_format() {
    let solve = |extra: &[&str]| {
        let mut args = vec!["solve", "--dim", "2", "--degree", "2", "--cells", "6", "--backend", "cpu", "--json"];
        args.extend_from_slice(extra);
        let out = fem(&args);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (v["numbering"].as_str().unwrap().to_string(), v["l2_error"].as_f64().unwrap())
    };
    let lma = solve(&["--format", "lma"]);
    let csr = solve(&["--format", "csr"]);
    let lma_original = solve(&["--format", "lma", "--numbering", "original"]);
    let ell_blocked = solve(&["--format", "ell", "--numbering", "blocked-aligned"]);
    assert_eq!([&lma.0, &csr.0, &lma_original.0, &ell_blocked.0], ["aligned", "original", "original", "blocked-aligned"]);
    // The numbering orders the unknowns; the solution is the same.
    for e in [lma.1, lma_original.1, ell_blocked.1] {
        assert!((e - csr.1).abs() <= 1e-6 * csr.1, "{e} vs {}", csr.1);
    }
    let out = fem(&["solve", "--format", "lma", "--numbering", "zigzag", "--backend", "cpu"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("zigzag"));
}

/// The command's stages in the order they ran: with a given format the
/// mesh and the DOFs are made before the backend's start is waited for;
/// with `auto` the backend starts first and the choice is a stage.
#[test]
fn solve_makes_the_dofs_while_the_backend_starts() {
    let stages = |format: &str| -> Vec<String> {
        let out = fem(&["solve", "--dim", "2", "--degree", "2", "--cells", "6", "--backend", "cpu", "--json", "--format", format]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap().to_string()).collect()
    };
    let at = |s: &[String], name: &str| s.iter().position(|x| x == name).unwrap_or_else(|| panic!("no {name} in {s:?}"));
    let given = stages("ell");
    assert!(at(&given, "mesh") < at(&given, "DOF numbering") && at(&given, "DOF numbering") < at(&given, "backend start"), "{given:?}");
    assert!(!given.iter().any(|s| s == "format choice"), "{given:?}");
    let auto = stages("auto");
    assert!(at(&auto, "backend start") < at(&auto, "format choice") && at(&auto, "format choice") < at(&auto, "DOF numbering"), "{auto:?}");
}

/// `--bench` works on the CPU backend too: every format's product is
/// timed against the CPU's copy of the same bytes (the bytes model the
/// GPU uses), and CG starts from a random guess, so it takes more than
/// the few iterations the sine load needs from zero.
#[test]
fn solve_bench_times_the_product_on_the_cpu() {
    let run = |extra: &[&str]| {
        let mut args = vec!["solve", "--dim", "2", "--degree", "2", "--cells", "24", "--backend", "cpu", "--json"];
        args.extend_from_slice(extra);
        let out = fem(&args);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let plain = run(&[]);
    assert!(plain["spmv"].is_null());
    for format in ["csr", "ell", "lazy-ell", "lma", "matrix-free"] {
        let v = run(&["--format", format, "--bench"]);
        let b = &v["spmv"];
        let (seconds, bytes, fraction) = (b["seconds"].as_f64().unwrap(), b["bytes"].as_u64().unwrap(), b["roofline_fraction"].as_f64().unwrap());
        assert!(seconds > 0.0 && bytes > 8 * v["rows"].as_u64().unwrap() && fraction > 0.0, "{format}: {b}");
        assert!(b["copy_bytes_per_second"].as_f64().unwrap() > 0.0, "{format}: {b}");
        assert!(v["iterations"].as_u64().unwrap() > plain["iterations"].as_u64().unwrap(), "{format}: a random start");
        assert!((v["l2_error"].as_f64().unwrap() - plain["l2_error"].as_f64().unwrap()).abs() < 1e-6, "{format}");
    }
}

/// `fem solve` has three paths (the Q_p Poisson formats, the pipeline of
/// --physics, the hole benchmark): an option given to a path that does not
/// read it, or to a backend or format it does not act on, is an error
/// before any work, exit 1, naming the options; the same options where
/// they apply still solve.
#[test]
fn solve_refuses_options_its_path_ignores() {
    let dir = scratch("solve-unread");
    let quad = dir.join("quad.msh");
    assert!(fem(&["mesh-gen", "--dim", "2", "--cells", "3", quad.to_str().unwrap()]).status.success());
    let q = quad.to_str().unwrap();
    let cases: [(&[&str], &str); 9] = [
        (&["--mesh", q, "--physics", "poisson", "--levels", "3"], "--levels does not apply to the pipeline's"),
        (&["--mesh", q, "--physics", "poisson", "--numbering", "aligned", "--products", "3"], "--numbering, --products do not apply to the pipeline's"),
        (&["--problem", "hole", "--format", "csr"], "--format does not apply to the hole benchmark"),
        (&["--dim", "2", "--cells", "4", "--load", "random", "--krylov", "gmres"], "--load, --krylov do not apply to the Q_p Poisson formats"),
        (&["--dim", "2", "--cells", "4", "--format", "csr", "--symmetric"], "--symmetric packs the element matrices of --format lma"),
        (&["--dim", "2", "--cells", "4", "--format", "lma", "--products", "10"], "--products weighs the choice of --format auto"),
        (&["--dim", "2", "--cells", "4", "--scatter", "colour"], "the CPU backend has no such choice"),
        (&["--dim", "2", "--cells", "4", "--format", "ell", "--threads-per-row", "4"], "--threads-per-row sets the GPU's CSR product"),
        (&["--dim", "2", "--cells", "4", "--local", "redundant"], "--local chooses the GPU's local assembly"),
    ];
    let vtu = dir.join("never.vtu");
    for (args, says) in cases {
        let mut all = vec!["solve", "--backend", "cpu", "--vtk", vtu.to_str().unwrap()];
        all.extend_from_slice(args);
        let out = fem(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code() == Some(1) && err.contains(says), "{args:?}: {err}");
        assert!(!vtu.exists(), "{args:?} wrote a file");
    }
    for args in [&["--dim", "2", "--cells", "4", "--format", "lma", "--symmetric", "--numbering", "aligned"][..], &["--mesh", q, "--physics", "poisson", "--krylov", "gmres", "--load", "random", "--precision", "f32"], &["--problem", "hole", "--levels", "2", "--precision", "f32", "--rtol", "1e-5"]] {
        let mut all = vec!["solve", "--backend", "cpu"];
        all.extend_from_slice(args);
        let out = fem(&all);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // GPU launch settings of fem bp and fem residual on the CPU backend
    for (args, says) in [
        (&["bp", "--problem", "bp1", "--degree", "2", "--elements", "8", "--threads-3d"][..], "--threads-3d picks the GPU kernel's threads"),
        (&["bp", "--problem", "bp1", "--degree", "2", "--elements", "8", "--l2", "warm"], "--l2 sets how the GPU's timing"),
        (&["bp", "--problem", "bp3.5", "--degree", "2", "--elements", "8", "--factors", "stored"], "--factors picks where the GPU kernel's factors come from"),
        (&["residual", "--problem", "poisson", "--dim", "2", "--cells", "64", "--blocks", "4"], "--blocks sizes the GPU's thread-transposition launch"),
    ] {
        let mut all = args.to_vec();
        all.extend(["--backend", "cpu"]);
        let out = fem(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code() == Some(1) && err.contains(says) && err.contains("the CPU backend has no such choice"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
