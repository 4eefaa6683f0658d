//! Element-wise BLAS-1 kernels: one grid-stride loop each, applying the
//! per-item functions of [`crate::blas`]. Any 1D launch shape is valid.

use crate::blas;
use crate::device::{global_idx_x, grid_size_x};
use fem_core::Real;
use fem_macros::kernel;

/// `y ← αx + y` over `n` elements.
#[kernel(f32, f64)]
pub unsafe fn axpy<T: Real>(n: usize, alpha: T, x: *const T, y: *mut T) {
    let mut i = global_idx_x();
    while i < n {
        *y.add(i) = blas::axpy(alpha, *x.add(i), *y.add(i));
        i += grid_size_x();
    }
}

/// `y ← αx + βy` over `n` elements.
#[kernel(f32, f64)]
pub unsafe fn axpby<T: Real>(n: usize, alpha: T, x: *const T, beta: T, y: *mut T) {
    let mut i = global_idx_x();
    while i < n {
        *y.add(i) = blas::axpby(alpha, *x.add(i), beta, *y.add(i));
        i += grid_size_x();
    }
}

/// `dst ← src` over `n` elements: the copy-kernel bandwidth probe, compared
/// against the driver's device-to-device copy.
#[kernel(f32, f64)]
pub unsafe fn copy<T: Real>(n: usize, src: *const T, dst: *mut T) {
    let mut i = global_idx_x();
    while i < n {
        *dst.add(i) = *src.add(i);
        i += grid_size_x();
    }
}
