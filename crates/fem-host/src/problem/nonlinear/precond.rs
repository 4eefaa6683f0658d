//! Preconditioners of Newton's linear systems, rebuilt on the backend from
//! each update's tangent: none, Jacobi, coloured SSOR, SPAI(1) and SAINV
//! (built on the host from the tangent's values whenever they change),
//! and geometric multigrid by rediscretisation, for any physics.
//!
//! Multigrid evaluates the physics itself on the coarser levels of nested
//! spaces ([`NestedSpaces`]): at every update the state is injected level
//! by level (coarse nodes are fine nodes), the coarse tangents are
//! assembled there exactly as the fine one is, and the V-cycle of
//! [`crate::solver::multigrid`] runs on them, smoothed by Jacobi, or by
//! SPAI(1) or SAINV rebuilt on the host from each update's tangents
//! (their values come back once per update, and a tangent with the values
//! of the last one keeps its smoother). A
//! nonlinear problem's coarse operators are thus its own linearisations,
//! not Galerkin products, and nothing returns to the host but the coarse
//! solve's scalars.

use crate::solver::transfer::transpose;
use super::{tangent_values, Extra, NewtonOps, Scatter, Setup};
use crate::operator::csr::Csr;
use crate::operator::LinearOperator;
use crate::operator::pointwise::Aux;
use crate::solver::multigrid::{Cycle, MgOptions, Multigrid, Smoother};
use crate::solver::ssor::RowColouring;
use super::linear::LinearScalar;
pub use super::p_multigrid::PmgOptions;
use super::p_multigrid::PLevels;
use std::sync::Arc;
use std::borrow::Cow;
use crate::solver::amg::{self, AmgOptions, AmgStats, Nullspace};
use crate::solver::{Identity, MatrixInverse};
use crate::sparse::SharedOut;
use rayon::prelude::*;
use crate::space::nested::{field_prolongation, injection};
use crate::space::{BoundaryPart, NestedSpaces, Space};
use crate::sparse::Spmv;
use crate::{CpuBackend, Error, Result};
use fem_kernels::pointwise::Kernels;
use serde::Serialize;

/// Rows up to which multigrid's coarsest level is inverted on the host at
/// every Newton update (n³ flops: about 0.1 s at 1000 rows on two cores)
/// and then solved exactly on the backend by one dense product.
pub const DENSE_COARSE: usize = 1500;

/// How Newton's linear systems are preconditioned.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Precond {
    /// None: the Krylov method on the tangent itself.
    None,
    /// The tangent's inverse diagonal.
    Jacobi,
    /// Multi-colour symmetric Gauss–Seidel on the tangent.
    Ssor,
    /// SPAI(1), the sparse approximate inverse on the tangent's pattern:
    /// not symmetric, so not for CG.
    Spai,
    /// SAINV, the factored approximate inverse `Z D⁻¹ Zᵀ` (symmetric).
    Sainv,
    /// One multigrid cycle on the levels of [`Setup::with_multigrid`].
    Multigrid(MgOptions),
    /// One cycle of smoothed-aggregation AMG built from the tangent's
    /// values ([`crate::solver::amg`]), rebuilt whenever they change; the
    /// near-nullspace is the constants of a scalar field, the rigid-body
    /// modes of a field with as many components as dimensions.
    Amg(AmgOptions),
    /// The Chebyshev–Jacobi polynomial of this degree in `D⁻¹A` on
    /// `[0.1 ρ, 1.1 ρ]` ([`crate::solver::chebyshev`]), ρ(D⁻¹A) estimated
    /// at every new tangent: symmetric, for CG; `degree` products with the
    /// tangent an application and no set-up beyond the estimate, so it
    /// runs across ranks as it does on one.
    Chebyshev(usize),
    /// p-multigrid ([`super::p_multigrid`]): Chebyshev–Jacobi on the
    /// tangent as stored, corrected on Q1 of the same cells by AMG.
    PMultigrid(PmgOptions),
}

impl Precond {
    /// A V(2, 2)-cycle with Jacobi smoothing (ω = 0.6), the coarsest level
    /// solved exactly up to [`DENSE_COARSE`] rows, else to 10⁻³ by
    /// BiCGStab: a preconditioner for CG, BiCGStab and GMRES.
    pub fn multigrid() -> Self {
        Self::Multigrid(MgOptions { smoother: Smoother::Jacobi, cycle: Cycle::V, pre: 2, post: 2, omega: 0.6, coarse_rtol: 1e-3, dense_coarse: DENSE_COARSE })
    }
}

impl std::fmt::Display for Precond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Precond::None => write!(f, "none"),
            Precond::Jacobi => write!(f, "Jacobi"),
            Precond::Ssor => write!(f, "SSOR"),
            Precond::Spai => write!(f, "SPAI(1)"),
            Precond::Sainv => write!(f, "SAINV"),
            Precond::Multigrid(o) => write!(f, "multigrid {:?}({}, {}) smoothed by {:?}", o.cycle, o.pre, o.post, o.smoother),
            Precond::Amg(o) => write!(f, "AMG {:?}({}, {}) smoothed by {:?}, θ = {}", o.cycle.cycle, o.cycle.pre, o.cycle.post, o.cycle.smoother, o.strength),
            Precond::Chebyshev(k) => write!(f, "Chebyshev({k})"),
            Precond::PMultigrid(o) => write!(f, "p-multigrid, Chebyshev({}) on Q_p, AMG on Q1", o.chebyshev),
        }
    }
}

/// The coarser levels of a set-up, coarsest first.
pub struct Levels<K> {
    /// The physics on each coarser level, its rows fixed where the finer
    /// level's row at the same node is.
    pub setups: Vec<Setup<K>>,
    /// `prolongation[l]` maps level `l` to level `l + 1` (the last to the
    /// set-up's own level), without fixed rows and columns.
    pub prolongation: Vec<Csr<f64>>,
    /// `injection[l]` takes a field of level `l + 1` to level `l`: one 1
    /// per row, at the same node (p-multigrid's levels between degrees,
    /// whose nodes do not nest: the finer field's values at the nodes).
    pub injection: Vec<Csr<f64>>,
}

impl<K: Kernels<f64>> Levels<K> {
    /// Every level's mass matrix, coarsest first, as values of its pattern
    /// (zero in fixed rows and columns), for the time steps' `c · M` term:
    /// each the Galerkin product Pᵀ M P of the next finer one's, from
    /// `fine`, the finest level's (values of `pattern`). For nested spaces
    /// it is the coarse space's own (its basis functions are sums of the
    /// finer ones), integrated by the finer rule; made only where time
    /// stepping asks for it.
    pub fn masses(&self, cpu: &CpuBackend, pattern: &Csr<f64>, fine: &[f64]) -> Result<Vec<Vec<f64>>> {
        crate::error::same_len("the finest mass matrix's values", fine.len(), pattern.nnz())?;
        let mut finer = Csr { val: fine.to_vec(), ..pattern.clone() };
        let mut masses = Vec::with_capacity(self.setups.len());
        for (s, p) in self.setups.iter().zip(&self.prolongation).rev() {
            let product = amg::product::multiply(cpu, &transpose(p, s.n_rows()), &amg::product::multiply(cpu, &finer, p)?)?;
            let mut values = vec![0.0; s.csr.nnz()];
            let out = SharedOut(values.as_mut_ptr());
            cpu.install(|| {
                (0..product.n_rows).into_par_iter().try_for_each(|r| {
                    for k in product.row_ptr[r] as usize..product.row_ptr[r + 1] as usize {
                        let at = s.csr.position(r, product.col[k]).ok_or_else(|| Error::InvalidArgument(format!("a coarse mass matrix's entry ({r}, {}) is not in its level's pattern", product.col[k])))?;
                        // SAFETY: `at` is in row r's entries, which only this row writes
                        unsafe { out.write(at, product.val[k]) };
                    }
                    Ok::<_, Error>(())
                })
            })?;
            finer = s.csr.with_values(values);
            masses.push(finer.val.clone());
        }
        masses.reverse();
        Ok(masses)
    }
}

impl<K: Kernels<f64>> Setup<K> {
    /// This set-up, built on `space` of degree 2 or more, with the
    /// low-order level AMG then coarsens instead of the operator itself
    /// ([`crate::solver::amg::low_order`]); of degree 1 it is unchanged.
    pub fn with_low_order(mut self, space: &Space) -> Result<Self> {
        let nc = self.physics.variant.nc;
        if space.n_cells() != self.physics.n_cells || space.n_dofs * nc != self.n_rows() {
            return Err(Error::InvalidArgument("AMG's low-order level: the set-up is not of this space".into()));
        }
        if space.degree > 1 {
            let rigid = !self.node_coords.is_empty();
            self.low_order = Some(Box::new(amg::LowOrder::new(space, nc, &self.fixed, rigid)?));
        }
        Ok(self)
    }

    /// AMG's near-nullspace on the first `nodes` nodes: the rigid-body
    /// modes where the set-up keeps node coordinates (a field with as many
    /// components as dimensions), else the constants of each component.
    pub fn near_nullspace(&self, nodes: usize) -> Result<Nullspace> {
        let nc = self.physics.variant.nc;
        match self.node_coords.len() {
            0 => Ok(Nullspace::constants(nodes * nc, nc)),
            _ => Nullspace::rigid_body_modes(&self.node_coords[..nodes], nc),
        }
    }

    /// This set-up, built on `nested.finest()`, with the physics
    /// rediscretised on the coarser levels of `nested` for multigrid:
    /// auxiliary fields injected (nodal) or averaged over a cell's children
    /// (per cell). An error when the set-up is of another space, or the
    /// nodes of its degree do not nest.
    pub fn with_multigrid(self, cpu: &CpuBackend, nested: &NestedSpaces) -> Result<Self> {
        self.with_multigrid_on(cpu, cpu, nested)
    }

    /// [`Setup::with_multigrid`] for backend `b`, which builds the levels'
    /// patterns where it is fastest ([`NewtonOps::cells_pattern`]).
    pub fn with_multigrid_on<B: NewtonOps>(self, b: &B, cpu: &CpuBackend, nested: &NestedSpaces) -> Result<Self> {
        Ok(self.multigrid_of(b, cpu, &mut Hierarchy::Borrowed(nested))?.0)
    }

    /// [`Setup::with_multigrid_on`] for a set-up already on its backend
    /// ([`Workspace::of_setup_then`](super::Workspace::of_setup_then)'s
    /// levels), taking the hierarchy: its spaces go as soon as the levels
    /// no longer read them (the finest once the prolongation from the
    /// level below is made, each coarser one once its own level and the
    /// prolongation into it are), and the set-up's own auxiliary field
    /// once the level below is made from it (the workspace would let go
    /// of it after the levels). The finest space is returned
    /// where `keep_finest` asks for it (for the solution's output), else
    /// let go of too.
    pub fn with_multigrid_owned<B: NewtonOps>(self, b: &B, cpu: &CpuBackend, nested: NestedSpaces, keep_finest: bool) -> Result<(Self, Option<Space>)> {
        self.multigrid_of(b, cpu, &mut Hierarchy::Owned { nested, keep_finest })
    }

    /// The levels of [`Setup::with_multigrid_on`] made from `h`, and the
    /// finest space where `h` owns it and keeps it.
    fn multigrid_of<B: NewtonOps>(mut self, b: &B, cpu: &CpuBackend, h: &mut Hierarchy) -> Result<(Self, Option<Space>)> {
        let nested = h.nested();
        let top = nested.levels() - 1;
        let (fine, v) = (nested.finest(), self.physics.variant);
        let nc = v.nc;
        if fine.n_cells() != self.physics.n_cells || fine.n_dofs * nc != self.n_rows() {
            return Err(Error::InvalidArgument("multigrid: the set-up is not of the finest space of the hierarchy".into()));
        }
        let mut levels = Levels { setups: Vec::new(), prolongation: Vec::new(), injection: Vec::new() };
        // each level's coefficients as its physics takes them (per node or
        // per cell): the finest's as its set-up keeps them per node, else
        // read off its E-vector once
        // an owned hierarchy's set-up is on its backend already: its own
        // field is taken, and goes once the level below is made from it
        let nodal = v.aux_nodal && v.na > 0;
        let per_slot = nodal && self.cells.is_none();
        let field = match &mut self.cells {
            Some(c) if nodal => &mut c.aux,
            _ => &mut self.physics.a,
        };
        let finest_aux: Cow<[f64]> = match (per_slot, h.owned()) {
            (true, owned) => {
                let a = level_aux(fine, v.na, v.aux_nodal, field);
                if owned {
                    *field = Vec::new();
                }
                Cow::Owned(a)
            }
            (false, true) => Cow::Owned(std::mem::take(field)),
            (false, false) => Cow::Borrowed(field),
        };
        let (mut fixed, mut aux) = (Cow::Borrowed(&self.fixed[..]), finest_aux);
        let mut finest = None;
        for l in (0..top).rev() {
            let p = h.nested().interpolation(l)?;
            // the level above is read for the last time
            let above = h.release_above(l);
            if l + 1 == top {
                finest = above;
            }
            let nested = h.nested();
            let coarse = &nested.spaces[l];
            let inj = injection(&p, coarse.n_dofs)?;
            let rows: Vec<u32> = (0..coarse.n_dofs * nc).into_par_iter().map(|r| inj[r / nc] * nc as u32 + (r % nc) as u32).collect();
            let coarse_fixed: Vec<bool> = rows.par_iter().map(|&r| fixed[r as usize]).collect();
            // the field's prolongation made from the space's (in place
            // for a scalar field) before the level is set up: the
            // finest's is the largest array made here
            levels.prolongation.push(field_prolongation(p, nc, &coarse_fixed, &fixed)?);
            let coarse_aux = coarse_aux(coarse, &nested.parents[l], &inj, v.na, v.aux_nodal, &aux);
            // the finer field is read for the last time
            drop(std::mem::take(&mut aux));
            let kind = match (v.na, v.aux_nodal) {
                (0, _) => Aux::None,
                (_, true) => Aux::Nodal(&coarse_aux),
                (_, false) => Aux::Cell(&coarse_aux),
            };
            let mut setup = Setup::build(b, cpu, coarse, Setup::<K>::physics_on(b, coarse, Some(v.nq), kind)?, coarse_fixed.clone(), None)?;
            if let Some(term) = &self.facets {
                // refined facets keep their coarsest ancestor's key
                let keys = term.facets.iter().map(|f| f.key).collect();
                setup = setup.with_boundary_term(coarse, &BoundaryPart::Facets { name: "the boundary term's facets".into(), keys })?;
            }
            levels.injection.push(Csr { n_rows: rows.len(), row_ptr: (0..=rows.len() as u32).collect(), col: rows, val: vec![1.0; coarse.n_dofs * nc] });
            (fixed, aux) = (Cow::Owned(coarse_fixed), Cow::Owned(coarse_aux));
            levels.setups.push(setup);
        }
        drop((fixed, aux));
        if top == 0 {
            // one level: no coarser one read it last
            finest = h.finest_kept();
        }
        for list in [&mut levels.prolongation, &mut levels.injection] {
            list.reverse();
        }
        levels.setups.reverse();
        self.levels = Some(Box::new(levels));
        Ok((self, finest))
    }
}

/// The spaces a multigrid set-up is made from: a caller's, or its own to
/// let go of as it goes.
enum Hierarchy<'a> {
    Borrowed(&'a NestedSpaces),
    Owned { nested: NestedSpaces, keep_finest: bool },
}

impl Hierarchy<'_> {
    fn owned(&self) -> bool {
        matches!(self, Self::Owned { .. })
    }

    fn nested(&self) -> &NestedSpaces {
        match self {
            Self::Borrowed(n) => n,
            Self::Owned { nested, .. } => nested,
        }
    }

    /// Lets go of the spaces above level `l` and the refinement into
    /// them where they are owned; the finest where it is asked to be
    /// kept.
    fn release_above(&mut self, l: usize) -> Option<Space> {
        let Self::Owned { nested, keep_finest } = self else {
            return None;
        };
        let above = nested.spaces.split_off(l + 1);
        nested.parents.truncate(l + 1);
        nested.children.truncate(l + 1);
        above.into_iter().last().filter(|_| *keep_finest)
    }

    /// The finest space, taken where it is owned and asked to be kept.
    fn finest_kept(&mut self) -> Option<Space> {
        match self {
            Self::Owned { nested, keep_finest: true } => nested.spaces.pop(),
            _ => None,
        }
    }
}

/// The auxiliary field of a physics on `space` from its E-vector `a`
/// (`na` values per node or per cell), as [`Aux`] gives it: a node's
/// values from the first cell slot that holds it (the E-vector of a nodal
/// field agrees between cells), a cell field as it is.
pub(super) fn level_aux(space: &Space, na: usize, nodal: bool, a: &[f64]) -> Vec<f64> {
    if na == 0 || !nodal {
        return a.to_vec();
    }
    let slot = space.owner_slots();
    let mut out = vec![0.0; space.n_dofs * na];
    out.par_chunks_mut(na).zip(slot.par_iter()).for_each(|(o, &k)| {
        if k != u32::MAX {
            o.copy_from_slice(&a[k as usize * na..][..na]);
        }
    });
    out
}

/// The auxiliary field of `coarse` from the field `fine_aux` of the next
/// finer level (`na` values per node or per cell, as [`Aux`] gives them):
/// nodal fields at the injected node, cell fields averaged over the
/// children.
fn coarse_aux(coarse: &Space, parent: &[u32], inj: &[u32], na: usize, nodal: bool, fine_aux: &[f64]) -> Vec<f64> {
    if na == 0 {
        return Vec::new();
    }
    if nodal {
        let mut out = vec![0.0; inj.len() * na];
        out.par_chunks_mut(na).zip(inj.par_iter()).for_each(|(o, &i)| o.copy_from_slice(&fine_aux[i as usize * na..][..na]));
        out
    } else {
        let mut sum = vec![0.0; coarse.n_cells() * na];
        let mut count = vec![0usize; coarse.n_cells()];
        for (f, &c) in parent.iter().enumerate() {
            count[c as usize] += 1;
            for k in 0..na {
                sum[c as usize * na + k] += fine_aux[f * na + k];
            }
        }
        sum.iter().enumerate().map(|(i, s)| s / count[i / na].max(1) as f64).collect()
    }
}

impl<B: NewtonOps, T: LinearScalar> Level<B, T> {
    /// Level `s` on the backend, its state injected by `injection` from
    /// a finer level of `above` rows.
    pub(super) fn new<K: Kernels<f64> + 'static>(b: &B, s: &Setup<K>, injection: &Csr<f64>, above: usize, scatter: Scatter) -> Result<Self> {
        let n = s.n_rows();
        Ok(Level {
            state: b.prepare(s, Some(b.default_format()), scatter)?,
            inject: b.store_matrix(injection, above)?,
            u: b.zeros(n)?,
            ue: b.zeros(s.gather.len())?,
            kelem: b.zeros(super::assembly::padded(s.entry_len(), scatter))?,
            kflat: b.zeros(s.csr.nnz())?,
            inv: b.zeros(n)?,
            mass: None,
            values: None,
            inv_t: None,
        })
    }

    /// The level's tangent at the finer level's state `above` (injected):
    /// its values, with `extra`'s mass term, and inverse diagonal, in f64
    /// and in `T`.
    pub(super) fn linearise(&mut self, b: &B, above: &B::Vector<f64>, extra: Option<&Extra<B>>) -> Result<()> {
        self.inject.apply(b, above, &mut self.u)?;
        b.gather(&self.state, &self.u, &mut self.ue)?;
        b.elements(&self.state, true, &self.ue, &mut self.kelem)?;
        let mass = match (extra, &self.mass) {
            (None, _) => None,
            (Some(e), Some(m)) => Some((e, m)),
            (Some(_), None) => return Err(Error::InvalidArgument("a time step's multigrid levels have no mass matrices: set them first (Workspace::set_level_masses)".into())),
        };
        tangent_values(b, &self.state, &self.kelem, &mut self.kflat, mass)?;
        b.inverse_diagonal(&self.state, &self.kflat, &mut self.inv)?;
        T::refresh(b, &self.kflat, &mut self.values)?;
        T::refresh(b, &self.inv, &mut self.inv_t)
    }
}

/// A coarser level on the backend.
pub(super) struct Level<B: NewtonOps, T: LinearScalar> {
    state: B::State,
    /// The injection from the next finer level.
    inject: Box<dyn Spmv<B, f64>>,
    u: B::Vector<f64>,
    ue: B::Vector<f64>,
    kelem: B::Vector<f64>,
    pub(super) kflat: B::Vector<f64>,
    inv: B::Vector<f64>,
    /// The level's mass matrix as values of its pattern, once time
    /// stepping has set it ([`Prepared::set_masses`]).
    mass: Option<B::Vector<f64>>,
    /// `kflat` and `inv` in the solve's precision (f32 only).
    pub(super) values: Option<B::Vector<T>>,
    inv_t: Option<B::Vector<T>>,
}

impl Precond {
    /// Whether it is built from the assembled tangent's values, which
    /// element matrices (LMA), point data and the matrix-free tangent do
    /// not give: Jacobi, Chebyshev and p-multigrid need its products and
    /// diagonal only.
    pub fn needs_matrix(&self) -> bool {
        !matches!(self, Precond::None | Precond::Jacobi | Precond::Chebyshev(_) | Precond::PMultigrid(_))
    }
}

/// The preconditioner a workspace keeps.
pub(super) enum Prepared<B: NewtonOps, T: LinearScalar> {
    Identity(Identity),
    Jacobi,
    Ssor(B::Ssor<T>),
    /// SPAI(1) or SAINV, with the tangent's pattern it is rebuilt on.
    Inverse(Box<MatrixInverse<B, T>>, Box<MatrixSmoothers>),
    Multigrid(Box<Multigrid<B, T>>, Vec<Level<B, T>>, Option<Box<MatrixSmoothers>>),
    Amg(Box<AmgPrepared<B, T>>),
    /// Chebyshev–Jacobi of `degree`: ρ(D⁻¹A) of the current tangent,
    /// estimated at its first use (`None` until then).
    Chebyshev { degree: usize, rho: Option<f64> },
    /// p-multigrid: the Q1 level and its AMG.
    PMultigrid(Box<PLevels<B, T>>),
}

/// AMG in a workspace: the hierarchy of the last tangent and what
/// rebuilds it from the next.
pub(super) struct AmgPrepared<B: NewtonOps, T: LinearScalar> {
    pub(super) mg: Option<Multigrid<B, T>>,
    /// The tangent's pattern.
    pattern: amg::Pattern,
    /// The near-nullspace.
    nullspace: Nullspace,
    opts: AmgOptions,
    /// Fingerprint of the values the hierarchy was built from.
    fingerprint: Option<f64>,
    pub(super) report: AmgReport,
    cpu: CpuBackend,
}

/// What AMG did over a solve, for the reports.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AmgReport {
    /// Hierarchies built (one per distinct tangent).
    pub builds: usize,
    /// Seconds of all builds, on the host or the GPU, values' transfers
    /// included.
    pub setup_seconds: f64,
    /// The last hierarchy.
    pub last: AmgStats,
}

impl<B: NewtonOps, T: LinearScalar> AmgPrepared<B, T> {
    pub(super) fn new<K: Kernels<f64>>(setup: &Setup<K>, opts: AmgOptions) -> Result<Self> {
        let nc = setup.physics.variant.nc;
        let nullspace = setup.near_nullspace(setup.n_rows() / nc)?;
        let mut pattern = amg::Pattern::new(&setup.csr, nc);
        pattern.low_order = setup.low_order.clone();
        Ok(Self { mg: None, pattern, nullspace, opts, fingerprint: None, report: AmgReport::default(), cpu: CpuBackend::new(None)? })
    }

    /// The hierarchy rebuilt from the tangent's values `kflat`, unless they
    /// are the last ones.
    pub(super) fn update(&mut self, b: &B, kflat: &B::Vector<T>) -> Result<()> {
        if self.opts.keep && self.mg.is_some() {
            return Ok(());
        }
        let t = std::time::Instant::now();
        let fingerprint = b.fingerprint(kflat)?;
        if self.fingerprint == Some(fingerprint) {
            return Ok(());
        }
        self.mg = None; // its memory before the next one's
        let (mg, stats) = b.amg(&self.cpu, &mut self.pattern, kflat, &self.nullspace, &self.opts)?;
        self.mg = Some(mg);
        self.fingerprint = Some(fingerprint);
        self.report.builds += 1;
        self.report.last = stats;
        self.report.setup_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }
}

/// Level `l` of `mg` refreshed from its tangent's CSR values `kflat` and
/// inverse diagonal `inv`, and its SPAI(1) or SAINV smoother rebuilt by
/// `smoothers` where there are such.
fn refresh<B: NewtonOps, T: LinearScalar>(b: &B, mg: &mut Multigrid<B, T>, smoothers: Option<&MatrixSmoothers>, l: usize, kflat: &B::Vector<T>, inv: &B::Vector<T>) -> Result<()> {
    mg.refresh(b, l, kflat, inv)?;
    match smoothers {
        Some(s) => mg.refresh_smoother(b, &s.cpu, l, &s.patterns[l], kflat),
        None => Ok(()),
    }
}

/// What rebuilds SPAI(1) or SAINV from new tangents: every level's
/// pattern (coarsest first, the set-up's own last; only its own without
/// multigrid), shared with the set-ups rather than copied, and the host's
/// thread pool.
pub(super) struct MatrixSmoothers {
    patterns: Vec<Arc<Csr<f64>>>,
    cpu: CpuBackend,
}

impl<B: NewtonOps, T: LinearScalar> Prepared<B, T> {
    /// Builds what `p` needs for `setup` on backend `b`.
    pub(super) fn new<K: Kernels<f64> + 'static>(b: &B, setup: &Setup<K>, p: Precond, scatter: Scatter) -> Result<Self> {
        match p {
            Precond::None => Ok(Self::Identity(Identity(setup.n_rows()))),
            Precond::Jacobi => Ok(Self::Jacobi),
            Precond::Ssor => Ok(Self::Ssor(b.ssor(&setup.csr.in_precision::<T>(), &RowColouring::new(&setup.csr)?)?)),
            Precond::Spai | Precond::Sainv => {
                let kind = if p == Precond::Spai { Smoother::Spai } else { Smoother::Sainv };
                let smoothers = MatrixSmoothers { patterns: vec![setup.csr.clone()], cpu: CpuBackend::new(None)? };
                Ok(Self::Inverse(Box::new(MatrixInverse::empty(kind, setup.n_rows())?), Box::new(smoothers)))
            }
            Precond::Multigrid(o) => {
                let levels = setup.levels.as_ref().ok_or_else(|| Error::InvalidArgument("multigrid needs coarse levels: build the set-up with Setup::with_multigrid".into()))?;
                if o.smoother.needs_host_matrices() {
                    // rediscretised levels change their values at every
                    // update, on the backend
                    return Err(Error::InvalidArgument(format!("multigrid by rediscretisation smooths with Jacobi, SPAI(1) or SAINV, not {:?} (that smooths AMG)", o.smoother)));
                }
                // the operators' values are filled before the first cycle,
                // on the backend
                let setups: Vec<&Setup<K>> = levels.setups.iter().chain(std::iter::once(setup)).collect();
                let a: Vec<&Csr<f64>> = setups.iter().map(|s| &*s.csr).collect();
                let p: Vec<std::borrow::Cow<Csr<T>>> = levels.prolongation.iter().map(|m| m.in_precision::<T>()).collect();
                let mg = Multigrid::of_patterns(b, &a, &p, o)?;
                let smoothers = match o.smoother.is_matrix() {
                    true => Some(Box::new(MatrixSmoothers { patterns: setups.iter().map(|s| s.csr.clone()).collect(), cpu: CpuBackend::new(None)? })),
                    false => None,
                };
                let coarse = levels
                    .setups
                    .iter()
                    .enumerate()
                    .map(|(l, s)| Level::new(b, s, &levels.injection[l], levels.setups.get(l + 1).map_or(setup.n_rows(), |s| s.n_rows()), scatter))
                    .collect::<Result<_>>()?;
                // one cycle on the zero operators, so that what the GPU
                // does on first use (loading kernels) happens in the
                // set-up; the host has nothing to load, and a cycle there
                // costs as much as one of the solve's
                if b.kind() == crate::BackendKind::Cuda {
                    let (x, mut y) = (b.zeros(setup.n_rows())?, b.zeros(setup.n_rows())?);
                    mg.apply(b, &x, &mut y)?;
                }
                Ok(Self::Multigrid(Box::new(mg), coarse, smoothers))
            }
            Precond::Amg(o) => Ok(Self::Amg(Box::new(AmgPrepared::new(setup, o)?))),
            Precond::Chebyshev(degree) => Ok(Self::Chebyshev { degree, rho: None }),
            Precond::PMultigrid(o) => Ok(Self::PMultigrid(Box::new(PLevels::new(b, setup, o, scatter)?))),
        }
    }

    /// Rebuilds the preconditioner from the tangent at `u`: its CSR values
    /// `kflat` and inverse diagonal `inv` (with `extra`'s terms).
    pub(super) fn update(&mut self, b: &B, u: &B::Vector<f64>, kflat: &B::Vector<T>, inv: &B::Vector<T>, extra: Option<&Extra<B>>) -> Result<()> {
        match self {
            Self::Identity(_) | Self::Jacobi => Ok(()),
            Self::Chebyshev { rho, .. } => {
                *rho = None;
                Ok(())
            }
            Self::Ssor(s) => b.ssor_values(s, kflat),
            Self::Inverse(m, s) => m.refresh(b, &s.cpu, &s.patterns[0], kflat),
            Self::Amg(a) => a.update(b, kflat),
            Self::Multigrid(mg, levels, smoothers) => {
                let top = levels.len();
                refresh(b, mg, smoothers.as_deref(), top, kflat, inv)?;
                for l in (0..top).rev() {
                    let (lower, upper) = levels.split_at_mut(l + 1);
                    let above = upper.first().map_or(u, |a| &a.u);
                    let lv = &mut lower[l];
                    lv.linearise(b, above, extra)?;
                    refresh(b, mg, smoothers.as_deref(), l, T::view::<B>(&lv.kflat, &lv.values)?, T::view::<B>(&lv.inv, &lv.inv_t)?)?;
                }
                Ok(())
            }
            Self::PMultigrid(p) => p.update(b, u, extra),
        }
    }

    /// Gives the coarse levels their mass matrices (`masses`, coarsest
    /// first, values of their patterns), for time steps; nothing without
    /// multigrid.
    pub(super) fn set_masses(&mut self, b: &B, masses: &[Vec<f64>]) -> Result<()> {
        if let Self::Multigrid(_, levels, _) = self {
            crate::error::same_len("mass matrices of the coarse levels", masses.len(), levels.len())?;
            for (lv, m) in levels.iter_mut().zip(masses) {
                crate::error::same_len("a coarse level's mass matrix", m.len(), b.len(&lv.kflat))?;
                lv.mass = Some(b.upload(m)?);
            }
        }
        Ok(())
    }

    /// The time the coarse levels' physics sees, as the fine level's.
    pub(super) fn set_time(&mut self, b: &B, t: f64) {
        if let Self::Multigrid(_, levels, _) = self {
            for lv in levels {
                b.set_time(&mut lv.state, t);
            }
        }
    }

    /// The preconditioner to hand the Krylov method; `None` for Jacobi,
    /// whose inverse diagonal the workspace keeps.
    pub(super) fn get(&self) -> Option<&dyn LinearOperator<B, T>> {
        match self {
            Self::Identity(i) => Some(i),
            Self::Jacobi | Self::Chebyshev { .. } | Self::PMultigrid(_) => None,
            Self::Ssor(s) => Some(s),
            Self::Inverse(m, _) => Some(&**m),
            Self::Multigrid(mg, _, _) => Some(&**mg),
            Self::Amg(a) => a.mg.as_ref().map(|m| m as &dyn LinearOperator<B, T>),
        }
    }

    /// Whether it is multigrid by rediscretisation, whose coarse levels
    /// take mass matrices for time steps.
    pub(super) fn levels(&self) -> bool {
        matches!(self, Self::Multigrid(..))
    }

    /// AMG's report, where it is the preconditioner.
    pub(super) fn amg(&self) -> Option<AmgReport> {
        match self {
            Self::Amg(a) => Some(a.report.clone()),
            Self::PMultigrid(p) => Some(p.amg.report.clone()),
            _ => None,
        }
    }
}
