//! p-multigrid for Q_p tangents (the shape nekRS and MFEM use for high
//! order): two levels on the same cells. On Q_p the tangent is applied as
//! stored (point data, matrix-free, element matrices or assembled) and
//! smoothed by Chebyshev–Jacobi, which needs only its products and
//! diagonal; the correction comes from Q1 on the cells' vertices, where
//! the physics is rediscretised and assembled at the injected state and
//! one smoothed-aggregation AMG cycle solves it. The transfer is Q1 ⊂ Q_p
//! interpolation ([`VertexLevel`]) and its transpose.
//!
//! The cycle ([`PCycle`]) is the solver's, shared with `fem bp`'s solve
//! of the CEED operators.

use super::linear::LinearScalar;
use super::precond::{AmgPrepared, Level, Levels};
use super::{Assembly, Extra, NewtonOps, NewtonOptions, Precond, Scatter, Setup, Storage, Workspace};
use crate::sparse::Spmv;
use crate::operator::csr::Csr;
use crate::operator::LinearOperator;
use crate::solver::amg::AmgOptions;
use crate::solver::p_multigrid::PCycle;
use crate::solver::transfer::transpose;
use crate::solver::multigrid::Matrix;
use crate::space::degree_transfer::{DegreeLevel, VertexLevel};
use crate::space::nested::field_prolongation;
use crate::space::{BoundaryPart, Space};
use crate::operator::pointwise::Aux;
use crate::{CpuBackend, Error, Result};
use fem_kernels::pointwise::Kernels;
use rayon::prelude::*;
use serde::Serialize;

/// p-multigrid's settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PmgOptions {
    /// Degree of the Chebyshev–Jacobi smoother before and after the
    /// coarse correction (products with the Q_p tangent each).
    pub chebyshev: usize,
    /// The AMG that solves the Q1 level (one cycle a correction).
    pub amg: AmgOptions,
}

impl Default for PmgOptions {
    fn default() -> Self {
        Self { chebyshev: 3, amg: AmgOptions::default() }
    }
}

impl<K: Kernels<f64>> Setup<K> {
    /// This set-up, of the tensor space `space` (Q2 or more), with the
    /// physics rediscretised on Q1 of the same cells for p-multigrid:
    /// nodal auxiliary fields taken at the vertices, per-cell ones as they
    /// are, rows held where the fine rows at the same vertex are, and a
    /// boundary term on the same facets (add it first).
    pub fn with_p_multigrid_on<B: NewtonOps>(self, b: &B, cpu: &CpuBackend, space: &Space) -> Result<Self> {
        self.with_p_multigrid_levels_on(b, cpu, space, &[])
    }

    /// [`Setup::with_p_multigrid_on`] with levels of the degrees `between`
    /// (descending, below the space's, above 1) between Q_p and Q1, as
    /// nekRS and MFEM halve the degree: each the physics rediscretised on
    /// the same cells and stored by its points (partial assembly, or the
    /// matrix-free action for vector fields), no pattern made; nodal
    /// fields and the state interpolated at its nodes, rows held where
    /// every finer row they read is.
    pub fn with_p_multigrid_levels_on<B: NewtonOps>(mut self, b: &B, cpu: &CpuBackend, space: &Space, between: &[usize]) -> Result<Self> {
        let v = self.physics.variant;
        let nc = v.nc;
        if space.n_cells() != self.physics.n_cells || space.n_dofs * nc != self.n_rows() {
            return Err(Error::InvalidArgument("p-multigrid: the set-up is not of this space".into()));
        }
        if space.degree < 2 {
            return Err(Error::InvalidArgument("p-multigrid coarsens Q_p to Q1: the space is Q1 already (use AMG)".into()));
        }
        let descending = between.windows(2).all(|w| w[0] > w[1]);
        if !descending || between.first().is_some_and(|&q| q >= space.degree) || between.last().is_some_and(|&q| q < 2) {
            return Err(Error::InvalidArgument(format!("p-multigrid's degrees between Q{} and Q1 descend from below {} to above 1, not {between:?}", space.degree, space.degree)));
        }
        let mut levels = Levels { setups: Vec::new(), prolongation: Vec::new(), injection: Vec::new() };
        let (mut above, mut fixed, mut aux) = (std::borrow::Cow::Borrowed(space), self.fixed.clone(), self.fine_aux(space)?);
        for &q in between {
            let DegreeLevel { space: level, interpolation, restriction } = DegreeLevel::of(&above, q)?;
            let reads = |i: usize| &restriction.col[restriction.row_ptr[i] as usize..restriction.row_ptr[i + 1] as usize];
            let level_fixed: Vec<bool> = (0..level.n_dofs * nc).into_par_iter().map(|r| reads(r / nc).iter().all(|&f| fixed[f as usize * nc + r % nc])).collect();
            let level_aux = match (v.na, v.aux_nodal) {
                (0, _) | (_, false) => aux.clone(),
                (na, true) => (0..level.n_dofs * na).into_par_iter().map(|r| {
                    let (i, a) = (r / na, r % na);
                    (restriction.row_ptr[i] as usize..restriction.row_ptr[i + 1] as usize).map(|k| restriction.val[k] * aux[restriction.col[k] as usize * na + a]).sum()
                }).collect(),
            };
            let physics = Setup::<K>::physics_on(b, &level, None, self.aux_kind(&level_aux))?;
            let setup = Setup::build_with(b, cpu, &level, physics, level_fixed.clone(), None, false)?;
            levels.setups.push(self.same_facets(setup, &level)?);
            levels.prolongation.push(field_prolongation(interpolation, nc, &level_fixed, &fixed)?);
            levels.injection.push(field_prolongation(restriction, nc, &vec![false; fixed.len()], &vec![false; level_fixed.len()])?);
            (above, fixed, aux) = (std::borrow::Cow::Owned(level), level_fixed, level_aux);
        }
        let VertexLevel { space: coarse, interpolation, injection: inj } = VertexLevel::of(&above)?;
        let rows: Vec<u32> = (0..coarse.n_dofs * nc).into_par_iter().map(|r| inj[r / nc] * nc as u32 + (r % nc) as u32).collect();
        let coarse_fixed: Vec<bool> = rows.par_iter().map(|&r| fixed[r as usize]).collect();
        levels.prolongation.push(field_prolongation(interpolation, nc, &coarse_fixed, &fixed)?);
        let coarse_aux: Vec<f64> = match (v.na, v.aux_nodal) {
            (na, true) if na > 0 => inj.iter().flat_map(|&f| aux[f as usize * na..(f as usize + 1) * na].iter().copied()).collect(),
            _ => aux,
        };
        let setup = Setup::build(b, cpu, &coarse, Setup::<K>::physics_on(b, &coarse, None, self.aux_kind(&coarse_aux))?, coarse_fixed, None)?;
        levels.setups.push(self.same_facets(setup, &coarse)?);
        levels.injection.push(Csr { n_rows: rows.len(), row_ptr: (0..=rows.len() as u32).collect(), col: rows, val: vec![1.0; coarse.n_dofs * nc] });
        // coarsest first
        levels.setups.reverse();
        levels.prolongation.reverse();
        levels.injection.reverse();
        self.levels = Some(Box::new(levels));
        Ok(self)
    }

    /// Auxiliary fields of this physics' kind, at a level's nodes or cells.
    fn aux_kind<'a>(&self, aux: &'a [f64]) -> Aux<'a> {
        match (self.physics.variant.na, self.physics.variant.aux_nodal) {
            (0, _) => Aux::None,
            (_, true) => Aux::Nodal(aux),
            (_, false) => Aux::Cell(aux),
        }
    }

    /// `setup`, a level on the same cells as this one, given this one's
    /// boundary term on the same facets (found by their corners).
    fn same_facets(&self, setup: Setup<K>, space: &Space) -> Result<Setup<K>> {
        match &self.facets {
            Some(term) => {
                let keys = term.facets.iter().map(|f| f.key).collect();
                setup.with_boundary_term(space, &BoundaryPart::Facets { name: "the boundary term's facets".into(), keys })
            }
            None => Ok(setup),
        }
    }

    /// The auxiliary fields as [`Aux`] takes them: per node (read off the
    /// E-vector, or the nodal cells' own) or per cell.
    fn fine_aux(&self, space: &Space) -> Result<Vec<f64>> {
        let v = &self.physics.variant;
        if v.na == 0 {
            return Ok(Vec::new());
        }
        match (&self.cells, v.aux_nodal) {
            (Some(c), true) => Ok(c.aux.clone()),
            (_, true) => Ok(super::precond::level_aux(space, v.na, true, &self.physics.a)),
            (_, false) => Ok(self.physics.a.clone()),
        }
    }
}

/// p-multigrid in a workspace: the Q1 level, its AMG, the levels between
/// Q_p and Q1, the transfers and ρ(D⁻¹A) of the Q_p tangent.
pub(super) struct PLevels<B: NewtonOps, T: LinearScalar> {
    pub(super) level: Level<B, T>,
    pub(super) amg: AmgPrepared<B, T>,
    /// Between Q1 and the level above it.
    prolong: Matrix<B, T>,
    restrict: Matrix<B, T>,
    /// The levels between Q_p and Q1, coarsest first.
    between: Vec<Between<B, T>>,
    chebyshev: usize,
    /// ρ(D⁻¹A) of the current tangent, estimated at its first use.
    pub(super) rho: Option<f64>,
}

/// A level of p-multigrid between Q_p and Q1: the physics' tangent there,
/// stored by its points with its inverse diagonal (its workspace's), at
/// the state interpolated from the level above, ρ(D⁻¹A), and the
/// transfers to the level above.
struct Between<B: NewtonOps, T: LinearScalar> {
    w: Workspace<B>,
    inject: Box<dyn Spmv<B, f64>>,
    u: B::Vector<f64>,
    rho: f64,
    prolong: Matrix<B, T>,
    restrict: Matrix<B, T>,
}

impl<B: NewtonOps, T: LinearScalar> PLevels<B, T> {
    /// The levels of `setup` ([`Setup::with_p_multigrid_levels_on`]) on `b`.
    pub(super) fn new<K: Kernels<f64> + 'static>(b: &B, setup: &Setup<K>, o: PmgOptions, scatter: Scatter) -> Result<Self> {
        let levels = setup.levels.as_ref().filter(|l| l.setups.first().is_some_and(|s| s.physics.variant.degree == 1) && l.setups[1..].iter().all(|s| s.physics.variant.degree >= 2));
        let levels = levels.ok_or_else(|| Error::InvalidArgument("p-multigrid needs its Q1 level: build the set-up with Setup::with_p_multigrid_on".into()))?;
        let above = |l: usize| levels.setups.get(l + 1).map_or(setup.n_rows(), |s| s.n_rows());
        // the prolongation from level l and its transpose
        let transfers = |l: usize| -> Result<(Matrix<B, T>, Matrix<B, T>)> {
            let (p, n) = (&levels.prolongation[l], levels.setups[l].n_rows());
            Ok((b.store_matrix(&p.in_precision::<T>(), n)?, b.store_matrix(&transpose(p, n).in_precision::<T>(), above(l))?))
        };
        let between = (1..levels.setups.len())
            .map(|l| {
                let s = &levels.setups[l];
                let assembly = match Assembly::by_points(&s.physics.variant) {
                    Storage::MatrixFree => Assembly::MatrixFree,
                    _ => Assembly::Partial,
                };
                let o = NewtonOptions { assembly, precond: Precond::Jacobi, scatter, ..NewtonOptions::default() };
                let (prolong, restrict) = transfers(l)?;
                Ok(Between { w: Workspace::new(b, s, &o)?, inject: b.store_matrix(&levels.injection[l], above(l))?, u: b.zeros(s.n_rows())?, rho: 0.0, prolong, restrict })
            })
            .collect::<Result<Vec<_>>>()?;
        let coarse = &levels.setups[0];
        let (prolong, restrict) = transfers(0)?;
        Ok(Self {
            level: Level::new(b, coarse, &levels.injection[0], above(0), scatter)?,
            amg: AmgPrepared::new(coarse, o.amg)?,
            prolong,
            restrict,
            between,
            chebyshev: o.chebyshev.max(1),
            rho: None,
        })
    }

    /// Every level's tangent at the Q_p state `u` (with `extra`'s terms:
    /// a time step's, which only two levels take), its diagonal and
    /// ρ(D⁻¹A), and AMG rebuilt on Q1's.
    pub(super) fn update(&mut self, b: &B, u: &B::Vector<f64>, extra: Option<&Extra<B>>) -> Result<()> {
        if extra.is_some() && !self.between.is_empty() {
            return Err(Error::InvalidArgument("p-multigrid's levels between Q_p and Q1 hold no mass term: a time step takes two levels".into()));
        }
        let mut above = u;
        for l in self.between.iter_mut().rev() {
            l.inject.apply(b, above, &mut l.u)?;
            l.w.linearise_at(b, &l.u)?;
            l.w.invert_diagonal(b)?;
            let (t, inv) = l.w.held()?;
            l.rho = PCycle::rho(b, &t, inv)?;
            let done: &Between<B, T> = l;
            above = &done.u;
        }
        self.level.linearise(b, above, extra)?;
        self.rho = None;
        self.amg.update(b, T::view::<B>(&self.level.kflat, &self.level.values)?)
    }

    /// The cycle on the fine operator `a` with inverse diagonal `inv`
    /// (ρ estimated here once a tangent), nested through the levels
    /// between Q_p and Q1.
    pub(super) fn cycle<'a>(&'a mut self, b: &B, a: &'a dyn LinearOperator<B, T>, inv: &'a B::Vector<T>) -> Result<PCycle<'a, B, T>> {
        let rho = match self.rho {
            Some(r) => r,
            None => *self.rho.insert(PCycle::rho(b, a, inv)?),
        };
        let coarse = self.amg.mg.as_ref().ok_or_else(|| Error::InvalidArgument("p-multigrid's AMG was not built: no tangent yet".into()))?;
        let mut below: Box<dyn LinearOperator<B, T> + 'a> = Box::new(coarse);
        let (mut prolong, mut restrict): (&'a dyn LinearOperator<B, T>, &'a dyn LinearOperator<B, T>) = (&*self.prolong, &*self.restrict);
        for Between { w, rho, prolong: p, restrict: r, .. } in self.between.iter_mut() {
            let (t, inv) = w.held()?;
            let f64_only = || Error::InvalidArgument(format!("p-multigrid's levels between degrees apply their tangents in f64, not {}", T::NAME));
            let (op, inv) = (T::owned(Box::new(t)).ok_or_else(f64_only)?, T::vector::<B>(inv).ok_or_else(f64_only)?);
            below = Box::new(PCycle::new(b, op, inv, *rho, self.chebyshev, below, prolong, restrict)?);
            (prolong, restrict) = (&**p, &**r);
        }
        PCycle::new(b, Box::new(a), inv, rho, self.chebyshev, below, prolong, restrict)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{solve, Assembly, NewtonOptions, Precond};
    use super::*;
    use crate::mesh::BoxMesh;
    use crate::operator::pointwise::rel;
    use crate::space::{BoundaryPart, Constraints, Load};
    use fem_kernels::physics::{Elasticity, Poisson};

    /// Krylov iterations and solution of one Newton update of `K` on
    /// `cells`³ perturbed hexahedra at Q`p`, clamped at x = 0, with a
    /// load that excites every mode, stored as `assembly`.
    fn run<K: Kernels<f64> + 'static>(cells: usize, p: usize, precond: Precond, assembly: Assembly) -> (usize, Vec<f64>) {
        run_levels::<K>(cells, p, precond, assembly, &[])
    }

    /// [`run`] with p-multigrid's levels of the degrees `between`.
    fn run_levels<K: Kernels<f64> + 'static>(cells: usize, p: usize, precond: Precond, assembly: Assembly, between: &[usize]) -> (usize, Vec<f64>) {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let space = Space::tensor(&BoxMesh::unstructured(3, cells, 4).build().unwrap(), p).unwrap();
        let v = <K as Kernels<f64>>::VARIANTS.iter().find(|v| v.shape == space.shape && v.degree == p).unwrap();
        let nc = v.nc;
        let aux: Vec<f64> = if v.aux_nodal { (0..space.n_dofs).flat_map(|i| [1.0 + (i % 3) as f64, 0.0]).collect() } else { (0..space.n_cells()).flat_map(|_| [0.6, 0.4]).collect() };
        let aux = if v.aux_nodal { Aux::Nodal(&aux) } else { Aux::Cell(&aux) };
        let clamped = Constraints::none(&space, nc).dirichlet(&space, &BoundaryPart::at("x = 0", |x| x[0] < 1e-12), |_, u| u.fill(0.0)).unwrap();
        let load = Load::zero(&space, nc).source(&space, |x, f| f.iter_mut().enumerate().for_each(|(c, f)| *f = (7.0 * x[0] + 3.0 * x[1] * x[2] + c as f64).sin()));
        let o = NewtonOptions { precond, assembly, krylov_rtol: 1e-10, ..NewtonOptions::default() };
        let mut setup = Setup::<K>::for_newton_on(&cpu, &cpu, &space, aux, &clamped, Some(&load), &o, true).unwrap();
        if matches!(precond, Precond::PMultigrid(_)) {
            setup = setup.with_p_multigrid_levels_on(&cpu, &cpu, &space, between).unwrap();
        }
        let (u, r) = solve(&cpu, &setup, &clamped.initial(), &o, &mut |_| {}).unwrap();
        assert!(r.converged, "{} Q{p} {precond}: {:?}", K::NAME, r.residuals);
        (r.krylov_iterations, u)
    }

    /// Poisson Q3 and elasticity Q2, partially assembled and matrix-free:
    /// p-multigrid reaches Jacobi's solution in a fraction of its CG
    /// iterations, and its count grows little when h halves.
    #[test]
    fn p_multigrid_cuts_iterations_and_keeps_them_bounded() {
        let pmg = Precond::PMultigrid(PmgOptions::default());
        let mut counts = Vec::new();
        for cells in [2, 4] {
            let (jacobi, want) = run::<Poisson>(cells, 3, Precond::Jacobi, Assembly::Partial);
            let (its, u) = run::<Poisson>(cells, 3, pmg, Assembly::Partial);
            assert!(rel(&u, &want) < 1e-7, "Poisson Q3 on {cells}³: {:e}", rel(&u, &want));
            assert!(4 * its < jacobi, "Poisson Q3 on {cells}³: {its} against Jacobi's {jacobi}");
            let (free, _) = run::<Poisson>(cells, 3, pmg, Assembly::MatrixFree);
            assert!(free.abs_diff(its) <= 1, "matrix-free {free} against partial {its}");
            counts.push(its);
        }
        assert!(counts[1] as f64 <= 1.3 * counts[0] as f64 + 2.0, "Poisson Q3: {counts:?} iterations when h halves");
        let (coarse, _) = run::<Elasticity>(2, 2, pmg, Assembly::MatrixFree);
        let (fine, _) = run::<Elasticity>(4, 2, pmg, Assembly::MatrixFree);
        let (jacobi, _) = run::<Elasticity>(4, 2, Precond::Jacobi, Assembly::MatrixFree);
        assert!(3 * fine < jacobi, "elasticity Q2 on 4³: {fine} against Jacobi's {jacobi}");
        assert!(fine as f64 <= 1.3 * coarse as f64 + 2.0, "elasticity Q2: {coarse} → {fine} iterations when h halves");
    }

    /// Levels between Q_p and Q1 (Q6 → Q3 → Q1 and Q4 → Q2 → Q1 for
    /// Poisson partially assembled, Q3 → Q2 → Q1 for elasticity
    /// matrix-free): the same solution as Jacobi's in no more iterations
    /// than the two levels take; degrees that do not descend between the
    /// two are refused.
    #[test]
    fn levels_between_degrees_solve_in_fewer_iterations() {
        let pmg = Precond::PMultigrid(PmgOptions::default());
        for (p, between) in [(6, &[3][..]), (4, &[2])] {
            let (_, want) = run::<Poisson>(2, p, Precond::Jacobi, Assembly::Partial);
            let (two, _) = run::<Poisson>(2, p, pmg, Assembly::Partial);
            let (its, u) = run_levels::<Poisson>(2, p, pmg, Assembly::Partial, between);
            assert!(rel(&u, &want) < 1e-7, "Poisson Q{p} through {between:?}: {:e}", rel(&u, &want));
            assert!(its <= two, "Poisson Q{p}: {its} iterations through {between:?} against {two} from Q{p} to Q1");
        }
        let (_, want) = run::<Elasticity>(2, 3, Precond::Jacobi, Assembly::MatrixFree);
        let (two, _) = run::<Elasticity>(2, 3, pmg, Assembly::MatrixFree);
        let (its, u) = run_levels::<Elasticity>(2, 3, pmg, Assembly::MatrixFree, &[2]);
        assert!(rel(&u, &want) < 1e-7 && its <= two, "elasticity Q3 through Q2: {its} against {two}, {:e}", rel(&u, &want));
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let q4 = Space::tensor(&BoxMesh::structured(3, 2).build().unwrap(), 4).unwrap();
        let coefficients: Vec<f64> = (0..q4.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
        for between in [&[4][..], &[2, 3], &[1]] {
            let setup = Setup::<Poisson>::with_aux(&cpu, &q4, Aux::Nodal(&coefficients)).unwrap();
            let e = setup.with_p_multigrid_levels_on(&cpu, &cpu, &q4, between).err().unwrap();
            assert!(e.to_string().contains("descend from below 4"), "{between:?}: {e}");
        }
    }

    /// Q1 has no coarser degree, and simplices no Q1 of their cells.
    #[test]
    fn p_multigrid_refuses_q1_and_simplices() {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let q1 = Space::tensor(&BoxMesh::structured(3, 2).build().unwrap(), 1).unwrap();
        let coefficients: Vec<f64> = (0..q1.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
        let setup = Setup::<Poisson>::with_aux(&cpu, &q1, Aux::Nodal(&coefficients)).unwrap();
        let e = setup.with_p_multigrid_on(&cpu, &cpu, &q1).err().unwrap();
        assert!(e.to_string().contains("Q1 already"), "{e}");
    }
}
