//! Where entries sit in the global formats built from a sorted CSR
//! pattern: CSR itself, or transposed ELLPACK planes `ld` apart (slot `k`
//! of row `r` at `k·ld + r`). The device builds the planes and the slot of
//! every element-matrix entry from these, so the host uploads the pattern
//! once and neither computes nor sends the per-entry arrays (at 8M Q1
//! hexahedra: 2 GB of positions, 5 s of host work).

use crate::sparse::{is_free, row_of, FIXED, NONE};

/// Slot of the `k`-th entry of row `r`: CSR when `ld` is 0, transposed
/// ELLPACK planes `ld` apart otherwise.
///
/// # Safety
/// `row_ptr[r]` readable when `ld` is 0.
#[inline(always)]
pub unsafe fn slot(r: usize, k: usize, row_ptr: *const u32, ld: usize) -> usize {
    if ld == 0 {
        *row_ptr.add(r) as usize + k
    } else {
        k * ld + r
    }
}

/// The index of column `c` among row `r`'s ascending columns, by binary
/// search; `None` where the row does not hold it.
///
/// # Safety
/// `row_ptr[r..=r + 1]` and the row's columns readable.
#[inline(always)]
pub unsafe fn index_in_row(r: usize, c: u32, row_ptr: *const u32, col: *const u32) -> Option<usize> {
    let (lo, hi) = (*row_ptr.add(r) as usize, *row_ptr.add(r + 1) as usize);
    core::slice::from_raw_parts(col.add(lo), hi - lo).binary_search(&c).ok()
}

/// The residual's row for an E-vector entry gathered from row `r`:
/// [`NONE`] where `fixed` (a fixed row takes no sum) or `r` is none
/// itself. The host's residual map and the device's come from it.
#[inline(always)]
pub fn residual_row(r: u32, fixed: bool) -> u32 {
    if r == NONE || fixed {
        NONE
    } else {
        r
    }
}

/// The slot of the element entry coupling map entries `mi` (its row) and
/// `mj` (its column), [`NONE`] where the entry does not enter the matrix
/// (a missing DOF or a fixed row or column) or the pattern lacks it.
///
/// # Safety
/// As [`index_in_row`] for `mi`'s row.
#[inline(always)]
pub unsafe fn entry_slot(mi: u32, mj: u32, row_ptr: *const u32, col: *const u32, ld: usize) -> u32 {
    if !is_free(mi) || !is_free(mj) {
        return NONE;
    }
    let r = row_of(mi);
    match index_in_row(r, row_of(mj) as u32, row_ptr, col) {
        Some(k) => slot(r, k, row_ptr, ld) as u32,
        None => NONE,
    }
}

/// The CSR slot of entry `t` of element matrices over gathered rows
/// (`rows[e·nl + i]`, entries `[e][i][j]`): [`entry_slot`] of element
/// `e`'s rows `i` and `j`, each flagged fixed where `fixed(row)` (a
/// missing row, [`NONE`], enters nothing). The host's map of a Newton
/// set-up and the device's come from it.
///
/// # Safety
/// `rows` readable at the element's `nl` entries; as [`index_in_row`].
#[inline(always)]
pub unsafe fn gathered_entry_slot(t: usize, nl: usize, rows: *const u32, fixed: impl Fn(usize) -> bool, row_ptr: *const u32, col: *const u32) -> u32 {
    let (e, ij) = (t / (nl * nl), t % (nl * nl));
    let flag = |r: u32| if r == NONE || fixed(r as usize) { r | FIXED } else { r };
    entry_slot(flag(*rows.add(e * nl + ij / nl)), flag(*rows.add(e * nl + ij % nl)), row_ptr, col, 0)
}

/// Column of ELLPACK slot `k` of row `r` (`r < n`): the row's `k`-th
/// CSR column, or `r` itself on padding (a zero value there reads `x[r]`,
/// already in cache). Rows past `n` up to the plane stride take column 0.
///
/// # Safety
/// `row_ptr[r..=r + 1]` and the row's columns readable when `r < n`.
#[inline(always)]
pub unsafe fn ell_column(r: usize, k: usize, n: usize, row_ptr: *const u32, col: *const u32) -> u32 {
    if r >= n {
        return 0;
    }
    let (lo, hi) = (*row_ptr.add(r) as usize, *row_ptr.add(r + 1) as usize);
    if lo + k < hi {
        *col.add(lo + k)
    } else {
        r as u32
    }
}
