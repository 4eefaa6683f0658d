//! Element kernels of −∇·(κ∇u) = f on Q_p elements: the element stiffness
//! matrix and load vector, in the two variants of Reguly & Giles §4.1.
//!
//! * *Redundant compute*: every entry recomputes the geometry at every
//!   quadrature point, so a GPU thread's registers do not grow with p.
//! * *Local reuse*: the per-point data `w·κ·detJ·J⁻¹J⁻ᵀ` and `w·f·detJ` are
//!   computed once per element into a scratch slice, then every entry is
//!   a sum over points.
//!
//! Both are generic over the precision and the dimension, and shared by the
//! CPU backend and the GPU kernels.

use crate::element::{det_inv, geometry, next, split, Tables, MAX_VERTICES};
use crate::Real;

/// Coefficient κ(x) and load f(x) of the problem, evaluated pointwise.
pub trait Coefficients<T: Real, const D: usize> {
    /// Diffusion coefficient κ at the physical point `x`.
    fn kappa(&self, x: [T; D]) -> T;
    /// Source term f at the physical point `x`.
    fn load(&self, x: [T; D]) -> T;
}

/// κ = 1 and f = Π sin(π xₐ): the paper's test problem, whose solution
/// with u = 0 on ∂\[0,1\]^D is u = Π sin(π xₐ) / (D π²).
#[derive(Clone, Copy, Debug, Default)]
pub struct SinePoisson;

impl<T: Real, const D: usize> Coefficients<T, D> for SinePoisson {
    #[inline(always)]
    fn kappa(&self, _x: [T; D]) -> T {
        T::ONE
    }
    #[inline(always)]
    fn load(&self, x: [T; D]) -> T {
        let pi = T::from_f64(core::f64::consts::PI);
        let mut f = T::ONE;
        for xa in x {
            f *= (pi * xa).sin();
        }
        f
    }
}

/// κ = 1 and f = 1: the benchmark problem of Geveler et al. (−Δu = 1).
#[derive(Clone, Copy, Debug, Default)]
pub struct UnitLoad;

impl<T: Real, const D: usize> Coefficients<T, D> for UnitLoad {
    #[inline(always)]
    fn kappa(&self, _x: [T; D]) -> T {
        T::ONE
    }
    #[inline(always)]
    fn load(&self, _x: [T; D]) -> T {
        T::ONE
    }
}

/// Coefficients `inner` with κ multiplied by a constant `factor`: a cell's
/// material (its region's conductivity), the load unchanged. A per-cell
/// constant factors out of the element matrix, so regions cost one value
/// per cell and no change to the quadrature.
#[derive(Clone, Copy, Debug)]
pub struct Scaled<'a, T, C> {
    /// The cell's κ factor.
    pub factor: T,
    /// The problem's pointwise κ(x) and f(x).
    pub inner: &'a C,
}

impl<T: Real, C: Coefficients<T, D>, const D: usize> Coefficients<T, D> for Scaled<'_, T, C> {
    #[inline(always)]
    fn kappa(&self, x: [T; D]) -> T {
        self.factor * self.inner.kappa(x)
    }
    #[inline(always)]
    fn load(&self, x: [T; D]) -> T {
        self.inner.load(x)
    }
}

impl SinePoisson {
    /// The exact solution, in the precision of `x`.
    #[inline(always)]
    pub fn solution<T: Real, const D: usize>(x: [T; D]) -> T {
        let pi = T::from_f64(core::f64::consts::PI);
        let mut u = T::ONE;
        for xa in x {
            u *= (pi * xa).sin();
        }
        u / T::from_f64(D as f64 * core::f64::consts::PI * core::f64::consts::PI)
    }
}

/// ∫ (u_h − u)² over the cell with vertices `verts`, where u_h has the
/// nodal values `uh` (GLL nodes, tensor order) and u is `exact`, by the
/// tensor rule of `tab` (its points and weights; its basis values at
/// them). What an L2 error sums per cell, on the host or the device.
#[inline(always)]
pub fn error_sq<T: Real, const D: usize, const NB: usize>(tab: &Tables<T>, verts: &[[T; D]; MAX_VERTICES], uh: &[T; NB], exact: impl Fn([T; D]) -> T) -> T {
    let mut sum = T::ZERO;
    let mut cq = [0usize; D];
    for _ in 0..tab.nq.pow(D as u32) {
        let xi: [T; D] = core::array::from_fn(|a| tab.points[cq[a]]);
        let mut w = T::ONE;
        for &c in &cq {
            w *= tab.weights[c];
        }
        let (x, jac) = geometry(verts, xi);
        let mut u = T::ZERO;
        let mut ci = [0usize; D];
        for &value in uh {
            u += value * tab.basis_at::<D>(&ci, &cq);
            next(&mut ci, tab.np);
        }
        let e = u - exact(x);
        sum += w * det_inv(&jac).0.abs() * e * e;
        next(&mut cq, tab.nq);
    }
    sum
}

/// Entries of the symmetric D×D per-point matrix kept by local reuse.
pub const fn sym_len(d: usize) -> usize {
    d * (d + 1) / 2
}

/// Values per quadrature point in the local-reuse scratch: the symmetric
/// metric (D(D+1)/2 entries) and the load weight.
pub const fn point_data_len(d: usize) -> usize {
    sym_len(d) + 1
}

/// Index of entry (a, b) of a symmetric D×D matrix stored as its upper
/// triangle by rows.
#[inline(always)]
pub fn sym_index(a: usize, b: usize, d: usize) -> usize {
    let (i, j) = if a <= b { (a, b) } else { (b, a) };
    i * d - i * (i + 1) / 2 + j
}

/// Physical gradient `J⁻ᵀ ĝ`.
#[inline(always)]
fn physical<T: Real, const D: usize>(inv: &[[T; D]; D], g: [T; D]) -> [T; D] {
    let mut r = [T::ZERO; D];
    for a in 0..D {
        for b in 0..D {
            r[a] += inv[b][a] * g[b];
        }
    }
    r
}

/// `K_ij` by redundant compute.
#[inline(always)]
pub fn stiffness_redundant<T: Real, C: Coefficients<T, D>, const D: usize>(
    tab: &Tables<'_, T>,
    verts: &[[T; D]; MAX_VERTICES],
    coeff: &C,
    i: usize,
    j: usize,
) -> T {
    let (ci, cj) = (split::<D>(i, tab.np), split::<D>(j, tab.np));
    let mut cq = [0usize; D];
    let mut k = T::ZERO;
    for q in 0..crate::element::pow(tab.nq, D) {
        let (xi, w) = tab.point::<D>(q);
        let (x, jac) = geometry(verts, xi);
        let (det, inv) = det_inv(&jac);
        let gi = physical(&inv, tab.grad_at::<D>(&ci, &cq));
        let gj = physical(&inv, tab.grad_at::<D>(&cj, &cq));
        next(&mut cq, tab.nq);
        let mut dot = T::ZERO;
        for a in 0..D {
            dot += gi[a] * gj[a];
        }
        k += w * det * coeff.kappa(x) * dot;
    }
    k
}

/// `l_i` by redundant compute.
#[inline(always)]
pub fn load_redundant<T: Real, C: Coefficients<T, D>, const D: usize>(
    tab: &Tables<'_, T>,
    verts: &[[T; D]; MAX_VERTICES],
    coeff: &C,
    i: usize,
) -> T {
    let ci = split::<D>(i, tab.np);
    let mut cq = [0usize; D];
    let mut l = T::ZERO;
    for q in 0..crate::element::pow(tab.nq, D) {
        let (xi, w) = tab.point::<D>(q);
        let (x, jac) = geometry(verts, xi);
        let (det, _) = det_inv(&jac);
        l += w * det * coeff.load(x) * tab.basis_at::<D>(&ci, &cq);
        next(&mut cq, tab.nq);
    }
    l
}

/// What one quadrature point contributes to a cell's operator: the
/// weighted metric `G = w κ detJ J⁻¹J⁻ᵀ`, the load weight `w f detJ`, and
/// `detJ` itself. One function for every consumer (point data, the
/// matrix-free product, the diagonal), so they integrate alike.
#[derive(Clone, Copy, Debug)]
pub struct PointFactors<T, const D: usize> {
    /// `w κ detJ J⁻¹J⁻ᵀ` (symmetric).
    pub metric: [[T; D]; D],
    /// `w f detJ`.
    pub load: T,
    /// The Jacobian determinant.
    pub det: T,
}

/// The [`PointFactors`] of quadrature point `cq` (tensor index) of the
/// cell with vertices `verts`.
#[inline(always)]
pub fn point_factors<T: Real, C: Coefficients<T, D>, const D: usize>(
    tab: &Tables<'_, T>,
    verts: &[[T; D]; MAX_VERTICES],
    coeff: &C,
    cq: &[usize; D],
) -> PointFactors<T, D> {
    let (xi, w) = tab.point_at::<D>(cq);
    let (x, jac) = geometry(verts, xi);
    let (det, inv) = det_inv(&jac);
    let s = w * det * coeff.kappa(x);
    let mut metric = [[T::ZERO; D]; D];
    for a in 0..D {
        for b in a..D {
            let mut g = T::ZERO;
            for c in 0..D {
                g += inv[a][c] * inv[b][c];
            }
            metric[a][b] = s * g;
            metric[b][a] = s * g;
        }
    }
    PointFactors { metric, load: w * det * coeff.load(x), det }
}

/// Fills `data` (nq^D × [`point_data_len`]) with the per-point data of the
/// local-reuse variant: `w κ detJ (J⁻¹J⁻ᵀ)` (upper triangle) and `w f detJ`.
/// Returns the smallest Jacobian determinant, so callers can reject
/// inverted elements.
#[inline(always)]
pub fn point_data<T: Real, C: Coefficients<T, D>, const D: usize>(
    tab: &Tables<'_, T>,
    verts: &[[T; D]; MAX_VERTICES],
    coeff: &C,
    data: &mut [T],
) -> T {
    let stride = point_data_len(D);
    let mut min_det = T::from_f64(f64::MAX);
    let mut cq = [0usize; D];
    for q in 0..crate::element::pow(tab.nq, D) {
        let f = point_factors(tab, verts, coeff, &cq);
        next(&mut cq, tab.nq);
        min_det = min_det.min(f.det);
        let d = &mut data[q * stride..(q + 1) * stride];
        for a in 0..D {
            for b in a..D {
                d[sym_index(a, b, D)] = f.metric[a][b];
            }
        }
        d[sym_len(D)] = f.load;
    }
    min_det
}

/// `K_ij` from local-reuse point data: `Σ_q ĝᵢᵀ G_q ĝⱼ`.
#[inline(always)]
pub fn stiffness_reuse<T: Real, const D: usize>(tab: &Tables<'_, T>, data: &[T], i: usize, j: usize) -> T {
    let stride = point_data_len(D);
    let (ci, cj) = (split::<D>(i, tab.np), split::<D>(j, tab.np));
    let mut cq = [0usize; D];
    let mut k = T::ZERO;
    for q in 0..crate::element::pow(tab.nq, D) {
        let gi = tab.grad_at::<D>(&ci, &cq);
        let gj = tab.grad_at::<D>(&cj, &cq);
        next(&mut cq, tab.nq);
        let d = &data[q * stride..];
        for a in 0..D {
            for b in 0..D {
                k += gi[a] * d[sym_index(a, b, D)] * gj[b];
            }
        }
    }
    k
}

/// `y = K x` of one cell, point by point, the element matrix never
/// formed: at each quadrature point the reference gradient of `x`, the
/// point's factor `G_q` (as [`point_data`] makes it) applied to it, and
/// its product with every basis gradient. About NB·nq^D·4D operations in
/// registers, where the pairs (i, j) of [`stiffness_reuse`] take
/// NB²/2·nq^D·(D² + 2D) and a thread-local array of every point's factors.
#[inline(always)]
pub fn stiffness_product<T: Real, C: Coefficients<T, D>, const D: usize, const NB: usize>(
    tab: &Tables<'_, T>,
    verts: &[[T; D]; MAX_VERTICES],
    coeff: &C,
    x: &[T; NB],
) -> [T; NB] {
    let np = const { crate::element::nodes_per_direction(NB, D) };
    debug_assert_eq!(np, tab.np);
    let mut y = [T::ZERO; NB];
    let mut cq = [0usize; D];
    for _ in 0..crate::element::pow(tab.nq, D) {
        let f = point_factors(tab, verts, coeff, &cq);
        let mut gu = [T::ZERO; D];
        for (j, &xj) in x.iter().enumerate() {
            let g = tab.grad_at::<D>(&split::<D>(j, np), &cq);
            for a in 0..D {
                gu[a] += g[a] * xj;
            }
        }
        let mut v = [T::ZERO; D];
        for a in 0..D {
            for b in 0..D {
                v[a] += f.metric[a][b] * gu[b];
            }
        }
        for (i, yi) in y.iter_mut().enumerate() {
            let g = tab.grad_at::<D>(&split::<D>(i, np), &cq);
            for a in 0..D {
                *yi += g[a] * v[a];
            }
        }
        next(&mut cq, tab.nq);
    }
    y
}

/// The diagonal `K_ii` and the load `l_i` of one cell, point by point
/// like [`stiffness_product`]: what Jacobi and the right-hand side need of
/// an operator that never stores its element matrices (an LMA's 36 values
/// a Q1 hexahedron, where this keeps 16 in registers).
#[inline(always)]
pub fn diagonal_and_load<T: Real, C: Coefficients<T, D>, const D: usize, const NB: usize>(
    tab: &Tables<'_, T>,
    verts: &[[T; D]; MAX_VERTICES],
    coeff: &C,
) -> ([T; NB], [T; NB]) {
    let np = const { crate::element::nodes_per_direction(NB, D) };
    debug_assert_eq!(np, tab.np);
    let (mut diag, mut load) = ([T::ZERO; NB], [T::ZERO; NB]);
    let mut cq = [0usize; D];
    for _ in 0..crate::element::pow(tab.nq, D) {
        let f = point_factors(tab, verts, coeff, &cq);
        for i in 0..NB {
            let ci = split::<D>(i, np);
            let g = tab.grad_at::<D>(&ci, &cq);
            for a in 0..D {
                for b in 0..D {
                    diag[i] += g[a] * f.metric[a][b] * g[b];
                }
            }
            load[i] += f.load * tab.basis_at::<D>(&ci, &cq);
        }
        next(&mut cq, tab.nq);
    }
    (diag, load)
}

/// `l_i` from local-reuse point data.
#[inline(always)]
pub fn load_reuse<T: Real, const D: usize>(tab: &Tables<'_, T>, data: &[T], i: usize) -> T {
    let stride = point_data_len(D);
    let ci = split::<D>(i, tab.np);
    let mut cq = [0usize; D];
    let mut l = T::ZERO;
    for q in 0..crate::element::pow(tab.nq, D) {
        l += data[q * stride + sym_len(D)] * tab.basis_at::<D>(&ci, &cq);
        next(&mut cq, tab.nq);
    }
    l
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::element::pow;
    use crate::lagrange::tabulate;
    use crate::quadrature::{gauss_legendre, gauss_lobatto};
    use std::vec;
    use std::vec::Vec;

    struct Owned {
        np: usize,
        nq: usize,
        points: Vec<f64>,
        weights: Vec<f64>,
        value: Vec<f64>,
        deriv: Vec<f64>,
        nodes: Vec<f64>,
    }

    fn tables(p: usize, nq: usize) -> Owned {
        let np = p + 1;
        let (mut nodes, mut w) = (vec![0.0; np], vec![0.0; np]);
        gauss_lobatto(&mut nodes, &mut w);
        let (mut points, mut weights) = (vec![0.0; nq], vec![0.0; nq]);
        gauss_legendre(&mut points, &mut weights);
        let (mut value, mut deriv) = (vec![0.0; np * nq], vec![0.0; np * nq]);
        tabulate(&nodes, &points, &mut value, &mut deriv);
        Owned { np, nq, points, weights, value, deriv, nodes }
    }

    impl Owned {
        fn t(&self) -> Tables<'_, f64> {
            Tables { np: self.np, nq: self.nq, points: &self.points, weights: &self.weights, value: &self.value, deriv: &self.deriv }
        }
    }

    struct Unit;
    impl<const D: usize> Coefficients<f64, D> for Unit {
        fn kappa(&self, _: [f64; D]) -> f64 {
            1.0
        }
        fn load(&self, _: [f64; D]) -> f64 {
            1.0
        }
    }

    fn matrix<const D: usize>(o: &Owned, verts: &[[f64; D]; MAX_VERTICES], reuse: bool) -> Vec<f64> {
        let t = o.t();
        let nb = pow(o.np, D);
        let mut data = vec![0.0; pow(o.nq, D) * point_data_len(D)];
        point_data(&t, verts, &Unit, &mut data);
        let mut k = vec![0.0; nb * nb];
        for i in 0..nb {
            for j in 0..nb {
                k[i * nb + j] = if reuse { stiffness_reuse::<f64, D>(&t, &data, i, j) } else { stiffness_redundant(&t, verts, &Unit, i, j) };
            }
        }
        k
    }

    #[test]
    fn q1_unit_square_is_the_textbook_matrix() {
        let o = tables(1, 2);
        let mut v = [[0.0; 2]; MAX_VERTICES];
        v[1] = [1.0, 0.0];
        v[2] = [0.0, 1.0];
        v[3] = [1.0, 1.0];
        let k = matrix::<2>(&o, &v, false);
        let want = [4.0, -1.0, -1.0, -2.0, -1.0, 4.0, -2.0, -1.0, -1.0, -2.0, 4.0, -1.0, -2.0, -1.0, -1.0, 4.0];
        for (a, b) in k.iter().zip(want) {
            assert!((a - b / 6.0).abs() < 1e-15, "{k:?}");
        }
    }

    /// On a distorted element, for every p: both variants agree, K is
    /// symmetric, constants are in its kernel, and uᵀKu = |a|²·area for
    /// the linear u = a·x (the nodal interpolant is exact).
    fn check_distorted<const D: usize>(verts: [[f64; D]; MAX_VERTICES], volume: f64) {
        for p in 1..=4 {
            let o = tables(p, p + 2);
            let nb = pow(o.np, D);
            let kr = matrix::<D>(&o, &verts, false);
            let ku = matrix::<D>(&o, &verts, true);
            let a = [0.3, -1.1, 0.7];
            let mut u = vec![0.0; nb];
            for (i, ui) in u.iter_mut().enumerate() {
                let c = crate::element::split::<D>(i, o.np);
                let mut xi = [0.0; D];
                for d in 0..D {
                    xi[d] = o.nodes[c[d]];
                }
                let (x, _) = geometry(&verts, xi);
                *ui = (0..D).map(|d| a[d] * x[d]).sum();
            }
            let mut energy = 0.0;
            for i in 0..nb {
                let row: f64 = (0..nb).map(|j| kr[i * nb + j]).sum();
                assert!(row.abs() < 1e-11, "p={p} row {i} sums to {row}");
                for j in 0..nb {
                    assert!((kr[i * nb + j] - ku[i * nb + j]).abs() < 1e-12, "p={p} variants differ");
                    assert!((kr[i * nb + j] - kr[j * nb + i]).abs() < 1e-12, "p={p} not symmetric");
                    energy += u[i] * kr[i * nb + j] * u[j];
                }
            }
            let a2: f64 = (0..D).map(|d| a[d] * a[d]).sum();
            // The distorted elements are affine here, so the energy is exact.
            assert!((energy - a2 * volume).abs() < 1e-10, "p={p}: {energy} vs {}", a2 * volume);
        }
    }

    #[test]
    fn distorted_quadrilateral() {
        let mut v = [[0.0; 2]; MAX_VERTICES];
        v[0] = [0.1, 0.2];
        v[1] = [1.3, 0.5];
        v[2] = [0.4, 1.1];
        v[3] = [1.6, 1.4];
        check_distorted::<2>(v, 1.2 * 0.9 - 0.3 * 0.3);
    }

    #[test]
    fn distorted_hexahedron() {
        // An affine image of the unit cube: x = A ξ' + b, det A = volume.
        let m = [[1.0, 0.2, 0.1], [0.0, 0.8, 0.3], [0.1, 0.0, 1.2]];
        let mut v = [[0.0; 3]; MAX_VERTICES];
        for (k, vk) in v.iter_mut().enumerate() {
            let c = [(k & 1) as f64, ((k >> 1) & 1) as f64, ((k >> 2) & 1) as f64];
            for a in 0..3 {
                vk[a] = 0.5 + (0..3).map(|b| m[a][b] * c[b]).sum::<f64>();
            }
        }
        let (det, _) = det_inv(&m);
        check_distorted::<3>(v, det);
    }

    /// [`diagonal_and_load`] is the diagonal of the assembled element
    /// matrix and the local-reuse load, on a distorted cell, with a load
    /// that varies in space.
    fn check_diagonal<const D: usize, const NB: usize>(verts: &[[f64; D]; MAX_VERTICES]) {
        let np = crate::element::nodes_per_direction(NB, D);
        let o = tables(np - 1, np + 1);
        let t = o.t();
        let k = matrix::<D>(&o, verts, true);
        let mut data = vec![0.0; pow(o.nq, D) * point_data_len(D)];
        point_data(&t, verts, &SinePoisson, &mut data);
        let (diag, load) = diagonal_and_load::<f64, _, D, NB>(&t, verts, &SinePoisson);
        for i in 0..NB {
            assert!((diag[i] - k[i * NB + i]).abs() < 1e-13 * k[i * NB + i].abs(), "D={D} NB={NB} K_{i}{i}: {} vs {}", diag[i], k[i * NB + i]);
            let want = load_reuse::<f64, D>(&t, &data, i);
            assert!((load[i] - want).abs() < 1e-14, "D={D} NB={NB} l_{i}: {} vs {want}", load[i]);
            assert!(diag[i] > 0.0);
        }
    }

    #[test]
    fn diagonal_and_load_point_by_point() {
        let mut q = [[0.0; 2]; MAX_VERTICES];
        q[..4].copy_from_slice(&[[0.1, 0.2], [1.3, 0.5], [0.4, 1.1], [1.9, 1.6]]);
        check_diagonal::<2, 4>(&q);
        check_diagonal::<2, 16>(&q);
        let mut h = [[0.0; 3]; MAX_VERTICES];
        for (k, hk) in h.iter_mut().enumerate() {
            let c = [(k & 1) as f64, ((k >> 1) & 1) as f64, ((k >> 2) & 1) as f64];
            *hk = [c[0] + 0.2 * c[1] * c[2], c[1] + 0.1 * c[0], c[2] + 0.3 * c[0] * c[1]];
        }
        check_diagonal::<3, 8>(&h);
        check_diagonal::<3, 27>(&h);
    }

    #[test]
    fn load_vector_sums_to_the_integral_of_f() {
        let o = tables(3, 5);
        let mut v = [[0.0; 2]; MAX_VERTICES];
        v[1] = [2.0, 0.0];
        v[2] = [0.0, 1.0];
        v[3] = [2.0, 1.0];
        let t = o.t();
        let mut data = vec![0.0; pow(o.nq, 2) * point_data_len(2)];
        let min_det = point_data(&t, &v, &Unit, &mut data);
        assert!((min_det - 0.5).abs() < 1e-15);
        let (mut s1, mut s2) = (0.0, 0.0);
        for i in 0..16 {
            s1 += load_redundant(&t, &v, &Unit, i);
            s2 += load_reuse::<f64, 2>(&t, &data, i);
        }
        assert!((s1 - 2.0).abs() < 1e-13 && (s2 - 2.0).abs() < 1e-13);
    }
}
