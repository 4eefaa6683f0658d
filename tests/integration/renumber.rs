//! Renumbered spaces: every ordering of the nodes of every level gives the
//! same multigrid-preconditioned solution at the same points, in the same
//! iterations where the preconditioner does not depend on the order;
//! Cuthill–McKee narrows the bandwidth a random order widens, the
//! hierarchical order puts the coarser levels' nodes first, and a
//! renumbering that is not a permutation is refused.

use fem::host::mesh::simplex::SimplexBox;
use fem::host::mesh::BoxMesh;
use fem::host::operator::csr::Csr;
use fem::host::operator::pointwise::{field_layout, Aux};
use fem::host::problem::nonlinear::{solve, NewtonOptions, Precond, Setup};
use fem::host::solver::ordering::Ordering;
use fem::host::space::{BoundaryPart, CellMesh, Constraints, Load, NestedSpaces, Space};
use fem::host::CpuBackend;
use fem::kernels::physics::Poisson;
use std::collections::HashMap;

const ORDERINGS: [Ordering; 6] = [Ordering::Original, Ordering::TwoLevel, Ordering::Hierarchical, Ordering::CuthillMcKee, Ordering::Xyz, Ordering::Random];

/// Poisson with a load of x, u = 0 on the boundary; the solution and its
/// Krylov iterations with `precond`.
fn poisson(cpu: &CpuBackend, nested: &NestedSpaces, precond: Precond) -> (Vec<f64>, usize) {
    let space = nested.finest();
    let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
    let constraints = Constraints::none(space, 1).dirichlet(space, &BoundaryPart::All, |_, u| u.fill(0.0)).unwrap();
    let load = Load::zero(space, 1).source(space, |x, f| f[0] = 1.0 + x[0] * (3.0 * x[1]).sin());
    let setup = Setup::<Poisson>::constrained(cpu, space, Aux::Nodal(&coefficients), &constraints, Some(&load)).unwrap().with_multigrid(cpu, nested).unwrap();
    let o = NewtonOptions { precond, krylov_rtol: 1e-11, ..Default::default() };
    let (u, r) = solve(cpu, &setup, &vec![0.0; setup.n_rows()], &o, &mut |_| {}).unwrap();
    assert!(r.converged, "{precond}: {:?}", r.residuals);
    (u, r.krylov_iterations)
}

/// Node values by position, to compare numberings.
fn by_position(space: &Space, u: &[f64]) -> HashMap<[u64; 3], f64> {
    space.dof_coords.iter().zip(u).map(|(x, &v)| (x.map(|c| (c * 1e9).round() as i64 as u64), v)).collect()
}

fn bandwidth(cpu: &CpuBackend, space: &Space) -> usize {
    let a = Csr::<f64>::pattern(cpu, &field_layout(space, 1)).unwrap();
    (0..a.n_rows).flat_map(|r| a.col[a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize].iter().map(move |&c| (c as usize).abs_diff(r))).max().unwrap()
}

#[test]
fn every_ordering_gives_the_same_solution() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for mesh in [CellMesh::Tensor(BoxMesh::unstructured(2, 3, 4).build().unwrap()), CellMesh::Simplex(SimplexBox::unstructured(2, 3, 4).build().unwrap())] {
        let original = NestedSpaces::new(mesh.clone(), 2, 3).unwrap();
        let (want, want_its) = poisson(&cpu, &original, Precond::multigrid());
        let want = by_position(original.finest(), &want);
        let scale = want.values().fold(0.0f64, |m, v| m.max(v.abs()));
        for ordering in ORDERINGS {
            let nested = NestedSpaces::new(mesh.clone(), 2, 3).unwrap().renumbered(&cpu, ordering, 7).unwrap();
            let (u, its) = poisson(&cpu, &nested, Precond::multigrid());
            let got = by_position(nested.finest(), &u);
            assert_eq!(got.len(), want.len());
            let worst = got.iter().map(|(x, v)| (v - want[x]).abs()).fold(0.0, f64::max);
            assert!(worst < 1e-8 * scale, "{ordering:?}: differs by {worst}");
            // Jacobi-smoothed multigrid does not depend on the order
            assert!(its.abs_diff(want_its) <= 1, "{ordering:?}: {its} against {want_its} iterations");
            // an order-dependent preconditioner reaches the same solution
            let (u, _) = poisson(&cpu, &nested, Precond::Sainv);
            let worst = by_position(nested.finest(), &u).iter().map(|(x, v)| (v - want[x]).abs()).fold(0.0, f64::max);
            assert!(worst < 1e-8 * scale, "{ordering:?} SAINV: differs by {worst}");
        }
    }
}

#[test]
fn orderings_do_what_they_say() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let mesh = CellMesh::Tensor(BoxMesh::unstructured(2, 4, 5).build().unwrap());
    let band = |o| bandwidth(&cpu, NestedSpaces::new(mesh.clone(), 1, 3).unwrap().renumbered(&cpu, o, 7).unwrap().finest());
    let (cm, random) = (band(Ordering::CuthillMcKee), band(Ordering::Random));
    assert!(4 * cm < random, "Cuthill–McKee {cm}, random {random}");
    let hie = NestedSpaces::new(mesh.clone(), 1, 3).unwrap().renumbered(&cpu, Ordering::Hierarchical, 7).unwrap();
    for l in 1..3 {
        let (coarse, fine) = (&hie.spaces[l - 1], &hie.spaces[l]);
        assert_eq!(&fine.dof_coords[..coarse.n_dofs], &coarse.dof_coords[..], "level {l} starts with level {}'s nodes", l - 1);
    }
    let xyz = NestedSpaces::new(mesh.clone(), 1, 2).unwrap().renumbered(&cpu, Ordering::Xyz, 7).unwrap();
    assert!(xyz.finest().dof_coords.windows(2).all(|w| (w[0][1], w[0][0]) <= (w[1][1], w[1][0])));
    let space = NestedSpaces::new(mesh, 1, 1).unwrap().spaces.pop().unwrap();
    let mut perm: Vec<u32> = (0..space.n_dofs as u32).collect();
    perm[1] = 0;
    assert!(space.clone().renumbered(&perm).unwrap_err().to_string().contains("permutation"));
    assert!(space.renumbered(&perm[1..]).is_err());
}
