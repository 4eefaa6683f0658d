//! The solve of `fem bp`: (S + λM) u = M f for the screened Poisson
//! operators (BP3.5, BP3.0) on the cube, with no boundary condition
//! imposed, by CG preconditioned with Jacobi or with p-multigrid.
//!
//! The exact solution u = Π_a cos(π s(x_a)), s(t) = t²(3 − 2t), has a
//! zero normal derivative on every face, and unlike cos πx cos πy cos πz
//! it is no eigenfunction of the operator: every mode of the error is
//! there to be reduced, as in a user's problem.
//!
//! p-multigrid is the cycle of [`PCycle`]: Chebyshev–Jacobi on the
//! matrix-free operator of degree N, and the same operator at degree 1 on
//! the same cells (its quadrature, its geometric factors) assembled and
//! solved by one smoothed-aggregation AMG cycle, the transfer the Q1
//! functions at the GLL nodes ([`SpectralBox::vertex_interpolation`]).

use super::BpOptions;
use fem_host::mesh::spectral::SpectralBox;
use fem_host::operator::tensor::{Problem, TensorOperator};
use fem_host::operator::LinearOperator;
use fem_host::problem::nonlinear::PmgOptions;
use fem_host::solver::amg::{AmgStats, Nullspace, Pattern};
use fem_host::solver::cg::{pcg, CgOptions, CgReport};
use fem_host::solver::p_multigrid::PCycle;
use fem_host::solver::transfer::transpose;
use fem_host::solver::{Jacobi, PrecondOps};
use fem_host::{CpuBackend, Error, Result};
use serde::Serialize;
use std::f64::consts::PI;
use std::time::Instant;

/// The solve, as reported.
#[derive(Clone, Debug, Serialize)]
pub struct SolveReport {
    /// `jacobi` or `p-multigrid`.
    pub preconditioner: &'static str,
    /// CG iterations taken.
    pub iterations: usize,
    /// Final recursively updated ‖r‖/‖b‖.
    pub relative_residual: f64,
    /// Whether the relative residual reached the requested tolerance.
    pub converged: bool,
    /// Wall time of the preconditioner's set-up (the diagonal, and for
    /// p-multigrid the Q1 level, its AMG and the transfers, ρ(D⁻¹A)).
    pub setup_seconds: f64,
    /// Wall time of the iterations, without the set-up.
    pub seconds: f64,
    /// max over nodes |u_h − u| for the exact solution ([`exact`]).
    pub max_nodal_error: f64,
    /// p-multigrid's Q1 level, when it was the preconditioner.
    pub p_multigrid: Option<PmgReport>,
    /// u_h at the global nodes (for output files).
    #[serde(skip)]
    pub u: Vec<f64>,
}

/// p-multigrid's levels as reported.
#[derive(Clone, Debug, Serialize)]
pub struct PmgReport {
    /// Rows of the Q1 level (the grid's vertices).
    pub coarse_rows: usize,
    /// Chebyshev's degree on each side of the correction.
    pub chebyshev: usize,
    /// ρ(D⁻¹A) of the operator of degree N.
    pub rho: f64,
    /// The AMG of the Q1 level.
    pub amg: AmgStats,
}

/// The exact solution: Π_a cos(π s(x_a)) with s(t) = t²(3 − 2t).
pub fn exact(x: [f64; 3]) -> f64 {
    x.iter().map(|&t| factor(t).0).product()
}

/// cos(π s(t)) and its second derivative.
fn factor(t: f64) -> (f64, f64) {
    let (s, ds, dds) = (t * t * (3.0 - 2.0 * t), 6.0 * t * (1.0 - t), 6.0 - 12.0 * t);
    let (c, sn) = ((PI * s).cos(), (PI * s).sin());
    (c, -PI * dds * sn - PI * PI * ds * ds * c)
}

/// f = −Δu + λu of the exact solution.
fn load(x: [f64; 3], lambda: f64) -> f64 {
    let [(a, da), (b, db), (c, dc)] = x.map(factor);
    -(da * b * c + a * db * c + a * b * dc) + lambda * a * b * c
}

/// The right-hand side M f on the host, from the operator's own mass.
fn right_hand_side(op: &TensorOperator, mesh: &SpectralBox) -> Result<Vec<f64>> {
    if op.problem == Problem::Bp1 {
        return Err(Error::InvalidArgument("the solve uses the screened Poisson operator: choose bp3.5 or bp3.0".into()));
    }
    let f = mesh.interpolate(|x| load(x, op.lambda));
    op.mass(&CpuBackend::new(None)?, &f)
}

/// Jacobi-CG on backend `b` with the operator `a` (the CEED operator
/// `op` on `mesh`, as `b` applies it). On a rank's piece (`b` then
/// distributed) the right-hand side's owned rows are exact and the error
/// is over the first `owned` nodes.
pub fn jacobi<B: fem_host::Backend, A: LinearOperator<B, f64>>(b: &B, a: &A, op: &TensorOperator, mesh: &SpectralBox, rtol: f64, owned: usize) -> Result<SolveReport> {
    let rhs = b.upload(&right_hand_side(op, mesh)?)?;
    let mut u = b.zeros::<f64>(mesh.n_nodes)?;
    let t = Instant::now();
    let m = Jacobi::new(b, a)?;
    let setup = t.elapsed().as_secs_f64();
    let report = pcg(b, a, &m, &rhs, &mut u, options(rtol))?;
    finish(b, "jacobi", report, setup, &u, mesh, owned, None)
}

/// CG preconditioned by p-multigrid ([`PCycle`]) on backend `b`, the
/// operator `a` being `op` on the whole grid `mesh` of `o`.
pub fn p_multigrid<B: PrecondOps, A: LinearOperator<B, f64>>(b: &B, a: &A, op: &TensorOperator, mesh: &SpectralBox, o: &BpOptions, pmg: &PmgOptions, rtol: f64) -> Result<SolveReport> {
    if mesh.degree < 2 {
        return Err(Error::InvalidArgument("p-multigrid coarsens degree N to 1: N is 1 already".into()));
    }
    let rhs = b.upload(&right_hand_side(op, mesh)?)?;
    let cpu = CpuBackend::new(None)?;
    let t = Instant::now();
    let coarse_mesh = SpectralBox::new(1, mesh.cells, o.deformation)?;
    let a1 = TensorOperator::new(op.problem, &coarse_mesh, op.lambda)?.assembled(&cpu)?;
    let p = mesh.vertex_interpolation()?;
    let n1 = a1.n_rows;
    let (mg, amg) = b.amg::<f64>(&cpu, &mut Pattern::new(&a1, 1), &b.upload(&a1.val)?, &Nullspace::constants(n1, 1), &pmg.amg)?;
    let prolong = b.store_matrix(&p, n1)?;
    let restrict = b.store_matrix(&transpose(&p, n1), mesh.n_nodes)?;
    let jacobi = Jacobi::new(b, a)?;
    let rho = PCycle::rho(b, a, &jacobi.inv_diag)?;
    let cycle = PCycle::new(b, a, &jacobi.inv_diag, rho, pmg.chebyshev, &mg, &*prolong, &*restrict)?;
    let setup = t.elapsed().as_secs_f64();
    let mut u = b.zeros::<f64>(mesh.n_nodes)?;
    let report = pcg(b, a, &cycle, &rhs, &mut u, options(rtol))?;
    let levels = PmgReport { coarse_rows: n1, chebyshev: pmg.chebyshev, rho, amg };
    finish(b, "p-multigrid", report, setup, &u, mesh, mesh.n_nodes, Some(levels))
}

/// CG's options: to `rtol`, at most 20 000 iterations.
fn options(rtol: f64) -> CgOptions {
    CgOptions { rtol, max_iterations: 20_000, jacobi: false }
}

/// The report of a finished solve, its error over the first `owned` nodes.
#[allow(clippy::too_many_arguments)]
fn finish<B: fem_host::Backend>(b: &B, preconditioner: &'static str, r: CgReport, setup_seconds: f64, u: &B::Vector<f64>, mesh: &SpectralBox, owned: usize, p_multigrid: Option<PmgReport>) -> Result<SolveReport> {
    let u = b.download(u)?;
    let ue = mesh.interpolate(exact);
    let err = u[..owned].iter().zip(&ue).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    Ok(SolveReport { preconditioner, iterations: r.iterations, relative_residual: r.relative_residual, converged: r.converged, setup_seconds, seconds: r.iteration_seconds, max_nodal_error: err, p_multigrid, u })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The load is −Δu + λu of the exact solution (central differences
    /// of step 10⁻⁴), and u's normal derivative vanishes on the faces.
    #[test]
    fn the_load_is_the_operator_of_the_exact_solution() {
        let h = 1e-4;
        for x in [[0.3, 0.7, 0.55], [0.1, 0.9, 0.2], [0.5, 0.5, 0.5]] {
            let lap: f64 = (0..3)
                .map(|a| {
                    let (mut p, mut m) = (x, x);
                    p[a] += h;
                    m[a] -= h;
                    (exact(p) - 2.0 * exact(x) + exact(m)) / (h * h)
                })
                .sum();
            let want = -lap + 2.0 * exact(x);
            assert!((load(x, 2.0) - want).abs() < 1e-5 * (1.0 + want.abs()), "{x:?}: {} against {want}", load(x, 2.0));
        }
        for t in [0.0, 1.0] {
            let d = (exact([t + h, 0.3, 0.6]) - exact([t - h, 0.3, 0.6])) / (2.0 * h);
            assert!(d.abs() < 1e-6, "∂u/∂x at x = {t}: {d}");
        }
    }
}
