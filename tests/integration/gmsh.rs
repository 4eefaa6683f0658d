//! Gmsh files as the project writes them (4.1): round trips through the writer in ASCII and binary,
//! a file laid out as Gmsh writes it, the solve on an imported mesh, and
//! every malformed or hostile input as a clean error.

use crate::common;
use common::scratch;
use fem::host::io::gmsh::{self, ElementKind, GmshError};
use fem::host::mesh::{BoxMesh, Mesh};
use fem::host::problem::poisson::{solve_cpu, MeshSource, PoissonOptions};
use fem::host::CpuBackend;
use std::sync::Arc;

/// The two meshes hold the same cells: same vertex coordinates in the same
/// local order, cell by cell.
fn same_cells(a: &Mesh, b: &Mesh) {
    assert_eq!((a.dim, a.n_cells(), a.n_vertices()), (b.dim, b.n_cells(), b.n_vertices()));
    for c in 0..a.n_cells() {
        for v in 0..a.vertices_per_cell() {
            assert_eq!(a.coords[a.cells[c][v] as usize], b.coords[b.cells[c][v] as usize], "cell {c} vertex {v}");
        }
    }
}

#[test]
fn generated_meshes_round_trip_in_ascii_and_binary() {
    for dim in [2, 3] {
        let mesh = BoxMesh::unstructured(dim, 4, 7).build().unwrap();
        for binary in [false, true] {
            let g = gmsh::read(&gmsh::write(&mesh, binary)).unwrap();
            // the domain, and a group per side of the box
            assert_eq!(g.physical_names[0], (dim, 1, "domain".to_string()));
            let sides: Vec<(usize, i32, String)> = (0..2 * dim).map(|s| (dim - 1, 11 + s as i32, gmsh::SIDES[s].to_string())).collect();
            assert_eq!(g.physical_names[1..], sides[..]);
            assert_eq!(g.blocks.len(), 1 + 2 * dim);
            let cells = g.blocks.last().unwrap();
            assert_eq!((cells.physical.clone(), cells.kind), (vec![1], if dim == 2 { ElementKind::Quad4 } else { ElementKind::Hexahedron8 }));
            // each side holds the facets of one face of the box: 4 cells per direction
            assert!(g.blocks[..2 * dim].iter().all(|b| b.len() == 4usize.pow(dim as u32 - 1)));
            same_cells(&mesh, &g.to_mesh().unwrap());
        }
    }
}

#[test]
fn an_imported_mesh_gives_the_same_solution() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for dim in [2, 3] {
        let b = BoxMesh::unstructured(dim, if dim == 2 { 8 } else { 3 }, 3);
        let imported = gmsh::read(&gmsh::write(&b.build().unwrap(), dim == 3)).unwrap().to_mesh().unwrap();
        let direct = solve_cpu::<f64>(&cpu, &PoissonOptions::new(b, 2)).unwrap();
        let via_file = solve_cpu::<f64>(&cpu, &PoissonOptions::on(MeshSource::Given(Arc::new(imported)), 2)).unwrap();
        assert_eq!((direct.dofs, direct.iterations), (via_file.dofs, via_file.iterations));
        assert!((direct.l2_error - via_file.l2_error).abs() <= 1e-12 * direct.l2_error, "{} vs {}", direct.l2_error, via_file.l2_error);
    }
}

/// Two quadrilaterals as Gmsh lays a file out: sparse node tags, entities
/// with bounding entities, a physical group on a boundary curve, and a
/// section the reader does not know.
const GMSH_STYLE: &str = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$PhysicalNames\n2\n1 10 \"wall\"\n2 20 \"the plate\"\n$EndPhysicalNames\n$Entities\n4 1 1 0\n1 0 0 0 0\n2 1 0 0 0\n3 1 1 0 0\n4 0 1 0 0\n1 0 0 0 1 0 0 1 10 2 1 -2\n1 0 0 0 1 1 0 1 20 1 1\n$EndEntities\n$Nodes\n1 6 10 60\n2 1 0 6\n10\n20\n30\n40\n50\n60\n0 0 0\n0.5 0 0\n1 0 0\n0 1 0\n0.5 1 0\n1 1 0\n$EndNodes\n$Elements\n2 4 1 4\n1 1 1 2\n1 10 20\n2 20 30\n2 1 3 2\n3 10 20 50 40\n4 20 30 60 50\n$EndElements\n$NodeData\n1\n\"u\"\n$EndNodeData\n";

#[test]
fn reads_a_file_laid_out_as_gmsh_writes_it() {
    let g = gmsh::read(GMSH_STYLE.as_bytes()).unwrap();
    assert_eq!(g.node_tags, vec![10, 20, 30, 40, 50, 60]);
    assert_eq!(g.physical_names[1], (2, 20, "the plate".to_string()));
    assert_eq!((g.blocks[0].kind, g.blocks[0].physical.clone(), g.blocks[0].len()), (ElementKind::Line2, vec![10], 2));
    assert_eq!((g.blocks[1].kind, g.blocks[1].physical.clone(), g.blocks[1].len()), (ElementKind::Quad4, vec![20], 2));
    let m = g.to_mesh().unwrap();
    let corners: Vec<[f64; 3]> = m.cells[0][..4].iter().map(|&v| m.coords[v as usize]).collect();
    assert_eq!(corners, vec![[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 1.0, 0.0]]);
}

fn error_of(text: &str) -> String {
    match gmsh::read(text.as_bytes()).and_then(|g| g.to_mesh()) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn malformed_and_hostile_files_are_clean_errors() {
    let good = GMSH_STYLE;
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "empty"),
        ("garbage".into(), "must start with $MeshFormat"),
        (good.replace("4.1 0 8", "3.0 0 8"), "version 3.0 is not supported"),
        (good.replace("4.1 0 8", "4.1 0 4"), "data size 4"),
        (good.replace("2 1 3 2\n", "2 1 34 2\n"), "element type 34 is not supported"),
        (good.replace("2 1 3 2\n", "2 1 99 2\n"), "element type 99 is not supported"),
        (good.replace("2 1 3 2\n", "2 1 2 2\n").replace("3 10 20 50 40", "3 10 20 50").replace("4 20 30 60 50", "4 20 30 60"), "Triangle3 (2)"),
        (good.replace("1 6 10 60", "1 600000000000 10 60"), "declares 600000000000 nodes"),
        (good.replace("2 4 1 4", "2 99999999999999 1 4"), "declares 99999999999999 elements"),
        (good.replace("4 20 30 60 50", "4 20 30 60 70"), "node 70, which the file does not define"),
        (good.replace("0.5 1 0\n", "0.5 1e999 0\n"), "not finite"),
        (good.replace("0.5 1 0\n", "0.5 x 0\n"), "expected a number"),
        (good.replace("3 10 20 50 40", "3 10 40 50 20"), "inverted"),
        (good.replace("$EndElements", "$EndElementz"), "expected $EndElements"),
        (good.replace("$EndNodeData\n", ""), "no $EndNodeData"),
        (good[..good.len() / 2].to_string(), ""),
    ];
    for (text, says) in cases {
        let e = error_of(&text);
        assert!(e.contains(says), "expected `{says}` in `{e}`");
    }
    // a node of no element
    let loose = good.replace("1 6 10 60\n2 1 0 6\n10\n", "1 7 10 70\n2 1 0 7\n70\n10\n").replace("$EndNodes", "").replace("1 1 0\n\n", "1 1 0\n");
    let loose = loose.replacen("0 0 0\n0.5 0 0", "9 9 0\n0 0 0\n0.5 0 0", 1).replace("1 1 0\n$Elements", "1 1 0\n$EndNodes\n$Elements");
    let e = error_of(&loose);
    assert!(e.contains("1 nodes belong to no element (first: 70)"), "{e}");
    // a binary file cut short
    let mesh = BoxMesh::structured(3, 2).build().unwrap();
    let bin = gmsh::write(&mesh, true);
    for cut in [bin.len() / 3, bin.len() / 2, bin.len() - 20] {
        assert!(gmsh::read(&bin[..cut]).is_err(), "cut at {cut}");
    }
    assert!(matches!(gmsh::read(b"$MeshFormat\n4.1 7 8\n$EndMeshFormat\n"), Err(GmshError::Syntax { .. })));
}

#[test]
fn fem_solve_reads_a_gmsh_file() {
    use std::process::Command;
    let dir = scratch("gmsh");
    let file = dir.join("cube.msh");
    let fem = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_fem")).env("FEM_TUNING", "off").args(args).output().unwrap();
    let out = fem(&["mesh-gen", "--dim", "3", "--cells", "3", "--unstructured", "--binary", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let json = |out: std::process::Output| -> serde_json::Value {
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let a = json(fem(&["solve", "--mesh", file.to_str().unwrap(), "--degree", "2", "--backend", "cpu", "--json"]));
    let b = json(fem(&["solve", "--dim", "3", "--cells", "3", "--unstructured", "--degree", "2", "--backend", "cpu", "--json"]));
    assert_eq!(a["dofs"], b["dofs"]);
    assert!((a["l2_error"].as_f64().unwrap() - b["l2_error"].as_f64().unwrap()).abs() < 1e-12);
    std::fs::write(&file, "$MeshFormat\n3.0 0 8\n$EndMeshFormat\n").unwrap();
    let out = fem(&["solve", "--mesh", file.to_str().unwrap(), "--backend", "cpu"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("version 3.0"));
}

#[test]
fn vtu_files_read_back_with_the_values_written() {
    use fem::host::io::vtk::{read_fields, vtu, Encoding, Field};
    for dim in [2, 3] {
        let mesh = BoxMesh::unstructured(dim, 3, 5).build().unwrap();
        let u: Vec<f64> = mesh.coords.iter().map(|x| x[0] - 2.0 * x[1] + 1e-300 * x[2] + 1.0 / 3.0).collect();
        let c: Vec<f64> = (0..mesh.n_cells()).map(|i| i as f64 * 0.1).collect();
        for enc in [Encoding::Ascii, Encoding::Binary] {
            let text = vtu(&mesh, &[Field { name: "u", values: &u }], &[Field { name: "cell", values: &c }], enc).unwrap();
            assert!(text.contains(&format!("NumberOfPoints=\"{}\" NumberOfCells=\"{}\"", mesh.n_vertices(), mesh.n_cells())));
            let fields = read_fields(&text).unwrap();
            assert_eq!(fields[0], ("u".to_string(), u.clone()), "{enc:?}");
            assert_eq!(fields[1], ("cell".to_string(), c.clone()));
            let points: Vec<f64> = mesh.coords.iter().flat_map(|x| x.iter().copied()).collect();
            assert_eq!(fields[2], ("Points".to_string(), points));
        }
        let short = vtu(&mesh, &[Field { name: "u", values: &u[1..] }], &[], Encoding::Ascii).unwrap_err();
        assert!(short.to_string().contains("field `u` has"));
    }
}

#[test]
fn fem_solve_writes_a_vtu_of_the_solution() {
    use std::process::Command;
    let dir = scratch("vtk");
    for (ascii, name) in [(false, "u.vtu"), (true, "u-ascii.vtu")] {
        let path = dir.join(name);
        let mut args = vec!["solve", "--dim", "2", "--degree", "2", "--cells", "6", "--unstructured", "--backend", "cpu", "--vtk", path.to_str().unwrap()];
        if ascii {
            args.push("--vtk-ascii");
        }
        let out = Command::new(env!("CARGO_BIN_EXE_fem")).env("FEM_TUNING", "off").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let fields = fem::host::io::vtk::read_fields(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let get = |n: &str| fields.iter().find(|f| f.0 == n).unwrap().1.clone();
        let (u, exact, err) = (get("u"), get("u_exact"), get("error"));
        // Q2: Lagrange quadrilaterals of order 2, nine points per cell
        assert_eq!(u.len(), 36 * 9);
        assert!(std::fs::read_to_string(&path).unwrap().contains("<DataArray type=\"UInt8\" Name=\"types\""));
        // the Q2 solution is within its error of the exact one at every point, and not zero
        let top = exact.iter().fold(0.0f64, |m, v| m.max(*v));
        assert!(top > 0.03, "{top}");
        assert!(err.iter().all(|e| e.abs() < 1e-3 * top), "{err:?}");
        assert!(u.iter().zip(&exact).zip(&err).all(|((a, b), e)| (a - b - e).abs() < 1e-15));
    }
    // an unwritable path is an error and leaves nothing behind
    let bad = dir.join("no-such-folder").join("u.vtu");
    let out = Command::new(env!("CARGO_BIN_EXE_fem")).env("FEM_TUNING", "off").args(["solve", "--dim", "2", "--cells", "4", "--backend", "cpu", "--vtk", bad.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!bad.exists());
}

/// Solves on `mesh` with u = 0 on the sides named, natural conditions elsewhere.
fn solve_with_groups(b: &BoxMesh, groups: &[&str], degree: usize) -> (Mesh, fem::host::problem::poisson::PoissonReport) {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let file = gmsh::read(&gmsh::write(&b.build().unwrap(), false)).unwrap();
    let (mesh, nodes) = file.to_mesh_and_nodes().unwrap();
    let groups: Vec<String> = groups.iter().map(|s| s.to_string()).collect();
    let mut o = PoissonOptions::on(MeshSource::Given(Arc::new(mesh.clone())), degree);
    o.dirichlet_facets = Some(Arc::new(file.group_facets(&groups, &nodes).unwrap()));
    (mesh, solve_cpu::<f64>(&cpu, &o).unwrap())
}

#[test]
fn physical_groups_select_the_dirichlet_boundary() {
    use std::f64::consts::PI;
    // every side selected: the problem with u = 0 everywhere
    for dim in [2, 3] {
        let b = BoxMesh::unstructured(dim, if dim == 2 { 6 } else { 3 }, 2);
        let sides = &gmsh::SIDES[..2 * dim];
        let (mesh, all) = solve_with_groups(&b, sides, 2);
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let direct = solve_cpu::<f64>(&cpu, &PoissonOptions::on(MeshSource::Given(Arc::new(mesh)), 2)).unwrap();
        assert_eq!(all.dofs, direct.dofs);
        assert!(all.field.vertex_values().iter().zip(&direct.field.vertex_values()).all(|(a, b)| (a - b).abs() < 1e-12));
        assert!(all.l2_error.is_nan(), "no exact solution is claimed for selected groups");
    }
    // u = 0 on x = 0 and x = 1 only: u = sin πx · g(y) with −g'' + π²g = sin πy, g'(0) = g'(1) = 0
    let b_ = -1.0 / (2.0 * PI * PI);
    let a_ = (1.0 + PI.cosh()) / (2.0 * PI * PI * PI.sinh());
    let exact = |x: [f64; 3]| (PI * x[0]).sin() * (a_ * (PI * x[1]).cosh() + b_ * (PI * x[1]).sinh() + (PI * x[1]).sin() / (2.0 * PI * PI));
    let mut errors = Vec::new();
    for cells in [4, 8] {
        let (mesh, r) = solve_with_groups(&BoxMesh::unstructured(2, cells, 4), &["xmin", "xmax"], 2);
        let top = mesh.coords.iter().map(|&x| exact(x).abs()).fold(0.0, f64::max);
        let err = mesh.coords.iter().zip(&r.field.vertex_values()).map(|(&x, u)| (u - exact(x)).abs()).fold(0.0, f64::max);
        assert!(err < 1e-2 * top, "{cells} cells: max vertex error {err:e} of {top:e}");
        errors.push(err);
    }
    // and converges under refinement (better than second order at the vertices)
    assert!(errors[0] / errors[1] > 4.0, "{errors:?}");
    // an unknown group names the ones there are
    let file = gmsh::read(&gmsh::write(&BoxMesh::structured(2, 2).build().unwrap(), true)).unwrap();
    let (_, nodes) = file.to_mesh_and_nodes().unwrap();
    let e = file.group_facets(&["left".to_string()], &nodes).unwrap_err().to_string();
    assert!(e.contains("no boundary physical group `left`") && e.contains("xmin (11)"), "{e}");
    assert_eq!(file.group_facets(&["12".to_string()], &nodes).unwrap().len(), 2, "by number: the two facets of x = 1");
}

/// A generated mesh in two material regions (x < ½ "soft", the rest
/// "stiff"), as a Gmsh file and as the per-cell region index.
fn two_region_file(dim: usize, cells: usize) -> Vec<u8> {
    let mesh = BoxMesh::unstructured(dim, cells, 9).build().unwrap();
    let region: Vec<u32> = (0..mesh.n_cells()).map(|c| (mesh.centroid(c)[0] >= 0.5) as u32).collect();
    gmsh::write_regions(&mesh, dim == 3, &region, &["soft", "stiff"]).unwrap()
}

#[test]
fn physical_groups_become_material_regions() {
    for dim in [2, 3] {
        let g = gmsh::read(&two_region_file(dim, 4)).unwrap();
        let mesh = g.to_mesh().unwrap();
        let regions = g.cell_regions();
        assert_eq!(regions.len(), mesh.n_cells());
        // each cell is in the group its position says, by name and by number
        for (c, &t) in regions.iter().enumerate() {
            assert_eq!(t, if mesh.centroid(c)[0] >= 0.5 { 2 } else { 1 }, "cell {c}");
        }
        let k = g.region_values(&[("stiff".into(), 20.0), ("1".into(), 0.5)], 1.0).unwrap();
        assert!(k.iter().zip(&regions).all(|(k, t)| *k == if *t == 2 { 20.0 } else { 0.5 }));
        let e = g.region_values(&[("steel".into(), 2.0)], 1.0).unwrap_err().to_string();
        assert!(e.contains("no cell physical group `steel`") && e.contains("soft (1), stiff (2)"), "{e}");
    }
    let bad = gmsh::write_regions(&BoxMesh::structured(2, 2).build().unwrap(), false, &[0, 1, 2, 0], &["a", "b"]).unwrap_err();
    assert!(bad.to_string().contains("region indices"), "{bad}");
}

#[test]
fn fem_solve_takes_kappa_per_region_and_writes_it() {
    use fem::host::problem::poisson::Format;
    use std::process::Command;
    let dir = scratch("regions");
    let (file, vtu) = (dir.join("two.msh"), dir.join("two.vtu"));
    std::fs::write(&file, two_region_file(2, 6)).unwrap();
    let fem = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_fem")).env("FEM_TUNING", "off").args(args).output().unwrap();
    let out = fem(&["solve", "--mesh", file.to_str().unwrap(), "--degree", "3", "--kappa", "stiff=20", "--format", "lma", "--backend", "cpu", "--json", "--vtk", vtu.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["l2_error"].is_null(), "no exact solution is claimed with regions: {json}");
    // the file holds the library's solution with the same κ, point by point
    let g = gmsh::read(&std::fs::read(&file).unwrap()).unwrap();
    let mut o = PoissonOptions::on(MeshSource::Given(Arc::new(g.to_mesh().unwrap())), 3);
    o.kappa = Some(g.region_values(&[("stiff".into(), 20.0)], 1.0).unwrap().into());
    o.format = Format::Csr;
    let r = solve_cpu::<f64>(&CpuBackend::new(Some(2)).unwrap(), &o).unwrap();
    let text = fem::host::io::vtk::vtu_nodal(&r.field.space, &[fem::host::io::vtk::Field { name: "u", values: &r.field.dofs }], &[], fem::host::io::vtk::Encoding::Binary).unwrap();
    let u = fem::host::io::vtk::read_fields(&text).unwrap().into_iter().find(|f| f.0 == "u").unwrap().1;
    let fields = fem::host::io::vtk::read_fields(&std::fs::read_to_string(&vtu).unwrap()).unwrap();
    let get = |n: &str| fields.iter().find(|f| f.0 == n).unwrap_or_else(|| panic!("{n} missing")).1.clone();
    let written = get("u");
    assert_eq!(written.len(), 36 * 16);
    let top = u.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(written.iter().zip(&u).all(|(a, b)| (a - b).abs() < 1e-9 * top));
    assert!(fields.iter().all(|f| f.0 != "u_exact"));
    let (kappa, region) = (get("kappa"), get("region"));
    assert!(kappa.iter().zip(&region).all(|(k, t)| *k == if *t == 2.0 { 20.0 } else { 1.0 }));
    assert!(region.contains(&1.0) && region.contains(&2.0));
    // bad pairs and unknown groups are errors
    for (arg, msg) in [("stiff", "GROUP=VALUE"), ("stiff=-1", "positive"), ("steel=2", "no cell physical group `steel`")] {
        let out = fem(&["solve", "--mesh", file.to_str().unwrap(), "--kappa", arg, "--backend", "cpu"]);
        assert!(matches!(out.status.code(), Some(1) | Some(2)), "{arg}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(msg), "{arg}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
