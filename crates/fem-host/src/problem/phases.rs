//! What the nonlinear solvers share: the time split by phase, a timer
//! that includes the device's work, and an SpMV format as the linear
//! operator of CG.

use crate::{Backend, Result};
use serde::Serialize;
use std::time::Instant;

/// Seconds per phase, the split of the paper's Figures 2–3.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Split {
    /// Gather, element residuals and matrices, point-history update.
    pub element: f64,
    /// Residual and matrix assembly, value reordering, Jacobi diagonal.
    pub assembly: f64,
    /// The preconditioner built from the tangent: smoothers (SPAI(1),
    /// SAINV), multigrid's coarse operators, AMG's hierarchy, Chebyshev's
    /// spectral radius.
    pub precond: f64,
    /// Jacobi-PCG.
    pub solve: f64,
    /// Device ↔ host copies (field output).
    pub transfer: f64,
}

impl Split {
    /// Seconds of all phases together.
    pub fn total(&self) -> f64 {
        self.element + self.assembly + self.precond + self.solve + self.transfer
    }

    /// Adds another split phase by phase.
    pub fn add(&mut self, o: &Split) {
        self.element += o.element;
        self.assembly += o.assembly;
        self.precond += o.precond;
        self.solve += o.solve;
        self.transfer += o.transfer;
    }
}

/// Runs `f` and adds its time, device work included, to `acc`.
pub(crate) fn timed<B: Backend, R>(b: &B, acc: &mut f64, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let start = Instant::now();
    let r = f()?;
    b.synchronize()?;
    *acc += start.elapsed().as_secs_f64();
    Ok(r)
}
