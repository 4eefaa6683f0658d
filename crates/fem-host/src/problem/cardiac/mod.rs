//! Cardiac electrophysiology (Wong, Kuhl & Darve §2): the Aliev–Panfilov
//! monodomain model on P1 tetrahedra (or triangles) with one-point
//! integration, backward Euler in time, and the global–local Newton
//! scheme of the paper's Table 1.
//!
//! Each time step runs a global Newton iteration on the nodal potential φ.
//! Its residual and tangent come from the `#[fem_kernel]` physics
//! [`fem_kernels::physics::cardiac`], whose pointwise functions solve the
//! local Newton problem for the recovery variable r at the integration
//! point. Element residuals and matrices are assembled either by SpMV with
//! the ELL-WARP (or cuSPARSE) kernels (the paper's race-free assembly:
//! every global entry is the sum of a row of a 0/1 gather matrix) or by
//! atomic scatter; the update solves K Δφ = R by Jacobi-PCG with the same
//! SpMV kernel. After convergence the point histories (φₙ, rₙ) move
//! forward in one pass over the cells.
//!
//! The same driver ([`Monodomain`]) runs on both backends; what differs
//! (element kernels, assembly, the point-history update) is behind
//! [`Ops`], implemented in `cpu` and `gpu`.

mod cpu;
mod gpu;

use crate::mesh::simplex::SimplexMesh;
use crate::operator::csr::Csr;
use crate::operator::pointwise::{csr_pattern, Aux, Pointwise};
use crate::solver::{pcg, CgOptions, Jacobi};
use crate::space::Space;
use crate::sparse::Spmv;
use crate::{Backend, CpuBackend, Error, Result};
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

/// How element quantities become global ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Assembly {
    /// Assembly by SpMV with the gather matrices (race-free).
    Spmv,
    /// Atomic scatter (on the CPU: a serial scatter).
    Atomic,
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

impl std::str::FromStr for Assembly {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "spmv" => Ok(Self::Spmv),
            "atomic" => Ok(Self::Atomic),
            _ => Err(format!("unknown assembly `{s}` (spmv, atomic)")),
        }
    }
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
    /// How element residuals and matrices are assembled.
    pub assembly: Assembly,
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
}

impl Default for Config {
    fn default() -> Self {
        Self { assembly: Assembly::Spmv, kernel: Kernel::Warp, newton_rtol: 1e-8, newton_atol: 1e-13, max_newton: 25, cg_rtol: 1e-9, max_cg: 20_000 }
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
    /// The Aliev–Panfilov physics on that space, one integration point per
    /// cell, with the initial point data (history at rest, stimulus, Δt,
    /// conductivities, fibre) as its per-cell auxiliary fields.
    pub physics: Pointwise<f64, Physics>,
    /// The matrix pattern (values zero).
    pub csr: Csr<f64>,
    /// CSR position of each element-matrix entry, cell-major
    /// (`e·nl² + i·nl + j`, the layout of the element kernels).
    pub entry_pos: Vec<u32>,
    /// CSR position of each row's diagonal.
    pub diag_pos: Vec<u32>,
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
        let (csr, entry_pos) = csr_pattern::<f64>(cpu, &space, 1)?;
        let diag_pos = (0..csr.n_rows).map(|r| csr.position(r, r as u32).expect("every row has its diagonal") as u32).collect();
        Ok(Self { space, physics, csr, entry_pos, diag_pos, amp })
    }

    /// Values per cell of an E-vector: the element's nodes (3 for a
    /// triangle, 4 for a tetrahedron).
    pub fn n_local(&self) -> usize {
        self.physics.variant.n_local()
    }
}

/// What differs between the backends.
pub trait Ops: Backend + Sized {
    /// Uploaded data and prepared kernels.
    type State;
    /// Copies the setup to the backend and builds what `cfg` asks for: the
    /// gather matrices of SpMV assembly (in the chosen kernel's format) or
    /// the scatter maps of atomic assembly.
    fn prepare(&self, setup: &Setup, cfg: &Config) -> Result<Self::State>;
    /// The solution's E-vector from nodal values.
    fn gather(&self, s: &Self::State, phi: &Self::Vector<f64>, u: &mut Self::Vector<f64>) -> Result<()>;
    /// Element residuals (`jacobian` false) or matrices into the first
    /// values of `out` (its last value stays zero: padding of the SpMV
    /// assembly reads it).
    fn elements(&self, s: &Self::State, jacobian: bool, u: &Self::Vector<f64>, out: &mut Self::Vector<f64>) -> Result<()>;
    /// Global residual (`matrix` false) or matrix values in CSR order.
    fn assemble(&self, s: &Self::State, matrix: bool, elem: &Self::Vector<f64>, out: &mut Self::Vector<f64>) -> Result<()>;
    /// `inv[r] = 1 / K[r][r]`.
    fn inverse_diagonal(&self, s: &Self::State, kflat: &Self::Vector<f64>, inv: &mut Self::Vector<f64>) -> Result<()>;
    /// Moves the point histories to the converged `u`; `on` scales the
    /// stimulus of the next step.
    fn advance(&self, s: &mut Self::State, u: &Self::Vector<f64>, on: f64) -> Result<()>;
    /// Records the activation time of nodes that first passed φ = ½ in
    /// the step from `prev` to `phi` ending at `t`.
    fn activation(&self, prev: &Self::Vector<f64>, phi: &Self::Vector<f64>, t: f64, dt: f64, act: &mut Self::Vector<f64>) -> Result<()>;
    /// The point values (AUX per cell) on the host.
    fn aux(&self, s: &Self::State) -> Result<Vec<f64>>;
    /// The CG matrix (values filled later by `reorder`).
    fn matrix(&self, s: &Self::State, setup: &Setup, cfg: &Config) -> Result<Box<dyn Spmv<Self, f64>>>;
    /// A label of the kernels in use.
    fn describe(&self, s: &Self::State) -> String;
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
}

/// The monodomain solver on backend `B`.
pub struct Monodomain<'b, B: Ops> {
    b: &'b B,
    cfg: Config,
    state: B::State,
    matrix: Box<dyn Spmv<B, f64>>,
    stimulus: Option<Stimulus>,
    dt: f64,
    n: usize,
    /// Steps taken so far.
    pub step: usize,
    /// Current time, step · Δt.
    pub time: f64,
    phi: B::Vector<f64>,
    /// φ at the start of the step.
    prev: B::Vector<f64>,
    u: B::Vector<f64>,
    relem: B::Vector<f64>,
    kelem: B::Vector<f64>,
    residual: B::Vector<f64>,
    kflat: B::Vector<f64>,
    /// Refilled on the backend from the assembled diagonal each update.
    jacobi: Jacobi<B, f64>,
    delta: B::Vector<f64>,
    act: B::Vector<f64>,
    /// Seconds spent preparing (uploads, formats).
    pub setup_seconds: f64,
}

impl<'b, B: Ops> Monodomain<'b, B> {
    /// At rest (φ = r = 0) at time zero.
    pub fn new(b: &'b B, setup: &Setup, model: &Model, stimulus: Option<Stimulus>, cfg: Config) -> Result<Self> {
        let start = Instant::now();
        let state = b.prepare(setup, &cfg)?;
        let matrix = b.matrix(&state, setup, &cfg)?;
        let (n, ne, nl) = (setup.space.n_dofs, setup.physics.n_cells, setup.n_local());
        let mut me = Self {
            b,
            cfg,
            matrix,
            stimulus,
            dt: model.dt,
            n,
            step: 0,
            time: 0.0,
            phi: b.zeros(n)?,
            prev: b.zeros(n)?,
            u: b.zeros(ne * nl)?,
            relem: b.zeros(ne * nl + 1)?,
            kelem: b.zeros(ne * nl * nl + 1)?,
            residual: b.zeros(n)?,
            kflat: b.zeros(setup.csr.nnz())?,
            jacobi: Jacobi::zeros(b, n)?,
            delta: b.zeros(n)?,
            act: b.upload(&vec![-1.0; n])?,
            setup_seconds: 0.0,
            state,
        };
        b.synchronize()?;
        me.setup_seconds = start.elapsed().as_secs_f64();
        Ok(me)
    }

    /// A label of the backend's kernels and the matrix format CG runs on,
    /// for reports.
    pub fn describe(&self) -> String {
        format!("{}, CG on {}", self.b.describe(&self.state), self.matrix.name())
    }

    /// Sets φ (e.g. an initial condition other than rest).
    pub fn set_phi(&mut self, phi: &[f64]) -> Result<()> {
        crate::error::same_len("initial potential", phi.len(), self.n)?;
        self.phi = self.b.upload(phi)?;
        Ok(())
    }

    /// The residual at the current φ; returns ‖R‖₂.
    fn residual(&mut self, split: &mut Split) -> Result<f64> {
        let b = self.b;
        timed(b, &mut split.element, || {
            b.gather(&self.state, &self.phi, &mut self.u)?;
            b.elements(&self.state, false, &self.u, &mut self.relem)
        })?;
        timed(b, &mut split.assembly, || b.assemble(&self.state, false, &self.relem, &mut self.residual))?;
        Ok(b.norm2(&self.residual)?)
    }

    /// Assembles the tangent at the current φ (after [`Self::residual`]),
    /// solves K Δ = R and updates φ ← φ − Δ; returns CG iterations.
    fn update(&mut self, split: &mut Split) -> Result<usize> {
        let b = self.b;
        timed(b, &mut split.element, || b.elements(&self.state, true, &self.u, &mut self.kelem))?;
        timed(b, &mut split.assembly, || {
            b.assemble(&self.state, true, &self.kelem, &mut self.kflat)?;
            self.matrix.reorder(b, &self.kflat)?;
            b.inverse_diagonal(&self.state, &self.kflat, &mut self.jacobi.inv_diag)
        })?;
        let opts = CgOptions { rtol: self.cfg.cg_rtol, max_iterations: self.cfg.max_cg, jacobi: false };
        let step = self.step + 1;
        let report = timed(b, &mut split.solve, || {
            b.axpby(0.0, &self.residual, 0.0, &mut self.delta)?;
            pcg(b, &*self.matrix, &self.jacobi, &self.residual, &mut self.delta, opts)
        })
        // An indefinite tangent: 1/Δt no longer outweighs the source's growth rate.
        .map_err(|e| Error::InvalidArgument(format!("Newton update in step {step}: {e}; try a smaller time step")))?;
        timed(b, &mut split.solve, || b.axpy(-1.0, &self.delta, &mut self.phi))?;
        Ok(report.iterations)
    }

    /// One backward-Euler step: global Newton, then the point histories.
    pub fn step(&mut self) -> Result<StepReport> {
        let mut split = Split::default();
        timed(self.b, &mut split.solve, || self.b.copy(&self.phi, &mut self.prev))?;
        let mut residuals = vec![self.residual(&mut split)?];
        let tol = (self.cfg.newton_rtol * residuals[0]).max(self.cfg.newton_atol);
        let mut cg_iterations = 0;
        while *residuals.last().expect("one residual") > tol {
            if residuals.len() > self.cfg.max_newton {
                return Err(Error::InvalidArgument(format!(
                    "Newton did not converge in step {} (‖R‖ went {:.3e} → {:.3e} in {} iterations); try a smaller time step",
                    self.step + 1,
                    residuals[0],
                    residuals.last().expect("one residual"),
                    self.cfg.max_newton
                )));
            }
            cg_iterations += self.update(&mut split)?;
            let r = self.residual(&mut split)?;
            if !r.is_finite() {
                return Err(Error::InvalidArgument(format!("Newton diverged in step {}; try a smaller time step", self.step + 1)));
            }
            residuals.push(r);
        }
        self.step += 1;
        self.time = self.step as f64 * self.dt;
        let on = self.stimulus.is_some_and(|s| s.active(self.time)) as u8 as f64;
        let b = self.b;
        // `u` holds the gather of the converged φ from the last residual.
        timed(b, &mut split.element, || {
            b.advance(&mut self.state, &self.u, on)?;
            b.activation(&self.prev, &self.phi, self.time, self.dt, &mut self.act)
        })?;
        Ok(StepReport { step: self.step, time: self.time, newton_iterations: residuals.len() - 1, cg_iterations, residuals, split })
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
        Ok(self.b.aux(&self.state)?.chunks(ap::AUX).map(|a| a[ap::R_N]).collect())
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
}

impl RunSummary {
    /// Accumulates one step's report and updates the mean.
    pub fn add(&mut self, s: &StepReport) {
        self.steps += 1;
        self.newton_iterations += s.newton_iterations;
        self.cg_iterations += s.cg_iterations;
        self.split.add(&s.split);
        self.seconds_per_step = self.split.total() / self.steps as f64;
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
        let nl = setup.n_local();
        let u = vec![0.3; setup.physics.n_cells * nl];
        let elem = setup.physics.jacobian_cpu(&cpu, &u).unwrap();
        // Entry (i, j) of cell e adds into row dof_i, column dof_j.
        let dofs = &setup.space.cell_dofs;
        let mut reference = vec![0.0; setup.csr.nnz()];
        for (k, v) in elem.iter().enumerate() {
            let (e, i, j) = (k / (nl * nl), k / nl % nl, k % nl);
            reference[setup.csr.position(dofs[e * nl + i] as usize, dofs[e * nl + j]).unwrap()] += v;
        }
        let mut k = vec![0.0; setup.csr.nnz()];
        crate::operator::pointwise::scatter_add(&setup.entry_pos, &elem, &mut k);
        assert_eq!(k, reference);
        for (r, &p) in setup.diag_pos.iter().enumerate() {
            assert_eq!(setup.csr.col[p as usize] as usize, r);
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
