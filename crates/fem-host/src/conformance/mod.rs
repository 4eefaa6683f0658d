//! The suite every backend must pass, written once over [`Backend`] and run
//! for the CPU backend in this crate's tests and for the CUDA backend in
//! the GPU tests. Each check compares with an independent sequential
//! reference and returns a description of the first mismatch.
//!
//! Sizes cover the edges: empty, one element, just below, at and above a
//! warp, a block, and a block's worth of 16-byte packets (4 × 256 `f32`),
//! and sizes far from any power of two.

mod krylov;

pub use krylov::check_krylov;

use crate::{Backend, CudaBackend, Error, Scalar};
use fem_core::Real;

/// Vector lengths every operation is checked at.
pub const SIZES: &[usize] = &[0, 1, 31, 32, 33, 255, 256, 257, 1000, 1023, 1024, 1025, 65_537, 1_000_003];

type Check = std::result::Result<(), String>;

/// Deterministic values in [-1, 1) (xorshift), different per `seed`.
pub fn values<T: Real>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            T::from_f64((s >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
        })
        .collect()
}

/// `Σ aᵢbᵢ` in f64 with Neumaier compensation, and `Σ |aᵢbᵢ|` for the
/// error bound.
fn reference_dot<T: Real>(a: &[T], b: &[T]) -> (f64, f64) {
    let (mut sum, mut comp, mut abs) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let p = x.to_f64() * y.to_f64();
        let t = sum + p;
        comp += if sum.abs() >= p.abs() { (sum - t) + p } else { (p - t) + sum };
        sum = t;
        abs += p.abs();
    }
    (sum + comp, abs)
}

/// Checks every BLAS-1 operation of `backend` in both precisions.
pub fn check_blas<B: Backend>(backend: &B) -> Check {
    check_blas_in::<B, f32>(backend)?;
    check_blas_in::<B, f64>(backend)
}

fn check_blas_in<B: Backend, T: Scalar>(b: &B) -> Check {
    let err = |e: Error| format!("{}: {e}", T::NAME);
    for &n in SIZES {
        let x = values::<T>(n, 1 + n as u64);
        let y = values::<T>(n, 2 + n as u64);
        let dx = b.upload(&x).map_err(err)?;
        let dy = b.upload(&y).map_err(err)?;
        if b.len(&dx) != n || b.download(&dx).map_err(err)? != x {
            return Err(format!("{} n={n}: upload/download round trip differs", T::NAME));
        }
        if b.download(&b.zeros::<T>(n).map_err(err)?).map_err(err)?.iter().any(|v| *v != T::ZERO) {
            return Err(format!("{} n={n}: zeros are not zero", T::NAME));
        }
        check_elementwise(b, n, &x, &y, &dx).map_err(|e| format!("{} n={n}: {e}", T::NAME))?;
        check_reductions(b, n, &x, &y, &dx, &dy).map_err(|e| format!("{} n={n}: {e}", T::NAME))?;
    }
    check_length_mismatch::<B, T>(b)
}

/// axpy, axpby and copy round like the reference (multiply, then add), so
/// they must agree bit for bit.
fn check_elementwise<B: Backend, T: Scalar>(b: &B, n: usize, x: &[T], y: &[T], dx: &B::Vector<T>) -> Check {
    let e = |e: Error| e.to_string();
    let (alpha, beta) = (T::from_f64(0.75), T::from_f64(-1.25));
    let mut dy = b.upload(y).map_err(e)?;
    b.axpy(alpha, dx, &mut dy).map_err(e)?;
    let want: Vec<T> = x.iter().zip(y).map(|(&xi, &yi)| alpha * xi + yi).collect();
    first_difference("axpy", &b.download(&dy).map_err(e)?, &want)?;
    let mut dy = b.upload(y).map_err(e)?;
    b.axpby(alpha, dx, beta, &mut dy).map_err(e)?;
    let want: Vec<T> = x.iter().zip(y).map(|(&xi, &yi)| alpha * xi + beta * yi).collect();
    first_difference("axpby", &b.download(&dy).map_err(e)?, &want)?;
    // precision conversions round to nearest and widen exactly
    let mut single = b.zeros::<f32>(n).map_err(e)?;
    b.convert(dx, &mut single).map_err(e)?;
    let rounded: Vec<f32> = x.iter().map(|v| v.to_f64() as f32).collect();
    first_difference("convert to f32", &b.download(&single).map_err(e)?, &rounded)?;
    let mut double = b.zeros::<f64>(n).map_err(e)?;
    b.convert(&single, &mut double).map_err(e)?;
    first_difference("convert to f64", &b.download(&double).map_err(e)?, &rounded.iter().map(|&v| v as f64).collect::<Vec<_>>())?;
    let mut same = b.zeros::<T>(n).map_err(e)?;
    b.convert(dx, &mut same).map_err(e)?;
    first_difference("convert to the same precision", &b.download(&same).map_err(e)?, x)?;
    let dyv = b.upload(y).map_err(e)?;
    let mut dz = b.zeros::<T>(n).map_err(e)?;
    b.mul(dx, &dyv, &mut dz).map_err(e)?;
    let want: Vec<T> = x.iter().zip(y).map(|(&xi, &yi)| xi * yi).collect();
    first_difference("mul", &b.download(&dz).map_err(e)?, &want)?;
    b.copy(dx, &mut dz).map_err(e)?;
    first_difference("copy", &b.download(&dz).map_err(e)?, x)
}

fn first_difference<T: Real>(op: &str, got: &[T], want: &[T]) -> Check {
    if got.len() != want.len() {
        return Err(format!("{op}: length {} instead of {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(g, w)| g.to_bits_u64() != w.to_bits_u64()) {
        None => Ok(()),
        Some(i) => Err(format!("{op}: element {i} is {:?}, expected {:?}", got[i], want[i])),
    }
}

/// dot and norm within the worst-case bound of recursive summation,
/// |error| ≤ n·ε·Σ|xᵢyᵢ| (plus one rounding of the result).
fn check_reductions<B: Backend, T: Scalar>(b: &B, n: usize, x: &[T], y: &[T], dx: &B::Vector<T>, dy: &B::Vector<T>) -> Check {
    let e = |e: Error| e.to_string();
    let eps = T::EPSILON.to_f64();
    let (exact, abs) = reference_dot(x, y);
    let got = b.dot(dx, dy).map_err(e)?.to_f64();
    let tol = (n as f64 + 1.0) * eps * abs + f64::MIN_POSITIVE;
    if (got - exact).abs() > tol {
        return Err(format!("dot = {got:e}, reference {exact:e}, |error| > {tol:e}"));
    }
    let (sq, _) = reference_dot(x, x);
    let want = sq.sqrt();
    let got = b.norm2(dx).map_err(e)?.to_f64();
    let tol = (n as f64 + 2.0) * eps * want + f64::MIN_POSITIVE;
    if (got - want).abs() > tol {
        return Err(format!("norm2 = {got:e}, reference {want:e}, |error| > {tol:e}"));
    }
    Ok(())
}

fn check_length_mismatch<B: Backend, T: Scalar>(b: &B) -> Check {
    let x = b.upload(&values::<T>(33, 7)).map_err(|e| e.to_string())?;
    let mut y = b.zeros::<T>(32).map_err(|e| e.to_string())?;
    let results = [
        ("axpy", b.axpy(T::ONE, &x, &mut y).err()),
        ("axpby", b.axpby(T::ONE, &x, T::ONE, &mut y).err()),
        ("copy", b.copy(&x, &mut y).err()),
        ("mul", b.mul(&x, &x, &mut y).err()),
        ("dot", b.dot(&x, &y).err()),
    ];
    for (op, r) in results {
        match r {
            Some(Error::LengthMismatch { left: 33, right: 32, .. }) => {}
            other => return Err(format!("{}: {op} with lengths 33 and 32 gave {other:?}", T::NAME)),
        }
    }
    Ok(())
}

/// Runs the device-prelude kernels (`fem_prelude_check_*`,
/// `fem_fast_math_check`) and compares each primitive with its definition.
pub fn check_cuda_prelude(gpu: &CudaBackend) -> Check {
    crate::backend::cuda::prelude::check::<f32>(gpu)?;
    crate::backend::cuda::prelude::check::<f64>(gpu)?;
    crate::backend::cuda::prelude::check_fast_math(gpu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CpuBackend;

    #[test]
    fn cpu_backend_passes_the_suite() {
        check_blas(&CpuBackend::new(None).unwrap()).unwrap();
    }

    #[test]
    fn cpu_backend_passes_the_krylov_suite() {
        check_krylov(&CpuBackend::new(None).unwrap()).unwrap();
    }

    #[test]
    fn cpu_reductions_do_not_depend_on_thread_count() {
        let x = values::<f64>(1_000_003, 3);
        let y = values::<f64>(1_000_003, 4);
        let one = CpuBackend::new(Some(1)).unwrap();
        let two = CpuBackend::new(Some(2)).unwrap();
        assert_eq!(one.dot(&x, &y).unwrap().to_bits(), two.dot(&x, &y).unwrap().to_bits());
        assert_eq!(one.norm2(&x).unwrap().to_bits(), two.norm2(&x).unwrap().to_bits());
    }

    #[test]
    fn reference_detects_a_wrong_result() {
        // The checker itself must fail on a wrong answer.
        assert!(first_difference("t", &[1.0f64, 2.0], &[1.0, 2.0000000000000004]).is_err());
        assert!(first_difference("t", &[1.0f64], &[1.0, 2.0]).is_err());
        let (d, abs) = reference_dot(&[1e16f64, 1.0, -1e16], &[1.0, 1.0, 1.0]);
        assert_eq!((d, abs), (1.0, 2e16 + 1.0));
    }

    #[test]
    fn zero_threads_is_an_error() {
        assert!(matches!(CpuBackend::new(Some(0)), Err(Error::InvalidArgument(_))));
    }
}
