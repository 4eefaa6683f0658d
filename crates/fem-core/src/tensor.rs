//! One-dimensional building blocks of tensor-product hexahedra (the CEED
//! benchmark problems of Świrydowicz et al.): the interpolation matrix from
//! the N + 1 Gauss–Lobatto–Legendre nodes to the N + 2 Gauss–Legendre
//! points, and the collocation differentiation matrices on either set.
//!
//! Matrices are row-major, rows indexed by the output point. They are built
//! from barycentric weights: the formulas stay accurate to rounding up to
//! N = 15, where the product form of the Lagrange basis loses digits.
//!
//! The pointwise part of the screened Poisson operator, shared by the CPU
//! reference and the GPU kernels, is [`apply_metric`].

use crate::Real;

/// Highest polynomial degree with specialised kernels.
pub const MAX_DEGREE: usize = 15;

/// Geometric factors per quadrature node, in storage order: the symmetric
/// metric `w·J·(∂ξ/∂x)(∂ξ/∂x)ᵀ` (G00, G01, G02, G11, G12, G22) and `w·J`.
pub const NGEO: usize = 7;
/// Index of the metric entry G₀₀ (r, r) in a node's factors.
pub const G00: usize = 0;
/// Index of G₀₁ = G₁₀ (r, s).
pub const G01: usize = 1;
/// Index of G₀₂ = G₂₀ (r, t).
pub const G02: usize = 2;
/// Index of G₁₁ (s, s).
pub const G11: usize = 3;
/// Index of G₁₂ = G₂₁ (s, t).
pub const G12: usize = 4;
/// Index of G₂₂ (t, t).
pub const G22: usize = 5;
/// Index of `w·J`, the weighted Jacobian determinant that scales the mass
/// (screening) term.
pub const GWJ: usize = 6;

/// GLL nodes per direction for degree `n`.
pub const fn gll_points(degree: usize) -> usize {
    degree + 1
}

/// GL points per direction for degree `n` (the CEED choice, q = p + 2).
pub const fn gl_points(degree: usize) -> usize {
    degree + 2
}

/// Row stride of a shared-memory slice of `n × n` doubles: odd, so the rows
/// a warp reads at once fall into different banks.
pub const fn padded(n: usize) -> usize {
    n | 1
}

/// Barycentric weights `wⱼ = 1 / Π_{k≠j}(xⱼ − xₖ)` of `nodes`.
pub fn barycentric_weights(nodes: &[f64], w: &mut [f64]) {
    for (j, &xj) in nodes.iter().enumerate() {
        let p: f64 = nodes.iter().enumerate().filter(|&(k, _)| k != j).map(|(_, &xk)| xj - xk).product();
        w[j] = 1.0 / p;
    }
}

/// `out[q·n + m] = ℓₘ(points[q])` for the Lagrange basis on `nodes`
/// (n = nodes.len()), by the barycentric formula of the second kind.
pub fn interpolation_matrix(nodes: &[f64], points: &[f64], out: &mut [f64]) {
    let n = nodes.len();
    let mut w = [0.0; 32];
    barycentric_weights(nodes, &mut w[..n]);
    for (q, &x) in points.iter().enumerate() {
        let row = &mut out[q * n..(q + 1) * n];
        if let Some(m) = nodes.iter().position(|&xm| xm == x) {
            row.iter_mut().enumerate().for_each(|(k, v)| *v = if k == m { 1.0 } else { 0.0 });
            continue;
        }
        let mut denom = 0.0;
        for m in 0..n {
            row[m] = w[m] / (x - nodes[m]);
            denom += row[m];
        }
        row.iter_mut().for_each(|v| *v /= denom);
    }
}

/// `out[i·n + m] = ℓₘ'(nodes[i])`: the collocation differentiation matrix
/// (off-diagonal from barycentric weights, diagonal as the negative row sum
/// so constants are differentiated to exactly zero).
pub fn differentiation_matrix(nodes: &[f64], out: &mut [f64]) {
    let n = nodes.len();
    let mut w = [0.0; 32];
    barycentric_weights(nodes, &mut w[..n]);
    for i in 0..n {
        let mut diag = 0.0;
        for m in 0..n {
            if m != i {
                let d = w[m] / w[i] / (nodes[i] - nodes[m]);
                out[i * n + m] = d;
                diag -= d;
            }
        }
        out[i * n + i] = diag;
    }
}

/// The pointwise screened Poisson operator at one node: the metric applied
/// to the reference gradient `(ur, us, ut)` and the mass term `λ·wJ·u`.
#[inline(always)]
pub fn apply_metric<T: Real>(g: &[T; NGEO], lambda: T, u: T, ur: T, us: T, ut: T) -> (T, T, T, T) {
    let gr = g[G00].mad(ur, g[G01].mad(us, g[G02] * ut));
    let gs = g[G01].mad(ur, g[G11].mad(us, g[G12] * ut));
    let gt = g[G02].mad(ur, g[G12].mad(us, g[G22] * ut));
    (gr, gs, gt, lambda * g[GWJ] * u)
}

/// The geometric factors of a node from the Jacobian `j[c][a]` = ∂x_c/∂ξ_a
/// and the quadrature weight: `w·det J·J⁻¹J⁻ᵀ` in the order of [`NGEO`],
/// and det J (the caller refuses det J ≤ 0). Shared by the host, which
/// stores them, and the kernels that recompute them at each application.
#[inline(always)]
pub fn metric<T: Real>(j: [[T; 3]; 3], weight: T) -> ([T; NGEO], T) {
    // cof[c][a]: the cofactor of j[c][a]; J⁻¹ = cofᵀ / det
    let cof = |r: usize, c: usize| {
        let (r1, r2, c1, c2) = ((r + 1) % 3, (r + 2) % 3, (c + 1) % 3, (c + 2) % 3);
        j[r1][c1] * j[r2][c2] - j[r1][c2] * j[r2][c1]
    };
    let cof: [[T; 3]; 3] = core::array::from_fn(|r| core::array::from_fn(|c| cof(r, c)));
    let det = j[0][0] * cof[0][0] + j[0][1] * cof[0][1] + j[0][2] * cof[0][2];
    // G_ab = w det Σ_c J⁻¹[a][c] J⁻¹[b][c] = (w / det) Σ_c cof[c][a] cof[c][b]
    let scale = weight / det;
    let g = |a: usize, b: usize| scale * (cof[0][a] * cof[0][b] + cof[1][a] * cof[1][b] + cof[2][a] * cof[2][b]);
    ([g(0, 0), g(0, 1), g(0, 2), g(1, 1), g(1, 2), g(2, 2), weight * det], det)
}

/// The Jacobian of a trilinear hexahedron along one line of nodes in z:
/// at reference (ξ, η) fixed, ∂x/∂ξ and ∂x/∂η are linear in ζ and ∂x/∂ζ
/// is constant, so five 3-vectors hold the line's Jacobians. The corners
/// are `x[v][c]`, vertex v at reference (±1, ±1, ±1) with bit a of v set
/// for +1 along axis a.
#[derive(Clone, Copy, Debug)]
pub struct TrilinearLine<T> {
    /// ∂x/∂ξ = `d0 + e0·ζ`.
    d0: [T; 3],
    e0: [T; 3],
    /// ∂x/∂η = `d1 + e1·ζ`.
    d1: [T; 3],
    e1: [T; 3],
    /// ∂x/∂ζ.
    d2: [T; 3],
    /// The position at ζ = 0 (at ζ it is `x0 + d2·ζ`).
    x0: [T; 3],
}

impl<T: Real> TrilinearLine<T> {
    /// The line at (`xi`, `eta`) of the hexahedron with corners `x`.
    #[inline(always)]
    pub fn new(x: &[[T; 3]; 8], xi: T, eta: T) -> Self {
        let half = T::from_f64(0.5);
        // the 1D linear functions of the vertices at ±1, and their derivative
        let l = |t: T| [half - half * t, half + half * t];
        let (lx, ly) = (l(xi), l(eta));
        let dl = [-half, half];
        // Σ over the vertices with bit 2 equal to z of x_v · fx(v0) · fy(v1)
        let side = |fx: [T; 2], fy: [T; 2], z: usize| -> [T; 3] {
            core::array::from_fn(|c| {
                let mut s = T::ZERO;
                for v in 0..4 {
                    s = (fx[v & 1] * fy[v >> 1]).mad(x[v | (z << 2)][c], s);
                }
                s
            })
        };
        // a function of ζ linear between its values at ζ = −1 and +1
        let linear = |lo: [T; 3], hi: [T; 3]| -> ([T; 3], [T; 3]) { (core::array::from_fn(|c| half * (lo[c] + hi[c])), core::array::from_fn(|c| half * (hi[c] - lo[c]))) };
        let (d0, e0) = linear(side(dl, ly, 0), side(dl, ly, 1));
        let (d1, e1) = linear(side(lx, dl, 0), side(lx, dl, 1));
        let (lo, hi) = (side(lx, ly, 0), side(lx, ly, 1));
        let (x0, d2) = linear(lo, hi);
        Self { d0, e0, d1, e1, d2, x0 }
    }

    /// The Jacobian `j[c][a]` = ∂x_c/∂ξ_a at `zeta` on the line.
    #[inline(always)]
    pub fn jacobian(&self, zeta: T) -> [[T; 3]; 3] {
        core::array::from_fn(|c| [self.e0[c].mad(zeta, self.d0[c]), self.e1[c].mad(zeta, self.d1[c]), self.d2[c]])
    }

    /// The point x(ξ, η, `zeta`) of the line.
    #[inline(always)]
    pub fn position(&self, zeta: T) -> [T; 3] {
        core::array::from_fn(|c| self.d2[c].mad(zeta, self.x0[c]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quadrature::{gauss_legendre, gauss_lobatto};

    fn nodes(degree: usize) -> ([f64; 32], [f64; 32]) {
        let (mut gll, mut w) = ([0.0; 32], [0.0; 32]);
        gauss_lobatto(&mut gll[..degree + 1], &mut w[..degree + 1]);
        let (mut gl, mut wg) = ([0.0; 32], [0.0; 32]);
        gauss_legendre(&mut gl[..degree + 2], &mut wg[..degree + 2]);
        (gll, gl)
    }

    /// Monomials of degree ≤ N are interpolated and differentiated exactly.
    #[test]
    fn interpolation_and_differentiation_are_exact_to_degree_n() {
        for degree in 1..=MAX_DEGREE {
            let (nq, gq) = (degree + 1, degree + 2);
            let (gll, gl) = nodes(degree);
            let (gll, gl) = (&gll[..nq], &gl[..gq]);
            let mut i = [0.0; 32 * 32];
            let mut d = [0.0; 32 * 32];
            let mut gd = [0.0; 32 * 32];
            interpolation_matrix(gll, gl, &mut i);
            differentiation_matrix(gll, &mut d);
            differentiation_matrix(gl, &mut gd);
            let mut worst: f64 = 0.0;
            for k in 0..=degree {
                let f = |x: f64| libm::pow(x, k as f64);
                let df = |x: f64| if k == 0 { 0.0 } else { k as f64 * libm::pow(x, k as f64 - 1.0) };
                for q in 0..gq {
                    let v: f64 = (0..nq).map(|m| i[q * nq + m] * f(gll[m])).sum();
                    worst = worst.max((v - f(gl[q])).abs());
                    let dv: f64 = (0..gq).map(|m| gd[q * gq + m] * f(gl[m])).sum();
                    worst = worst.max((dv - df(gl[q])).abs() / (1.0 + df(gl[q]).abs()));
                }
                for a in 0..nq {
                    let dv: f64 = (0..nq).map(|m| d[a * nq + m] * f(gll[m])).sum();
                    worst = worst.max((dv - df(gll[a])).abs() / (1.0 + df(gll[a]).abs()));
                }
            }
            assert!(worst < 1e-12, "degree {degree}: worst error {worst:e}");
            // the symmetries the kernels rely on
            for q in 0..gq {
                for m in 0..nq {
                    assert!((i[q * nq + m] - i[(gq - 1 - q) * nq + nq - 1 - m]).abs() < 1e-14);
                }
            }
            for a in 0..nq {
                for m in 0..nq {
                    assert!((d[a * nq + m] + d[(nq - 1 - a) * nq + nq - 1 - m]).abs() < 1e-11 * (1.0 + d[a * nq + m].abs()));
                }
            }
        }
    }

    #[test]
    fn metric_is_symmetric_in_its_use() {
        let g = [2.0, 0.5, 0.25, 3.0, 0.125, 4.0, 1.5];
        let (gr, gs, gt, m) = apply_metric(&g, 2.0, 1.0, 1.0, 0.0, 0.0);
        assert_eq!((gr, gs, gt, m), (2.0, 0.5, 0.25, 3.0));
        let (gr, gs, gt, _) = apply_metric(&g, 0.0, 0.0, 0.0, 1.0, 0.0);
        assert_eq!((gr, gs, gt), (0.5, 3.0, 0.125));
    }

    /// A line's position and Jacobian equal the Q1 geometry basis summed
    /// over the corners of a distorted hexahedron, at points inside it.
    #[test]
    fn trilinear_line_equals_the_geometry_basis() {
        let x: [[f64; 3]; 8] = core::array::from_fn(|v| core::array::from_fn(|c| ((v >> c) & 1) as f64 + 0.13 * ((7 * v + 3 * c) % 5) as f64 - 0.2));
        for (xi, eta, zeta) in [(-0.7, 0.2, 0.9), (0.5, -1.0, -0.3), (0.0, 0.0, 0.0)] {
            let (mut val, mut grad) = ([0.0; 8], [0.0; 24]);
            crate::shape::Shape::Hexahedron.geometry_basis(&[xi, eta, zeta], &mut val, &mut grad);
            let line = TrilinearLine::new(&x, xi, eta);
            let (pos, jac) = (line.position(zeta), line.jacobian(zeta));
            for c in 0..3 {
                let want: f64 = (0..8).map(|v| x[v][c] * val[v]).sum();
                assert!((pos[c] - want).abs() < 1e-14, "x_{c}: {} against {want}", pos[c]);
                for a in 0..3 {
                    let want: f64 = (0..8).map(|v| x[v][c] * grad[v * 3 + a]).sum();
                    assert!((jac[c][a] - want).abs() < 1e-14, "J_{c}{a}: {} against {want}", jac[c][a]);
                }
            }
        }
    }
}
