//! The `#[fem_kernel]` physics on the CPU: generated kernels against a
//! quadrature loop written here independently, vanishing residuals of
//! exactly representable manufactured solutions, rigid-body motions, and
//! element matrices that are the derivative of the residual.

use crate::common;
use common::pointwise_space as space_for;
use fem::core::physics::Terms;
use fem::core::shape::Shape;
use fem::host::mesh::simplex::SimplexBox;
use fem::host::operator::pointwise::{assemble_csr, Aux, Pointwise};
use fem::host::space::Space;
use fem::host::CpuBackend;
use fem::core::physics::Physics;
use fem::kernels::physics::{Elasticity, Mass, MinimalSurface, Monodomain, NeoHookean, Poisson};
use fem::kernels::pointwise::{Kernels, Variant};

fn cpu() -> CpuBackend {
    CpuBackend::new(None).unwrap()
}

/// Lamé parameters per cell, varying.
fn lame(cells: usize) -> Vec<f64> {
    (0..cells).flat_map(|c| [1.0 + (c % 7) as f64 * 0.1, 0.5 + (c % 3) as f64 * 0.2]).collect()
}

/// Reference quantities at one quadrature point of one cell, computed
/// directly from the shape functions: weight·|J|, the physical basis
/// gradients and values.
struct RefPoint {
    wdet: f64,
    phi: Vec<f64>,
    grad: Vec<[f64; 3]>,
}

fn ref_points(v: &Variant, coords: &[f64]) -> Vec<RefPoint> {
    let (s, d, nb, nv) = (v.shape, v.dim(), v.n_basis(), v.shape.vertices());
    let (mut pts, mut w) = (vec![0.0; v.nq * d], vec![0.0; v.nq]);
    assert!(s.rule(v.nq, &mut pts, &mut w));
    (0..v.nq)
        .map(|q| {
            let xi = &pts[q * d..(q + 1) * d];
            let (mut gv, mut gg) = (vec![0.0; nv], vec![0.0; nv * d]);
            s.geometry_basis(xi, &mut gv, &mut gg);
            // J[a][e] = Σ_v x_v[a] ∂ψ_v/∂ξ_e
            let mut j = [[0.0; 3]; 3];
            for vtx in 0..nv {
                for a in 0..d {
                    for e in 0..d {
                        j[a][e] += coords[vtx * d + a] * gg[vtx * d + e];
                    }
                }
            }
            let (det, inv) = invert(j, d);
            let (mut phi, mut g) = (vec![0.0; nb], vec![0.0; nb * d]);
            s.basis(v.degree, xi, &mut phi, &mut g);
            // ∇φ = J⁻ᵀ ∇̂φ
            let grad = (0..nb)
                .map(|b| {
                    let mut out = [0.0; 3];
                    for a in 0..d {
                        for e in 0..d {
                            out[a] += inv[e][a] * g[b * d + e];
                        }
                    }
                    out
                })
                .collect();
            RefPoint { wdet: w[q] * det, phi, grad }
        })
        .collect()
}

/// Determinant and inverse by cofactors (d = 2 or 3).
fn invert(m: [[f64; 3]; 3], d: usize) -> (f64, [[f64; 3]; 3]) {
    let mut m = m;
    if d == 2 {
        m[2][2] = 1.0;
    }
    let c = |i: usize, j: usize| {
        let (i1, i2, j1, j2) = ((i + 1) % 3, (i + 2) % 3, (j + 1) % 3, (j + 2) % 3);
        m[i1][j1] * m[i2][j2] - m[i1][j2] * m[i2][j1]
    };
    let det = m[0][0] * c(0, 0) + m[0][1] * c(0, 1) + m[0][2] * c(0, 2);
    let mut inv = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            inv[j][i] = c(i, j) / det;
        }
    }
    (det, inv)
}

/// Poisson's element residuals by the plain loop: Σ_q w|J| (∇φ_b·κ∇u − φ_b f).
fn poisson_reference(v: &Variant, space: &Space, u: &[f64], aux: &[f64]) -> Vec<f64> {
    let (nb, d, nv) = (v.n_basis(), v.dim(), v.shape.vertices());
    let (mut out, xs) = (vec![0.0; space.n_cells() * nb], space.cell_coords());
    for c in 0..space.n_cells() {
        let dofs = &space.cell_dofs[c * nb..(c + 1) * nb];
        for p in ref_points(v, &xs[c * nv * d..(c + 1) * nv * d]) {
            let (mut kappa, mut f, mut du) = (0.0, 0.0, [0.0; 3]);
            for b in 0..nb {
                let g = dofs[b] as usize;
                kappa += p.phi[b] * aux[2 * g];
                f += p.phi[b] * aux[2 * g + 1];
                for a in 0..d {
                    du[a] += p.grad[b][a] * u[g];
                }
            }
            for b in 0..nb {
                let flux: f64 = (0..d).map(|a| p.grad[b][a] * kappa * du[a]).sum();
                out[c * nb + b] += p.wdet * (flux - p.phi[b] * f);
            }
        }
    }
    out
}

/// Elasticity's element residuals by the plain loop: Σ_q w|J| ∇φ_b · σ.
fn elasticity_reference(v: &Variant, space: &Space, u: &[f64], lame: &[f64]) -> Vec<f64> {
    let (nb, d, nv) = (v.n_basis(), v.dim(), v.shape.vertices());
    let (mut out, xs) = (vec![0.0; space.n_cells() * nb * d], space.cell_coords());
    for c in 0..space.n_cells() {
        let dofs = &space.cell_dofs[c * nb..(c + 1) * nb];
        let (lambda, mu) = (lame[2 * c], lame[2 * c + 1]);
        for p in ref_points(v, &xs[c * nv * d..(c + 1) * nv * d]) {
            let mut du = [[0.0; 3]; 3];
            for b in 0..nb {
                for comp in 0..d {
                    for a in 0..d {
                        du[comp][a] += p.grad[b][a] * u[dofs[b] as usize * d + comp];
                    }
                }
            }
            let tr: f64 = (0..d).map(|k| du[k][k]).sum();
            for b in 0..nb {
                for comp in 0..d {
                    let s: f64 = (0..d)
                        .map(|a| {
                            let sigma = mu * (du[comp][a] + du[a][comp]) + if comp == a { lambda * tr } else { 0.0 };
                            p.grad[b][a] * sigma
                        })
                        .sum();
                    out[(c * nb + b) * d + comp] += p.wdet * s;
                }
            }
        }
    }
    out
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
}

use common::random_values as random;

/// Poisson data: κ > 0 and f varying over the nodes.
fn poisson_aux(space: &Space) -> Vec<f64> {
    space.interpolate(2, |x, o| {
        o[0] = 1.0 + 0.5 * (3.0 * x[0]).sin() * x[1];
        o[1] = x[0] - 2.0 * x[1] * x[1] + x[2];
    })
}

#[test]
fn generated_poisson_kernels_match_a_plain_quadrature_loop() {
    let cpu = cpu();
    for v in <Poisson as Kernels<f64>>::VARIANTS {
        let space = space_for(v, 3);
        let aux = poisson_aux(&space);
        let u = random(space.n_dofs, 3);
        let op = Pointwise::<f64, Poisson>::new(&space, Some(v.nq), Aux::Nodal(&aux)).unwrap();
        assert_eq!(op.variant, *v);
        let got = op.residual_cpu(&cpu, &space.gather(1, &u)).unwrap();
        let want = poisson_reference(v, &space, &u, &aux);
        let err = max_diff(&got, &want) / max_abs(&want);
        assert!(err < 1e-13, "{} p{} q{}: {err:e}", v.shape.name(), v.degree, v.nq);
        // f32 follows to its own rounding
        let op32 = Pointwise::<f32, Poisson>::new(&space, Some(v.nq), Aux::Nodal(&aux)).unwrap();
        let u32: Vec<f32> = space.gather(1, &u).iter().map(|&x| x as f32).collect();
        let got32: Vec<f64> = op32.residual_cpu(&cpu, &u32).unwrap().iter().map(|&x| x as f64).collect();
        assert!(max_diff(&got32, &want) / max_abs(&want) < 1e-4);
    }
}

#[test]
fn generated_elasticity_kernels_match_a_plain_quadrature_loop() {
    let cpu = cpu();
    for v in <Elasticity as Kernels<f64>>::VARIANTS {
        let space = space_for(v, 2);
        let d = v.dim();
        let params = lame(space.n_cells());
        let u = random(space.n_dofs * d, 9);
        let op = Pointwise::<f64, Elasticity>::new(&space, Some(v.nq), Aux::Cell(&params)).unwrap();
        let got = op.residual_cpu(&cpu, &space.gather(d, &u)).unwrap();
        let want = elasticity_reference(v, &space, &u, &params);
        let err = max_diff(&got, &want) / max_abs(&want);
        assert!(err < 1e-13, "{} p{}: {err:e}", v.shape.name(), v.degree);
    }
}

/// The assembled residual at interior nodes.
fn interior_residual(space: &Space, nc: usize, elem: &[f64]) -> Vec<f64> {
    let global = space.scatter_add(nc, elem);
    (0..space.n_dofs).filter(|&g| !space.boundary[g]).flat_map(|g| global[g * nc..(g + 1) * nc].to_vec()).collect()
}

#[test]
fn exact_p1_and_p2_solutions_have_zero_residual() {
    let cpu = cpu();
    for (shape, p, nq) in [(Shape::Triangle, 1, 1), (Shape::Tetrahedron, 1, 1), (Shape::Triangle, 2, 3), (Shape::Tetrahedron, 2, 4)] {
        let v = <Poisson as Kernels<f64>>::VARIANTS.iter().find(|v| v.shape == shape && v.degree == p && v.nq == nq).unwrap();
        let space = space_for(v, 4);
        // P1: u linear, κ linear, f = −∇κ·∇u. P2: u quadratic, κ constant, f = −κΔu.
        let (u, aux) = if p == 1 {
            let u = space.interpolate(1, |x, o| o[0] = 1.0 + 2.0 * x[0] - 3.0 * x[1] + 0.5 * x[2]);
            let aux = space.interpolate(2, |x, o| {
                o[0] = 1.0 + x[0] + 2.0 * x[1] + 3.0 * x[2];
                o[1] = -(2.0 - 6.0 + if shape.dim() == 3 { 1.5 } else { 0.0 });
            });
            (u, aux)
        } else {
            let u = space.interpolate(1, |x, o| o[0] = x[0] * x[0] - x[0] * x[1] + 2.0 * x[1] * x[1] + x[2] * x[2] + x[0]);
            let lap = 2.0 + 4.0 + if shape.dim() == 3 { 2.0 } else { 0.0 };
            let aux = space.interpolate(2, |_, o| {
                o[0] = 2.5;
                o[1] = -2.5 * lap;
            });
            (u, aux)
        };
        let op = Pointwise::<f64, Poisson>::new(&space, Some(nq), Aux::Nodal(&aux)).unwrap();
        let elem = op.residual_cpu(&cpu, &space.gather(1, &u)).unwrap();
        let scale = max_abs(&elem);
        let r = max_abs(&interior_residual(&space, 1, &elem));
        assert!(r < 1e-12 * scale.max(1.0), "{} P{p}: interior residual {r:e} (element scale {scale:e})", shape.name());
        // A solution off by a bump is not exact: the test can fail.
        let mut bumped = u.clone();
        let interior = (0..space.n_dofs).find(|&g| !space.boundary[g]).unwrap();
        bumped[interior] += 1e-3;
        let elem = op.residual_cpu(&cpu, &space.gather(1, &bumped)).unwrap();
        assert!(max_abs(&interior_residual(&space, 1, &elem)) > 1e-6);
    }
}

#[test]
fn rigid_body_motions_have_zero_elasticity_residual() {
    let cpu = cpu();
    for v in <Elasticity as Kernels<f64>>::VARIANTS {
        let space = space_for(v, 3);
        let d = v.dim();
        let params = lame(space.n_cells());
        let op = Pointwise::<f64, Elasticity>::new(&space, Some(v.nq), Aux::Cell(&params)).unwrap();
        // translation + infinitesimal rotation (ω × x)
        let w = [0.3, -0.7, 1.1];
        let u = space.interpolate(d, |x, o| {
            if d == 2 {
                o[0] = 0.2 - w[2] * x[1];
                o[1] = -0.4 + w[2] * x[0];
            } else {
                o[0] = 0.2 + w[1] * x[2] - w[2] * x[1];
                o[1] = -0.4 + w[2] * x[0] - w[0] * x[2];
                o[2] = 0.9 + w[0] * x[1] - w[1] * x[0];
            }
        });
        let elem = op.residual_cpu(&cpu, &space.gather(d, &u)).unwrap();
        assert!(max_abs(&elem) < 1e-13, "{} p{}: {:e}", v.shape.name(), v.degree, max_abs(&elem));
        // a stretch is not a rigid motion
        let s = space.interpolate(d, |x, o| o.iter_mut().enumerate().for_each(|(k, ok)| *ok = 0.01 * x[k]));
        assert!(max_abs(&op.residual_cpu(&cpu, &space.gather(d, &s)).unwrap()) > 1e-5);
    }
}

/// Element matrices times u equal R(u) − R(0) (both physics are affine in
/// u) and are symmetric.
fn check_jacobian<K: Kernels<f64>>(v: &Variant, space: &Space, aux: Aux<'_>) {
    let cpu = cpu();
    let nl = v.n_local();
    let op = Pointwise::<f64, K>::new(space, Some(v.nq), aux).unwrap();
    let ue = space.gather(v.nc, &random(space.n_dofs * v.nc, 4));
    let r = op.residual_cpu(&cpu, &ue).unwrap();
    let r0 = op.residual_cpu(&cpu, &vec![0.0; ue.len()]).unwrap();
    let jac = op.jacobian_cpu(&cpu, &ue).unwrap();
    for c in 0..space.n_cells() {
        let a = &jac[c * nl * nl..(c + 1) * nl * nl];
        for i in 0..nl {
            let ju: f64 = (0..nl).map(|j| a[i * nl + j] * ue[c * nl + j]).sum();
            let want = r[c * nl + i] - r0[c * nl + i];
            assert!((ju - want).abs() < 1e-12 * (1.0 + want.abs()), "{} p{} cell {c} row {i}: {ju} vs {want}", v.shape.name(), v.degree);
            for j in 0..i {
                assert!((a[i * nl + j] - a[j * nl + i]).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn element_matrices_are_the_derivative_of_the_residual() {
    for v in <Poisson as Kernels<f64>>::VARIANTS.iter().filter(|v| common::element_matrices_testable(v, common::CPU_PRODUCTS)) {
        let space = space_for(v, 2);
        let aux = poisson_aux(&space);
        check_jacobian::<Poisson>(v, &space, Aux::Nodal(&aux));
    }
    for v in <Elasticity as Kernels<f64>>::VARIANTS.iter().filter(|v| common::element_matrices_testable(v, common::CPU_PRODUCTS)) {
        let space = space_for(v, 2);
        let params = lame(space.n_cells());
        check_jacobian::<Elasticity>(v, &space, Aux::Cell(&params));
    }
}

#[test]
fn variant_tables_describe_the_generated_code() {
    let v = <Poisson as Kernels<f32>>::VARIANTS;
    assert!(v.iter().all(|v| v.precisions == ["f32", "f64"] && v.jacobian.is_some() && v.nc == 1 && v.na == 2 && v.aux_nodal));
    assert_eq!(v[0].terms, Terms { f0: true, f1: true, g: [false, false, false, true], bf0: false, bg: [false, false], g_reads_state: false });
    // whether g0..g3 read u or ∇u, from their bodies: linear physics do
    // not, neo-Hookean's g3 reads ∇u, the cardiac ionic g0 reads u
    let reads = |t: Terms| t.g_reads_state;
    assert!(!reads(<Elasticity as Physics<f64, 3, 3, 2>>::TERMS) && !reads(<Mass as Physics<f64, 3, 1, 2>>::TERMS));
    assert!(reads(<NeoHookean as Physics<f64, 3, 3, 2>>::TERMS) && reads(<MinimalSurface as Physics<f64, 2, 1, 0>>::TERMS) && reads(<Monodomain as Physics<f64, 3, 1, 9>>::TERMS));
    assert_eq!(v[0].residual, "fem_residual_poisson_tri_p1_q1");
    // LCM(N_q, N_b·N_comp): P1 triangles with one point, P2 tetrahedra with
    // four points and three components.
    assert_eq!(v[0].block, 3);
    let e = <Elasticity as Kernels<f64>>::VARIANTS.iter().find(|v| v.shape == Shape::Tetrahedron && v.degree == 2).unwrap();
    assert_eq!((e.nc, e.n_local(), e.block), (3, 30, 60));
    assert!(!e.terms.f0 && e.terms.f1);
}

#[test]
fn bad_inputs_are_refused_with_a_message() {
    let space = Space::simplex(&SimplexBox::unstructured(2, 2, 1).build().unwrap(), 1).unwrap();
    let aux = poisson_aux(&space);
    let wrong_q = Pointwise::<f64, Poisson>::new(&space, Some(7), Aux::Nodal(&aux)).err().unwrap().to_string();
    assert!(wrong_q.contains("no tri P1 variant with 7 quadrature points") && wrong_q.contains("tri(p = 1, q = 1)"), "{wrong_q}");
    let short = Pointwise::<f64, Poisson>::new(&space, None, Aux::Nodal(&aux[1..])).err().unwrap().to_string();
    assert!(short.contains("2 auxiliary values per node"), "{short}");
    let kind = Pointwise::<f64, Poisson>::new(&space, None, Aux::Cell(&aux)).err().unwrap().to_string();
    assert!(kind.contains("solution's space"), "{kind}");
    let op = Pointwise::<f64, Poisson>::new(&space, None, Aux::Nodal(&aux)).unwrap();
    assert!(op.residual_cpu(&cpu(), &[1.0; 5]).is_err());
    assert!(Space::simplex(&SimplexBox::unstructured(2, 2, 1).build().unwrap(), 3).is_err());
}

#[test]
fn assembled_poisson_jacobian_is_the_p1_stiffness_matrix() {
    // With κ = 1 the P1 stiffness matrix annihilates constants and has
    // xᵀKx = ∫|∇x|² = 1 for x = the coordinate x₀ on the unit square.
    let cpu = cpu();
    let space = Space::simplex(&SimplexBox::unstructured(2, 5, 2).build().unwrap(), 1).unwrap();
    let aux = space.interpolate(2, |_, o| {
        o[0] = 1.0;
        o[1] = 0.0;
    });
    let op = Pointwise::<f64, Poisson>::new(&space, None, Aux::Nodal(&aux)).unwrap();
    let jac = op.jacobian_cpu(&cpu, &vec![0.0; space.n_cells() * 3]).unwrap();
    let k = assemble_csr(&cpu, &space, 1, &jac).unwrap();
    let x: Vec<f64> = space.dof_coords.iter().map(|p| p[0]).collect();
    let mut kx = vec![0.0; space.n_dofs];
    let mut k1 = vec![0.0; space.n_dofs];
    for r in 0..space.n_dofs {
        for p in k.row_ptr[r] as usize..k.row_ptr[r + 1] as usize {
            kx[r] += k.val[p] * x[k.col[p] as usize];
            k1[r] += k.val[p];
        }
    }
    assert!(max_abs(&k1) < 1e-12);
    let energy: f64 = kx.iter().zip(&x).map(|(a, b)| a * b).sum();
    assert!((energy - 1.0).abs() < 1e-12, "{energy}");
}

/// A nonlinear physics' element matrices are the derivative of its
/// residual (central differences at a random state) and, for a
/// hyperelastic energy, symmetric.
#[test]
fn neo_hookean_element_matrices_are_the_derivative_of_the_residual() {
    use fem::kernels::physics::NeoHookean;
    let cpu = cpu();
    for v in <NeoHookean as Kernels<f64>>::VARIANTS.iter().filter(|v| common::element_matrices_testable(v, common::CPU_PRODUCTS)) {
        let space = space_for(v, 2);
        let params = lame(space.n_cells());
        let op = Pointwise::<f64, NeoHookean>::new(&space, Some(v.nq), Aux::Cell(&params)).unwrap();
        let nl = v.n_local();
        // displacements small against the nodes' spacing (∼ 1 / p²), so
        // that no point inverts
        let size = 0.05 / (v.degree * v.degree) as f64;
        let ue: Vec<f64> = space.gather(v.nc, &random(space.n_dofs * v.nc, 5)).iter().map(|x| size * x).collect();
        let dir: Vec<f64> = space.gather(v.nc, &random(space.n_dofs * v.nc, 6));
        let eps = 1e-6;
        let shifted = |s: f64| op.residual_cpu(&cpu, &ue.iter().zip(&dir).map(|(u, d)| u + s * eps * d).collect::<Vec<_>>()).unwrap();
        let (rp, rm) = (shifted(1.0), shifted(-1.0));
        let jac = op.jacobian_cpu(&cpu, &ue).unwrap();
        for c in 0..space.n_cells() {
            let a = &jac[c * nl * nl..(c + 1) * nl * nl];
            for i in 0..nl {
                let jd: f64 = (0..nl).map(|j| a[i * nl + j] * dir[c * nl + j]).sum();
                let fd = (rp[c * nl + i] - rm[c * nl + i]) / (2.0 * eps);
                assert!((jd - fd).abs() < 1e-6 * (1.0 + fd.abs()), "{} p{} cell {c} row {i}: {jd} vs {fd}", v.shape.name(), v.degree);
                for j in 0..i {
                    assert!((a[i * nl + j] - a[j * nl + i]).abs() < 1e-9 * (1.0 + a[i * nl + j].abs()));
                }
            }
        }
    }
}
