//! Quadrature over the cells and boundary facets of a nodal space, on the
//! host: what loads that do not depend on the solution (sources, Neumann
//! tractions) and error norms need, once per solve. Every point comes
//! with its physical position, weight × measure, the basis values of its
//! cell and, on facets, the outward unit normal.

use super::facets::{facet_map, span_normal, Facet};
use super::Space;
use fem_core::shape::Shape;
use rayon::prelude::*;

/// Polynomial degree the load rules integrate exactly: the basis squared
/// (a load of a field in the space is exact on affine cells), one more on
/// tensor cells, whose geometry is not affine.
fn rule_order(space: &Space) -> usize {
    2 * space.degree + usize::from(!space.shape.is_simplex())
}

/// Degrees more for error norms, whose integrand is not a polynomial and
/// whose lowest rules sit on points where the error is superconvergent.
const ERROR_EXTRA: usize = 2;

/// A quadrature point as the visitor sees it.
pub struct Point<'a> {
    /// Cell it lies in.
    pub cell: usize,
    /// Physical position (padded with zeros to three components).
    pub x: [f64; 3],
    /// Quadrature weight × the cell's (or facet's) measure there.
    pub weight: f64,
    /// The cell's basis functions there.
    pub phi: &'a [f64],
    /// Outward unit normal (facets only; zero in cells).
    pub normal: [f64; 3],
}

/// A rule on `shape` of at least degree `order`: points `[q·d + a]`, weights.
fn shape_rule(shape: Shape, order: usize) -> (Vec<f64>, Vec<f64>) {
    let n = shape
        .rule_sizes()
        .iter()
        .copied()
        .find(|&n| shape.rule_degree(n).is_some_and(|k| k >= order))
        .unwrap_or(*shape.rule_sizes().last().expect("rules"));
    let (mut p, mut w) = (vec![0.0; n * shape.dim()], vec![0.0; n]);
    shape.rule(n, &mut p, &mut w);
    (p, w)
}

/// Geometry of cell `c` at reference point `xi`: position and Jacobian
/// `jac[a][k] = ∂x_a/∂ξ_k`.
fn geometry(space: &Space, c: usize, xi: &[f64]) -> ([f64; 3], [[f64; 3]; 3]) {
    let (d, nv) = (space.shape.dim(), space.shape.vertices());
    let (mut val, mut grad) = ([0.0; 8], [0.0; 24]);
    space
        .shape
        .geometry_basis(xi, &mut val[..nv], &mut grad[..nv * d]);
    mapped(&corners(space, c), d, &val[..nv], &grad[..nv * d])
}

/// The geometric vertices of cell `c`, gathered once for all its points.
fn corners(space: &Space, c: usize) -> [[f64; 3]; 8] {
    let nv = space.shape.vertices();
    let mut xv = [[0.0; 3]; 8];
    for (v, x) in xv.iter_mut().enumerate().take(nv) {
        *x = space.vertices[space.cell_vertices[c * nv + v] as usize];
    }
    xv
}

/// Position and Jacobian in `d` dimensions of the cell with vertices `xv`
/// where the geometry basis takes the values `val` (one a vertex) and
/// reference gradients `grad`.
fn mapped(xv: &[[f64; 3]; 8], d: usize, val: &[f64], grad: &[f64]) -> ([f64; 3], [[f64; 3]; 3]) {
    let (mut x, mut jac) = ([0.0; 3], [[0.0; 3]; 3]);
    for (v, xv) in xv.iter().enumerate().take(val.len()) {
        for a in 0..d {
            x[a] += val[v] * xv[a];
            for k in 0..d {
                jac[a][k] += grad[v * d + k] * xv[a];
            }
        }
    }
    (x, jac)
}

fn det(j: &[[f64; 3]; 3], d: usize) -> f64 {
    if d == 2 {
        j[0][0] * j[1][1] - j[0][1] * j[1][0]
    } else {
        j[0][0] * (j[1][1] * j[2][2] - j[1][2] * j[2][1])
            - j[0][1] * (j[1][0] * j[2][2] - j[1][2] * j[2][0])
            + j[0][2] * (j[1][0] * j[2][1] - j[1][1] * j[2][0])
    }
}

/// A cell rule with its basis table: weights, `φ[q·nb + b]`, and the
/// geometry basis at the points (values `[q·nv + v]`, gradients
/// `[(q·nv + v)·d + k]`), tabulated once for every cell.
struct CellRule {
    wts: Vec<f64>,
    phi: Vec<f64>,
    geo_val: Vec<f64>,
    geo_grad: Vec<f64>,
}

impl CellRule {
    fn new(space: &Space, extra: usize) -> Self {
        let (shape, d, nb) = (space.shape, space.shape.dim(), space.nb());
        let (pts, wts) = shape_rule(shape, rule_order(space) + extra);
        let mut phi = vec![0.0; wts.len() * nb];
        let mut grad = vec![0.0; nb * d];
        for (q, chunk) in phi.chunks_mut(nb).enumerate() {
            shape.basis(space.degree, &pts[q * d..][..d], chunk, &mut grad);
        }
        let nv = shape.vertices();
        let (mut geo_val, mut geo_grad) = (vec![0.0; wts.len() * nv], vec![0.0; wts.len() * nv * d]);
        for q in 0..wts.len() {
            shape.geometry_basis(&pts[q * d..][..d], &mut geo_val[q * nv..][..nv], &mut geo_grad[q * nv * d..][..nv * d]);
        }
        Self { wts, phi, geo_val, geo_grad }
    }

    /// Visits the points of cell `c`.
    fn visit(&self, space: &Space, c: usize, visit: &mut impl FnMut(&Point)) {
        let (d, nb, nv) = (space.shape.dim(), space.nb(), space.shape.vertices());
        let xv = corners(space, c);
        for (q, w) in self.wts.iter().enumerate() {
            let (x, jac) = mapped(&xv, d, &self.geo_val[q * nv..][..nv], &self.geo_grad[q * nv * d..][..nv * d]);
            visit(&Point {
                cell: c,
                x,
                weight: w * det(&jac, d).abs(),
                phi: &self.phi[q * nb..][..nb],
                normal: [0.0; 3],
            });
        }
    }
}

/// Visits every quadrature point of every cell, in order.
pub fn cell_points(space: &Space, mut visit: impl FnMut(&Point)) {
    let rule = CellRule::new(space, 0);
    for c in 0..space.n_cells() {
        rule.visit(space, c, &mut visit);
    }
}

/// The E-vector of ∫ φ_b f_c over each cell (`cell·nb·nc + b·nc + c`),
/// the cells in parallel; `f` fills the `nc` integrand values at a point.
pub fn cell_evector(
    space: &Space,
    nc: usize,
    f: impl Fn(&Point, &mut [f64]) + Sync,
) -> Vec<f64> {
    let rule = CellRule::new(space, 0);
    let nl = space.nb() * nc;
    let mut out = vec![0.0; space.n_cells() * nl];
    out.par_chunks_mut(nl).enumerate().for_each_init(
        || vec![0.0; nc],
        |v, (c, elem)| {
            rule.visit(space, c, &mut |p: &Point| {
                f(p, v);
                for (b, phi) in p.phi.iter().enumerate() {
                    for (k, vk) in v.iter().enumerate() {
                        elem[b * nc + k] += p.weight * phi * vk;
                    }
                }
            })
        },
    );
    out
}

/// The element mass matrices of an `nc`-component field,
/// `cell·nl² + i·nl + j` with local index `b·nc + c` (nl = nb·nc): ∫ φ_b φ_b'
/// where the components agree, the cells in parallel.
pub fn mass_ematrices(space: &Space, nc: usize) -> Vec<f64> {
    let rule = CellRule::new(space, 0);
    let (nb, nl) = (space.nb(), space.nb() * nc);
    let mut out = vec![0.0; space.n_cells() * nl * nl];
    out.par_chunks_mut(nl * nl).enumerate().for_each(|(c, m)| {
        rule.visit(space, c, &mut |p: &Point| {
            for i in 0..nb {
                for j in 0..nb {
                    let v = p.weight * p.phi[i] * p.phi[j];
                    for k in 0..nc {
                        m[(i * nc + k) * nl + j * nc + k] += v;
                    }
                }
            }
        })
    });
    out
}

/// Visits every quadrature point of the boundary facets `facets`.
pub fn facet_points<'f>(
    space: &Space,
    facets: impl IntoIterator<Item = &'f Facet>,
    mut visit: impl FnMut(&Point),
) {
    let (shape, d, nb) = (space.shape, space.shape.dim(), space.nb());
    // the boundary terms' rule of the pointwise kernels
    let n = shape.facet_rule_size(space.degree);
    let (mut pts, mut wts) = (vec![0.0; n * (d - 1)], vec![0.0; n]);
    shape.facet_rule(space.degree, &mut pts, &mut wts);
    let (mut phi, mut grad) = (vec![0.0; nb], vec![0.0; nb * d]);
    for f in facets {
        let (c, map) = (f.cell as usize, facet_map(shape, f.local as usize));
        let centre = geometry(space, c, &centroid(shape)[..d]).0;
        for (q, w) in wts.iter().enumerate() {
            let xi = map.point(&pts[q * (d - 1)..][..d - 1]);
            let (x, jac) = geometry(space, c, &xi[..d]);
            let tangent = |j: usize| -> [f64; 3] {
                std::array::from_fn(|a| (0..d).map(|k| jac[a][k] * map.axes[j][k]).sum())
            };
            let mut n = span_normal(d, [tangent(0), tangent(1)]);
            let measure = n.iter().map(|v| v * v).sum::<f64>().sqrt();
            // outward: away from the cell's centre
            let sign = if (0..d).map(|a| n[a] * (x[a] - centre[a])).sum::<f64>() < 0.0 {
                -1.0
            } else {
                1.0
            };
            n.iter_mut().for_each(|v| *v *= sign / measure);
            shape.basis(space.degree, &xi[..d], &mut phi, &mut grad);
            visit(&Point {
                cell: c,
                x,
                weight: w * measure,
                phi: &phi,
                normal: n,
            });
        }
    }
}

/// Reference centroid of `shape`.
fn centroid(shape: Shape) -> [f64; 3] {
    if shape.is_simplex() {
        [1.0 / (shape.dim() as f64 + 1.0); 3]
    } else {
        [0.0; 3]
    }
}

/// The physical centroid of a boundary facet (its reference centre mapped).
pub fn facet_centre(space: &Space, f: &Facet) -> [f64; 3] {
    let d = space.shape.dim();
    let map = facet_map(space.shape, f.local as usize);
    let s = if map.simplex {
        [1.0 / d as f64; 2]
    } else {
        [0.0; 2]
    };
    geometry(space, f.cell as usize, &map.point(&s[..d - 1])[..d]).0
}

/// ‖u_h − u‖_L2 of an `nc`-component field `u` against `exact`, the
/// cells in parallel.
pub fn l2_error(
    space: &Space,
    nc: usize,
    u: &[f64],
    exact: impl Fn(&[f64; 3], &mut [f64]) + Sync,
) -> f64 {
    let nb = space.nb();
    let rule = CellRule::new(space, ERROR_EXTRA);
    let sum: f64 = (0..space.n_cells())
        .into_par_iter()
        .map_init(
            || (vec![0.0; nc], vec![0.0; nb * nc]),
            |(want, local), c| {
                // the cell's values gathered once for all its points
                for (b, l) in local.chunks_mut(nc).enumerate() {
                    let g = space.cell_dofs[c * nb + b] as usize * nc;
                    l.copy_from_slice(&u[g..g + nc]);
                }
                let mut sum = 0.0;
                rule.visit(space, c, &mut |p: &Point| {
                    exact(&p.x, want);
                    for (k, w) in want.iter().enumerate() {
                        let uh: f64 = p.phi.iter().zip(local.chunks(nc)).map(|(f, l)| f * l[k]).sum();
                        sum += p.weight * (uh - w) * (uh - w);
                    }
                });
                sum
            },
        )
        .sum();
    sum.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::simplex::SimplexBox;
    use crate::mesh::BoxMesh;

    fn spaces() -> Vec<Space> {
        let mut out = Vec::new();
        for dim in [2, 3] {
            let simplex = SimplexBox::unstructured(dim, 3, 5).build().unwrap();
            let tensor = BoxMesh {
                dim,
                cells: 3,
                perturb: 0.15,
                shuffle: true,
                seed: 5,
            }
            .build()
            .unwrap();
            out.push(Space::simplex(&simplex, 2).unwrap());
            out.push(Space::tensor(&tensor, 2).unwrap());
        }
        out
    }

    /// The cells measure the unit square/cube, the boundary measures its
    /// surface, ∫ x_a over the cells is 1/2, and the divergence theorem
    /// holds for x: ∫_Γ x·n = d · |Ω|, which needs outward normals.
    #[test]
    fn measures_moments_and_normals_of_the_unit_box() {
        for s in spaces() {
            let d = s.shape.dim();
            let (mut vol, mut moment) = (0.0, 0.0);
            cell_points(&s, |p| {
                vol += p.weight;
                moment += p.weight * p.x[0];
            });
            let (mut area, mut flux) = (0.0, 0.0);
            facet_points(&s, &s.facets, |p| {
                area += p.weight;
                flux += p.weight * (0..d).map(|a| p.x[a] * p.normal[a]).sum::<f64>();
            });
            assert!(
                (vol - 1.0).abs() < 1e-12 && (moment - 0.5).abs() < 1e-12,
                "{:?}: {vol} {moment}",
                s.shape
            );
            assert!(
                (area - 2.0 * d as f64).abs() < 1e-12 && (flux - d as f64).abs() < 1e-12,
                "{:?}: {area} {flux}",
                s.shape
            );
        }
    }

    /// The interpolant of a quadratic is exact in P2/Q2, so its L2 error is
    /// rounding; a wrong value is seen.
    #[test]
    fn l2_error_of_an_exact_interpolant_is_zero() {
        for s in spaces() {
            let f = |x: &[f64; 3], o: &mut [f64]| o[0] = 1.0 + x[0] * x[1] - x[1] * x[1];
            let mut u = s.interpolate(1, f);
            assert!(l2_error(&s, 1, &u, f) < 1e-12);
            u.iter_mut().for_each(|v| *v += 1.0);
            assert!((l2_error(&s, 1, &u, f) - 1.0).abs() < 1e-12);
        }
    }

    /// At the highest tensor degree the tables and rules still hold: on
    /// affine cells Q8 interpolates x⁸y⁸ (z⁸) exactly, and the error of
    /// Q7 against it is far from rounding.
    #[test]
    fn l2_error_at_the_highest_tensor_degree() {
        let p = fem_core::shape::MAX_TENSOR_DEGREE;
        for dim in [2, 3] {
            let mesh = BoxMesh::structured(dim, 2).build().unwrap();
            let f = |x: &[f64; 3], o: &mut [f64]| o[0] = x[..dim].iter().map(|v| v.powi(p as i32)).product::<f64>();
            let s = Space::tensor(&mesh, p).unwrap();
            assert!(l2_error(&s, 1, &s.interpolate(1, f), f) < 1e-12);
            let lower = Space::tensor(&mesh, p - 1).unwrap();
            let e = l2_error(&lower, 1, &lower.interpolate(1, f), f);
            assert!(e > 1e-9, "{e:e}");
        }
    }
}
