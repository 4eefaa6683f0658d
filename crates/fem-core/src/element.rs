//! The tensor-product reference element [-1, 1]^D of degree p (Q_p), its
//! reference tables, and the multilinear geometry map.
//!
//! Local numbering is lexicographic: node `(i₀, i₁, i₂)` with `iₐ ∈ 0..=p` is
//! local DOF `i₀ + (p+1)(i₁ + (p+1) i₂)`; quadrature points likewise with
//! `nq` points per direction; the 2^D vertices are the corners in the same
//! order (vertex `v` has coordinate bit `a` of `v` along axis `a`).

use crate::Real;

/// Largest dimension and the vertex count it implies.
pub const MAX_DIM: usize = 3;
/// 2^`MAX_DIM`: the corner count of a hexahedron, the size of fixed vertex
/// arrays shared by every dimension.
pub const MAX_VERTICES: usize = 1 << MAX_DIM;

/// One-dimensional reference data of a Q_p element with an `nq`-point
/// tensor quadrature, borrowed from any storage (host vectors, device
/// buffers).
#[derive(Clone, Copy, Debug)]
pub struct Tables<'a, T> {
    /// p + 1 basis nodes per direction.
    pub np: usize,
    /// Quadrature points per direction.
    pub nq: usize,
    /// `nq` points in [-1, 1] and their weights.
    pub points: &'a [T],
    /// `nq` quadrature weights on [-1, 1], summing to 2.
    pub weights: &'a [T],
    /// `value[i * nq + q] = ℓᵢ(ξ_q)`, `deriv[i * nq + q] = ℓᵢ'(ξ_q)`.
    pub value: &'a [T],
    /// Derivatives ℓᵢ'(ξ_q) of the 1D basis, same `np × nq` layout as `value`.
    pub deriv: &'a [T],
}

/// Splits a lexicographic index into D coordinates of base `n`.
#[inline(always)]
pub fn split<const D: usize>(mut index: usize, n: usize) -> [usize; D] {
    let mut c = [0; D];
    for a in 0..D {
        c[a] = index % n;
        index /= n;
    }
    c
}

/// Nodes per direction of a tensor basis of `nb` functions in `d`
/// dimensions (p + 1): a constant where `nb` and `d` are, so that a
/// [`split`] by it compiles to shifts and multiplications rather than a
/// division by a value read at run time.
pub const fn nodes_per_direction(nb: usize, d: usize) -> usize {
    let mut n: usize = 1;
    while n.pow(d as u32) < nb {
        n += 1;
    }
    n
}

/// Advances a lexicographic multi-index of base `n` by one (the next
/// quadrature point), without division.
#[inline(always)]
pub fn next<const D: usize>(c: &mut [usize; D], n: usize) {
    for a in 0..D {
        c[a] += 1;
        if c[a] < n {
            return;
        }
        c[a] = 0;
    }
}

/// `n^D`.
#[inline(always)]
pub const fn pow(n: usize, d: usize) -> usize {
    let mut r = 1;
    let mut k = 0;
    while k < d {
        r *= n;
        k += 1;
    }
    r
}

impl<T: Real> Tables<'_, T> {
    /// Quadrature point `q` (lexicographic) in reference coordinates and
    /// its weight.
    #[inline(always)]
    pub fn point<const D: usize>(&self, q: usize) -> ([T; D], T) {
        self.point_at(&split::<D>(q, self.nq))
    }

    /// Quadrature point with tensor index `c` and its weight.
    #[inline(always)]
    pub fn point_at<const D: usize>(&self, c: &[usize; D]) -> ([T; D], T) {
        let mut xi = [T::ZERO; D];
        let mut w = T::ONE;
        for a in 0..D {
            xi[a] = self.points[c[a]];
            w *= self.weights[c[a]];
        }
        (xi, w)
    }

    /// Reference gradient of the basis function with tensor index `ci` at the
    /// quadrature point with tensor index `cq` (no index arithmetic: hot
    /// loops split `i` once and walk the points).
    #[inline(always)]
    pub fn grad_at<const D: usize>(&self, ci: &[usize; D], cq: &[usize; D]) -> [T; D] {
        let mut g = [T::ONE; D];
        for a in 0..D {
            for b in 0..D {
                let t = ci[b] * self.nq + cq[b];
                g[a] *= if a == b { self.deriv[t] } else { self.value[t] };
            }
        }
        g
    }

    /// Basis function with tensor index `ci` at point `cq`.
    #[inline(always)]
    pub fn basis_at<const D: usize>(&self, ci: &[usize; D], cq: &[usize; D]) -> T {
        let mut v = T::ONE;
        for a in 0..D {
            v *= self.value[ci[a] * self.nq + cq[a]];
        }
        v
    }

    /// Basis function `i` at quadrature point `q`.
    #[inline(always)]
    pub fn basis<const D: usize>(&self, i: usize, q: usize) -> T {
        self.basis_at::<D>(&split(i, self.np), &split(q, self.nq))
    }

    /// Reference gradient of basis function `i` at quadrature point `q`.
    #[inline(always)]
    pub fn grad<const D: usize>(&self, i: usize, q: usize) -> [T; D] {
        self.grad_at::<D>(&split(i, self.np), &split(q, self.nq))
    }
}

/// The multilinear map of the element with vertices `verts` (first 2^D
/// used) at reference point `xi`: physical point and Jacobian
/// `J[a][b] = ∂x_a/∂ξ_b`.
#[inline(always)]
pub fn geometry<T: Real, const D: usize>(verts: &[[T; D]; MAX_VERTICES], xi: [T; D]) -> ([T; D], [[T; D]; D]) {
    let half = T::from_f64(0.5);
    let mut x = [T::ZERO; D];
    let mut jac = [[T::ZERO; D]; D];
    for (v, vert) in verts.iter().enumerate().take(1 << D) {
        // Shape function of vertex v: Π_a (1 ± ξ_a)/2, and its derivatives.
        let mut f = [T::ZERO; D];
        let mut df = [T::ZERO; D];
        for a in 0..D {
            let s = if (v >> a) & 1 == 1 { T::ONE } else { -T::ONE };
            f[a] = half * (T::ONE + s * xi[a]);
            df[a] = half * s;
        }
        let mut n = T::ONE;
        for fa in f {
            n *= fa;
        }
        for b in 0..D {
            let mut dn = df[b];
            for a in 0..D {
                if a != b {
                    dn *= f[a];
                }
            }
            for a in 0..D {
                jac[a][b] += vert[a] * dn;
            }
        }
        for a in 0..D {
            x[a] += vert[a] * n;
        }
    }
    (x, jac)
}

/// Determinant and inverse of a D×D matrix (D ≤ 3).
#[inline(always)]
pub fn det_inv<T: Real, const D: usize>(m: &[[T; D]; D]) -> (T, [[T; D]; D]) {
    let mut inv = [[T::ZERO; D]; D];
    match D {
        1 => {
            inv[0][0] = T::ONE / m[0][0];
            (m[0][0], inv)
        }
        2 => {
            let det = m[0][0] * m[1][1] - m[0][1] * m[1][0];
            let r = T::ONE / det;
            inv[0][0] = m[1][1] * r;
            inv[0][1] = -m[0][1] * r;
            inv[1][0] = -m[1][0] * r;
            inv[1][1] = m[0][0] * r;
            (det, inv)
        }
        _ => {
            let c = |i: usize, j: usize| {
                let (i1, i2) = ((i + 1) % 3, (i + 2) % 3);
                let (j1, j2) = ((j + 1) % 3, (j + 2) % 3);
                m[i1][j1] * m[i2][j2] - m[i1][j2] * m[i2][j1]
            };
            let det = m[0][0] * c(0, 0) + m[0][1] * c(0, 1) + m[0][2] * c(0, 2);
            let r = T::ONE / det;
            for i in 0..3 {
                for j in 0..3 {
                    inv[j][i] = c(i, j) * r;
                }
            }
            (det, inv)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affine_map_of_a_parallelogram() {
        let mut v = [[0.0f64; 2]; MAX_VERTICES];
        v[0] = [1.0, 1.0];
        v[1] = [3.0, 1.0];
        v[2] = [1.5, 2.0];
        v[3] = [3.5, 2.0];
        let (x, j) = geometry::<f64, 2>(&v, [0.0, 0.0]);
        assert_eq!(x, [2.25, 1.5]);
        assert_eq!(j, [[1.0, 0.25], [0.0, 0.5]]);
        let (det, inv) = det_inv(&j);
        assert_eq!(det, 0.5);
        assert_eq!(inv, [[1.0, -0.5], [0.0, 2.0]]);
    }

    #[test]
    fn inverse_in_3d() {
        let m = [[2.0f64, 1.0, 0.0], [0.5, 3.0, 1.0], [0.0, -1.0, 4.0]];
        let (det, inv) = det_inv(&m);
        assert!((det - (2.0 * 13.0 - 1.0 * 2.0)).abs() < 1e-12);
        for i in 0..3 {
            for j in 0..3 {
                let s: f64 = (0..3).map(|k| m[i][k] * inv[k][j]).sum();
                assert!((s - if i == j { 1.0 } else { 0.0 }).abs() < 1e-14);
            }
        }
    }

    #[test]
    fn index_helpers() {
        assert_eq!(split::<3>(1 + 3 * (2 + 3 * 1), 3), [1, 2, 1]);
        assert_eq!(pow(5, 3), 125);
        assert_eq!(pow(4, 0), 1);
    }
}
