//! `fem cardiac`: the Aliev–Panfilov monodomain model on a generated
//! heart-like shell or a Gmsh tetrahedral mesh, time-stepped on the chosen
//! backend with the global–local Newton scheme, with per-step Newton and CG
//! iterations and the time split of the paper's Figures 2–3, activation
//! times, and an optional ParaView time series.

use crate::picture::{field_png, Picture};
use fem_host::io::vtk::{write_collection, write_simplex, Encoding, Field};
use fem_host::mesh::heart::Heart;
use fem_host::problem::cardiac::{Config, Model, Monodomain, Ops, RunSummary, Setup, StepReport, Stimulus, Tissue};
use fem_host::{with_backend, AnyBackend, CpuBackend, Error, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where the mesh comes from.
#[derive(Clone, Debug)]
pub enum MeshSpec {
    /// The heart-like shell with about this many nodes.
    Generated(usize),
    /// A Gmsh file of tetrahedra (fibres along `fibre`).
    File(PathBuf),
}

impl std::str::FromStr for MeshSpec {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.strip_prefix("generated:") {
            Some(n) => n.replace('_', "").parse::<usize>().ok().filter(|&n| n >= 100).map(Self::Generated).ok_or_else(|| format!("`{s}`: generated:N needs a node count N ≥ 100")),
            None if s.ends_with(".msh") => Ok(Self::File(PathBuf::from(s))),
            None => Err(format!("`{s}` is neither generated:N nor a .msh file")),
        }
    }
}

/// The stimulus as the command line gives it.
#[derive(Clone, Copy, Debug)]
pub enum StimulusSpec {
    /// No stimulus: the tissue stays at rest unless φ is set otherwise.
    None,
    /// At the mesh's lowest point (the apex of the generated heart).
    Default,
    /// A current in a ball, as given (`x,y,z,radius[,start,duration,amplitude]`).
    Given(Stimulus),
}

impl std::str::FromStr for StimulusSpec {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        if s == "none" {
            return Ok(Self::None);
        }
        if s == "apex" {
            return Ok(Self::Default);
        }
        let v: Vec<f64> = s.split(',').map(|w| w.trim().parse::<f64>().map_err(|_| format!("`{w}` in --stimulus is not a number"))).collect::<std::result::Result<_, _>>()?;
        if !(v.len() == 4 || v.len() == 7) {
            return Err("--stimulus takes x,y,z,radius[,start,duration,amplitude], apex or none".into());
        }
        let get = |i: usize, d: f64| v.get(i).copied().unwrap_or(d);
        let st = Stimulus { centre: [v[0], v[1], v[2]], radius: v[3], start: get(4, 0.0), duration: get(5, 1.0), amplitude: get(6, 1.0) };
        if !(st.radius > 0.0 && st.duration >= 0.0 && st.start >= 0.0) {
            return Err("--stimulus needs radius > 0, start ≥ 0 and duration ≥ 0".into());
        }
        Ok(Self::Given(st))
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct CardiacOptions {
    /// The generated shell or a Gmsh file.
    pub mesh: MeshSpec,
    /// Fibre direction for a mesh read from a file (normalised here; the
    /// generated heart has its own fibres).
    pub fibre: [f64; 3],
    /// For a mesh read from a file: conductivity factors of cell physical
    /// groups (name or number, factor); other cells 1.
    pub conductivity: Vec<(String, f64)>,
    /// Conductivities and time step Δt.
    pub model: Model,
    /// Where and when the current is applied.
    pub stimulus: StimulusSpec,
    /// Backward-Euler time steps to take (at least 1).
    pub steps: usize,
    /// Assembly, SpMV kernel and Newton/CG tolerances.
    pub config: Config,
    /// The `.pvd` collection of the time series and the output period.
    pub vtk: Option<(PathBuf, usize)>,
    /// Keep every step's report in the result.
    pub per_step: bool,
    /// A PNG picture of the activation times at the end (a 3D tissue cut
    /// at mid z; nodes never activated in grey).
    pub png: Option<PathBuf>,
}

/// The outcome of a run, as printed and written to JSON.
#[derive(Clone, Debug, Serialize)]
pub struct CardiacReport {
    /// The backend that ran it, as it describes itself (device, threads).
    pub backend: String,
    /// How residual and matrix were assembled and which matrix CG used.
    pub kernels: String,
    /// The mesh's label: the generated shell's lattice or the file's path.
    pub mesh: String,
    /// Mesh nodes, the P1 unknowns φ.
    pub nodes: usize,
    /// Tetrahedra.
    pub cells: usize,
    /// Time step Δt, in model time units.
    pub dt: f64,
    /// The model parameters used.
    pub model: Model,
    /// The stimulus applied, if any.
    pub stimulus: Option<Stimulus>,
    /// Time steps taken.
    pub steps: usize,
    /// Model time at the end.
    pub time: f64,
    /// Wall time of the backend set-up (state and matrix structure) before
    /// the first step, in seconds.
    pub setup_seconds: f64,
    /// Iterations and the time split summed over the steps.
    pub summary: RunSummary,
    /// Fraction of nodes activated (φ passed ½) by the end.
    pub activated_fraction: f64,
    /// Latest activation time among activated nodes.
    pub last_activation: Option<f64>,
    /// Largest nodal φ at the end.
    pub max_phi: f64,
    /// The VTU pieces written, then the `.pvd` collection; empty without `vtk`.
    pub vtk_files: Vec<String>,
    /// Every step's report, when [`CardiacOptions::per_step`] asked for them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_step: Vec<StepReport>,
}

/// The mesh, its fibres and a label.
pub fn tissue(spec: &MeshSpec, fibre: [f64; 3], conductivity: &[(String, f64)]) -> Result<(Tissue, String)> {
    match spec {
        MeshSpec::Generated(_) if !conductivity.is_empty() => Err(Error::InvalidArgument("conductivity regions need a .msh mesh with cell physical groups".into())),
        MeshSpec::Generated(n) => {
            let heart = Heart::with_nodes(*n);
            let h = heart.build()?;
            Ok((Tissue::new(h.mesh, h.fibres), format!("generated heart shell, lattice {}", heart.n)))
        }
        MeshSpec::File(path) => {
            let file = fem_host::io::gmsh::read_path(path).map_err(|e| Error::InvalidArgument(format!("{}: {e}", path.display())))?;
            let mesh = file.to_simplex_mesh().map_err(|e| Error::InvalidArgument(format!("{}: {e}", path.display())))?;
            if mesh.dim != 3 {
                return Err(Error::InvalidArgument(format!("{}: the cardiac model takes tetrahedra, the file has {}D cells", path.display(), mesh.dim)));
            }
            let norm = fibre.iter().map(|v| v * v).sum::<f64>().sqrt();
            if !(norm > 0.0) {
                return Err(Error::InvalidArgument("the fibre direction must not be zero".into()));
            }
            let f = fibre.map(|v| v / norm);
            let fibres = vec![f; mesh.n_cells()];
            let mut t = Tissue::new(mesh, fibres);
            if !conductivity.is_empty() {
                t.conductivity = file.region_values(conductivity, 1.0).map_err(|e| Error::InvalidArgument(format!("{}: {e}", path.display())))?;
            }
            Ok((t, path.display().to_string()))
        }
    }
}

/// The default stimulus: a ball of 15% of the bounding-box diagonal at the
/// lowest vertex, on for one time unit.
fn default_stimulus(t: &Tissue) -> Stimulus {
    let c = &t.mesh.coords;
    let lowest = c.iter().copied().fold([0.0, 0.0, f64::MAX], |m, x| if x[2] < m[2] { x } else { m });
    let (lo, hi) = c.iter().fold(([f64::MAX; 3], [f64::MIN; 3]), |(lo, hi), x| (core::array::from_fn(|a| lo[a].min(x[a])), core::array::from_fn(|a| hi[a].max(x[a]))));
    let diag = (0..3).map(|a| (hi[a] - lo[a]).powi(2)).sum::<f64>().sqrt();
    Stimulus { centre: lowest, radius: 0.15 * diag, start: 0.0, duration: 1.0, amplitude: 1.0 }
}

/// Builds the tissue and set-up on the CPU, then time-steps on `any`;
/// `progress` is called per phase and after every step with its report.
pub fn run(o: &CardiacOptions, any: &AnyBackend, progress: &mut dyn FnMut(&str, Option<&StepReport>)) -> Result<CardiacReport> {
    if o.steps == 0 {
        return Err(Error::InvalidArgument("--steps must be at least 1".into()));
    }
    if let Some((path, every)) = &o.vtk {
        if *every == 0 || path.extension().is_none_or(|e| e != "pvd") {
            return Err(Error::InvalidArgument("--vtk takes a .pvd path and --vtk-every at least 1".into()));
        }
    }
    progress("mesh", None);
    let (tissue, label) = tissue(&o.mesh, o.fibre, &o.conductivity)?;
    let stimulus = match o.stimulus {
        StimulusSpec::None => None,
        StimulusSpec::Default => Some(default_stimulus(&tissue)),
        StimulusSpec::Given(s) => Some(s),
    };
    progress("set-up", None);
    let cpu = CpuBackend::new(None)?;
    let setup = Setup::new(&cpu, &tissue, &o.model, stimulus.as_ref())?;
    with_backend!(any, |b| run_on(b, o, &tissue, &setup, stimulus, label, progress))
}

fn run_on<B: Ops>(
    b: &B,
    o: &CardiacOptions,
    tissue: &Tissue,
    setup: &Setup,
    stimulus: Option<Stimulus>,
    label: String,
    progress: &mut dyn FnMut(&str, Option<&StepReport>),
) -> Result<CardiacReport> {
    let mut m = Monodomain::new(b, setup, &o.model, stimulus, o.config)?;
    let mut summary = RunSummary::default();
    let mut per_step = Vec::new();
    let mut series = Series::new(o.vtk.as_ref());
    series.write(&m, tissue)?;
    for _ in 0..o.steps {
        let mut s = m.step()?;
        if series.due(m.step) {
            let start = Instant::now();
            series.write(&m, tissue)?;
            s.split.transfer += start.elapsed().as_secs_f64();
        }
        summary.add(&s);
        progress("stepping", Some(&s));
        if o.per_step {
            per_step.push(s);
        }
    }
    series.finish()?;
    let act = m.activation_times()?;
    let phi = m.phi()?;
    let activated: Vec<f64> = act.iter().copied().filter(|&t| t >= 0.0).collect();
    if let Some(path) = &o.png {
        activation_png(path, tissue, &act)?;
    }
    Ok(CardiacReport {
        backend: b.name(),
        kernels: m.describe(),
        mesh: label,
        nodes: setup.space.n_dofs,
        cells: setup.problem.physics.n_cells,
        dt: o.model.dt,
        model: o.model,
        stimulus,
        steps: m.step,
        time: m.time,
        setup_seconds: m.setup_seconds,
        summary,
        activated_fraction: activated.len() as f64 / act.len() as f64,
        last_activation: activated.iter().copied().reduce(f64::max),
        max_phi: phi.iter().copied().fold(f64::MIN, f64::max),
        vtk_files: series.files(),
        per_step,
    })
}

/// The activation-time map as a picture.
fn activation_png(path: &Path, t: &Tissue, act: &[f64]) -> Result<()> {
    let values: Vec<f64> = act.iter().map(|&a| if a >= 0.0 { a } else { f64::NAN }).collect();
    let p = Picture { dim: t.mesh.dim, coords: &t.mesh.coords, simplices: &t.mesh.cells, values: &values };
    field_png(path, "activation time", "activation time", &p).map_err(|e| Error::InvalidArgument(format!("cannot write {}: {e}", path.display())))
}

/// The VTU time series and its `.pvd` collection.
struct Series {
    target: Option<(PathBuf, usize)>,
    pieces: Vec<(f64, String)>,
}

impl Series {
    fn new(target: Option<&(PathBuf, usize)>) -> Self {
        Self { target: target.cloned(), pieces: Vec::new() }
    }

    fn due(&self, step: usize) -> bool {
        self.target.as_ref().is_some_and(|(_, every)| step % every == 0)
    }

    /// Writes the current state (steps 0 and every K-th).
    fn write<B: Ops>(&mut self, m: &Monodomain<B>, t: &Tissue) -> Result<()> {
        let Some((pvd, _)) = &self.target else { return Ok(()) };
        let (phi, act, r) = (m.phi()?, m.activation_times()?, m.recovery()?);
        let fibres: Vec<f64> = t.fibres.iter().flat_map(|f| f.iter().copied()).collect();
        let stem = pvd.file_stem().and_then(|s| s.to_str()).unwrap_or("cardiac");
        let name = format!("{stem}_{:06}.vtu", m.step);
        let path = pvd.parent().unwrap_or(Path::new(".")).join(&name);
        let points = [Field { name: "phi", values: &phi }, Field { name: "activation_time", values: &act }];
        let mut cells = vec![Field { name: "r", values: &r }, Field { name: "fibre", values: &fibres }];
        if !t.conductivity.is_empty() {
            cells.push(Field { name: "conductivity", values: &t.conductivity });
        }
        write_simplex(&path, &t.mesh, &points, &cells, Encoding::Binary)?;
        self.pieces.push((m.time, name));
        Ok(())
    }

    fn finish(&self) -> Result<()> {
        match &self.target {
            Some((pvd, _)) => Ok(write_collection(pvd, &self.pieces)?),
            None => Ok(()),
        }
    }

    fn files(&self) -> Vec<String> {
        let mut f: Vec<String> = self.pieces.iter().map(|p| p.1.clone()).collect();
        if let Some((pvd, _)) = &self.target {
            f.push(pvd.display().to_string());
        }
        f
    }
}
