//! Scalars the backends store and move: [`fem_core::Real`] plus what cudarc
//! needs to put them in device memory and pass them to kernels.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use fem_core::Real;

/// `f32` or `f64`, usable on every backend.
pub trait Scalar: Real + DeviceRepr + ValidAsZeroBits + Unpin {
    /// `self · a + b` with one rounding through the standard library: one
    /// instruction in code compiled for FMA units (`target_feature`), a
    /// library call elsewhere, so only such code should call it
    /// ([`Real::mul_add`] is `libm`'s software FMA on the host).
    fn fused(self, a: Self, b: Self) -> Self;
}

impl Scalar for f32 {
    #[inline(always)]
    fn fused(self, a: Self, b: Self) -> Self {
        self.mul_add(a, b)
    }
}

impl Scalar for f64 {
    #[inline(always)]
    fn fused(self, a: Self, b: Self) -> Self {
        self.mul_add(a, b)
    }
}
