//! A rank's local operator as a distributed one: its ghost rows filled by
//! the halo exchange, then the local product, whose owned rows are the
//! global operator's rows (the piece holds every cell of an owned node).

use super::backend::Distributed;
use super::halo::{Halo, HaloBackend};
use super::layout::Layout;
use crate::operator::csr::Csr;
use crate::operator::LinearOperator;
use crate::solver::multigrid::Matrix;
use crate::sparse::Spmv;
use crate::{Backend, Error, Result};
use std::cell::RefCell;
use std::rc::Rc;

/// A local product whose first elements read only the rank's owned rows:
/// those run while the halo exchange fills the ghost rows, the rest after
/// it (interior elements first, boundary elements after the exchange is
/// posted).
pub trait Overlap<B: Backend>: LinearOperator<B, f64> {
    /// `y ←` the products of the elements that read no ghost row.
    fn interior(&self, b: &B, x: &B::Vector<f64>, y: &mut B::Vector<f64>) -> Result<()>;
    /// `y +=` the products of the other elements.
    fn rest(&self, b: &B, x: &B::Vector<f64>, y: &mut B::Vector<f64>) -> Result<()>;
}

/// `y ← A x` across ranks: `local` on the piece after the halo exchange.
pub struct HaloOperator<'a, B: HaloBackend> {
    local: &'a dyn LinearOperator<B, f64>,
    /// The same product in two parts, where it overlaps the exchange.
    overlap: Option<&'a dyn Overlap<B>>,
    halo: &'a Halo<B>,
    /// A copy of `x` with its ghost rows filled, where the backend cannot
    /// fill them in place.
    filled: RefCell<Option<B::Vector<f64>>>,
}

impl<'a, B: HaloBackend> HaloOperator<'a, B> {
    /// `local` (rows of the piece, owned then ghost) with `halo`'s exchange.
    pub fn new(local: &'a dyn LinearOperator<B, f64>, halo: &'a Halo<B>) -> Result<Self> {
        crate::error::same_len("piece rows", local.rows(), halo.rows())?;
        Ok(Self { local, overlap: None, halo, filled: RefCell::new(None) })
    }

    /// `local` with `halo`'s exchange, its interior elements applied while
    /// the exchange travels where the backend fills ghost rows in place.
    pub fn overlapped(local: &'a dyn Overlap<B>, halo: &'a Halo<B>) -> Result<Self> {
        Ok(Self { overlap: Some(local), ..Self::new(local, halo)? })
    }
}

impl<B: HaloBackend> LinearOperator<Distributed<'_, B>, f64> for HaloOperator<'_, B> {
    fn rows(&self) -> usize {
        self.halo.rows()
    }
    fn apply(&self, d: &Distributed<'_, B>, x: &B::Vector<f64>, y: &mut B::Vector<f64>) -> Result<()> {
        if let Some(o) = self.overlap {
            if d.inner.post_in_place(self.halo, d.comm, x)? {
                o.interior(d.inner, x, y)?;
                self.halo.wait(d.inner)?;
                return o.rest(d.inner, x, y);
            }
        }
        after_exchange(d, self.halo, &self.filled, self.local, x, y)
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

/// `y ← local x` on the ranks, the ghost rows of `x` filled by `halo`'s
/// exchange first: in place where the backend can write them through the
/// shared `x` ([`HaloBackend::post_in_place`]), else in a copy of `x`
/// in `filled` (made at the first need).
fn after_exchange<B: HaloBackend>(d: &Distributed<'_, B>, halo: &Halo<B>, filled: &RefCell<Option<B::Vector<f64>>>, local: &dyn LinearOperator<B, f64>, x: &B::Vector<f64>, y: &mut B::Vector<f64>) -> Result<()> {
    if d.inner.post_in_place(halo, d.comm, x)? {
        halo.wait(d.inner)?;
        return local.apply(d.inner, x, y);
    }
    let mut filled = filled.borrow_mut();
    if filled.is_none() {
        *filled = Some(d.inner.zeros(halo.rows())?);
    }
    let filled = filled.as_mut().expect("made above");
    d.inner.copy(x, filled)?;
    halo.update(d.inner, d.comm, filled)?;
    local.apply(d.inner, filled, y)
}

/// A level's matrix across ranks, owning its parts: the local product
/// (output rows of one level, input columns of the same or another) after
/// the halo exchange of the input level. The operators, prolongations and
/// restrictions of a partitioned hierarchy ([`super::amg`]); halos are
/// shared among the matrices that read the same level.
pub struct HaloMatrix<B: HaloBackend> {
    local: Rc<RefCell<Matrix<B, f64>>>,
    halo: Rc<Halo<B>>,
    filled: RefCell<Option<B::Vector<f64>>>,
}

impl<B: HaloBackend> HaloMatrix<B> {
    /// `local` (`rows` output rows, the input level's local columns; shared
    /// where another operator reads the same matrix) after `halo`'s
    /// exchange of the input.
    pub fn new(local: Rc<RefCell<Matrix<B, f64>>>, halo: Rc<Halo<B>>, rows: usize) -> Result<Self> {
        crate::error::same_len("matrix rows", local.borrow().rows(), rows)?;
        Ok(Self { local, halo, filled: RefCell::new(None) })
    }
}

impl<B: HaloBackend> LinearOperator<Distributed<'_, B>, f64> for HaloMatrix<B> {
    fn rows(&self) -> usize {
        self.local.borrow().rows()
    }
    fn apply(&self, d: &Distributed<'_, B>, x: &B::Vector<f64>, y: &mut B::Vector<f64>) -> Result<()> {
        after_exchange(d, &self.halo, &self.filled, self.local.borrow().as_ref(), x, y)
    }
    fn name(&self) -> String {
        self.local.borrow().name()
    }
}

impl<B: HaloBackend> Spmv<Distributed<'_, B>, f64> for HaloMatrix<B> {
    fn numbering(&self) -> Option<&[u32]> {
        None
    }
    fn matrix_bytes(&self) -> usize {
        self.local.borrow().matrix_bytes()
    }
    fn reorder(&mut self, _: &Distributed<'_, B>, _: &B::Vector<f64>) -> Result<()> {
        Err(Error::InvalidArgument("a level of a partitioned hierarchy is rebuilt, not refilled".into()))
    }
}

/// The coarsest level's exact solve across ranks: the right-hand side's
/// owned rows gathered onto every rank (one all-gather through the host)
/// and multiplied on the backend by this rank's rows (owned and ghost) of
/// the whole coarsest operator's dense inverse.
pub struct Gathered<B: HaloBackend> {
    /// Rows of the inverse at this rank's rows, all columns.
    inverse: Matrix<B, f64>,
    whole: RefCell<B::Vector<f64>>,
    layout: Layout,
}

impl<B: HaloBackend + crate::solver::PrecondOps> Gathered<B> {
    /// The solve of `whole` (every rank's rows) for the rows of `layout`,
    /// stored on `b`.
    pub fn new(b: &B, whole: &Csr<f64>, layout: Layout) -> Result<Self> {
        crate::error::same_len("coarsest rows", whole.n_rows, layout.total())?;
        let inv = crate::solver::dense::inverse(whole)?;
        let mut mine = Csr { n_rows: layout.rows(), row_ptr: vec![0], col: Vec::new(), val: Vec::new() };
        for i in 0..layout.rows() {
            let g = layout.global(i) as usize;
            let span = inv.row_ptr[g] as usize..inv.row_ptr[g + 1] as usize;
            mine.col.extend_from_slice(&inv.col[span.clone()]);
            mine.val.extend_from_slice(&inv.val[span]);
            mine.row_ptr.push(mine.col.len() as u32);
        }
        Ok(Self { inverse: b.store_matrix(&mine, whole.n_rows)?, whole: RefCell::new(b.zeros(whole.n_rows)?), layout })
    }
}

impl<B: HaloBackend> LinearOperator<Distributed<'_, B>, f64> for Gathered<B> {
    fn rows(&self) -> usize {
        self.layout.rows()
    }
    fn apply(&self, d: &Distributed<'_, B>, b: &B::Vector<f64>, x: &mut B::Vector<f64>) -> Result<()> {
        let mine = d.inner.download(b)?;
        let all = d.comm.all_gather(&mine[..self.layout.owned])?;
        let mut whole = self.whole.borrow_mut();
        crate::error::same_len("gathered coarsest rows", all.len(), d.inner.len(&*whole))?;
        d.inner.write(&all, &mut whole)?;
        self.inverse.apply(d.inner, &whole, x)
    }
    fn name(&self) -> String {
        "gathered dense inverse".into()
    }
}

impl<B: HaloBackend> Spmv<Distributed<'_, B>, f64> for Gathered<B> {
    fn numbering(&self) -> Option<&[u32]> {
        None
    }
    fn matrix_bytes(&self) -> usize {
        self.inverse.matrix_bytes()
    }
    fn reorder(&mut self, _: &Distributed<'_, B>, _: &B::Vector<f64>) -> Result<()> {
        Err(Error::InvalidArgument("the gathered coarsest solve is rebuilt, not refilled".into()))
    }
}
