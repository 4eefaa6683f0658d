//! Block-wide reduction: warp sums through shuffles, one shared-memory slot
//! per warp, then a last warp sum.

use super::{dynamic_shared, lane_id, sync_threads, thread_idx_x, warp_id_x, warp_sum, block_dim_x};
use crate::launch::WARP;
use fem_core::Real;

/// Sum of `v` over the block, returned in thread 0 (other threads get an
/// unspecified value).
///
/// # Safety
/// Every thread of the block must call it (it has barriers); the block size
/// must be a multiple of 32; the launch must provide at least
/// `(block size / 32) * size_of::<T>()` bytes of dynamic shared memory.
#[inline(always)]
pub unsafe fn block_sum<T: Real>(v: T) -> T {
    let slots = dynamic_shared::<T>();
    let lane = lane_id();
    let warps = block_dim_x().div_ceil(WARP as usize);
    let partial = warp_sum(v);
    if lane == 0 {
        *slots.add(warp_id_x()) = partial;
    }
    sync_threads();
    let mut total = T::ZERO;
    if warp_id_x() == 0 {
        total = if (lane as usize) < warps { *slots.add(lane as usize) } else { T::ZERO };
        total = warp_sum(total);
    }
    // Lets a kernel call block_sum again without racing on the slots.
    sync_threads();
    if thread_idx_x() == 0 { total } else { T::ZERO }
}
