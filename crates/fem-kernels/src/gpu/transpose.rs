//! The transpose of a CSR pattern on the device, as a counting sort by
//! column: every column's entries counted, the counts scanned into `Aᵀ`'s
//! row offsets, each row of `A` placing its entries in its columns' rows
//! (in no set order, by atomic counters), and each row of `Aᵀ` then
//! sorted by its columns, so that it lists the rows of `A` ascending, as
//! the host's `transpose` (`fem_host::solver::transfer`) does. The
//! positions in `A` come along, for the values.

use crate::device::{atomic_add_u32, atomic_max_u32, grid_stride_fold};
use fem_macros::kernel;

/// `count[c]` += 1 for each of the `nnz` entries of column `c` (`count`
/// zero on entry); `bad[0]` set where a column is `n_cols` or more.
#[kernel]
pub unsafe fn transpose_counts(nnz: usize, col: *const u32, n_cols: usize, count: *mut u32, bad: *mut u32) {
    grid_stride_fold(nnz, (), |(), k| {
        let c = *col.add(k) as usize;
        match c < n_cols {
            true => {
                atomic_add_u32(count.add(c), 1);
            }
            false => *bad = 1,
        }
    });
}

/// Row `r`'s entries placed in the rows of `Aᵀ` their columns name:
/// `t_col` = `r`, `t_src` = the entry's position in `A`, from `start[c]`
/// on (`fill` zero on entry, one per column).
#[kernel]
pub unsafe fn transpose_fill(n_rows: usize, row_ptr: *const u32, col: *const u32, start: *const u32, fill: *mut u32, t_col: *mut u32, t_src: *mut u32) {
    grid_stride_fold(n_rows, (), |(), r| {
        for k in *row_ptr.add(r)..*row_ptr.add(r + 1) {
            let c = *col.add(k as usize) as usize;
            let slot = *start.add(c) as usize + atomic_add_u32(fill.add(c), 1) as usize;
            *t_col.add(slot) = r as u32;
            *t_src.add(slot) = k;
        }
    });
}

/// Each of the `n` rows of `Aᵀ` sorted by column (the rows of `A` are
/// distinct within it), its positions alongside, and `width[0]` raised
/// to the longest row.
#[kernel]
pub unsafe fn transpose_sort_rows(n: usize, t_row_ptr: *const u32, t_col: *mut u32, t_src: *mut u32, width: *mut u32) {
    grid_stride_fold(n, (), |(), r| {
        let (lo, hi) = (*t_row_ptr.add(r) as usize, *t_row_ptr.add(r + 1) as usize);
        sort_pairs(t_col.add(lo), t_src.add(lo), hi - lo);
        atomic_max_u32(width, (hi - lo) as u32);
    });
}

/// Insertion sort of `len` keys ascending, `vals` moved with them: a
/// transposed row is short (the fine rows a coarse DOF prolongs to).
#[inline(always)]
unsafe fn sort_pairs(keys: *mut u32, vals: *mut u32, len: usize) {
    for i in 1..len {
        let (k, v) = (*keys.add(i), *vals.add(i));
        let mut j = i;
        while j > 0 && *keys.add(j - 1) > k {
            *keys.add(j) = *keys.add(j - 1);
            *vals.add(j) = *vals.add(j - 1);
            j -= 1;
        }
        *keys.add(j) = k;
        *vals.add(j) = v;
    }
}
