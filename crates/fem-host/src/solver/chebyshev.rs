//! Chebyshev–Jacobi on any backend and operator: the estimate of
//! ρ(D⁻¹A) by power iterations, the Chebyshev iteration on
//! `[0.1 ρ, 1.1 ρ]` (multigrid's smoother improves an iterate with it),
//! and that iteration from zero as a preconditioner ([`Chebyshev`]).
//! Written against [`Backend`] and [`LinearOperator`] alone, so that the
//! host, the GPU and ranks of a distributed solve run the same lines.

use crate::operator::LinearOperator;
use crate::{Backend, Error, Result, Scalar};
use std::cell::RefCell;

/// Power iterations of [`spectral_radius`].
pub const POWER_ITERATIONS: usize = 20;

/// ρ(D⁻¹A), the largest eigenvalue of the Jacobi-scaled operator, by
/// [`POWER_ITERATIONS`] power iterations of the symmetric `S A S` with
/// `S = D^{-1/2}` (`scale`), from `start` (a pseudo-random vector, so that
/// no mode is missing), raised by 5 %: power iteration approaches it from
/// below, and an underestimate would let a smoothing amplify the highest
/// modes.
pub fn spectral_radius<B: Backend, T: Scalar, A: LinearOperator<B, T> + ?Sized>(bk: &B, a: &A, scale: &B::Vector<T>, start: &[T]) -> Result<f64> {
    let n = a.rows();
    crate::error::same_len("power iteration start", start.len(), n)?;
    let (mut x, mut u, mut z) = (bk.upload(start)?, bk.zeros::<T>(n)?, bk.zeros::<T>(n)?);
    let mut lambda = T::ZERO;
    for _ in 0..POWER_ITERATIONS {
        let norm = bk.norm2(&x)?;
        if norm == T::ZERO {
            break;
        }
        bk.mul(&x, scale, &mut u)?;
        bk.axpby(T::ZERO, &x, T::ONE / norm, &mut u)?;
        a.apply(bk, &u, &mut z)?;
        bk.mul(&z, scale, &mut x)?;
        lambda = bk.norm2(&x)?;
    }
    Ok(1.05 * lambda.to_f64())
}

/// ρ(D⁻¹A) of `a` whose inverse diagonal `inv_diag` is on the backend:
/// `D^{-1/2}` taken on the host, the start of [`crate::solver::amg::power_start`].
pub fn spectral_radius_of<B: Backend, T: Scalar, A: LinearOperator<B, T> + ?Sized>(bk: &B, a: &A, inv_diag: &B::Vector<T>) -> Result<f64> {
    let scale: Vec<T> = bk.download(inv_diag)?.iter().map(|&v| if v > T::ZERO { v.sqrt() } else { T::ZERO }).collect();
    let start: Vec<T> = crate::solver::amg::power_start(a.rows()).into_iter().map(T::from_f64).collect();
    spectral_radius(bk, a, &bk.upload(&scale)?, &start)
}

/// Work vectors of the iteration: residual, scaled residual, direction.
pub struct Work<V> {
    /// `b − A x`.
    pub r: V,
    /// `D⁻¹ r`.
    pub z: V,
    /// The update.
    pub d: V,
}

/// `degree` steps of the Chebyshev iteration for `A x = b` preconditioned
/// by `D⁻¹` on `[0.1 λ, 1.1 λ]` (Saad, Iterative Methods, Alg. 12.1),
/// improving `x`: `degree` products with `A`.
#[allow(clippy::too_many_arguments)]
pub fn iterate<B: Backend, T: Scalar, A: LinearOperator<B, T> + ?Sized>(bk: &B, a: &A, inv_diag: &B::Vector<T>, lambda: f64, degree: usize, b: &B::Vector<T>, x: &mut B::Vector<T>, w: Work<&mut B::Vector<T>>) -> Result<()> {
    if !(lambda > 0.0 && lambda.is_finite()) {
        return Err(Error::InvalidArgument(format!("Chebyshev needs ρ(D⁻¹A) > 0, not {lambda}")));
    }
    let (hi, lo) = (1.1 * lambda, 0.1 * lambda);
    let (theta, delta) = ((hi + lo) / 2.0, (hi - lo) / 2.0);
    let sigma = theta / delta;
    let (mut rho, degree) = (1.0 / sigma, degree.max(1));
    let residual = |x: &B::Vector<T>, r: &mut B::Vector<T>| -> Result<()> {
        a.apply(bk, x, r)?;
        bk.axpby(T::ONE, b, -T::ONE, r)
    };
    let Work { r, z, d } = w;
    residual(x, r)?;
    bk.mul(inv_diag, r, z)?;
    bk.axpby(T::from_f64(1.0 / theta), z, T::ZERO, d)?;
    for k in 1..=degree {
        bk.axpy(T::ONE, d, x)?;
        if k == degree {
            break;
        }
        residual(x, r)?;
        bk.mul(inv_diag, r, z)?;
        let next = 1.0 / (2.0 * sigma - rho);
        bk.axpby(T::from_f64(2.0 * next / delta), z, T::from_f64(next * rho), d)?;
        rho = next;
    }
    Ok(())
}

/// The Chebyshev–Jacobi polynomial of degree `degree` as a
/// preconditioner: `z ≈ A⁻¹ r` by [`iterate`] from zero. Symmetric and
/// positive definite for a symmetric positive definite `A` (the residual
/// polynomial stays below one on the whole spectrum), so CG takes it.
pub struct Chebyshev<'a, B: Backend, T: Scalar, A: ?Sized> {
    a: &'a A,
    inv_diag: &'a B::Vector<T>,
    lambda: f64,
    degree: usize,
    work: RefCell<Work<B::Vector<T>>>,
}

impl<'a, B: Backend, T: Scalar, A: LinearOperator<B, T> + ?Sized> Chebyshev<'a, B, T, A> {
    /// The polynomial of `degree` (at least 1) in `D⁻¹A` with `D⁻¹` =
    /// `inv_diag` and ρ(D⁻¹A) = `lambda`.
    pub fn new(bk: &B, a: &'a A, inv_diag: &'a B::Vector<T>, lambda: f64, degree: usize) -> Result<Self> {
        let n = a.rows();
        let work = Work { r: bk.zeros(n)?, z: bk.zeros(n)?, d: bk.zeros(n)? };
        Ok(Self { a, inv_diag, lambda, degree: degree.max(1), work: RefCell::new(work) })
    }

    /// [`Chebyshev::new`] with ρ(D⁻¹A) from `rho`, estimated into it by
    /// [`spectral_radius_of`] when it holds none: once a tangent, as
    /// Newton's updates use it (it clears `rho` with every new tangent).
    pub fn with_radius(bk: &B, a: &'a A, inv_diag: &'a B::Vector<T>, rho: &mut Option<f64>, degree: usize) -> Result<Self> {
        let lambda = match *rho {
            Some(l) => l,
            None => *rho.insert(spectral_radius_of(bk, a, inv_diag)?),
        };
        Self::new(bk, a, inv_diag, lambda, degree)
    }
}

impl<B: Backend, T: Scalar, A: LinearOperator<B, T> + ?Sized> LinearOperator<B, T> for Chebyshev<'_, B, T, A> {
    fn rows(&self) -> usize {
        self.a.rows()
    }
    fn apply(&self, bk: &B, r: &B::Vector<T>, z: &mut B::Vector<T>) -> Result<()> {
        bk.axpby(T::ZERO, r, T::ZERO, z)?;
        let w = &mut *self.work.borrow_mut();
        iterate(bk, self.a, self.inv_diag, self.lambda, self.degree, r, z, Work { r: &mut w.r, z: &mut w.z, d: &mut w.d })
    }
    fn name(&self) -> String {
        format!("chebyshev({})", self.degree)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::csr::Csr;
    use crate::solver::cg::{pcg, CgOptions};
    use crate::CpuBackend;

    /// The 1D Laplacian with a varying coefficient: D⁻¹A has ρ near 2.
    fn laplacian(n: usize) -> Csr<f64> {
        let k = |j: usize| 1.0 + (j % 7) as f64;
        let (mut row_ptr, mut col, mut val) = (vec![0u32], Vec::new(), Vec::new());
        for i in 0..n {
            if i > 0 {
                col.push(i as u32 - 1);
                val.push(-k(i));
            }
            col.push(i as u32);
            val.push(k(i) + k(i + 1));
            if i + 1 < n {
                col.push(i as u32 + 1);
                val.push(-k(i + 1));
            }
            row_ptr.push(col.len() as u32);
        }
        Csr { n_rows: n, row_ptr, col, val }
    }

    #[test]
    fn the_polynomial_preconditions_cg_and_the_estimate_bounds_the_spectrum() {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let a = laplacian(300);
        let inv: Vec<f64> = a.diag().iter().map(|d| 1.0 / d).collect();
        let lambda = spectral_radius_of(&cpu, &a, &inv).unwrap();
        // ρ(D⁻¹A) < 2 for a diagonally dominant Laplacian, and power iteration gets close
        assert!((1.8..2.1).contains(&lambda), "{lambda}");
        let b: Vec<f64> = (0..300).map(|i| ((i * 37 % 11) as f64 - 5.0) / 5.0).collect();
        let opts = CgOptions { rtol: 1e-10, max_iterations: 5000, jacobi: false };
        let jacobi = crate::solver::Jacobi::new(&cpu, &a).unwrap();
        let (mut x0, mut x3) = (vec![0.0; 300], vec![0.0; 300]);
        let plain = pcg(&cpu, &a, &jacobi, &b, &mut x0, opts).unwrap();
        let cheb = Chebyshev::new(&cpu, &a, &inv, lambda, 3).unwrap();
        let poly = pcg(&cpu, &a, &cheb, &b, &mut x3, opts).unwrap();
        assert!(plain.converged && poly.converged);
        // three products an application: fewer iterations, the same solution
        assert!(poly.iterations * 2 < plain.iterations, "{} against {}", poly.iterations, plain.iterations);
        let worst = x0.iter().zip(&x3).fold(0.0f64, |m, (p, q)| m.max((p - q).abs()));
        assert!(worst < 1e-7, "{worst}");
        assert!(Chebyshev::new(&cpu, &a, &inv, 0.0, 2).unwrap().apply(&cpu, &b, &mut x3).is_err());
    }
}
