//! Cardiac electrophysiology (Wong, Kuhl & Darve §2): the Aliev–Panfilov
//! monodomain model on P1 tetrahedra (or triangles) with one-point
//! integration, backward Euler in time, and the global–local Newton
//! scheme of the paper's Table 1.
//!
//! Each time step runs a global Newton iteration on the nodal potential φ:
//! the pipeline's Newton solver ([`crate::problem::nonlinear`]) on the
//! `#[fem_kernel]` physics [`fem_kernels::physics::cardiac`], whose
//! pointwise functions solve the local Newton problem for the recovery
//! variable r at the integration point, and whose per-cell auxiliary
//! fields hold the point histories. Element residuals and matrices are
//! summed either by SpMV with the ELL-WARP (or cuSPARSE) kernels (the
//! paper's race-free assembly, [`Scatter::Spmv`]: every global entry is
//! the sum of a row of a 0/1 gather matrix) or by atomics; the update
//! solves K Δφ = R by Jacobi-PCG with the same SpMV kernel. After
//! convergence the point histories (φₙ, rₙ) move forward in one pass over
//! the cells, on the auxiliary fields the workspace hands out
//! ([`Workspace::aux_with_solution`]).
//!
//! The same driver ([`Monodomain`]) runs on both backends; what the model
//! adds to the pipeline (the point-history update and the activation
//! times) is behind [`Ops`], implemented in `cpu` and `gpu`.

mod cpu;
mod gpu;

use super::nonlinear::{self, Assembly, Krylov, LineSearch, NewtonOps, NewtonOptions, Precond, Workspace};
use crate::mesh::simplex::SimplexMesh;
use crate::operator::pointwise::{Aux, Pointwise};
pub use crate::operator::gpu::Scatter;
use crate::space::{Constraints, Space};
use crate::sparse::SpmvFormat;
use crate::{CpuBackend, Error, Result};
pub use super::phases::Split;
use super::phases::timed;
use fem_kernels::physics::cardiac::{self as ap, Monodomain as Physics};
use serde::Serialize;
use std::time::Instant;

/// Conductivities and the time step.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Model {
    /// Isotropic conductivity (length²/time).
    pub d_iso: f64,
    /// Extra conductivity along the fibres.
    pub d_ani: f64,
    /// Backward-Euler time step Δt, in the model's time units (those of
    /// the conductivities and the stimulus window).
    pub dt: f64,
}

/// A stimulus current `amplitude` in a ball, during a time window.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Stimulus {
    /// Centre of the ball, in mesh coordinates.
    pub centre: [f64; 3],
    /// Radius of the ball; cells whose centroid lies inside are stimulated.
    pub radius: f64,
    /// Time the current switches on.
    pub start: f64,
    /// How long it stays on.
    pub duration: f64,
    /// Applied current I added to the right-hand side of the φ equation.
    pub amplitude: f64,
}

impl Stimulus {
    /// Whether the current is on at time `t`: `start ≤ t < start + duration`.
    pub fn active(&self, t: f64) -> bool {
        t >= self.start && t < self.start + self.duration
    }
}

/// The SpMV kernel of the assembly and of CG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kernel {
    /// ELL-WARP K2 (K1 where no row is long) on the GPU, CSR on the CPU.
    Warp,
    /// cuSPARSE CSR (GPU only).
    Cusparse,
}

impl std::str::FromStr for Kernel {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "warp" => Ok(Self::Warp),
            "cusparse" => Ok(Self::Cusparse),
            _ => Err(format!("unknown SpMV kernel `{s}` (warp, cusparse)")),
        }
    }
}

/// Solver settings.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Config {
    /// How element residuals and matrices are summed: by SpMV (the
    /// paper's) or atomics.
    pub scatter: Scatter,
    /// SpMV kernel of the assembly and of CG.
    pub kernel: Kernel,
    /// Newton stops when ‖R‖₂ ≤ max(rtol ‖R₀‖₂, atol).
    pub newton_rtol: f64,
    /// Absolute floor of the Newton tolerance, for steps that start near
    /// convergence (at rest, ‖R₀‖₂ ≈ 0).
    pub newton_atol: f64,
    /// Newton iterations per step before the step fails.
    pub max_newton: usize,
    /// CG stops at ‖r‖ ≤ cg_rtol ‖R‖.
    pub cg_rtol: f64,
    /// Cap on CG iterations per Newton update; a capped solve is used as it
    /// stands and Newton iterates on.
    pub max_cg: usize,
    /// CG's preconditioner: Jacobi, or AMG (built from the first step's
    /// tangent and kept: M/Δt dominates every later one).
    pub precond: Precond,
}

impl Default for Config {
    fn default() -> Self {
        Self { scatter: Scatter::Spmv, kernel: Kernel::Warp, newton_rtol: 1e-8, newton_atol: 1e-13, max_newton: 25, cg_rtol: 1e-9, max_cg: 20_000, precond: Precond::Jacobi }
    }
}

impl Config {
    /// The pipeline's Newton options these settings make on backend `b`:
    /// full steps (no line search: a time step starts close to its
    /// solution), Jacobi-PCG on the tangent assembled in the kernel's
    /// format (the backend's ELL-WARP or CSR, or cuSPARSE).
    pub fn newton<B: NewtonOps>(&self, b: &B) -> Result<NewtonOptions> {
        if self.scatter == Scatter::Colour {
            return Err(Scatter::Colour.unavailable("the monodomain solver"));
        }
        let format = match self.kernel {
            Kernel::Warp => b.default_format(),
            Kernel::Cusparse => SpmvFormat::Cusparse,
        };
        Ok(NewtonOptions {
            rtol: self.newton_rtol,
            atol: self.newton_atol,
            max_iterations: self.max_newton,
            krylov_rtol: self.cg_rtol,
            max_krylov: self.max_cg,
            line_search: LineSearch::Full,
            krylov: Krylov::Cg,
            precond: match self.precond {
                Precond::Amg(o) => Precond::Amg(crate::solver::amg::AmgOptions { keep: true, ..o }),
                p => p,
            },
            assembly: Assembly::Sparse(format),
            scatter: self.scatter,
            ..NewtonOptions::default()
        })
    }
}

/// A mesh with a fibre direction per cell.
#[derive(Clone, Debug)]
pub struct Tissue {
    /// Triangles or tetrahedra of the tissue.
    pub mesh: SimplexMesh,
    /// Unit fibre direction of each cell (the first `dim` components used),
    /// along which [`Model::d_ani`] adds conductivity.
    pub fibres: Vec<[f64; 3]>,
    /// Material regions: each cell's positive factor on both
    /// conductivities (slow-conducting border zones, fibrosis); empty for
    /// 1 everywhere. Not for non-conducting scar: with one integration
    /// point the reaction term couples a cell's nodes, so a cell without
    /// diffusion still passes excitation on.
    pub conductivity: Vec<f64>,
}

impl Tissue {
    /// Uniform tissue: every cell conducts with the model's conductivities.
    pub fn new(mesh: SimplexMesh, fibres: Vec<[f64; 3]>) -> Self {
        Self { mesh, fibres, conductivity: Vec::new() }
    }

    /// Cell `c`'s conductivity factor.
    fn factor(&self, c: usize) -> f64 {
        self.conductivity.get(c).copied().unwrap_or(1.0)
    }
}

/// Host data every backend starts from.
pub struct Setup {
    /// The P1 space of the potential φ on the tissue mesh.
    pub space: Space,
    /// The pipeline's problem: the Aliev–Panfilov physics on that space,
    /// one integration point per cell, with the initial point data
    /// (history at rest, stimulus, Δt, conductivities, fibre) as its
    /// per-cell auxiliary fields; no fixed rows (insulated tissue) and no
    /// load (the stimulus is a point datum).
    pub problem: nonlinear::Setup<Physics>,
    /// Stimulus amplitude per cell (zero outside the ball).
    pub amp: Vec<f64>,
}

impl Setup {
    /// Builds the space, the point data and the matrix pattern on the CPU;
    /// [`Error::InvalidArgument`] when the fibres do not match the cells,
    /// Δt or d_iso is not positive, d_ani is negative, or the mesh has
    /// inverted cells.
    pub fn new(cpu: &CpuBackend, tissue: &Tissue, model: &Model, stimulus: Option<&Stimulus>) -> Result<Self> {
        let mesh = &tissue.mesh;
        if tissue.fibres.len() != mesh.n_cells() {
            return Err(Error::InvalidArgument(format!("{} fibres for {} cells", tissue.fibres.len(), mesh.n_cells())));
        }
        if !(tissue.conductivity.is_empty() || tissue.conductivity.len() == mesh.n_cells()) {
            return Err(Error::InvalidArgument(format!("{} conductivity factors for {} cells", tissue.conductivity.len(), mesh.n_cells())));
        }
        if let Some(c) = tissue.conductivity.iter().position(|f| !(f.is_finite() && *f > 0.0)) {
            return Err(Error::InvalidArgument(format!("cell {c} has conductivity factor {} (it must be positive and finite)", tissue.conductivity[c])));
        }
        if !(model.dt > 0.0 && model.d_iso > 0.0 && model.d_ani >= 0.0) {
            return Err(Error::InvalidArgument(format!("need dt > 0, d_iso > 0 and d_ani ≥ 0, got {model:?}")));
        }
        mesh.validate()?;
        let space = Space::simplex(mesh, 1)?;
        let centroid = |c: usize| {
            let mut x = [0.0; 3];
            for &v in &mesh.cells[c][..=mesh.dim] {
                for a in 0..3 {
                    x[a] += mesh.coords[v as usize][a] / (mesh.dim + 1) as f64;
                }
            }
            x
        };
        let amp: Vec<f64> = (0..mesh.n_cells())
            .map(|c| match stimulus {
                Some(s) if (0..3).map(|a| (centroid(c)[a] - s.centre[a]).powi(2)).sum::<f64>() <= s.radius * s.radius => s.amplitude,
                _ => 0.0,
            })
            .collect();
        let on = stimulus.is_some_and(|s| s.active(0.0));
        let mut aux = vec![0.0; mesh.n_cells() * ap::AUX];
        for (c, a) in aux.chunks_mut(ap::AUX).enumerate() {
            a[ap::STIMULUS] = if on { amp[c] } else { 0.0 };
            a[ap::DT] = model.dt;
            a[ap::D_ISO] = model.d_iso * tissue.factor(c);
            a[ap::D_ANI] = model.d_ani * tissue.factor(c);
            a[ap::FIBRE..ap::FIBRE + 3].copy_from_slice(&tissue.fibres[c]);
        }
        let physics = Pointwise::<f64, Physics>::new(&space, Some(1), Aux::Cell(&aux))?;
        let problem = nonlinear::Setup::of_physics(cpu, &space, physics, &Constraints::none(&space, 1), None)?;
        Ok(Self { space, problem, amp })
    }

    /// Values per cell of an E-vector: the element's nodes (3 for a
    /// triangle, 4 for a tetrahedron).
    pub fn n_local(&self) -> usize {
        self.problem.physics.variant.n_local()
    }
}

/// What the monodomain model adds to the pipeline on each backend.
pub trait Ops: NewtonOps {
    /// Moves the point histories `aux` ([`ap::AUX`] per cell) to the
    /// converged E-vector `ue` of `nl` values per cell; `on` scales the
    /// stimulus amplitudes `amp` for the next step.
    fn advance(&self, aux: &mut Self::Vector<f64>, ue: &Self::Vector<f64>, amp: &Self::Vector<f64>, nl: usize, on: f64) -> Result<()>;
    /// Records the activation time of nodes that first passed φ = ½ in
    /// the step from `prev` to `phi` ending at `t`.
    fn activation(&self, prev: &Self::Vector<f64>, phi: &Self::Vector<f64>, t: f64, dt: f64, act: &mut Self::Vector<f64>) -> Result<()>;
}

/// One time step.
#[derive(Clone, Debug, Serialize)]
pub struct StepReport {
    /// Number of the step, counting from 1.
    pub step: usize,
    /// Time at the end of the step, step · Δt.
    pub time: f64,
    /// Newton updates the step took (0 when the residual was already
    /// below tolerance).
    pub newton_iterations: usize,
    /// CG iterations over all of the step's Newton updates.
    pub cg_iterations: usize,
    /// ‖R‖₂ before each Newton update and at convergence.
    pub residuals: Vec<f64>,
    /// Seconds of the step per phase.
    pub split: Split,
    /// AMG's hierarchy and set-up so far, where it preconditions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amg: Option<nonlinear::AmgReport>,
}

/// The monodomain solver on backend `B`.
pub struct Monodomain<'b, B: Ops> {
    b: &'b B,
    /// The pipeline's Newton workspace: the prepared physics, the
    /// tangent's format and the work vectors.
    work: Workspace<B>,
    newton: NewtonOptions,
    stimulus: Option<Stimulus>,
    dt: f64,
    n: usize,
    nl: usize,
    /// Steps taken so far.
    pub step: usize,
    /// Current time, step · Δt.
    pub time: f64,
    phi: B::Vector<f64>,
    /// φ at the start of the step.
    prev: B::Vector<f64>,
    act: B::Vector<f64>,
    amp: B::Vector<f64>,
    /// Seconds spent preparing (uploads, formats).
    pub setup_seconds: f64,
}

impl<'b, B: Ops> Monodomain<'b, B> {
    /// At rest (φ = r = 0) at time zero.
    pub fn new(b: &'b B, setup: &Setup, model: &Model, stimulus: Option<Stimulus>, cfg: Config) -> Result<Self> {
        let start = Instant::now();
        let newton = cfg.newton(b)?;
        let work = Workspace::new(b, &setup.problem, &newton)?;
        let n = setup.space.n_dofs;
        let mut me = Self {
            b,
            work,
            newton,
            stimulus,
            dt: model.dt,
            n,
            nl: setup.n_local(),
            step: 0,
            time: 0.0,
            phi: b.zeros(n)?,
            prev: b.zeros(n)?,
            act: b.upload(&vec![-1.0; n])?,
            amp: b.upload(&setup.amp)?,
            setup_seconds: 0.0,
        };
        b.synchronize()?;
        me.setup_seconds = start.elapsed().as_secs_f64();
        Ok(me)
    }

    /// A label of the backend's kernels, the assembly and the matrix
    /// format CG runs on, for reports.
    pub fn describe(&self) -> String {
        self.work.describe(self.b)
    }

    /// Sets φ (e.g. an initial condition other than rest).
    pub fn set_phi(&mut self, phi: &[f64]) -> Result<()> {
        crate::error::same_len("initial potential", phi.len(), self.n)?;
        self.phi = self.b.upload(phi)?;
        Ok(())
    }

    /// One backward-Euler step: global Newton, then the point histories.
    pub fn step(&mut self) -> Result<StepReport> {
        let (b, step) = (self.b, self.step + 1);
        let mut split = Split::default();
        timed(b, &mut split.solve, || b.copy(&self.phi, &mut self.prev))?;
        // An indefinite tangent: 1/Δt no longer outweighs the source's growth rate.
        let r = self.work.newton(b, &mut self.phi, &self.newton, None, &mut |_| {}).map_err(|e| Error::InvalidArgument(format!("step {step}: {e}; try a smaller time step")))?;
        if !r.converged {
            let (first, last) = (r.residuals[0], r.residuals.last().copied().unwrap_or(f64::NAN));
            return Err(Error::InvalidArgument(format!("Newton did not converge in step {step} (‖R‖ went {first:.3e} → {last:.3e} in {} iterations); try a smaller time step", r.steps.len())));
        }
        split.add(&r.split);
        self.step = step;
        self.time = step as f64 * self.dt;
        let on = self.stimulus.is_some_and(|s| s.active(self.time)) as u8 as f64;
        let (aux, ue) = self.work.aux_with_solution(b);
        let (amp, nl) = (&self.amp, self.nl);
        timed(b, &mut split.element, || {
            b.advance(aux, ue, amp, nl, on)?;
            b.activation(&self.prev, &self.phi, self.time, self.dt, &mut self.act)
        })?;
        Ok(StepReport { step, time: self.time, newton_iterations: r.steps.len(), cg_iterations: r.krylov_iterations, residuals: r.residuals, split, amg: r.amg })
    }

    /// φ on the host.
    pub fn phi(&self) -> Result<Vec<f64>> {
        self.b.download(&self.phi)
    }

    /// First time each node passed φ = ½ (−1 where it has not).
    pub fn activation_times(&self) -> Result<Vec<f64>> {
        self.b.download(&self.act)
    }

    /// r per cell (its integration point).
    pub fn recovery(&self) -> Result<Vec<f64>> {
        Ok(self.b.download(self.work.aux(self.b))?.chunks(ap::AUX).map(|a| a[ap::R_N]).collect())
    }
}

/// A run of many steps.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunSummary {
    /// Steps added.
    pub steps: usize,
    /// Newton updates over all steps.
    pub newton_iterations: usize,
    /// CG iterations over all steps.
    pub cg_iterations: usize,
    /// Seconds per phase over all steps.
    pub split: Split,
    /// Mean wall time of one step, in seconds (the split's total over the
    /// steps).
    pub seconds_per_step: f64,
    /// AMG's hierarchy and set-up, where it preconditions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amg: Option<nonlinear::AmgReport>,
}

impl RunSummary {
    /// Accumulates one step's report and updates the mean.
    pub fn add(&mut self, s: &StepReport) {
        self.steps += 1;
        self.newton_iterations += s.newton_iterations;
        self.cg_iterations += s.cg_iterations;
        self.split.add(&s.split);
        self.seconds_per_step = self.split.total() / self.steps as f64;
        if s.amg.is_some() {
            self.amg = s.amg.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::heart::slab;

    fn tissue() -> Tissue {
        let mesh = slab([4.0, 1.0, 1.0], [4, 2, 2]).unwrap();
        let fibres = vec![[1.0, 0.0, 0.0]; mesh.n_cells()];
        Tissue::new(mesh, fibres)
    }

    #[test]
    fn setup_positions_match_the_csr_assembly() {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let model = Model { d_iso: 1.0, d_ani: 0.5, dt: 0.1 };
        let setup = Setup::new(&cpu, &tissue(), &model, None).unwrap();
        let (nl, p) = (setup.n_local(), &setup.problem);
        assert!(p.fixed.iter().all(|&f| !f) && p.residual_base.iter().all(|&v| v == 0.0), "insulated tissue has no fixed row and no load");
        let u = vec![0.3; p.physics.n_cells * nl];
        let elem = p.physics.jacobian_cpu(&cpu, &u).unwrap();
        // Entry (i, j) of cell e adds into row dof_i, column dof_j.
        let dofs = &setup.space.cell_dofs;
        let mut reference = vec![0.0; p.csr.nnz()];
        for (k, v) in elem.iter().enumerate() {
            let (e, i, j) = (k / (nl * nl), k / nl % nl, k % nl);
            reference[p.csr.position(dofs[e * nl + i] as usize, dofs[e * nl + j]).unwrap()] += v;
        }
        let mut k = vec![0.0; p.csr.nnz()];
        crate::operator::pointwise::scatter_add(p.entry_pos(), &elem, &mut k);
        assert_eq!(k, reference);
        for (r, &q) in p.diag_pos.iter().enumerate() {
            assert_eq!(p.csr.col[q as usize] as usize, r);
        }
    }

    #[test]
    fn bad_models_are_refused() {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        for m in [Model { d_iso: 1.0, d_ani: 0.0, dt: 0.0 }, Model { d_iso: -1.0, d_ani: 0.0, dt: 0.1 }] {
            assert!(Setup::new(&cpu, &tissue(), &m, None).is_err());
        }
        let mut t = tissue();
        t.fibres.pop();
        assert!(Setup::new(&cpu, &t, &Model { d_iso: 1.0, d_ani: 0.0, dt: 0.1 }, None).is_err());
    }
}
