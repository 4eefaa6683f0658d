//! Preconditioners `z = M r ≈ A⁻¹ r` for the Krylov solvers: the
//! identity and Jacobi; SPAI(1) and SAINV ([`super::MatrixInverse`]), the
//! coloured SSOR of [`super::ssor`] and multigrid are the others. A
//! preconditioner is a [`LinearOperator`] like the matrix it preconditions
//! (for CG a symmetric positive definite one).

use crate::operator::{LinearOperator, Pointwise};
use crate::{Backend, Error, Result, Scalar};

/// No preconditioning: `z = r` for vectors of `.0` rows.
pub struct Identity(pub usize);

impl<B: Backend, T: Scalar> LinearOperator<B, T> for Identity {
    fn rows(&self) -> usize {
        self.0
    }
    fn apply(&self, b: &B, r: &B::Vector<T>, z: &mut B::Vector<T>) -> Result<()> {
        b.copy(r, z)
    }
    fn pointwise(&self) -> Option<Pointwise<'_, B, T>> {
        Some(Pointwise::Identity)
    }
    fn name(&self) -> String {
        "none".into()
    }
}

/// Jacobi by an inverse diagonal `.0` of `.1` rows that its owner keeps
/// up to date (Newton refreshes it with every tangent).
pub struct InverseDiagonal<'a, B: Backend, T: Scalar>(pub &'a B::Vector<T>, pub usize);

impl<B: Backend, T: Scalar> LinearOperator<B, T> for InverseDiagonal<'_, B, T> {
    fn rows(&self) -> usize {
        self.1
    }
    fn apply(&self, b: &B, r: &B::Vector<T>, z: &mut B::Vector<T>) -> Result<()> {
        b.mul(self.0, r, z)
    }
    fn pointwise(&self) -> Option<Pointwise<'_, B, T>> {
        Some(Pointwise::Scale(self.0))
    }
    fn name(&self) -> String {
        "jacobi".into()
    }
}

/// The inverse diagonal.
pub struct Jacobi<B: Backend, T: Scalar> {
    /// `1 / a_ii` for every row, on the backend.
    pub inv_diag: B::Vector<T>,
    /// Rows: the length of `inv_diag`.
    pub n: usize,
}

impl<B: Backend, T: Scalar> Jacobi<B, T> {
    /// From the operator's diagonal, inverted on the backend; a zero
    /// diagonal entry is an error. Only where the inverse is not finite
    /// (a zero or NaN, or entries so small their squares overflow) does
    /// the host read the diagonal, to name the row: a round trip of
    /// every entry took 1 s at 80M rows.
    pub fn new<A: LinearOperator<B, T> + ?Sized>(b: &B, a: &A) -> Result<Self> {
        let d = a.diagonal(b)?;
        let n = b.len(&d);
        let mut inv_diag = b.zeros::<T>(n)?;
        b.reciprocal(&d, &mut inv_diag)?;
        if b.norm2(&inv_diag)?.to_f64().is_finite() {
            return Ok(Self { inv_diag, n });
        }
        Self::from_diagonal(b, &b.download(&d)?)
    }

    /// From a host copy of the diagonal `d`; a zero (or NaN) entry is an error.
    pub fn from_diagonal(b: &B, d: &[T]) -> Result<Self> {
        if let Some(i) = d.iter().position(|v| !(v.abs() > T::ZERO)) {
            return Err(Error::InvalidArgument(format!("Jacobi: zero diagonal in row {i}")));
        }
        Ok(Self { inv_diag: b.upload(&d.iter().map(|&v| T::ONE / v).collect::<Vec<T>>())?, n: d.len() })
    }

    /// Zeros of `n` rows, to be filled with an inverse diagonal later.
    pub fn zeros(b: &B, n: usize) -> Result<Self> {
        Ok(Self { inv_diag: b.zeros(n)?, n })
    }
}

impl<B: Backend, T: Scalar> LinearOperator<B, T> for Jacobi<B, T> {
    fn rows(&self) -> usize {
        self.n
    }
    fn apply(&self, b: &B, r: &B::Vector<T>, z: &mut B::Vector<T>) -> Result<()> {
        b.mul(&self.inv_diag, r, z)
    }
    fn pointwise(&self) -> Option<Pointwise<'_, B, T>> {
        Some(Pointwise::Scale(&self.inv_diag))
    }
    fn name(&self) -> String {
        "jacobi".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::csr::Csr;
    use crate::CpuBackend;

    /// A diagonal matrix of `d`.
    fn diagonal(d: &[f64]) -> Csr<f64> {
        Csr::from_row_fn(d.len(), |_| 1, |r, c, v| (c[0], v[0]) = (r as u32, d[r])).unwrap()
    }

    /// The inverse diagonal made on the backend equals the host's, entries
    /// whose reciprocals' squares overflow included; a zero or NaN
    /// diagonal is refused with its row named.
    #[test]
    fn jacobi_inverts_the_diagonal_and_names_a_zero_row() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let d: Vec<f64> = (0..1000).map(|i| if i == 7 { 1e-200 } else { 1.0 + i as f64 }).collect();
        let j = Jacobi::new(&cpu, &diagonal(&d)).unwrap();
        assert_eq!(j.inv_diag, d.iter().map(|v| 1.0 / v).collect::<Vec<_>>());
        for bad in [0.0, f64::NAN] {
            let mut e = d.clone();
            e[613] = bad;
            let err = Jacobi::<CpuBackend, f64>::new(&cpu, &diagonal(&e)).err().expect("refused").to_string();
            assert!(err.contains("row 613"), "{err}");
        }
    }
}
