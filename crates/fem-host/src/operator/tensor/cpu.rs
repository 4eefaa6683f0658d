//! The CPU reference of the three operators on E-vectors (one block of
//! (N + 1)³ values per element), by sum factorisation, elements in
//! parallel on rayon.

use super::basis::{apply_axis, contract3, transpose, Basis1d};
use super::Problem;
use fem_core::tensor::{apply_metric, NGEO};
use rayon::prelude::*;

/// The 1D matrices and their transposes.
#[derive(Clone, Debug)]
pub struct CpuTables {
    /// The 1D matrices themselves.
    pub basis: Basis1d,
    interp_t: Vec<f64>,
    diff_t: Vec<f64>,
    gl_diff_t: Vec<f64>,
}

impl CpuTables {
    /// Keeps `basis` with the transposes of its interpolation and
    /// differentiation matrices.
    pub fn new(basis: Basis1d) -> Self {
        let (nq, gq) = (basis.nq, basis.gq);
        Self {
            interp_t: transpose(&basis.interp, gq, nq),
            diff_t: transpose(&basis.diff, nq, nq),
            gl_diff_t: transpose(&basis.gl_diff, gq, gq),
            basis,
        }
    }
}

/// Per-thread work arrays.
#[derive(Default)]
struct Work {
    scratch: Vec<f64>,
    u: Vec<f64>,
    d: [Vec<f64>; 3],
    t: Vec<f64>,
}

/// `y_e = A_e x_e` for every element `e`; `factors` from
/// [`super::geometry::geometric_factors`] at the problem's points.
pub fn apply_elements(problem: Problem, t: &CpuTables, factors: &[f64], lambda: f64, x: &[f64], y: &mut [f64]) {
    let np = t.basis.nq.pow(3);
    let p = problem.points().per_direction(&t.basis).pow(3);
    y.par_chunks_mut(np).zip(x.par_chunks(np)).enumerate().for_each_init(Work::default, |w, (e, (ye, xe))| {
        let g = &factors[e * NGEO * p..][..NGEO * p];
        match problem {
            Problem::Bp1 => bp1(t, g, xe, ye, w),
            Problem::Bp35 => bp35(t, g, lambda, xe, ye, w),
            Problem::Bp30 => bp30(t, g, lambda, xe, ye, w),
        }
    });
}

/// Mass with GL quadrature: interpolate, scale by w·J, project.
fn bp1(t: &CpuTables, g: &[f64], x: &[f64], y: &mut [f64], w: &mut Work) {
    let (nq, gq) = (t.basis.nq, t.basis.gq);
    let gp = gq * gq * gq;
    w.u.resize(gp, 0.0);
    let i = (t.basis.interp.as_slice(), gq);
    contract3(i, i, i, [nq; 3], x, &mut w.u, &mut w.scratch);
    for (n, u) in w.u.iter_mut().enumerate() {
        *u *= g[fem_core::tensor::GWJ * gp + n];
    }
    let it = (t.interp_t.as_slice(), nq);
    contract3(it, it, it, [gq; 3], &w.u, y, &mut w.scratch);
}

/// The screened Poisson operator on `n³` points of values `u` with the
/// differentiation matrix `d` (and its transpose `dt`): reference
/// gradient, metric, transposed gradient, plus the mass term; into `out`.
#[allow(clippy::too_many_arguments)]
fn stiffness(n: usize, d: &[f64], dt: &[f64], g: &[f64], lambda: f64, u: &[f64], out: &mut [f64], w: &mut Work) {
    let p = n * n * n;
    for a in 0..3 {
        w.d[a].resize(p, 0.0);
        apply_axis(d, n, a, [n; 3], u, &mut w.d[a]);
    }
    for k in 0..p {
        let gk: [f64; NGEO] = core::array::from_fn(|f| g[f * p + k]);
        let (gr, gs, gt, m) = apply_metric(&gk, lambda, u[k], w.d[0][k], w.d[1][k], w.d[2][k]);
        (w.d[0][k], w.d[1][k], w.d[2][k], out[k]) = (gr, gs, gt, m);
    }
    w.t.resize(p, 0.0);
    for a in 0..3 {
        apply_axis(dt, n, a, [n; 3], &w.d[a], &mut w.t);
        out.iter_mut().zip(&w.t).for_each(|(o, v)| *o += v);
    }
}

/// Screened Poisson with GLL collocation.
fn bp35(t: &CpuTables, g: &[f64], lambda: f64, x: &[f64], y: &mut [f64], w: &mut Work) {
    stiffness(t.basis.nq, &t.basis.diff, &t.diff_t, g, lambda, x, y, w);
}

/// Screened Poisson with GL quadrature: interpolate, the GL-point
/// operator, project.
fn bp30(t: &CpuTables, g: &[f64], lambda: f64, x: &[f64], y: &mut [f64], w: &mut Work) {
    let (nq, gq) = (t.basis.nq, t.basis.gq);
    let gp = gq * gq * gq;
    let mut u = std::mem::take(&mut w.u);
    u.resize(gp, 0.0);
    let i = (t.basis.interp.as_slice(), gq);
    contract3(i, i, i, [nq; 3], x, &mut u, &mut w.scratch);
    let mut v = vec![0.0; gp];
    stiffness(gq, &t.basis.gl_diff, &t.gl_diff_t, g, lambda, &u, &mut v, w);
    let it = (t.interp_t.as_slice(), nq);
    contract3(it, it, it, [gq; 3], &v, y, &mut w.scratch);
    w.u = u;
}
