//! ELL-WARP (K1, K2; the original numbering) built on the device from a
//! CSR matrix there, as the host's `EllWarp::build` builds it: the rows
//! ordered longest first by a stable counting sort over chunks of
//! [`WARP_SORT_CHUNK`] rows (each chunk's rows of one length counted,
//! the counts scanned length-major, each chunk's rows placed from its
//! offsets in order), the slices made on the host from the number of rows
//! of each length (a few numbers), and every slot's column and source
//! position written lane by lane ([`warp_lane_slots`]). Built on the host,
//! the finest multigrid operator of 6.3M rows took 0.2 s of 16 cores and
//! sent a third more bytes than its CSR.

use crate::device::grid_stride_fold;
use crate::sparse::{warp_lane_slots, Slice, WARP_SORT_CHUNK};
use fem_macros::kernel;

/// Sort key of row `r`: `max_len` less its length, so that ascending
/// keys are descending lengths; `None` for a row longer than `max_len`
/// (left out, for the host to find the rows short of `n`).
#[inline(always)]
unsafe fn key(r: usize, max_len: usize, row_ptr: *const u32) -> Option<usize> {
    max_len.checked_sub((*row_ptr.add(r + 1) - *row_ptr.add(r)) as usize)
}

/// `count[key·chunks + c]` = the rows of chunk `c` of that key (`count`
/// zero on entry; `chunks` = ⌈n / WARP_SORT_CHUNK⌉, a thread a chunk).
#[kernel]
pub unsafe fn warp_length_counts(n: usize, chunks: usize, max_len: usize, row_ptr: *const u32, count: *mut u32) {
    grid_stride_fold(chunks, (), |(), c| {
        for r in c * WARP_SORT_CHUNK..((c + 1) * WARP_SORT_CHUNK).min(n) {
            if let Some(k) = key(r, max_len, row_ptr) {
                *count.add(k * chunks + c) += 1;
            }
        }
    });
}

/// `first[k]` = `start[k·chunks]` for the `keys + 1` keys (the last:
/// the total), where the sorted rows of key `k` begin.
#[kernel]
pub unsafe fn warp_key_starts(keys: usize, chunks: usize, start: *const u32, first: *mut u32) {
    grid_stride_fold(keys + 1, (), |(), k| *first.add(k) = *start.add(k * chunks));
}

/// `perm` = the rows, longest first, rows of one length in their order:
/// each chunk's rows placed from the scanned counts `start` (advanced in
/// place; a chunk's column of it is its thread's alone).
#[kernel]
pub unsafe fn warp_place_rows(n: usize, chunks: usize, max_len: usize, row_ptr: *const u32, start: *mut u32, perm: *mut u32) {
    grid_stride_fold(chunks, (), |(), c| {
        for r in c * WARP_SORT_CHUNK..((c + 1) * WARP_SORT_CHUNK).min(n) {
            if let Some(k) = key(r, max_len, row_ptr) {
                let at = start.add(k * chunks + c);
                *perm.add(*at as usize) = r as u32;
                *at += 1;
            }
        }
    });
}

/// Every slot's column and CSR position, a thread per lane of the
/// `n_slices` slices ([`warp_lane_slots`]).
#[kernel]
pub unsafe fn warp_slots(n: usize, n_slices: usize, slices: *const Slice, perm: *const u32, row_ptr: *const u32, col: *const u32, pad: u32, out_col: *mut u32, out_src: *mut u32) {
    grid_stride_fold(n_slices * 32, (), |(), t| {
        let s = *slices.add(t / 32);
        let at = s.offset as usize;
        warp_lane_slots(s, t % 32, n, perm, row_ptr, col, pad, out_col.add(at), out_src.add(at))
    });
}
