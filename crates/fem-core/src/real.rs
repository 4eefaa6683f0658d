//! The floating-point scalar every kernel is generic over.
//!
//! Kernels are written once for `T: Real` and instantiated for `f32` and
//! `f64`. The trait carries only what kernels need, and picks the right
//! implementation per target: hardware instructions on the GPU (through
//! LLVM intrinsics, which lower to `sqrt.rn` and `fma.rn`), `libm` on the
//! host where `std` is not available to a `no_std` crate.

use core::fmt::Debug;
use core::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// A floating-point type usable in kernels (`f32` or `f64`).
pub trait Real:
    Copy
    + Clone
    + Debug
    + Default
    + PartialEq
    + PartialOrd
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + crate::physics::Zero
{
    /// Mechanical suffix of PTX symbols instantiated for this type
    /// (`fem_axpy_f64`), so host code finds a kernel with a format string.
    const NAME: &'static str;
    /// Size in bytes, used by bandwidth accounting.
    const BYTES: usize;
    /// Machine epsilon, used by tests and tolerances.
    const EPSILON: Self;
    /// Additive identity, 0.
    const ZERO: Self;
    /// Multiplicative identity, 1.
    const ONE: Self;

    /// Conversion with an `as` cast: rounds to nearest when narrowing to `f32`.
    fn from_f64(v: f64) -> Self;
    /// Exact widening to `f64`.
    fn to_f64(self) -> f64;
    /// Correctly rounded square root.
    fn sqrt(self) -> Self;
    /// Fused multiply-add `self * a + b` with one rounding.
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// `self * a + b` for throughput rather than agreement: one fused
    /// instruction on the GPU (the compiler never contracts a multiply and
    /// an add by itself, and unfused the FP64 pipe does half the work per
    /// instruction), a plain multiply and add on the host, where `libm`'s
    /// software FMA would cost more than the contraction it serves. Results
    /// differ between the two in the last bits.
    fn mad(self, a: Self, b: Self) -> Self;
    /// Absolute value |x|.
    fn abs(self) -> Self;
    /// Sine and cosine (libm on every target, so results agree bit for bit).
    fn sin(self) -> Self;
    /// Cosine, through libm like [`Real::sin`].
    fn cos(self) -> Self;
    /// Exponential eˣ, through libm on every target.
    fn exp(self) -> Self;
    /// Natural logarithm ln x, through libm on every target.
    fn ln(self) -> Self;
    /// The smaller of the two by `<`; `other` when either is NaN.
    fn min(self, other: Self) -> Self;
    /// The larger of the two by `>`; `other` when either is NaN.
    fn max(self, other: Self) -> Self;
    /// Bit pattern widened to 64 bits, for warp shuffles that move raw words.
    fn to_bits_u64(self) -> u64;
    /// Inverse of [`Real::to_bits_u64`]: the value whose bit pattern is the
    /// low `8 · BYTES` bits of `bits`.
    fn from_bits_u64(bits: u64) -> Self;
}

macro_rules! impl_real {
    ($t:ident, $bits:ty, $sqrt_dev:ident, $fma_dev:ident, $sqrt_host:ident, $fma_host:ident, $sin:ident, $cos:ident, $exp:ident, $ln:ident) => {
        impl Real for $t {
            const NAME: &'static str = stringify!($t);
            const BYTES: usize = core::mem::size_of::<$t>();
            const EPSILON: Self = <$t>::EPSILON;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;

            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    core::intrinsics::$sqrt_dev(self)
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    libm::$sqrt_host(self)
                }
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    core::intrinsics::$fma_dev(self, a, b)
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    libm::$fma_host(self, a, b)
                }
            }
            #[inline(always)]
            fn mad(self, a: Self, b: Self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    core::intrinsics::$fma_dev(self, a, b)
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    self * a + b
                }
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                libm::$sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                libm::$cos(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                libm::$exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                libm::$ln(self)
            }
            #[inline(always)]
            fn min(self, other: Self) -> Self {
                if self < other { self } else { other }
            }
            #[inline(always)]
            fn max(self, other: Self) -> Self {
                if self > other { self } else { other }
            }
            #[inline(always)]
            fn to_bits_u64(self) -> u64 {
                self.to_bits() as u64
            }
            #[inline(always)]
            fn from_bits_u64(bits: u64) -> Self {
                <$t>::from_bits(bits as $bits)
            }
        }
    };
}

impl_real!(f32, u32, sqrtf32, fmaf32, sqrtf, fmaf, sinf, cosf, expf, logf);
impl_real!(f64, u64, sqrtf64, fmaf64, sqrt, fma, sin, cos, exp, log);

#[cfg(test)]
mod tests {
    use super::Real;

    fn check<T: Real>() {
        let two = T::from_f64(2.0);
        assert_eq!((two * two).sqrt(), two);
        assert_eq!(T::from_f64(-3.5).abs().to_f64(), 3.5);
        // 1 + eps is representable, so (1+eps)^2 - 1 - 2 eps = eps^2 exactly
        // only when the product is not rounded before the addition.
        let x = T::ONE + T::EPSILON;
        let exact = T::EPSILON * T::EPSILON;
        assert_eq!(x.mul_add(x, -(T::ONE + two * T::EPSILON)), exact);
        // on the host `mad` rounds the product first, as `a * b + c` does,
        // so it keeps the CPU backend's results; the eps² is lost
        assert_eq!(x.mad(x, -(T::ONE + two * T::EPSILON)), x * x - (T::ONE + two * T::EPSILON));
        assert_eq!(x.mad(x, -(T::ONE + two * T::EPSILON)), T::ZERO);
        assert_eq!(T::from_bits_u64(T::from_f64(1.25).to_bits_u64()).to_f64(), 1.25);
        assert_eq!(T::ONE.ln(), T::ZERO);
        assert!((two.exp().ln() - two).abs() <= T::EPSILON * two);
    }

    #[test]
    fn real_f32() {
        check::<f32>();
        assert_eq!(<f32 as Real>::NAME, "f32");
    }

    #[test]
    fn real_f64() {
        check::<f64>();
        assert_eq!(<f64 as Real>::NAME, "f64");
        assert_eq!(<f64 as Real>::BYTES, 8);
    }
}
