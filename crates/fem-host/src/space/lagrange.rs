//! The finite-element space: nodal Lagrange P1/P2 on simplex meshes and
//! Q_p (p ≤ [`MAX_TENSOR_DEGREE`]) on quadrilateral/hexahedral meshes, in the node
//! order of [`fem_core::shape`] (tensor cells: the numberings of
//! [`super::dofs`]), scalar or with `nc` components per node.
//!
//! Every operator and solver reads its cells from here: the DOFs of each
//! cell, the cell's vertices, the boundary facets that conditions select
//! from, and the gather/scatter between global vectors of `nc`-component
//! fields (DOF-major: `dof·nc + c`) and E-vectors (`cell·nb·nc + b·nc + c`).
//! The space keeps the mesh's vertices and each cell's vertex ids rather
//! than every cell's coordinates: the kernels' E-vector of coordinates
//! ([`Space::cell_coords`]) is built where an operator needs it.

use super::dofs::{tensor_dofs, MAX_TENSOR_DEGREE};
use super::facets::{facet_nodes, simplex_facets, tensor_facets, Facet};
use super::hash::IntMap;
use super::{Numbering, Restriction};
use crate::mesh::simplex::SimplexMesh;
use crate::mesh::Mesh;
use crate::{Error, Result};
use fem_core::element::pow;
use fem_core::shape::Shape;
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::OnceLock;

/// A nodal Lagrange space (P1/P2 on simplices, Q_p on quadrilaterals and
/// hexahedra) with the per-cell data operators read.
#[derive(Clone, Debug)]
pub struct Space {
    /// Reference cell: triangle, tetrahedron, quadrilateral or hexahedron.
    pub shape: Shape,
    /// Polynomial degree (1 or 2 on simplices, 1 to [`MAX_TENSOR_DEGREE`] on
    /// tensor cells; a `#[fem_kernel]` physics compiles the degrees it names).
    pub degree: usize,
    /// Scalar nodes (a field of `nc` components has `nc · n_dofs` values).
    pub n_dofs: usize,
    /// `cell_dofs[c·nb + b]`.
    pub cell_dofs: Vec<u32>,
    /// The mesh's vertices.
    pub vertices: Vec<[f64; 3]>,
    /// The geometric vertices of every cell: `cell_vertices[c·nv + v]`.
    pub cell_vertices: Vec<u32>,
    /// Physical position of every node, padded to three components in 2D.
    pub dof_coords: Vec<[f64; 3]>,
    /// Nodes held by the default Dirichlet condition: the whole boundary,
    /// or the part [`Space::restrict_boundary`] kept.
    pub boundary: Vec<bool>,
    /// Facets on the boundary of the domain, which boundary conditions
    /// select from.
    pub facets: Vec<Facet>,
    /// The first cell slot of every node ([`Space::owner_slots`]), made
    /// on first use: node positions, transfers and nodal coefficients
    /// all start from it, a pass over every cell's nodes each time.
    pub(crate) owner_slots: OnceLock<Vec<u32>>,
}

impl Space {
    /// P1 or P2 on a simplex mesh; P2 edge nodes are shared through a map
    /// keyed by the sorted vertex pair, so neighbours agree whatever their
    /// local orientation.
    pub fn simplex(mesh: &SimplexMesh, degree: usize) -> Result<Self> {
        let shape = if mesh.dim == 2 { Shape::Triangle } else { Shape::Tetrahedron };
        if !shape.supports_degree(degree) {
            return Err(Error::InvalidArgument(format!("simplex spaces have degree 1 or 2, not {degree}")));
        }
        mesh.validate()?;
        let (nv, nb) = (mesh.dim + 1, shape.n_basis(degree));
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
        let cell_vertices = mesh.cells.iter().flat_map(|c| c[..nv].iter().copied()).collect();
        let mut space = Self {
            shape,
            degree,
            n_dofs,
            cell_dofs,
            vertices: mesh.coords.clone(),
            cell_vertices,
            dof_coords,
            boundary: Vec::new(),
            facets: simplex_facets(mesh),
            owner_slots: OnceLock::new(),
        };
        space.boundary = space.facet_mask(&space.facets);
        Ok(space)
    }

    /// Q_p on a quadrilateral/hexahedral mesh, numbered in mesh order.
    pub fn tensor(mesh: &Mesh, degree: usize) -> Result<Self> {
        Self::tensor_numbered(mesh, degree, Numbering::Original)
    }

    /// Q_p on a quadrilateral/hexahedral mesh with the DOFs numbered in
    /// the order `numbering` prescribes (Reguly & Giles §10.4).
    pub fn tensor_numbered(mesh: &Mesh, degree: usize, numbering: Numbering) -> Result<Self> {
        Self::tensor_with_facets(Cow::Borrowed(mesh), degree, numbering, &|| tensor_facets(mesh))
    }

    /// [`Space::tensor_numbered`] with the boundary facets from `facets`,
    /// called after the mesh is validated: a refined mesh's are its
    /// parent's children, where finding them again in the fine mesh took a
    /// quarter of a multigrid hierarchy's time. A mesh given owned gives
    /// the space its vertices and lets go of its cells before the nodes
    /// are placed: the finest level of a hierarchy is then not held twice.
    pub(crate) fn tensor_with_facets(mesh: Cow<'_, Mesh>, degree: usize, numbering: Numbering, facets: &dyn Fn() -> Vec<Facet>) -> Result<Self> {
        let shape = if mesh.dim == 2 { Shape::Quadrilateral } else { Shape::Hexahedron };
        if !shape.supports_degree(degree) {
            return Err(Error::InvalidArgument(format!("{} spaces have degree 1 to {MAX_TENSOR_DEGREE}, not {degree}", shape.name())));
        }
        let (n_dofs, cell_dofs) = tensor_dofs(&mesh, degree, numbering)?;
        let facets = facets();
        let nv = shape.vertices();
        let cell_vertices = cell_corners(&mesh, nv);
        let vertices = match mesh {
            Cow::Owned(m) => m.coords,
            // copied in parallel: 150 MB at 6M vertices
            Cow::Borrowed(m) => m.coords.par_iter().copied().collect(),
        };
        let mut space = Self {
            shape,
            degree,
            n_dofs,
            cell_dofs,
            vertices,
            cell_vertices,
            dof_coords: Vec::new(),
            boundary: Vec::new(),
            facets,
            owner_slots: OnceLock::new(),
        };
        space.dof_coords = space.tensor_node_positions();
        space.boundary = space.facet_mask(&space.facets);
        Ok(space)
    }

    /// Physical position of every Q_p node, evaluated once per node in
    /// the first cell that has it.
    fn tensor_node_positions(&self) -> Vec<[f64; 3]> {
        let (np, nb, d) = (self.degree + 1, self.nb(), self.dim());
        let nodes_1d = self.gll_nodes();
        self.owner_slots()
            .par_iter()
            .map(|&k| {
                let (c, i) = (k as usize / nb, k as usize % nb);
                let xi: [f64; 3] = std::array::from_fn(|a| if a < d { nodes_1d[(i / pow(np, a)) % np] } else { 0.0 });
                let v = |j: usize| if j < 1 << d { self.vertices[self.cell_vertices[c * (1 << d) + j] as usize] } else { [0.0; 3] };
                match d {
                    2 => {
                        let (p, _) = fem_core::element::geometry::<f64, 2>(&std::array::from_fn(|j| [v(j)[0], v(j)[1]]), [xi[0], xi[1]]);
                        [p[0], p[1], 0.0]
                    }
                    _ => fem_core::element::geometry::<f64, 3>(&std::array::from_fn(v), xi).0,
                }
            })
            .collect()
    }

    /// One slot `c·nb + b` of every node, the first cell slot that holds
    /// it (`u32::MAX` for a node of no cell), computed once.
    pub fn owner_slots(&self) -> &[u32] {
        self.owner_slots.get_or_init(|| owner_slots(&self.cell_dofs, self.n_dofs))
    }

    /// Keeps in [`Space::boundary`] only the nodes on the boundary facets
    /// whose keys are listed (a boundary part selected by physical
    /// groups); the rest of the boundary gets natural conditions.
    pub fn restrict_boundary(&mut self, keys: &std::collections::HashSet<[u32; 4]>) {
        self.boundary = self.facet_mask(self.facets.iter().filter(|f| keys.contains(&f.key)));
    }

    /// Nodes on the boundary facets `facets`.
    pub fn facet_mask<'f>(&self, facets: impl IntoIterator<Item = &'f Facet>) -> Vec<bool> {
        let nb = self.nb();
        let on: Vec<Vec<usize>> = (0..self.shape.local_facets()).map(|l| self.facet_local_nodes(l)).collect();
        let mut mask = vec![false; self.n_dofs];
        for f in facets {
            for &b in &on[f.local as usize] {
                mask[self.cell_dofs[f.cell as usize * nb + b] as usize] = true;
            }
        }
        mask
    }

    /// Local nodes on local facet `l`: by their tensor index on tensor
    /// cells (any degree), by their reference position on simplices.
    fn facet_local_nodes(&self, l: usize) -> Vec<usize> {
        if self.shape.is_simplex() {
            return facet_nodes(self.shape, self.degree, l);
        }
        let (np, p, axis, side) = (self.degree + 1, self.degree, l / 2, l % 2);
        (0..self.nb()).filter(|&i| (i / pow(np, axis)) % np == side * p).collect()
    }

    /// Number of mesh cells.
    pub fn n_cells(&self) -> usize {
        self.cell_dofs.len() / self.nb()
    }

    /// Spatial dimension.
    pub fn dim(&self) -> usize {
        self.shape.dim()
    }

    /// The first `dim` coordinates of geometric vertex `v` of cell `c`.
    pub fn vertex(&self, c: usize, v: usize) -> &[f64] {
        &self.vertices[self.cell_vertices[c * self.shape.vertices() + v] as usize][..self.dim()]
    }

    /// The vertex coordinates of every cell as an E-vector, what the
    /// kernels read: `[(c·nv + v)·d + a]`.
    pub fn cell_coords(&self) -> Vec<f64> {
        let d = self.dim();
        (0..self.cell_vertices.len() * d).into_par_iter().map(|k| self.vertices[self.cell_vertices[k / d] as usize][k % d]).collect()
    }

    /// The p + 1 Gauss–Lobatto–Legendre points on [−1, 1] that place a
    /// tensor cell's nodes along each axis.
    pub fn gll_nodes(&self) -> Vec<f64> {
        let np = self.degree + 1;
        let (mut x, mut w) = (vec![0.0; np], vec![0.0; np]);
        fem_core::quadrature::gauss_lobatto(&mut x, &mut w);
        x
    }

    /// Basis functions (nodes) per cell.
    pub fn nb(&self) -> usize {
        self.shape.n_basis(self.degree)
    }

    /// The element restriction of an `nc`-component field: E-vector entry
    /// `cell·nb·nc + b·nc + c` ↔ global row `dof·nc + c`.
    pub fn restriction(&self, nc: usize) -> Restriction {
        let mut map = vec![0u32; self.cell_dofs.len() * nc];
        map.par_chunks_mut(nc).zip(self.cell_dofs.par_iter()).for_each(|(m, &g)| {
            for (c, v) in m.iter_mut().enumerate() {
                *v = g * nc as u32 + c as u32;
            }
        });
        Restriction::new(map, self.n_dofs * nc)
    }

    /// E-vector of a global `nc`-component field.
    pub fn gather<T: Copy + Default + Send + Sync>(&self, nc: usize, global: &[T]) -> Vec<T> {
        self.restriction(nc).gathered(global)
    }

    /// Global field with the E-vector's entries summed per node.
    pub fn scatter_add(&self, nc: usize, local: &[f64]) -> Vec<f64> {
        self.restriction(nc).scattered(local)
    }

    /// Node values of `f`, `nc` per node.
    pub fn interpolate(&self, nc: usize, f: impl Fn(&[f64; 3], &mut [f64]) + Sync) -> Vec<f64> {
        let mut out = vec![0.0; self.n_dofs * nc];
        out.par_chunks_mut(nc).zip(&self.dof_coords).for_each(|(o, x)| f(x, o));
        out
    }
}

/// The first `nv` vertices of every cell of `mesh`, cell after cell,
/// copied in parallel.
fn cell_corners(mesh: &Mesh, nv: usize) -> Vec<u32> {
    let mut out = vec![0u32; mesh.n_cells() * nv];
    out.par_chunks_mut(nv).zip(mesh.cells.par_iter()).for_each(|(o, c)| o.copy_from_slice(&c[..nv]));
    out
}

/// One slot `c·nb + b` of every node of `cell_dofs`: the first that has
/// it (the same on any thread count), `u32::MAX` for a node in no cell.
pub(crate) fn owner_slots(cell_dofs: &[u32], n_dofs: usize) -> Vec<u32> {
    let mut owner = crate::counters::filled(n_dofs, u32::MAX);
    let first = crate::counters::atomic(&mut owner);
    cell_dofs.par_iter().enumerate().for_each(|(k, &g)| {
        first[g as usize].fetch_min(k as u32, std::sync::atomic::Ordering::Relaxed);
    });
    owner
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
            let space = Space::simplex(&mesh, 2).unwrap();
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
