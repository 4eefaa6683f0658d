//! Element-wise BLAS-1 kernels: a grid-stride loop each (see
//! [`crate::device::grid`]), applying the per-item functions of
//! [`crate::blas`]; all loads of a group are issued before any store.
//! Any 1D launch shape is valid.

use crate::blas;
use crate::device::grid_stride;
use fem_core::Real;
use fem_macros::kernel;

/// `y ← αx + y` over `n` elements.
#[kernel(f32, f64)]
pub unsafe fn axpy<T: Real>(n: usize, alpha: T, x: *const T, y: *mut T) {
    grid_stride(
        n,
        |idx| {
            let xv = idx.map(|i| *x.add(i));
            let yv = idx.map(|i| *y.add(i));
            for u in 0..idx.len() {
                *y.add(idx[u]) = blas::axpy(alpha, xv[u], yv[u]);
            }
        },
        |i| *y.add(i) = blas::axpy(alpha, *x.add(i), *y.add(i)),
    );
}

/// `y ← αx + βy` over `n` elements.
#[kernel(f32, f64)]
pub unsafe fn axpby<T: Real>(n: usize, alpha: T, x: *const T, beta: T, y: *mut T) {
    grid_stride(
        n,
        |idx| {
            let xv = idx.map(|i| *x.add(i));
            let yv = idx.map(|i| *y.add(i));
            for u in 0..idx.len() {
                *y.add(idx[u]) = blas::axpby(alpha, xv[u], beta, yv[u]);
            }
        },
        |i| *y.add(i) = blas::axpby(alpha, *x.add(i), beta, *y.add(i)),
    );
}

/// `dst ← src` over `n` elements: the copy-kernel bandwidth probe, compared
/// against the driver's device-to-device copy.
#[kernel(f32, f64)]
pub unsafe fn copy<T: Real>(n: usize, src: *const T, dst: *mut T) {
    grid_stride(
        n,
        |idx| {
            let v = idx.map(|i| *src.add(i));
            for u in 0..idx.len() {
                *dst.add(idx[u]) = v[u];
            }
        },
        |i| *dst.add(i) = *src.add(i),
    );
}
