//! Cardiac electrophysiology: the Aliev–Panfilov monodomain model in the
//! global–local form of Göktepe & Kuhl used by Wong, Kuhl & Darve (§2).
//!
//! φ̇ = div(D∇φ) + f^φ(φ, r) + I,  ṙ = f^r(φ, r), with
//! f^φ = cφ(φ − α)(1 − φ) − rφ and
//! f^r = (γ + μ₁r/(μ₂ + φ))(−r − cφ(φ − b − 1)),
//! D = d_iso I + d_ani n⊗n, backward Euler in time. The recovery variable
//! r lives at the quadrature points and is not a global unknown: at each
//! point it solves its own backward-Euler equation by a local Newton
//! iteration ([`recovery`]) given φ there, so the global residual in φ
//! alone is pointwise
//! f0 = (φ − φₙ)/Δt − f^φ(φ, r(φ)) − I,  f1 = D∇φ,
//! and its consistent tangent g0 = 1/Δt − d f^φ/dφ (including dr/dφ of the
//! local solve), g3 = D, symmetric as the paper needs for CG.
//!
//! With one quadrature point per P1 cell (the paper's reduced integration)
//! the point data are per cell: the auxiliary fields are P0 and hold the
//! point's history (φₙ, rₙ), the stimulus, the time step and the
//! conductivities and fibre direction of the cell.

use fem_core::Real;
use fem_macros::fem_kernel;

/// Excitation threshold α (Göktepe & Kuhl 2009).
pub const ALPHA: f64 = 0.01;
/// Recovery rate γ.
pub const GAMMA: f64 = 0.002;
/// Recovery offset b.
pub const B: f64 = 0.15;
/// Excitation rate c.
pub const C: f64 = 8.0;
/// Recovery coefficient μ₁ of the φ-dependent recovery rate μ₁r/(μ₂ + φ).
pub const MU1: f64 = 0.2;
/// Recovery coefficient μ₂ of the φ-dependent recovery rate μ₁r/(μ₂ + φ).
pub const MU2: f64 = 0.3;

/// Auxiliary field indices (per cell).
pub const PHI_N: usize = 0;
/// Recovery variable rₙ at the point, previous time step.
pub const R_N: usize = 1;
/// Applied current I during the step.
pub const STIMULUS: usize = 2;
/// Time step Δt.
pub const DT: usize = 3;
/// Isotropic conductivity d_iso.
pub const D_ISO: usize = 4;
/// Extra conductivity d_ani along the fibre direction n.
pub const D_ANI: usize = 5;
/// First of the three fibre components (the first `D` are used).
pub const FIBRE: usize = 6;
/// Auxiliary values per cell.
pub const AUX: usize = 9;

/// Most local Newton iterations; the iteration converges quadratically
/// from the previous step's r, in 3 to 5 iterations in practice.
pub const LOCAL_ITERATIONS: usize = 30;

#[inline(always)]
fn k<T: Real>(v: f64) -> T {
    T::from_f64(v)
}

/// f^φ(φ, r).
#[inline(always)]
pub fn f_phi<T: Real>(phi: T, r: T) -> T {
    k::<T>(C) * phi * (phi - k(ALPHA)) * (T::ONE - phi) - r * phi
}

/// ∂f^φ/∂φ at fixed r.
#[inline(always)]
pub fn df_phi_dphi<T: Real>(phi: T, r: T) -> T {
    k::<T>(C) * (k::<T>(-3.0) * phi * phi + k::<T>(2.0 * (1.0 + ALPHA)) * phi - k(ALPHA)) - r
}

/// f^r(φ, r) and its partial derivatives (∂/∂φ, ∂/∂r).
#[inline(always)]
pub fn f_r<T: Real>(phi: T, r: T) -> (T, T, T) {
    let inv = T::ONE / (k::<T>(MU2) + phi);
    let eps = k::<T>(GAMMA) + k::<T>(MU1) * r * inv;
    let g = -r - k::<T>(C) * phi * (phi - k::<T>(B + 1.0));
    let d_eps_dphi = -k::<T>(MU1) * r * inv * inv;
    let dg_dphi = -k::<T>(C) * (phi + phi - k::<T>(B + 1.0));
    (eps * g, d_eps_dphi * g + eps * dg_dphi, k::<T>(MU1) * inv * g - eps)
}

/// The local backward-Euler residual Rʳ = (r − rₙ)/Δt − f^r(φ, r) and its
/// derivative Kʳ = dRʳ/dr.
#[inline(always)]
pub fn recovery_residual<T: Real>(phi: T, r: T, r_n: T, dt: T) -> (T, T) {
    let (f, _, df_dr) = f_r(phi, r);
    ((r - r_n) / dt - f, T::ONE / dt - df_dr)
}

/// The local solve at one point.
#[derive(Clone, Copy, Debug)]
pub struct Recovery<T> {
    /// r at the new time.
    pub r: T,
    /// dr/dφ of the converged local solve (implicit function theorem).
    pub dr_dphi: T,
    /// Newton steps taken, at most [`LOCAL_ITERATIONS`].
    pub iterations: usize,
}

/// Solves Rʳ(r) = 0 by Newton from rₙ: the paper's local iteration.
#[inline(always)]
pub fn recovery<T: Real>(phi: T, r_n: T, dt: T) -> Recovery<T> {
    let mut r = r_n;
    let mut iterations = 0;
    let tol = T::EPSILON * k::<T>(16.0);
    while iterations < LOCAL_ITERATIONS {
        let (res, tangent) = recovery_residual(phi, r, r_n, dt);
        let step = res / tangent;
        r -= step;
        iterations += 1;
        if step.abs() <= tol * (T::ONE + r.abs()) {
            break;
        }
    }
    let (_, dfr_dphi, _) = f_r(phi, r);
    let (_, tangent) = recovery_residual(phi, r, r_n, dt);
    Recovery { r, dr_dphi: dfr_dphi / tangent, iterations }
}

/// The total source f^φ(φ, r(φ)) and its total derivative in φ.
#[inline(always)]
pub fn source<T: Real>(phi: T, a: &[T]) -> (T, T) {
    let rec = recovery(phi, a[R_N], a[DT]);
    (f_phi(phi, rec.r), df_phi_dphi(phi, rec.r) - phi * rec.dr_dphi)
}

/// D v with D = d_iso I + d_ani n⊗n.
#[inline(always)]
pub fn diffusion<T: Real, const D: usize>(a: &[T], v: &[T; D]) -> [T; D] {
    let mut nv = T::ZERO;
    for d in 0..D {
        nv += a[FIBRE + d] * v[d];
    }
    core::array::from_fn(|d| a[D_ISO] * v[d] + a[D_ANI] * nv * a[FIBRE + d])
}

/// After a converged time step, moves one cell's point history forward:
/// φₙ ← φ at its point (the mean of its P1 values, the value at the
/// centroid, the one-point rule's point), rₙ ← r(φ) and the stimulus of
/// the next step.
#[inline(always)]
pub fn advance_cell<T: Real>(u: &[T], a: &mut [T], stimulus: T) {
    let mut phi = T::ZERO;
    for &v in u {
        phi += v;
    }
    phi = phi / T::from_f64(u.len() as f64);
    a[R_N] = recovery(phi, a[R_N], a[DT]).r;
    a[PHI_N] = phi;
    a[STIMULUS] = stimulus;
}

/// Potential at which a node counts as activated.
pub const ACTIVATION: f64 = 0.5;

/// A node's activation time after a step from `prev` to `phi` ending at
/// time `t`: the first time φ passes [`ACTIVATION`], interpolated
/// linearly within the step of length `dt`, else unchanged (negative: not
/// yet). The interpolation keeps measured wave speeds free of the time
/// step's granularity.
#[inline(always)]
pub fn activation<T: Real>(prev: T, phi: T, t: T, dt: T, act: T) -> T {
    let level = k::<T>(ACTIVATION);
    if act < T::ZERO && phi > level {
        let back = if prev < level { (phi - level) / (phi - prev) } else { T::ZERO };
        t - back * dt
    } else {
        act
    }
}

/// The monodomain residual in φ with the recovery variable eliminated by the
/// local solve; P1 triangles and tetrahedra with one point per cell, `f64`.
#[fem_kernel(
    physics = Monodomain,
    components = 1,
    aux = 9,
    aux_space = cell,
    elements(tri(p = 1, q = 1), tet(p = 1, q = 1)),
    precision(f64),
    gpu_cfg(feature = "entry-points")
)]
pub mod monodomain {
    use super::{diffusion, source, DT, PHI_N, STIMULUS};
    use fem_core::Real;

    /// f0 = (φ − φₙ)/Δt − f^φ(φ, r(φ)) − I.
    pub fn f0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 9], _da: &[[T; D]; 9], _x: &[T; D]) -> [T; 1] {
        let (f, _) = source(u[0], a);
        [(u[0] - a[PHI_N]) / a[DT] - f - a[STIMULUS]]
    }

    /// f1 = D∇φ, the anisotropic diffusive flux.
    pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], a: &[T; 9], _da: &[[T; D]; 9], _x: &[T; D]) -> [[T; D]; 1] {
        [diffusion(a, &du[0])]
    }

    /// g0 = 1/Δt − d f^φ/dφ, the total derivative through the local solve.
    pub fn g0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 9], _da: &[[T; D]; 9], _x: &[T; D]) -> [[T; 1]; 1] {
        let (_, df) = source(u[0], a);
        [[T::ONE / a[DT] - df]]
    }

    /// g3 = D = d_iso I + d_ani n⊗n, symmetric and independent of φ.
    pub fn g3<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 9], _da: &[[T; D]; 9], _x: &[T; D]) -> [[[[T; D]; D]; 1]; 1] {
        [[core::array::from_fn(|d| {
            let mut e = [T::ZERO; D];
            e[d] = T::ONE;
            diffusion(a, &e)
        })]]
    }
}

pub use monodomain::Monodomain;

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    #[test]
    fn local_newton_converges_quadratically() {
        // Points across the upstroke and the plateau, large and small steps.
        for &(phi, r_n, dt) in &[(0.5, 0.0, 0.1), (0.9, 0.3, 1.0), (0.05, 1.2, 0.5), (0.2, 2.0, 2.0)] {
            let mut r: f64 = r_n;
            let mut errs = Vec::new();
            let exact = recovery(phi, r_n, dt).r;
            for _ in 0..8 {
                errs.push((r - exact).abs());
                let (res, tangent) = recovery_residual(phi, r, r_n, dt);
                r -= res / tangent;
            }
            assert!(recovery_residual(phi, exact, r_n, dt).0.abs() < 1e-13, "not solved at {phi}, {r_n}, {dt}");
            // e_{k+1} ≤ C e_k² with a moderate C while the error is above rounding.
            let pairs: Vec<(f64, f64)> = errs.windows(2).filter(|w| w[0] > 1e-7).map(|w| (w[0], w[1])).collect();
            assert!(!pairs.is_empty(), "started converged at {phi}, {r_n}, {dt}");
            for (e0, e1) in pairs {
                assert!(e1 <= 10.0 * e0 * e0, "not quadratic at ({phi}, {r_n}, {dt}): {e0:e} → {e1:e}");
            }
        }
    }

    #[test]
    fn derivatives_match_finite_differences() {
        let h = 1e-6;
        for &(phi, r) in &[(0.3, 0.1), (0.8, 1.0), (-0.05, 0.4)] {
            let fd = (f_phi(phi + h, r) - f_phi(phi - h, r)) / (2.0 * h);
            assert!((fd - df_phi_dphi(phi, r)).abs() < 1e-7);
            let (_, dphi, dr) = f_r(phi, r);
            let fdp = (f_r(phi + h, r).0 - f_r(phi - h, r).0) / (2.0 * h);
            let fdr = (f_r(phi, r + h).0 - f_r(phi, r - h).0) / (2.0 * h);
            assert!((fdp - dphi).abs() < 1e-6 && (fdr - dr).abs() < 1e-6, "{fdp} {dphi} {fdr} {dr}");
            // dr/dφ of the local solve and the total source derivative.
            let a = [0.0, r, 0.0, 0.5, 1.0, 0.0, 1.0, 0.0, 0.0];
            let total = (source(phi + h, &a).0 - source(phi - h, &a).0) / (2.0 * h);
            assert!((total - source(phi, &a).1).abs() < 1e-6, "{total} vs {}", source(phi, &a).1);
        }
    }

    #[test]
    fn rest_is_an_equilibrium_and_excitation_grows() {
        assert_eq!(f_phi(0.0, 0.0), 0.0);
        assert_eq!(f_r(0.0, 0.0).0, 0.0);
        // Below the threshold φ decays, above it grows.
        assert!(f_phi(0.5 * ALPHA, 0.0) < 0.0);
        assert!(f_phi(2.0 * ALPHA, 0.0) > 0.0);
    }
}
