//! Boundary terms of a `#[fem_kernel]` physics (bf0 and its linearisation)
//! in Newton solves: the shipped `Radiation` physics, −Δu = f with the
//! nonlinear Robin condition ∂u/∂n + u + u|u|³ = g on the faces x = 0 and
//! x = 1 (outward normals of both signs) and Dirichlet values elsewhere,
//! against a manufactured solution, on every cell kind, on the CPU and the
//! GPU, with and without multigrid, its linearisation as element matrices
//! or, beside the cells' partial assembly and matrix-free action, by its
//! facet points.

use crate::common;

use fem::host::mesh::simplex::SimplexBox;
use fem::host::mesh::BoxMesh;
use fem::host::operator::pointwise::Aux;
use fem::host::operator::pointwise::partial::points_per_cell;
use fem::host::problem::nonlinear::{solve, Assembly, NewtonOptions, NewtonReport, NewtonOps, PmgOptions, Precond, Scatter, Setup};
use fem::host::space::integrate::l2_error;
use fem::host::space::{BoundaryPart, CellMesh, Constraints, NestedSpaces, Space};
use fem::host::CpuBackend;
use fem::kernels::physics::{Poisson, Radiation};

/// u = eˣ sin(y) / 2 + x² / 4, so −Δu = −1/2.
fn exact(x: &[f64; 3]) -> f64 {
    0.5 * x[0].exp() * x[1].sin() + 0.25 * x[0] * x[0]
}

fn robin_face(c: &[f64; 3]) -> bool {
    c[0] < 1e-9 || c[0] > 1.0 - 1e-9
}

/// The set-up on `s`: nodal f and g = ∂u/∂n + u + u|u|³ (n = ∓x on
/// x = 0 and x = 1), the Robin term on those faces, u held elsewhere.
fn setup(cpu: &CpuBackend, s: &Space) -> (Setup<Radiation>, Vec<f64>) {
    setup_on(cpu, cpu, s)
}

/// [`setup`] for backend `b`: with its cell data per node where `b`
/// makes the E-vectors itself, the Robin term's cells' data too.
fn setup_on<B: NewtonOps>(b: &B, cpu: &CpuBackend, s: &Space) -> (Setup<Radiation>, Vec<f64>) {
    let aux: Vec<f64> = s
        .dof_coords
        .iter()
        .flat_map(|x| {
            let (u, dx) = (exact(x), 0.5 * x[0].exp() * x[1].sin() + 0.5 * x[0]);
            let dn = if x[0] < 0.5 { -dx } else { dx };
            [-0.5, dn + u + u * u.abs().powi(3)]
        })
        .collect();
    let bcs = Constraints::none(s, 1).dirichlet(s, &BoundaryPart::at("y or z faces", |c| !robin_face(c)), |x, u| u[0] = exact(x)).unwrap();
    let setup = Setup::<Radiation>::constrained_on(b, cpu, s, Aux::Nodal(&aux), &bcs, None).unwrap();
    let setup = setup.with_boundary_term(s, &BoundaryPart::at("x = 0 or x = 1", robin_face)).unwrap();
    (setup, bcs.initial())
}

fn newton<B: NewtonOps>(b: &B, setup: &Setup<Radiation>, start: &[f64], precond: Precond) -> (Vec<f64>, NewtonReport) {
    let o = NewtonOptions { precond, ..Default::default() };
    let (u, r) = solve(b, setup, start, &o, &mut |_| {}).unwrap();
    assert!(r.converged, "{:?}", r.residuals);
    (u, r)
}

fn space(simplex: bool, dim: usize, n: usize, p: usize) -> Space {
    if simplex {
        Space::simplex(&SimplexBox::unstructured(dim, n, 5).build().unwrap(), p).unwrap()
    } else {
        Space::tensor(&BoxMesh::unstructured(dim, n, 5).build().unwrap(), p).unwrap()
    }
}

/// The L2 error falls at order p + 1, and Newton converges quadratically:
/// once ‖R‖ is small, each update squares its relative size (the boundary
/// term's tangent bg0 is in the matrix; without it convergence would be
/// linear).
#[test]
fn a_nonlinear_robin_condition_converges_at_order_p_plus_one_with_quadratic_newton() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for (simplex, dim, p, n) in [(true, 2, 1, 8), (true, 2, 2, 4), (false, 2, 1, 8), (false, 2, 2, 4), (true, 3, 1, 4), (true, 3, 2, 2), (false, 3, 1, 4), (false, 3, 2, 2)] {
        let label = format!("{} {dim}D p = {p}", if simplex { "simplex" } else { "tensor" });
        let errors: Vec<f64> = [n, 2 * n]
            .iter()
            .map(|&n| {
                let s = space(simplex, dim, n, p);
                let (setup, start) = setup(&cpu, &s);
                let (u, r) = newton(&cpu, &setup, &start, Precond::Jacobi);
                let rel: Vec<f64> = r.residuals.iter().map(|v| v / r.residuals[0]).collect();
                for w in rel.windows(2).filter(|w| w[0] < 1e-2 && w[1] > 1e-11) {
                    assert!(w[1] < 10.0 * w[0] * w[0], "{label}: not quadratic: {rel:?}");
                }
                assert!(r.steps.len() <= 8, "{label}: {rel:?}");
                l2_error(&s, 1, &u, |x, e| e[0] = exact(x))
            })
            .collect();
        let order = (errors[0] / errors[1]).log2();
        assert!(order > p as f64 + 0.7, "{label}: {errors:?}, order {order}");
    }
}

/// Multigrid by rediscretisation carries the boundary term to every level
/// (refined facets keep their coarse keys): same solution as Jacobi, in
/// fewer Krylov iterations.
#[test]
fn multigrid_levels_carry_the_boundary_term() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for mesh in [CellMesh::Simplex(SimplexBox::unstructured(2, 2, 3).build().unwrap()), CellMesh::Tensor(BoxMesh::unstructured(3, 2, 3).build().unwrap())] {
        let nested = NestedSpaces::new(mesh, 2, 3).unwrap();
        let (setup, start) = setup(&cpu, nested.finest());
        let setup = setup.with_multigrid(&cpu, &nested).unwrap();
        let levels = setup.levels.as_ref().unwrap();
        assert!(levels.setups.iter().all(|l| l.facets.as_ref().is_some_and(|t| !t.is_empty())));
        let (u_j, j) = newton(&cpu, &setup, &start, Precond::Jacobi);
        let (u_mg, mg) = newton(&cpu, &setup, &start, Precond::multigrid());
        let worst = u_j.iter().zip(&u_mg).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(worst < 1e-8, "{worst:e}");
        assert!(2 * mg.krylov_iterations < j.krylov_iterations, "multigrid {} vs Jacobi {}", mg.krylov_iterations, j.krylov_iterations);
    }
}

/// The GPU's facet kernels and assembly give the CPU's Newton iterates.
#[test]
fn gpu_boundary_terms_equal_the_cpus() {
    let Some(gpu) = common::gpu("gpu_boundary_terms_equal_the_cpus") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    for s in [space(true, 2, 6, 2), space(false, 3, 3, 2), space(true, 3, 3, 2), space(true, 3, 3, 1), space(false, 2, 5, 1)] {
        let (setup, start) = setup(&cpu, &s);
        // the device's map of the tangent's entries, facets and fixed rows included, is the host's
        assert_eq!(setup.entry_pos_on(&gpu).unwrap(), setup.entry_pos(), "{:?} p{}", s.shape, s.degree);
        // and its map of the residual's rows
        let residual = setup.residual_pos();
        assert!(residual.contains(&u32::MAX) && residual.iter().any(|&r| r != u32::MAX));
        assert_eq!(setup.residual_pos_on(&gpu).unwrap(), (residual, setup.fixed_mask()), "{:?} p{}", s.shape, s.degree);
        let (u_c, c) = newton(&cpu, &setup, &start, Precond::Jacobi);
        let (u_g, g) = newton(&gpu, &setup, &start, Precond::Jacobi);
        assert_eq!(c.steps.len(), g.steps.len());
        let worst = u_c.iter().zip(&u_g).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(worst < 1e-10, "{:?} p{}: {worst:e}", s.shape, s.degree);
        // set up for the GPU: the cells' and the facets' data made there
        // from the nodes
        let (nodal, _) = setup_on(&gpu, &cpu, &s);
        assert!(nodal.cells.is_some() && nodal.physics.x.is_empty(), "{:?} p{}", s.shape, s.degree);
        let (u_n, n) = newton(&gpu, &nodal, &start, Precond::Jacobi);
        let worst = u_c.iter().zip(&u_n).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(n.steps.len() == c.steps.len() && worst < 1e-10, "{:?} p{}, per node: {worst:e}", s.shape, s.degree);
    }
}

fn wave(n: usize, k: f64) -> Vec<f64> {
    (0..n).map(|i| (k * i as f64).sin()).collect()
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
}

/// The cells' storages by their points on `b` (partial assembly, and on
/// hexahedra the matrix-free action) with the Robin term's linearisation
/// by its facet points, against its element matrices with the facets' at
/// a state `u`: the product (held rows kept) and the diagonal.
fn by_points_against_elements<B: NewtonOps>(b: &B, setup: &Setup<Radiation>, label: &str) {
    let state = b.prepare(setup, None, Scatter::Atomic).unwrap();
    let (rows, facets) = (setup.n_rows(), setup.facet_point_values());
    assert!(facets > 0, "{label}");
    let mut ue = b.zeros(setup.gather.len()).unwrap();
    b.gather(&state, &b.upload(&wave(rows, 0.37)).unwrap(), &mut ue).unwrap();
    let mut kelem = b.zeros(setup.entry_len()).unwrap();
    b.elements(&state, true, &ue, &mut kelem).unwrap();
    let x = b.upload(&wave(rows, 1.91)).unwrap();
    let (mut y, mut d) = (b.zeros(rows).unwrap(), b.zeros(rows).unwrap());
    b.element_product(&state, &kelem, &x, &mut y).unwrap();
    b.element_diagonal(&state, &kelem, &mut d).unwrap();
    let (want, want_d) = (b.download(&y).unwrap(), b.download(&d).unwrap());
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let check = |y: &B::Vector<f64>, d: &B::Vector<f64>, what: &str| {
        let (got, got_d) = (b.download(y).unwrap(), b.download(d).unwrap());
        assert!(max_diff(&got, &want) <= 1e-12 * scale, "{label} {what}: product {:e} of {scale:e}", max_diff(&got, &want));
        assert!(max_diff(&got_d, &want_d) <= 1e-12 * scale, "{label} {what}: diagonal {:e}", max_diff(&got_d, &want_d));
    };
    let v = &setup.physics.variant;
    let mut g = b.zeros(setup.physics.n_cells * points_per_cell(v) + facets).unwrap();
    b.points(&state, &ue, &mut g).unwrap();
    b.partial_product(&state, &g, &x, &mut y).unwrap();
    b.partial_diagonal(&state, &g, &mut d).unwrap();
    check(&y, &d, "partial");
    if v.matrix_free {
        let mut held = b.zeros(setup.gather.len() + facets).unwrap();
        b.hold_state(&state, &ue, &mut held).unwrap();
        b.free_product(&state, &held, &x, &mut y).unwrap();
        b.free_diagonal(&state, &held, &mut d).unwrap();
        check(&y, &d, "matrix-free");
    }
}

/// The Robin term kept by its facet points beside the cells' partial
/// assembly or matrix-free action applies as its element matrices, and
/// Newton with it, with Jacobi or p-multigrid (whose Q1 level carries the
/// term), reaches the element matrices' solution in as many updates.
#[test]
fn robin_terms_kept_by_the_points_apply_as_element_matrices() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for (dim, n) in [(2, 4), (3, 2)] {
        let s = space(false, dim, n, 2);
        let label = format!("Q2 {dim}D");
        let (setup, start) = setup(&cpu, &s);
        by_points_against_elements(&cpu, &setup, &label);
        let lma = NewtonOptions { assembly: Assembly::Lma, rtol: 1e-11, krylov_rtol: 1e-12, ..Default::default() };
        let (want, reference) = solve(&cpu, &setup, &start, &lma, &mut |_| {}).unwrap();
        let levels: &[Assembly] = if dim == 3 { &[Assembly::Partial, Assembly::MatrixFree] } else { &[Assembly::Partial] };
        for &assembly in levels {
            let (u, r) = solve(&cpu, &setup, &start, &NewtonOptions { assembly, ..lma }, &mut |_| {}).unwrap();
            assert!(r.converged && r.steps.len() == reference.steps.len(), "{label} {assembly}: {:?} against {:?}", r.residuals, reference.residuals);
            assert!(max_diff(&u, &want) < 1e-9, "{label} {assembly}: {:e}", max_diff(&u, &want));
        }
        let (jacobi, j) = solve(&cpu, &setup, &start, &NewtonOptions { assembly: Assembly::Partial, ..lma }, &mut |_| {}).unwrap();
        let (pmg, _) = setup_on(&cpu, &cpu, &s);
        let pmg = pmg.with_p_multigrid_on(&cpu, &cpu, &s).unwrap();
        assert!(pmg.levels.as_ref().unwrap().setups[0].facets.as_ref().is_some_and(|t| t.len() == setup.facets.as_ref().unwrap().len()), "{label}: the Q1 level's facets");
        let o = NewtonOptions { assembly: Assembly::Partial, precond: Precond::PMultigrid(PmgOptions::default()), ..lma };
        let (u, r) = solve(&cpu, &pmg, &start, &o, &mut |_| {}).unwrap();
        assert!(r.converged && max_diff(&u, &jacobi) < 1e-9, "{label} p-multigrid: {:e}", max_diff(&u, &jacobi));
        assert!(2 * r.krylov_iterations < j.krylov_iterations, "{label}: p-multigrid {} against Jacobi {}", r.krylov_iterations, j.krylov_iterations);
    }
}

/// The GPU's facet point data and their products (partial assembly and
/// the matrix-free tangent) give the CPU's, and Newton with them the
/// CPU's solution with element matrices.
#[test]
fn gpu_robin_terms_kept_by_the_points_equal_the_cpus() {
    let Some(gpu) = common::gpu("gpu_robin_terms_kept_by_the_points_equal_the_cpus") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let s = space(false, 3, 3, 2);
    let (setup, start) = setup(&cpu, &s);
    by_points_against_elements(&gpu, &setup, "GPU Q2 3D");
    let lma = NewtonOptions { assembly: Assembly::Lma, rtol: 1e-11, krylov_rtol: 1e-12, ..Default::default() };
    let (want, reference) = solve(&cpu, &setup, &start, &lma, &mut |_| {}).unwrap();
    let (nodal, _) = setup_on(&gpu, &cpu, &s);
    for assembly in [Assembly::Partial, Assembly::MatrixFree] {
        let (u, r) = solve(&gpu, &nodal, &start, &NewtonOptions { assembly, ..lma }, &mut |_| {}).unwrap();
        assert!(r.converged && r.steps.len() == reference.steps.len() && max_diff(&u, &want) < 1e-9, "{assembly}: {:e}", max_diff(&u, &want));
    }
}

#[test]
fn a_boundary_term_needs_a_physics_that_has_one_and_facets_to_act_on() {
    let cpu = CpuBackend::new(Some(1)).unwrap();
    let s = space(true, 2, 2, 1);
    let aux: Vec<f64> = (0..s.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
    let e = Setup::<Poisson>::with_aux(&cpu, &s, Aux::Nodal(&aux)).unwrap().with_boundary_term(&s, &BoundaryPart::All).err().unwrap().to_string();
    assert!(e.contains("poisson") && e.contains("bf0"), "{e}");
    let (setup, _) = setup(&cpu, &s);
    let e = setup.with_boundary_term(&s, &BoundaryPart::at("x = 2", |c| c[0] > 1.5)).err().unwrap().to_string();
    assert!(e.contains("`x = 2`"), "{e}");
}
