//! Kernels that exercise the device prelude so a GPU test can compare each
//! primitive with its definition computed on the host.

use crate::device::fast_math;
use crate::device::*;
use crate::launch::WARP;
use fem_core::Real;
use fem_macros::kernel;

/// For a 1D launch over `n` values of `x` (n ≤ threads):
/// * `ids[4i..4i+4] = [global index, lane, warp, block]`,
/// * `xor1[i] = x[i ^ 1]` and `down[i] = x[i + 1]` within the warp (shuffles),
/// * `bcast[i] = x[first thread of the warp]` (indexed shuffle),
/// * `warp_sums[i] = Σ x over the warp` (butterfly),
/// * `block_sums[block] = Σ x over the block` (shared memory + barriers),
/// * `total += Σ x` through `atom.add`, `total_red += Σ x` through `red.add`,
/// * `counter += 1` per thread through the integer atomic.
#[kernel(f32, f64)]
pub unsafe fn prelude_check<T: Real>(
    n: usize,
    x: *const T,
    ids: *mut u32,
    xor1: *mut T,
    down: *mut T,
    bcast: *mut T,
    warp_sums: *mut T,
    block_sums: *mut T,
    total: *mut T,
    total_red: *mut T,
    counter: *mut u32,
) {
    let i = global_idx_x();
    let v = if i < n { *x.add(i) } else { T::ZERO };
    let lane = lane_id();
    let xv = shfl_xor(v, 1);
    let dv = shfl_down(v, 1);
    let bv = shfl_idx(v, 0);
    let ws = warp_sum(v);
    let bs = block_sum(v);
    if i < n {
        *ids.add(4 * i) = i as u32;
        *ids.add(4 * i + 1) = lane;
        *ids.add(4 * i + 2) = warp_id_x() as u32;
        *ids.add(4 * i + 3) = block_idx_x() as u32;
        *xor1.add(i) = xv;
        *down.add(i) = if lane + 1 < WARP { dv } else { v };
        *bcast.add(i) = bv;
        *warp_sums.add(i) = ws;
        atomic_add_u32(counter, 1);
        if T::BYTES == 8 {
            atomic_add_f64(total as *mut f64, f64::from_bits(v.to_bits_u64()));
        } else {
            atomic_add_f32(total as *mut f32, f32::from_bits(v.to_bits_u64() as u32));
        }
        atomic_add(total_red, v);
    }
    if thread_idx_x() == 0 {
        *block_sums.add(block_idx_x()) = bs;
    }
}

/// `out[8i..8i+8]` = rsqrt, rcp, sqrt, exp2, log2, sin, cos, exp of `x[i]`
/// through the approximate instructions, for `x[i] > 0`.
#[kernel]
pub unsafe fn fast_math_check(n: usize, x: *const f32, out: *mut f32) {
    let i = global_idx_x();
    if i < n {
        let v = *x.add(i);
        let o = out.add(8 * i);
        *o = fast_math::rsqrt_f32(v);
        *o.add(1) = fast_math::rcp_f32(v);
        *o.add(2) = fast_math::sqrt_f32(v);
        *o.add(3) = fast_math::exp2_f32(v);
        *o.add(4) = fast_math::log2_f32(v);
        *o.add(5) = fast_math::sin_f32(v);
        *o.add(6) = fast_math::cos_f32(v);
        *o.add(7) = fast_math::exp_f32(v);
    }
}
