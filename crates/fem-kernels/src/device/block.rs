//! Block-wide reduction: warp sums through shuffles, one shared-memory slot
//! per warp, then a last warp sum; the block-wide prefix sum of `u32`
//! the same way.

use super::{barrier, block_dim_x, dynamic_shared, lane_id, sync_threads, thread_idx_x, warp_id_x, warp_sum};
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

/// Inclusive prefix sum of `v` over the warp (Hillis–Steele through
/// indexed shuffles).
#[inline(always)]
pub fn warp_scan_u32(mut v: u32) -> u32 {
    let lane = lane_id();
    let mut d = 1;
    while d < WARP {
        let o = super::shfl_idx_u32(v, if lane >= d { lane - d } else { lane });
        if lane >= d {
            v += o;
        }
        d *= 2;
    }
    v
}

/// The sum of `v` over the block's threads before this one, and over all
/// of them.
///
/// Its barriers are `barrier.sync` ([`super::barrier`]): callers branch
/// per thread around it (`if i < n`), which LLVM may split into arms each
/// with its own copy of the call.
///
/// # Safety
/// As [`block_sum`], with `(block size / 32) * 4` bytes of dynamic shared
/// memory.
#[inline(always)]
pub unsafe fn block_scan_u32(v: u32) -> (u32, u32) {
    let slots = dynamic_shared::<u32>();
    let (lane, warp) = (lane_id(), warp_id_x());
    let warps = block_dim_x().div_ceil(WARP as usize);
    let inclusive = warp_scan_u32(v);
    if lane == WARP - 1 {
        *slots.add(warp) = inclusive;
    }
    barrier();
    if warp == 0 {
        let w = if (lane as usize) < warps { *slots.add(lane as usize) } else { 0 };
        let s = warp_scan_u32(w);
        if (lane as usize) < warps {
            *slots.add(lane as usize) = s;
        }
    }
    barrier();
    let before = if warp > 0 { *slots.add(warp - 1) } else { 0 };
    let total = *slots.add(warps - 1);
    barrier();
    (before + inclusive - v, total)
}
