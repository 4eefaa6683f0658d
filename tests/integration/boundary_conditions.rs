//! Dirichlet and Neumann conditions on every cell kind, against
//! manufactured solutions: the L2 error falls at order p + 1, and
//! solutions in the space are reproduced to rounding (which a wrong
//! normal, measure or sign would spoil).

use fem::host::mesh::simplex::SimplexBox;
use fem::host::mesh::BoxMesh;
use fem::host::operator::pointwise::Aux;
use fem::host::problem::nonlinear::{solve, NewtonOptions, Setup};
use fem::host::space::integrate::l2_error;
use fem::host::space::{BoundaryPart, Constraints, Load, Space};
use fem::host::CpuBackend;
use fem::kernels::physics::{Elasticity, Poisson};
use fem::kernels::pointwise::Kernels;

/// The space of `kind` ("simplex"/"tensor") of degree `p` on `n` cells per side, perturbed and shuffled.
fn space(kind: &str, dim: usize, n: usize, p: usize) -> Space {
    if kind == "simplex" {
        Space::simplex(&SimplexBox::unstructured(dim, n, 11).build().unwrap(), p).unwrap()
    } else {
        Space::tensor(&BoxMesh::unstructured(dim, n, 11).build().unwrap(), p).unwrap()
    }
}

/// Newton on the CPU from the held values of `bcs`, which must converge.
fn solved<K: Kernels<f64> + 'static>(cpu: &CpuBackend, setup: &Setup<K>, bcs: &Constraints) -> Vec<f64> {
    let (u, r) = solve(cpu, setup, &bcs.initial(), &NewtonOptions::default(), &mut |_| {}).unwrap();
    assert!(r.converged, "{:?}", r.residuals);
    u
}

/// Neumann on x = 1 and y = 0, Dirichlet on the rest.
fn parts() -> (BoundaryPart, BoundaryPart) {
    let neumann = |c: &[f64; 3]| c[0] > 1.0 - 1e-9 || c[1] < 1e-9;
    (
        BoundaryPart::at("x = 1 or y = 0", neumann),
        BoundaryPart::at("the rest", move |c| !neumann(c)),
    )
}

/// −Δu = 0 with u = eˣ sin y: Dirichlet values from u, the flux ∇u·n on
/// the Neumann part. Returns the L2 error.
fn harmonic(s: &Space) -> f64 {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let exact = |x: &[f64; 3]| x[0].exp() * x[1].sin();
    let (neumann, dirichlet) = parts();
    let bcs = Constraints::none(s, 1)
        .dirichlet(s, &dirichlet, |x, u| u[0] = exact(x))
        .unwrap();
    let load = Load::zero(s, 1)
        .neumann(s, &neumann, |x, n, g| {
            g[0] = x[0].exp() * (x[1].sin() * n[0] + x[1].cos() * n[1])
        })
        .unwrap();
    let coefficients: Vec<f64> = (0..s.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
    let setup =
        Setup::<Poisson>::constrained(&cpu, s, Aux::Nodal(&coefficients), &bcs, Some(&load))
            .unwrap();
    let u = solved(&cpu, &setup, &bcs);
    l2_error(s, 1, &u, |x, e| e[0] = exact(x))
}

#[test]
fn dirichlet_and_neumann_by_part_converge_at_order_p_plus_one() {
    for (kind, dim, p, n) in [
        ("simplex", 2, 1, 8),
        ("simplex", 2, 2, 4),
        ("tensor", 2, 1, 8),
        ("tensor", 2, 2, 4),
        ("simplex", 3, 1, 4),
        ("simplex", 3, 2, 2),
        ("tensor", 3, 1, 4),
        ("tensor", 3, 2, 2),
        ("tensor", 2, 3, 2),
        ("tensor", 3, 3, 2),
    ] {
        let (coarse, fine) = (
            harmonic(&space(kind, dim, n, p)),
            harmonic(&space(kind, dim, 2 * n, p)),
        );
        let order = (coarse / fine).log2();
        assert!(
            order > p as f64 + 0.7,
            "{kind} {dim}D p = {p}: {coarse:e} → {fine:e}, order {order}"
        );
    }
}

/// Linear elasticity with a quadratic displacement, which P2 holds: the
/// body force is constant, the traction σ(x)·n is linear on the Neumann
/// part; the nodes must carry the exact values.
#[test]
fn p2_elasticity_reproduces_a_quadratic_displacement_with_traction_and_body_force() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let (lambda, mu) = (1.3, 0.7);
    for dim in [2, 3] {
        let s = space("simplex", dim, 3, 2);
        // u_c = Σ_ab A[c][a][b] x_a x_b with A symmetric in a, b
        let a =
            |c: usize, i: usize, j: usize| [0.3, -0.2, 0.5][(c + i + j) % 3] + 0.1 * (i * j) as f64;
        let u = move |x: &[f64; 3], out: &mut [f64]| {
            for (c, o) in out.iter_mut().enumerate() {
                *o = (0..dim)
                    .flat_map(|i| (0..dim).map(move |j| (i, j)))
                    .map(|(i, j)| a(c, i, j) * x[i] * x[j])
                    .sum();
            }
        };
        let grad = move |x: &[f64; 3], c: usize, k: usize| -> f64 {
            (0..dim).map(|j| 2.0 * a(c, k, j) * x[j]).sum()
        };
        let stress = move |x: &[f64; 3], c: usize, d: usize| -> f64 {
            let trace: f64 = (0..dim).map(|k| grad(x, k, k)).sum();
            (if c == d { lambda * trace } else { 0.0 }) + mu * (grad(x, c, d) + grad(x, d, c))
        };
        // f_c = −∂_d σ_cd, with ∂_a ∂_b u_c = 2 A[c][a][b]
        let force: Vec<f64> = (0..dim)
            .map(|c| {
                -(0..dim)
                    .map(|d| {
                        (if c == d {
                            lambda * (0..dim).map(|k| 2.0 * a(k, k, d)).sum::<f64>()
                        } else {
                            0.0
                        }) + mu * (2.0 * a(c, d, d) + 2.0 * a(d, c, d))
                    })
                    .sum::<f64>()
            })
            .collect();
        let (neumann, dirichlet) = parts();
        let bcs = Constraints::none(&s, dim)
            .dirichlet(&s, &dirichlet, u)
            .unwrap();
        let load = Load::zero(&s, dim)
            .source(&s, |_, f| f.copy_from_slice(&force))
            .neumann(&s, &neumann, |x, n, g| {
                for (c, gc) in g.iter_mut().enumerate() {
                    *gc = (0..dim).map(|d| stress(x, c, d) * n[d]).sum();
                }
            })
            .unwrap();
        let cells: Vec<f64> = (0..s.n_cells()).flat_map(|_| [lambda, mu]).collect();
        let setup =
            Setup::<Elasticity>::constrained(&cpu, &s, Aux::Cell(&cells), &bcs, Some(&load))
                .unwrap();
        let uh = solved(&cpu, &setup, &bcs);
        let want = s.interpolate(dim, u);
        let worst = uh
            .iter()
            .zip(&want)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(worst < 1e-9, "{dim}D: {worst:e}");
    }
}

#[test]
fn an_empty_boundary_part_or_a_wrong_component_is_an_error() {
    let s = space("simplex", 2, 2, 1);
    let nowhere = BoundaryPart::at("x = 2", |c| c[0] > 1.5);
    let e = Constraints::none(&s, 1)
        .dirichlet(&s, &nowhere, |_, u| u[0] = 0.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`x = 2`") && e.contains("no facet"), "{e}");
    assert!(Load::zero(&s, 1)
        .neumann(&s, &nowhere, |_, _, g| g[0] = 1.0)
        .is_err());
    assert!(Constraints::none(&s, 2)
        .dirichlet_components(&s, &BoundaryPart::All, &[2], |_, u| u.fill(0.0))
        .is_err());
    let cpu = CpuBackend::new(Some(1)).unwrap();
    let scalar = Constraints::none(&s, 1);
    let cells: Vec<f64> = (0..s.n_cells()).flat_map(|_| [1.0, 1.0]).collect();
    assert!(Setup::<Elasticity>::constrained(&cpu, &s, Aux::Cell(&cells), &scalar, None).is_err());
}
