//! Newton's tangent at a given state as its Krylov method applies it, for
//! whoever wants the operator without the solve: `fem bp --physics`
//! times it, and a caller can wrap it in a solver of its own.

use super::cell_tangent::{cell_inverse_diagonal, CellTangent};
use crate::problem::phases::Split;
use super::{tangent_values, NewtonOps, Solve, Workspace};
use crate::operator::LinearOperator;
use crate::{Error, Result};
use std::cell::RefCell;

/// The tangent at a state: applied cell by cell (element matrices, point
/// data or the matrix-free action) or the assembled matrix.
pub struct Tangent<'a, B: NewtonOps>(Held<'a, B>);

enum Held<'a, B: NewtonOps> {
    Cells(CellTangent<'a, B>),
    Matrix(&'a dyn LinearOperator<B, f64>),
}

impl<B: NewtonOps> Tangent<'_, B> {
    fn op(&self) -> &dyn LinearOperator<B, f64> {
        match &self.0 {
            Held::Cells(t) => t,
            Held::Matrix(m) => *m,
        }
    }
}

impl<B: NewtonOps> LinearOperator<B, f64> for Tangent<'_, B> {
    fn rows(&self) -> usize {
        self.op().rows()
    }
    fn apply(&self, b: &B, x: &B::Vector<f64>, y: &mut B::Vector<f64>) -> Result<()> {
        self.op().apply(b, x, y)
    }
    fn diagonal(&self, b: &B) -> Result<B::Vector<f64>> {
        self.op().diagonal(b)
    }
    fn name(&self) -> String {
        self.op().name()
    }
}

impl<B: NewtonOps> Workspace<B> {
    /// The tangent at the state `u` (an L-vector on the backend), stored
    /// as the workspace's storage says and applied as Newton's Krylov
    /// method applies it: fixed rows pass `x` through, the rest see the
    /// physics' Jacobian. An error for an f32 solve (its matrix is a
    /// rounded copy) and for formats that renumber the rows.
    pub fn tangent_at(&mut self, b: &B, u: &B::Vector<f64>) -> Result<Tangent<'_, B>> {
        self.linearise_at(b, u)?;
        if self.storage.by_cells() {
            return Ok(self.held()?.0);
        }
        let state = &self.state;
        tangent_values(b, state, &self.kelem, &mut self.kflat, None)?;
        let Solve::F64(linear) = &mut self.linear else {
            return Err(Error::InvalidArgument("the tangent of an f32 solve is a rounded copy: ask for the f64 one".into()));
        };
        linear.update(b, &self.kflat, &self.jacobi.inv_diag)?;
        match linear.matrix.as_deref() {
            Some(m) if m.numbering().is_none() => Ok(Tangent(Held::Matrix(m))),
            Some(m) => Err(Error::InvalidArgument(format!("{} numbers the rows its own way: choose a format in the mesh's numbering", m.name()))),
            None => Err(Error::InvalidArgument("the assembled tangent is held by the multigrid hierarchy: choose Jacobi".into())),
        }
    }

    /// The tangent's values at the state `u`, as its storage keeps them.
    pub(super) fn linearise_at(&mut self, b: &B, u: &B::Vector<f64>) -> Result<()> {
        let mut split = Split::default();
        Self::residual(b, &self.state, u, &mut self.ue, &mut self.relem, &mut self.r, &mut self.mu, None, &mut split)?;
        self.storage.linearise(b, &self.state, &self.ue, &mut self.kelem)
    }

    /// The inverse diagonal of a tangent kept by its cells, as last
    /// linearised, into the workspace's Jacobi (what [`Self::held`]
    /// hands out beside the tangent).
    pub(super) fn invert_diagonal(&mut self, b: &B) -> Result<()> {
        cell_inverse_diagonal(b, self.storage, &self.state, &self.kelem, None, &mut self.trial, &mut self.jacobi.inv_diag)
    }

    /// The tangent as last linearised ([`Self::linearise_at`]), applied
    /// cell by cell, with the inverse diagonal last made
    /// ([`Self::invert_diagonal`]); an error for an assembled one.
    pub(super) fn held(&mut self) -> Result<(Tangent<'_, B>, &B::Vector<f64>)> {
        if !self.storage.by_cells() {
            return Err(Error::InvalidArgument("the tangent is assembled: take it by Workspace::tangent_at".into()));
        }
        let scratch = RefCell::new(&mut self.mu);
        let t = CellTangent { storage: self.storage, state: &self.state, kelem: &self.kelem, extra: None, scratch, n: self.n };
        Ok((Tangent(Held::Cells(t)), &self.jacobi.inv_diag))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Assembly, NewtonOptions, Setup};
    use super::*;
    use crate::mesh::BoxMesh;
    use crate::operator::pointwise::rel;
    use crate::operator::pointwise::Aux;
    use crate::space::constraints::Constraints;
    use crate::space::Space;
    use crate::sparse::SpmvFormat;
    use crate::{Backend, CpuBackend};
    use fem_kernels::physics::{Elasticity, Mass, NeoHookean, Poisson};
    use fem_kernels::pointwise::Kernels;

    /// The tangent of `K` at Q`p` on perturbed hexahedra at a state of
    /// size `size` is one operator however it is stored: CSR, element
    /// matrices, point data and the matrix-free action give the same
    /// product; and for a nonlinear `K` another state gives another one.
    fn same_tangent<K: Kernels<f64> + 'static>(p: usize, size: f64, nonlinear: bool) {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let space = Space::tensor(&BoxMesh::unstructured(3, 2, 3).build().unwrap(), p).unwrap();
        let v = <K as Kernels<f64>>::VARIANTS.iter().find(|v| v.shape == space.shape && v.degree == p).unwrap();
        let (nc, nodal) = (v.nc, v.aux_nodal);
        let aux: Vec<f64> = if nodal { (0..space.n_dofs).flat_map(|i| [1.0 + (i % 5) as f64 * 0.2, 0.0]).collect() } else { (0..space.n_cells()).flat_map(|c| [1.0 + (c % 3) as f64 * 0.1, 0.7]).collect() };
        let none = Constraints::none(&space, nc);
        let rows = nc * space.n_dofs;
        let state = |s: f64| -> Vec<f64> { (0..rows).map(|r| s * (3.0 * space.dof_coords[r / nc][r % nc] + r as f64).sin()).collect() };
        let x: Vec<f64> = (0..rows).map(|r| ((r * 7919) % 101) as f64 / 101.0 - 0.5).collect();
        let product = |assembly: Assembly, s: f64| -> Vec<f64> {
            let o = NewtonOptions { assembly, ..NewtonOptions::default() };
            let aux = if nodal { Aux::Nodal(&aux) } else { Aux::Cell(&aux) };
            let setup = Setup::<K>::for_newton_on(&cpu, &cpu, &space, aux, &none, None, &o, false).unwrap();
            let mut w = Workspace::new(&cpu, &setup, &o).unwrap();
            let t = w.tangent_at(&cpu, &state(s)).unwrap();
            assert_eq!(t.rows(), rows);
            let mut y = cpu.zeros(rows).unwrap();
            t.apply(&cpu, &x, &mut y).unwrap();
            y
        };
        let what = format!("{} Q{p}", K::NAME);
        let want = product(Assembly::Sparse(SpmvFormat::Csr), size);
        let diff = |y: &[f64]| rel(y, &want);
        for assembly in [Assembly::Lma, Assembly::Partial, Assembly::MatrixFree] {
            let err = diff(&product(assembly, size));
            assert!(err < 1e-12, "{what}, {assembly}: {err:e}");
        }
        if nonlinear {
            let other = diff(&product(Assembly::MatrixFree, 2.0 * size));
            assert!(other > 1e-3, "{what}: the tangent does not depend on the state ({other:e})");
        }
    }

    /// The shipped hexahedral physics, scalar and vector, linear and not.
    #[test]
    fn every_storage_gives_the_same_tangent() {
        for p in [1, 2, 3] {
            same_tangent::<Mass>(p, 1.0, false);
            same_tangent::<Poisson>(p, 1.0, false);
            same_tangent::<Elasticity>(p, 1.0, false);
            same_tangent::<NeoHookean>(p, 0.02 / (p * p) as f64, true);
        }
    }
}
