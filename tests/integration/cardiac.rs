//! The monodomain solver on the CPU backend: a planar wave on a slab
//! travels at a speed that converges under refinement, the resting state
//! stays at rest, a sub-threshold perturbation decays, global Newton
//! converges fast, and assembly by SpMV equals the serial scatter.

use fem::host::mesh::heart::slab;
use fem::host::problem::cardiac::{Config, Model, Monodomain, Scatter, Setup, Stimulus, Tissue};
use fem::host::CpuBackend;

fn slab_tissue(h: f64, length: f64, width: f64) -> Tissue {
    let n = (length / h).round() as usize;
    let mesh = slab([length, width, width], [n, 1, 1]).unwrap();
    let fibres = vec![[1.0, 0.0, 0.0]; mesh.n_cells()];
    Tissue::new(mesh, fibres)
}

/// Speed of the wave between x = 4 and x = 12 on a slab of spacing `h`.
fn wave_speed(cpu: &CpuBackend, h: f64, dt: f64) -> f64 {
    let tissue = slab_tissue(h, 16.0, 0.25);
    let model = Model { d_iso: 1.0, d_ani: 0.0, dt };
    let stim = Stimulus { centre: [0.0, 0.125, 0.125], radius: 1.0, start: 0.0, duration: 1.0, amplitude: 1.0 };
    let setup = Setup::new(cpu, &tissue, &model, Some(&stim)).unwrap();
    let mut m = Monodomain::new(cpu, &setup, &model, Some(stim), Config::default()).unwrap();
    let coords = &setup.space.dof_coords;
    let at = |act: &[f64], x: f64| {
        let ts: Vec<f64> = coords.iter().zip(act).filter(|(c, _)| (c[0] - x).abs() < 1e-9).map(|(_, &t)| t).collect();
        if ts.iter().any(|&t| t < 0.0) {
            None
        } else {
            Some(ts.iter().sum::<f64>() / ts.len() as f64)
        }
    };
    for _ in 0..(14.0 / dt) as usize {
        let s = m.step().unwrap();
        assert!(s.newton_iterations <= 8, "Newton took {} iterations at step {}", s.newton_iterations, s.step);
        if let (Some(a), Some(b)) = { let act = m.activation_times().unwrap(); (at(&act, 4.0), at(&act, 12.0)) } {
            return 8.0 / (b - a);
        }
    }
    panic!("the wave did not reach x = 12 (h = {h})");
}

#[test]
fn planar_wave_speed_converges_under_refinement() {
    let cpu = CpuBackend::new(None).unwrap();
    let speeds: Vec<f64> = [0.5, 0.25, 0.125].iter().map(|&h| wave_speed(&cpu, h, 0.02)).collect();
    let (d1, d2) = ((speeds[0] - speeds[1]).abs(), (speeds[1] - speeds[2]).abs());
    // P1 elements: second order, the differences shrink about fourfold.
    assert!(d2 > 0.0 && d1 / d2 > 3.0, "differences do not shrink like h²: {speeds:?}");
    // Close to the speed √(cD/2)(1 − 2α) of the bistable front the
    // upstroke is (recovery is slow at the front).
    let front = (8.0f64 / 2.0).sqrt() * (1.0 - 2.0 * 0.01);
    assert!((speeds[2] / front - 1.0).abs() < 0.05, "{speeds:?} vs {front}");
}

fn heart_tissue(n: usize) -> Tissue {
    let h = fem::host::mesh::heart::Heart::new(n).build().unwrap();
    Tissue::new(h.mesh, h.fibres)
}

#[test]
fn rest_stays_at_rest_and_small_perturbations_decay() {
    let cpu = CpuBackend::new(None).unwrap();
    let tissue = heart_tissue(8);
    let model = Model { d_iso: 10.0, d_ani: 20.0, dt: 0.1 };
    let setup = Setup::new(&cpu, &tissue, &model, None).unwrap();
    let mut m = Monodomain::new(&cpu, &setup, &model, None, Config::default()).unwrap();
    for _ in 0..20 {
        let s = m.step().unwrap();
        assert_eq!(s.newton_iterations, 0, "rest is not an equilibrium");
    }
    assert!(m.phi().unwrap().iter().all(|&p| p == 0.0));
    assert!(m.recovery().unwrap().iter().all(|&r| r == 0.0));
    // Below the threshold α = 0.01 everywhere: back to rest, nothing fires.
    let phi0: Vec<f64> = setup.space.dof_coords.iter().map(|x| 0.008 * (0.5 + 0.5 * (x[0] / 10.0).sin())).collect();
    m.set_phi(&phi0).unwrap();
    for _ in 0..50 {
        m.step().unwrap();
    }
    let top = m.phi().unwrap().iter().fold(0.0f64, |a, &p| a.max(p.abs()));
    assert!(top < 0.004, "sub-threshold potential grew or stayed: {top}");
    assert!(m.activation_times().unwrap().iter().all(|&t| t < 0.0));
}

#[test]
fn a_stimulated_heart_activates_with_fast_newton_and_both_assemblies_agree() {
    let cpu = CpuBackend::new(None).unwrap();
    let tissue = heart_tissue(12);
    let model = Model { d_iso: 10.0, d_ani: 20.0, dt: 0.2 };
    // At the apex, on the inner surface.
    let stim = Stimulus { centre: [0.0, 0.0, -22.5], radius: 8.0, start: 0.0, duration: 1.0, amplitude: 1.0 };
    let setup = Setup::new(&cpu, &tissue, &model, Some(&stim)).unwrap();
    let runs: Vec<(Vec<f64>, Vec<f64>, Vec<f64>)> = [Scatter::Spmv, Scatter::Atomic]
        .into_iter()
        .map(|scatter| {
            let cfg = Config { scatter, ..Config::default() };
            let mut m = Monodomain::new(&cpu, &setup, &model, Some(stim), cfg).unwrap();
            let (mut worst_rate, mut checked) = (0.0f64, 0);
            for _ in 0..15 {
                let s = m.step().unwrap();
                assert!(s.newton_iterations <= 6, "{} Newton iterations", s.newton_iterations);
                // Quadratic: once ‖R‖ is small relative to its start, each
                // iteration at least squares the relative residual (up to a
                // constant), until CG's tolerance limits it.
                let r0 = s.residuals[0];
                for w in s.residuals.windows(2) {
                    let (a, b) = (w[0] / r0, w[1] / r0);
                    if a < 1e-2 && a > 1e-6 {
                        worst_rate = worst_rate.max(b / (a * a));
                        checked += 1;
                    }
                }
            }
            assert!(checked > 5, "too few Newton iterations in the quadratic range");
            assert!(worst_rate < 100.0, "Newton is not quadratic: e_k+1 / e_k² up to {worst_rate}");
            (m.phi().unwrap(), m.recovery().unwrap(), m.activation_times().unwrap())
        })
        .collect();
    let (phi, r, act) = &runs[0];
    let activated = act.iter().filter(|&&t| t >= 0.0).count() as f64 / act.len() as f64;
    assert!(activated > 0.2 && activated < 1.0, "activated fraction {activated}");
    assert!(r.iter().any(|&v| v > 0.01), "recovery never started");
    let diff = phi.iter().zip(&runs[1].0).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(diff < 1e-9, "assembly by SpMV and by scatter differ by {diff}");
}

/// Activation times along a slab whose cells with centroid x in [6, 8]
/// conduct with `factor` times the conductivity: (mean time at x = 4,
/// at x = 12), `None` where a cross-section never activated.
fn across_a_region(cpu: &CpuBackend, factor: f64) -> (Option<f64>, Option<f64>) {
    let mut tissue = slab_tissue(0.25, 16.0, 0.25);
    let m = &tissue.mesh;
    tissue.conductivity = (0..m.n_cells())
        .map(|c| {
            let x = m.cells[c][..4].iter().map(|&v| m.coords[v as usize][0]).sum::<f64>() / 4.0;
            if (6.0..=8.0).contains(&x) { factor } else { 1.0 }
        })
        .collect();
    let model = Model { d_iso: 1.0, d_ani: 0.0, dt: 0.05 };
    let stim = Stimulus { centre: [0.0, 0.125, 0.125], radius: 1.0, start: 0.0, duration: 1.0, amplitude: 1.0 };
    let setup = Setup::new(cpu, &tissue, &model, Some(&stim)).unwrap();
    let mut md = Monodomain::new(cpu, &setup, &model, Some(stim), Config::default()).unwrap();
    for _ in 0..(16.0 / model.dt) as usize {
        md.step().unwrap();
    }
    let act = md.activation_times().unwrap();
    let at = |x: f64| {
        let ts: Vec<f64> = setup.space.dof_coords.iter().zip(&act).filter(|(c, _)| (c[0] - x).abs() < 1e-9).map(|(_, &t)| t).collect();
        (ts.iter().all(|&t| t >= 0.0)).then(|| ts.iter().sum::<f64>() / ts.len() as f64)
    };
    (at(4.0), at(12.0))
}

/// Material regions: a band of a quarter of the conductivity delays the
/// wave (speed ∝ √D: about one time unit over the band), a sixteenth
/// delays it more, and bad factors are refused.
#[test]
fn conductivity_regions_slow_the_wave() {
    let cpu = CpuBackend::new(None).unwrap();
    let (before, after) = across_a_region(&cpu, 1.0);
    let (b_slow, a_slow) = across_a_region(&cpu, 0.25);
    let (_, a_slower) = across_a_region(&cpu, 0.0625);
    let (before, after, b_slow) = (before.unwrap(), after.unwrap(), b_slow.unwrap());
    // upstream the front barely feels the band (only through the diffusion ahead of it)
    assert!((b_slow - before).abs() < 0.05, "the band changed the wave before it: {before} vs {b_slow}");
    let (delay, more) = (a_slow.unwrap() - after, a_slower.unwrap() - after);
    eprintln!("activation at x = 4: {before:.3} ({b_slow:.3} with the band); at x = 12: {after:.3}, +{delay:.3} and +{more:.3} behind bands of ¼ and 1/16 the conductivity");
    assert!(delay > 0.5 && delay < 2.0, "delay {delay} (uniform arrival {after})");
    assert!(more > 1.5 * delay, "{more} vs {delay}");
    let mut bad = slab_tissue(0.5, 4.0, 0.5);
    bad.conductivity = vec![1.0; 3];
    let model = Model { d_iso: 1.0, d_ani: 0.0, dt: 0.1 };
    assert!(Setup::new(&cpu, &bad, &model, None).err().unwrap().to_string().contains("conductivity factors"));
    bad.conductivity = vec![0.0; bad.mesh.n_cells()];
    assert!(Setup::new(&cpu, &bad, &model, None).err().unwrap().to_string().contains("positive"));
}
