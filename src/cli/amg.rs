//! `--precond amg`'s options, shared by `fem solve` and `fem cardiac`.

use crate::{given, CycleArg};
use clap::{Args, ValueEnum};
use fem::host::solver::amg::{Aggregation, AmgOptions};
use fem::host::solver::multigrid::Smoother;

/// How AMG is built and cycled.
#[derive(Args, Clone)]
pub(crate) struct AmgArgs {
    /// AMG: strength threshold θ in [0, 1): nodes couple strongly where
    /// |a_ij| ≥ θ √(a_ii a_jj) (default 0: every coupling).
    #[arg(long)]
    pub(crate) amg_strength: Option<f64>,
    /// AMG: the smoother (default chebyshev, of degree 2 on D⁻¹A; jacobi
    /// is damped by 2/3, l1-jacobi and spai, SPAI(1) built on the host for
    /// every level, undamped).
    #[arg(long, value_enum)]
    pub(crate) amg_smoother: Option<AmgSmootherArg>,
    /// AMG: the cycle (default w).
    #[arg(long, value_enum)]
    pub(crate) amg_cycle: Option<CycleArg>,
    /// AMG: the aggregation (default parallel: around a distance-2
    /// maximal independent set, the same on both backends, and the whole
    /// set-up on the GPU when smoothed by chebyshev or jacobi; standard:
    /// pyamg's, sequential, on the host).
    #[arg(long, value_enum)]
    pub(crate) amg_aggregation: Option<AggregationArg>,
    /// AMG: where the hierarchy is set up (default auto: on the GPU where
    /// the backend is CUDA and the aggregation and smoother allow it, on
    /// each rank's GPU across ranks; host: on the host's cores, which
    /// needs less device memory).
    #[arg(long, value_enum)]
    pub(crate) amg_setup: Option<SetupArg>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum SetupArg {
    Auto,
    Host,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum AggregationArg {
    Parallel,
    Standard,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum AmgSmootherArg {
    Chebyshev,
    Jacobi,
    L1Jacobi,
    Spai,
}

/// The option ids of [`AmgArgs`].
pub(crate) const AMG: &[&str] = &["amg_strength", "amg_smoother", "amg_cycle", "amg_aggregation", "amg_setup"];

impl AmgArgs {
    /// The options given over AMG's defaults; an error for a θ outside
    /// [0, 1).
    pub(crate) fn options(&self) -> Result<AmgOptions, String> {
        let mut o = AmgOptions::default();
        if let Some(t) = self.amg_strength {
            if !(0.0..1.0).contains(&t) {
                return Err(format!("--amg-strength must lie in [0, 1), not {t}"));
            }
            o.strength = t;
        }
        match self.amg_smoother {
            Some(AmgSmootherArg::Jacobi) => {
                o.cycle.smoother = Smoother::Jacobi;
                o.cycle.omega = 2.0 / 3.0;
            }
            Some(AmgSmootherArg::L1Jacobi) => {
                o.cycle.smoother = Smoother::L1Jacobi;
                o.cycle.omega = 1.0;
            }
            Some(AmgSmootherArg::Spai) => {
                o.cycle.smoother = Smoother::Spai;
                o.cycle.omega = 1.0;
            }
            Some(AmgSmootherArg::Chebyshev) | None => {}
        }
        if let Some(c) = self.amg_cycle {
            o.cycle.cycle = c.into();
        }
        match self.amg_aggregation {
            Some(AggregationArg::Standard) => o.aggregation = Aggregation::Standard,
            Some(AggregationArg::Parallel) | None => {}
        }
        o.host_setup = matches!(self.amg_setup, Some(SetupArg::Host));
        Ok(o)
    }

    /// An error where an AMG option was given without `--precond amg`.
    pub(crate) fn refuse_unless(amg: bool) -> Result<(), String> {
        match AMG.iter().find(|id| given(id)) {
            Some(id) if !amg => Err(format!("--{} configures --precond amg", id.replace('_', "-"))),
            _ => Ok(()),
        }
    }
}
