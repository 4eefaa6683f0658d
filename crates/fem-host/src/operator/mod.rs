//! Operators: the stiffness matrix in the storage formats of Reguly &
//! Giles (global CSR and ELLPACK, element matrices (LMA), matrix-free) and
//! the machinery they share: reference tables, element assembly, colouring.

pub mod cell_data;
pub mod colouring;
pub mod csr;
pub mod elements;
pub mod ell;
pub mod gpu;
pub mod lma;
pub mod matrix_free;
pub mod pointwise;
pub mod tables;
pub mod tensor;

use crate::{Backend, Result, Scalar};

/// A square linear operator applied on a backend.
pub trait LinearOperator<B: Backend, T: Scalar> {
    /// Rows (and columns) of `A`: the length of `x` and `y`.
    fn rows(&self) -> usize;
    /// `y ← A x`.
    fn apply(&self, backend: &B, x: &B::Vector<T>, y: &mut B::Vector<T>) -> Result<()>;
    /// The diagonal of `A` (for Jacobi preconditioning).
    fn diagonal(&self, backend: &B) -> Result<B::Vector<T>>;
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
}
