//! Per-cell input of the element kernels in the transposed GPU layout
//! (Reguly & Giles eq. 13): the element-to-row map with Dirichlet flags and
//! the cell vertex coordinates.

use crate::space::Space;
use crate::space::Layout;
use crate::Scalar;
use rayon::prelude::*;
use fem_kernels::cells::{map_entry, vertex_entry};
use fem_kernels::sparse::{is_free, row_of, NONE};

/// The cells of a [`Layout`] in the transposed (cell-fastest) layout the
/// element kernels read, in precision `T`.
#[derive(Clone, Debug)]
pub struct CellData<T> {
    /// Spatial dimension (2 or 3).
    pub dim: usize,
    /// Polynomial degree p of the Q_p elements.
    pub degree: usize,
    /// Cells.
    pub ne: usize,
    /// Basis functions per cell.
    pub nb: usize,
    /// Rows of the linear system ([`Layout::n_rows`]).
    pub n_rows: usize,
    /// `map[i * ne + e]`: row of local node `i` of cell `e`, [`NONE`], or a
    /// row with [`FIXED`].
    pub map: Vec<u32>,
    /// `verts[(k * dim + a) * ne + e]`: coordinate `a` of vertex `k` of cell `e`.
    pub verts: Vec<T>,
    /// Fixed (Dirichlet) rows kept in the system, where `y = x`.
    pub fixed_rows: Vec<u32>,
    /// `kappa[e]`: the material factor of cell `e` on the problem's κ(x)
    /// (its region's conductivity; 1 without regions).
    pub kappa: Vec<T>,
}

impl<T: Scalar> CellData<T> {
    /// Transposes the rows of `layout` (fixed ones flagged) and the vertex
    /// coordinates of its `space`; every material factor is 1.
    pub fn new(space: &Space, layout: &Layout) -> Self {
        let (ne, nb, dim, degree) = (layout.n_cells(), layout.dofs_per_cell, space.dim(), space.degree);
        // plane by plane in parallel, each entry as the device makes it
        let fixed: &[u8] = bytes_of_flags(&layout.fixed);
        let mut map = vec![NONE; nb * ne];
        map.par_chunks_mut(ne.max(1)).enumerate().for_each(|(i, plane)| {
            for (e, m) in plane.iter_mut().enumerate() {
                // SAFETY: the layout's rows are nb per cell, each flagged in `fixed`
                *m = unsafe { map_entry(i * ne + e, ne, nb, layout.cell_rows.as_ptr(), fixed.as_ptr()) };
            }
        });
        let nv = 1 << dim;
        let coords = space.vertices.as_flattened();
        let mut verts = vec![T::ZERO; nv * dim * ne];
        verts.par_chunks_mut(ne.max(1)).enumerate().for_each(|(ka, plane)| {
            for (e, x) in plane.iter_mut().enumerate() {
                // SAFETY: the space's cells have 2^dim corners, each a vertex id
                *x = T::from_f64(unsafe { vertex_entry(ka * ne + e, ne, dim, space.cell_vertices.as_ptr(), coords.as_ptr()) });
            }
        });
        let fixed_rows = layout.fixed_rows();
        Self { dim, degree, ne, nb, n_rows: layout.n_rows, map, verts, fixed_rows, kappa: vec![T::ONE; ne] }
    }

    /// The same cells with the material factors `kappa` (one per cell,
    /// each positive and finite).
    pub fn with_kappa(mut self, kappa: &[f64]) -> crate::Result<Self> {
        self.kappa = material_factors(kappa, self.ne)?;
        Ok(self)
    }

    /// Rows of cell `e` as a vector (for host-side set-up code).
    pub fn rows_of(&self, e: usize) -> Vec<u32> {
        (0..self.nb).map(|i| self.map[i * self.ne + e]).collect()
    }
}

/// The material factors `kappa` of `ne` cells in precision `T`, or why
/// they are not (a count other than `ne`, a factor not positive and finite).
pub fn material_factors<T: Scalar>(kappa: &[f64], ne: usize) -> crate::Result<Vec<T>> {
    if kappa.len() != ne {
        return Err(crate::Error::InvalidArgument(format!("{} material factors for {ne} cells", kappa.len())));
    }
    if let Some(e) = kappa.iter().position(|k| !(k.is_finite() && *k > 0.0)) {
        return Err(crate::Error::InvalidArgument(format!("cell {e} has material factor {} (κ must be positive and finite)", kappa[e])));
    }
    Ok(kappa.iter().map(|&k| T::from_f64(k)).collect())
}

/// Flags as the bytes (0 or 1) the device kernels read.
pub fn bytes_of_flags(flags: &[bool]) -> &[u8] {
    // SAFETY: a bool is one byte holding 0 or 1
    unsafe { std::slice::from_raw_parts(flags.as_ptr().cast::<u8>(), flags.len()) }
}

/// Sums `value(e, i)` over the free local entries of every cell into their
/// rows, from a transposed map of `ne` cells; fixed rows hold `fixed`. The
/// load vector (`fixed` = 0) and the diagonal (`fixed` = 1) of every
/// element-based operator, on any backend, are such sums.
pub fn sum_into_rows<T: Scalar>(map: &[u32], ne: usize, n_rows: usize, fixed_rows: &[u32], fixed: T, value: impl Fn(usize, usize) -> T) -> Vec<T> {
    let mut out = vec![T::ZERO; n_rows];
    for &r in fixed_rows {
        out[r as usize] = fixed;
    }
    for (k, &m) in map.iter().enumerate() {
        if is_free(m) {
            out[row_of(m)] += value(k % ne, k / ne);
        }
    }
    out
}

/// Row lengths a lazy ELLPACK must hold: every coupled entry of every cell
/// touching the row (duplicates included), and 1 for a fixed row.
pub fn lazy_row_capacity(map: &[u32], ne: usize, n_rows: usize, fixed_rows: &[u32]) -> Vec<u32> {
    let nb = if ne == 0 { 0 } else { map.len() / ne };
    let mut cap = vec![0u32; n_rows];
    for &r in fixed_rows {
        cap[r as usize] = 1;
    }
    for e in 0..ne {
        let free = (0..nb).map(|i| map[i * ne + e]).filter(|&m| is_free(m));
        let count = free.clone().count() as u32;
        for m in free {
            cap[row_of(m)] += count;
        }
    }
    cap
}

