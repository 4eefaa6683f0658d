//! The grid-stride loop.

use super::{global_idx_x, grid_size_x};

/// Folds `f` over the indices below `n` this thread owns in a grid-stride
/// loop: `global index, + grid size, ...`, so consecutive threads touch
/// consecutive items (coalesced) and any 1D launch shape covers `n`.
#[inline(always)]
pub fn grid_stride_fold<S>(n: usize, init: S, mut f: impl FnMut(S, usize) -> S) -> S {
    let stride = grid_size_x();
    let mut i = global_idx_x();
    let mut state = init;
    while i < n {
        state = f(state, i);
        i += stride;
    }
    state
}
