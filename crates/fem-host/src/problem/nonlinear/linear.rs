//! The precision Newton's linear systems are solved in. Residuals,
//! element kernels and the tangent's assembly stay in f64; in f32 the
//! tangent, its preconditioner and the Krylov method run on rounded
//! copies, and the correction comes back widened. Newton's f64 residual
//! then corrects what f32 cannot resolve: for a linear problem this is
//! iterative refinement (each update gains about five digits), so an f32
//! solve reaches a tolerance far below f32's precision at f32's memory
//! traffic.

use super::precond::Prepared;
use super::{NewtonOps, NewtonOptions, Setup};
use crate::sparse::SpmvFormat;
use fem_kernels::pointwise::Kernels;
use crate::operator::LinearOperator;
use crate::solver::{chebyshev, CgOptions, CgReport, InverseDiagonal, Krylov};
use crate::sparse::Spmv;
use crate::{Backend, Error, Result, Scalar};
use serde::Serialize;

/// Precision of Newton's linear solves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Everything in double precision.
    #[default]
    F64,
    /// The Krylov method, its preconditioner and the tangent in single
    /// precision; residuals and corrections in double.
    F32,
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
        })
    }
}

/// Relative tolerance below which an f32 Krylov method is not asked to
/// go: about a hundred times f32's unit round-off, where its recurrences
/// stop meaning anything. The Newton iteration around it reaches the
/// rest.
pub const F32_KRYLOV_FLOOR: f64 = 1e-5;

/// A scalar Newton's linear systems are solved in: f64 works on the
/// workspace's own vectors, f32 on rounded copies kept beside them.
pub trait LinearScalar: Scalar {
    /// The least relative tolerance a Krylov method in this precision is
    /// asked for.
    const KRYLOV_FLOOR: f64;
    /// The copy of `x` in this precision refreshed in `copy` (allocated on
    /// first use); nothing to do in f64.
    fn refresh<B: Backend>(b: &B, x: &B::Vector<f64>, copy: &mut Option<B::Vector<Self>>) -> Result<()>;
    /// `x` in this precision: `x` itself in f64, else its copy as last
    /// refreshed.
    fn view<'a, B: Backend>(x: &'a B::Vector<f64>, copy: &'a Option<B::Vector<Self>>) -> Result<&'a B::Vector<Self>>;
    /// Runs `solve(r, δ)` in this precision for the f64 right-hand side
    /// `r` from δ = 0, leaving the correction in the f64 `delta`: directly
    /// in f64, through the rounded copies `pair` otherwise.
    fn solve_in<B: Backend>(b: &B, r: &B::Vector<f64>, delta: &mut B::Vector<f64>, pair: &mut Option<(B::Vector<Self>, B::Vector<Self>)>, solve: impl FnOnce(&B::Vector<Self>, &mut B::Vector<Self>) -> Result<CgReport>) -> Result<CgReport>;
    /// An f64 operator as one of this precision: itself in f64, none
    /// otherwise (element matrices are applied in f64 only).
    fn elements<'a, B: Backend + 'a>(a: &'a dyn LinearOperator<B, f64>) -> Option<&'a dyn LinearOperator<B, Self>>;
    /// [`Self::elements`] of an owned operator.
    fn owned<'a, B: Backend + 'a>(a: Box<dyn LinearOperator<B, f64> + 'a>) -> Option<Box<dyn LinearOperator<B, Self> + 'a>>;
    /// An f64 vector as one of this precision: itself in f64, none
    /// otherwise (for the vectors of operators applied in f64 only).
    fn vector<B: Backend>(x: &B::Vector<f64>) -> Option<&B::Vector<Self>>;
}

impl LinearScalar for f64 {
    const KRYLOV_FLOOR: f64 = 0.0;
    fn refresh<B: Backend>(_: &B, _: &B::Vector<f64>, _: &mut Option<B::Vector<f64>>) -> Result<()> {
        Ok(())
    }
    fn view<'a, B: Backend>(x: &'a B::Vector<f64>, _: &'a Option<B::Vector<f64>>) -> Result<&'a B::Vector<f64>> {
        Ok(x)
    }
    fn solve_in<B: Backend>(b: &B, r: &B::Vector<f64>, delta: &mut B::Vector<f64>, _: &mut Option<(B::Vector<f64>, B::Vector<f64>)>, solve: impl FnOnce(&B::Vector<f64>, &mut B::Vector<f64>) -> Result<CgReport>) -> Result<CgReport> {
        // from δ = 0, not from the last update's correction
        b.axpby(0.0, r, 0.0, delta)?;
        solve(r, delta)
    }
    fn elements<'a, B: Backend + 'a>(a: &'a dyn LinearOperator<B, f64>) -> Option<&'a dyn LinearOperator<B, f64>> {
        Some(a)
    }
    fn owned<'a, B: Backend + 'a>(a: Box<dyn LinearOperator<B, f64> + 'a>) -> Option<Box<dyn LinearOperator<B, f64> + 'a>> {
        Some(a)
    }
    fn vector<B: Backend>(x: &B::Vector<f64>) -> Option<&B::Vector<f64>> {
        Some(x)
    }
}

impl LinearScalar for f32 {
    const KRYLOV_FLOOR: f64 = F32_KRYLOV_FLOOR;
    fn refresh<B: Backend>(b: &B, x: &B::Vector<f64>, copy: &mut Option<B::Vector<f32>>) -> Result<()> {
        let c = match copy {
            Some(c) => c,
            none => none.insert(b.zeros(b.len(x))?),
        };
        b.convert(x, c)
    }
    fn view<'a, B: Backend>(_: &'a B::Vector<f64>, copy: &'a Option<B::Vector<f32>>) -> Result<&'a B::Vector<f32>> {
        copy.as_ref().ok_or_else(|| Error::InvalidArgument("a single-precision copy read before it was made".into()))
    }
    fn solve_in<B: Backend>(b: &B, r: &B::Vector<f64>, delta: &mut B::Vector<f64>, pair: &mut Option<(B::Vector<f32>, B::Vector<f32>)>, solve: impl FnOnce(&B::Vector<f32>, &mut B::Vector<f32>) -> Result<CgReport>) -> Result<CgReport> {
        let (r32, d32) = match pair {
            Some(p) => p,
            none => none.insert((b.zeros(b.len(r))?, b.zeros(b.len(r))?)),
        };
        b.convert(r, r32)?;
        b.axpby(0.0, r32, 0.0, d32)?;
        let report = solve(r32, d32)?;
        b.convert(d32, delta)?;
        Ok(report)
    }
    fn elements<'a, B: Backend + 'a>(_: &'a dyn LinearOperator<B, f64>) -> Option<&'a dyn LinearOperator<B, f32>> {
        None
    }
    fn owned<'a, B: Backend + 'a>(_: Box<dyn LinearOperator<B, f64> + 'a>) -> Option<Box<dyn LinearOperator<B, f32> + 'a>> {
        None
    }
    fn vector<B: Backend>(_: &B::Vector<f64>) -> Option<&B::Vector<f32>> {
        None
    }
}

/// What Newton's linear solves keep in their precision `T`: the tangent
/// (`None`: element matrices, applied in f64), the copies of its values
/// and inverse diagonal, the right-hand side and correction, and the
/// preconditioner.
pub(super) struct Linear<B: NewtonOps, T: LinearScalar> {
    pub matrix: Option<Box<dyn Spmv<B, T>>>,
    /// Whether the tangent is multigrid's finest operator, where the
    /// hierarchy stores it in the format asked for
    /// ([`PrecondOps::stored_format`](crate::solver::PrecondOps::stored_format)),
    /// refilled by the preconditioner's update: one copy of the largest
    /// matrix, not two.
    shared: bool,
    values: Option<B::Vector<T>>,
    inv_diag: Option<B::Vector<T>>,
    pair: Option<(B::Vector<T>, B::Vector<T>)>,
    pub precond: Prepared<B, T>,
}

impl<B: NewtonOps, T: LinearScalar> Linear<B, T> {
    /// The tangent in `format` (`None`: element matrices) and the
    /// preconditioner `o.precond` of `setup`, in `T`.
    pub fn new<K: Kernels<f64> + 'static>(b: &B, state: &B::State, setup: &Setup<K>, format: Option<SpmvFormat>, o: &NewtonOptions) -> Result<Self> {
        let shared = matches!(o.precond, super::Precond::Multigrid(_)) && format == Some(b.stored_format(setup.csr.n_rows, setup.csr.nnz()));
        let matrix = if shared { None } else { format.map(|f| b.matrix(state, setup, f)).transpose()? };
        Ok(Self { matrix, shared, values: None, inv_diag: None, pair: None, precond: Prepared::new(b, setup, o.precond, o.scatter)? })
    }

    /// Takes the tangent's f64 CSR values `kflat` (empty for element
    /// matrices) and inverse diagonal `inv`: the matrix refilled in `T`.
    pub fn update(&mut self, b: &B, kflat: &B::Vector<f64>, inv: &B::Vector<f64>) -> Result<()> {
        T::refresh(b, kflat, &mut self.values)?;
        T::refresh(b, inv, &mut self.inv_diag)?;
        match &mut self.matrix {
            Some(m) => m.reorder(b, T::view::<B>(kflat, &self.values)?),
            None => Ok(()),
        }
    }

    /// The preconditioner rebuilt from the tangent [`Linear::update`]
    /// took last (the same `kflat` and `inv`).
    pub fn update_precond(&mut self, b: &B, u: &B::Vector<f64>, kflat: &B::Vector<f64>, inv: &B::Vector<f64>, extra: Option<&super::Extra<B>>) -> Result<()> {
        self.precond.update(b, u, T::view::<B>(kflat, &self.values)?, T::view::<B>(inv, &self.inv_diag)?, extra)
    }

    /// `delta` ≈ A⁻¹ `r` by `krylov` in `T`, with the f64 operator
    /// `elements` where the tangent is element matrices; in f32 to no
    /// less than [`F32_KRYLOV_FLOOR`].
    #[allow(clippy::too_many_arguments)]
    pub fn solve(&mut self, b: &B, krylov: Krylov, elements: Option<&dyn LinearOperator<B, f64>>, inv: &B::Vector<f64>, r: &B::Vector<f64>, delta: &mut B::Vector<f64>, mut opts: CgOptions) -> Result<CgReport> {
        opts.rtol = opts.rtol.max(T::KRYLOV_FLOOR);
        if self.shared {
            let Prepared::Multigrid(mg, ..) = &self.precond else {
                return Err(Error::InvalidArgument("the tangent is shared with a multigrid preconditioner that is not there".into()));
            };
            return T::solve_in(b, r, delta, &mut self.pair, |r, d| krylov.solve(b, mg.finest(), &**mg, r, d, opts));
        }
        let n = b.len(r);
        let (matrix, precond, pair) = (&self.matrix, &mut self.precond, &mut self.pair);
        let inv_t = T::view::<B>(inv, &self.inv_diag)?;
        let diagonal = InverseDiagonal::<B, T>(inv_t, n);
        let a: &dyn LinearOperator<B, T> = match (matrix, elements.and_then(T::elements)) {
            (Some(a), _) => &**a,
            (None, Some(a)) => a,
            (None, None) => return Err(Error::InvalidArgument(format!("Newton's linear solve in {} has no operator (element matrices are applied in f64)", T::NAME))),
        };
        let (polynomial, cycle);
        let m: &dyn LinearOperator<B, T> = match precond {
            Prepared::Chebyshev { degree, rho } => {
                polynomial = chebyshev::Chebyshev::with_radius(b, a, inv_t, rho, *degree)?;
                &polynomial
            }
            Prepared::PMultigrid(p) => {
                cycle = p.cycle(b, a, inv_t)?;
                &cycle
            }
            p => p.get().unwrap_or(&diagonal),
        };
        T::solve_in(b, r, delta, pair, |r, d| krylov.solve(b, a, m, r, d, opts))
    }
}
