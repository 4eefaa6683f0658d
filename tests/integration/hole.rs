//! The multigrid benchmark of Geveler et al. on the CPU backend: iteration
//! counts, h-independence for every smoother, agreement of every solver
//! and ordering, SSOR against Jacobi.

use fem::host::problem::hole::{HoleOptions, HoleReport, Precond, Solver};
use fem::host::solver::multigrid::{Cycle, Smoother};
use fem::host::solver::ordering::Ordering;

fn run(dim: usize, degree: usize, levels: usize, solver: Solver, precond: Precond, f: impl FnOnce(&mut HoleOptions)) -> HoleReport {
    let mut o = HoleOptions::new(dim, degree, levels);
    (o.solver, o.precond) = (solver, precond);
    f(&mut o);
    let anyb = fem::host::AnyBackend::Cpu(fem::host::CpuBackend::new(Some(2)).unwrap());
    let r = fem::solve::run_hole(&anyb, &o).unwrap();
    assert!(r.converged && r.relative_residual <= o.rtol, "{solver:?}/{precond:?}: {r:?}");
    eprintln!("{dim}D Q{degree} L{levels} {solver:?} {precond:?} {:?}: {} iterations", o.ordering, r.iterations);
    r
}

/// The largest difference of two solutions at the same nodes, whatever
/// their numbering, relative to the largest value.
fn max_rel_diff(a: &HoleReport, b: &HoleReport) -> f64 {
    let key = |x: &[f64; 3]| x.map(|c| (c * 1e9).round() as i64);
    let (a, b) = (a.field.as_ref().expect("u_h kept"), b.field.as_ref().expect("u_h kept"));
    let at: std::collections::HashMap<_, f64> = b.space.dof_coords.iter().map(key).zip(b.dofs.iter().copied()).collect();
    assert_eq!(at.len(), a.dofs.len());
    let scale = b.dofs.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    a.space.dof_coords.iter().zip(&a.dofs).map(|(x, v)| (v - at[&key(x)]).abs()).fold(0.0, f64::max) / scale
}

/// A hierarchy whose finest level cannot fit in the host's memory is
/// refused with its size, before its mesh is made.
#[test]
fn a_hole_too_large_for_the_host_is_refused_with_its_size() {
    let o = HoleOptions::new(3, 2, 12);
    let anyb = fem::host::AnyBackend::Cpu(fem::host::CpuBackend::new(Some(2)).unwrap());
    match fem::solve::run_hole(&anyb, &o) {
        Err(e @ fem::host::Error::HostMemoryTooSmall { .. }) => {
            let text = e.to_string();
            assert!(text.contains("3D, Q2 on 12 levels") && text.contains("GiB of host memory"), "{text}");
        }
        Err(e) if fem::host::memory::host_available().is_none() => eprintln!("skipped: the system does not say what memory is available ({e})"),
        other => panic!("expected a refusal, got {:?}", other.map(|r| r.dofs)),
    }
}

#[test]
fn spai_f_cycle_meets_the_paper_and_multigrid_is_h_independent() {
    let spai = run(2, 1, 5, Solver::Mg, Precond::Spai, |_| {});
    assert!(spai.iterations <= 6, "SPAI(1) F-cycle, Q1 2D: {} iterations", spai.iterations);
    // the set-up's stages in order (the coarse levels made once the
    // finest is uploaded), then Newton's phases: SPAI(1)'s set-up as the
    // preconditioner, the operators beside it
    let names: Vec<&str> = spai.stages.iter().map(|s| s.stage.as_str()).collect();
    assert_eq!(names, ["mesh hierarchy", "ordering", "boundary values", "coefficients", "sparsity", "uploads", "coarse levels", "element kernels", "assembly", "preconditioner", "solve", "Newton, other", "download"]);
    let seconds = |name: &str| spai.stages.iter().find(|s| s.stage == name).unwrap().seconds;
    assert!(seconds("preconditioner") > 0.0 && seconds("mesh hierarchy") > 0.0, "{:?}", spai.stages);
    let operators = seconds("element kernels") + seconds("assembly") + seconds("preconditioner");
    assert!((operators - spai.assembly_seconds).abs() <= 1e-12 * operators && seconds("solve") == spai.solve_seconds);
    for (dim, degree, levels) in [(2, 1, 4), (2, 2, 4), (3, 1, 2)] {
        for smoother in [Precond::Jacobi, Precond::Spai, Precond::Sainv] {
            let coarse = run(dim, degree, levels, Solver::Mg, smoother, |_| {});
            let fine = run(dim, degree, levels + 1, Solver::Mg, smoother, |_| {});
            assert!(fine.iterations <= coarse.iterations + 2, "{dim}D Q{degree} {smoother:?}: {} → {}", coarse.iterations, fine.iterations);
        }
    }
}

#[test]
fn every_solver_and_ordering_reaches_the_same_solution() {
    let reference = run(2, 1, 4, Solver::Cg, Precond::Jacobi, |o| o.rtol = 1e-11);
    let cases: Vec<(Solver, Precond, Ordering)> = vec![
        (Solver::Mg, Precond::Spai, Ordering::Original),
        (Solver::Mg, Precond::Jacobi, Ordering::Original),
        (Solver::Mg, Precond::Sainv, Ordering::Xyz),
        (Solver::Cg, Precond::Sainv, Ordering::CuthillMcKee),
        (Solver::Cg, Precond::Mg, Ordering::Original),
        (Solver::Cg, Precond::Ssor, Ordering::Original),
        (Solver::Bicgstab, Precond::Spai, Ordering::Original),
        (Solver::Mg, Precond::Spai, Ordering::TwoLevel),
        (Solver::Mg, Precond::Spai, Ordering::Hierarchical),
        (Solver::Mg, Precond::Spai, Ordering::CuthillMcKee),
        (Solver::Mg, Precond::Spai, Ordering::Xyz),
        (Solver::Mg, Precond::Spai, Ordering::Random),
    ];
    let mut spai_iterations = Vec::new();
    for (solver, precond, ordering) in cases {
        let r = run(2, 1, 4, solver, precond, |o| {
            o.ordering = ordering;
            o.rtol = 1e-10;
        });
        let d = max_rel_diff(&r, &reference);
        assert!(d < 1e-8, "{solver:?}/{precond:?}/{ordering:?}: solution differs by {d:e}");
        if solver == Solver::Mg && precond == Precond::Spai {
            spai_iterations.push(r.iterations);
        }
    }
    // SPAI(1) smoothing does not depend on the numbering (the paper's observation).
    let (lo, hi) = (spai_iterations.iter().min().unwrap(), spai_iterations.iter().max().unwrap());
    assert!(hi - lo <= 1, "SPAI multigrid iterations vary with the ordering: {spai_iterations:?}");
}

#[test]
fn ssor_and_multigrid_precondition_cg_better_than_jacobi() {
    let jacobi = run(2, 2, 3, Solver::Cg, Precond::Jacobi, |_| {});
    let ssor = run(2, 2, 3, Solver::Cg, Precond::Ssor, |_| {});
    let mg = run(2, 2, 3, Solver::Cg, Precond::Mg, |o| o.cycle = Cycle::V);
    assert!(ssor.iterations < jacobi.iterations, "SSOR {} vs Jacobi {}", ssor.iterations, jacobi.iterations);
    assert!(mg.iterations * 5 < jacobi.iterations, "MG {} vs Jacobi {}", mg.iterations, jacobi.iterations);
    let w = run(2, 1, 4, Solver::Mg, Precond::Jacobi, |o| {
        o.cycle = Cycle::W;
        o.smoother = Smoother::Jacobi;
        o.smoothing_steps = Some(4);
    });
    assert!(w.iterations < 30);
}

/// Linear solves in f32 reach a tolerance far below f32's precision: each
/// f32 multigrid solve gains what f32 allows and Newton's f64 residual
/// refines, to f64's solution. Multigrid as the solver stops once its
/// cycles no longer lower the residual: asked for 10⁻¹⁷, below f64's
/// floor, the solve ends unconverged and stalled after a bounded number
/// of cycles instead of running to its 20 000-cycle limit; the test of
/// `stalled` itself fires on a flat history only.
#[test]
fn single_precision_refines_and_multigrid_stops_at_the_floor() {
    use fem::host::problem::nonlinear::Precision;
    use fem::host::solver::multigrid::{stalled, STALL_CYCLES};
    let double = run(2, 1, 3, Solver::Mg, Precond::Spai, |o| o.rtol = 1e-12);
    let single = run(2, 1, 3, Solver::Mg, Precond::Spai, |o| {
        o.rtol = 1e-12;
        o.precision = Precision::F32;
    });
    assert!(double.updates == 1 && single.updates >= 2, "{} and {} linear solves", double.updates, single.updates);
    assert!(max_rel_diff(&single, &double) < 1e-10);
    // without u_h kept, the finest space goes before the solve: the same
    // iterations, no field
    let bare = run(2, 1, 3, Solver::Mg, Precond::Spai, |o| {
        o.rtol = 1e-12;
        o.field = false;
    });
    assert!(bare.field.is_none() && double.field.is_some() && bare.history == double.history, "{:?} against {:?}", bare.history, double.history);
    let anyb = fem::host::AnyBackend::Cpu(fem::host::CpuBackend::new(Some(2)).unwrap());
    let mut o = HoleOptions::new(2, 1, 3);
    o.rtol = 1e-17;
    let floor = fem::solve::run_hole(&anyb, &o).unwrap();
    assert!(!floor.converged && floor.stalled && floor.iterations < 500, "{floor:?}");
    let falling: Vec<f64> = (0..100).map(|k| 0.999f64.powi(k)).collect();
    assert!(!stalled(&falling[..STALL_CYCLES]) && !stalled(&falling));
    let flat: Vec<f64> = (0..100).map(|k| if k < 10 { 0.5f64.powi(k) } else { 1e-3 * (1.0 + 0.001 * (k % 3) as f64) }).collect();
    assert!(stalled(&flat[..10 + STALL_CYCLES + 1]) && !stalled(&flat[..10 + STALL_CYCLES - 1]));
}
