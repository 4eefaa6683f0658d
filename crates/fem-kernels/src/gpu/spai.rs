//! SPAI(1) built on the device, a thread a row ([`spai_row`], the host's
//! row too), the Gram matrix in the thread's own memory.

use crate::device::{atomic_min_u32, grid_stride_fold};
use crate::sparse::{mirror_slot, NONE};
use crate::spai::{spai_row, DEVICE_SPAI_ROW};
use core::mem::MaybeUninit;
use fem_core::Real;
use fem_macros::kernel;

/// Row `k` of SPAI(1) of the `n`-row CSR matrix `(row_ptr, col, val)`
/// into `out` at the row's positions, for every row; `failed[0]` lowered
/// to the first row whose coupled rows are linearly dependent. Rows of
/// more than [`DEVICE_SPAI_ROW`] entries are the caller's to refuse.
#[kernel(f32, f64)]
pub unsafe fn spai_rows<T: Real>(n: usize, row_ptr: *const u32, col: *const u32, val: *const T, out: *mut T, failed: *mut u32) {
    grid_stride_fold(n, (), |(), k| {
        let len = (*row_ptr.add(k + 1) - *row_ptr.add(k)) as usize;
        let mut g = MaybeUninit::<[f64; DEVICE_SPAI_ROW * DEVICE_SPAI_ROW]>::uninit();
        let mut rhs = MaybeUninit::<[f64; DEVICE_SPAI_ROW]>::uninit();
        let (g, rhs) = (g.as_mut_ptr().cast::<f64>(), rhs.as_mut_ptr().cast::<f64>());
        core::ptr::write_bytes(g, 0, len * len);
        core::ptr::write_bytes(rhs, 0, len);
        let (g, rhs) = (core::slice::from_raw_parts_mut(g, len * len), core::slice::from_raw_parts_mut(rhs, len));
        if !spai_row(k, row_ptr, col, val, g, rhs, out) {
            atomic_min_u32(failed, k as u32);
        }
    });
}

/// `src[k]` = the position of the mirror (c, r) of every entry (r, c) of
/// the square `n`-row pattern ([`mirror_slot`]), and `missing[0]` lowered
/// to a row one of whose entries has none: where it stays `u32::MAX`,
/// the transpose of a matrix on this pattern is the pattern itself with
/// the values gathered from `src`.
#[kernel]
pub unsafe fn mirror_slots(n: usize, row_ptr: *const u32, col: *const u32, src: *mut u32, missing: *mut u32) {
    grid_stride_fold(n, (), |(), r| {
        for k in *row_ptr.add(r) as usize..*row_ptr.add(r + 1) as usize {
            let m = mirror_slot(row_ptr, col, r as u32, *col.add(k) as usize);
            *src.add(k) = m;
            if m == NONE {
                atomic_min_u32(missing, r as u32);
            }
        }
    });
}
