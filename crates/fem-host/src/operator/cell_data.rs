//! Per-cell input of the element kernels in the transposed GPU layout
//! (Reguly & Giles eq. 13): the element-to-row map with Dirichlet flags and
//! the cell vertex coordinates.

use crate::mesh::Mesh;
use crate::space::dirichlet::NONE as LAYOUT_NONE;
use crate::space::Layout;
use crate::Scalar;
use fem_kernels::sparse::{FIXED, NONE};

#[derive(Clone, Debug)]
pub struct CellData<T> {
    pub dim: usize,
    pub degree: usize,
    /// Cells.
    pub ne: usize,
    /// Basis functions per cell.
    pub nb: usize,
    pub n_rows: usize,
    /// `map[i * ne + e]`: row of local node `i` of cell `e`, [`NONE`], or a
    /// row with [`FIXED`].
    pub map: Vec<u32>,
    /// `verts[(k * dim + a) * ne + e]`: coordinate `a` of vertex `k` of cell `e`.
    pub verts: Vec<T>,
    /// Fixed (Dirichlet) rows kept in the system, where `y = x`.
    pub fixed_rows: Vec<u32>,
}

impl<T: Scalar> CellData<T> {
    pub fn new(mesh: &Mesh, layout: &Layout, degree: usize) -> Self {
        let (ne, nb, dim) = (layout.n_cells(), layout.dofs_per_cell, mesh.dim);
        let mut map = vec![NONE; nb * ne];
        for e in 0..ne {
            for i in 0..nb {
                let r = layout.cell_rows[e * nb + i];
                map[i * ne + e] = if r == LAYOUT_NONE {
                    NONE
                } else if layout.fixed[r as usize] {
                    r | FIXED
                } else {
                    r
                };
            }
        }
        let nv = 1 << dim;
        let mut verts = vec![T::ZERO; nv * dim * ne];
        for e in 0..ne {
            for k in 0..nv {
                let x = mesh.coords[mesh.cells[e][k] as usize];
                for a in 0..dim {
                    verts[(k * dim + a) * ne + e] = T::from_f64(x[a]);
                }
            }
        }
        let fixed_rows = (0..layout.n_rows as u32).filter(|&r| layout.fixed[r as usize]).collect();
        Self { dim, degree, ne, nb, n_rows: layout.n_rows, map, verts, fixed_rows }
    }

    /// Rows of cell `e` as a vector (for host-side set-up code).
    pub fn rows_of(&self, e: usize) -> Vec<u32> {
        (0..self.nb).map(|i| self.map[i * self.ne + e]).collect()
    }
}

/// A pointer shared by threads that write disjoint elements (cells of one
/// colour, or the strided entries of distinct cells).
#[derive(Clone, Copy)]
pub struct Disjoint<T>(pub *mut T);
unsafe impl<T> Send for Disjoint<T> {}
unsafe impl<T> Sync for Disjoint<T> {}
