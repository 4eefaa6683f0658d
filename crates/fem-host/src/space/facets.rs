//! Boundary facets of a nodal space: which cell each belongs to, which of
//! its local facets it is, and the mesh-vertex key that Gmsh's boundary
//! physical groups name it by. Boundary conditions select facets from
//! this list (all, by group, by position) and read the nodes on them and
//! their reference parametrisation from here, one implementation for
//! every cell shape.
//!
//! Local facets: on a simplex, facet `k` is the one opposite vertex `k`;
//! on a tensor cell, facet `2·axis + side` is where reference coordinate
//! `axis` is −1 (`side` 0) or +1 (`side` 1).

use crate::mesh::simplex::SimplexMesh;
use crate::mesh::{single_facets, Mesh};
use fem_core::shape::Shape;

/// A facet on the boundary of the domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facet {
    /// The one cell it belongs to.
    pub cell: u32,
    /// Its local number in the cell (see the module docs).
    pub local: u8,
    /// Its corner vertices (mesh numbering), sorted, padded with `u32::MAX`:
    /// the key of [`crate::mesh::facet_key`] and of Gmsh's groups.
    pub key: [u32; 4],
}

/// Boundary facets of a simplex mesh.
pub fn simplex_facets(mesh: &SimplexMesh) -> Vec<Facet> {
    let d = mesh.dim;
    let key = |c: usize, skip: usize| {
        let mut f = [u32::MAX; 4];
        for (k, v) in (0..=d).filter(|&k| k != skip).map(|k| mesh.cells[c][k]).enumerate() {
            f[k] = v;
        }
        f[..d].sort_unstable();
        f
    };
    let facets: Vec<u8> = (0..=d).map(|skip| ((1u8 << (d + 1)) - 1) & !(1 << skip)).collect();
    single_facets(&mesh.cells, d + 1, mesh.coords.len(), &facets).into_iter().map(|(c, skip)| Facet { cell: c as u32, local: skip as u8, key: key(c, skip) }).collect()
}

/// Boundary facets of a quadrilateral or hexahedral mesh.
pub fn tensor_facets(mesh: &Mesh) -> Vec<Facet> {
    crate::mesh::boundary_facets(mesh)
        .into_iter()
        .map(|(c, axis, side)| Facet {
            cell: c as u32,
            local: (2 * axis + side) as u8,
            key: crate::mesh::facet_key(mesh, c, axis, side),
        })
        .collect()
}

/// Reference vertices of `shape` (simplex: 0 and the unit vectors; tensor:
/// the corners of [−1, 1]^d, vertex v at the corner whose bits are v's).
fn reference_vertex(shape: Shape, v: usize) -> [f64; 3] {
    let mut x = [0.0; 3];
    if shape.is_simplex() {
        if v > 0 {
            x[v - 1] = 1.0;
        }
    } else {
        for (a, xa) in x.iter_mut().enumerate().take(shape.dim()) {
            *xa = if (v >> a) & 1 == 1 { 1.0 } else { -1.0 };
        }
    }
    x
}

/// Whether reference point `xi` lies on local facet `local` of `shape`.
pub fn on_facet(shape: Shape, local: usize, xi: &[f64; 3]) -> bool {
    const TOL: f64 = 1e-12;
    if shape.is_simplex() {
        let lambda = if local == 0 {
            1.0 - xi[..shape.dim()].iter().sum::<f64>()
        } else {
            xi[local - 1]
        };
        lambda.abs() < TOL
    } else {
        let (axis, side) = (local / 2, local % 2);
        (xi[axis] - if side == 1 { 1.0 } else { -1.0 }).abs() < TOL
    }
}

/// Local basis nodes of degree `p` on local facet `local`.
pub fn facet_nodes(shape: Shape, p: usize, local: usize) -> Vec<usize> {
    (0..shape.n_basis(p))
        .filter(|&b| on_facet(shape, local, &shape.node(p, b)))
        .collect()
}

/// The facet's reference shape: a segment (as a 1D tensor rule on [−1, 1]
/// for tensor cells, mapped from \[0, 1\] for simplices), a triangle or a
/// quadrilateral.
pub(crate) fn facet_map(shape: Shape, local: usize) -> FacetMap {
    let d = shape.dim();
    if shape.is_simplex() {
        let corners: Vec<[f64; 3]> = (0..=d)
            .filter(|&v| v != local)
            .map(|v| reference_vertex(shape, v))
            .collect();
        let origin = corners[0];
        let mut axes = [[0.0; 3]; 2];
        for (j, c) in corners[1..].iter().enumerate() {
            axes[j] = std::array::from_fn(|a| c[a] - origin[a]);
        }
        FacetMap {
            origin,
            axes,
            simplex: true,
        }
    } else {
        let (axis, side) = (local / 2, local % 2);
        let mut origin = [0.0; 3];
        origin[axis] = if side == 1 { 1.0 } else { -1.0 };
        let mut axes = [[0.0; 3]; 2];
        for (j, a) in (0..d).filter(|&a| a != axis).enumerate() {
            axes[j][a] = 1.0;
        }
        FacetMap {
            origin,
            axes,
            simplex: false,
        }
    }
}

/// A normal of the facet spanned by `tangents` (the first alone in 2D,
/// both in 3D), not normalised: its length is the facet's measure element.
pub(crate) fn span_normal(d: usize, tangents: [[f64; 3]; 2]) -> [f64; 3] {
    let [t0, t1] = tangents;
    if d == 2 {
        [t0[1], -t0[0], 0.0]
    } else {
        [t0[1] * t1[2] - t0[2] * t1[1], t0[2] * t1[0] - t0[0] * t1[2], t0[0] * t1[1] - t0[1] * t1[0]]
    }
}

/// ξ(s) = origin + Σ_j s_j axes_j from the facet's reference coordinates
/// (the reference simplex of one dimension less, or [−1, 1]^(d−1)) into the
/// cell's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FacetMap {
    pub origin: [f64; 3],
    pub axes: [[f64; 3]; 2],
    /// Whether the facet's reference cell is a simplex.
    pub simplex: bool,
}

impl FacetMap {
    /// The cell reference point of facet point `s`.
    pub fn point(&self, s: &[f64]) -> [f64; 3] {
        let mut x = self.origin;
        for (j, sj) in s.iter().enumerate() {
            for (a, xa) in x.iter_mut().enumerate() {
                *xa += sj * self.axes[j][a];
            }
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every facet carries the nodes a face of its kind has: p+1 on an
    /// edge, (p+1)(p+2)/2 on a triangle, (p+1)² on a quadrilateral, and its
    /// map sends the facet's reference corners onto those nodes' plane.
    #[test]
    fn facet_nodes_count_and_lie_on_the_mapped_facet() {
        for shape in Shape::ALL {
            let d = shape.dim();
            for p in (1..=4).filter(|&p| shape.supports_degree(p)) {
                for local in 0..shape.local_facets() {
                    let nodes = facet_nodes(shape, p, local);
                    let want = match (shape.is_simplex(), d) {
                        (_, 2) => p + 1,
                        (true, 3) => (p + 1) * (p + 2) / 2,
                        _ => (p + 1) * (p + 1),
                    };
                    assert_eq!(nodes.len(), want, "{shape:?} P{p} facet {local}");
                    let map = facet_map(shape, local);
                    for s in [[0.0, 0.0], [0.5, 0.25], [1.0, 0.0], [0.0, 1.0]] {
                        assert!(on_facet(shape, local, &map.point(&s[..d - 1])));
                    }
                }
            }
        }
    }
}
