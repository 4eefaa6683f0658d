//! Nodal Lagrange spaces for the pointwise kernels: P1/P2 on simplex
//! meshes, Q_p on quadrilateral/hexahedral meshes (the numbering of
//! [`super::Space`]), in the node order of [`fem_core::shape`].
//!
//! The space also carries what the kernels read per cell: the DOFs of each
//! cell and its vertex coordinates as an E-vector, and the gather/scatter
//! between global vectors of `nc`-component fields (DOF-major: `dof·nc +
//! c`) and E-vectors (`cell·nb·nc + b·nc + c`).

use super::facets::{facet_nodes, simplex_facets, Facet};
use super::hash::IntMap;
use super::{Numbering, Space};
use crate::mesh::simplex::SimplexMesh;
use crate::mesh::Mesh;
use crate::{Error, Result};
use fem_core::shape::Shape;
use rayon::prelude::*;

/// A nodal Lagrange space (P1/P2 on simplices, Q_p on quadrilaterals and
/// hexahedra) with the per-cell data the pointwise kernels read.
#[derive(Clone, Debug)]
pub struct NodalSpace {
    /// Reference cell: triangle, tetrahedron, quadrilateral or hexahedron.
    pub shape: Shape,
    /// Polynomial degree (1 or 2 on simplices, 1 to the tensor maximum otherwise).
    pub degree: usize,
    /// Scalar nodes (a field of `nc` components has `nc · n_dofs` values).
    pub n_dofs: usize,
    /// `cell_dofs[c·nb + b]`.
    pub cell_dofs: Vec<u32>,
    /// Vertex coordinates per cell: `cell_coords[(c·nv + v)·d + a]`.
    pub cell_coords: Vec<f64>,
    /// Physical position of every node, padded to three components in 2D.
    pub dof_coords: Vec<[f64; 3]>,
    /// Nodes on the boundary of the domain.
    pub boundary: Vec<bool>,
    /// Facets on the boundary of the domain, which boundary conditions
    /// select from.
    pub facets: Vec<Facet>,
}

impl NodalSpace {
    /// P1 or P2 on a simplex mesh; P2 edge nodes are shared through a map
    /// keyed by the sorted vertex pair, so neighbours agree whatever their
    /// local orientation.
    pub fn simplex(mesh: &SimplexMesh, degree: usize) -> Result<Self> {
        let shape = if mesh.dim == 2 { Shape::Triangle } else { Shape::Tetrahedron };
        if !shape.supports_degree(degree) {
            return Err(Error::InvalidArgument(format!("simplex spaces have degree 1 or 2, not {degree}")));
        }
        mesh.validate()?;
        let (d, nv, nb) = (mesh.dim, mesh.dim + 1, shape.n_basis(degree));
        let n_vertices = mesh.coords.len();
        let mut edges: IntMap<u64, u32> = IntMap::default();
        let mut dof_coords = mesh.coords.clone();
        let mut cell_dofs = Vec::with_capacity(mesh.n_cells() * nb);
        for cell in &mesh.cells {
            cell_dofs.extend_from_slice(&cell[..nv]);
            if degree == 2 {
                for &[i, j] in shape.edges() {
                    let (a, b) = (cell[i].min(cell[j]), cell[i].max(cell[j]));
                    let next = (n_vertices + edges.len()) as u32;
                    let id = *edges.entry((a as u64) << 32 | b as u64).or_insert_with(|| {
                        let (xa, xb) = (mesh.coords[a as usize], mesh.coords[b as usize]);
                        dof_coords.push(std::array::from_fn(|k| 0.5 * (xa[k] + xb[k])));
                        next
                    });
                    cell_dofs.push(id);
                }
            }
        }
        let n_dofs = dof_coords.len();
        if n_dofs > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!("{n_dofs} nodes exceed the u32 index range")));
        }
        let cell_coords = vertex_evector(&mesh.coords, &mesh.cells, nv, d);
        let mut space = Self { shape, degree, n_dofs, cell_dofs, cell_coords, dof_coords, boundary: Vec::new(), facets: simplex_facets(mesh) };
        space.boundary = space.facet_mask(&space.facets);
        Ok(space)
    }

    /// Q_p on a quadrilateral/hexahedral mesh.
    pub fn tensor(mesh: &Mesh, degree: usize) -> Result<Self> {
        let shape = if mesh.dim == 2 { Shape::Quadrilateral } else { Shape::Hexahedron };
        if !shape.supports_degree(degree) {
            return Err(Error::InvalidArgument(format!("{} spaces have degree 1 to {}, not {degree}", shape.name(), fem_core::shape::MAX_TENSOR_DEGREE)));
        }
        let (space, facets) = Space::with_facets(mesh, degree, Numbering::Original)?;
        let (d, nv) = (mesh.dim, shape.vertices());
        let cell_coords = vertex_evector(&mesh.coords, &mesh.cells, nv, d);
        Ok(Self {
            shape,
            degree,
            n_dofs: space.n_dofs,
            dof_coords: space.dof_coords(mesh),
            cell_dofs: space.cell_dofs,
            cell_coords,
            boundary: space.boundary,
            facets,
        })
    }

    /// Nodes on the boundary facets `facets`.
    pub fn facet_mask<'f>(&self, facets: impl IntoIterator<Item = &'f Facet>) -> Vec<bool> {
        let nb = self.nb();
        let on: Vec<Vec<usize>> = (0..self.shape.local_facets()).map(|l| facet_nodes(self.shape, self.degree, l)).collect();
        let mut mask = vec![false; self.n_dofs];
        for f in facets {
            for &b in &on[f.local as usize] {
                mask[self.cell_dofs[f.cell as usize * nb + b] as usize] = true;
            }
        }
        mask
    }

    /// Number of mesh cells.
    pub fn n_cells(&self) -> usize {
        self.cell_dofs.len() / self.nb()
    }

    /// Basis functions (nodes) per cell.
    pub fn nb(&self) -> usize {
        self.shape.n_basis(self.degree)
    }

    /// E-vector of a global `nc`-component field.
    pub fn gather<T: Copy + Send + Sync>(&self, nc: usize, global: &[T]) -> Vec<T> {
        self.cell_dofs.par_iter().flat_map_iter(|&g| (0..nc).map(move |c| global[g as usize * nc + c])).collect()
    }

    /// Global field with the E-vector's entries summed per node.
    pub fn scatter_add(&self, nc: usize, local: &[f64]) -> Vec<f64> {
        let mut global = vec![0.0; self.n_dofs * nc];
        for (k, &g) in self.cell_dofs.iter().enumerate() {
            for c in 0..nc {
                global[g as usize * nc + c] += local[k * nc + c];
            }
        }
        global
    }

    /// Node values of `f`, `nc` per node.
    pub fn interpolate(&self, nc: usize, f: impl Fn(&[f64; 3], &mut [f64]) + Sync) -> Vec<f64> {
        let mut out = vec![0.0; self.n_dofs * nc];
        out.par_chunks_mut(nc).zip(&self.dof_coords).for_each(|(o, x)| f(x, o));
        out
    }
}

/// The first `nv` vertices' coordinates of every cell, `d` each.
fn vertex_evector<const K: usize>(coords: &[[f64; 3]], cells: &[[u32; K]], nv: usize, d: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(cells.len() * nv * d);
    for cell in cells {
        for &v in &cell[..nv] {
            out.extend_from_slice(&coords[v as usize][..d]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::simplex::SimplexBox;

    #[test]
    fn p2_nodes_are_shared_and_boundary_nodes_lie_on_the_boundary() {
        for dim in [2, 3] {
            let n = 3;
            let mesh = SimplexBox::unstructured(dim, n, 3).build().unwrap();
            let space = NodalSpace::simplex(&mesh, 2).unwrap();
            // P2 on the split grid has the nodes of Q2 on it: (2n + 1)^d.
            assert_eq!(space.n_dofs, (2 * n + 1).pow(dim as u32));
            for (x, &b) in space.dof_coords.iter().zip(&space.boundary) {
                let on = x[..dim].iter().any(|&v| v.abs() < 1e-12 || (v - 1.0).abs() < 1e-12);
                assert_eq!(on, b, "{x:?}");
            }
            // Interpolate then gather: each cell sees its nodes' positions.
            let xs = space.interpolate(dim, |x, o| o.copy_from_slice(&x[..dim]));
            let e = space.gather(dim, &xs);
            for c in [0, space.n_cells() - 1] {
                for b in 0..space.nb() {
                    let node = space.dof_coords[space.cell_dofs[c * space.nb() + b] as usize];
                    assert_eq!(&e[(c * space.nb() + b) * dim..][..dim], &node[..dim]);
                }
            }
        }
    }
}
