//! Geometric multigrid on the CPU backend: iteration counts independent
//! of the mesh size, agreement with CG, use as a CG preconditioner,
//! refreshed operators and smoothers.

use fem::host::mesh::BoxMesh;
use crate::common::poisson_levels;
use fem::host::solver::multigrid::{Cycle, MgOptions, Multigrid, Smoother};
use fem::host::solver::{pcg, CgOptions, Jacobi};
use fem::host::CpuBackend;

fn cpu() -> CpuBackend {
    CpuBackend::new(Some(2)).unwrap()
}

fn rhs(n: usize) -> Vec<f64> {
    (0..n).map(|i| 1.0 + 0.5 * (i as f64 * 0.37).sin()).collect()
}

fn mg_iterations(dim: usize, degree: usize, cells: usize, levels: usize, opts: MgOptions) -> (usize, f64) {
    let cpu = cpu();
    let coarse = BoxMesh::unstructured(dim, cells, 11).build().unwrap();
    let h = poisson_levels(&cpu, &coarse, degree, levels);
    let mg = Multigrid::from_matrices(&cpu, &cpu, &h.0, &h.1, opts).unwrap();
    let b = rhs(mg.rows());
    let mut x = vec![0.0; mg.rows()];
    let r = mg.solve(&cpu, &b, &mut x, 1e-8, 100).unwrap();
    assert!(r.converged, "{dim}D Q{degree} L{levels} {opts:?}: {:?}", r.history);
    eprintln!("{dim}D Q{degree} L{levels} {:?} {:?}: {} cycles, {} rows", opts.smoother, opts.cycle, r.iterations, mg.rows());
    // Compare with CG on the finest operator.
    let a = h.0.last().unwrap();
    let mut y = vec![0.0; a.n_rows];
    pcg(&cpu, a, &Jacobi::from_diagonal(&cpu, &a.diag()).unwrap(), &b, &mut y, CgOptions { rtol: 1e-12, max_iterations: 20_000, jacobi: false }).unwrap();
    let scale = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = x.iter().zip(&y).map(|(u, v)| (u - v).abs()).fold(0.0, f64::max) / scale;
    (r.iterations, diff)
}

#[test]
fn multigrid_iterations_do_not_grow_with_refinement() {
    for smoother in [Smoother::Jacobi, Smoother::Spai] {
        for (dim, degree, cells, levels) in [(2, 1, 4, 4), (2, 2, 3, 3), (3, 1, 2, 3), (3, 2, 2, 2)] {
            let opts = MgOptions::paper(dim, smoother);
            let (coarse_its, d1) = mg_iterations(dim, degree, cells, levels, opts);
            let (fine_its, d2) = mg_iterations(dim, degree, cells, levels + 1, opts);
            assert!(fine_its <= coarse_its + 2, "{smoother:?} {dim}D Q{degree}: {coarse_its} → {fine_its} iterations");
            assert!(d1 < 1e-6 && d2 < 1e-6, "{smoother:?} {dim}D Q{degree}: MG and CG solutions differ by {d1:e}, {d2:e}");
        }
    }
}

#[test]
fn spai_f_cycle_needs_few_iterations_and_every_cycle_converges() {
    let (its, _) = mg_iterations(2, 1, 4, 4, MgOptions::paper(2, Smoother::Spai));
    assert!(its <= 6, "SPAI(1) F-cycle for Q1 2D: {its} iterations");
    for cycle in [Cycle::V, Cycle::W, Cycle::F] {
        let opts = MgOptions { cycle, pre: 2, post: 2, ..MgOptions::paper(2, Smoother::Jacobi) };
        let (its, diff) = mg_iterations(2, 2, 3, 3, opts);
        assert!(its < 60 && diff < 1e-6, "{cycle:?}: {its} iterations");
    }
}

#[test]
fn multigrid_preconditions_cg() {
    let cpu = cpu();
    let coarse = BoxMesh::unstructured(2, 4, 3).build().unwrap();
    let h = poisson_levels(&cpu, &coarse, 1, 4);
    let a = h.0.last().unwrap();
    let b = rhs(a.n_rows);
    let opts = CgOptions { rtol: 1e-8, max_iterations: 2000, jacobi: false };
    let mut x = vec![0.0; a.n_rows];
    let jac = pcg(&cpu, a, &Jacobi::from_diagonal(&cpu, &a.diag()).unwrap(), &b, &mut x, opts).unwrap();
    for smoother in [Smoother::Jacobi, Smoother::Spai] {
        let mg = Multigrid::from_matrices(&cpu, &cpu, &h.0, &h.1, MgOptions { cycle: Cycle::V, pre: 2, post: 2, ..MgOptions::paper(2, smoother) }).unwrap();
        let mut y = vec![0.0; a.n_rows];
        let r = pcg(&cpu, a, &mg, &b, &mut y, opts).unwrap();
        assert!(r.converged && r.iterations * 4 < jac.iterations, "{smoother:?}: MG-PCG {} vs Jacobi-PCG {}", r.iterations, jac.iterations);
    }
}

/// A refresh with the coarsest operator's values unchanged (a linear
/// problem's Newton updates, time steps of one Δt) keeps its dense
/// inverse; new values invert it again, and the cycle then uses them.
#[test]
fn refresh_inverts_the_coarsest_operator_only_when_it_changes() {
    let cpu = cpu();
    let coarse = BoxMesh::unstructured(2, 4, 3).build().unwrap();
    let h = poisson_levels(&cpu, &coarse, 1, 2);
    let opts = MgOptions { cycle: Cycle::V, pre: 2, post: 2, dense_coarse: 1000, ..MgOptions::paper(2, Smoother::Jacobi) };
    let mut mg = Multigrid::from_matrices(&cpu, &cpu, &h.0, &h.1, opts).unwrap();
    let a0 = &h.0[0];
    let inv = |a: &fem::host::operator::csr::Csr<f64>| a.diag().iter().map(|d| 1.0 / d).collect::<Vec<f64>>();
    for _ in 0..3 {
        mg.refresh(&cpu, 0, &a0.val, &inv(a0)).unwrap();
    }
    assert_eq!(mg.coarse_inversions, 1);
    // twice the coarse operator: its inverse halves the coarse correction
    let b = rhs(h.0[1].n_rows);
    let cycle = |mg: &Multigrid<CpuBackend, f64>| {
        let mut y = vec![0.0; b.len()];
        fem::host::operator::LinearOperator::apply(mg, &cpu, &b, &mut y).unwrap();
        y
    };
    let before = cycle(&mg);
    let doubled: Vec<f64> = a0.val.iter().map(|v| 2.0 * v).collect();
    let a2 = fem::host::operator::csr::Csr { val: doubled.clone(), ..a0.clone() };
    mg.refresh(&cpu, 0, &doubled, &inv(&a2)).unwrap();
    assert_eq!(mg.coarse_inversions, 2);
    let after = cycle(&mg);
    assert!(before.iter().zip(&after).any(|(x, y)| (x - y).abs() > 1e-6 * x.abs().max(1e-12)), "the new inverse is used");
}

/// A matrix smoother is rebuilt from new values only: refreshing a level
/// with the values it was built from (a linear problem's updates, time
/// steps of one Δt) keeps it, other values rebuild it and the cycle then
/// uses it; the coarsest level and Jacobi smoothing have none to build.
#[test]
fn refresh_smoother_rebuilds_only_for_new_values() {
    let cpu = cpu();
    let coarse = BoxMesh::unstructured(2, 4, 3).build().unwrap();
    let h = poisson_levels(&cpu, &coarse, 1, 2);
    let b = rhs(h.0[1].n_rows);
    for smoother in [Smoother::Spai, Smoother::Sainv] {
        let opts = MgOptions { cycle: Cycle::V, pre: 2, post: 2, ..MgOptions::paper(2, smoother) };
        let mut mg = Multigrid::from_matrices(&cpu, &cpu, &h.0, &h.1, opts).unwrap();
        let cycle = |mg: &Multigrid<CpuBackend, f64>| {
            let mut y = vec![0.0; b.len()];
            fem::host::operator::LinearOperator::apply(mg, &cpu, &b, &mut y).unwrap();
            y
        };
        let a1 = &h.0[1];
        for _ in 0..3 {
            mg.refresh_smoother(&cpu, &cpu, 1, a1, &a1.val).unwrap();
        }
        mg.refresh_smoother(&cpu, &cpu, 0, &h.0[0], &h.0[0].val).unwrap();
        assert_eq!(mg.smoother_builds(), 1, "{smoother:?}");
        let before = cycle(&mg);
        // a smoother of another operator changes the cycle
        let shifted: Vec<f64> = a1.val.iter().map(|v| 1.5 * v).collect();
        mg.refresh_smoother(&cpu, &cpu, 1, a1, &shifted).unwrap();
        assert_eq!(mg.smoother_builds(), 2, "{smoother:?}");
        let after = cycle(&mg);
        assert!(before.iter().zip(&after).any(|(x, y)| (x - y).abs() > 1e-6 * x.abs().max(1e-12)), "{smoother:?}: the new smoother is used");
    }
    let mut jacobi = Multigrid::from_matrices(&cpu, &cpu, &h.0, &h.1, MgOptions::paper(2, Smoother::Jacobi)).unwrap();
    jacobi.refresh_smoother(&cpu, &cpu, 1, &h.0[1], &h.0[1].val).unwrap();
    assert_eq!(jacobi.smoother_builds(), 0);
}

/// A hierarchy set up from its operators' patterns and refreshed with
/// their values is the hierarchy of the matrices: the same cycle, with
/// Jacobi, SPAI(1) and SAINV smoothing, in 2D and 3D; smoothers that
/// need host matrices and sizes that do not nest are refused.
#[test]
fn a_hierarchy_of_patterns_refreshed_is_the_hierarchy_of_its_matrices() {
    let cpu = cpu();
    for (dim, degree, levels) in [(2, 1, 3), (2, 2, 2), (3, 1, 2)] {
        let coarse = BoxMesh::unstructured(dim, 3, 7).build().unwrap();
        let h = poisson_levels(&cpu, &coarse, degree, levels);
        let b = rhs(h.0.last().unwrap().n_rows);
        for smoother in [Smoother::Jacobi, Smoother::Spai, Smoother::Sainv] {
            let opts = MgOptions { cycle: Cycle::V, pre: 2, post: 2, ..MgOptions::paper(dim, smoother) };
            let cycle = |mg: &Multigrid<CpuBackend, f64>| {
                let mut y = vec![0.0; b.len()];
                fem::host::operator::LinearOperator::apply(mg, &cpu, &b, &mut y).unwrap();
                y
            };
            let want = cycle(&Multigrid::from_matrices(&cpu, &cpu, &h.0, &h.1, opts).unwrap());
            let got = cycle(&crate::common::refreshed_patterns(&cpu, &cpu, &h, opts));
            let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(scale > 0.0);
            let d = want.iter().zip(&got).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) / scale;
            assert!(d < 1e-13, "{dim}D Q{degree} {smoother:?}: cycles differ by {d:e}");
        }
    }
    let h = poisson_levels(&cpu, &BoxMesh::unstructured(2, 3, 7).build().unwrap(), 1, 2);
    let patterns: Vec<_> = h.0.iter().collect();
    let e = Multigrid::<CpuBackend, f64>::of_patterns(&cpu, &patterns, &h.1, MgOptions::paper(2, Smoother::Chebyshev(3))).err().expect("Chebyshev needs host matrices");
    assert!(e.to_string().contains("host matrices"), "{e}");
    let e = Multigrid::<CpuBackend, f64>::of_patterns(&cpu, &patterns[..1], &h.1, MgOptions::paper(2, Smoother::Jacobi)).err().expect("one operator, one prolongation");
    assert!(e.to_string().contains("do not make a hierarchy"), "{e}");
}
