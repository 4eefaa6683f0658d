//! Exclusive prefix sums of `u32` in three launches: every block sums its
//! tile of [`SCAN_TILE`](crate::launch::SCAN_TILE) values (`scan_totals`), one block turns those
//! sums into tile offsets (`scan_offsets`), and every block writes its
//! tile's prefixes from its offset (`scan_apply`). Blocks of
//! [`BLOCK`](crate::launch::BLOCK) threads, `BLOCK / 32 · 4` bytes of
//! dynamic shared memory.

use crate::device::{block_dim_x, block_idx_x, block_scan_u32, thread_idx_x};
use crate::launch::SCAN_ITEMS;
use fem_macros::kernel;

/// Sum of this thread's `SCAN_ITEMS` consecutive values of its block's tile.
#[inline(always)]
unsafe fn thread_sum(n: usize, x: *const u32) -> u32 {
    let first = (block_idx_x() * block_dim_x() + thread_idx_x()) * SCAN_ITEMS;
    (first..(first + SCAN_ITEMS).min(n)).map(|i| *x.add(i)).sum()
}

/// `totals[b]` = the sum of tile `b` of `x` (`n` values).
#[kernel]
pub unsafe fn scan_totals(n: usize, x: *const u32, totals: *mut u32) {
    let (_, total) = block_scan_u32(thread_sum(n, x));
    if thread_idx_x() == 0 {
        *totals.add(block_idx_x()) = total;
    }
}

/// `totals[0..m]` replaced by their exclusive prefix sums and `totals[m]`
/// by their sum, in one block.
#[kernel]
pub unsafe fn scan_offsets(m: usize, totals: *mut u32) {
    let mut carry = 0u32;
    let mut base = 0;
    while base < m {
        let i = base + thread_idx_x();
        let v = if i < m { *totals.add(i) } else { 0 };
        let (before, total) = block_scan_u32(v);
        if i < m {
            *totals.add(i) = carry + before;
        }
        carry += total;
        base += block_dim_x();
    }
    if thread_idx_x() == 0 {
        *totals.add(m) = carry;
    }
}

/// `out[i]` = the sum of `x[..i]` for `i ≤ n`, tile `b` starting from
/// `offsets[b]` (`offsets[m]` is the total).
#[kernel]
pub unsafe fn scan_apply(n: usize, m: usize, x: *const u32, offsets: *const u32, out: *mut u32) {
    let (before, _) = block_scan_u32(thread_sum(n, x));
    let first = (block_idx_x() * block_dim_x() + thread_idx_x()) * SCAN_ITEMS;
    let mut s = *offsets.add(block_idx_x()) + before;
    for i in first..(first + SCAN_ITEMS).min(n) {
        *out.add(i) = s;
        s += *x.add(i);
    }
    if block_idx_x() == 0 && thread_idx_x() == 0 {
        *out.add(n) = *offsets.add(m);
    }
}
