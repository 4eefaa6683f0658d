//! Matrix approximate inverses `M ≈ A⁻¹` built on the host from an
//! operator's values: SPAI(1), kept with its transpose (a symmetric
//! multigrid cycle post-smooths with `Mᵀ`), and SAINV's factored inverse
//! `Z D⁻¹ Zᵀ`. One type serves as a multigrid level's smoother and as a
//! Krylov method's preconditioner, and is rebuilt from an operator's new
//! values only when they differ from those it was built from (a linear
//! problem's Newton updates, time steps of one Δt keep it).

use super::multigrid::{Matrix, Smoother, SAINV_DROP};
use super::sainv::FactoredInverse;
use super::spai::spai1;
use super::transfer::transpose;
use super::PrecondOps;
use crate::operator::csr::Csr;
use crate::operator::LinearOperator;
use crate::{Backend, CpuBackend, Error, Result, Scalar};

/// SPAI(1) or SAINV of one operator on backend `B`.
pub struct MatrixInverse<B: Backend, T: Scalar> {
    kind: Smoother,
    n: usize,
    /// `M` and, for SPAI(1), `Mᵀ`; `None` until built.
    m: Option<(Matrix<B, T>, Option<Matrix<B, T>>)>,
    /// FNV-1a of the values `m` was built from.
    hash: Option<u64>,
    /// How often `M` was built.
    pub builds: usize,
    /// Host seconds spent building `M`.
    pub seconds: f64,
}

/// FNV-1a over the values' bits: whether an inverse must be rebuilt,
/// without keeping the values it was built from.
pub(crate) fn values_hash<T: Scalar>(v: &[T]) -> u64 {
    v.iter().fold(0xcbf2_9ce4_8422_2325, |h, x| (h ^ x.to_f64().to_bits()).wrapping_mul(0x0100_0000_01b3))
}

impl<B: Backend + 'static, T: Scalar> MatrixInverse<B, T> {
    /// An inverse of kind `kind` (SPAI or SAINV) for operators of `n`
    /// rows, built by the first [`MatrixInverse::refresh`].
    pub fn empty(kind: Smoother, n: usize) -> Result<Self> {
        if !kind.is_matrix() {
            return Err(Error::InvalidArgument(format!("{kind:?} smoothing is not a matrix inverse")));
        }
        Ok(Self { kind, n, m: None, hash: None, builds: 0, seconds: 0.0 })
    }

    /// The inverse of kind `kind` of `a`, each matrix stored by `upload`.
    pub fn new(bk: &B, cpu: &CpuBackend, a: &Csr<T>, kind: Smoother, upload: &impl Fn(&Csr<T>, usize) -> Result<Matrix<B, T>>) -> Result<Self> {
        let mut m = Self::empty(kind, a.n_rows)?;
        m.build(bk, cpu, a, values_hash(&a.val), upload)?;
        Ok(m)
    }

    fn build(&mut self, bk: &B, cpu: &CpuBackend, a: &Csr<T>, hash: u64, upload: &impl Fn(&Csr<T>, usize) -> Result<Matrix<B, T>>) -> Result<()> {
        let t0 = std::time::Instant::now();
        let n = a.n_rows;
        self.m = Some(match self.kind {
            Smoother::Spai => {
                let m = spai1(cpu, a)?;
                (upload(&m, n)?, Some(upload(&transpose(&m, n), n)?))
            }
            _ => (Box::new(FactoredInverse::new(bk, a, SAINV_DROP, upload)?) as Matrix<B, T>, None),
        });
        self.seconds += t0.elapsed().as_secs_f64();
        self.hash = Some(hash);
        self.builds += 1;
        Ok(())
    }

}

impl<B: PrecondOps + 'static, T: Scalar> MatrixInverse<B, T> {
    /// Rebuilt from the values `csr_val` (on the backend) of the operator
    /// `pattern`, unless they are the values it was last built from: the
    /// values come back once per call, `M` goes up once per build.
    pub fn refresh(&mut self, bk: &B, cpu: &CpuBackend, pattern: &Csr<T>, csr_val: &B::Vector<T>) -> Result<()> {
        crate::error::same_len("approximate inverse pattern", pattern.n_rows, self.n)?;
        let val = bk.download(csr_val)?;
        crate::error::same_len("approximate inverse values", val.len(), pattern.nnz())?;
        let hash = values_hash(&val);
        if self.hash == Some(hash) {
            return Ok(());
        }
        let a = Csr { val, ..pattern.clone() };
        self.build(bk, cpu, &a, hash, &|m: &Csr<T>, n| bk.store_matrix(m, n))
    }

}

impl<B: Backend, T: Scalar> MatrixInverse<B, T> {
    /// `z = M r`, or `z = Mᵀ r` when `transposed` (the same for SAINV).
    pub fn apply_to(&self, bk: &B, r: &B::Vector<T>, z: &mut B::Vector<T>, transposed: bool) -> Result<()> {
        let (m, mt) = self.m.as_ref().ok_or_else(|| Error::InvalidArgument(format!("{} applied before it was built", self.label())))?;
        (if transposed { mt.as_ref().unwrap_or(m) } else { m }).apply(bk, r, z)
    }

    fn label(&self) -> &'static str {
        match self.kind {
            Smoother::Spai => "spai",
            _ => "sainv",
        }
    }
}

impl<B: Backend + 'static, T: Scalar> LinearOperator<B, T> for MatrixInverse<B, T> {
    fn rows(&self) -> usize {
        self.n
    }
    fn apply(&self, b: &B, r: &B::Vector<T>, z: &mut B::Vector<T>) -> Result<()> {
        self.apply_to(b, r, z, false)
    }
    fn name(&self) -> String {
        self.label().into()
    }
}
