//! Element-wise BLAS-1 kernels: each is one [`stream_map`] applying a
//! per-item function of [`crate::blas`]. Any 1D launch shape is valid.

use crate::blas;
use crate::device::grid::grid_stride_fold;
use crate::device::stream_map;
use crate::with_lanes;
use fem_core::Real;
use fem_macros::kernel;

/// `y ← αx + y` over `n` elements.
#[kernel(f32, f64)]
pub unsafe fn axpy<T: Real>(n: usize, alpha: T, x: *const T, y: *mut T) {
    with_lanes!(T, L => stream_map::<T, 2, L>(n, [x, y], y, |[a, b]| blas::axpy(alpha, a, b)))
}

/// `y ← αx + βy` over `n` elements.
#[kernel(f32, f64)]
pub unsafe fn axpby<T: Real>(n: usize, alpha: T, x: *const T, beta: T, y: *mut T) {
    with_lanes!(T, L => stream_map::<T, 2, L>(n, [x, y], y, |[a, b]| blas::axpby(alpha, a, beta, b)))
}

/// `z ← x ∘ y` (element-wise product) over `n` elements.
#[kernel(f32, f64)]
pub unsafe fn mul<T: Real>(n: usize, x: *const T, y: *const T, z: *mut T) {
    with_lanes!(T, L => stream_map::<T, 2, L>(n, [x, y], z, |[a, b]| blas::mul(a, b)))
}

/// `y ← 1 / x` element-wise over `n` elements.
#[kernel(f32, f64)]
pub unsafe fn reciprocal<T: Real>(n: usize, x: *const T, y: *mut T) {
    with_lanes!(T, L => stream_map::<T, 1, L>(n, [x], y, |[a]| blas::reciprocal(a)))
}

/// `y ← x` rounded to single precision over `n` elements (for `T = f32` a
/// copy): a double-precision tangent or residual handed to a
/// single-precision solve.
#[kernel(f32, f64)]
pub unsafe fn to_single<T: Real>(n: usize, x: *const T, y: *mut f32) {
    grid_stride_fold(n, (), |(), i| *y.add(i) = f32::from_f64((*x.add(i)).to_f64()));
}

/// `y ← x` widened from single precision over `n` elements (exact): a
/// single-precision solve's correction handed back.
#[kernel(f32, f64)]
pub unsafe fn from_single<T: Real>(n: usize, x: *const f32, y: *mut T) {
    grid_stride_fold(n, (), |(), i| *y.add(i) = T::from_f64((*x.add(i)).to_f64()));
}

/// `dst ← src` over `n` elements: the copy-kernel bandwidth probe, compared
/// against the driver's device-to-device copy.
#[kernel(f32, f64)]
pub unsafe fn copy<T: Real>(n: usize, src: *const T, dst: *mut T) {
    with_lanes!(T, L => stream_map::<T, 1, L>(n, [src], dst, |[a]| a))
}
