//! Global formats built on the device from an uploaded CSR pattern: the
//! ELLPACK column planes, the unit diagonal of fixed rows and the slot of
//! every element-matrix entry ([`crate::slots`]); and the element kernels'
//! per-cell input from the mesh ([`crate::cells`]).

use crate::device::grid_stride_fold;
use crate::cells::{map_entry, picked_node_entry, vertex_entry};
use crate::slots::{ell_column, entry_slot, gathered_entry_slot, residual_row, slot};
use fem_core::Real;
use fem_macros::kernel;

/// `pos[(i·nb + j)·ne + e]` = the slot of entry (i, j) of cell `e`'s
/// element matrix (`map` plane-major, `map[i·ne + e]`), over the
/// `nb²·ne` entries; CSR slots when `ld` is 0, ELLPACK ones otherwise.
#[kernel]
pub unsafe fn entry_slots(ne: usize, nb: usize, map: *const u32, row_ptr: *const u32, col: *const u32, ld: usize, pos: *mut u32) {
    grid_stride_fold(nb * nb * ne, (), |(), t| {
        let (e, ij) = (t % ne, t / ne);
        let (mi, mj) = (*map.add(ij / nb * ne + e), *map.add(ij % nb * ne + e));
        *pos.add(t) = entry_slot(mi, mj, row_ptr, col, ld);
    });
}

/// `pos[t]` = the CSR slot of entry `t` of the element matrices over the
/// gathered rows `rows` (`nl` an element, `n` entries in all), `NONE`
/// where a row or column is fixed (`fixed[row]` nonzero).
#[kernel]
pub unsafe fn gathered_entry_slots(n: usize, nl: usize, rows: *const u32, fixed: *const f64, row_ptr: *const u32, col: *const u32, pos: *mut u32) {
    grid_stride_fold(n, (), |(), t| *pos.add(t) = gathered_entry_slot(t, nl, rows, |r| *fixed.add(r) != 0.0, row_ptr, col));
}

/// `out[t]` = the residual's row of E-vector entry `t` gathered from
/// `rows[t]` ([`residual_row`]: none where `fixed[row]` is nonzero), over
/// `n` entries.
#[kernel]
pub unsafe fn residual_rows(n: usize, rows: *const u32, fixed: *const f64, out: *mut u32) {
    grid_stride_fold(n, (), |(), t| {
        let r = *rows.add(t);
        *out.add(t) = residual_row(r, r != crate::sparse::NONE && *fixed.add(r as usize) != 0.0);
    });
}

/// `out[r]` = 1 where `flags[r]` is nonzero, 0 elsewhere, over `n` rows:
/// a product's mask of fixed rows from their one-byte flags.
#[kernel]
pub unsafe fn flag_mask(n: usize, flags: *const u8, out: *mut f64) {
    grid_stride_fold(n, (), |(), r| *out.add(r) = if *flags.add(r) != 0 { 1.0 } else { 0.0 });
}

/// `out[k·ld + r]` = the column of ELLPACK slot `k` of row `r`, over the
/// `width·ld` slots of `n` rows.
#[kernel]
pub unsafe fn ell_columns(n: usize, ld: usize, width: usize, row_ptr: *const u32, col: *const u32, out: *mut u32) {
    grid_stride_fold(width * ld, (), |(), t| *out.add(t) = ell_column(t % ld, t / ld, n, row_ptr, col));
}

/// `val` = 1 at the first slot of every row whose `fixed` entry is
/// nonzero (a fixed row holds only its diagonal), untouched elsewhere.
#[kernel(f32, f64)]
pub unsafe fn unit_fixed_rows<T: Real>(n: usize, row_ptr: *const u32, ld: usize, fixed: *const T, val: *mut T) {
    grid_stride_fold(n, (), |(), r| {
        if *fixed.add(r) != T::ZERO {
            *val.add(slot(r, 0, row_ptr, ld)) = T::ONE;
        }
    });
}

/// The element kernels' per-cell input made from the mesh and the rows
/// on the device: the transposed map (`nb·ne` entries, [`map_entry`]) and
/// vertex coordinates (`2^dim·dim·ne`, [`vertex_entry`]).
#[kernel(f32, f64)]
pub unsafe fn cell_inputs<T: Real>(ne: usize, nb: usize, dim: usize, rows: *const u32, fixed: *const u8, corners: *const u32, coords: *const f64, map: *mut u32, verts: *mut T) {
    grid_stride_fold(nb * ne, (), |(), t| *map.add(t) = map_entry(t, ne, nb, rows, fixed));
    grid_stride_fold((dim << dim) * ne, (), |(), t| *verts.add(t) = T::from_f64(vertex_entry(t, ne, dim, corners, coords)));
}

/// `out[t]` = entry `t` of a physics' cell data from values per node
/// ([`picked_node_entry`]), over its `n` entries.
#[kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn cells_from_nodes(n: usize, per: usize, n_picks: usize, picks: *const u32, nb: usize, nc: usize, map: *const u32, nodal: *const f64, out: *mut f64) {
    grid_stride_fold(n, (), |(), t| *out.add(t) = picked_node_entry(t, per, n_picks, picks, nb, nc, map, nodal));
}
