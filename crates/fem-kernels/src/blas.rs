//! Vector operations as per-item functions.
//!
//! These are the single source of the BLAS-1 kernels: the GPU entry points
//! in `gpu::blas` apply them per thread, the CPU backend applies them per
//! element inside rayon chunks. Plain multiply-then-add is used rather than
//! a fused multiply-add so that both backends round identically.

use fem_core::Real;

/// `y ← αx + y`, one element.
#[inline(always)]
pub fn axpy<T: Real>(alpha: T, x: T, y: T) -> T {
    alpha * x + y
}

/// `y ← αx + βy`, one element (the update `p ← r + βp` of CG, among others).
#[inline(always)]
pub fn axpby<T: Real>(alpha: T, x: T, beta: T, y: T) -> T {
    alpha * x + beta * y
}

/// One step of the running sum of `Σ xᵢyᵢ`.
#[inline(always)]
pub fn dot_term<T: Real>(acc: T, x: T, y: T) -> T {
    acc + x * y
}

/// One step of the running sum of `Σ xᵢ²`, so the norm reads `x` once.
#[inline(always)]
pub fn sumsq_term<T: Real>(acc: T, x: T) -> T {
    acc + x * x
}

/// Sequential `Σ xᵢyᵢ` over one chunk; the CPU backend sums chunks in order.
#[inline]
pub fn dot_chunk<T: Real>(x: &[T], y: &[T]) -> T {
    x.iter().zip(y).fold(T::ZERO, |acc, (&a, &b)| dot_term(acc, a, b))
}

/// Sequential `Σ xᵢ²` over one chunk.
#[inline]
pub fn sumsq_chunk<T: Real>(x: &[T]) -> T {
    x.iter().fold(T::ZERO, |acc, &a| sumsq_term(acc, a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items() {
        assert_eq!(axpy(2.0f64, 3.0, 1.0), 7.0);
        assert_eq!(axpby(2.0f32, 3.0, -1.0, 4.0), 2.0);
        assert_eq!(dot_chunk(&[1.0f64, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
        assert_eq!(sumsq_chunk(&[3.0f64, 4.0]), 25.0);
        assert_eq!(dot_chunk::<f64>(&[], &[]), 0.0);
    }
}
