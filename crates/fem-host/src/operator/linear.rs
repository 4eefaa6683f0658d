//! The one linear-operator trait: matrices in every storage format,
//! element matrices, matrix-free and tensor-product operators,
//! preconditioners and inner solves are all `y ← A x` on a backend, so a
//! Krylov method takes any of them for the operator or the preconditioner
//! and a multigrid level, a smoother or a coarse solve is whichever fits.

use crate::{Backend, Error, Result, Scalar};

/// A square linear operator applied on a backend.
pub trait LinearOperator<B: Backend, T: Scalar> {
    /// Rows (and columns) of `A`: the length of `x` and `y`.
    fn rows(&self) -> usize;
    /// `y ← A x`.
    fn apply(&self, backend: &B, x: &B::Vector<T>, y: &mut B::Vector<T>) -> Result<()>;
    /// The diagonal of `A` (for Jacobi preconditioning), where the operator
    /// has it; an error names the operator where it has not (a
    /// preconditioner, an inner solve).
    fn diagonal(&self, _backend: &B) -> Result<B::Vector<T>> {
        Err(Error::InvalidArgument(format!("{} has no diagonal to give", self.name())))
    }
    /// How the operator acts row by row, where it does (the identity, an
    /// inverse diagonal): a Krylov method then fuses it, as a
    /// preconditioner, into its own vector updates instead of applying it.
    fn pointwise(&self) -> Option<Pointwise<'_, B, T>> {
        None
    }
    /// Short label for reports and logs: the storage format of a matrix
    /// (`csr`, `k2`, `lma`, …) or the kind of a preconditioner (`none`,
    /// `jacobi`, `ssor`, `spai`, `mg`, …).
    fn name(&self) -> String;
}

/// An operator that acts on each row alone ([`LinearOperator::pointwise`]).
pub enum Pointwise<'a, B: Backend, T: Scalar> {
    /// `z = r`.
    Identity,
    /// `z = d ∘ r`, the vector `d` on the backend.
    Scale(&'a B::Vector<T>),
}

/// Borrowed operators (including trait objects) are operators.
impl<B: Backend, T: Scalar, O: LinearOperator<B, T> + ?Sized> LinearOperator<B, T> for &O {
    fn rows(&self) -> usize {
        (**self).rows()
    }
    fn apply(&self, backend: &B, x: &B::Vector<T>, y: &mut B::Vector<T>) -> Result<()> {
        (**self).apply(backend, x, y)
    }
    fn diagonal(&self, backend: &B) -> Result<B::Vector<T>> {
        (**self).diagonal(backend)
    }
    fn pointwise(&self) -> Option<Pointwise<'_, B, T>> {
        (**self).pointwise()
    }
    fn name(&self) -> String {
        (**self).name()
    }
}

/// Boxed operators (including trait objects) are operators.
impl<B: Backend, T: Scalar, O: LinearOperator<B, T> + ?Sized> LinearOperator<B, T> for Box<O> {
    fn rows(&self) -> usize {
        (**self).rows()
    }
    fn apply(&self, backend: &B, x: &B::Vector<T>, y: &mut B::Vector<T>) -> Result<()> {
        (**self).apply(backend, x, y)
    }
    fn diagonal(&self, backend: &B) -> Result<B::Vector<T>> {
        (**self).diagonal(backend)
    }
    fn pointwise(&self) -> Option<Pointwise<'_, B, T>> {
        (**self).pointwise()
    }
    fn name(&self) -> String {
        (**self).name()
    }
}
