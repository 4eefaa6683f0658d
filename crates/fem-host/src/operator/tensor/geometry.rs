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
    let (value, deriv, w): (&[f64], &[f64], &[f64]) = match points {
        Points::Gll => (&eye, &basis.diff, &basis.gll_weights),
        Points::Gl => (&basis.interp, &basis.interp_diff, &basis.gl_weights),
    };
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

/// The seven factors of one point from the Jacobian `j[c][a] = ∂x_c/∂ξ_a`
/// and the quadrature weight; `None` when det J ≤ 0.
fn metric(j: [[f64; 3]; 3], weight: f64) -> Option<[f64; NGEO]> {
    let cof = |r: usize, c: usize| {
        let (r1, r2, c1, c2) = ((r + 1) % 3, (r + 2) % 3, (c + 1) % 3, (c + 2) % 3);
        j[r1][c1] * j[r2][c2] - j[r1][c2] * j[r2][c1]
    };
    let det = j[0][0] * cof(0, 0) + j[0][1] * cof(0, 1) + j[0][2] * cof(0, 2);
    if det.is_nan() || det <= 0.0 {
        return None;
    }
    // rows of J⁻¹: ∂ξ_a/∂x_c = cof(c, a) / det
    let inv = |a: usize, c: usize| cof(c, a) / det;
    let g = |a: usize, b: usize| weight * det * (0..3).map(|c| inv(a, c) * inv(b, c)).sum::<f64>();
    Some([g(0, 0), g(0, 1), g(0, 2), g(1, 1), g(1, 2), g(2, 2), weight * det])
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
}
