//! `fem cardiac`: the monodomain model on a heart or slab mesh.

use crate::*;
use fem::host::problem::cardiac::Scatter;

#[derive(clap::Args)]
pub(crate) struct CardiacArgs {
    /// generated:N (the heart-like shell with about N nodes) or a Gmsh file of tetrahedra.
    #[arg(long, default_value = "generated:30000")]
    pub(crate) mesh: String,
    /// Time step (model units).
    #[arg(long, default_value_t = 0.1)]
    pub(crate) dt: f64,
    #[arg(long, default_value_t = 100)]
    pub(crate) steps: usize,
    /// x,y,z,radius[,start,duration,amplitude] (a current in a ball), apex (15% of the mesh size at its lowest point, on for one time unit) or none.
    #[arg(long, default_value = "apex")]
    pub(crate) stimulus: String,
    /// Isotropic conductivity (mm²/unit).
    #[arg(long, default_value_t = 10.0)]
    pub(crate) d_iso: f64,
    /// Extra conductivity along the fibres.
    #[arg(long, default_value_t = 20.0)]
    pub(crate) d_ani: f64,
    /// Fibre direction for meshes read from files (the generated heart has its own).
    #[arg(long, default_value = "1,0,0")]
    pub(crate) fibre: String,
    /// With a .msh mesh: material regions, a positive factor on both
    /// conductivities per cell physical group as GROUP=F pairs (names or
    /// numbers, comma-separated; other cells 1), e.g. slow border zones.
    #[arg(long, value_delimiter = ',', value_parser = parse_conductivity)]
    pub(crate) conductivity: Vec<(String, f64)>,
    /// Assembly of residual and matrix: spmv (race-free, by gather-matrix SpMV) or atomic.
    #[arg(long, default_value = "spmv")]
    pub(crate) assembly: String,
    /// SpMV of the assembly and CG on the GPU: warp (ELL-WARP) or cusparse.
    #[arg(long, default_value = "warp")]
    pub(crate) spmv: String,
    /// Relative tolerance of CG on each Newton update.
    #[arg(long, default_value_t = 1e-9)]
    pub(crate) cg_rtol: f64,
    /// CG's preconditioner: jacobi, or amg (smoothed aggregation, built
    /// from the first step's tangent and kept).
    #[arg(long, value_enum, default_value_t = CardiacPrecondArg::Jacobi)]
    pub(crate) precond: CardiacPrecondArg,
    #[command(flatten)]
    pub(crate) amg: AmgArgs,
    /// A ParaView time series: the .pvd collection (pieces are written beside it).
    #[arg(long)]
    pub(crate) vtk: Option<std::path::PathBuf>,
    /// Steps between VTU files.
    #[arg(long, default_value_t = 10)]
    pub(crate) vtk_every: usize,
    /// A PNG picture of the activation times at the end (3D: cut at mid z).
    #[arg(long)]
    pub(crate) png: Option<std::path::PathBuf>,
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub(crate) backend: BackendArg,
    /// JSON (with every step's report) on stdout instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `--assembly`: how element values are summed.
fn scatter(s: &str) -> Result<Scatter, String> {
    match s {
        "spmv" => Ok(Scatter::Spmv),
        "atomic" => Ok(Scatter::Atomic),
        _ => Err(format!("unknown assembly `{s}` (spmv, atomic)")),
    }
}

/// `--precond`: Jacobi or AMG, whose cycles are V-cycles unless
/// `--amg-cycle` says otherwise: on an H200 at 292k nodes they cost 0.251 s
/// a step against W-cycles' 0.355 s, for 125 CG iterations per Newton
/// update against 128.
fn precond(a: &CardiacArgs) -> Result<fem::host::problem::nonlinear::Precond, String> {
    use fem::host::problem::nonlinear::Precond;
    AmgArgs::refuse_unless(a.precond == CardiacPrecondArg::Amg)?;
    Ok(match a.precond {
        CardiacPrecondArg::Jacobi => Precond::Jacobi,
        CardiacPrecondArg::Amg => {
            let mut o = a.amg.options()?;
            if a.amg.amg_cycle.is_none() {
                o.cycle.cycle = fem::host::solver::multigrid::Cycle::V;
            }
            Precond::Amg(o)
        }
    })
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CardiacPrecondArg {
    Jacobi,
    Amg,
}

pub(crate) fn cardiac(a: &CardiacArgs) -> CliResult {
    use fem::cardiac::{CardiacOptions, MeshSpec, StimulusSpec};
    use fem::host::problem::cardiac::{Config, Model};
    let fibre: Vec<f64> = a.fibre.split(',').map(|w| w.trim().parse::<f64>()).collect::<Result<_, _>>().map_err(|_| format!("--fibre `{}` is not x,y,z", a.fibre))?;
    if fibre.len() != 3 {
        return Err(format!("--fibre `{}` is not x,y,z", a.fibre).into());
    }
    let o = CardiacOptions {
        mesh: a.mesh.parse::<MeshSpec>()?,
        fibre: [fibre[0], fibre[1], fibre[2]],
        conductivity: a.conductivity.clone(),
        model: Model { d_iso: a.d_iso, d_ani: a.d_ani, dt: a.dt },
        stimulus: a.stimulus.parse::<StimulusSpec>()?,
        steps: a.steps,
        config: Config { scatter: scatter(&a.assembly)?, kernel: a.spmv.parse()?, cg_rtol: a.cg_rtol, precond: precond(a)?, ..Config::default() },
        vtk: a.vtk.clone().map(|p| (p, a.vtk_every)),
        per_step: a.json,
        png: a.png.clone(),
    };
    let any = open_announced(a.backend, a.json)?;
    let bar = progress_bar(a.json, String::new());
    bar.set_length(a.steps as u64);
    let json = a.json;
    let r = fem::cardiac::run(&o, &any, &mut |m, s| match s {
        None => bar.set_message(m.to_string()),
        Some(s) => {
            bar.set_position(s.step as u64);
            if !json {
                let t = &s.split;
                bar.println(format!(
                    "step {:5} t = {:8.3}: Newton {} CG {:4} | element {:8.3} ms assembly {:8.3} ms preconditioner {:8.3} ms solve {:8.3} ms transfer {:7.3} ms",
                    s.step, s.time, s.newton_iterations, s.cg_iterations, t.element * 1e3, t.assembly * 1e3, t.precond * 1e3, t.solve * 1e3, t.transfer * 1e3
                ));
            }
        }
    })?;
    bar.finish_and_clear();
    print_report(a.json, &r, |r| {
        let (s, t) = (&r.summary, r.summary.split.total().max(1e-300));
        let pct = |x: f64| 100.0 * x / t;
        format!(
            "{} on {}: {} nodes, {} tetrahedra; {}{}\n{} steps of {} to t = {:.3}: {} Newton, {} CG iterations; {:.3e} s per step (element {:.1}%, assembly {:.1}%, preconditioner {:.1}%, solve {:.1}%, transfer {:.1}%), set-up {:.2} s\nactivated {:.1}% of nodes{}, max φ {:.3}{}",
            r.mesh,
            r.backend,
            r.nodes,
            r.cells,
            r.kernels,
            r.summary.amg.as_ref().map_or(String::new(), |a| format!("\n{}", fem::solve::describe_amg(a))),
            r.steps,
            r.dt,
            r.time,
            s.newton_iterations,
            s.cg_iterations,
            s.seconds_per_step,
            pct(s.split.element),
            pct(s.split.assembly),
            pct(s.split.precond),
            pct(s.split.solve),
            pct(s.split.transfer),
            r.setup_seconds,
            100.0 * r.activated_fraction,
            r.last_activation.map(|t| format!(", the last at t = {t:.3}")).unwrap_or_default(),
            r.max_phi,
            if r.vtk_files.is_empty() { String::new() } else { format!("\nwrote {}", r.vtk_files.last().expect("non-empty")) }
        )
    })?;
    Ok(true)
}

/// A region's conductivity factor: positive.
pub(crate) fn parse_conductivity(s: &str) -> Result<(String, f64), String> {
    let (g, v) = parse_group_value(s)?;
    if v > 0.0 { Ok((g, v)) } else { Err(format!("`{s}`: a conductivity factor must be positive")) }
}
