//! Newton's preconditioners on the CPU backend: Jacobi, SSOR and
//! multigrid by rediscretisation give the same solution; multigrid's
//! iteration counts stay bounded as the mesh is refined, on simplices and
//! tensor cells of degree 1 and 2, for a scalar and a vector physics,
//! linear and nonlinear, stationary and time-stepped.

use fem::host::mesh::hole::HoleDomain;
use fem::host::mesh::simplex::SimplexBox;
use fem::host::mesh::BoxMesh;
use fem::host::operator::pointwise::Aux;
use fem::host::problem::nonlinear::time::{integrate, Forcing, Scheme, TimeOptions};
use fem::host::problem::nonlinear::{solve, NewtonOptions, NewtonReport, Precond, Setup};
use fem::host::rng::SplitMix64;
use fem::host::space::{BoundaryPart, CellMesh, Constraints, Load, NestedSpaces, Space};
use fem::host::CpuBackend;
use fem::kernels::physics::{Elasticity, MinimalSurface, Poisson};

/// A load with every mode in it (random node values).
fn random_load(space: &Space, nc: usize) -> Load {
    let mut rng = SplitMix64::new(7);
    let nodal: Vec<f64> = (0..space.n_dofs * nc).map(|_| 2.0 * rng.next_f64() - 1.0).collect();
    Load::zero(space, nc).nodal_source(space, &nodal).unwrap()
}

fn poisson(cpu: &CpuBackend, nested: &NestedSpaces) -> Setup<Poisson> {
    let space = nested.finest();
    let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
    let constraints = Constraints::none(space, 1).dirichlet(space, &BoundaryPart::All, |_, u| u.fill(0.0)).unwrap();
    Setup::<Poisson>::constrained(cpu, space, Aux::Nodal(&coefficients), &constraints, Some(&random_load(space, 1))).unwrap().with_multigrid(cpu, nested).unwrap()
}

fn run<K: fem::kernels::pointwise::Kernels<f64> + 'static>(cpu: &CpuBackend, setup: &Setup<K>, start: &[f64], precond: Precond) -> (Vec<f64>, NewtonReport) {
    let o = NewtonOptions { precond, krylov_rtol: 1e-10, ..Default::default() };
    let (u, r) = solve(cpu, setup, start, &o, &mut |_| {}).unwrap();
    assert!(r.converged && r.steps.iter().all(|s| s.krylov_converged), "{precond}: {:?}", r.residuals);
    (u, r)
}

fn worst(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs())) / b.iter().fold(0.0f64, |m, y| m.max(y.abs()))
}

fn meshes(dim: usize) -> [CellMesh; 2] {
    [CellMesh::Simplex(SimplexBox::unstructured(dim, 2, 3).build().unwrap()), CellMesh::Tensor(BoxMesh::unstructured(dim, 2, 3).build().unwrap())]
}

/// Poisson with a random load: the three preconditioners agree, SSOR
/// halves Jacobi's CG iterations, and multigrid's grow by at most a
/// quarter per refinement (from 8–17 iterations; Jacobi's double).
#[test]
fn multigrid_iterations_stay_bounded_under_refinement() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for dim in [2, 3] {
        for mesh in meshes(dim) {
            for degree in [1, 2] {
                let deepest = if dim == 2 { 5 } else { 4 };
                let mut counts = Vec::new();
                for levels in deepest - 1..=deepest {
                    let nested = NestedSpaces::new(mesh.clone(), degree, levels).unwrap();
                    let setup = poisson(&cpu, &nested);
                    let start = vec![0.0; setup.n_rows()];
                    let (u_mg, mg) = run(&cpu, &setup, &start, Precond::multigrid());
                    counts.push(mg.krylov_iterations);
                    if levels == deepest {
                        break;
                    }
                    let (u_j, j) = run(&cpu, &setup, &start, Precond::Jacobi);
                    let (u_s, s) = run(&cpu, &setup, &start, Precond::Ssor);
                    let label = format!("{:?} P{degree}, {levels} levels", nested.finest().shape);
                    assert!(worst(&u_mg, &u_j) < 1e-7 && worst(&u_s, &u_j) < 1e-7, "{label}");
                    assert!(2 * s.krylov_iterations <= j.krylov_iterations + 2, "{label}: SSOR {} vs Jacobi {}", s.krylov_iterations, j.krylov_iterations);
                    assert!(3 * mg.krylov_iterations < 2 * j.krylov_iterations, "{label}: multigrid {} vs Jacobi {}", mg.krylov_iterations, j.krylov_iterations);
                }
                assert!(counts[1] as f64 <= 1.25 * counts[0] as f64 + 1.0, "{dim}D P{degree}: {counts:?}");
            }
        }
    }
}

/// Multigrid by rediscretisation on a curved refinement (the hole
/// benchmark's domain, whose refinement places new vertices on the hole):
/// the transfers follow the children in their parents' frames, multigrid
/// gives Jacobi's solution in a third of its iterations or fewer, and
/// its iterations stay bounded under refinement.
#[test]
fn multigrid_follows_a_curved_refinement() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let domain = HoleDomain::benchmark(2);
    let mut counts = Vec::new();
    for levels in [3, 4] {
        let nested = NestedSpaces::with_refinement(CellMesh::Tensor(domain.coarse().unwrap()), 2, levels, &|m| domain.refine(m)).unwrap();
        assert!(nested.finest().dof_coords.iter().filter(|x| domain.on_hole(**x)).count() > 1 << (levels + 3));
        let setup = poisson(&cpu, &nested);
        let start = vec![0.0; setup.n_rows()];
        let (u_mg, mg) = run(&cpu, &setup, &start, Precond::multigrid());
        let (u_j, j) = run(&cpu, &setup, &start, Precond::Jacobi);
        assert!(worst(&u_mg, &u_j) < 1e-7, "{levels} levels");
        assert!(3 * mg.krylov_iterations <= j.krylov_iterations, "{levels} levels: multigrid {} vs Jacobi {}", mg.krylov_iterations, j.krylov_iterations);
        eprintln!("hole Q2, {levels} levels, {} rows: multigrid {}, Jacobi {} CG iterations", setup.n_rows(), mg.krylov_iterations, j.krylov_iterations);
        counts.push(mg.krylov_iterations);
    }
    assert!(counts[1] as f64 <= 1.25 * counts[0] as f64 + 1.0, "{counts:?}");
}

/// A nonlinear physics (minimal surface) and a vector one (elasticity,
/// rollers on one face): the coarse tangents are the physics' own at the
/// injected state, and Newton converges as with Jacobi.
#[test]
fn multigrid_preconditions_nonlinear_and_vector_physics() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let nested = NestedSpaces::new(CellMesh::Simplex(SimplexBox::unstructured(2, 3, 5).build().unwrap()), 2, 3).unwrap();
    let space = nested.finest();
    let setup = Setup::<MinimalSurface>::new(&cpu, space).unwrap().with_multigrid(&cpu, &nested).unwrap();
    let start: Vec<f64> = space.dof_coords.iter().zip(&space.boundary).map(|(x, &b)| if b { (3.0 * x[0]).sin() * x[1] } else { 0.0 }).collect();
    let (u_mg, mg) = run(&cpu, &setup, &start, Precond::multigrid());
    let (u_j, j) = run(&cpu, &setup, &start, Precond::Jacobi);
    assert!(worst(&u_mg, &u_j) < 1e-8);
    assert_eq!(mg.steps.len(), j.steps.len());
    assert!(2 * mg.krylov_iterations < j.krylov_iterations, "{} vs {}", mg.krylov_iterations, j.krylov_iterations);

    let nested = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(3, 2, 5).build().unwrap()), 1, 3).unwrap();
    let space = nested.finest();
    let clamp = BoundaryPart::at("x = 0", |x| x[0] < 1e-12);
    let constraints = Constraints::none(space, 3).dirichlet(space, &clamp, |_, u| u.fill(0.0)).unwrap();
    let lame: Vec<f64> = (0..space.n_cells()).flat_map(|_| [1.0, 1.0]).collect();
    let setup = Setup::<Elasticity>::constrained(&cpu, space, Aux::Cell(&lame), &constraints, Some(&random_load(space, 3))).unwrap().with_multigrid(&cpu, &nested).unwrap();
    let (u_mg, mg) = run(&cpu, &setup, &constraints.initial(), Precond::multigrid());
    let (u_j, j) = run(&cpu, &setup, &constraints.initial(), Precond::Jacobi);
    assert!(worst(&u_mg, &u_j) < 1e-7);
    assert!(2 * mg.krylov_iterations < j.krylov_iterations, "{} vs {}", mg.krylov_iterations, j.krylov_iterations);
}

/// Time steps add c·M to every level's tangent: backward Euler with
/// multigrid gives Jacobi's solution.
#[test]
fn multigrid_preconditions_time_steps() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let nested = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(2, 3, 2).build().unwrap()), 2, 3).unwrap();
    let setup = poisson(&cpu, &nested);
    let space = nested.finest();
    let u0 = vec![0.0; setup.n_rows()];
    let mut out = Vec::new();
    for precond in [Precond::Jacobi, Precond::multigrid(), Precond::Ssor] {
        let o = TimeOptions { dt: 0.01, steps: 4, scheme: Scheme::Theta(1.0), newton: NewtonOptions { precond, krylov_rtol: 1e-11, ..Default::default() } };
        let (u, r) = integrate(&cpu, &setup, space, &u0, Forcing::default(), &o, &mut |_, _, _| Ok(())).unwrap();
        out.push((u, r.steps.iter().map(|s| s.krylov_iterations).sum::<usize>()));
    }
    assert!(worst(&out[1].0, &out[0].0) < 1e-8 && worst(&out[2].0, &out[0].0) < 1e-8);
    assert!(out[1].1 < out[0].1, "multigrid {} vs Jacobi {}", out[1].1, out[0].1);
}

/// Multigrid without levels is an error, not a silent fallback.
#[test]
fn multigrid_without_levels_is_an_error() {
    let cpu = CpuBackend::new(Some(1)).unwrap();
    let space = Space::simplex(&SimplexBox::unstructured(2, 2, 1).build().unwrap(), 1).unwrap();
    let setup = Setup::<MinimalSurface>::new(&cpu, &space).unwrap();
    let o = NewtonOptions { precond: Precond::multigrid(), ..Default::default() };
    let err = solve(&cpu, &setup, &vec![0.0; space.n_dofs], &o, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("with_multigrid"), "{err}");
    // a set-up of another space than the hierarchy's finest
    let nested = NestedSpaces::new(CellMesh::Simplex(SimplexBox::unstructured(2, 2, 1).build().unwrap()), 1, 2).unwrap();
    assert!(Setup::<MinimalSurface>::new(&cpu, &space).unwrap().with_multigrid(&cpu, &nested).is_err());
}

/// Multigrid smoothed by SPAI(1) (undamped) or SAINV (ω = ½), rebuilt on
/// the host from every update's tangents: the linear Poisson problem, the
/// nonlinear minimal surface (new tangents at every update) and backward
/// Euler steps (c·M in every level's tangent) reach Jacobi's solutions,
/// and on Poisson in no more CG iterations than multigrid with Jacobi
/// smoothing takes, a fraction of Jacobi's.
#[test]
fn spai_and_sainv_smooth_newtons_multigrid() {
    use fem::host::solver::multigrid::{MgOptions, Smoother};
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let Precond::Multigrid(base) = Precond::multigrid() else { unreachable!() };
    let smoothed = |smoother, omega| Precond::Multigrid(MgOptions { smoother, omega, ..base });
    let matrix_smoothers = [smoothed(Smoother::Spai, 1.0), smoothed(Smoother::Sainv, 0.5)];
    let nested = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(2, 3, 2).build().unwrap()), 2, 3).unwrap();
    let setup = poisson(&cpu, &nested);
    let start = vec![0.0; setup.n_rows()];
    let (u_j, j) = run(&cpu, &setup, &start, Precond::Jacobi);
    let (_, mg) = run(&cpu, &setup, &start, Precond::multigrid());
    for p in matrix_smoothers {
        let (u, r) = run(&cpu, &setup, &start, p);
        assert!(worst(&u, &u_j) < 1e-8, "{p}");
        assert!(r.krylov_iterations <= mg.krylov_iterations && 3 * r.krylov_iterations < j.krylov_iterations, "{p}: {} against {} (Jacobi smoothing) and {} (Jacobi)", r.krylov_iterations, mg.krylov_iterations, j.krylov_iterations);
    }
    let nested = NestedSpaces::new(CellMesh::Simplex(SimplexBox::unstructured(2, 3, 5).build().unwrap()), 2, 3).unwrap();
    let space = nested.finest();
    let surface = Setup::<MinimalSurface>::new(&cpu, space).unwrap().with_multigrid(&cpu, &nested).unwrap();
    let start: Vec<f64> = space.dof_coords.iter().zip(&space.boundary).map(|(x, &b)| if b { (3.0 * x[0]).sin() * x[1] } else { 0.0 }).collect();
    let (u_j, j) = run(&cpu, &surface, &start, Precond::Jacobi);
    for p in matrix_smoothers {
        let (u, r) = run(&cpu, &surface, &start, p);
        assert!(worst(&u, &u_j) < 1e-8 && r.steps.len() == j.steps.len(), "{p}: {:?}", r.residuals);
    }
    let nested = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(2, 3, 2).build().unwrap()), 2, 3).unwrap();
    let space = nested.finest();
    let u0 = vec![0.0; setup.n_rows()];
    let step = |precond| {
        let o = TimeOptions { dt: 0.01, steps: 3, scheme: Scheme::Theta(1.0), newton: NewtonOptions { precond, krylov_rtol: 1e-11, ..Default::default() } };
        integrate(&cpu, &setup, space, &u0, Forcing::default(), &o, &mut |_, _, _| Ok(())).unwrap().0
    };
    let want = step(Precond::Jacobi);
    for p in matrix_smoothers {
        assert!(worst(&step(p), &want) < 1e-8, "{p}");
    }
}

/// Multigrid as the solver: Richardson iterations with one V-cycle each
/// reach CG's solution on Q2 Poisson in a few dozen cycles. (As a solver
/// the cycle must contract by itself: on the minimal surface's P2
/// triangles this V(2, 2)-cycle with Jacobi smoothing does not, and there
/// it preconditions CG.)
#[test]
fn multigrid_solves_by_richardson_iterations() {
    use fem::host::solver::Krylov;
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let nested = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(2, 3, 2).build().unwrap()), 2, 3).unwrap();
    let setup = poisson(&cpu, &nested);
    let start = vec![0.0; setup.n_rows()];
    let (want, _) = run(&cpu, &setup, &start, Precond::Jacobi);
    let o = NewtonOptions { krylov: Krylov::Richardson, precond: Precond::multigrid(), krylov_rtol: 1e-10, ..Default::default() };
    let (u, r) = solve(&cpu, &setup, &start, &o, &mut |_| {}).unwrap();
    assert!(r.converged && r.steps.iter().all(|s| s.krylov_converged) && r.krylov_iterations < 40, "{:?}", r.steps);
    assert!(worst(&u, &want) < 1e-8);
}

/// SAINV and SPAI(1) as the Krylov method's preconditioner, rebuilt on
/// the host from each update's tangent: on Poisson SAINV-CG and
/// SPAI-BiCGStab take fewer iterations than with Jacobi and reach its
/// solution, as does no preconditioner; on the nonlinear minimal surface
/// (a new tangent at every update) and over backward-Euler steps (c·M in
/// the tangent) they give Jacobi's solutions. SPAI(1) with CG, and either
/// with element matrices (no assembled values to build from), are refused.
#[test]
fn sparse_inverses_precondition_newtons_updates() {
    use fem::host::problem::nonlinear::Assembly;
    use fem::host::solver::Krylov;
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let pn = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(2, 3, 2).build().unwrap()), 2, 3).unwrap();
    let setup = poisson(&cpu, &pn);
    let start = vec![0.0; setup.n_rows()];
    let with = |krylov, precond| NewtonOptions { krylov, precond, krylov_rtol: 1e-10, ..Default::default() };
    let newton = |setup: &Setup<Poisson>, o: &NewtonOptions| {
        let (u, r) = solve(&cpu, setup, &start, o, &mut |_| {}).unwrap();
        assert!(r.converged && r.steps.iter().all(|s| s.krylov_converged), "{}: {:?}", o.precond, r.residuals);
        (u, r.krylov_iterations)
    };
    let (u_j, j) = newton(&setup, &with(Krylov::Cg, Precond::Jacobi));
    let (u_s, s) = newton(&setup, &with(Krylov::Cg, Precond::Sainv));
    let (u_n, _) = newton(&setup, &with(Krylov::Cg, Precond::None));
    assert!(worst(&u_s, &u_j) < 1e-8 && worst(&u_n, &u_j) < 1e-8);
    assert!(s < j, "SAINV-CG {s} vs Jacobi-CG {j}");
    let (u_b, bj) = newton(&setup, &with(Krylov::BiCgStab, Precond::Jacobi));
    let (u_p, p) = newton(&setup, &with(Krylov::BiCgStab, Precond::Spai));
    assert!(worst(&u_b, &u_j) < 1e-8 && worst(&u_p, &u_j) < 1e-8);
    assert!(p < bj, "SPAI-BiCGStab {p} vs Jacobi-BiCGStab {bj}");
    let nested = NestedSpaces::new(CellMesh::Simplex(SimplexBox::unstructured(2, 3, 5).build().unwrap()), 2, 2).unwrap();
    let space = nested.finest();
    let surface = Setup::<MinimalSurface>::new(&cpu, space).unwrap();
    let start: Vec<f64> = space.dof_coords.iter().zip(&space.boundary).map(|(x, &b)| if b { (3.0 * x[0]).sin() * x[1] } else { 0.0 }).collect();
    let (u_j, j) = run(&cpu, &surface, &start, Precond::Jacobi);
    for (krylov, precond) in [(Krylov::Cg, Precond::Sainv), (Krylov::Gmres { restart: 30 }, Precond::Spai)] {
        let (u, r) = solve(&cpu, &surface, &start, &with(krylov, precond), &mut |_| {}).unwrap();
        assert!(r.converged && worst(&u, &u_j) < 1e-8 && r.steps.len() == j.steps.len(), "{precond}: {:?}", r.residuals);
    }
    let u0 = vec![0.0; setup.n_rows()];
    let step = |krylov, precond| {
        let o = TimeOptions { dt: 0.01, steps: 3, scheme: Scheme::Theta(1.0), newton: NewtonOptions { krylov_rtol: 1e-11, ..with(krylov, precond) } };
        integrate(&cpu, &setup, pn.finest(), &u0, Forcing::default(), &o, &mut |_, _, _| Ok(())).unwrap().0
    };
    let want = step(Krylov::Cg, Precond::Jacobi);
    assert!(worst(&step(Krylov::Cg, Precond::Sainv), &want) < 1e-8);
    assert!(worst(&step(Krylov::BiCgStab, Precond::Spai), &want) < 1e-8);
    let refused = |o: NewtonOptions| solve(&cpu, &setup, &vec![0.0; setup.n_rows()], &o, &mut |_| {}).unwrap_err().to_string();
    assert!(refused(with(Krylov::Cg, Precond::Spai)).contains("not symmetric"));
    for p in [Precond::Spai, Precond::Sainv] {
        let e = refused(NewtonOptions { assembly: Assembly::Lma, ..with(Krylov::BiCgStab, p) });
        assert!(e.contains("element matrices"), "{e}");
    }
}

/// Linear solves in f32 (`Precision::F32`): the tangent, the
/// preconditioner and the Krylov method on rounded copies, Newton's f64
/// residual refining. With every preconditioner the linear Poisson problem
/// reaches f64's solution to 1e-10 in more than one update (one f32
/// solve cannot), as do the nonlinear minimal surface and backward-Euler
/// steps; element matrices, applied in f64, are refused, and `auto`
/// assembles for f32.
#[test]
fn single_precision_solves_refine_to_double_precision() {
    use fem::host::problem::nonlinear::{Assembly, Precision};
    use fem::host::solver::Krylov;
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let pn = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(2, 3, 2).build().unwrap()), 2, 3).unwrap();
    let setup = poisson(&cpu, &pn);
    let start = vec![0.0; setup.n_rows()];
    let single = |krylov, precond| NewtonOptions { krylov, precond, precision: Precision::F32, krylov_rtol: 1e-10, ..Default::default() };
    let (want, _) = run(&cpu, &setup, &start, Precond::Jacobi);
    for (krylov, precond) in [(Krylov::Cg, Precond::Jacobi), (Krylov::Cg, Precond::None), (Krylov::Cg, Precond::Ssor), (Krylov::Cg, Precond::Sainv), (Krylov::BiCgStab, Precond::Spai), (Krylov::Cg, Precond::multigrid()), (Krylov::Richardson, Precond::multigrid())] {
        let (u, r) = solve(&cpu, &setup, &start, &single(krylov, precond), &mut |_| {}).unwrap();
        assert!(r.converged && r.precision == Precision::F32, "{krylov:?} {precond}: {:?}", r.residuals);
        assert!(r.steps.len() >= 2, "{krylov:?} {precond}: one f32 update reached {:?}", r.residuals);
        assert!(worst(&u, &want) < 1e-9, "{krylov:?} {precond}: {}", worst(&u, &want));
    }
    // a lagged tangent (the problem is linear) refines to the same solution
    let lagged = NewtonOptions { lag_tangent: true, ..single(Krylov::Cg, Precond::Sainv) };
    let (u, r) = solve(&cpu, &setup, &start, &lagged, &mut |_| {}).unwrap();
    assert!(r.converged && r.steps.len() >= 2 && worst(&u, &want) < 1e-9, "{:?}", r.residuals);
    let nested = NestedSpaces::new(CellMesh::Simplex(SimplexBox::unstructured(2, 3, 5).build().unwrap()), 2, 2).unwrap();
    let space = nested.finest();
    let surface = Setup::<MinimalSurface>::new(&cpu, space).unwrap();
    let start: Vec<f64> = space.dof_coords.iter().zip(&space.boundary).map(|(x, &b)| if b { (3.0 * x[0]).sin() * x[1] } else { 0.0 }).collect();
    let (want, _) = run(&cpu, &surface, &start, Precond::Jacobi);
    let (u, r) = solve(&cpu, &surface, &start, &single(Krylov::Cg, Precond::Jacobi), &mut |_| {}).unwrap();
    assert!(r.converged && worst(&u, &want) < 1e-9, "{:?}", r.residuals);
    let u0 = vec![0.0; setup.n_rows()];
    let step = |newton| {
        let o = TimeOptions { dt: 0.01, steps: 3, scheme: Scheme::Theta(1.0), newton };
        integrate(&cpu, &setup, pn.finest(), &u0, Forcing::default(), &o, &mut |_, _, _| Ok(())).unwrap().0
    };
    let want = step(NewtonOptions { krylov_rtol: 1e-11, ..Default::default() });
    assert!(worst(&step(single(Krylov::Cg, Precond::multigrid())), &want) < 1e-9);
    let e = solve(&cpu, &setup, &vec![0.0; setup.n_rows()], &NewtonOptions { assembly: Assembly::Lma, ..single(Krylov::Cg, Precond::Jacobi) }, &mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("single-precision"), "{e}");
}

/// Every linear solve starts from a zero correction, not from the last
/// one: a workspace solving the same problem twice from the same start
/// takes the same Krylov iterations both times, in f64 and in f32.
#[test]
fn every_update_starts_from_a_zero_correction() {
    use fem::host::problem::nonlinear::{Precision, Workspace};
    use fem::host::Backend;
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let nested = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(2, 3, 2).build().unwrap()), 2, 2).unwrap();
    let setup = poisson(&cpu, &nested);
    let start = vec![0.0; setup.n_rows()];
    for precision in [Precision::F64, Precision::F32] {
        let o = NewtonOptions { precision, ..Default::default() };
        let mut w = Workspace::new(&cpu, &setup, &o).unwrap();
        let mut iterations = Vec::new();
        for _ in 0..2 {
            let mut u = cpu.upload(&start).unwrap();
            let r = w.newton(&cpu, &mut u, &o, None, &mut |_| {}).unwrap();
            assert!(r.converged);
            iterations.push(r.steps.iter().map(|s| s.krylov_iterations).collect::<Vec<_>>());
        }
        assert_eq!(iterations[0], iterations[1], "{precision:?}");
    }
}

/// A set-up handed to the solve (its host copies let go of once the
/// backend holds them) solves as a borrowed one, with every
/// preconditioner and tangent storage.
#[test]
fn owned_set_ups_solve_as_borrowed_ones() {
    crate::common::owned_set_ups_solve_as_borrowed_ones(&CpuBackend::new(Some(2)).unwrap());
}

/// Every level of a hierarchy's multigrid set-up: its prolongation and
/// injection, and the coarse set-up's pattern, maps, fixed rows and cell
/// data.
fn level_parts<K: fem::kernels::pointwise::Kernels<f64>>(setup: &Setup<K>) -> Vec<(Vec<u32>, Vec<u32>, Vec<f64>, Vec<u32>, Vec<u32>, Vec<u32>, Vec<bool>, Vec<f64>, Vec<f64>)> {
    let levels = setup.levels.as_ref().expect("multigrid levels");
    levels
        .setups
        .iter()
        .zip(&levels.prolongation)
        .zip(&levels.injection)
        .map(|((s, p), i)| (p.row_ptr.clone(), p.col.clone(), p.val.clone(), i.col.clone(), s.csr.col.clone(), s.gather.clone(), s.fixed.clone(), s.physics.a.clone(), s.physics.x.clone()))
        .collect()
}

/// A hierarchy handed over to the multigrid set-up (its spaces, and the
/// set-up's own coefficients, let go of as the levels are made) gives the
/// levels a borrowed one gives, for a nodal coefficient and a cell one,
/// and returns the finest space only when asked to.
#[test]
fn owned_hierarchies_make_the_levels_borrowed_ones_do() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let nested = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(2, 3, 5).build().unwrap()), 2, 3).unwrap();
    let space = nested.finest();
    let coefficients: Vec<f64> = space.dof_coords.iter().flat_map(|x| [1.0 + x[0], x[1]]).collect();
    let constraints = Constraints::none(space, 1).dirichlet(space, &BoundaryPart::All, |_, u| u.fill(0.0)).unwrap();
    let flat = || Setup::<Poisson>::constrained(&cpu, space, Aux::Nodal(&coefficients), &constraints, None).unwrap();
    let borrowed = flat().with_multigrid(&cpu, &nested).unwrap();
    for keep in [false, true] {
        let (owned, finest) = flat().with_multigrid_owned(&cpu, &cpu, nested.clone(), keep).unwrap();
        assert_eq!(level_parts(&owned), level_parts(&borrowed), "Poisson, keep {keep}");
        // its own coefficients were taken for the levels and let go of
        assert!(owned.physics.a.is_empty() && !borrowed.physics.a.is_empty());
        assert_eq!(finest.map(|s| (s.n_dofs, s.dof_coords)), keep.then(|| (space.n_dofs, space.dof_coords.clone())));
    }

    let nested = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(3, 2, 5).build().unwrap()), 1, 3).unwrap();
    let space = nested.finest();
    let lame: Vec<f64> = (0..space.n_cells()).flat_map(|c| [1.0 + c as f64, 2.0]).collect();
    let constraints = Constraints::none(space, 3).dirichlet(space, &BoundaryPart::at("x = 0", |x| x[0] < 1e-12), |_, u| u.fill(0.0)).unwrap();
    let flat = || Setup::<Elasticity>::constrained(&cpu, space, Aux::Cell(&lame), &constraints, None).unwrap();
    let borrowed = flat().with_multigrid(&cpu, &nested).unwrap();
    let (owned, finest) = flat().with_multigrid_owned(&cpu, &cpu, nested.clone(), true).unwrap();
    assert_eq!(level_parts(&owned), level_parts(&borrowed), "elasticity");
    assert!(owned.physics.a.is_empty() && borrowed.physics.a.len() == lame.len());
    assert_eq!(finest.map(|s| s.cell_dofs), Some(space.cell_dofs.clone()));

    // one level: nothing below to make, the finest kept all the same
    let one = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(2, 3, 5).build().unwrap()), 1, 1).unwrap();
    let setup = Setup::<Poisson>::with_aux(&cpu, one.finest(), Aux::Nodal(&vec![1.0; 2 * one.finest().n_dofs])).unwrap();
    let (_, finest) = setup.with_multigrid_owned(&cpu, &cpu, one.clone(), true).unwrap();
    assert_eq!(finest.map(|s| s.n_dofs), Some(one.finest().n_dofs));
}
