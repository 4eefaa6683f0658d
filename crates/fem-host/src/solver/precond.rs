//! Preconditioners `z = M r` for the Krylov solvers: the identity, Jacobi,
//! any sparse approximate inverse applied as an SpMV (SPAI, SAINV), the
//! coloured SSOR of [`super::ssor`], and multigrid.

use crate::operator::LinearOperator;
use crate::{Backend, Error, Result, Scalar};

/// A preconditioner `M ≈ A⁻¹` applied on backend `B`; for CG it must be
/// symmetric positive definite.
pub trait Preconditioner<B: Backend, T: Scalar> {
    /// `z ← M r`.
    fn apply(&self, b: &B, r: &B::Vector<T>, z: &mut B::Vector<T>) -> Result<()>;
    /// Short label for reports and logs (`none`, `jacobi`, `spai`, …).
    fn name(&self) -> String;
}

/// No preconditioning.
pub struct Identity;

impl<B: Backend, T: Scalar> Preconditioner<B, T> for Identity {
    fn apply(&self, b: &B, r: &B::Vector<T>, z: &mut B::Vector<T>) -> Result<()> {
        b.copy(r, z)
    }
    fn name(&self) -> String {
        "none".into()
    }
}

/// The inverse diagonal.
pub struct Jacobi<B: Backend, T: Scalar> {
    /// `1 / a_ii` for every row, on the backend.
    pub inv_diag: B::Vector<T>,
}

impl<B: Backend, T: Scalar> Jacobi<B, T> {
    /// From the operator's diagonal; a zero diagonal entry is an error.
    pub fn new<A: LinearOperator<B, T> + ?Sized>(b: &B, a: &A) -> Result<Self> {
        let d = b.download(&a.diagonal(b)?)?;
        Self::from_diagonal(b, &d)
    }

    /// From a host copy of the diagonal `d`; a zero (or NaN) entry is an error.
    pub fn from_diagonal(b: &B, d: &[T]) -> Result<Self> {
        if let Some(i) = d.iter().position(|v| !(v.abs() > T::ZERO)) {
            return Err(Error::InvalidArgument(format!("Jacobi: zero diagonal in row {i}")));
        }
        Ok(Self { inv_diag: b.upload(&d.iter().map(|&v| T::ONE / v).collect::<Vec<T>>())? })
    }
}

impl<B: Backend, T: Scalar> Preconditioner<B, T> for Jacobi<B, T> {
    fn apply(&self, b: &B, r: &B::Vector<T>, z: &mut B::Vector<T>) -> Result<()> {
        b.mul(&self.inv_diag, r, z)
    }
    fn name(&self) -> String {
        "jacobi".into()
    }
}

/// A sparse approximate inverse `M ≈ A⁻¹` stored as an operator (any
/// SpMV format), applied with one product.
pub struct ApproximateInverse<O> {
    /// The operator `M`.
    pub m: O,
    /// What [`Preconditioner::name`] returns (`spai`, `sainv`).
    pub label: &'static str,
}

impl<B: Backend, T: Scalar, O: LinearOperator<B, T>> Preconditioner<B, T> for ApproximateInverse<O> {
    fn apply(&self, b: &B, r: &B::Vector<T>, z: &mut B::Vector<T>) -> Result<()> {
        self.m.apply(b, r, z)
    }
    fn name(&self) -> String {
        self.label.into()
    }
}
