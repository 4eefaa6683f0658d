//! Geometric factors, computed once per mesh: at every quadrature node the
//! symmetric metric `w·J·(∂ξ/∂x)(∂ξ/∂x)ᵀ` and `w·J`, from the isoparametric
//! map through the element's GLL node coordinates (trilinear and curved
//! elements alike), by sum factorisation.

use super::basis::{contract3, identity, Basis1d};
use crate::mesh::spectral::SpectralBox;
use crate::{Error, Result};
use fem_core::tensor::NGEO;
use rayon::prelude::*;

/// Where an operator integrates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Points {
    /// The N + 1 GLL nodes (collocation).
    Gll,
    /// The N + 2 GL points.
    Gl,
}

impl Points {
    /// Points per direction.
    pub fn per_direction(self, basis: &Basis1d) -> usize {
        match self {
            Points::Gll => basis.nq,
            Points::Gl => basis.gq,
        }
    }

    /// The 1D rule: its points and their weights.
    pub fn rule(self, basis: &Basis1d) -> (&[f64], &[f64]) {
        match self {
            Points::Gll => (&basis.gll, &basis.gll_weights),
            Points::Gl => (&basis.gl, &basis.gl_weights),
        }
    }
}

/// `factors[(e·NGEO + f)·p + n]` for p = points per element: factor `f` at
/// point `n` of element `e` (each factor contiguous over an element's
/// points, so a thread per point reads it coalesced).
pub fn geometric_factors(mesh: &SpectralBox, basis: &Basis1d, points: Points) -> Result<Vec<f64>> {
    let nq = basis.nq;
    let np = nq * nq * nq;
    let q = points.per_direction(basis);
    let p = q * q * q;
    let eye = identity(nq);
    let (value, deriv): (&[f64], &[f64]) = match points {
        Points::Gll => (&eye, &basis.diff),
        Points::Gl => (&basis.interp, &basis.interp_diff),
    };
    let w = points.rule(basis).1;
    let mut factors = vec![0.0; mesh.elements() * NGEO * p];
    factors.par_chunks_mut(NGEO * p).enumerate().try_for_each_init(Vec::new, |scratch, (e, out)| {
        // jac[c][a][n] = ∂x_c/∂ξ_a at point n
        let mut jac = vec![0.0; 9 * p];
        for c in 0..3 {
            let x = &mesh.coords[(e * 3 + c) * np..][..np];
            for a in 0..3 {
                let m = |axis: usize| if axis == a { (deriv, q) } else { (value, q) };
                contract3(m(0), m(1), m(2), [nq; 3], x, &mut jac[(c * 3 + a) * p..][..p], scratch);
            }
        }
        for n in 0..p {
            let j = |c: usize, a: usize| jac[(c * 3 + a) * p + n];
            let weight = w[n % q] * w[(n / q) % q] * w[n / (q * q)];
            let g = metric([[j(0, 0), j(0, 1), j(0, 2)], [j(1, 0), j(1, 1), j(1, 2)], [j(2, 0), j(2, 1), j(2, 2)]], weight)
                .ok_or_else(|| Error::InvalidArgument(format!("element {e} is inverted or degenerate (Jacobian determinant ≤ 0 at quadrature point {n})")))?;
            for f in 0..NGEO {
                out[f * p + n] = g[f];
            }
        }
        Ok::<(), Error>(())
    })?;
    Ok(factors)
}

/// The corners of every element, `corners[(e·8 + v)·3 + c]` (vertex v at
/// reference (±1, ±1, ±1), bit a set for +1 along axis a), where every
/// element is the trilinear map of its corners: each GLL node's
/// coordinates within 1e-12 of the element's size of that map. `None`
/// for curved elements. The kernels that recompute the geometric
/// factors at each application read these 24 values an element instead
/// of 7 a node.
pub fn trilinear_corners(mesh: &SpectralBox, basis: &Basis1d) -> Option<Vec<f64>> {
    let (n, nq) = (basis.degree, basis.nq);
    let np = nq * nq * nq;
    let node = |v: usize| (0..3).map(|a| ((v >> a) & 1) * n * nq.pow(a as u32)).sum::<usize>();
    let mut corners = vec![0.0; mesh.elements() * 24];
    let trilinear = corners.par_chunks_mut(24).enumerate().all(|(e, out)| {
        let x = |c: usize, m: usize| mesh.coords[(e * 3 + c) * np + m];
        let xv: [[f64; 3]; 8] = core::array::from_fn(|v| core::array::from_fn(|c| x(c, node(v))));
        out.copy_from_slice(xv.as_flattened());
        let size = (0..3).map(|c| (x(c, np - 1) - x(c, 0)).abs()).fold(0.0, f64::max);
        (0..np).all(|m| {
            let r = [m % nq, (m / nq) % nq, m / (nq * nq)].map(|i| basis.gll[i]);
            let w = |v: usize| (0..3).map(|a| if (v >> a) & 1 == 1 { 0.5 * (1.0 + r[a]) } else { 0.5 * (1.0 - r[a]) }).product::<f64>();
            (0..3).all(|c| ((0..8).map(|v| w(v) * xv[v][c]).sum::<f64>() - x(c, m)).abs() <= 1e-12 * size)
        })
    });
    trilinear.then_some(corners)
}

/// The seven factors of one point from the Jacobian `j[c][a] = ∂x_c/∂ξ_a`
/// and the quadrature weight; `None` when det J ≤ 0.
fn metric(j: [[f64; 3]; 3], weight: f64) -> Option<[f64; NGEO]> {
    let (g, det) = fem_core::tensor::metric(j, weight);
    (det > 0.0).then_some(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_of_a_scaled_box() {
        // x = 2ξ, y = 3η, z = 4ζ: J = diag(2, 3, 4), det 24
        let g = metric([[2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 4.0]], 0.5).unwrap();
        let expect = [12.0 / 4.0, 0.0, 0.0, 12.0 / 9.0, 0.0, 12.0 / 16.0, 12.0];
        for (a, b) in g.iter().zip(expect) {
            assert!((a - b).abs() < 1e-14, "{g:?}");
        }
        assert!(metric([[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], 1.0).is_none());
    }

    /// The factors the kernels recompute from the corners (the Jacobian
    /// along each z-line of a trilinear element, then the metric) equal
    /// the stored ones at every GLL node and GL point, degrees 1 to 8,
    /// affine and trilinear elements; curved elements have no corners.
    #[test]
    fn factors_recomputed_from_the_corners_equal_the_stored_ones() {
        use crate::mesh::spectral::Deformation;
        use fem_core::tensor::{metric, TrilinearLine};
        for n in 1..=8 {
            for d in [Deformation::None, Deformation::Trilinear { amplitude: 0.25, seed: 5 }] {
                let mesh = SpectralBox::new(n, [2, 3, 2], d).unwrap();
                let basis = Basis1d::new(n).unwrap();
                let corners = trilinear_corners(&mesh, &basis).expect("trilinear elements have corners");
                for points in [Points::Gll, Points::Gl] {
                    let (rule, weights) = points.rule(&basis);
                    let stored = geometric_factors(&mesh, &basis, points).unwrap();
                    let (nq, np) = (rule.len(), rule.len().pow(3));
                    for e in 0..mesh.elements() {
                        let x: [[f64; 3]; 8] = std::array::from_fn(|v| std::array::from_fn(|c| corners[(e * 8 + v) * 3 + c]));
                        for m in 0..np {
                            let (i, j, k) = (m % nq, (m / nq) % nq, m / (nq * nq));
                            let line = TrilinearLine::new(&x, rule[i], rule[j]);
                            let w = weights[i] * weights[j] * weights[k];
                            let (g, det) = metric(line.jacobian(rule[k]), w);
                            assert!(det > 0.0);
                            for f in 0..NGEO {
                                let want = stored[(e * NGEO + f) * np + m];
                                assert!((g[f] - want).abs() <= 1e-13 * (1.0 + want.abs()), "N = {n} {d:?} {points:?} element {e} node {m} factor {f}: {} against {want}", g[f]);
                            }
                        }
                    }
                }
            }
        }
        let curved = SpectralBox::new(3, [2, 2, 2], crate::mesh::spectral::Deformation::Curved { amplitude: 0.05 }).unwrap();
        assert!(trilinear_corners(&curved, &Basis1d::new(3).unwrap()).is_none());
    }
}
