//! Geometric multigrid from SpMV cascades (Geveler et al. §3): a hierarchy
//! of uniformly refined meshes, rediscretised operators, prolongation by
//! coarse basis functions at fine nodes and restriction by its transpose,
//! damped Richardson smoothing `x ← x + ω M (b − A x)` with `M` Jacobi or
//! SPAI(1), BiCGStab on the coarsest level to a relative residual of
//! 1e-2; V, W and F cycles. Every matrix (operators, transfers, smoothers)
//! is stored once in an SpMV format of the backend, so a cycle is nothing
//! but products and vector operations on it.
//!
//! Post-smoothing applies `Mᵀ` where pre-smoothing applied `M`: with
//! `R = Pᵀ` the cycle is then a symmetric operator (up to the inexact
//! coarse solve), so it also preconditions CG.

use super::bicgstab::bicgstab;
use super::cg::{CgOptions, CgReport};
use super::approximate::MatrixInverse;
use super::precond::Jacobi;
use super::PrecondOps;
use crate::backend::recording::Recording;
use crate::operator::csr::Csr;
use crate::operator::LinearOperator;
use crate::sparse::Spmv;
use crate::{Backend, CpuBackend, Error, Result, Scalar};
use rayon::prelude::*;
use std::borrow::Borrow;
use serde::Serialize;
use std::sync::Mutex;

/// The `M` of the Richardson smoother on every level above the coarsest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Smoother {
    /// `M = D⁻¹`, the inverse diagonal.
    Jacobi,
    /// `M = D_ℓ₁⁻¹` with `(D_ℓ₁)_ii = Σ_j |a_ij|` (Baker, Falgout, Kolev &
    /// Yang 2011): convergent undamped for any symmetric positive definite
    /// `A`, where plain Jacobi needs a damping below 2/ρ(D⁻¹A). Built from
    /// the matrices the multigrid was made from.
    L1Jacobi,
    /// `M` = SPAI(1) on the pattern of `A`; post-smoothing applies `Mᵀ`.
    Spai,
    /// `M = Z D⁻¹ Zᵀ` from SAINV with drop tolerance [`SAINV_DROP`]
    /// (symmetric, so pre- and post-smoothing agree).
    Sainv,
    /// A Chebyshev polynomial of this degree in `D⁻¹A` on
    /// `[0.1 λ, 1.1 λ]` (PETSc's interval), `λ` the level's estimate of
    /// ρ(D⁻¹A) from the matrices the multigrid was built from (Adams et
    /// al. 2003): symmetric, with no damping factor to tune, and still
    /// convergent where ρ(D⁻¹A) exceeds 3 and Jacobi damped by ⅔ diverges
    /// (tetrahedral meshes with obtuse angles: 3.7 on the cardiac shell).
    /// Against `[0.33 λ, 1.1 λ]`, AMG-CG takes 12 and 15 iterations
    /// instead of 14 and 17 on P1 tetrahedra, and 440 instead of 547 over
    /// three cardiac steps.
    Chebyshev(usize),
}

impl Smoother {
    /// Whether it is a sparse approximate inverse built from the values
    /// (SPAI(1) or SAINV).
    pub fn is_matrix(self) -> bool {
        matches!(self, Self::Spai | Self::Sainv)
    }

    /// Whether it is set up from the matrices a multigrid is built from
    /// and cannot follow values refreshed on the backend (Chebyshev's
    /// ρ(D⁻¹A), the ℓ₁ diagonal).
    pub fn needs_host_matrices(self) -> bool {
        matches!(self, Self::Chebyshev(_) | Self::L1Jacobi)
    }
}

/// SAINV's drop tolerance on the factor `Z` (of the unit-diagonal scaled
/// matrix). Geveler et al. use 0.013; here that leaves `Z` 8–11 times
/// denser than `A` on the Q1 hole benchmark, while 0.05 keeps it at about
/// twice `A` for one iteration more.
pub const SAINV_DROP: f64 = 0.05;

/// The recursion of a multigrid cycle (parsed from `v`, `w` or `f`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cycle {
    /// One coarse-grid correction per level.
    V,
    /// Two recursive W-cycles on the next coarser level.
    W,
    /// An F-cycle then a V-cycle on the next coarser level.
    F,
}

impl std::str::FromStr for Cycle {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "v" | "V" => Ok(Self::V),
            "w" | "W" => Ok(Self::W),
            "f" | "F" => Ok(Self::F),
            _ => Err(format!("unknown cycle `{s}` (v, w, f)")),
        }
    }
}

/// Smoother, cycle and coarse solve of a [`Multigrid`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MgOptions {
    /// Preconditioner `M` of the Richardson smoothing.
    pub smoother: Smoother,
    /// Cycle run on the finest level.
    pub cycle: Cycle,
    /// Smoothing steps before the coarse-grid correction.
    pub pre: usize,
    /// Smoothing steps after it (with `Mᵀ`).
    pub post: usize,
    /// Richardson damping ω.
    pub omega: f64,
    /// Relative residual the coarse BiCGStab reaches.
    pub coarse_rtol: f64,
    /// A coarsest level of at most this many rows is solved exactly, by
    /// its inverse applied as a dense product, when its operator is
    /// refreshed ([`Multigrid::refresh`]); 0: always BiCGStab.
    pub dense_coarse: usize,
}

impl MgOptions {
    /// The paper's set-up: F-cycle, 8 (2D) or 16 (3D) pre- and
    /// post-smoothing steps, ω = 0.5 for Jacobi and SAINV, 1 for SPAI.
    pub fn paper(dim: usize, smoother: Smoother) -> Self {
        let steps = if dim == 3 { 16 } else { 8 };
        Self { smoother, cycle: Cycle::F, pre: steps, post: steps, omega: if smoother == Smoother::Spai { 1.0 } else { 0.5 }, coarse_rtol: 1e-2, dense_coarse: 0 }
    }
}


/// A matrix of the backend.
pub type Matrix<B, T> = Box<dyn Spmv<B, T>>;

/// An error unless operators of `rows` rows (coarsest first, at least
/// one) and the prolongations `p` between them make a hierarchy.
fn check_hierarchy<T: Scalar>(rows: &[usize], p: &[&Csr<T>]) -> Result<()> {
    if rows.is_empty() || p.len() + 1 != rows.len() || p.iter().enumerate().any(|(l, m)| m.n_rows != rows[l + 1] || m.col.par_iter().any(|&c| c as usize >= rows[l])) {
        return Err(Error::InvalidArgument(format!("multigrid: {} operators and {} prolongations of other sizes do not make a hierarchy", rows.len(), p.len())));
    }
    Ok(())
}

/// One level on the backend.
struct Level<B: Backend, T: Scalar> {
    n: usize,
    a: Matrix<B, T>,
    jacobi: Jacobi<B, T>,
    /// ρ(D⁻¹A) estimated on the host, for Chebyshev smoothing.
    lambda: f64,
    /// SPAI(1) or SAINV; `None` for Jacobi smoothing and the coarsest
    /// level.
    m: Option<MatrixInverse<B, T>>,
    /// Prolongation from the next coarser level, and restriction to it.
    p: Option<(Matrix<B, T>, Matrix<B, T>)>,
}

/// A level already on the backend, for [`Multigrid::from_stored`].
pub struct StoredLevel<B: Backend, T: Scalar> {
    /// Its operator.
    pub a: Matrix<B, T>,
    /// Its inverse diagonal.
    pub inv_diag: B::Vector<T>,
    /// ρ(D⁻¹A), for Chebyshev smoothing (unused on the coarsest level).
    pub rho: f64,
    /// Prolongation from the next coarser level and restriction to it
    /// (`None` on the coarsest).
    pub p: Option<(Matrix<B, T>, Matrix<B, T>)>,
}

/// Work vectors of a level: right-hand side, iterate, residual,
/// correction, and Chebyshev's search direction.
struct Work<V> {
    b: V,
    x: V,
    r: V,
    z: V,
    d: V,
}

/// A multigrid solver / preconditioner on backend `B`.
pub struct Multigrid<B: Backend, T: Scalar> {
    levels: Vec<Level<B, T>>,
    /// The options the cycles run with.
    pub opts: MgOptions,
    work: Mutex<Vec<Work<B::Vector<T>>>>,
    /// The coarsest operator's pattern and values of its last dense
    /// inverse: a refresh with the same values keeps the inverse.
    coarse_pattern: Csr<T>,
    /// The coarsest operator's inverse, when small enough.
    coarse_inverse: Option<Matrix<B, T>>,
    /// How often [`Multigrid::refresh`] inverted the coarsest operator.
    pub coarse_inversions: usize,
    /// The cycle as the backend recorded it (a CUDA graph), valid while
    /// the levels stay as they are and under the options it ran with.
    recording: Recording<MgOptions>,
}

impl<B: Backend, T: Scalar> Multigrid<B, T> {
    /// Uploads the operators `a` (coarsest first) and the prolongations
    /// `p` (`p[l]` from level `l` to `l + 1`) of any hierarchy, each
    /// stored in the backend's SpMV format for hierarchies
    /// ([`PrecondOps::store_matrix`]); either may be borrowed.
    pub fn from_matrices<M: Borrow<Csr<T>>, P: Borrow<Csr<T>>>(bk: &B, cpu: &CpuBackend, a: &[M], p: &[P], opts: MgOptions) -> Result<Self>
    where
        B: PrecondOps,
    {
        let rho = match opts.smoother {
            // the coarsest level is not smoothed
            Smoother::Chebyshev(_) => a.iter().skip(1).map(|m| super::amg::spectral_radius(cpu, &m.borrow().in_precision::<f64>())).collect(),
            _ => Vec::new(),
        };
        Self::from_hierarchy(bk, cpu, a, p, &rho, opts)
    }

    /// [`Multigrid::from_matrices`] with ρ(D⁻¹A) of every level above the
    /// coarsest known (`rho`, coarsest first; Chebyshev smoothing reads
    /// it, the others need none).
    pub fn from_hierarchy<M: Borrow<Csr<T>>, P: Borrow<Csr<T>>>(bk: &B, cpu: &CpuBackend, a: &[M], p: &[P], rho: &[f64], opts: MgOptions) -> Result<Self>
    where
        B: PrecondOps,
    {
        let (a, p): (Vec<&Csr<T>>, Vec<&Csr<T>>) = (a.iter().map(|m| m.borrow()).collect(), p.iter().map(|m| m.borrow()).collect());
        if matches!(opts.smoother, Smoother::Chebyshev(_)) && !a.is_empty() && rho.len() + 1 != a.len() {
            return Err(Error::InvalidArgument(format!("Chebyshev smoothing needs ρ(D⁻¹A) of {} levels, not {}", a.len() - 1, rho.len())));
        }
        check_hierarchy(&a.iter().map(|m| m.n_rows).collect::<Vec<_>>(), &p)?;
        let upload = |m: &Csr<T>, n: usize| bk.store_matrix(m, n);
        let mut levels = Vec::with_capacity(a.len());
        for (l, &m) in a.iter().enumerate() {
            let n = m.n_rows;
            let inverse = match opts.smoother {
                kind if !kind.is_matrix() => None,
                _ if l == 0 => None,
                kind => Some(MatrixInverse::new(bk, cpu, m, kind, &upload)?),
            };
            let transfers = if l > 0 { Some(bk.store_transfers(p[l - 1], a[l - 1].n_rows)?) } else { None };
            let lambda = match opts.smoother {
                Smoother::Chebyshev(_) if l > 0 => rho[l - 1],
                _ => 0.0,
            };
            let diagonal = match opts.smoother {
                Smoother::L1Jacobi => l1_diagonal(m),
                _ => m.diag(),
            };
            levels.push(Level { n, a: upload(m, n)?, jacobi: Jacobi::from_diagonal(bk, &diagonal)?, lambda, m: inverse, p: transfers });
        }
        Self::with_levels(bk, levels, opts, a[0].pattern_only())
    }

    /// A hierarchy of the operators' patterns `a` (coarsest first; their
    /// values are not read) and the prolongations `p`, every operator and
    /// inverse diagonal zero until [`Multigrid::refresh`] fills its level
    /// from values on the backend: the levels of a rediscretised hierarchy
    /// that the backend assembles (Newton's tangents), set up without a
    /// host copy of their values. SPAI(1) and SAINV smoothers are built by
    /// [`Multigrid::refresh_smoother`]; the smoothers set up from host
    /// matrices are refused.
    pub fn of_patterns<U: Scalar, P: Borrow<Csr<T>>>(bk: &B, a: &[&Csr<U>], p: &[P], opts: MgOptions) -> Result<Self>
    where
        B: PrecondOps,
    {
        if opts.smoother.needs_host_matrices() {
            return Err(Error::InvalidArgument(format!("{:?} smoothing is set up from the host matrices; a hierarchy of patterns has none", opts.smoother)));
        }
        let p: Vec<&Csr<T>> = p.iter().map(|m| m.borrow()).collect();
        check_hierarchy(&a.iter().map(|m| m.n_rows).collect::<Vec<_>>(), &p)?;
        let levels = a
            .iter()
            .enumerate()
            .map(|(l, m)| {
                let transfers = if l > 0 { Some(bk.store_transfers(p[l - 1], a[l - 1].n_rows)?) } else { None };
                Ok(Level { n: m.n_rows, a: bk.store_pattern(m, m.n_rows)?, jacobi: Jacobi::zeros(bk, m.n_rows)?, lambda: 0.0, m: None, p: transfers })
            })
            .collect::<Result<Vec<_>>>()?;
        let coarse = a[0].pattern_only();
        Self::with_levels(bk, levels, opts, coarse)
    }

    /// A hierarchy whose levels are already on the backend (AMG set up on
    /// the GPU), coarsest first: smoothed by Jacobi or Chebyshev (the
    /// smoothers that need no host matrix); `coarsest` is the coarsest
    /// operator on the host, for its dense inverse.
    pub fn from_stored(bk: &B, levels: Vec<StoredLevel<B, T>>, opts: MgOptions, coarsest: Csr<T>) -> Result<Self> {
        if opts.smoother.is_matrix() || matches!(opts.smoother, Smoother::L1Jacobi) {
            return Err(Error::InvalidArgument(format!("{:?} smoothing is set up from the host matrices", opts.smoother)));
        }
        if levels.first().is_none_or(|l| l.a.rows() != coarsest.n_rows || l.p.is_some()) || levels.iter().skip(1).any(|l| l.p.is_none()) {
            return Err(Error::InvalidArgument("multigrid: stored levels that do not make a hierarchy".into()));
        }
        let levels = levels
            .into_iter()
            .map(|l| Level { n: l.a.rows(), jacobi: Jacobi { n: l.a.rows(), inv_diag: l.inv_diag }, a: l.a, lambda: l.rho, m: None, p: l.p })
            .collect();
        Self::with_levels(bk, levels, opts, coarsest)
    }

    /// The solver of `levels` with the work vectors of its cycles.
    fn with_levels(bk: &B, levels: Vec<Level<B, T>>, opts: MgOptions, coarse_pattern: Csr<T>) -> Result<Self> {
        let work = levels
            .iter()
            .map(|l| {
                let d = if matches!(opts.smoother, Smoother::Chebyshev(_)) { l.n } else { 0 };
                Ok(Work { b: bk.zeros::<T>(l.n)?, x: bk.zeros::<T>(l.n)?, r: bk.zeros::<T>(l.n)?, z: bk.zeros::<T>(l.n)?, d: bk.zeros::<T>(d)? })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { levels, opts, work: Mutex::new(work), coarse_pattern, coarse_inverse: None, coarse_inversions: 0, recording: Recording::default() })
    }

    /// The coarsest level solved by `solve` from now on (a solve of its
    /// own, such as a partitioned hierarchy's gathered one; whether the
    /// cycles are recorded is the backend's call, and [`Distributed`
    /// vectors](crate::distributed::Distributed) never are).
    pub fn solve_coarsest_by(&mut self, solve: Matrix<B, T>) {
        self.recording.clear();
        self.coarse_inverse = Some(solve);
    }

    /// Host seconds spent building SPAI(1) or SAINV smoothers.
    pub fn smoother_setup_seconds(&self) -> f64 {
        self.levels.iter().filter_map(|l| l.m.as_ref()).map(|m| m.seconds).sum()
    }

    /// How often a SPAI(1) or SAINV smoother was built.
    pub fn smoother_builds(&self) -> usize {
        self.levels.iter().filter_map(|l| l.m.as_ref()).map(|m| m.builds).sum()
    }

    /// Rows of the finest level, the size of the system solved.
    pub fn rows(&self) -> usize {
        self.levels.last().map_or(0, |l| l.n)
    }

    /// `r ← b − A x` on level `l`.
    fn residual(&self, bk: &B, l: usize, w: &mut Work<B::Vector<T>>) -> Result<()> {
        self.levels[l].a.apply(bk, &w.x, &mut w.r)?;
        bk.axpby(T::ONE, &w.b, -T::ONE, &mut w.r)
    }

    /// `steps` Richardson steps `x ← x + ω M (b − A x)` (`Mᵀ` after the
    /// coarse correction).
    fn smooth(&self, bk: &B, l: usize, w: &mut Work<B::Vector<T>>, steps: usize, post: bool) -> Result<()> {
        let lv = &self.levels[l];
        if let Smoother::Chebyshev(degree) = self.opts.smoother {
            for _ in 0..steps {
                self.chebyshev(bk, l, w, degree)?;
            }
            return Ok(());
        }
        let omega = T::from_f64(self.opts.omega);
        for _ in 0..steps {
            self.residual(bk, l, w)?;
            match &lv.m {
                Some(m) => m.apply_to(bk, &w.r, &mut w.z, post)?,
                None => bk.mul(&lv.jacobi.inv_diag, &w.r, &mut w.z)?,
            }
            bk.axpy(omega, &w.z, &mut w.x)?;
        }
        Ok(())
    }

    /// The Chebyshev polynomial of degree `degree` in `D⁻¹A` on
    /// `[0.1 λ, 1.1 λ]` applied to the error of `x` ([`super::chebyshev::iterate`]):
    /// `degree` products.
    fn chebyshev(&self, bk: &B, l: usize, w: &mut Work<B::Vector<T>>, degree: usize) -> Result<()> {
        let lv = &self.levels[l];
        if !(lv.lambda > 0.0) {
            return Err(Error::InvalidArgument("Chebyshev smoothing needs ρ(D⁻¹A) of every level: build the multigrid from the operators' values".into()));
        }
        let work = super::chebyshev::Work { r: &mut w.r, z: &mut w.z, d: &mut w.d };
        super::chebyshev::iterate(bk, &*lv.a, &lv.jacobi.inv_diag, lv.lambda, degree, &w.b, &mut w.x, work)
    }

    /// One cycle of kind `kind` on level `l` for `work[l].b`, improving
    /// `work[l].x`.
    fn cycle(&self, bk: &B, l: usize, work: &mut [Work<B::Vector<T>>], kind: Cycle) -> Result<()> {
        if l == 0 {
            let w = &mut work[0];
            if let Some(inverse) = &self.coarse_inverse {
                return inverse.apply(bk, &w.b, &mut w.x);
            }
            let lv = &self.levels[0];
            let opts = CgOptions { rtol: self.opts.coarse_rtol, max_iterations: 10 * lv.n.max(10), jacobi: false };
            bicgstab(bk, &*lv.a, &lv.jacobi, &w.b, &mut w.x, opts)?;
            return Ok(());
        }
        let (coarse, rest) = work.split_at_mut(l);
        let w = &mut rest[0];
        self.smooth(bk, l, w, self.opts.pre, false)?;
        self.residual(bk, l, w)?;
        let (p, r) = self.levels[l].p.as_ref().expect("levels above the coarsest have transfers");
        {
            let wc = &mut coarse[l - 1];
            r.apply(bk, &w.r, &mut wc.b)?;
            bk.axpby(T::ZERO, &wc.b, T::ZERO, &mut wc.x)?; // x_c = 0
        }
        match kind {
            Cycle::V => self.cycle(bk, l - 1, coarse, Cycle::V)?,
            Cycle::W => {
                self.cycle(bk, l - 1, coarse, Cycle::W)?;
                self.cycle(bk, l - 1, coarse, Cycle::W)?;
            }
            Cycle::F => {
                self.cycle(bk, l - 1, coarse, Cycle::F)?;
                self.cycle(bk, l - 1, coarse, Cycle::V)?;
            }
        }
        p.apply(bk, &coarse[l - 1].x, &mut w.z)?;
        bk.axpy(T::ONE, &w.z, &mut w.x)?;
        self.smooth(bk, l, w, self.opts.post, true)
    }

    /// Whether the cycle now replays from the backend's recording (a CUDA
    /// graph on the GPU).
    pub fn replays(&self) -> bool {
        self.recording.replays()
    }

    /// Solves `A x = b` on the finest level by cycles from the guess in
    /// `x` (Richardson's iteration with one cycle as the preconditioner),
    /// until ‖b − A x‖ ≤ rtol ‖b‖ (from x₀ = 0 the paper's criterion), or
    /// until the cycles stop lowering the residual ([`stalled`]: a
    /// tolerance below what the precision can reach), unconverged.
    pub fn solve(&self, bk: &B, b: &B::Vector<T>, x: &mut B::Vector<T>, rtol: f64, max_cycles: usize) -> Result<CgReport> {
        let top = &*self.levels.last().ok_or_else(|| Error::InvalidArgument("multigrid has no level".into()))?.a;
        super::richardson::richardson(bk, top, self, b, x, CgOptions { rtol, max_iterations: max_cycles, jacobi: false })
    }
}

/// `Σ_j |a_ij|` of every row: the ℓ₁ smoother's diagonal.
fn l1_diagonal<T: Scalar>(a: &Csr<T>) -> Vec<T> {
    (0..a.n_rows).map(|r| (a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize).fold(T::ZERO, |s, k| s + a.val[k].abs())).collect()
}

/// Cycles over which multigrid as a solver must lower its best residual
/// by [`STALL_FACTOR`]: a method that takes longer needs more than 36 000
/// cycles for eight digits.
pub const STALL_CYCLES: usize = 20;

/// The least reduction of the best residual over [`STALL_CYCLES`] cycles.
pub const STALL_FACTOR: f64 = 0.99;

/// Whether the residuals `history` (one per cycle, the start first) have
/// stopped falling: their minimum over the last [`STALL_CYCLES`] cycles is
/// above [`STALL_FACTOR`] times the minimum before them. That is the
/// precision's floor (f32 below about 10⁻⁷, or an operator's rounding),
/// where more cycles only spend time.
pub fn stalled(history: &[f64]) -> bool {
    let n = history.len();
    if n <= STALL_CYCLES {
        return false;
    }
    let min = |h: &[f64]| h.iter().copied().fold(f64::INFINITY, f64::min);
    min(&history[n - STALL_CYCLES..]) > STALL_FACTOR * min(&history[..n - STALL_CYCLES])
}

impl<B: Backend, T: Scalar> LinearOperator<B, T> for Multigrid<B, T> {
    fn rows(&self) -> usize {
        self.levels.last().map_or(0, |l| l.n)
    }
    /// One cycle from zero for the right-hand side `r`.
    fn apply(&self, bk: &B, r: &B::Vector<T>, z: &mut B::Vector<T>) -> Result<()> {
        let top = self.levels.len() - 1;
        let mut work = self.work.lock().expect("multigrid work poisoned");
        bk.copy(r, &mut work[top].b)?;
        // on the levels' own buffers only: the same launches every time
        let mut cycle = || {
            let w = &mut work[top];
            bk.axpby(T::ZERO, &w.b, T::ZERO, &mut w.x)?; // x = 0
            self.cycle(bk, top, &mut work, self.opts.cycle)
        };
        // an iterative coarse solve reads its residuals back: not recorded
        match self.coarse_inverse {
            Some(_) => bk.replay(&self.recording, &self.opts, &mut cycle)?,
            None => cycle()?,
        }
        bk.copy(&work[top].x, z)
    }
    fn name(&self) -> String {
        format!("mg-{:?}-{:?}", self.opts.cycle, self.opts.smoother).to_lowercase()
    }
}

impl<B: PrecondOps, T: Scalar> Multigrid<B, T> {
    /// The coarsest level solved exactly from now on, by the dense inverse
    /// of `a0` (its operator) applied as one product, where it has at most
    /// [`MgOptions::dense_coarse`] rows; otherwise nothing changes.
    pub fn invert_coarsest(&mut self, bk: &B, a0: &Csr<T>) -> Result<()> {
        if a0.n_rows != self.levels[0].n || a0.n_rows > self.opts.dense_coarse {
            return Ok(());
        }
        self.coarse_pattern = a0.clone();
        self.invert_coarse_pattern(bk)
    }

    /// The dense inverse of `coarse_pattern` (with its values) stored as
    /// the coarsest level's solve.
    fn invert_coarse_pattern(&mut self, bk: &B) -> Result<()> {
        self.recording.clear();
        let inverse = super::dense::inverse(&self.coarse_pattern)?;
        self.coarse_inverse = Some(bk.store_matrix(&inverse, self.coarse_pattern.n_rows)?);
        self.coarse_inversions += 1;
        Ok(())
    }

    /// Level `l`'s operator refilled from values `csr_val` of the pattern
    /// it was built with, already on the backend, and its inverse diagonal
    /// `inv_diag`: for operators that change between solves, such as
    /// Newton's tangents. The SPAI(1) and SAINV smoothers of the levels
    /// above the coarsest are rebuilt by [`Multigrid::refresh_smoother`]
    /// after this. A coarsest level within
    /// [`MgOptions::dense_coarse`] rows is inverted on the host (its values
    /// come back once per refresh) and solved by a dense product; values
    /// equal to those of the last inverse (a linear problem's tangent,
    /// every time step of the same Δt) keep it.
    pub fn refresh(&mut self, bk: &B, l: usize, csr_val: &B::Vector<T>, inv_diag: &B::Vector<T>) -> Result<()> {
        if self.opts.smoother.needs_host_matrices() {
            return Err(Error::InvalidArgument(format!("{:?} smoothing is set up from the host matrices; it cannot take refreshed values", self.opts.smoother)));
        }
        self.recording.clear();
        let level = self.levels.get_mut(l).ok_or_else(|| Error::InvalidArgument(format!("multigrid has no level {l}")))?;
        level.a.reorder(bk, csr_val)?;
        bk.copy(inv_diag, &mut level.jacobi.inv_diag)?;
        if l == 0 && level.n <= self.opts.dense_coarse {
            let val = bk.download(csr_val)?;
            if self.coarse_inverse.is_none() || val != self.coarse_pattern.val {
                self.coarse_pattern.val = val;
                self.invert_coarse_pattern(bk)?;
            }
        }
        Ok(())
    }

    /// The finest level's operator, as the cycles apply it (a Krylov
    /// method preconditioned by this hierarchy may apply it too).
    pub fn finest(&self) -> &dyn LinearOperator<B, T> {
        &*self.levels.last().expect("a hierarchy has a level").a
    }

    /// Level `l`'s SPAI(1) or SAINV smoother rebuilt on the host from the
    /// values `csr_val` (on the backend) of the level's operator `pattern`,
    /// unless they are the values it was last built from (a linear
    /// problem's tangent, every time step of the same Δt): the values come
    /// back once per call, the smoother goes up once per build. Nothing to
    /// do for Jacobi smoothing or the coarsest level.
    pub fn refresh_smoother<P: Scalar>(&mut self, bk: &B, cpu: &CpuBackend, l: usize, pattern: &Csr<P>, csr_val: &B::Vector<T>) -> Result<()>
    where
        B: 'static,
    {
        if !self.opts.smoother.is_matrix() || l == 0 {
            return Ok(());
        }
        self.recording.clear();
        let kind = self.opts.smoother;
        let level = self.levels.get_mut(l).ok_or_else(|| Error::InvalidArgument(format!("multigrid has no level {l}")))?;
        let m = match &mut level.m {
            Some(m) => m,
            none => none.insert(MatrixInverse::empty(kind, level.n)?),
        };
        m.refresh(bk, cpu, pattern, csr_val)
    }
}
