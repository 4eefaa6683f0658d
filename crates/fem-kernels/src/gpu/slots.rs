//! Global formats built on the device from an uploaded CSR pattern: the
//! ELLPACK column planes, the unit diagonal of fixed rows and the slot of
//! every element-matrix entry ([`crate::slots`]).

use crate::device::grid_stride_fold;
use crate::slots::{ell_column, entry_slot, slot};
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
