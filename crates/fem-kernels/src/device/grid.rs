//! Grid-stride loops with several independent loads in flight per thread.
//!
//! A streaming kernel is bound by how many bytes each SM has in flight
//! (Little's law: bandwidth × latency). At full occupancy one 4-byte load
//! per thread keeps too few bytes in flight to saturate HBM, so the loop
//! below hands each thread [`UNROLL`] indices at once, one grid stride
//! apart, and kernels load all of them before using any.

use super::{global_idx_x, grid_size_x};

/// Indices per thread per iteration of [`grid_stride`].
pub const UNROLL: usize = 4;

/// Visits every index below `n` exactly once, threading a state through:
/// groups of [`UNROLL`] indices one grid stride apart go to `group`
/// (coalesced across the warp for each of its loads), the remaining
/// indices to `single`. Reductions keep [`UNROLL`] partial sums as state.
#[inline(always)]
pub fn grid_stride_fold<S>(
    n: usize,
    init: S,
    mut group: impl FnMut(S, [usize; UNROLL]) -> S,
    mut single: impl FnMut(S, usize) -> S,
) -> S {
    let stride = grid_size_x();
    let mut i = global_idx_x();
    let mut state = init;
    while i + (UNROLL - 1) * stride < n {
        state = group(state, core::array::from_fn(|u| i + u * stride));
        i += UNROLL * stride;
    }
    while i < n {
        state = single(state, i);
        i += stride;
    }
    state
}

/// [`grid_stride_fold`] without a state, for element-wise kernels.
#[inline(always)]
pub fn grid_stride(n: usize, group: impl Fn([usize; UNROLL]), single: impl Fn(usize)) {
    grid_stride_fold(n, (), |(), idx| group(idx), |(), i| single(i));
}
