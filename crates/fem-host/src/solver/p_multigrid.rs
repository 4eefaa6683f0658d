//! The p-multigrid cycle (the shape nekRS and MFEM use for high order):
//! Chebyshev–Jacobi on the high-order operator, which needs only its
//! products and diagonal, a correction from a low-order level through a
//! prolongation and its transpose, and the same Chebyshev again. The
//! cycle is symmetric, so CG takes it. Newton's p-multigrid of a
//! `#[fem_kernel]` tangent and `fem bp`'s solve of the CEED operators
//! both apply it; each builds its own levels.

use crate::operator::LinearOperator;
use crate::solver::chebyshev::{iterate, spectral_radius_of, Work};
use crate::{Backend, Result, Scalar};
use std::cell::RefCell;

/// The work vectors of one cycle.
struct PWork<V> {
    r: V,
    z: V,
    d: V,
    rc: V,
    zc: V,
}

/// One p-multigrid cycle as a preconditioner.
pub struct PCycle<'a, B: Backend, T: Scalar> {
    a: Box<dyn LinearOperator<B, T> + 'a>,
    inv: &'a B::Vector<T>,
    rho: f64,
    degree: usize,
    coarse: Box<dyn LinearOperator<B, T> + 'a>,
    prolong: &'a dyn LinearOperator<B, T>,
    restrict: &'a dyn LinearOperator<B, T>,
    work: RefCell<PWork<B::Vector<T>>>,
}

impl<'a, B: Backend, T: Scalar> PCycle<'a, B, T> {
    /// The cycle on the fine operator `a` with inverse diagonal `inv` and
    /// ρ(D⁻¹A) `rho` ([`Self::rho`]), Chebyshev of `degree` products on
    /// each side of the correction `prolong · coarse · restrict`. The
    /// operator and the coarse solve may be borrowed (a box of a
    /// reference) or owned: levels of decreasing degree nest as cycles,
    /// each owning the operator it made.
    #[allow(clippy::too_many_arguments)]
    pub fn new(b: &B, a: Box<dyn LinearOperator<B, T> + 'a>, inv: &'a B::Vector<T>, rho: f64, degree: usize, coarse: Box<dyn LinearOperator<B, T> + 'a>, prolong: &'a dyn LinearOperator<B, T>, restrict: &'a dyn LinearOperator<B, T>) -> Result<Self> {
        let (n, m) = (a.rows(), restrict.rows());
        let work = PWork { r: b.zeros(n)?, z: b.zeros(n)?, d: b.zeros(n)?, rc: b.zeros(m)?, zc: b.zeros(m)? };
        Ok(Self { a, inv, rho, degree: degree.max(1), coarse, prolong, restrict, work: RefCell::new(work) })
    }

    /// ρ(D⁻¹A) of `a` by power iteration, as the cycle's Chebyshev takes it.
    pub fn rho(b: &B, a: &dyn LinearOperator<B, T>, inv: &B::Vector<T>) -> Result<f64> {
        spectral_radius_of(b, a, inv)
    }
}

impl<B: Backend, T: Scalar> LinearOperator<B, T> for PCycle<'_, B, T> {
    fn rows(&self) -> usize {
        self.a.rows()
    }

    /// `z ≈ A⁻¹ r`: Chebyshev from zero, the coarse correction of the
    /// residual, Chebyshev again.
    fn apply(&self, b: &B, r: &B::Vector<T>, z: &mut B::Vector<T>) -> Result<()> {
        let mut w = self.work.borrow_mut();
        let PWork { r: res, z: scaled, d, rc, zc } = &mut *w;
        b.axpby(T::ZERO, r, T::ZERO, z)?;
        iterate(b, &*self.a, self.inv, self.rho, self.degree, r, z, Work { r: &mut *res, z: &mut *scaled, d: &mut *d })?;
        self.a.apply(b, z, res)?;
        b.axpby(T::ONE, r, -T::ONE, res)?;
        self.restrict.apply(b, res, rc)?;
        self.coarse.apply(b, rc, zc)?;
        self.prolong.apply(b, zc, d)?;
        b.axpy(T::ONE, d, z)?;
        iterate(b, &*self.a, self.inv, self.rho, self.degree, r, z, Work { r: res, z: scaled, d })
    }

    fn name(&self) -> String {
        format!("p-multigrid (Chebyshev({}), {} below)", self.degree, self.coarse.name())
    }
}
