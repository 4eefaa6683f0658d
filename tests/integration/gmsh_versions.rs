//! Gmsh files of every version the reader takes: files Gmsh wrote
//! (`tests/data/gmsh`, made by `make_fixtures.py` there) give the same
//! mesh in MSH 2.2, 4.0 and 4.1, ASCII and binary; the project's writer
//! round-trips every version exactly; hand-made files in the style of
//! other projects' output (comments first, sparse tags, sections out of
//! order, partitions, big-endian data) read; `fem mesh-info` describes
//! them; mixed meshes say which cells no solver takes.

use fem::host::io::gmsh::{self, info::{scaled_jacobian, surface_jacobian}, ElementKind, FileFormat, GmshMesh, Shape, Version};
use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/gmsh").join(name)
}

/// The files of one fixture mesh, with the format each was written in.
fn family(stem: &str) -> Vec<(FileFormat, GmshMesh)> {
    let mut out = Vec::new();
    for (tag, version) in [("22", Version::V2_2), ("40", Version::V4_0), ("41", Version::V4_1)] {
        for binary in [false, true] {
            let path = fixture(&format!("{stem}-v{tag}{}.msh", if binary { "-bin" } else { "" }));
            if !path.exists() {
                assert_eq!((tag, binary), ("40", true), "Gmsh writes every version but binary 4.0");
                continue;
            }
            let m = gmsh::read_path(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(m.format, FileFormat { version, binary }, "{}", path.display());
            out.push((m.format, m));
        }
    }
    out
}

/// Element (type, entity dimension, entity tag, physical groups, node
/// tags), sorted: a mesh's elements independent of block order.
type Elements = Vec<(i32, usize, i32, Vec<i32>, Vec<u64>)>;

/// A mesh as sets: nodes by tag, elements, names.
fn canonical(m: &GmshMesh) -> (Vec<(u64, [f64; 3])>, Elements, Vec<(usize, i32, String)>) {
    let mut nodes: Vec<(u64, [f64; 3])> = m.node_tags.iter().copied().zip(m.nodes.iter().copied()).collect();
    nodes.sort_by_key(|n| n.0);
    let mut elements = Vec::new();
    for b in &m.blocks {
        let mut physical = b.physical.clone();
        physical.sort();
        for e in b.connectivity.chunks(b.kind.nodes()) {
            elements.push((b.kind.gmsh_type(), b.entity_dim, b.entity_tag, physical.clone(), e.iter().map(|&n| m.node_tags[n as usize]).collect()));
        }
    }
    elements.sort();
    let mut names = m.physical_names.clone();
    names.sort();
    (nodes, elements, names)
}

#[test]
fn gmsh_writes_the_same_mesh_in_every_version() {
    for (stem, cells, kind) in [("disk", 117, ElementKind::Triangle3), ("mixed", 98, ElementKind::Tetrahedron4), ("tet10", 43, ElementKind::Tetrahedron10), ("hex27", 8, ElementKind::Hexahedron27)] {
        let files = family(stem);
        assert_eq!(files.len(), 5, "{stem}");
        let reference = canonical(&files[0].1);
        for (format, m) in &files {
            let c = canonical(m);
            assert_eq!((&c.1, &c.2), (&reference.1, &reference.2), "{stem} in {format:?}");
            // Gmsh's ASCII output keeps 16 significant digits
            assert_eq!(c.0.len(), reference.0.len());
            for (a, b) in c.0.iter().zip(&reference.0) {
                assert!(a.0 == b.0 && (0..3).all(|k| (a.1[k] - b.1[k]).abs() <= 1e-15 * (1.0 + b.1[k].abs())), "{stem} in {format:?}: node {a:?} vs {b:?}");
            }
            let top: usize = m.blocks.iter().filter(|b| b.kind.dim() == m.dim()).map(|b| b.len()).sum();
            assert_eq!(top, cells, "{stem} in {format:?}: cells of the highest dimension");
            assert!(m.blocks.iter().any(|b| b.kind == kind), "{stem}");
        }
    }
}

#[test]
fn every_version_round_trips_through_the_writer() {
    for stem in ["disk", "mixed", "tet10", "hex27"] {
        for (_, m) in family(stem) {
            for version in Version::ALL {
                for binary in [false, true] {
                    let format = FileFormat { version, binary };
                    let bytes = gmsh::write_to(&m, format).unwrap();
                    let back = gmsh::read(&bytes).unwrap_or_else(|e| panic!("{stem} as {format:?}: {e}"));
                    assert_eq!(back.format, format);
                    // exactly the same mesh, blocks and node order included
                    assert_eq!((&back.nodes, &back.node_tags, &back.blocks, &back.physical_names), (&m.nodes, &m.node_tags, &m.blocks, &m.physical_names), "{stem} as {format:?}");
                }
            }
        }
    }
}

#[test]
fn msh2_copies_of_an_entity_in_two_groups_merge() {
    // tet10: the volume is in groups 1 "solid" and 2 "steel"; MSH 2.2
    // writes its 43 tetrahedra twice, MSH 4 once.
    for (format, m) in family("tet10") {
        let cells: Vec<_> = m.blocks.iter().filter(|b| b.kind == ElementKind::Tetrahedron10).collect();
        assert_eq!(cells.len(), 1, "{format:?}");
        let mut groups = cells[0].physical.clone();
        groups.sort();
        assert_eq!((groups, cells[0].len()), (vec![1, 2], 43), "{format:?}");
        let simplex = m.to_simplex_mesh().unwrap();
        assert_eq!(simplex.n_cells(), 43);
    }
}

#[test]
fn fixtures_become_solver_meshes_or_say_why_not() {
    let disk = family("disk");
    let first = disk[0].1.to_simplex_mesh().unwrap();
    for (_, m) in &disk {
        let s = m.to_simplex_mesh().unwrap();
        assert_eq!((s.dim, s.n_cells(), s.coords.len()), (2, 117, first.coords.len()));
        let e = m.to_mesh().unwrap_err().to_string();
        assert!(e.contains("Triangle3 (117)") && e.contains("simplex solvers"), "{e}");
    }
    for (_, m) in family("hex27") {
        let mesh = m.to_mesh().unwrap();
        assert_eq!((mesh.dim, mesh.n_cells()), (3, 8));
        // the clamped face by name: 4 of the 27-node hexahedra's faces
        let (_, nodes) = m.to_mesh_and_nodes().unwrap();
        assert_eq!(m.group_facets(&["clamped".into()], &nodes).unwrap().len(), 4);
    }
    for (format, m) in family("mixed") {
        for e in [m.to_simplex_mesh().unwrap_err().to_string(), m.to_mesh().unwrap_err().to_string()] {
            assert!(e.contains("Prism6 (28)"), "{format:?}: {e}");
        }
        let e = m.to_mesh().unwrap_err().to_string();
        assert!(e.contains("Tetrahedron4 (70)"), "{e}");
        assert_eq!(m.info().unusable_cells, vec!["Prism6".to_string()]);
    }
}

#[test]
fn partitioned_msh2_files_read() {
    let m = gmsh::read_path(&fixture("disk-parts-v22.msh")).unwrap();
    // the partition tags are skipped: the same triangles in the plate group
    let tris: usize = m.blocks.iter().filter(|b| b.kind == ElementKind::Triangle3).map(|b| b.len()).sum();
    assert!(tris > 50, "{tris}");
    assert!(m.blocks.iter().filter(|b| b.kind == ElementKind::Triangle3).all(|b| b.physical == vec![5]));
    assert!(m.physical_names.contains(&(2, 5, "plate".to_string())), "{:?}", m.physical_names);
    assert_eq!(m.to_simplex_mesh().unwrap().n_cells(), tris);
}

/// Two triangles of the unit square in MSH 2.2 as other tools write it:
/// comments first, elements before nodes, sparse node tags, one physical
/// group spread over two elementary entities, an element outside any
/// group, four tags on one element, and a trailing `$NodeData`.
const HANDMADE_22: &str = "$Comments\nwritten by hand, $Nodes inside a comment\n$EndComments\n$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Elements\n5\n1 2 2 4 7 10 20 30\n7 2 4 4 8 2 -1 30 40 10\n9 1 2 9 1 10 20\n10 1 2 9 2 20 30\n11 15 0 40\n$EndElements\n$PhysicalNames\n2\n1 9 \"wall\"\n2 4 \"square\"\n$EndPhysicalNames\n$Nodes\n4\n10 0 0 0\n20 1 0 0\n30 1 1 0\n40 0 1 0\n$EndNodes\n$NodeData\n1\n\"u\"\n1\n0.0\n3\n0\n1\n4\n10 1\n20 2\n30 3\n40 4\n$EndNodeData\n";

#[test]
fn hand_made_msh2_files_in_other_projects_style_read() {
    let m = gmsh::read(HANDMADE_22.as_bytes()).unwrap();
    assert_eq!(m.node_tags, vec![10, 20, 30, 40]);
    let tris: Vec<_> = m.blocks.iter().filter(|b| b.kind == ElementKind::Triangle3).collect();
    // entities 7 and 8 of group 4: two blocks, both in the group
    assert_eq!(tris.iter().map(|b| (b.entity_tag, b.physical.clone(), b.len())).collect::<Vec<_>>(), vec![(7, vec![4], 1), (8, vec![4], 1)]);
    let walls: Vec<_> = m.blocks.iter().filter(|b| b.kind == ElementKind::Line2).map(|b| (b.entity_tag, b.physical.clone())).collect();
    assert_eq!(walls, vec![(1, vec![9]), (2, vec![9])]);
    let point = m.blocks.iter().find(|b| b.kind == ElementKind::Point).unwrap();
    assert_eq!((point.entity_tag, point.physical.clone()), (0, vec![]));
    let s = m.to_simplex_mesh().unwrap();
    assert_eq!(s.n_cells(), 2);
    let info = m.info();
    let wall = info.physical_groups.iter().find(|g| g.tag == 9).unwrap();
    assert_eq!((wall.dim, wall.name.as_deref(), wall.elements), (1, Some("wall"), 2));
}

/// The same two triangles as a big-endian binary MSH 2.2 file.
fn big_endian_22() -> Vec<u8> {
    let mut v = b"$MeshFormat\n2.2 1 8\n".to_vec();
    v.extend(1i32.to_be_bytes());
    v.extend(b"\n$EndMeshFormat\n$Nodes\n4\n");
    for (t, x, y) in [(10, 0.0, 0.0), (20, 1.0, 0.0), (30, 1.0, 1.0), (40, 0.0, 1.0)] {
        v.extend((t as i32).to_be_bytes());
        for c in [x, y, 0.0f64] {
            v.extend(c.to_be_bytes());
        }
    }
    v.extend(b"\n$EndNodes\n$Elements\n2\n");
    for h in [2i32, 2, 2] {
        v.extend(h.to_be_bytes());
    }
    for e in [[1i32, 4, 7, 10, 20, 30], [2, 4, 7, 30, 40, 10]] {
        for x in e {
            v.extend(x.to_be_bytes());
        }
    }
    v.extend(b"\n$EndElements\n");
    v
}

#[test]
fn big_endian_binary_files_read() {
    let be = gmsh::read(&big_endian_22()).unwrap();
    let le = gmsh::read(&gmsh::write_to(&be, FileFormat { version: Version::V2_2, binary: true }).unwrap()).unwrap();
    assert_eq!((&be.nodes, &be.node_tags, &be.blocks), (&le.nodes, &le.node_tags, &le.blocks));
    assert_eq!(be.nodes[2], [1.0, 1.0, 0.0]);
    assert_eq!((be.blocks[0].physical.clone(), be.blocks[0].entity_tag), (vec![4], 7));
}

#[test]
fn comments_before_the_header_and_unknown_sections_anywhere_are_skipped() {
    for version in Version::ALL {
        let m = gmsh::read(HANDMADE_22.as_bytes()).unwrap();
        let text = String::from_utf8(gmsh::write_to(&m, FileFormat { version, binary: false }).unwrap()).unwrap();
        let text = format!("$Comments\nmade by hand\n$EndComments\n{}", text.replacen("$EndMeshFormat\n", "$EndMeshFormat\n$Periodic\n0\n$EndPeriodic\n$Comments\n$EndComments\n", 1));
        let back = gmsh::read(text.as_bytes()).unwrap_or_else(|e| panic!("{version}: {e}"));
        assert_eq!((back.nodes, back.blocks), (m.nodes.clone(), m.blocks.clone()), "{version}");
    }
}

#[test]
fn msh2_and_msh4_defects_are_clean_errors() {
    let good = HANDMADE_22;
    let cases: Vec<(String, &str)> = vec![
        (good.replace("2.2 0 8", "3.0 0 8"), "version 3.0 is not supported"),
        ("$NOD\n1\n1 0 0 0\n$ENDNOD\n".into(), "MSH 1"),
        (good.replace("1 2 2 4 7 10 20 30", "1 34 2 4 7 10 20 30"), "element type 34 is not supported"),
        (good.replace("\n5\n1 2", "\n500000000\n1 2"), "declares 500000000 elements"),
        (good.replace("\n4\n10 0 0 0", "\n400000000\n10 0 0 0"), "declares 400000000 nodes"),
        (good.replace("10 0 0 0\n20", "10 0 0 0\n10"), "share a tag"),
        (good.replace("30 40 10\n", "30 40 99\n"), "node 99, which the file does not define"),
        (good.replace("7 2 4 4 8 2 -1", "7 2 4 4 8 2 -1 1 1 1 1 1 1 1 1 1 1 1 1 1"), ""),
        (good.replace("$EndNodes", "$EndNodez"), "expected $EndNodes"),
        (good.replace("$EndComments", "$EndCommentz"), "no $EndComments"),
        (format!("{good}$Nodes\n0\n$EndNodes\n"), "a second $Nodes"),
    ];
    for (text, says) in cases {
        match gmsh::read(text.as_bytes()).and_then(|m| m.to_simplex_mesh().map(|_| ())) {
            Ok(()) => panic!("accepted: {text}"),
            Err(e) => assert!(e.to_string().contains(says), "expected `{says}` in `{e}`"),
        }
    }
    // binary files of every version cut anywhere are errors
    let m = gmsh::read(HANDMADE_22.as_bytes()).unwrap();
    for version in Version::ALL {
        let bin = gmsh::write_to(&m, FileFormat { version, binary: true }).unwrap();
        for cut in (20..bin.len() - 15).step_by(7) {
            assert!(gmsh::read(&bin[..cut]).is_err(), "{version} cut at {cut}");
        }
    }
    // tags beyond an int cannot be written in 2.2 or 4.0
    let mut big = m.clone();
    big.node_tags[0] = 1 << 40;
    assert!(gmsh::write_to(&big, FileFormat { version: Version::V2_2, binary: false }).unwrap_err().to_string().contains("node tags above"));
    assert!(gmsh::write_to(&big, FileFormat { version: Version::V4_1, binary: true }).is_ok());
}

#[test]
fn the_scaled_jacobian_is_one_on_ideal_cells_and_negative_on_inverted_ones() {
    let s3 = 3f64.sqrt();
    let eq = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, s3 / 2.0, 0.0]];
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    assert!(close(scaled_jacobian(Shape::Triangle, |k| eq[k]).unwrap(), 1.0));
    let right = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
    assert!(close(scaled_jacobian(Shape::Triangle, |k| right[k]).unwrap(), 2.0 / s3 * 0.5f64.sqrt()));
    let flipped = [right[0], right[2], right[1]];
    assert!(scaled_jacobian(Shape::Triangle, |k| flipped[k]).unwrap() < 0.0);
    let square = [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [2.0, 2.0, 0.0], [0.0, 2.0, 0.0]];
    assert!(close(scaled_jacobian(Shape::Quadrilateral, |k| square[k]).unwrap(), 1.0));
    let rhombus = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.5, s3 / 2.0, 0.0], [0.5, s3 / 2.0, 0.0]];
    assert!(close(scaled_jacobian(Shape::Quadrilateral, |k| rhombus[k]).unwrap(), s3 / 2.0));
    let regular = [[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]];
    let r = scaled_jacobian(Shape::Tetrahedron, |k| regular[k]).unwrap();
    let r_flipped = scaled_jacobian(Shape::Tetrahedron, |k| [regular[1], regular[0], regular[2], regular[3]][k]).unwrap();
    assert!(close(r.abs(), 1.0) && close(r_flipped, -r), "{r} {r_flipped}");
    let cube: Vec<[f64; 3]> = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]].iter().map(|c| c.map(|v| v as f64)).collect();
    assert!(close(scaled_jacobian(Shape::Hexahedron, |k| cube[k]).unwrap(), 1.0));
    let prism = [eq[0], eq[1], eq[2], [0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [0.5, s3 / 2.0, 1.0]];
    assert!(close(scaled_jacobian(Shape::Prism, |k| prism[k]).unwrap(), 1.0));
    assert_eq!(scaled_jacobian(Shape::Pyramid, |_| [0.0; 3]), None);
    // a square tilted out of the x-y plane is measured in its own plane
    let tilted = [[0.0, 0.0, 0.0], [1.0, 0.0, 1.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]];
    assert!(close(surface_jacobian(Shape::Quadrilateral, |k| tilted[k]).unwrap(), 1.0));
    let mut m = gmsh::read(HANDMADE_22.as_bytes()).unwrap();
    let flat = m.quality().unwrap();
    // rotated about the y axis: the same cells, no longer in a plane z = const
    m.nodes.iter_mut().for_each(|x| (x[0], x[2]) = (0.6 * x[0], 0.8 * x[0]));
    let lifted = m.quality().unwrap();
    assert!(close(lifted.min, flat.min) && close(lifted.max, flat.max) && lifted.inverted == 0, "{flat:?} {lifted:?}");
    // a degenerate cell is 0, not NaN
    assert_eq!(scaled_jacobian(Shape::Triangle, |_| [0.0; 3]), Some(0.0));
}

fn fem(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fem")).env("FEM_TUNING", "off").args(args).output().unwrap()
}

#[test]
fn fem_mesh_info_describes_a_file() {
    let path = fixture("mixed-v22-bin.msh");
    let out = fem(&["mesh-info", path.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((j["format"]["version"].as_str(), j["format"]["binary"].as_bool(), j["dim"].as_u64(), j["nodes"].as_u64()), (Some("2.2"), Some(true), Some(3), Some(56)));
    let types: Vec<(String, u64)> = j["element_types"].as_array().unwrap().iter().map(|t| (t["kind"].as_str().unwrap().to_string(), t["count"].as_u64().unwrap())).collect();
    assert_eq!(types, vec![("Tetrahedron4".to_string(), 70), ("Prism6".to_string(), 28), ("Triangle3".to_string(), 14)]);
    let groups: Vec<(u64, String, u64)> = j["physical_groups"].as_array().unwrap().iter().map(|g| (g["dim"].as_u64().unwrap(), g["name"].as_str().unwrap().to_string(), g["elements"].as_u64().unwrap())).collect();
    assert_eq!(groups, vec![(3, "layer".into(), 28), (3, "bulk".into(), 70), (2, "inlet".into(), 14)]);
    assert_eq!(j["bounding_box_max"], serde_json::json!([1.0, 1.0, 1.0]));
    let q = &j["quality"];
    assert!(q["min"].as_f64().unwrap() > 0.0 && q["max"].as_f64().unwrap() <= 1.0 + 1e-12 && q["cells"].as_u64() == Some(98), "{q}");
    assert_eq!(j["unusable_cells"], serde_json::json!(["Prism6"]));
    let text = fem(&["mesh-info", path.to_str().unwrap()]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("format: MSH 2.2 binary") && text.contains("\"layer\": 28 elements") && text.contains("no solver of fem takes the 3D cells Prism6"), "{text}");
    // a missing file and a broken one: exit 1 with the reason
    for (arg, says) in [("no-such.msh", "no-such.msh"), (fixture("make_fixtures.py").to_str().unwrap(), "must start with $MeshFormat")] {
        let out = fem(&["mesh-info", arg]);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn fem_mesh_gen_writes_every_version() {
    let dir = std::env::temp_dir().join(format!("fem-mesh-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut meshes = Vec::new();
    for v in ["2.2", "4.0", "4.1"] {
        for binary in [false, true] {
            let path = dir.join(format!("t{v}{binary}.msh"));
            let mut args = vec!["mesh-gen", "--dim", "3", "--cells", "2", "--simplex", "--unstructured", "--format", v, path.to_str().unwrap()];
            if binary {
                args.push("--binary");
            }
            let out = fem(&args);
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
            let m = gmsh::read_path(&path).unwrap();
            assert_eq!((m.format.version.as_str(), m.format.binary), (v, binary));
            let s = m.to_simplex_mesh().unwrap();
            assert_eq!(s.n_cells(), 48);
            meshes.push((m.nodes, m.blocks));
        }
    }
    assert!(meshes.windows(2).all(|w| w[0] == w[1]));
    // the boundary group holds every outer facet: 6 faces × 2 × 2² triangles
    let boundary = &meshes[0].1[0];
    assert_eq!((boundary.kind, boundary.len()), (ElementKind::Triangle3, 48));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn groups_per_element_and_empty_blocks_survive_every_writer() {
    // MSH 2.2 from another tool: two regions share elementary entity 1
    let text = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$PhysicalNames\n2\n2 1 \"soft\"\n2 2 \"hard\"\n$EndPhysicalNames\n$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 1 1 0\n4 0 1 0\n$EndNodes\n$Elements\n2\n1 2 2 1 1 1 2 3\n2 2 2 2 1 3 4 1\n$EndElements\n";
    let mut m = gmsh::read(text.as_bytes()).unwrap();
    assert_eq!(m.blocks.iter().map(|b| (b.entity_tag, b.physical.clone())).collect::<Vec<_>>(), vec![(1, vec![1]), (1, vec![2])]);
    // an empty block as a 4.x file may hold one
    m.blocks.push(gmsh::ElementBlock { kind: ElementKind::Line2, entity_dim: 1, entity_tag: 5, physical: vec![], connectivity: vec![] });
    let groups = |m: &GmshMesh| -> Vec<(Vec<i32>, usize)> { m.blocks.iter().filter(|b| !b.is_empty()).map(|b| (b.physical.clone(), b.len())).collect() };
    for version in Version::ALL {
        for binary in [false, true] {
            let back = gmsh::read(&gmsh::write_to(&m, FileFormat { version, binary }).unwrap()).unwrap_or_else(|e| panic!("{version} {binary}: {e}"));
            assert_eq!(groups(&back), vec![(vec![1], 1), (vec![2], 1)], "{version} {binary}");
        }
    }
    // a name's line is its own: an unquoted empty name does not take the next line
    let named = text.replace("2 1 \"soft\"", "2 1");
    assert_eq!(gmsh::read(named.as_bytes()).unwrap().physical_names[..2], [(2, 1, String::new()), (2, 2, "hard".to_string())]);
}

#[test]
fn the_writer_refuses_what_a_file_cannot_hold() {
    let m = gmsh::read(HANDMADE_22.as_bytes()).unwrap();
    let format = FileFormat::default();
    let mut short = m.clone();
    short.node_tags.pop();
    let mut beyond = m.clone();
    beyond.blocks[0].connectivity[0] = 99;
    let mut cut = m.clone();
    cut.blocks[0].connectivity.pop();
    let mut quoted = m.clone();
    quoted.physical_names[0].2 = "a \"b\"".into();
    for (bad, says) in [(short, "node tags"), (beyond, "node index 99"), (cut, "values of"), (quoted, "quote")] {
        let e = gmsh::write_to(&bad, format).unwrap_err().to_string();
        assert!(e.contains(says), "{says}: {e}");
    }
}
