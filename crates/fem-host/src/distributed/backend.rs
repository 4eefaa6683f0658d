//! A backend whose vectors are distributed: each rank holds its piece
//! (owned rows, then ghost rows) on its own backend, vector updates stay
//! local, and reductions cover the owned rows of every rank. Every Krylov
//! method, Jacobi and Chebyshev written against [`Backend`] thereby runs
//! distributed unchanged: their global reductions are these.

use super::comm::Communicator;
use crate::backend::recording::Recording;
use crate::{Backend, BackendKind, Result, Scalar};
use std::cell::Cell;

/// `inner` on this rank, with reductions over the owned rows of all ranks.
pub struct Distributed<'a, B: Backend> {
    /// This rank's backend.
    pub inner: &'a B,
    /// The ranks.
    pub comm: &'a dyn Communicator,
    owned: usize,
    reductions: Cell<usize>,
    seconds: Cell<f64>,
}

impl<'a, B: Backend> Distributed<'a, B> {
    /// Vectors whose first `owned` rows this rank owns.
    pub fn new(inner: &'a B, comm: &'a dyn Communicator, owned: usize) -> Self {
        Self { inner, comm, owned, reductions: Cell::new(0), seconds: Cell::new(0.0) }
    }

    /// Rows this rank owns.
    pub fn owned(&self) -> usize {
        self.owned
    }

    /// Global reductions so far, and the seconds their sums across ranks
    /// took (waiting for the slowest rank included).
    pub fn reductions(&self) -> (usize, f64) {
        (self.reductions.get(), self.seconds.get())
    }

    fn global<T: Scalar>(&self, local: T) -> Result<T> {
        let start = std::time::Instant::now();
        let s = self.comm.sum_one(local.to_f64())?;
        self.reductions.set(self.reductions.get() + 1);
        self.seconds.set(self.seconds.get() + start.elapsed().as_secs_f64());
        Ok(T::from_f64(s))
    }

    /// Sums slots `slot..slot + count` of the scalars `s` over the ranks:
    /// each held this rank's part.
    fn globalize(&self, s: &mut B::Vector<f64>, slot: usize, count: usize) -> Result<()> {
        let mut v = self.inner.download(s)?;
        for c in slot..slot + count {
            v[c] = self.global(v[c])?;
        }
        self.inner.write(&v, s)
    }
}

impl<B: Backend> Backend for Distributed<'_, B> {
    type Vector<T: Scalar> = B::Vector<T>;

    fn kind(&self) -> BackendKind {
        self.inner.kind()
    }
    fn name(&self) -> String {
        format!("{} on each of {} ranks", self.inner.name(), self.comm.size())
    }
    fn zeros<T: Scalar>(&self, n: usize) -> Result<Self::Vector<T>> {
        self.inner.zeros(n)
    }
    fn upload<T: Scalar>(&self, data: &[T]) -> Result<Self::Vector<T>> {
        self.inner.upload(data)
    }
    fn write<T: Scalar>(&self, data: &[T], v: &mut Self::Vector<T>) -> Result<()> {
        self.inner.write(data, v)
    }
    fn download<T: Scalar>(&self, v: &Self::Vector<T>) -> Result<Vec<T>> {
        self.inner.download(v)
    }
    fn len<T: Scalar>(&self, v: &Self::Vector<T>) -> usize {
        self.inner.len(v)
    }
    fn copy<T: Scalar>(&self, src: &Self::Vector<T>, dst: &mut Self::Vector<T>) -> Result<()> {
        self.inner.copy(src, dst)
    }
    fn convert<S: Scalar, T: Scalar>(&self, src: &Self::Vector<S>, dst: &mut Self::Vector<T>) -> Result<()> {
        self.inner.convert(src, dst)
    }
    fn axpy<T: Scalar>(&self, alpha: T, x: &Self::Vector<T>, y: &mut Self::Vector<T>) -> Result<()> {
        self.inner.axpy(alpha, x, y)
    }
    fn axpby<T: Scalar>(&self, alpha: T, x: &Self::Vector<T>, beta: T, y: &mut Self::Vector<T>) -> Result<()> {
        self.inner.axpby(alpha, x, beta, y)
    }
    fn mul<T: Scalar>(&self, x: &Self::Vector<T>, y: &Self::Vector<T>, z: &mut Self::Vector<T>) -> Result<()> {
        self.inner.mul(x, y, z)
    }
    fn reciprocal<T: Scalar>(&self, x: &Self::Vector<T>, y: &mut Self::Vector<T>) -> Result<()> {
        self.inner.reciprocal(x, y)
    }
    /// Over the owned rows among the first `n` on every rank.
    fn dot_first<T: Scalar>(&self, n: usize, x: &Self::Vector<T>, y: &Self::Vector<T>) -> Result<T> {
        self.global(self.inner.dot_first(n.min(self.owned), x, y)?)
    }
    /// Over the owned rows among the first `n` on every rank.
    fn sumsq_first<T: Scalar>(&self, n: usize, x: &Self::Vector<T>) -> Result<T> {
        self.global(self.inner.sumsq_first(n.min(self.owned), x)?)
    }
    /// Over the owned rows among the first `n` on every rank.
    fn dot_into<T: Scalar>(&self, n: usize, x: &Self::Vector<T>, y: &Self::Vector<T>, s: &mut Self::Vector<f64>, slot: usize) -> Result<()> {
        self.inner.dot_into(n.min(self.owned), x, y, s, slot)?;
        self.globalize(s, slot, 1)
    }
    /// Its sums over the owned rows of every rank.
    fn cg_update<T: Scalar>(
        &self,
        n: usize,
        s: &mut Self::Vector<f64>,
        p: &Self::Vector<T>,
        q: &Self::Vector<T>,
        x: &mut Self::Vector<T>,
        r: &mut Self::Vector<T>,
        jacobi: Option<(&Self::Vector<T>, &mut Self::Vector<T>)>,
        history: Option<&mut Self::Vector<f64>>,
    ) -> Result<()> {
        self.inner.cg_update(n.min(self.owned), s, p, q, x, r, jacobi, None)?;
        self.globalize(s, fem_kernels::krylov::RR, 2)?;
        match history {
            Some(h) => self.inner.cg_advance(s, h),
            None => Ok(()),
        }
    }
    fn cg_advance(&self, s: &mut Self::Vector<f64>, history: &mut Self::Vector<f64>) -> Result<()> {
        self.inner.cg_advance(s, history)
    }
    fn cg_direction<T: Scalar>(&self, s: &Self::Vector<f64>, z: &Self::Vector<T>, p: &mut Self::Vector<T>) -> Result<()> {
        self.inner.cg_direction(s, z, p)
    }
    fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }
    fn time(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        self.inner.time(f)
    }
    /// Runs `f` as it is, never recorded: work across ranks may talk
    /// through the host (an exchange without NCCL, a gathered coarse
    /// solve), which a recording on the device cannot hold.
    fn replay<K: PartialEq + Clone>(&self, _: &Recording<K>, _: &K, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        f()
    }
}
