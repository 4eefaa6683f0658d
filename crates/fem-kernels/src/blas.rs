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

/// `zᵢ = xᵢyᵢ`, one element (Jacobi preconditioning: `z = D⁻¹ ∘ r`).
#[inline(always)]
pub fn mul<T: Real>(x: T, y: T) -> T {
    x * y
}

/// `yᵢ = 1 / xᵢ`, one element (an inverse diagonal from a diagonal).
#[inline(always)]
pub fn reciprocal<T: Real>(x: T) -> T {
    T::ONE / x
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

/// Independent partial sums per chunk on the CPU: one dependent chain of
/// additions is bound by the adder's latency, [`LANES`] chains vectorise.
pub const LANES: usize = 8;

/// `Σ xᵢyᵢ` over one chunk in [`LANES`] interleaved partial sums, combined
/// in a fixed order; the CPU backend then sums chunks in order.
#[inline]
pub fn dot_chunk<T: Real>(x: &[T], y: &[T]) -> T {
    let n = x.len().min(y.len());
    let (xb, yb) = (x[..n].chunks_exact(LANES), y[..n].chunks_exact(LANES));
    let (xr, yr) = (xb.remainder(), yb.remainder());
    let mut acc = [T::ZERO; LANES];
    for (xs, ys) in xb.zip(yb) {
        for l in 0..LANES {
            acc[l] = dot_term(acc[l], xs[l], ys[l]);
        }
    }
    let tail = xr.iter().zip(yr).fold(T::ZERO, |a, (&p, &q)| dot_term(a, p, q));
    acc.iter().fold(tail, |a, &b| a + b)
}

/// `Σ xᵢ²` over one chunk, as [`dot_chunk`].
#[inline]
pub fn sumsq_chunk<T: Real>(x: &[T]) -> T {
    let xb = x.chunks_exact(LANES);
    let tail = xb.remainder().iter().fold(T::ZERO, |a, &p| sumsq_term(a, p));
    let mut acc = [T::ZERO; LANES];
    for xs in xb {
        for l in 0..LANES {
            acc[l] = sumsq_term(acc[l], xs[l]);
        }
    }
    acc.iter().fold(tail, |a, &b| a + b)
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
        // Lengths around the lane count exercise the blocked part and the tail.
        for n in [1usize, 7, 8, 9, 17, 100] {
            let x: [f64; 100] = core::array::from_fn(|i| (i + 1) as f64);
            let want: f64 = (1..=n).map(|i| (i * i) as f64).sum();
            assert_eq!(dot_chunk(&x[..n], &x[..n]), want, "n={n}");
            assert_eq!(sumsq_chunk(&x[..n]), want, "n={n}");
        }
    }
}
