//! Newton's tangent applied cell by cell: element matrices (LMA), partial
//! assembly's point data or the matrix-free action, as the Krylov method's
//! operator, and its inverse diagonal for Jacobi. The storage is chosen in
//! [`super::assembly`].

use super::assembly::Storage;
use super::{Extra, NewtonOps};
use crate::operator::LinearOperator;
use crate::{Error, Result};
use std::cell::RefCell;

/// The tangent applied cell by cell as `storage` holds it (element
/// matrices, point data or the matrix-free action's state), with a time
/// step's `c · M` term: `y = weight · (K x) + c · M x`, where
/// `K x` holds `x` in fixed rows.
pub(crate) struct CellTangent<'a, B: NewtonOps> {
    pub storage: Storage,
    pub state: &'a B::State,
    pub kelem: &'a B::Vector<f64>,
    pub extra: Option<&'a Extra<'a, B>>,
    /// Where `M x` goes.
    pub scratch: RefCell<&'a mut B::Vector<f64>>,
    pub n: usize,
}

impl<B: NewtonOps> LinearOperator<B, f64> for CellTangent<'_, B> {
    fn rows(&self) -> usize {
        self.n
    }
    fn apply(&self, b: &B, x: &B::Vector<f64>, y: &mut B::Vector<f64>) -> Result<()> {
        match self.storage {
            Storage::Partial => b.partial_product(self.state, self.kelem, x, y)?,
            Storage::MatrixFree => b.free_product(self.state, self.kelem, x, y)?,
            _ => b.element_product(self.state, self.kelem, x, y)?,
        }
        if let Some(e) = self.extra {
            let mut s = self.scratch.borrow_mut();
            e.mass.apply(b, x, &mut s)?;
            b.axpby(e.c, &s, e.weight, y)?;
        }
        Ok(())
    }
    fn diagonal(&self, _: &B) -> Result<B::Vector<f64>> {
        Err(Error::InvalidArgument("the cell-wise tangent keeps its inverse diagonal, not its diagonal".into()))
    }
    fn name(&self) -> String {
        match self.storage {
            Storage::Partial => "partial",
            Storage::MatrixFree => "matrix-free",
            _ => "lma",
        }
        .into()
    }
}

/// `inv ← 1 / diag(weight · K + c · M)` of element matrices, point data or
/// the matrix-free tangent's state `kelem`,
/// through `d` (a vector of the rows' length).
pub(crate) fn cell_inverse_diagonal<B: NewtonOps>(b: &B, storage: Storage, state: &B::State, kelem: &B::Vector<f64>, extra: Option<&Extra<B>>, d: &mut B::Vector<f64>, inv: &mut B::Vector<f64>) -> Result<()> {
    match storage {
        Storage::Partial => b.partial_diagonal(state, kelem, d)?,
        Storage::MatrixFree => b.free_diagonal(state, kelem, d)?,
        _ => b.element_diagonal(state, kelem, d)?,
    }
    if let Some(e) = extra {
        b.axpby(e.c, e.mass_diagonal, e.weight, d)?;
    }
    b.reciprocal(d, inv)
}
