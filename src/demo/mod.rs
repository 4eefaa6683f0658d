//! `fem demo`: the first thing a new user runs, a nonlinear finite-element
//! solve from a Gmsh file to pictures. The minimal surface equation
//! (`fem_kernels::physics::MinimalSurface`, a `#[fem_kernel]` physics) on
//! P2 triangles of a disk meshed by Gmsh and shipped with fem
//! (`assets/meshes/disk.msh`), uniformly refined, with Dirichlet data from
//! Scherk's surface u = ln(cos y / cos x), which is also the exact
//! solution. Newton with a line search runs on the GPU when there is one
//! (element kernels, assembly and CG on the device), else on the CPU; the
//! report gives the DOFs, the Newton and CG iterations, the time of every
//! stage and the error against Scherk's surface, and the job writes a
//! `.vtu` of quadratic triangles for ParaView and a PNG of the surface.
//! `fem demo kernels` runs the vector kernels against the copy roofline.

pub mod kernels;

use crate::picture::nodal_png;
use fem_host::io::gmsh;
use fem_host::io::vtk::{write_nodal, Encoding, Field};
use fem_host::mesh::simplex::SimplexMesh;
use fem_host::problem::nonlinear::{self, NewtonOptions, NewtonReport, NewtonStep, Setup};
use fem_host::space::integrate::l2_error;
use fem_host::space::Space;
use fem_host::{with_backend, AnyBackend, CpuBackend, Error, Result};
use fem_host::operator::pointwise::Aux;
use fem_kernels::physics::{MinimalSurface, Poisson};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The disk Gmsh meshed for the demo (MSH 4.1, 757 triangles of radius 1).
pub const DISK_MSH: &[u8] = include_bytes!("../../assets/meshes/disk.msh");

/// Scherk's minimal surface, the exact solution and the boundary data.
pub fn scherk(x: &[f64; 3]) -> f64 {
    (x[1].cos() / x[0].cos()).ln()
}

/// What to solve and where to write.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// A 2D triangle mesh inside |x|, |y| < 1.5 instead of the shipped disk.
    pub mesh: Option<PathBuf>,
    /// Uniform refinements of the mesh (each splits a triangle in four).
    pub refine: usize,
    /// Polynomial degree, 1 or 2.
    pub degree: usize,
    /// Folder the `.vtu` and `.png` go into (made if missing); none written when `None`.
    pub out: Option<PathBuf>,
    /// Newton's tolerances.
    pub newton: NewtonOptions,
}

/// Seconds of every stage, host and device.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stages {
    /// Reading the Gmsh file and refining it.
    pub mesh: f64,
    /// DOF numbering, the tangent's pattern and the position maps.
    pub space: f64,
    /// Uploads and format set-up on the backend.
    pub backend_setup: f64,
    /// The start: the harmonic lift of the boundary data (−Δu = 0, one
    /// linear solve on the backend), from which Newton converges.
    pub lift: f64,
    /// CG iterations of the lift.
    pub lift_krylov_iterations: usize,
    /// Newton's iterations: element kernels, assembly, CG, line search.
    pub newton: f64,
    /// The error against the exact solution.
    pub error: f64,
    /// The `.vtu` and the picture.
    pub output: f64,
    /// The whole job.
    pub total: f64,
}

/// What `fem demo` reports.
#[derive(Clone, Debug, Serialize)]
pub struct DemoReport {
    /// The backend that ran it.
    pub backend: String,
    /// The mesh file, or the shipped disk.
    pub mesh: String,
    /// Refinements applied.
    pub refinements: usize,
    /// Triangles solved on.
    pub cells: usize,
    /// Polynomial degree.
    pub degree: usize,
    /// Unknowns (nodes, boundary included).
    pub dofs: usize,
    /// Newton's convergence and time split.
    pub newton: NewtonReport,
    /// ‖u_h − u‖ in L2 over the mesh (16-point rule per triangle).
    pub l2_error: f64,
    /// Largest |u_h − u| at a node.
    pub max_nodal_error: f64,
    /// Seconds per stage.
    pub stages: Stages,
    /// Files written.
    pub files: Vec<String>,
}

/// The triangles: the shipped disk or `path`, refined `levels` times, and
/// a label.
fn mesh(path: Option<&Path>, levels: usize) -> Result<(SimplexMesh, String)> {
    let (file, label) = match path {
        Some(p) => (gmsh::read_path(p)?, p.display().to_string()),
        None => (gmsh::read(DISK_MSH)?, "the shipped Gmsh disk (assets/meshes/disk.msh)".to_string()),
    };
    let coarse = file.to_simplex_mesh()?;
    if coarse.dim != 2 {
        return Err(Error::InvalidArgument(format!("{label}: the demo solves on triangles, not tetrahedra")));
    }
    if let Some(x) = coarse.coords.iter().find(|x| x[0].abs() >= 1.5 || x[1].abs() >= 1.5) {
        return Err(Error::InvalidArgument(format!("{label}: node ({}, {}) lies outside |x|, |y| < 1.5, where Scherk's surface is defined", x[0], x[1])));
    }
    let cells = coarse.n_cells() as f64 * 4f64.powf(levels as f64);
    let need = cells * BYTES_PER_CELL;
    if let Some(have) = fem_host::memory::host_available() {
        if need > have as f64 {
            return Err(Error::InvalidArgument(format!(
                "{levels} refinements make {cells:.3e} triangles, which need about {:.1} GB of host memory; {:.1} GB are available (try --refine {})",
                need / 1e9,
                have as f64 / 1e9,
                (0..levels.min(64)).rev().find(|&r| coarse.n_cells() as f64 * 4f64.powf(r as f64) * BYTES_PER_CELL <= have as f64).unwrap_or(0)
            )));
        }
    }
    Ok((coarse.refined(levels)?, label))
}

/// Peak host bytes per P2 triangle of the job, as measured (about 1.2 KB
/// per DOF, two DOFs per triangle), with some margin.
const BYTES_PER_CELL: f64 = 3000.0;

/// Runs the job on `any`; `stage` names what runs, `step` sees every
/// Newton update.
pub fn run(any: &AnyBackend, o: &DemoOptions, stage: &dyn Fn(&str), step: &mut dyn FnMut(&NewtonStep)) -> Result<DemoReport> {
    let start = Instant::now();
    let mut stages = Stages::default();
    if let Some(dir) = &o.out {
        std::fs::create_dir_all(dir).map_err(|e| Error::InvalidArgument(format!("cannot make {}: {e}", dir.display())))?;
    }
    stage("mesh");
    let (m, label) = mesh(o.mesh.as_deref(), o.refine)?;
    stages.mesh = start.elapsed().as_secs_f64();
    stage("space and pattern");
    let t = Instant::now();
    let cpu = CpuBackend::new(None)?;
    let space = Space::simplex(&m, o.degree)?;
    let setup = Setup::<MinimalSurface>::new(&cpu, &space)?;
    // −Δu = 0 (κ = 1, f = 0) for the harmonic lift of the boundary data
    let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
    let laplace = setup.with_physics::<Poisson>(&space, Aux::Nodal(&coefficients))?;
    let boundary: Vec<f64> = space.dof_coords.iter().zip(&space.boundary).map(|(x, &b)| if b { scherk(x) } else { 0.0 }).collect();
    stages.space = t.elapsed().as_secs_f64();
    stage("harmonic lift");
    let t = Instant::now();
    let (lift, linear) = with_backend!(any, |b| nonlinear::solve(b, &laplace, &boundary, &o.newton, &mut |_| {}))?;
    stage("Newton");
    let (u, mut newton) = with_backend!(any, |b| nonlinear::solve(b, &setup, &lift, &o.newton, step))?;
    newton.setup_seconds += linear.setup_seconds;
    stages.backend_setup = newton.setup_seconds;
    stages.lift = linear.split.total();
    stages.lift_krylov_iterations = linear.krylov_iterations;
    stages.newton = t.elapsed().as_secs_f64() - newton.setup_seconds - stages.lift;
    stage("error");
    let t = Instant::now();
    let exact: Vec<f64> = space.dof_coords.iter().map(scherk).collect();
    let max_nodal_error = u.iter().zip(&exact).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let l2_error = l2_error(&space, 1, &u, |x, e| e[0] = scherk(x));
    stages.error = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut files = Vec::new();
    if let Some(dir) = &o.out {
        stage("output");
        files = write_outputs(dir, &space, &u, &exact)?;
    }
    stages.output = t.elapsed().as_secs_f64();
    stages.total = start.elapsed().as_secs_f64();
    Ok(DemoReport { backend: any.name(), mesh: label, refinements: o.refine, cells: m.n_cells(), degree: o.degree, dofs: space.n_dofs, newton, l2_error, max_nodal_error, stages, files })
}

/// `minimal-surface.vtu` (u, the exact surface and the error on the
/// space's cells) and `minimal-surface.png` (u_h drawn through its nodes).
fn write_outputs(dir: &Path, space: &Space, u: &[f64], exact: &[f64]) -> Result<Vec<String>> {
    let error: Vec<f64> = u.iter().zip(exact).map(|(a, b)| a - b).collect();
    let vtu = dir.join("minimal-surface.vtu");
    let fields = [Field { name: "u", values: u }, Field { name: "u_exact", values: exact }, Field { name: "error", values: &error }];
    write_nodal(&vtu, space, &fields, &[], Encoding::Binary)?;
    let png = dir.join("minimal-surface.png");
    nodal_png(&png, "minimal surface u_h (Scherk's surface on a disk)", "u", space, u).map_err(|e| Error::InvalidArgument(format!("cannot write {}: {e}", png.display())))?;
    Ok(vec![vtu.display().to_string(), png.display().to_string()])
}

impl std::fmt::Display for DemoReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = &self.newton;
        let s = &self.stages;
        writeln!(f, "minimal surface -∇·(∇u/√(1+|∇u|²)) = 0 with u = Scherk's surface ln(cos y / cos x) on the boundary")?;
        writeln!(f, "mesh: {}, refined {} times: {} triangles, P{}: {} DOFs", self.mesh, self.refinements, self.cells, self.degree, self.dofs)?;
        writeln!(f, "backend: {}", n.kernels)?;
        let res: Vec<String> = n.residuals.iter().map(|r| format!("{r:.2e}")).collect();
        let lengths: Vec<String> = n.steps.iter().map(|s| format!("{}", s.step_length)).collect();
        writeln!(f, "Newton: {} iterations{}, ‖R‖ {}", n.steps.len(), if n.converged { "" } else { " (not converged)" }, res.join(" → "))?;
        writeln!(f, "        from the harmonic lift of the boundary data ({} CG iterations); step lengths {}; {} CG iterations in all (Jacobi-PCG)", s.lift_krylov_iterations, lengths.join(", "), n.krylov_iterations)?;
        let short = n.steps.iter().filter(|s| !s.krylov_converged).count();
        if short > 0 {
            writeln!(f, "        CG stopped at its iteration limit in {short} updates")?;
        }
        writeln!(f, "error against Scherk's surface: L2 {:.3e}, max at a node {:.3e}", self.l2_error, self.max_nodal_error)?;
        let sp = &n.split;
        writeln!(f, "time: mesh {:.3} s, space {:.3} s, backend set-up {:.3} s, lift {:.3} s, Newton {:.3} s (elements {:.3}, assembly {:.3}, preconditioner {:.3}, CG and updates {:.3}), error {:.3} s, output {:.3} s; total {:.3} s", s.mesh, s.space, s.backend_setup, s.lift, s.newton, sp.element, sp.assembly, sp.precond, sp.solve, s.error, s.output, s.total)?;
        for file in &self.files {
            writeln!(f, "wrote {file}")?;
        }
        Ok(())
    }
}
