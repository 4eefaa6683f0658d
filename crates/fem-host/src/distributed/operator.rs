//! A rank's local operator as a distributed one: its ghost rows filled by
//! the halo exchange, then the local product, whose owned rows are the
//! global operator's rows (the piece holds every cell of an owned node).

use super::backend::Distributed;
use super::halo::{Halo, HaloBackend};
use crate::operator::LinearOperator;
use crate::Result;
use std::cell::RefCell;

/// `y ← A x` across ranks: `local` on the piece after the halo exchange.
pub struct HaloOperator<'a, B: HaloBackend> {
    local: &'a dyn LinearOperator<B, f64>,
    halo: &'a Halo<B>,
    /// `x` with its ghost rows filled (the Krylov method's `x` is shared).
    filled: RefCell<B::Vector<f64>>,
}

impl<'a, B: HaloBackend> HaloOperator<'a, B> {
    /// `local` (rows of the piece, owned then ghost) with `halo`'s exchange.
    pub fn new(b: &B, local: &'a dyn LinearOperator<B, f64>, halo: &'a Halo<B>) -> Result<Self> {
        crate::error::same_len("piece rows", local.rows(), halo.rows())?;
        Ok(Self { local, halo, filled: RefCell::new(b.zeros(halo.rows())?) })
    }
}

impl<B: HaloBackend> LinearOperator<Distributed<'_, B>, f64> for HaloOperator<'_, B> {
    fn rows(&self) -> usize {
        self.halo.rows()
    }
    fn apply(&self, d: &Distributed<'_, B>, x: &B::Vector<f64>, y: &mut B::Vector<f64>) -> Result<()> {
        let mut filled = self.filled.borrow_mut();
        d.inner.copy(x, &mut filled)?;
        self.halo.update(d.inner, d.comm, &mut filled)?;
        self.local.apply(d.inner, &filled, y)
    }
    /// The owned rows' diagonal (exact), ones in the ghost rows.
    fn diagonal(&self, d: &Distributed<'_, B>) -> Result<B::Vector<f64>> {
        let mut diag = self.local.diagonal(d.inner)?;
        let ghosts = self.halo.rows() - self.halo.owned_rows();
        if ghosts > 0 {
            d.inner.write_at(&mut diag, self.halo.owned_rows(), &vec![1.0; ghosts])?;
        }
        Ok(diag)
    }
    fn name(&self) -> String {
        self.local.name()
    }
}
