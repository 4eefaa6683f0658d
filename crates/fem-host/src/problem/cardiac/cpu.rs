//! The monodomain solver's backend operations on the CPU: the generated
//! CPU variants of the physics, assembly by SpMV with the ELL-WARP gather
//! matrices on rayon (or a serial scatter), CSR for CG.

use super::{Assembly, Config, Ops, Physics, Setup};
use crate::operator::pointwise::{scatter_add, Pointwise};
use crate::sparse::assembly::gather_matrix;
use crate::sparse::params::SpmvParams;
use crate::sparse::stats::RowStats;
use crate::sparse::warp::EllWarp;
use crate::sparse::{gather_into, Spmv};
use crate::{CpuBackend, Result};
use fem_kernels::physics::cardiac::{activation, advance_cell, AUX};
use rayon::prelude::*;

pub struct CpuState {
    physics: Pointwise<f64, Physics>,
    cell_dofs: Vec<u32>,
    entry_pos: Vec<u32>,
    diag_pos: Vec<u32>,
    amp: Vec<f64>,
    /// Gather matrices of the residual and the matrix (SpMV assembly).
    gather: Option<[EllWarp<f64>; 2]>,
}

/// The residual's and the matrix's gather matrices in ELL-WARP pattern
/// form, K2 with the a-priori threshold of each.
pub(super) fn gather_matrices(cpu: &CpuBackend, setup: &Setup) -> Result<[EllWarp<f64>; 2]> {
    let build = |pos: &[u32], rows: usize| {
        let e = gather_matrix::<f64>(pos, rows);
        let threshold = SpmvParams::a_priori(&RowStats::of(&e)).threshold;
        EllWarp::pattern(cpu, &e, pos.len(), Some(threshold))
    };
    Ok([build(&setup.space.cell_dofs, setup.space.n_dofs)?, build(&setup.entry_pos, setup.csr.nnz())?])
}

impl Ops for CpuBackend {
    type State = CpuState;

    fn prepare(&self, setup: &Setup, cfg: &Config) -> Result<CpuState> {
        Ok(CpuState {
            physics: setup.physics.clone(),
            cell_dofs: setup.space.cell_dofs.clone(),
            entry_pos: setup.entry_pos.clone(),
            diag_pos: setup.diag_pos.clone(),
            amp: setup.amp.clone(),
            gather: if cfg.assembly == Assembly::Spmv { Some(gather_matrices(self, setup)?) } else { None },
        })
    }

    fn gather(&self, s: &CpuState, phi: &Vec<f64>, u: &mut Vec<f64>) -> Result<()> {
        crate::error::same_len("cardiac gather", s.cell_dofs.len(), u.len())?;
        gather_into(self, &s.cell_dofs, phi, u);
        Ok(())
    }

    fn elements(&self, s: &CpuState, jacobian: bool, u: &Vec<f64>, out: &mut Vec<f64>) -> Result<()> {
        let e = if jacobian { s.physics.jacobian_cpu(self, u)? } else { s.physics.residual_cpu(self, u)? };
        out[..e.len()].copy_from_slice(&e);
        Ok(())
    }

    fn assemble(&self, s: &CpuState, matrix: bool, elem: &Vec<f64>, out: &mut Vec<f64>) -> Result<()> {
        match &s.gather {
            Some(g) => g[matrix as usize].spmv_with::<true>(self, elem, out),
            None => {
                out.fill(0.0);
                let pos = if matrix { &s.entry_pos } else { &s.cell_dofs };
                scatter_add(pos, &elem[..pos.len()], out);
            }
        }
        Ok(())
    }

    fn inverse_diagonal(&self, s: &CpuState, kflat: &Vec<f64>, inv: &mut Vec<f64>) -> Result<()> {
        crate::problem::nonlinear::cpu::inverse_diagonal(&s.diag_pos, kflat, inv);
        Ok(())
    }

    fn advance(&self, s: &mut CpuState, u: &Vec<f64>, on: f64) -> Result<()> {
        let nl = s.physics.variant.n_local();
        let amp = &s.amp;
        self.install(|| {
            s.physics.a.par_chunks_mut(AUX).zip(u.par_chunks(nl)).enumerate().for_each(|(c, (a, cu))| advance_cell(cu, a, amp[c] * on))
        });
        Ok(())
    }

    fn activation(&self, prev: &Vec<f64>, phi: &Vec<f64>, t: f64, dt: f64, act: &mut Vec<f64>) -> Result<()> {
        for ((a, &p), &q) in act.iter_mut().zip(phi).zip(prev) {
            *a = activation(q, p, t, dt, *a);
        }
        Ok(())
    }

    fn aux(&self, s: &CpuState) -> Result<Vec<f64>> {
        Ok(s.physics.a.clone())
    }

    fn matrix(&self, _: &CpuState, setup: &Setup, _: &Config) -> Result<Box<dyn Spmv<CpuBackend, f64>>> {
        Ok(Box::new(setup.csr.clone()))
    }

    fn describe(&self, s: &CpuState) -> String {
        format!("CPU ({} threads), assembly by {}", self.threads(), if s.gather.is_some() { "ELL-WARP SpMV" } else { "serial scatter" })
    }
}
