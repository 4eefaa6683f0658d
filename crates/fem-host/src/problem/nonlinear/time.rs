//! Time stepping of M u̇ + R(u) = 0 for a `#[fem_kernel]` physics (R its
//! residual less the load, M the mass matrix of the field), each step a
//! Newton solve on the backend with the mass terms added:
//!
//! * θ-method: M (u − uₙ)/Δt + θ R(u) + (1 − θ) R(uₙ) = 0 (θ = 1 backward
//!   Euler, θ = ½ Crank–Nicolson);
//! * BDF2: M (3u − 4uₙ + uₙ₋₁)/(2Δt) + R(u) = 0, its first step backward
//!   Euler.
//!
//! The mass matrix is assembled once on the host into the tangent's
//! pattern (zero in fixed rows and columns, so Dirichlet rows keep their
//! values) and applied in the tangent's format; a callback sees the
//! solution on the backend after every step (download it to write a
//! `.pvd` series).

use super::{Extra, NewtonOps, NewtonOptions, NewtonReport, Setup, Workspace, NONE};
use crate::space::integrate::mass_ematrices;
use crate::space::NodalSpace;
use crate::{Error, Result};
use fem_kernels::pointwise::Kernels;
use serde::Serialize;
use std::time::Instant;

/// The time discretisation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Scheme {
    /// The θ-method, θ in (0, 1].
    Theta(f64),
    /// Second-order backward differences.
    Bdf2,
}

/// How far and how.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TimeOptions {
    /// The time step.
    pub dt: f64,
    /// Steps to take.
    pub steps: usize,
    /// The scheme.
    pub scheme: Scheme,
    /// Newton's options for each step.
    pub newton: NewtonOptions,
}

/// What the steps did.
#[derive(Clone, Debug, Serialize)]
pub struct TimeReport {
    /// Seconds of the set-up on the backend (uploads, formats, mass matrix).
    pub setup_seconds: f64,
    /// Each step's Newton solve.
    pub steps: Vec<NewtonReport>,
    /// Seconds of all the steps.
    pub step_seconds: f64,
}

/// The mass matrix of the set-up's field as CSR values of its pattern,
/// zero in fixed rows and columns.
pub fn mass_values<K: Kernels<f64>>(setup: &Setup<K>, space: &NodalSpace) -> Vec<f64> {
    let e = mass_ematrices(space, setup.physics.variant.nc);
    let mut values = vec![0.0; setup.csr.nnz()];
    for (&p, v) in setup.entry_pos.iter().zip(&e) {
        if p != NONE {
            values[p as usize] += v;
        }
    }
    values
}

/// Steps M u̇ + R(u) = 0 from `u0` (its fixed rows hold the Dirichlet
/// values, kept) on backend `b`; `each(step, t, u)` sees every step's
/// solution on the backend. Returns the last solution on the host.
pub fn integrate<B: NewtonOps, K: Kernels<f64> + 'static>(
    b: &B,
    setup: &Setup<K>,
    space: &NodalSpace,
    u0: &[f64],
    o: &TimeOptions,
    each: &mut dyn FnMut(usize, f64, &B::Vector<f64>) -> Result<()>,
) -> Result<(Vec<f64>, TimeReport)> {
    crate::error::same_len("initial value", u0.len(), setup.n_rows())?;
    if !(o.dt > 0.0 && o.dt.is_finite()) {
        return Err(Error::InvalidArgument(format!("time step {} must be positive", o.dt)));
    }
    if let Scheme::Theta(theta) = o.scheme {
        if !(theta > 0.0 && theta <= 1.0) {
            return Err(Error::InvalidArgument(format!("θ = {theta} outside (0, 1]")));
        }
    }
    let start = Instant::now();
    let mut w = Workspace::new(b, setup, o.newton.precond)?;
    let mass_values = b.upload(&mass_values(setup, space))?;
    let mass = w.matrix_like(b, setup, &mass_values)?;
    let n = setup.n_rows();
    let mut u = b.upload(u0)?;
    let (mut previous, mut rhs, mut tmp) = (b.zeros(n)?, b.zeros(n)?, b.zeros(n)?);
    b.synchronize()?;
    let setup_seconds = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut steps = Vec::with_capacity(o.steps);
    for step in 1..=o.steps {
        let theta = match o.scheme {
            Scheme::Theta(theta) => Some(theta),
            Scheme::Bdf2 if step == 1 => Some(1.0),
            Scheme::Bdf2 => None,
        };
        let (weight, c) = match theta {
            Some(theta) => {
                // rhs = M uₙ/Δt − (1 − θ) R(uₙ)
                b.axpby(1.0 / o.dt, &u, 0.0, &mut tmp)?;
                mass.apply(b, &tmp, &mut rhs)?;
                if theta < 1.0 {
                    w.residual_into(b, &u, &mut tmp)?;
                    b.axpy(theta - 1.0, &tmp, &mut rhs)?;
                }
                (theta, 1.0 / o.dt)
            }
            None => {
                // rhs = M (4uₙ − uₙ₋₁)/(2Δt)
                b.axpby(2.0 / o.dt, &u, -0.5 / o.dt, &mut previous)?;
                mass.apply(b, &previous, &mut rhs)?;
                (1.0, 1.5 / o.dt)
            }
        };
        b.copy(&u, &mut previous)?;
        let extra = Extra { weight, c, mass: &*mass, mass_values: &mass_values, rhs: &rhs };
        let report = w.newton(b, &mut u, &o.newton, Some(&extra), &mut |_| {})?;
        if !report.converged {
            return Err(Error::InvalidArgument(format!("step {step}: Newton did not converge (‖R‖ {:?})", report.residuals)));
        }
        steps.push(report);
        each(step, step as f64 * o.dt, &u)?;
    }
    let report = TimeReport { setup_seconds, steps, step_seconds: start.elapsed().as_secs_f64() };
    Ok((b.download(&u)?, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::simplex::SimplexBox;
    use crate::operator::pointwise::Aux;
    use crate::space::integrate::l2_error;
    use crate::CpuBackend;
    use fem_kernels::physics::Poisson;

    /// The heat equation u̇ − Δu = 0 (Poisson with κ = 1, f = 0) on
    /// degree-`p` triangles of `n` × `n` squares.
    fn heat(cpu: &CpuBackend, n: usize, p: usize) -> (NodalSpace, Setup<Poisson>) {
        let space = NodalSpace::simplex(&SimplexBox::unstructured(2, n, 4).build().unwrap(), p).unwrap();
        let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
        let setup = Setup::<Poisson>::with_aux(cpu, &space, Aux::Nodal(&coefficients)).unwrap();
        (space, setup)
    }

    /// u_t = Δu, u = 0 on the boundary, u(0) = sin πx sin πy: the error at
    /// t = T against a reference with a tiny step falls at order 1 for
    /// backward Euler and 2 for Crank–Nicolson and BDF2; the solution
    /// decays like the exact e^(−2π² t).
    #[test]
    fn heat_equation_converges_at_the_schemes_orders() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let (space, setup) = heat(&cpu, 6, 2);
        let pi = std::f64::consts::PI;
        let u0 = space.interpolate(1, |x, o| o[0] = (pi * x[0]).sin() * (pi * x[1]).sin());
        let t_end = 0.05;
        let run = |scheme: Scheme, steps: usize| {
            let o = TimeOptions { dt: t_end / steps as f64, steps, scheme, newton: NewtonOptions { rtol: 1e-12, krylov_rtol: 1e-13, ..Default::default() } };
            let mut seen = 0;
            let (u, r) = integrate(&cpu, &setup, &space, &u0, &o, &mut |_, _, _| {
                seen += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!((seen, r.steps.len()), (steps, steps));
            u
        };
        let reference = run(Scheme::Bdf2, 1024);
        let exact = (-2.0 * pi * pi * t_end).exp();
        let decay = l2_error(&space, 1, &reference, |x, e| e[0] = exact * (pi * x[0]).sin() * (pi * x[1]).sin()) / 0.5;
        assert!(decay < 0.02 * exact, "the discrete solution decays as e^(−2π²t): {decay:e}");
        for (scheme, order) in [(Scheme::Theta(1.0), 1.0), (Scheme::Theta(0.5), 2.0), (Scheme::Bdf2, 2.0)] {
            let err = |steps| run(scheme, steps).iter().zip(&reference).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            let (e1, e2) = (err(16), err(32));
            let rate = (e1 / e2).log2();
            assert!((rate - order).abs() < 0.3, "{scheme:?}: {e1:e} → {e2:e}, order {rate}");
        }
    }

    #[test]
    fn bad_steps_are_errors() {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let (space, setup) = heat(&cpu, 2, 1);
        let u0 = vec![0.0; space.n_dofs];
        for (dt, scheme) in [(0.0, Scheme::Bdf2), (0.1, Scheme::Theta(0.0)), (0.1, Scheme::Theta(1.5))] {
            let o = TimeOptions { dt, steps: 1, scheme, newton: NewtonOptions::default() };
            assert!(integrate(&cpu, &setup, &space, &u0, &o, &mut |_, _, _| Ok(())).is_err());
        }
    }
}
