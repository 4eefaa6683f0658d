//! Boundary terms of a `#[fem_kernel]` physics (bf0 and its linearisation)
//! in Newton solves: the shipped `Radiation` physics, −Δu = f with the
//! nonlinear Robin condition ∂u/∂n + u + u|u|³ = g on the faces x = 0 and
//! x = 1 (outward normals of both signs) and Dirichlet values elsewhere,
//! against a manufactured solution, on every cell kind, on the CPU and the
//! GPU, with and without multigrid.

use crate::common;

use fem::host::mesh::simplex::SimplexBox;
use fem::host::mesh::BoxMesh;
use fem::host::operator::pointwise::Aux;
use fem::host::problem::nonlinear::{solve, NewtonOptions, NewtonReport, NewtonOps, Precond, Setup};
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
