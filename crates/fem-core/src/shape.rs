//! Reference cells of the pointwise-physics kernels: P1/P2 triangles and
//! tetrahedra and Q_p quadrilaterals and hexahedra, their bases, the
//! vertex (geometry) basis, and quadrature rules.
//!
//! Everything is tabulated once on the host in `f64`; kernels only read the
//! tables, so one kernel serves every shape through the same arithmetic.
//! Simplices live on the unit simplex (vertices 0, e₁, …, e_d); tensor
//! cells on [−1, 1]^d with the GLL-node Q_p basis of [`crate::element`], so
//! a quadrilateral/hexahedral space is the one the Q_p Poisson code uses.

use crate::lagrange::{lagrange, lagrange_deriv};
use crate::quadrature::{gauss_legendre, gauss_lobatto};

/// The cell shapes the pointwise kernels support.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// 2D simplex with vertices (0, 0), (1, 0), (0, 1); P1 or P2.
    Triangle,
    /// 3D simplex with vertices 0, e₁, e₂, e₃; P1 or P2.
    Tetrahedron,
    /// The square [−1, 1]²; Q1 to Q8.
    Quadrilateral,
    /// The cube [−1, 1]³; Q1 to Q8.
    Hexahedron,
}

/// Edges of the reference triangle, in the order P2 edge nodes follow.
pub const TRI_EDGES: [[usize; 2]; 3] = [[0, 1], [1, 2], [2, 0]];
/// Edges of the reference tetrahedron, in the order P2 edge nodes follow.
pub const TET_EDGES: [[usize; 2]; 6] = [[0, 1], [1, 2], [2, 0], [0, 3], [1, 3], [2, 3]];

/// Highest Q_p degree the tensor cells are tabulated for: what the
/// spaces, their node positions and host-side integrals (loads, error
/// norms) reach; a `#[fem_kernel]` physics names the degrees it compiles.
pub const MAX_TENSOR_DEGREE: usize = 8;
/// Largest Gauss rule per direction on tensor cells (exact to degree 19:
/// an error norm of Q8 with two degrees to spare) and per collapsed
/// direction on simplices.
pub const MAX_RULE_1D: usize = 10;

impl Shape {
    /// Every shape, for iterating over all of them (tests, name lookup).
    pub const ALL: [Shape; 4] = [Shape::Triangle, Shape::Tetrahedron, Shape::Quadrilateral, Shape::Hexahedron];

    /// Spatial dimension: 2 or 3.
    pub const fn dim(self) -> usize {
        match self {
            Shape::Triangle | Shape::Quadrilateral => 2,
            Shape::Tetrahedron | Shape::Hexahedron => 3,
        }
    }

    /// Whether it is a triangle or tetrahedron (P_p basis on the unit
    /// simplex) rather than a tensor cell.
    pub const fn is_simplex(self) -> bool {
        matches!(self, Shape::Triangle | Shape::Tetrahedron)
    }

    /// Vertices, which carry the geometry (affine on simplices,
    /// multilinear on tensor cells).
    pub const fn vertices(self) -> usize {
        match self {
            Shape::Triangle => 3,
            Shape::Tetrahedron | Shape::Quadrilateral => 4,
            Shape::Hexahedron => 8,
        }
    }

    /// The short name kernels and the command line use (`tri`, `tet`,
    /// `quad`, `hex`).
    pub const fn name(self) -> &'static str {
        match self {
            Shape::Triangle => "tri",
            Shape::Tetrahedron => "tet",
            Shape::Quadrilateral => "quad",
            Shape::Hexahedron => "hex",
        }
    }

    /// The shape whose [`Self::name`] is `s`; `None` for any other string.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Whether degree `p` is tabulated: P1/P2 on simplices, Q1 to
    /// [`MAX_TENSOR_DEGREE`] on tensor cells.
    pub const fn supports_degree(self, p: usize) -> bool {
        if self.is_simplex() {
            p == 1 || p == 2
        } else {
            p >= 1 && p <= MAX_TENSOR_DEGREE
        }
    }

    /// Scalar basis functions of degree `p` (the caller checks
    /// [`Self::supports_degree`]).
    pub const fn n_basis(self, p: usize) -> usize {
        match self {
            Shape::Triangle => (p + 1) * (p + 2) / 2,
            Shape::Tetrahedron => (p + 1) * (p + 2) * (p + 3) / 6,
            Shape::Quadrilateral => (p + 1) * (p + 1),
            Shape::Hexahedron => (p + 1) * (p + 1) * (p + 1),
        }
    }

    /// Measure of the reference cell (the sum of every rule's weights).
    pub const fn volume(self) -> f64 {
        match self {
            Shape::Triangle => 0.5,
            Shape::Tetrahedron => 1.0 / 6.0,
            Shape::Quadrilateral => 4.0,
            Shape::Hexahedron => 8.0,
        }
    }

    /// Reference edges (simplices only; empty otherwise).
    pub const fn edges(self) -> &'static [[usize; 2]] {
        match self {
            Shape::Triangle => &TRI_EDGES,
            Shape::Tetrahedron => &TET_EDGES,
            _ => &[],
        }
    }

    /// Values `val[b]` and reference gradients `grad[b·d + a]` of the
    /// degree-`p` basis at `xi`. Simplex nodes: the vertices, then (P2) the
    /// edge midpoints in [`Self::edges`] order. Tensor nodes: the GLL
    /// lattice, lexicographic with the first coordinate fastest.
    pub fn basis(self, p: usize, xi: &[f64], val: &mut [f64], grad: &mut [f64]) {
        if self.is_simplex() {
            simplex_basis(self, p, xi, val, grad)
        } else {
            tensor_basis(self.dim(), p, xi, val, grad)
        }
    }

    /// The geometry basis: P1 on simplices, Q1 on tensor cells (vertices in
    /// the tensor order of [`crate::element::geometry`]).
    pub fn geometry_basis(self, xi: &[f64], val: &mut [f64], grad: &mut [f64]) {
        self.basis(1, xi, val, grad)
    }

    /// Reference position of basis node `b` of degree `p`.
    pub fn node(self, p: usize, b: usize) -> [f64; 3] {
        let d = self.dim();
        let mut x = [0.0; 3];
        if self.is_simplex() {
            let vertex = |v: usize, x: &mut [f64; 3], s: f64| {
                if v > 0 {
                    x[v - 1] += s;
                }
            };
            if b <= d {
                vertex(b, &mut x, 1.0);
            } else {
                let [i, j] = self.edges()[b - d - 1];
                vertex(i, &mut x, 0.5);
                vertex(j, &mut x, 0.5);
            }
        } else {
            let mut nodes = [0.0; MAX_TENSOR_DEGREE + 1];
            gll(&mut nodes[..p + 1]);
            for (a, xa) in x.iter_mut().enumerate().take(d) {
                *xa = nodes[(b / (p + 1).pow(a as u32)) % (p + 1)];
            }
        }
        x
    }

    /// Point counts of the quadrature rules available on this shape,
    /// ascending.
    pub const fn rule_sizes(self) -> &'static [usize] {
        match self {
            Shape::Triangle => &[1, 3, 4, 6, 9, 16, 25, 36],
            Shape::Tetrahedron => &[1, 4, 27, 64, 125, 216],
            Shape::Quadrilateral => &[1, 4, 9, 16, 25, 36, 49, 64, 81, 100],
            Shape::Hexahedron => &[1, 8, 27, 64, 125, 216, 343, 512, 729, 1000],
        }
    }

    /// Degree of polynomials the `n`-point rule integrates exactly.
    pub fn rule_degree(self, n: usize) -> Option<usize> {
        let (m, d) = (side(self, n)?, self.dim());
        Some(match (self, n) {
            (_, 1) => 1,
            (Shape::Triangle, 3) | (Shape::Tetrahedron, 4) => 2,
            (Shape::Triangle, 6) => 4,
            // Collapsed (Duffy) products of Gauss rules lose one degree per
            // collapsed direction.
            (Shape::Triangle | Shape::Tetrahedron, _) => 2 * m - d,
            _ => 2 * m - 1,
        })
    }

    /// The `n`-point rule: `points[q·d + a]`, `weights[q]`; `false` if this
    /// shape has no such rule.
    pub fn rule(self, n: usize, points: &mut [f64], weights: &mut [f64]) -> bool {
        let Some(m) = side(self, n) else { return false };
        let d = self.dim();
        match (self, n) {
            (_, 1) => {
                points[..d].fill(if self.is_simplex() { 1.0 / (d as f64 + 1.0) } else { 0.0 });
                weights[0] = self.volume();
            }
            (Shape::Triangle, 3) => symmetric_rule(d, &[(1.0 / 6.0, 1.0 / 6.0)], points, weights),
            (Shape::Tetrahedron, 4) => {
                symmetric_rule(d, &[(0.138_196_601_125_010_5, 1.0 / 24.0)], points, weights)
            }
            (Shape::Triangle, 6) => symmetric_rule(
                d,
                &[(0.445_948_490_915_965, 0.111_690_794_839_005_5), (0.091_576_213_509_771, 0.054_975_871_827_661)],
                points,
                weights,
            ),
            _ => collapsed_gauss(self, m, points, weights),
        }
        true
    }
}

impl Shape {
    /// Points of the facet rule of degree-`p` cells: exact for the
    /// product of two degree-p bases on affine facets (one degree more on
    /// tensor facets, whose geometry is not affine), as boundary terms
    /// need it. A segment's Gauss rule of p + 1 points, the smallest
    /// triangle rule of degree 2p, or the (p + 1)² Gauss square.
    pub fn facet_rule_size(self, p: usize) -> usize {
        match self {
            Shape::Triangle | Shape::Quadrilateral => p + 1,
            Shape::Tetrahedron => {
                let t = Shape::Triangle;
                *t.rule_sizes().iter().find(|&&n| t.rule_degree(n).is_some_and(|k| k >= 2 * p)).unwrap_or(&36)
            }
            Shape::Hexahedron => (p + 1) * (p + 1),
        }
    }

    /// The facet rule of [`Self::facet_rule_size`] in the facet's own
    /// reference coordinates (d − 1 per point: \[0, 1\] or the unit
    /// triangle for simplices, [−1, 1]^(d−1) for tensor cells).
    pub fn facet_rule(self, p: usize, points: &mut [f64], weights: &mut [f64]) {
        let n = self.facet_rule_size(p);
        match self {
            Shape::Triangle | Shape::Quadrilateral => {
                gauss_legendre(&mut points[..n], &mut weights[..n]);
                if self.is_simplex() {
                    points[..n].iter_mut().for_each(|s| *s = 0.5 * (*s + 1.0));
                    weights[..n].iter_mut().for_each(|w| *w *= 0.5);
                }
            }
            Shape::Tetrahedron => {
                Shape::Triangle.rule(n, points, weights);
            }
            Shape::Hexahedron => {
                Shape::Quadrilateral.rule(n, points, weights);
            }
        }
    }

    /// Local facets of a cell: d + 1 on a simplex (facet k opposite vertex
    /// k), 2d on a tensor cell (facet 2·axis + side where coordinate
    /// `axis` is −1 or +1).
    pub const fn local_facets(self) -> usize {
        if self.is_simplex() {
            self.dim() + 1
        } else {
            2 * self.dim()
        }
    }
}

/// Gauss points per direction of the `n`-point rule of `shape`.
fn side(shape: Shape, n: usize) -> Option<usize> {
    if !shape.rule_sizes().contains(&n) {
        return None;
    }
    let d = shape.dim() as u32;
    Some((1..=MAX_RULE_1D).find(|m| m.pow(d) == n).unwrap_or(0))
}

/// Points whose barycentric coordinates are the permutations of
/// (1 − d·a, a, …, a), each with weight `w`, for every `(a, w)`.
fn symmetric_rule(d: usize, orbits: &[(f64, f64)], points: &mut [f64], weights: &mut [f64]) {
    let mut q = 0;
    for &(a, w) in orbits {
        for k in 0..=d {
            let lambda = |i: usize| if i == k { 1.0 - d as f64 * a } else { a };
            for c in 0..d {
                points[q * d + c] = lambda(c + 1);
            }
            weights[q] = w;
            q += 1;
        }
    }
}

/// Gauss rules in every direction; on simplices mapped by the collapsed
/// coordinates ξ₁ = u, ξ₂ = v(1 − u), ξ₃ = w(1 − u)(1 − v) with their
/// Jacobian in the weights.
fn collapsed_gauss(shape: Shape, m: usize, points: &mut [f64], weights: &mut [f64]) {
    let (mut x, mut w) = ([0.0; MAX_RULE_1D], [0.0; MAX_RULE_1D]);
    gauss_legendre(&mut x[..m], &mut w[..m]);
    let d = shape.dim();
    for q in 0..m.pow(d as u32) {
        let i = |a: usize| (q / m.pow(a as u32)) % m;
        if shape.is_simplex() {
            let t: [f64; 3] = core::array::from_fn(|a| if a < d { 0.5 * (x[i(a)] + 1.0) } else { 0.0 });
            let mut weight = 1.0;
            let mut left = 1.0;
            for a in 0..d {
                points[q * d + a] = t[a] * left;
                weight *= 0.5 * w[i(a)];
                for _ in a + 1..d {
                    weight *= 1.0 - t[a];
                }
                left *= 1.0 - t[a];
            }
            weights[q] = weight;
        } else {
            let mut weight = 1.0;
            for a in 0..d {
                points[q * d + a] = x[i(a)];
                weight *= w[i(a)];
            }
            weights[q] = weight;
        }
    }
}

fn gll(nodes: &mut [f64]) {
    let mut w = [0.0; MAX_TENSOR_DEGREE + 1];
    gauss_lobatto(nodes, &mut w[..nodes.len()]);
}

fn simplex_basis(shape: Shape, p: usize, xi: &[f64], val: &mut [f64], grad: &mut [f64]) {
    let d = shape.dim();
    // Barycentric coordinates and their (constant) gradients.
    let lambda = |i: usize| if i == 0 { 1.0 - xi[..d].iter().sum::<f64>() } else { xi[i - 1] };
    let dlambda = |i: usize, a: usize| if i == 0 { -1.0 } else if a == i - 1 { 1.0 } else { 0.0 };
    for v in 0..=d {
        let l = lambda(v);
        let (f, df) = if p == 1 { (l, 1.0) } else { (l * (2.0 * l - 1.0), 4.0 * l - 1.0) };
        val[v] = f;
        for a in 0..d {
            grad[v * d + a] = df * dlambda(v, a);
        }
    }
    if p == 2 {
        for (e, &[i, j]) in shape.edges().iter().enumerate() {
            let b = d + 1 + e;
            val[b] = 4.0 * lambda(i) * lambda(j);
            for a in 0..d {
                grad[b * d + a] = 4.0 * (dlambda(i, a) * lambda(j) + lambda(i) * dlambda(j, a));
            }
        }
    }
}

fn tensor_basis(d: usize, p: usize, xi: &[f64], val: &mut [f64], grad: &mut [f64]) {
    let np = p + 1;
    let mut nodes = [0.0; MAX_TENSOR_DEGREE + 1];
    gll(&mut nodes[..np]);
    let nodes = &nodes[..np];
    for b in 0..np.pow(d as u32) {
        let idx = |a: usize| (b / np.pow(a as u32)) % np;
        let f: [f64; 3] = core::array::from_fn(|a| if a < d { lagrange(nodes, idx(a), xi[a]) } else { 1.0 });
        let df: [f64; 3] = core::array::from_fn(|a| if a < d { lagrange_deriv(nodes, idx(a), xi[a]) } else { 0.0 });
        val[b] = f[0] * f[1] * f[2];
        for a in 0..d {
            let mut g = df[a];
            for c in 0..d {
                if c != a {
                    g *= f[c];
                }
            }
            grad[b * d + a] = g;
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::{vec, vec::Vec};

    fn monomial(x: &[f64], e: &[usize]) -> f64 {
        x.iter().zip(e).map(|(&xi, &k)| xi.powi(k as i32)).product()
    }

    fn factorial(n: usize) -> f64 {
        (1..=n).map(|k| k as f64).product()
    }

    /// ∫ over the reference cell of Π x_a^{e_a}.
    fn exact(shape: Shape, e: &[usize]) -> f64 {
        if shape.is_simplex() {
            // Dirichlet integral: Π e_a! / (Σ e_a + d)!
            e.iter().map(|&k| factorial(k)).product::<f64>() / factorial(e.iter().sum::<usize>() + shape.dim())
        } else {
            e.iter().map(|&k| if k % 2 == 1 { 0.0 } else { 2.0 / (k as f64 + 1.0) }).product()
        }
    }

    #[test]
    fn rules_integrate_their_degree_and_not_beyond() {
        for shape in Shape::ALL {
            let d = shape.dim();
            for &n in shape.rule_sizes() {
                let (mut x, mut w) = (vec![0.0; n * d], vec![0.0; n]);
                assert!(shape.rule(n, &mut x, &mut w));
                let deg = shape.rule_degree(n).unwrap();
                let mut fails_above = false;
                for total in 0..=deg + 1 {
                    for code in 0..(total + 1).pow(d as u32) {
                        let e: Vec<usize> = (0..d).map(|a| (code / (total + 1).pow(a as u32)) % (total + 1)).collect();
                        if e.iter().sum::<usize>() != total {
                            continue;
                        }
                        let q: f64 = (0..n).map(|k| w[k] * monomial(&x[k * d..(k + 1) * d], &e)).sum();
                        let err = (q - exact(shape, &e)).abs();
                        if total <= deg {
                            assert!(err < 1e-13, "{shape:?} n={n} e={e:?}: {q} vs {}", exact(shape, &e));
                        } else if err > 1e-10 {
                            fails_above = true;
                        }
                    }
                }
                assert!(fails_above, "{shape:?} n={n} is exact beyond its stated degree {deg}");
            }
            assert!(!shape.rule(2, &mut [0.0; 6], &mut [0.0; 2]), "{shape:?} has no 2-point rule");
        }
    }

    #[test]
    fn bases_are_nodal_and_sum_to_one_with_gradients_consistent() {
        for shape in Shape::ALL {
            let d = shape.dim();
            for p in 1..=MAX_TENSOR_DEGREE {
                if !shape.supports_degree(p) {
                    continue;
                }
                let nb = shape.n_basis(p);
                let (mut v, mut g) = (vec![0.0; nb], vec![0.0; nb * d]);
                for b in 0..nb {
                    shape.basis(p, &shape.node(p, b)[..d], &mut v, &mut g);
                    for (c, &vc) in v.iter().enumerate() {
                        assert!((vc - f64::from(u8::from(b == c))).abs() < 1e-12, "{shape:?} p{p} φ{c}(x{b}) = {vc}");
                    }
                }
                let xi = [0.21, 0.17, 0.13];
                shape.basis(p, &xi[..d], &mut v, &mut g);
                assert!((v.iter().sum::<f64>() - 1.0).abs() < 1e-12);
                for a in 0..d {
                    assert!((0..nb).map(|b| g[b * d + a]).sum::<f64>().abs() < 1e-11);
                    let h = 1e-6;
                    let mut xp = xi;
                    xp[a] += h;
                    let (mut vp, mut gp) = (vec![0.0; nb], vec![0.0; nb * d]);
                    shape.basis(p, &xp[..d], &mut vp, &mut gp);
                    for b in 0..nb {
                        assert!(((vp[b] - v[b]) / h - g[b * d + a]).abs() < 1e-4, "{shape:?} p{p} ∂{a}φ{b}");
                    }
                }
            }
        }
    }
}
