//! The monodomain solver on the GPU against the CPU backend over 100
//! steps through the upstroke, for every assembly (ELL-WARP SpMV,
//! cuSPARSE SpMV, atomics) and CG kernel. Skipped without a device.

use crate::common;
use common::gpu;

use fem::host::mesh::heart::Heart;
use fem::host::problem::cardiac::{Config, Kernel, Scatter, Model, Monodomain, Setup, Stimulus, Tissue};
use fem::host::CpuBackend;

#[test]
fn gpu_runs_match_the_cpu_over_100_steps() {
    let Some(g) = gpu("gpu_runs_match_the_cpu_over_100_steps") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let h = Heart::new(12).build().unwrap();
    let tissue = Tissue::new(h.mesh, h.fibres);
    let model = Model { d_iso: 10.0, d_ani: 20.0, dt: 0.05 };
    let stim = Stimulus { centre: [0.0, 0.0, -30.0], radius: 10.0, start: 0.0, duration: 1.0, amplitude: 1.0 };
    let setup = Setup::new(&cpu, &tissue, &model, Some(&stim)).unwrap();
    let run_cpu = {
        let mut m = Monodomain::new(&cpu, &setup, &model, Some(stim), Config::default()).unwrap();
        let steps: Vec<_> = (0..100).map(|_| m.step().unwrap()).collect();
        (m.phi().unwrap(), m.recovery().unwrap(), m.activation_times().unwrap(), steps)
    };
    let activated = run_cpu.2.iter().filter(|&&t| t >= 0.0).count();
    assert!(activated > 0 && activated < run_cpu.2.len(), "the wave should be under way: {activated} activated");
    for (assembly, kernel) in [(Scatter::Spmv, Kernel::Warp), (Scatter::Spmv, Kernel::Cusparse), (Scatter::Atomic, Kernel::Warp)] {
        let cfg = Config { scatter: assembly, kernel, ..Config::default() };
        let mut m = Monodomain::new(&g, &setup, &model, Some(stim), cfg).unwrap();
        for (k, c) in run_cpu.3.iter().enumerate() {
            let s = m.step().unwrap();
            assert!(s.newton_iterations.abs_diff(c.newton_iterations) <= 1, "{assembly:?}/{kernel:?} step {k}: Newton {} vs {}", s.newton_iterations, c.newton_iterations);
        }
        let diff = |a: &[f64], b: &[f64]| a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        let (phi, r, act) = (m.phi().unwrap(), m.recovery().unwrap(), m.activation_times().unwrap());
        eprintln!("{assembly:?}/{kernel:?}: {}; max |Δφ| {:.2e}, |Δr| {:.2e}, |Δt_act| {:.2e}", m.describe(), diff(&phi, &run_cpu.0), diff(&r, &run_cpu.1), diff(&act, &run_cpu.2));
        assert!(diff(&phi, &run_cpu.0) < 1e-6, "{assembly:?}/{kernel:?}: φ differs by {}", diff(&phi, &run_cpu.0));
        assert!(diff(&r, &run_cpu.1) < 1e-6, "{assembly:?}/{kernel:?}: r differs");
        assert!(diff(&act, &run_cpu.2) < 1e-6, "{assembly:?}/{kernel:?}: activation times differ");
    }
}
