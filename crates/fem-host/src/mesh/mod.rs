//! Meshes of quadrilaterals (2D) and hexahedra (3D): vertex coordinates and
//! cells given by their 2^D vertices in tensor order (vertex `v` of a cell
//! sits at the reference corner whose coordinate along axis `a` is bit `a`
//! of `v`). Generation in [`generate`], checks in [`validate`].

pub mod generate;
pub mod hole;
pub mod refine;
pub mod spectral;
pub mod validate;

pub use generate::BoxMesh;

/// Vertex ids of a cell; the first 2^dim are used.
pub type Cell = [u32; 8];

/// An unstructured quadrilateral or hexahedral mesh.
#[derive(Clone, Debug)]
pub struct Mesh {
    /// 2 or 3.
    pub dim: usize,
    /// Vertex coordinates; components past `dim` are zero.
    pub coords: Vec<[f64; 3]>,
    pub cells: Vec<Cell>,
}

impl Mesh {
    pub fn vertices_per_cell(&self) -> usize {
        1 << self.dim
    }

    pub fn n_cells(&self) -> usize {
        self.cells.len()
    }

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
