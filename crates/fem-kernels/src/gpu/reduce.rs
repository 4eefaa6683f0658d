//! Reductions in two launches: a grid-stride pass in which every block
//! writes one partial sum (`*_partial`), then `sum` over the partials in a
//! single block. Either way the partials are summed in a fixed order, so
//! the result is deterministic for a given launch shape; the reductions
//! whose result stays on the device (`gpu::krylov`) sum them in the last
//! block of the same launch instead, saving the second.
//!
//! Launch: block size a multiple of 32, dynamic shared memory of
//! `(block size / 32) * size_of::<T>()` bytes (see `device::block_sum`);
//! `partial` holds one value per block.

use crate::blas;
use crate::device::{block_dim_x, block_idx_x, block_sum, stream_reduce, thread_idx_x};
use crate::with_lanes;
use fem_core::Real;
use fem_macros::kernel;

/// `partial[block] = Σ xᵢyᵢ` over this block's grid-stride share.
#[kernel(f32, f64)]
pub unsafe fn dot_partial<T: Real>(n: usize, x: *const T, y: *const T, partial: *mut T) {
    let acc = with_lanes!(T, L => stream_reduce::<T, 2, L>(n, [x, y], |a, [p, q]| blas::dot_term(a, p, q)));
    let s = block_sum(acc);
    if thread_idx_x() == 0 {
        *partial.add(block_idx_x()) = s;
    }
}

/// `partial[block] = Σ xᵢ²` over this block's grid-stride share.
#[kernel(f32, f64)]
pub unsafe fn sumsq_partial<T: Real>(n: usize, x: *const T, partial: *mut T) {
    let acc = with_lanes!(T, L => stream_reduce::<T, 1, L>(n, [x], |a, [p]| blas::sumsq_term(a, p)));
    let s = block_sum(acc);
    if thread_idx_x() == 0 {
        *partial.add(block_idx_x()) = s;
    }
}
/// `out[0] = Σ xᵢ` for `n` values, in one block.
#[kernel(f32, f64)]
pub unsafe fn sum<T: Real>(n: usize, x: *const T, out: *mut T) {
    let mut acc = T::ZERO;
    let mut i = thread_idx_x();
    while i < n {
        acc += *x.add(i);
        i += block_dim_x();
    }
    let s = block_sum(acc);
    if thread_idx_x() == 0 {
        *out = s;
    }
}

/// `partial[block] = Σ x_k h(k)` over this block's grid-stride share, with
/// [`crate::amg::hash_unit`] as the weights `h`: a fingerprint that tells
/// whether an operator's values changed, without bringing them back.
#[kernel(f32, f64)]
pub unsafe fn fingerprint_partial<T: Real>(n: usize, x: *const T, partial: *mut T) {
    let acc = crate::device::grid_stride_fold(n, T::ZERO, |a, k| a + *x.add(k) * T::from_f64(crate::amg::hash_unit(k as u32)));
    let s = block_sum(acc);
    if thread_idx_x() == 0 {
        *partial.add(block_idx_x()) = s;
    }
}
