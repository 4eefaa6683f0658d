//! A neo-Hookean cantilever: the hexahedral Gmsh beam
//! `assets/meshes/beam.msh` (or any with the groups `clamp` and `tip`)
//! clamped on `clamp`, a dead traction pulling `tip` down, applied in load
//! steps, each solved by Newton from the last, on the GPU when there is
//! one. `assets/meshes/make_beam.py NX NY NZ OUT.msh` writes larger beams.
//!
//!     cargo run --release --example cantilever -- [MESH] [STEPS] [TRACTION] [auto|cpu|cuda]

use fem::host::io::gmsh::{self, GmshMesh};
use fem::host::operator::pointwise::Aux;
use fem::host::problem::nonlinear::{LineSearch, NewtonOps, NewtonOptions, NewtonReport, Setup, Workspace};
use fem::host::space::{Constraints, Load};
use fem::host::{with_backend, BackendChoice, CpuBackend, Result};
use fem::kernels::physics::NeoHookean;

/// Young's modulus and Poisson's ratio of the beam.
const YOUNG: f64 = 1000.0;
const NU: f64 = 0.3;

/// One load step: its share of the traction, Newton's report, and the
/// tip's mean vertical displacement after it.
struct Step {
    scale: f64,
    newton: NewtonReport,
    tip: f64,
}

/// The beam of `file` under the traction (0, …, −`traction`) on `tip` in
/// `steps` equal steps, with `physics` (neo-Hookean, or another of the
/// same fields), on backend `b`: the displacement and the steps.
fn cantilever<K: fem::kernels::pointwise::Kernels<f64> + 'static, B: NewtonOps>(b: &B, file: &GmshMesh, steps: usize, traction: f64) -> Result<(Vec<f64>, Vec<Step>)> {
    let (space, nodes) = file.space(1)?;
    let d = space.shape.dim();
    let bcs = Constraints::none(&space, d).dirichlet(&space, &file.boundary(&["clamp".into()], &nodes)?, |_, u| u.fill(0.0))?;
    let tip = file.boundary(&["tip".into()], &nodes)?;
    let load = Load::zero(&space, d).neumann(&space, &tip, |_, _, t| {
        t.fill(0.0);
        t[d - 1] = -traction;
    })?;
    let lame = fem::mesh_solve::lame(YOUNG, NU)?;
    let cells: Vec<f64> = (0..space.n_cells()).flat_map(|_| lame).collect();
    let setup = Setup::<K>::constrained(&CpuBackend::new(None)?, &space, Aux::Cell(&cells), &bcs, Some(&load))?;
    let on_tip = space.facet_mask(tip.facets(&space)?);
    // ‖R‖ is a poor merit function for a slender structure (its internal
    // forces dwarf the load): full Newton steps, from the last load step
    let options = NewtonOptions { rtol: 1e-9, line_search: LineSearch::Full, ..Default::default() };
    // one workspace on the backend for every step, the load scaled there
    let mut w = Workspace::new(b, &setup, &options)?;
    let (mut x, mut out) = (b.upload(&bcs.initial())?, Vec::new());
    let mut u = Vec::new();
    for k in 1..=steps {
        let scale = k as f64 / steps as f64;
        w.set_load_factor(b, &setup, scale)?;
        let mut newton = w.newton(b, &mut x, &options, None, &mut |_| {})?;
        newton.setup_seconds = if k == 1 { w.setup_seconds } else { 0.0 };
        u = b.download(&x)?;
        let tip = on_tip.iter().enumerate().filter(|t| *t.1).map(|(n, _)| u[n * d + d - 1]).sum::<f64>() / on_tip.iter().filter(|&&t| t).count() as f64;
        out.push(Step { scale, newton, tip });
    }
    Ok((u, out))
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).map_or(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/meshes/beam.msh"), |s| s.as_str());
    let steps: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(5);
    let traction: f64 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(0.5);
    let file = gmsh::read_path(path.as_ref())?;
    let choice = match args.get(4).map(String::as_str) {
        None | Some("auto") => BackendChoice::Auto,
        Some("cpu") => BackendChoice::Cpu,
        Some("cuda") => BackendChoice::Cuda,
        Some(other) => return Err(format!("backend `{other}`: auto, cpu or cuda").into()),
    };
    let (any, _) = fem::open_backend(choice)?;
    println!("{path} on {}", any.name());
    let start = std::time::Instant::now();
    let (_, steps) = with_backend!(&any, |b| cantilever::<NeoHookean, _>(b, &file, steps, traction))?;
    let wall = start.elapsed().as_secs_f64();
    for s in &steps {
        let n = &s.newton;
        let per = n.split.total() / n.steps.len().max(1) as f64;
        let res: Vec<String> = n.residuals.iter().map(|r| format!("{r:.1e}")).collect();
        println!("load {:.2}: tip {:+.4}, Newton {} ({:.3} s each, {} CG iterations), ‖R‖ {}", s.scale, s.tip, n.steps.len(), per, n.krylov_iterations, res.join(" → "));
    }
    let (newton, iterations): (f64, usize) = steps.iter().fold((0.0, 0), |(t, k), s| (t + s.newton.split.total(), k + s.newton.steps.len()));
    let setup: f64 = steps.iter().map(|s| s.newton.setup_seconds).sum();
    println!("{} rows: {iterations} Newton iterations, {:.4} s each; backend set-up {setup:.3} s; {wall:.3} s from the mesh in memory", steps[0].newton.rows, newton / iterations.max(1) as f64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fem::kernels::physics::Elasticity;

    fn beam() -> GmshMesh {
        gmsh::read_path(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/meshes/beam.msh").as_ref()).unwrap()
    }

    /// Every step converges quadratically; under a small load the beam
    /// bends as linear elasticity says, under the full one less (it
    /// stiffens as it rotates) but well beyond the linear regime.
    #[test]
    fn newton_converges_quadratically_and_small_loads_agree_with_linear_elasticity() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let file = beam();
        let (_, steps) = cantilever::<NeoHookean, _>(&cpu, &file, 4, 0.5).unwrap();
        for s in &steps {
            let r = &s.newton.residuals;
            assert!(s.newton.converged && r.len() <= 8, "{r:?}");
            for w in r.windows(2).filter(|w| w[0] < 1e-2 * r[0] && w[1] > 1e-9 * r[0]) {
                assert!(w[1] < 10.0 * w[0] * w[0] / r[0], "{r:?}");
            }
        }
        let (_, small) = cantilever::<NeoHookean, _>(&cpu, &file, 1, 1e-4).unwrap();
        let (_, linear) = cantilever::<Elasticity, _>(&cpu, &file, 1, 1e-4).unwrap();
        let (a, b) = (small[0].tip, linear[0].tip);
        assert!(b < 0.0 && ((a - b) / b).abs() < 1e-3, "neo-Hookean {a:e}, linear {b:e}");
        let full = steps.last().unwrap().tip;
        assert!(full < 0.0 && full > 5e3 * b && full < 1e3 * b, "full load {full:e} against linear {:e}", 5e3 * b);
    }

    #[test]
    fn the_gpu_gives_the_cpus_displacement() {
        let Ok(gpu) = fem::cuda(0) else {
            eprintln!("SKIPPED the_gpu_gives_the_cpus_displacement: no GPU");
            return;
        };
        let file = beam();
        let (want, _) = cantilever::<NeoHookean, _>(&CpuBackend::new(Some(2)).unwrap(), &file, 2, 0.5).unwrap();
        let (got, _) = cantilever::<NeoHookean, _>(&gpu, &file, 2, 0.5).unwrap();
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(diff < 1e-10 * scale, "{diff:e} of {scale:e}");
    }
}
