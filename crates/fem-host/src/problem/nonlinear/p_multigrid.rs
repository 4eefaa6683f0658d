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
use super::{NewtonOps, Scatter, Setup};
use crate::operator::csr::Csr;
use crate::operator::LinearOperator;
use crate::solver::amg::AmgOptions;
use crate::solver::p_multigrid::PCycle;
use crate::solver::transfer::transpose;
use crate::solver::multigrid::Matrix;
use crate::space::degree_transfer::VertexLevel;
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
    pub fn with_p_multigrid_on<B: NewtonOps>(mut self, b: &B, cpu: &CpuBackend, space: &Space) -> Result<Self> {
        let v = self.physics.variant;
        let nc = v.nc;
        if space.n_cells() != self.physics.n_cells || space.n_dofs * nc != self.n_rows() {
            return Err(Error::InvalidArgument("p-multigrid: the set-up is not of this space".into()));
        }
        if space.degree < 2 {
            return Err(Error::InvalidArgument("p-multigrid coarsens Q_p to Q1: the space is Q1 already (use AMG)".into()));
        }
        let VertexLevel { space: coarse, interpolation, injection: inj } = VertexLevel::of(space)?;
        let rows: Vec<u32> = (0..coarse.n_dofs * nc).into_par_iter().map(|r| inj[r / nc] * nc as u32 + (r % nc) as u32).collect();
        let coarse_fixed: Vec<bool> = rows.par_iter().map(|&r| self.fixed[r as usize]).collect();
        let prolongation = field_prolongation(interpolation, nc, &coarse_fixed, &self.fixed)?;
        let aux = self.fine_aux(space)?;
        let coarse_aux: Vec<f64> = match (v.na, v.aux_nodal) {
            (0, _) => Vec::new(),
            (na, true) => inj.iter().flat_map(|&f| aux[f as usize * na..(f as usize + 1) * na].iter().copied()).collect(),
            (_, false) => aux,
        };
        let kind = match (v.na, v.aux_nodal) {
            (0, _) => Aux::None,
            (_, true) => Aux::Nodal(&coarse_aux),
            (_, false) => Aux::Cell(&coarse_aux),
        };
        let mut setup = Setup::build(b, cpu, &coarse, Setup::<K>::physics_on(b, &coarse, None, kind)?, coarse_fixed, None)?;
        if let Some(term) = &self.facets {
            // the same cells: the same boundary facets, by their corners
            let keys = term.facets.iter().map(|f| f.key).collect();
            setup = setup.with_boundary_term(&coarse, &BoundaryPart::Facets { name: "the boundary term's facets".into(), keys })?;
        }
        let injection = Csr { n_rows: rows.len(), row_ptr: (0..=rows.len() as u32).collect(), col: rows, val: vec![1.0; coarse.n_dofs * nc] };
        self.levels = Some(Box::new(Levels { setups: vec![setup], prolongation: vec![prolongation], injection: vec![injection] }));
        Ok(self)
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

/// p-multigrid in a workspace: the Q1 level, its AMG, the transfers and
/// ρ(D⁻¹A) of the Q_p tangent.
pub(super) struct PLevels<B: NewtonOps, T: LinearScalar> {
    pub(super) level: Level<B, T>,
    pub(super) amg: AmgPrepared<B, T>,
    prolong: Matrix<B, T>,
    restrict: Matrix<B, T>,
    chebyshev: usize,
    /// ρ(D⁻¹A) of the current tangent, estimated at its first use.
    pub(super) rho: Option<f64>,
}

impl<B: NewtonOps, T: LinearScalar> PLevels<B, T> {
    /// The Q1 level of `setup` ([`Setup::with_p_multigrid_on`]) on `b`.
    pub(super) fn new<K: Kernels<f64> + 'static>(b: &B, setup: &Setup<K>, o: PmgOptions, scatter: Scatter) -> Result<Self> {
        let levels = setup.levels.as_ref().filter(|l| l.setups.len() == 1 && l.setups[0].physics.variant.degree == 1);
        let levels = levels.ok_or_else(|| Error::InvalidArgument("p-multigrid needs its Q1 level: build the set-up with Setup::with_p_multigrid_on".into()))?;
        let coarse = &levels.setups[0];
        let (n, nc) = (setup.n_rows(), coarse.n_rows());
        let p = &levels.prolongation[0];
        Ok(Self {
            level: Level::new(b, coarse, &levels.injection[0], n, scatter)?,
            amg: AmgPrepared::new(coarse, o.amg)?,
            prolong: b.store_matrix(&p.in_precision::<T>(), nc)?,
            restrict: b.store_matrix(&transpose(p, nc).in_precision::<T>(), n)?,
            chebyshev: o.chebyshev.max(1),
            rho: None,
        })
    }

    /// The cycle on the fine operator `a` with inverse diagonal `inv`
    /// (ρ estimated here once a tangent).
    pub(super) fn cycle<'a>(&'a mut self, b: &B, a: &'a dyn LinearOperator<B, T>, inv: &'a B::Vector<T>) -> Result<PCycle<'a, B, T>> {
        let rho = match self.rho {
            Some(r) => r,
            None => *self.rho.insert(PCycle::rho(b, a, inv)?),
        };
        let coarse = self.amg.mg.as_ref().ok_or_else(|| Error::InvalidArgument("p-multigrid's AMG was not built: no tangent yet".into()))?;
        PCycle::new(b, a, inv, rho, self.chebyshev, Box::new(coarse), &*self.prolong, &*self.restrict)
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
            setup = setup.with_p_multigrid_on(&cpu, &cpu, &space).unwrap();
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
