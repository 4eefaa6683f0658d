//! The Newton solver's operations on the CPU: the physics' generated CPU
//! variants on rayon, assembly by the serial scatter through the position
//! maps (the boundary term's facets after the cells), CSR for CG.

use super::{NewtonOps, Setup};
use crate::operator::pointwise::{scatter_add, Pointwise};
use crate::sparse::{gather_into, Spmv};
use crate::{Backend, CpuBackend, Result};
use fem_kernels::pointwise::Kernels;

/// `inv[r] = 1 / kflat[diag_pos[r]]`: the inverse diagonal of CSR values.
pub(crate) fn inverse_diagonal(diag_pos: &[u32], kflat: &[f64], inv: &mut [f64]) {
    for (i, &p) in inv.iter_mut().zip(diag_pos) {
        *i = 1.0 / kflat[p as usize];
    }
}

/// Element values of a part (cells or facets) from its E-vector, the
/// physics type erased.
type Evaluate = Box<dyn Fn(&CpuBackend, bool, &[f64]) -> Result<Vec<f64>> + Send + Sync>;

/// The CPU's copy of the set-up, with the physics type erased.
pub struct CpuState {
    cells: Evaluate,
    facets: Option<Evaluate>,
    /// E-vector values of the cells (the facets' follow).
    cell_len: usize,
    gather: Vec<u32>,
    pos: [Vec<u32>; 2],
    /// What the residual's and the tangent's values start from.
    base: [Vec<f64>; 2],
    diag_pos: Vec<u32>,
}

fn erase<K: Kernels<f64> + 'static>(p: Pointwise<f64, K>) -> Evaluate {
    Box::new(move |cpu, jacobian, u| if jacobian { p.jacobian_cpu(cpu, u) } else { p.residual_cpu(cpu, u) })
}

impl NewtonOps for CpuBackend {
    type State = CpuState;

    fn prepare<K: Kernels<f64> + 'static>(&self, setup: &Setup<K>) -> Result<CpuState> {
        Ok(CpuState {
            cells: erase(setup.physics.clone()),
            facets: setup.facets.clone().map(|t| -> Evaluate { Box::new(move |cpu, jacobian, u| t.evaluate_cpu(cpu, jacobian, u)) }),
            cell_len: setup.physics.n_cells * setup.physics.variant.n_local(),
            gather: setup.gather.clone(),
            pos: [setup.residual_pos.clone(), setup.entry_pos.clone()],
            base: [setup.residual_base.clone(), setup.csr.val.clone()],
            diag_pos: setup.diag_pos.clone(),
        })
    }

    fn gather(&self, s: &CpuState, u: &Vec<f64>, ue: &mut Vec<f64>) -> Result<()> {
        crate::error::same_len("gather values", s.gather.len(), ue.len())?;
        gather_into(self, &s.gather, u, ue);
        Ok(())
    }

    fn set_residual_base(&self, s: &mut CpuState, base: &[f64]) -> Result<()> {
        crate::error::same_len("residual base", base.len(), s.base[0].len())?;
        s.base[0].copy_from_slice(base);
        Ok(())
    }

    fn elements(&self, s: &CpuState, jacobian: bool, ue: &Vec<f64>, out: &mut Vec<f64>) -> Result<()> {
        let v = (s.cells)(self, jacobian, &ue[..s.cell_len])?;
        out[..v.len()].copy_from_slice(&v);
        if let Some(f) = &s.facets {
            let w = f(self, jacobian, &ue[s.cell_len..])?;
            out[v.len()..v.len() + w.len()].copy_from_slice(&w);
        }
        Ok(())
    }

    fn assemble(&self, s: &CpuState, matrix: bool, elem: &Vec<f64>, out: &mut Vec<f64>) -> Result<()> {
        out.copy_from_slice(&s.base[matrix as usize]);
        let pos = &s.pos[matrix as usize];
        scatter_add(pos, &elem[..pos.len()], out);
        Ok(())
    }

    fn inverse_diagonal(&self, s: &CpuState, kflat: &Vec<f64>, inv: &mut Vec<f64>) -> Result<()> {
        inverse_diagonal(&s.diag_pos, kflat, inv);
        Ok(())
    }

    fn matrix<K: Kernels<f64>>(&self, _: &CpuState, setup: &Setup<K>) -> Result<Box<dyn Spmv<CpuBackend, f64>>> {
        Ok(Box::new(setup.csr.clone()))
    }

    fn describe(&self, _: &CpuState) -> String {
        format!("{}, assembly by serial scatter, the tangent in CSR", self.name())
    }
}
