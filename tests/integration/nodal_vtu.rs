//! VTU output of nodal spaces: P1/P2 simplices on (quadratic) triangles
//! and tetrahedra, Q_p on Lagrange cells resampled to VTK's equispaced
//! nodes. A field in the space is written exactly: at every written point
//! the value is the function's there, for scalars and vectors.

use fem::host::io::vtk::{read_fields, vtu_nodal, Encoding, Field};
use fem::host::mesh::simplex::SimplexBox;
use fem::host::mesh::BoxMesh;
use fem::host::space::Space;

/// A function every space below holds: bilinear in 2D plus linear in z.
fn f(x: &[f64; 3]) -> f64 {
    1.0 + x[0] * x[1] - 0.5 * x[1] + 0.25 * x[2]
}

#[test]
fn fields_in_the_space_are_written_exactly_at_every_point() {
    let mut spaces = Vec::new();
    for dim in [2, 3] {
        let simplex = SimplexBox::unstructured(dim, 2, 3).build().unwrap();
        let tensor = BoxMesh::unstructured(dim, 2, 3).build().unwrap();
        spaces.push(Space::simplex(&simplex, 2).unwrap());
        for p in [1, 2, 3] {
            spaces.push(Space::tensor(&tensor, p).unwrap());
        }
    }
    for s in spaces {
        // x·y is bilinear and quadratic: Q1 and P2 hold it, and so f
        let u = s.interpolate(1, |x, o| o[0] = f(x));
        let v = s.interpolate(3, |x, o| o.copy_from_slice(&[f(x), 2.0 * f(x), 0.0]));
        let text = vtu_nodal(&s, &[Field { name: "u", values: &u }, Field { name: "v", values: &v }], &[], Encoding::Binary).unwrap();
        let fields = read_fields(&text).unwrap();
        let get = |n: &str| &fields.iter().find(|a| a.0 == n).unwrap().1;
        let (points, us, vs) = (get("Points"), get("u"), get("v"));
        assert_eq!(points.len(), 3 * us.len(), "{:?} p{}", s.shape, s.degree);
        for (k, x) in points.chunks(3).enumerate() {
            let want = f(&[x[0], x[1], x[2]]);
            assert!((us[k] - want).abs() < 1e-12 && (vs[3 * k + 1] - 2.0 * want).abs() < 1e-12, "{:?} p{} point {k}: {} vs {want}", s.shape, s.degree, us[k]);
        }
        if !s.shape.is_simplex() && s.degree > 1 {
            // Lagrange cells: every cell writes its (p + 1)^d points
            assert_eq!(us.len(), s.n_cells() * (s.degree + 1).pow(s.shape.dim() as u32));
        } else {
            // linear and quadratic cells share their nodes
            assert_eq!(us.len(), s.n_dofs, "{:?} p{}", s.shape, s.degree);
        }
    }
}

/// The Int64 array `name` of an ASCII `.vtu` text.
fn ascii_ints(text: &str, name: &str) -> Vec<usize> {
    let tag = format!("Name=\"{name}\"");
    let start = text.find(&tag).unwrap();
    let body = &text[start + text[start..].find('>').unwrap() + 1..];
    body[..body.find("</DataArray>").unwrap()].split_whitespace().map(|w| w.parse().unwrap()).collect()
}

/// Q1 cells go out as quadrilaterals on the shared nodes, in VTK's
/// cyclic order: on a shuffled, perturbed unit square the cells' shoelace
/// areas are all of one sign and sum to the square's (a crossed quad
/// would lose area).
#[test]
fn q1_cells_are_quadrilaterals_in_cyclic_order() {
    let mesh = BoxMesh::unstructured(2, 4, 7).build().unwrap();
    let s = Space::tensor(&mesh, 1).unwrap();
    let u = s.interpolate(1, |x, o| o[0] = f(x));
    let text = vtu_nodal(&s, &[Field { name: "u", values: &u }], &[], Encoding::Ascii).unwrap();
    assert_eq!(ascii_ints(&text, "types"), vec![9; s.n_cells()]);
    let conn = ascii_ints(&text, "connectivity");
    let areas: Vec<f64> = conn
        .chunks(4)
        .map(|q| (0..4).map(|k| { let (a, b) = (s.dof_coords[q[k]], s.dof_coords[q[(k + 1) % 4]]); a[0] * b[1] - b[0] * a[1] }).sum::<f64>() / 2.0)
        .collect();
    assert!(areas.iter().all(|&a| a > 0.0) || areas.iter().all(|&a| a < 0.0), "{areas:?}");
    assert!((areas.iter().map(|a| a.abs()).sum::<f64>() - 1.0).abs() < 1e-12);
}
