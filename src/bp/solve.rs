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
//! matrix-free operator of degree N, and a correction from the same
//! operator at a lower degree on the same cells (its quadrature, its
//! geometric factors), itself a cycle down to degree 1, where it is
//! assembled and solved by one smoothed-aggregation AMG cycle; the
//! transfers interpolate between the degrees' GLL nodes, applied as the
//! tensor products of their 1D matrices ([`SpectralBox::transfer_from`]).

use super::BpOptions;
use fem_host::mesh::spectral::SpectralBox;
use fem_host::operator::lattice::{CpuKronecker, GpuKronecker, Kronecker};
use fem_host::operator::tensor::gpu::GpuTensor;
use fem_host::operator::tensor::{Problem, TensorOperator};
use fem_host::operator::LinearOperator;
use fem_host::problem::nonlinear::PmgOptions;
use fem_host::solver::amg::{AmgStats, Nullspace, Pattern};
use fem_host::solver::cg::{pcg, CgOptions, CgReport};
use fem_host::solver::p_multigrid::PCycle;
use fem_host::solver::{Jacobi, PrecondOps};
use fem_host::stages::{Laps, StageSeconds};
use fem_host::{CpuBackend, CudaBackend, Error, Result};
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
    /// Every level's degree, N first, 1 last.
    pub degrees: Vec<usize>,
    /// Every level's rows (the last the grid's vertices).
    pub rows: Vec<usize>,
    /// Chebyshev's degree on each side of each correction.
    pub chebyshev: usize,
    /// ρ(D⁻¹A) of each smoothed level (all but the last).
    pub rho: Vec<f64>,
    /// The AMG of the degree-1 level.
    pub amg: AmgStats,
    /// The set-up by stage (the lower degrees' meshes and operators; the
    /// degree-1 operator assembled on the host; its AMG on the backend,
    /// kernels compiled at their first use on the GPU included; the
    /// operators on the backend and the transfers; the smoothers'
    /// diagonals and ρ(D⁻¹A)), with the host memory at each end.
    pub setup: Vec<StageSeconds>,
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
fn right_hand_side(cpu: &CpuBackend, op: &TensorOperator, mesh: &SpectralBox) -> Result<Vec<f64>> {
    if op.problem == Problem::Bp1 {
        return Err(Error::InvalidArgument("the solve uses the screened Poisson operator: choose bp3.5 or bp3.0".into()));
    }
    let f = mesh.interpolate(|x| load(x, op.lambda));
    op.mass(cpu, &f)
}

/// Jacobi-CG on backend `b` with the operator `a` (the CEED operator
/// `op` on `mesh`, as `b` applies it). On a rank's piece (`b` then
/// distributed) the right-hand side's owned rows are exact and the error
/// is over the first `owned` nodes.
pub fn jacobi<B: fem_host::Backend, A: LinearOperator<B, f64>>(b: &B, a: &A, op: &TensorOperator, mesh: &SpectralBox, rtol: f64, owned: usize) -> Result<SolveReport> {
    let rhs = b.upload(&right_hand_side(&CpuBackend::new(None)?, op, mesh)?)?;
    let mut u = b.zeros::<f64>(mesh.n_nodes)?;
    let t = Instant::now();
    let m = Jacobi::new(b, a)?;
    let setup = t.elapsed().as_secs_f64();
    let report = pcg(b, a, &m, &rhs, &mut u, options(rtol))?;
    finish(b, "jacobi", report, setup, &u, mesh, owned, None)
}

/// p-multigrid of the BP solve: the cycle's settings and its levels.
#[derive(Clone, Debug, PartialEq)]
pub struct BpPmg {
    /// Chebyshev's degree and the AMG of the lowest level.
    pub options: PmgOptions,
    /// The levels' degrees below N.
    pub levels: PmgLevels,
}

/// The degrees of p-multigrid's levels below N.
#[derive(Clone, Debug, PartialEq)]
pub enum PmgLevels {
    /// These, descending, below N, the last 1 (`[1]`: two levels).
    Degrees(Vec<usize>),
    /// N halved (rounded down) until 1: 8, 4, 2, 1 or 7, 3, 1.
    Halving,
}

impl PmgLevels {
    /// The degrees below `n`, checked.
    pub fn below(&self, n: usize) -> Result<Vec<usize>> {
        let d = match self {
            Self::Halving => std::iter::successors(Some(n / 2), |&d| (d > 1).then_some(d / 2)).collect(),
            Self::Degrees(d) => d.clone(),
        };
        let descending = d.windows(2).all(|w| w[0] > w[1]);
        if n < 2 || d.is_empty() || d[0] >= n || d.last() != Some(&1) || !descending {
            return Err(Error::InvalidArgument(format!("p-multigrid's degrees below N = {n} descend from below N to 1, not {d:?}{}", if n < 2 { " (N is 1 already)" } else { "" })));
        }
        Ok(d)
    }
}

/// A backend that applies the CEED operators on L-vectors: the levels of
/// p-multigrid between N and 1.
pub trait CeedOps: PrecondOps {
    /// `op` as this backend applies it on L-vectors.
    fn ceed<'a>(&'a self, op: &'a TensorOperator) -> Result<Box<dyn LinearOperator<Self, f64> + 'a>>;
    /// The lattice product `k` (a transfer between degrees) on this backend.
    fn lattice(&self, k: Kronecker) -> Result<Box<dyn LinearOperator<Self, f64>>>;
}

impl CeedOps for CpuBackend {
    fn ceed<'a>(&'a self, op: &'a TensorOperator) -> Result<Box<dyn LinearOperator<Self, f64> + 'a>> {
        Ok(Box::new(op))
    }
    fn lattice(&self, k: Kronecker) -> Result<Box<dyn LinearOperator<Self, f64>>> {
        Ok(Box::new(CpuKronecker::new(k)))
    }
}

impl CeedOps for CudaBackend {
    fn ceed<'a>(&'a self, op: &'a TensorOperator) -> Result<Box<dyn LinearOperator<Self, f64> + 'a>> {
        Ok(Box::new(GpuTensor::new(self, op, false, None)?))
    }
    fn lattice(&self, k: Kronecker) -> Result<Box<dyn LinearOperator<Self, f64>>> {
        Ok(Box::new(GpuKronecker::new(self, k)?))
    }
}

/// CG preconditioned by p-multigrid ([`PCycle`], nested one level a
/// degree) on backend `b`, the operator `a` being `op` on the whole grid
/// `mesh` of `o`: the same operator at each lower degree on the same
/// cells, the lowest (1) assembled for its AMG.
pub fn p_multigrid<B: CeedOps, A: LinearOperator<B, f64>>(b: &B, a: &A, op: &TensorOperator, mesh: &SpectralBox, o: &BpOptions, pmg: &BpPmg, rtol: f64) -> Result<SolveReport> {
    let degrees = pmg.levels.below(mesh.degree)?;
    let cpu = CpuBackend::new(None)?;
    let rhs = b.upload(&right_hand_side(&cpu, op, mesh)?)?;
    let mut laps = Laps::new();
    let meshes = degrees.iter().map(|&d| SpectralBox::new(d, mesh.cells, o.deformation)).collect::<Result<Vec<_>>>()?;
    let ops = meshes.iter().map(|m| TensorOperator::new(op.problem, m, op.lambda)).collect::<Result<Vec<_>>>()?;
    let (lowest, between) = ops.split_last().expect("one level below N at least");
    laps.lap("levels");
    let a1 = lowest.assembled(&cpu)?;
    laps.lap("degree-1 assembly");
    let (mg, amg) = b.amg::<f64>(&cpu, &mut Pattern::new(&a1, 1), &b.upload(&a1.val)?, &Nullspace::constants(a1.n_rows, 1), &pmg.options.amg)?;
    b.synchronize()?;
    laps.lap("AMG");
    // the smoothed levels, N first, and the transfer into each from the one below
    let between = between.iter().map(|op| b.ceed(op)).collect::<Result<Vec<_>>>()?;
    let smoothed: Vec<&dyn LinearOperator<B, f64>> = std::iter::once(a as &dyn LinearOperator<B, f64>).chain(between.iter().map(|m| &**m)).collect();
    let fine_meshes: Vec<&SpectralBox> = std::iter::once(mesh).chain(&meshes).collect();
    let mut transfers = Vec::new();
    for (k, &d) in degrees.iter().enumerate() {
        let p = fine_meshes[k].transfer_from(d)?;
        let r = p.transpose();
        transfers.push((b.lattice(p)?, b.lattice(r)?));
    }
    b.synchronize()?;
    laps.lap("operators and transfers");
    let jacobi = smoothed.iter().map(|s| Jacobi::new(b, *s)).collect::<Result<Vec<_>>>()?;
    let rho = smoothed.iter().zip(&jacobi).map(|(s, j)| PCycle::rho(b, *s, &j.inv_diag)).collect::<Result<Vec<_>>>()?;
    laps.lap("smoothers");
    let mut cycle: Box<dyn LinearOperator<B, f64> + '_> = Box::new(&mg);
    for k in (0..smoothed.len()).rev() {
        cycle = Box::new(PCycle::new(b, Box::new(smoothed[k]), &jacobi[k].inv_diag, rho[k], pmg.options.chebyshev, cycle, &*transfers[k].0, &*transfers[k].1)?);
    }
    let setup = laps.elapsed();
    let mut u = b.zeros::<f64>(mesh.n_nodes)?;
    let report = pcg(b, a, &*cycle, &rhs, &mut u, options(rtol))?;
    let levels = PmgReport {
        degrees: std::iter::once(mesh.degree).chain(degrees).collect(),
        rows: fine_meshes.iter().map(|m| m.n_nodes).collect(),
        chebyshev: pmg.options.chebyshev,
        rho,
        amg,
        setup: laps.into_stages(),
    };
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
