//! The monodomain model's own operations on the CPU: the point-history
//! update and the activation times, per cell and per node on rayon (the
//! per-item functions the GPU kernels apply).

use super::Ops;
use crate::{CpuBackend, Result};
use fem_kernels::physics::cardiac::{activation, advance_cell, AUX};
use rayon::prelude::*;

impl Ops for CpuBackend {
    fn advance(&self, aux: &mut Vec<f64>, ue: &Vec<f64>, amp: &Vec<f64>, nl: usize, on: f64) -> Result<()> {
        crate::error::same_len("point histories", aux.len() / AUX, amp.len())?;
        crate::error::same_len("converged E-vector", ue.len(), amp.len() * nl)?;
        self.install(|| aux.par_chunks_mut(AUX).zip(ue.par_chunks(nl)).zip(amp.par_iter()).for_each(|((a, cu), &s)| advance_cell(cu, a, s * on)));
        Ok(())
    }

    fn activation(&self, prev: &Vec<f64>, phi: &Vec<f64>, t: f64, dt: f64, act: &mut Vec<f64>) -> Result<()> {
        self.install(|| act.par_iter_mut().zip(phi.par_iter().zip(prev)).for_each(|(a, (&p, &q))| *a = activation(q, p, t, dt, *a)));
        Ok(())
    }
}
