//! Smoothed-aggregation AMG as Newton's preconditioner on the CPU backend:
//! CG iterations stay bounded as the mesh is refined, on unstructured
//! tetrahedra (P1, P2) and hexahedra (Q1, Q2), with a coefficient jumping
//! by 10⁶, and for 3D elasticity with its rigid-body modes; the hierarchy
//! matches pyamg's; what AMG cannot take is refused.

use fem::host::mesh::simplex::SimplexBox;
use fem::host::mesh::BoxMesh;
use fem::host::operator::csr::Csr;
use fem::host::operator::pointwise::Aux;
use fem::host::problem::nonlinear::{solve, NewtonOptions, NewtonReport, Precond, Setup};
use fem::host::rng::SplitMix64;
use fem::host::solver::amg::{self, Aggregation, AmgOptions, Nullspace};
use fem::host::space::{BoundaryPart, CellMesh, Constraints, Load, NestedSpaces, Space};
use crate::common::fem;
use fem::host::CpuBackend;
use fem::kernels::physics::{Elasticity, Poisson};

fn random_load(space: &Space, nc: usize) -> Load {
    let mut rng = SplitMix64::new(7);
    let nodal: Vec<f64> = (0..space.n_dofs * nc).map(|_| 2.0 * rng.next_f64() - 1.0).collect();
    Load::zero(space, nc).nodal_source(space, &nodal).unwrap()
}

/// −∇·(κ∇u) = random load, u = 0 on the boundary; κ = `jump` at the
/// vertices where x < ½, 1 at the others, and their P1/Q1 interpolant
/// between (a higher-degree interpolant of the step would overshoot below
/// zero in the cells it crosses).
fn poisson(cpu: &CpuBackend, space: &Space, jump: f64) -> Setup<Poisson> {
    let step: Vec<f64> = space.vertices.iter().map(|x| if x[0] < 0.5 { jump } else { 1.0 }).collect();
    let p = fem::host::space::nested::vertex_interpolation(space).unwrap();
    let mut kappa = vec![0.0; space.n_dofs];
    p.spmv(cpu, &step, &mut kappa);
    let coefficients: Vec<f64> = kappa.iter().flat_map(|&k| [k, 0.0]).collect();
    let constraints = Constraints::none(space, 1).dirichlet(space, &BoundaryPart::All, |_, u| u.fill(0.0)).unwrap();
    Setup::<Poisson>::constrained(cpu, space, Aux::Nodal(&coefficients), &constraints, Some(&random_load(space, 1))).unwrap()
}

fn run<K: fem::kernels::pointwise::Kernels<f64> + 'static>(cpu: &CpuBackend, setup: &Setup<K>, precond: Precond) -> (Vec<f64>, NewtonReport) {
    let o = NewtonOptions { precond, krylov_rtol: 1e-8, max_krylov: 2000, ..Default::default() };
    let (u, r) = solve(cpu, setup, &vec![0.0; setup.n_rows()], &o, &mut |_| {}).unwrap();
    assert!(r.converged && r.steps.iter().all(|s| s.krylov_converged), "{precond}: {:?}", r.residuals);
    (u, r)
}

fn amg() -> Precond {
    Precond::Amg(AmgOptions::default())
}

/// Iterations of the first update, on the finest space of `levels`
/// uniform refinements of `mesh`.
fn iterations(cpu: &CpuBackend, mesh: &CellMesh, degree: usize, levels: usize, jump: f64) -> (usize, usize) {
    let nested = NestedSpaces::new(mesh.clone(), degree, levels).unwrap();
    let setup = poisson(cpu, nested.finest(), jump).with_low_order(nested.finest()).unwrap();
    let (_, r) = run(cpu, &setup, amg());
    (r.steps[0].krylov_iterations, setup.n_rows())
}

/// P1 and P2 on unstructured tetrahedra, Q1 and Q2 on unstructured
/// hexahedra (P2 and Q2 through their low-order level), κ = 1 and κ
/// jumping by 10⁶: AMG-CG's iterations grow by at most 20 % (plus one)
/// per halving of h, and AMG solves in far fewer iterations than Jacobi.
#[test]
fn amg_iterations_stay_bounded_under_refinement() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let tets = CellMesh::Simplex(SimplexBox::unstructured(3, 2, 3).build().unwrap());
    let hexes = CellMesh::Tensor(BoxMesh::unstructured(3, 2, 3).build().unwrap());
    for (mesh, degree, levels) in [(&tets, 1, 5), (&hexes, 1, 5), (&tets, 2, 4), (&hexes, 2, 4)] {
        for jump in [1.0, 1e6] {
            let (coarse, _) = iterations(&cpu, mesh, degree, levels - 1, jump);
            let (fine, rows) = iterations(&cpu, mesh, degree, levels, jump);
            let label = format!("{} degree {degree}, κ jump {jump}: {coarse} then {fine} iterations ({rows} rows)", if matches!(mesh, CellMesh::Simplex(_)) { "tetrahedra" } else { "hexahedra" });
            eprintln!("{label}");
            assert!(fine as f64 <= 1.2 * coarse as f64 + 1.0, "{label}");
            if jump == 1.0 {
                let nested = NestedSpaces::new(mesh.clone(), degree, levels).unwrap();
                let setup = poisson(&cpu, nested.finest(), 1.0);
                let (_, j) = run(&cpu, &setup, Precond::Jacobi);
                assert!(2 * fine < j.steps[0].krylov_iterations, "{label}: Jacobi {}", j.steps[0].krylov_iterations);
                // the ℓ₁ smoother, undamped, converges too
                let mut o = AmgOptions::default();
                (o.cycle.smoother, o.cycle.omega) = (fem::host::solver::multigrid::Smoother::L1Jacobi, 1.0);
                let (_, l1) = run(&cpu, &setup, Precond::Amg(o));
                assert!(2 * l1.steps[0].krylov_iterations < j.steps[0].krylov_iterations, "{label}: ℓ₁-Jacobi {}", l1.steps[0].krylov_iterations);
                // and SPAI(1), Mᵀ after the coarse correction
                o.cycle.smoother = fem::host::solver::multigrid::Smoother::Spai;
                let (_, spai) = run(&cpu, &setup, Precond::Amg(o));
                assert!(2 * spai.steps[0].krylov_iterations < j.steps[0].krylov_iterations, "{label}: SPAI(1) {}", spai.steps[0].krylov_iterations);
            }
        }
    }
}

/// 3D elasticity on hexahedra clamped at x = 0: with the six rigid-body
/// modes as near-nullspace, iterations stay bounded under refinement and
/// are fewer than with the three translations alone; the solution is
/// Jacobi's.
#[test]
fn amg_with_rigid_body_modes_solves_elasticity() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let mesh = CellMesh::Tensor(BoxMesh::unstructured(3, 2, 5).build().unwrap());
    let mut counts = Vec::new();
    for levels in [3, 4] {
        let nested = NestedSpaces::new(mesh.clone(), 1, levels).unwrap();
        let space = nested.finest();
        let clamp = BoundaryPart::at("x = 0", |x| x[0] < 1e-12);
        let constraints = Constraints::none(space, 3).dirichlet(space, &clamp, |_, u| u.fill(0.0)).unwrap();
        let lame: Vec<f64> = (0..space.n_cells()).flat_map(|_| [1.0, 1.0]).collect();
        let mut setup = Setup::<Elasticity>::constrained(&cpu, space, Aux::Cell(&lame), &constraints, Some(&random_load(space, 3))).unwrap();
        assert_eq!(setup.node_coords.len(), space.n_dofs);
        let (u, rigid) = run(&cpu, &setup, amg());
        counts.push(rigid.steps[0].krylov_iterations);
        let report = rigid.amg.as_ref().expect("AMG's report");
        assert!(report.builds == 1 && report.last.levels.len() >= 2, "{report:?}");
        if levels == 4 {
            let (u_j, _) = run(&cpu, &setup, Precond::Jacobi);
            let scale = u_j.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(u.iter().zip(&u_j).all(|(a, b)| (a - b).abs() <= 1e-6 * scale));
            setup.node_coords.clear(); // the translations alone
            let (_, translations) = run(&cpu, &setup, amg());
            eprintln!("elasticity: rigid-body modes {counts:?}, translations only {}", translations.steps[0].krylov_iterations);
            assert!(rigid.steps[0].krylov_iterations < translations.steps[0].krylov_iterations);
        }
    }
    assert!(counts[1] as f64 <= 1.2 * counts[0] as f64 + 1.0, "{counts:?}");
}

/// The Q1 elasticity matrix of a unit cube of unstructured hexahedra
/// refined `levels − 1` times, clamped at x = 0 (those rows kept as
/// identity rows), and its rigid-body modes.
pub(crate) fn elasticity_matrix(cpu: &CpuBackend, levels: usize) -> (Csr<f64>, Nullspace) {
    let nested = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(3, 2, 5).build().unwrap()), 1, levels).unwrap();
    let space = nested.finest();
    let clamp = BoundaryPart::at("x = 0", |x| x[0] < 1e-12);
    let constraints = Constraints::none(space, 3).dirichlet(space, &clamp, |_, u| u.fill(0.0)).unwrap();
    let lame: Vec<f64> = (0..space.n_cells()).flat_map(|_| [1.0, 1.0]).collect();
    let setup = Setup::<Elasticity>::constrained(cpu, space, Aux::Cell(&lame), &constraints, None).unwrap();
    let a = fem::host::problem::nonlinear::tangent_at(cpu, &setup, &vec![0.0; setup.n_rows()]).unwrap();
    (a, Nullspace::rigid_body_modes(&space.dof_coords, 3).unwrap())
}

/// The 2D five-point Laplacian of `n × n` interior nodes.
fn laplacian(n: usize) -> Csr<f64> {
    let mut a = Csr { n_rows: n * n, row_ptr: vec![0], col: Vec::new(), val: Vec::new() };
    for i in 0..n {
        for j in 0..n {
            for (di, dj, v) in [(-1i64, 0i64, -1.0), (0, -1, -1.0), (0, 0, 4.0), (0, 1, -1.0), (1, 0, -1.0)] {
                let (x, y) = (i as i64 + di, j as i64 + dj);
                if (0..n as i64).contains(&x) && (0..n as i64).contains(&y) {
                    a.col.push((x as usize * n + y as usize) as u32);
                    a.val.push(v);
                }
            }
            a.row_ptr.push(a.col.len() as u32);
        }
    }
    a
}

/// Non-symmetric operators, non-positive diagonals and values that are
/// not finite are refused with a message, not solved into NaN.
#[test]
fn amg_refuses_what_it_cannot_precondition() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let a = laplacian(6);
    let ones = Nullspace::constants(36, 1);
    let o = AmgOptions { max_coarse: 4, ..Default::default() };
    assert!(amg::hierarchy(&cpu, &a, 1, &ones, &o).is_ok());
    let mut skew = a.clone();
    skew.val[1] = -2.0;
    let e = amg::hierarchy(&cpu, &skew, 1, &ones, &o).err().unwrap().to_string();
    assert!(e.contains("symmetric"), "{e}");
    let mut neg = a.clone();
    neg.val[0] = -4.0;
    assert!(amg::hierarchy(&cpu, &neg, 1, &ones, &o).err().unwrap().to_string().contains("diagonal"));
    let mut nan = a.clone();
    nan.val[3] = f64::NAN;
    assert!(amg::hierarchy(&cpu, &nan, 1, &ones, &o).err().unwrap().to_string().contains("NaN"));
    assert!(amg::hierarchy(&cpu, &a, 5, &ones, &o).err().unwrap().to_string().contains("nodes of 5"));
    assert!(amg::hierarchy(&cpu, &a, 1, &Nullspace::constants(30, 1), &o).err().unwrap().to_string().contains("near-nullspace"));
}

/// Levels, rows and operator complexity of our hierarchy against pyamg's
/// `smoothed_aggregation_solver` with the same settings (symmetric
/// strength θ = 0, standard aggregation, Jacobi-smoothed prolongators,
/// no candidate improvement), on the 2D Laplacian and on a 3D Q1
/// elasticity matrix with rigid-body modes; skipped where Python has no
/// pyamg.
#[test]
fn amg_hierarchy_matches_pyamgs() {
    let probe = std::process::Command::new("python3").args(["-c", "import pyamg"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: python3 with pyamg is not installed (pip install pyamg)");
        return;
    }
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let dir = crate::common::scratch("amg-pyamg");
    let (elasticity, rigid) = elasticity_matrix(&cpu, 3);
    for (name, a, block, b, max_coarse) in [("laplacian", laplacian(40), 1, Nullspace::constants(1600, 1), 10), ("elasticity", elasticity, 3, rigid, 60)] {
        let o = AmgOptions { max_coarse, max_levels: 10, aggregation: Aggregation::Standard, ..Default::default() };
        let ours = amg::hierarchy(&cpu, &a, block, &b, &o).unwrap().stats;
        let parallel = amg::hierarchy(&cpu, &a, block, &b, &AmgOptions { aggregation: Aggregation::Parallel, ..o }).unwrap().stats;
        let path = dir.join(format!("{name}.mtx"));
        fem::host::io::matrix_market::write_path(&a, false, &path).unwrap();
        let bpath = dir.join(format!("{name}.b"));
        std::fs::write(&bpath, b.values.iter().map(|v| format!("{v:e}\n")).collect::<String>()).unwrap();
        let script = format!(
            "import numpy as np, scipy.io, scipy.sparse as sp, pyamg\n\
             A = sp.csr_matrix(scipy.io.mmread('{}')); A.eliminate_zeros(); A = sp.bsr_matrix(A, blocksize=({block}, {block}))\n\
             B = np.loadtxt('{}').reshape(A.shape[0], {})\n\
             ml = pyamg.smoothed_aggregation_solver(A, B=B, BH=B, symmetry='symmetric', strength=('symmetric', {{'theta': 0.0}}), aggregate='standard', smooth=('jacobi', {{'omega': 4.0/3.0}}), improve_candidates=None, max_coarse={max_coarse}, max_levels=10)\n\
             print(' '.join(str(l.A.shape[0]) for l in ml.levels))\n\
             print(ml.operator_complexity())",
            path.display(),
            bpath.display(),
            b.k
        );
        let out = std::process::Command::new("python3").args(["-c", &script]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        let rows: Vec<usize> = lines.next().unwrap().split_whitespace().map(|s| s.parse().unwrap()).collect();
        let complexity: f64 = lines.next().unwrap().trim().parse().unwrap();
        let our_rows: Vec<usize> = ours.levels.iter().map(|l| l.rows).collect();
        let parallel_rows: Vec<usize> = parallel.levels.iter().map(|l| l.rows).collect();
        eprintln!("{name}: ours {our_rows:?} complexity {:.3} (parallel aggregation {parallel_rows:?}, {:.3}); pyamg {rows:?} complexity {complexity:.3}", ours.operator_complexity, parallel.operator_complexity);
        assert_eq!(our_rows.len(), rows.len(), "{name}: levels");
        assert!((ours.operator_complexity / complexity - 1.0).abs() <= 0.1, "{name}: operator complexity");
        // the parallel aggregation is another algorithm, of like complexity
        assert!((parallel.operator_complexity / complexity - 1.0).abs() <= 0.1, "{name}: operator complexity of the parallel aggregation");
    }
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = fem(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `--precond amg` on the three commands that take it: the pipeline's
/// solve reports the hierarchy and takes fewer iterations than Jacobi,
/// the hole benchmark's CG and the cardiac model's steps too (the
/// cardiac hierarchy built once); AMG's options without it, and a
/// strength outside [0, 1), are errors.
#[test]
fn the_commands_take_amg() {
    let mesh = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/gmsh/tet10-v41.msh");
    let solve = |precond: &str| json(&["solve", "--mesh", mesh, "--physics", "poisson", "--degree", "1", "--refine", "3", "--load", "random", "--precond", precond, "--rtol", "1e-8", "--backend", "cpu", "--json"]);
    let (amg, jacobi) = (solve("amg"), solve("jacobi"));
    let levels = amg["newton"]["amg"]["last"]["levels"].as_array().unwrap();
    assert!(levels.len() >= 2 && levels[0]["rows"] == amg["rows"], "{levels:?}");
    assert!(amg["newton"]["amg"]["last"]["operator_complexity"].as_f64().unwrap() > 1.0);
    assert!(amg["newton"]["amg"]["last"]["seconds"]["galerkin"].as_f64().is_some());
    let its = |v: &serde_json::Value| v["newton"]["krylov_iterations"].as_u64().unwrap();
    assert!(2 * its(&amg) < its(&jacobi), "AMG {} Jacobi {}", its(&amg), its(&jacobi));
    // P2: AMG under the mesh's vertices
    let p2 = |precond: &str| json(&["solve", "--mesh", mesh, "--physics", "poisson", "--degree", "2", "--refine", "2", "--load", "random", "--precond", precond, "--rtol", "1e-8", "--backend", "cpu", "--json"]);
    let (amg2, jacobi2) = (p2("amg"), p2("jacobi"));
    let levels = amg2["newton"]["amg"]["last"]["levels"].as_array().unwrap();
    let rows = |l: &serde_json::Value| l["rows"].as_u64().unwrap();
    assert!(levels.len() >= 2 && rows(&levels[0]) == amg2["rows"].as_u64().unwrap() && 4 * rows(&levels[1]) < rows(&levels[0]), "{levels:?}");
    assert!(2 * its(&amg2) < its(&jacobi2), "P2: AMG {} Jacobi {}", its(&amg2), its(&jacobi2));
    // pyamg's sequential aggregation on request
    let standard = json(&["solve", "--mesh", mesh, "--physics", "poisson", "--degree", "1", "--refine", "3", "--load", "random", "--precond", "amg", "--amg-aggregation", "standard", "--rtol", "1e-8", "--backend", "cpu", "--json"]);
    assert!(standard["newton"]["amg"]["last"]["levels"] != amg["newton"]["amg"]["last"]["levels"] && 2 * its(&standard) < its(&jacobi));
    // the set-up on the host on request: the CPU's anyway, the same levels
    let host = json(&["solve", "--mesh", mesh, "--physics", "poisson", "--degree", "1", "--refine", "3", "--load", "random", "--precond", "amg", "--amg-setup", "host", "--rtol", "1e-8", "--backend", "cpu", "--json"]);
    assert_eq!(host["newton"]["amg"]["last"]["levels"], amg["newton"]["amg"]["last"]["levels"]);

    let hole = |precond: &str| json(&["solve", "--problem", "hole", "--dim", "2", "--levels", "4", "--solver", "cg", "--precond", precond, "--backend", "cpu", "--json"]);
    let (amg, jacobi) = (hole("amg"), hole("jacobi"));
    assert!(amg["amg"]["last"]["levels"].as_array().unwrap().len() >= 2 && amg["converged"] == true);
    assert!(2 * amg["iterations"].as_u64().unwrap() < jacobi["iterations"].as_u64().unwrap());

    let cardiac = |precond: &str| json(&["cardiac", "--mesh", "generated:3000", "--steps", "3", "--precond", precond, "--backend", "cpu", "--json"]);
    let (amg, jacobi) = (cardiac("amg"), cardiac("jacobi"));
    assert_eq!(amg["summary"]["amg"]["builds"], 1);
    let cg = |v: &serde_json::Value| v["summary"]["cg_iterations"].as_u64().unwrap();
    assert!(2 * cg(&amg) < cg(&jacobi), "AMG {} Jacobi {}", cg(&amg), cg(&jacobi));
    assert!((amg["max_phi"].as_f64().unwrap() - jacobi["max_phi"].as_f64().unwrap()).abs() < 1e-6);

    for (args, says) in [
        (vec!["solve", "--mesh", mesh, "--physics", "poisson", "--amg-strength", "0.1"], "configures --precond amg"),
        (vec!["solve", "--mesh", mesh, "--physics", "poisson", "--amg-setup", "host"], "configures --precond amg"),
        (vec!["solve", "--mesh", mesh, "--physics", "poisson", "--precond", "amg", "--amg-strength", "1.5"], "[0, 1)"),
        (vec!["cardiac", "--mesh", "generated:3000", "--steps", "1", "--amg-cycle", "v"], "configures --precond amg"),
    ] {
        let out = fem(&[&args[..], &["--backend", "cpu"]].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
