//! Meshes of quadrilaterals (2D) and hexahedra (3D): vertex coordinates and
//! cells given by their 2^D vertices in tensor order (vertex `v` of a cell
//! sits at the reference corner whose coordinate along axis `a` is bit `a`
//! of `v`). Generation in [`generate`], checks in [`validate`].

pub mod adjacency;
pub mod generate;
pub mod heart;
pub mod hole;
pub mod refine;
pub mod simplex;
pub mod simplex_refine;
pub mod spectral;
pub mod validate;

pub use adjacency::single_facets;
pub use generate::BoxMesh;

/// Vertex ids of a cell; the first 2^dim are used.
pub type Cell = [u32; 8];

/// fem's tensor vertex order ↔ the counter-clockwise corner order of Gmsh
/// and VTK (bottom face, then top face); it is its own inverse.
pub const CYCLIC_ORDER: [usize; 8] = [0, 1, 3, 2, 4, 5, 7, 6];

/// An unstructured quadrilateral or hexahedral mesh.
#[derive(Clone, Debug)]
pub struct Mesh {
    /// 2 or 3.
    pub dim: usize,
    /// Vertex coordinates; components past `dim` are zero.
    pub coords: Vec<[f64; 3]>,
    /// Vertex ids of each cell, in tensor order (see the module docs).
    pub cells: Vec<Cell>,
}

impl Mesh {
    /// 2^dim: 4 for quadrilaterals, 8 for hexahedra.
    pub fn vertices_per_cell(&self) -> usize {
        1 << self.dim
    }

    /// Number of cells.
    pub fn n_cells(&self) -> usize {
        self.cells.len()
    }

    /// Number of vertices.
    pub fn n_vertices(&self) -> usize {
        self.coords.len()
    }

    /// The vertices of cell `c` as D-vectors, in the layout the element
    /// kernels take.
    pub fn cell_vertices<const D: usize>(&self, c: usize) -> [[f64; D]; fem_core::element::MAX_VERTICES] {
        let mut v = [[0.0; D]; fem_core::element::MAX_VERTICES];
        for (k, vk) in v.iter_mut().enumerate().take(1 << D) {
            let x = self.coords[self.cells[c][k] as usize];
            vk.copy_from_slice(&x[..D]);
        }
        v
    }

    /// Centroid of cell `c` (mean of its vertices).
    pub fn centroid(&self, c: usize) -> [f64; 3] {
        let nv = self.vertices_per_cell();
        let mut x = [0.0; 3];
        for &v in &self.cells[c][..nv] {
            for a in 0..3 {
                x[a] += self.coords[v as usize][a] / nv as f64;
            }
        }
        x
    }
}

/// The vertices of facet (`axis`, `side`) of cell `c` (the cell's vertices
/// whose bit `axis` is `side`), sorted and padded with `u32::MAX`: the
/// key two cells sharing the facet agree on.
pub fn facet_key(mesh: &Mesh, c: usize, axis: usize, side: usize) -> [u32; 4] {
    let mut k = facet_vertices(mesh, c, axis, side);
    let m = 1 << (mesh.dim - 1);
    k[..m].sort_unstable();
    k
}

/// The vertices of facet (`axis`, `side`) of cell `c` in the cell's tensor
/// order, padded with `u32::MAX`.
pub fn facet_vertices(mesh: &Mesh, c: usize, axis: usize, side: usize) -> [u32; 4] {
    let mut k = [u32::MAX; 4];
    let mut m = 0;
    for v in 0..(1 << mesh.dim) {
        if (v >> axis) & 1 == side {
            k[m] = mesh.cells[c][v];
            m += 1;
        }
    }
    k
}

/// Facets that belong to one cell only: (cell, axis, side), in that order.
pub fn boundary_facets(mesh: &Mesh) -> Vec<(usize, usize, usize)> {
    // facet 2·axis + side: the vertices whose bit `axis` is `side`
    let facets: Vec<u8> = (0..2 * mesh.dim).map(|f| (0..1 << mesh.dim).filter(|v| (v >> (f / 2)) & 1 == f % 2).map(|v| 1 << v).sum()).collect();
    single_facets(&mesh.cells, mesh.vertices_per_cell(), mesh.coords.len(), &facets).into_iter().map(|(c, f)| (c, f / 2, f % 2)).collect()
}

