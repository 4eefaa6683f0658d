//! Matrix approximate inverses `M ≈ A⁻¹` built on the host from an
//! operator's values: SPAI(1), kept with its transpose (a symmetric
//! multigrid cycle post-smooths with `Mᵀ`), and SAINV's factored inverse
//! `Z D⁻¹ Zᵀ`. One type serves as a multigrid level's smoother and as a
//! Krylov method's preconditioner, and is rebuilt from an operator's new
//! values only when they differ from those it was built from (a linear
//! problem's Newton updates, time steps of one Δt keep it).

use super::multigrid::{Matrix, Smoother, SAINV_DROP};
use super::sainv::FactoredInverse;
use super::spai;
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
    /// What says which values `m` was built from.
    built_from: Built,
    /// How often `M` was built.
    pub builds: usize,
    /// Host seconds spent building `M`.
    pub seconds: f64,
}

/// Which values an inverse was built from: host values (their FNV-1a
/// hash, for an inverse made by [`MatrixInverse::new`]) or values on the
/// backend (its fingerprint, read without bringing them back).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Built {
    Nothing,
    Host(u64),
    Backend(f64),
}

/// FNV-1a over the values' bits.
fn values_hash<T: Scalar>(v: &[T]) -> u64 {
    v.iter().fold(0xcbf2_9ce4_8422_2325, |h, x| (h ^ x.to_f64().to_bits()).wrapping_mul(0x0100_0000_01b3))
}

impl<B: Backend + 'static, T: Scalar> MatrixInverse<B, T> {
    /// An inverse of kind `kind` (SPAI or SAINV) for operators of `n`
    /// rows, built by the first [`MatrixInverse::refresh`].
    pub fn empty(kind: Smoother, n: usize) -> Result<Self> {
        if !kind.is_matrix() {
            return Err(Error::InvalidArgument(format!("{kind:?} smoothing is not a matrix inverse")));
        }
        Ok(Self { kind, n, m: None, built_from: Built::Nothing, builds: 0, seconds: 0.0 })
    }

    /// The inverse of kind `kind` of `a`, each matrix stored by `upload`.
    pub fn new(bk: &B, cpu: &CpuBackend, a: &Csr<T>, kind: Smoother, upload: &impl Fn(&Csr<T>, usize) -> Result<Matrix<B, T>>) -> Result<Self> {
        let mut m = Self::empty(kind, a.n_rows)?;
        m.timed(|| match kind {
            Smoother::Spai => spai::stored(cpu, a, upload).map(|(m, mt)| (m, Some(mt))),
            _ => Ok((Box::new(FactoredInverse::new(bk, a, SAINV_DROP, upload)?) as Matrix<B, T>, None)),
        })?;
        m.built_from = Built::Host(values_hash(&a.val));
        Ok(m)
    }

    /// `m` made by `build`, counted and timed.
    fn timed(&mut self, build: impl FnOnce() -> Result<(Matrix<B, T>, Option<Matrix<B, T>>)>) -> Result<()> {
        let t0 = std::time::Instant::now();
        self.m = Some(build()?);
        self.seconds += t0.elapsed().as_secs_f64();
        self.builds += 1;
        Ok(())
    }

}

impl<B: PrecondOps + 'static, T: Scalar> MatrixInverse<B, T> {
    /// Rebuilt from the values `csr_val` (on the backend) of the operator
    /// `pattern` (its own values, of any precision, not read), unless the
    /// backend's fingerprint says they are the values
    /// it was last built from: SPAI(1) by the backend (on the GPU, without
    /// the values coming back), SAINV on the host.
    pub fn refresh<P: Scalar>(&mut self, bk: &B, cpu: &CpuBackend, pattern: &Csr<P>, csr_val: &B::Vector<T>) -> Result<()> {
        crate::error::same_len("approximate inverse pattern", pattern.n_rows, self.n)?;
        crate::error::same_len("approximate inverse values", bk.len(csr_val), pattern.nnz())?;
        let print = bk.fingerprint(csr_val)?;
        let same = match self.built_from {
            Built::Backend(p) => p == print,
            Built::Host(h) => values_hash(&bk.download(csr_val)?) == h,
            Built::Nothing => false,
        };
        if same {
            self.built_from = Built::Backend(print);
            return Ok(());
        }
        let kind = self.kind;
        self.timed(|| match kind {
            Smoother::Spai => bk.spai(cpu, pattern, csr_val).map(|(m, mt)| (m, Some(mt))),
            _ => {
                let a = pattern.with_values(bk.download(csr_val)?);
                Ok((Box::new(FactoredInverse::new(bk, &a, SAINV_DROP, &|m: &Csr<T>, n| bk.store_matrix(m, n))?) as Matrix<B, T>, None))
            }
        })?;
        self.built_from = Built::Backend(print);
        Ok(())
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
