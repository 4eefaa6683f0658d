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
//! pattern (under multigrid, the coarse levels' from it by Galerkin
//! products, [`Levels::masses`](super::precond::Levels::masses)) and
//! applied in the tangent's format: zero in fixed rows, so
//! Dirichlet rows keep their values, and in the tangent also zero in fixed
//! columns, which Newton's updates never touch. The applied M keeps its
//! fixed columns: Dirichlet values that change in time
//! ([`Constraints::dirichlet_in_time`]) enter the free rows through them
//! (M_fb ġ_b). Those rows are set on the backend to their values at each
//! step's time before its solve. A load that changes in time
//! ([`Forcing::load`]) replaces the set-up's at each time the residual is
//! evaluated (tₙ for the θ-method's explicit part, tₙ₊₁ for the solve):
//! one upload of the load per evaluation. A callback sees the solution on
//! the backend after every step (download it to write a `.pvd` series).

use super::{Extra, NewtonOps, NewtonOptions, NewtonReport, Setup, Workspace, NONE};
use crate::operator::csr::Csr;
use crate::solver::multigrid::Matrix;
use crate::space::integrate::mass_ematrices;
use crate::space::restriction::transpose_map;
use crate::space::{Constraints, Space};
use crate::sparse::SharedOut;
use rayon::prelude::*;
use crate::{CpuBackend, Error, Result};
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

/// What drives a transient problem besides its initial value.
#[derive(Clone, Copy, Default)]
pub struct Forcing<'a> {
    /// Constraints holding the set-up's rows, whose values may be
    /// functions of time ([`Constraints::dirichlet_in_time`]); without
    /// them the fixed rows keep the initial value's.
    pub boundary: Option<&'a Constraints>,
    /// The load F(t) at time `t`, written into `f` (`node·nc + component`,
    /// as [`crate::space::Load::values`]): it replaces the set-up's load.
    pub load: Option<&'a (dyn Fn(f64, &mut [f64]) + Sync)>,
}

impl<'a> Forcing<'a> {
    /// Dirichlet values (of time) from `c`, the set-up's load.
    pub fn boundary(c: &'a Constraints) -> Self {
        Self { boundary: Some(c), load: None }
    }
}

/// The load of [`Forcing::load`] on the backend, set as the residual's base
/// at the times the residual is evaluated.
struct MovingLoad<'a> {
    load: &'a (dyn Fn(f64, &mut [f64]) + Sync),
    fixed: &'a [bool],
    f: Vec<f64>,
    /// The time of the base now set.
    at: Option<f64>,
}

impl MovingLoad<'_> {
    /// Sets the residual's base to −F(t) in free rows (zero in fixed ones).
    fn set<B: NewtonOps>(&mut self, b: &B, w: &mut Workspace<B>, t: f64) -> Result<()> {
        if self.at == Some(t) {
            return Ok(());
        }
        self.f.fill(0.0);
        (self.load)(t, &mut self.f);
        super::as_residual_base(&mut self.f, self.fixed);
        w.set_residual_base(b, &self.f)?;
        self.at = Some(t);
        Ok(())
    }
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

/// The mass matrix of the element mass matrices `e` as CSR values of the
/// set-up's pattern, zero in fixed rows, and in fixed columns unless
/// `held_columns`. Rows in parallel: each sums the element rows that land
/// in it (the cells' map transposed), in the order of the cells, so every
/// value is the serial sum to the bit.
fn mass<K: Kernels<f64>>(setup: &Setup<K>, e: &[f64], held_columns: bool) -> Vec<f64> {
    let nl = setup.physics.variant.n_local();
    let (n, ne) = (setup.csr.n_rows, e.len() / (nl * nl));
    let (start, items) = transpose_map(&setup.gather[..ne * nl], n);
    let entry_pos = setup.entry_pos();
    let mut values = vec![0.0; setup.csr.nnz()];
    let out = SharedOut(values.as_mut_ptr());
    (0..n).into_par_iter().for_each(|r| {
        for &k in &items[start[r] as usize..start[r + 1] as usize] {
            let (cell, k) = (k as usize / nl, k as usize);
            for j in 0..nl {
                let q = k * nl + j;
                let p = match entry_pos[q] {
                    NONE if held_columns && !setup.fixed[r] => setup.csr.position(r, setup.gather[cell * nl + j]).expect("the pattern holds every entry of a cell"),
                    NONE => continue,
                    p => p as usize,
                };
                // SAFETY: p is in row r's entries, which only this row writes
                unsafe { *out.ptr().add(p) += e[q] };
            }
        }
    });
    values
}

/// The rows held at values of time, set on the backend before every step.
struct MovingRows<'c, B: NewtonOps> {
    constraints: &'c Constraints,
    /// Puts the m moving values into their rows of an n-vector.
    scatter: Matrix<B, f64>,
    /// 0 in moving rows, 1 elsewhere.
    keep: B::Vector<f64>,
    /// The moving values on the host and on the backend.
    values: Vec<f64>,
    device: B::Vector<f64>,
}

impl<'c, B: NewtonOps> MovingRows<'c, B> {
    /// None when no value of `c` changes in time; an error when `c` holds
    /// other rows than `setup`.
    fn new<K: Kernels<f64>>(b: &B, setup: &Setup<K>, c: &'c Constraints) -> Result<Option<Self>> {
        if c.fixed != setup.fixed {
            return Err(Error::InvalidArgument("the constraints hold other rows than the set-up was built with".into()));
        }
        let rows = c.moving_rows();
        if rows.is_empty() {
            return Ok(None);
        }
        let n = setup.n_rows();
        let mut slot = vec![NONE; n];
        rows.iter().enumerate().for_each(|(k, &r)| slot[r as usize] = k as u32);
        let mut row_ptr = vec![0u32];
        let mut col = Vec::with_capacity(rows.len());
        for &k in &slot {
            if k != NONE {
                col.push(k);
            }
            row_ptr.push(col.len() as u32);
        }
        let scatter = b.store_matrix(&Csr { n_rows: n, row_ptr, val: vec![1.0; col.len()], col }, rows.len())?;
        let keep = b.upload(&slot.iter().map(|&k| if k == NONE { 1.0 } else { 0.0 }).collect::<Vec<f64>>())?;
        Ok(Some(Self { constraints: c, scatter, keep, values: Vec::with_capacity(rows.len()), device: b.zeros(rows.len())? }))
    }

    /// Sets the moving rows of `u` to their values at `t` (`tmp` is work
    /// space): one copy of the moving values to the backend.
    fn set(&mut self, b: &B, t: f64, u: &mut B::Vector<f64>, tmp: &mut B::Vector<f64>) -> Result<()> {
        self.constraints.moving_values(t, &mut self.values);
        b.write(&self.values, &mut self.device)?;
        b.mul(u, &self.keep, tmp)?;
        self.scatter.apply(b, &self.device, u)?;
        b.axpy(1.0, tmp, u)
    }
}

/// Steps M u̇ + R(u) = 0 from `u0` at t = 0 on backend `b`. The fixed rows
/// keep `u0`'s values, except those `forcing.boundary` holds at values of
/// time, which take them at each step's time (the constraints must hold
/// the set-up's rows); `forcing.load`, if given, is the load at every
/// time instead of the set-up's. `each(step, t, u)` sees every step's
/// solution on the backend. Returns the last solution on the host.
pub fn integrate<B: NewtonOps, K: Kernels<f64> + 'static>(
    b: &B,
    setup: &Setup<K>,
    space: &Space,
    u0: &[f64],
    forcing: Forcing,
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
    let mut moving = match forcing.boundary {
        Some(c) => MovingRows::new(b, setup, c)?,
        None => None,
    };
    let mut w = Workspace::new(b, setup, &o.newton)?;
    let mut load = forcing.load.map(|load| MovingLoad { load, fixed: &setup.fixed, f: vec![0.0; setup.n_rows()], at: None });
    // the element mass matrices once, for both forms
    let e = mass_ematrices(space, setup.physics.variant.nc);
    let values = mass(setup, &e, false);
    let mass_diagonal = b.upload(&setup.diag_pos.iter().map(|&p| values[p as usize]).collect::<Vec<_>>())?;
    w.set_level_masses(b, &CpuBackend::new(None)?, setup, &values)?;
    let mass_values = b.upload(&values)?;
    let mass = w.matrix_like(b, setup, &b.upload(&mass(setup, &e, true))?)?;
    let n = setup.n_rows();
    let mut u = b.upload(u0)?;
    let (mut previous, mut rhs, mut tmp) = (b.zeros(n)?, b.zeros(n)?, b.zeros(n)?);
    // R(uₙ) of the last step's solve, for the θ-method's next explicit part
    let mut last_r: Option<B::Vector<f64>> = None;
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
                    // the first step evaluates R(u₀); later ones have
                    // R(uₙ) from the solve that gave uₙ (same time, load
                    // and rows)
                    if last_r.is_none() {
                        let t = (step - 1) as f64 * o.dt;
                        w.set_time(b, t);
                        if let Some(l) = &mut load {
                            l.set(b, &mut w, t)?;
                        }
                        w.residual_into(b, &u, &mut tmp)?;
                    }
                    b.axpy(theta - 1.0, last_r.as_ref().unwrap_or(&tmp), &mut rhs)?;
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
        let t = step as f64 * o.dt;
        if let Some(m) = &mut moving {
            m.set(b, t, &mut u, &mut tmp)?;
        }
        w.set_time(b, t);
        if let Some(l) = &mut load {
            l.set(b, &mut w, t)?;
        }
        let extra = Extra { weight, c, mass: &*mass, mass_values: &mass_values, mass_diagonal: &mass_diagonal, rhs: &rhs };
        let report = w.newton(b, &mut u, &o.newton, Some(&extra), &mut |_| {})?;
        if !report.converged {
            return Err(Error::InvalidArgument(format!("step {step}: Newton did not converge (‖R‖ {:?})", report.residuals)));
        }
        if theta.is_some_and(|theta| theta < 1.0) {
            if last_r.is_none() {
                last_r = Some(b.zeros(n)?);
            }
            w.last_physics_residual(b, &extra, last_r.as_mut().expect("allocated"))?;
        }
        steps.push(report);
        each(step, t, &u)?;
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
    use crate::problem::nonlinear::{Assembly, Precond};
    use crate::sparse::SpmvFormat;
    use fem_kernels::physics::Poisson;

    /// The heat equation u̇ − Δu = 0 (Poisson with κ = 1, f = 0) on
    /// degree-`p` triangles of `n` × `n` squares.
    fn heat(cpu: &CpuBackend, n: usize, p: usize) -> (Space, Setup<Poisson>) {
        let space = Space::simplex(&SimplexBox::unstructured(2, n, 4).build().unwrap(), p).unwrap();
        let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
        let setup = Setup::<Poisson>::with_aux(cpu, &space, Aux::Nodal(&coefficients)).unwrap();
        (space, setup)
    }

    /// The rows-in-parallel mass matrix is the serial scatter of the
    /// element matrices to the bit, with held rows and columns dropped or
    /// kept, on 1 and 3 threads (rows with many cells, shared by threads).
    #[test]
    fn mass_by_rows_is_the_serial_scatter() {
        for threads in [1, 3] {
            let cpu = CpuBackend::new(Some(threads)).unwrap();
            let (_, setup) = heat(&cpu, 7, 2);
            let nl = setup.physics.variant.n_local();
            // distinct values, so a misplaced or repeated entry shows
            let e: Vec<f64> = (0..setup.entry_len()).map(|k| 1.0 + (k % 97) as f64 / 31.0).collect();
            for held in [false, true] {
                let mut serial = vec![0.0; setup.csr.nnz()];
                for (k, (&p, v)) in setup.entry_pos().iter().zip(&e).enumerate() {
                    let (cell, i, j) = (k / (nl * nl), k / nl % nl, k % nl);
                    let (r, c) = (setup.gather[cell * nl + i] as usize, setup.gather[cell * nl + j]);
                    if p != NONE {
                        serial[p as usize] += v;
                    } else if held && !setup.fixed[r] {
                        serial[setup.csr.position(r, c).unwrap()] += v;
                    }
                }
                let by_rows = cpu.install(|| mass(&setup, &e, held));
                assert!(setup.fixed.iter().any(|&f| f) && serial.iter().any(|&v| v != 0.0));
                assert_eq!(by_rows, serial, "held columns {held}, {threads} threads");
            }
        }
    }

    /// The mass matrix of `setup`'s own level on `space`, zero in fixed
    /// rows and columns.
    fn own_mass<K: Kernels<f64>>(setup: &Setup<K>, space: &Space) -> Vec<f64> {
        mass(setup, &mass_ematrices(space, setup.physics.variant.nc), false)
    }

    /// Under multigrid each coarse level's mass matrix, the Galerkin
    /// product of the finer one's, is that level's own (nested spaces,
    /// affine cells, exact rules), zero in its fixed rows and columns: P1
    /// and P2 triangles, Q2 quadrilaterals in a shuffled numbering, and a
    /// two-component field; a finest mass of another length is refused.
    #[test]
    fn coarse_masses_are_the_levels_own() {
        use crate::space::{CellMesh, NestedSpaces};
        fn check<K: Kernels<f64>>(cpu: &CpuBackend, label: &str, setup: &Setup<K>, nested: &NestedSpaces) {
            let levels = setup.levels.as_ref().unwrap();
            let fine = own_mass(setup, nested.finest());
            let masses = levels.masses(cpu, &setup.csr, &fine).unwrap();
            assert_eq!(masses.len(), nested.levels() - 1, "{label}");
            for (l, m) in masses.iter().enumerate() {
                let want = own_mass(&levels.setups[l], &nested.spaces[l]);
                let scale = want.iter().fold(0.0f64, |a, v| a.max(v.abs()));
                let worst = m.iter().zip(&want).fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
                assert!(m.len() == want.len() && scale > 0.0 && worst < 1e-12 * scale, "{label}, level {l}: {worst:e} of {scale:e}");
            }
            assert!(levels.masses(cpu, &setup.csr, &fine[1..]).is_err(), "{label}");
        }
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let triangles = || CellMesh::Simplex(SimplexBox::unstructured(2, 2, 4).build().unwrap());
        let squares = CellMesh::Tensor(crate::mesh::BoxMesh { shuffle: true, ..crate::mesh::BoxMesh::structured(2, 2) }.build().unwrap());
        for (mesh, p, n_levels) in [(triangles(), 1, 3), (triangles(), 2, 2), (squares, 2, 2)] {
            let nested = NestedSpaces::new(mesh, p, n_levels).unwrap();
            let s = nested.finest();
            let coefficients: Vec<f64> = (0..s.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
            let setup = Setup::<Poisson>::with_aux(&cpu, s, Aux::Nodal(&coefficients)).unwrap().with_multigrid(&cpu, &nested).unwrap();
            check(&cpu, &format!("Poisson p = {p}"), &setup, &nested);
        }
        let nested = NestedSpaces::new(triangles(), 1, 3).unwrap();
        let s = nested.finest();
        let lame: Vec<f64> = (0..s.n_cells()).flat_map(|_| [1.0, 0.5]).collect();
        let setup = Setup::<fem_kernels::physics::Elasticity>::with_aux(&cpu, s, Aux::Cell(&lame)).unwrap().with_multigrid(&cpu, &nested).unwrap();
        check(&cpu, "elasticity", &setup, &nested);
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
            let (u, r) = integrate(&cpu, &setup, &space, &u0, Forcing::default(), &o, &mut |_, _, _| {
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

    /// u = (1 + t)(x + 2y) solves u̇ − Δu = x + 2y with the boundary
    /// values it takes, which grow in time: linear in x and in t, so every
    /// scheme gives it to the solver's tolerance on P1 and P2, which fails
    /// if the boundary rows lag a step or the mass matrix drops the
    /// boundary's ġ from the free rows.
    #[test]
    fn boundary_values_in_time_give_an_exact_solution() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let exact = |x: &[f64; 3], t: f64| (1.0 + t) * (x[0] + 2.0 * x[1]);
        for p in [1, 2] {
            let space = Space::simplex(&SimplexBox::unstructured(2, 4, 4).build().unwrap(), p).unwrap();
            let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
            let c = Constraints::none(&space, 1).dirichlet_in_time(&space, &crate::space::BoundaryPart::All, move |x, t, v| v[0] = exact(x, t)).unwrap();
            let load = crate::space::Load::zero(&space, 1).source(&space, |x, v| v[0] = x[0] + 2.0 * x[1]);
            let setup = Setup::<Poisson>::constrained(&cpu, &space, Aux::Nodal(&coefficients), &c, Some(&load)).unwrap();
            let u0 = space.interpolate(1, |x, o| o[0] = exact(x, 0.0));
            // the tangent assembled, and as element matrices (c · M applied beside them)
            for (scheme, assembly) in [Scheme::Theta(1.0), Scheme::Theta(0.5), Scheme::Bdf2].into_iter().flat_map(|s| [(s, Assembly::Sparse(SpmvFormat::Csr)), (s, Assembly::Lma)]) {
                let o = TimeOptions { dt: 0.1, steps: 5, scheme, newton: NewtonOptions { rtol: 1e-13, krylov_rtol: 1e-14, assembly, ..Default::default() } };
                let mut worst = 0.0f64;
                integrate(&cpu, &setup, &space, &u0, Forcing::boundary(&c), &o, &mut |_, t, u| {
                    let err = u.iter().zip(&space.dof_coords).fold(0.0f64, |m, (v, x)| m.max((v - exact(x, t)).abs()));
                    worst = worst.max(err);
                    Ok(())
                })
                .unwrap();
                assert!(worst < 1e-10, "P{p} {scheme:?} {assembly}: {worst:e}");
                // held at their values at t = 0 instead, the rows are wrong
                let (u, _) = integrate(&cpu, &setup, &space, &u0, Forcing::default(), &o, &mut |_, _, _| Ok(())).unwrap();
                let lag = u.iter().zip(&space.dof_coords).fold(0.0f64, |m, (v, x)| m.max((v - exact(x, 0.5)).abs()));
                assert!(lag > 0.1, "P{p} {scheme:?}: {lag:e}");
            }
        }
    }

    /// u = (1 + t)(x² + 2y²) solves u̇ − Δu = f with the source f = x² +
    /// 2y² − 6(1 + t) and its own boundary values: with the load given as
    /// a function of time, P2 and every scheme reproduce it (P2 holds u,
    /// the schemes are exact for u linear in t); held at its value at t =
    /// 0, the load gives another solution.
    #[test]
    fn a_load_in_time_gives_an_exact_solution() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let q = |x: &[f64; 3]| x[0] * x[0] + 2.0 * x[1] * x[1];
        let exact = move |x: &[f64; 3], t: f64| (1.0 + t) * q(x);
        let space = Space::simplex(&SimplexBox::unstructured(2, 4, 4).build().unwrap(), 2).unwrap();
        let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
        let c = Constraints::none(&space, 1).dirichlet_in_time(&space, &crate::space::BoundaryPart::All, move |x, t, v| v[0] = exact(x, t)).unwrap();
        let source = |t: f64| crate::space::Load::zero(&space, 1).source(&space, |x, v| v[0] = q(x) - 6.0 * (1.0 + t));
        let setup = Setup::<Poisson>::constrained(&cpu, &space, Aux::Nodal(&coefficients), &c, Some(&source(0.0))).unwrap();
        let u0 = space.interpolate(1, |x, o| o[0] = exact(x, 0.0));
        let load = |t: f64, f: &mut [f64]| f.copy_from_slice(&source(t).values);
        for scheme in [Scheme::Theta(1.0), Scheme::Theta(0.5), Scheme::Bdf2] {
            let o = TimeOptions { dt: 0.1, steps: 5, scheme, newton: NewtonOptions { rtol: 1e-13, krylov_rtol: 1e-14, ..Default::default() } };
            let error = |forcing: Forcing| {
                let (u, _) = integrate(&cpu, &setup, &space, &u0, forcing, &o, &mut |_, _, _| Ok(())).unwrap();
                u.iter().zip(&space.dof_coords).fold(0.0f64, |m, (v, x)| m.max((v - exact(x, 0.5)).abs()))
            };
            let moving = error(Forcing { boundary: Some(&c), load: Some(&load) });
            assert!(moving < 1e-10, "{scheme:?}: {moving:e}");
            let held = error(Forcing::boundary(&c));
            assert!(held > 1e-3, "{scheme:?}: {held:e}");
        }
    }

    /// u̇ − Δu = f with the source f = q − 6(1 + t) in f0 and the flux
    /// ∂u/∂n = (1 + t) ∇q·n through the right side in bf0, both functions
    /// of the point's time, for u = (1 + t) q, q = x² + 2y².
    #[fem_macros::fem_kernel(components = 1, elements(tri(p = 2, q = 6)), precision(f64))]
    mod timed_heat {
        use fem_core::Real;

        fn q<T: Real, const D: usize>(x: &[T; D]) -> T {
            x[0] * x[0] + T::from_f64(2.0) * x[1] * x[1]
        }

        pub fn f0<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], x: &[T; D], t: T) -> [T; 1] {
            [T::from_f64(6.0) * (T::ONE + t) - q(x)]
        }

        pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[T; D]; 1] {
            [du[0]]
        }

        pub fn g3<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[[[T; D]; D]; 1]; 1] {
            [[core::array::from_fn(|d| core::array::from_fn(|g| if d == g { T::ONE } else { T::ZERO }))]]
        }

        pub fn bf0<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], x: &[T; D], n: &[T; D], t: T) -> [T; 1] {
            let flux = T::from_f64(2.0) * x[0] * n[0] + T::from_f64(4.0) * x[1] * n[1];
            [-(T::ONE + t) * flux]
        }
    }

    /// The pointwise functions see each evaluation's time: with the source
    /// and the flux as functions of `t` in the physics, P2 and every scheme
    /// (the θ-method's explicit part at tₙ, the solve at tₙ₊₁), with Jacobi
    /// or multigrid, reproduce u = (1 + t) q.
    #[test]
    fn pointwise_functions_see_the_time() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let q = |x: &[f64; 3]| x[0] * x[0] + 2.0 * x[1] * x[1];
        let exact = move |x: &[f64; 3], t: f64| (1.0 + t) * q(x);
        let mesh = crate::space::CellMesh::Simplex(SimplexBox::unstructured(2, 2, 4).build().unwrap());
        let nested = crate::space::NestedSpaces::new(mesh, 2, 2).unwrap();
        let space = nested.finest();
        let right = crate::space::BoundaryPart::at("right", |x| (x[0] - 1.0).abs() < 1e-12);
        let rest = crate::space::BoundaryPart::at("rest", |x| (x[0] - 1.0).abs() > 1e-12);
        let c = Constraints::none(space, 1).dirichlet_in_time(space, &rest, move |x, t, v| v[0] = exact(x, t)).unwrap();
        let setup = Setup::<timed_heat::TimedHeat>::constrained(&cpu, space, Aux::None, &c, None).unwrap().with_boundary_term(space, &right).unwrap();
        let setup = setup.with_multigrid(&cpu, &nested).unwrap();
        let u0 = space.interpolate(1, |x, o| o[0] = exact(x, 0.0));
        for (scheme, precond) in [(Scheme::Theta(1.0), Precond::Jacobi), (Scheme::Theta(0.5), Precond::multigrid()), (Scheme::Bdf2, Precond::multigrid())] {
            let o = TimeOptions { dt: 0.1, steps: 5, scheme, newton: NewtonOptions { rtol: 1e-13, krylov_rtol: 1e-14, precond, ..Default::default() } };
            let mut worst = 0.0f64;
            integrate(&cpu, &setup, space, &u0, Forcing::boundary(&c), &o, &mut |_, t, u| {
                worst = u.iter().zip(&space.dof_coords).fold(worst, |m, (v, x)| m.max((v - exact(x, t)).abs()));
                Ok(())
            })
            .unwrap();
            assert!(worst < 1e-10, "{scheme:?}: {worst:e}");
        }
    }

    /// Moving values follow the last part that holds a row, and the time
    /// stepper refuses constraints that hold other rows than its set-up.
    #[test]
    fn moving_rows_follow_the_last_part_and_must_match_the_setup() {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let (space, setup) = heat(&cpu, 3, 1);
        let left = crate::space::BoundaryPart::at("left", |x| x[0] < 1e-12);
        let c = Constraints::none(&space, 1)
            .dirichlet_in_time(&space, &crate::space::BoundaryPart::All, |_, t, v| v[0] = t)
            .unwrap()
            .dirichlet(&space, &left, |_, v| v[0] = 5.0)
            .unwrap();
        let rows = c.moving_rows();
        let mut values = Vec::new();
        c.moving_values(2.0, &mut values);
        assert_eq!(rows.len() + space.dof_coords.iter().filter(|x| x[0] < 1e-12).count(), c.n_fixed());
        assert!(rows.iter().all(|&r| space.dof_coords[r as usize][0] > 1e-12) && values.iter().all(|&v| v == 2.0));
        let o = TimeOptions { dt: 0.1, steps: 1, scheme: Scheme::Bdf2, newton: NewtonOptions::default() };
        let u0 = vec![0.0; space.n_dofs];
        let (u, _) = integrate(&cpu, &setup, &space, &u0, Forcing::boundary(&c), &o, &mut |_, _, _| Ok(())).unwrap();
        assert!(rows.iter().all(|&r| (u[r as usize] - 0.1).abs() < 1e-15));
        let fewer = Constraints::none(&space, 1).dirichlet_in_time(&space, &left, |_, t, v| v[0] = t).unwrap();
        let e = integrate(&cpu, &setup, &space, &u0, Forcing::boundary(&fewer), &o, &mut |_, _, _| Ok(())).unwrap_err();
        assert!(e.to_string().contains("other rows"), "{e}");
    }

    #[test]
    fn bad_steps_are_errors() {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let (space, setup) = heat(&cpu, 2, 1);
        let u0 = vec![0.0; space.n_dofs];
        for (dt, scheme) in [(0.0, Scheme::Bdf2), (0.1, Scheme::Theta(0.0)), (0.1, Scheme::Theta(1.5))] {
            let o = TimeOptions { dt, steps: 1, scheme, newton: NewtonOptions::default() };
            assert!(integrate(&cpu, &setup, &space, &u0, Forcing::default(), &o, &mut |_, _, _| Ok(())).is_err());
        }
    }
}
