//! Partial assembly of a pointwise physics' Jacobian on tensor cells: the
//! linearisation is evaluated once per Newton update at every quadrature
//! point and stored there ("point data"), and each product interpolates,
//! applies it and integrates back by sum factorisation, so a product costs
//! O(p^{d+1}) per cell instead of the element matrix's O(p^{2d}), and its
//! data grow as the points do, not as the square of the nodes.
//!
//! The point data are the quadrature phase of the element matrix
//! ([`super::jacobian_point`]: `G[c][e][h][k]`, pulled back to reference
//! derivatives and scaled by w|J|) less the blocks the physics' terms leave
//! zero: block (h, k) exists when h = k = 0 and g0 does, h = 0 < k and g1
//! does, h > 0 = k and g2 does, h, k > 0 and g3 does. Per cell they are
//! stored `[(c·NC + e)·blocks + b][q]`, point fastest, so threads of
//! neighbouring points read neighbouring words.
//!
//! The per-point application ([`apply_point`]), the point data of a cell
//! ([`cell_points`]) and the diagonal ([`diagonal_entry`]) are written once
//! here for the CPU and the GPU; the contractions differ (sequential per
//! cell on the CPU, shared-memory lines on the GPU).

use super::{jacobian_at, point, row_len};
use fem_core::physics::{Physics, Point, Terms};
use fem_core::Real;

/// Whether block (h, k) of the point values is nonzero for `terms`.
#[inline(always)]
pub const fn present(terms: Terms, h: usize, k: usize) -> bool {
    match (h == 0, k == 0) {
        (true, true) => terms.g[0],
        (true, false) => terms.g[1],
        (false, true) => terms.g[2],
        (false, false) => terms.g[3],
    }
}

/// Nonzero (h, k) blocks per component pair in `d` dimensions.
pub const fn blocks(d: usize, terms: Terms) -> usize {
    terms.g[0] as usize + d * terms.g[1] as usize + d * terms.g[2] as usize + d * d * terms.g[3] as usize
}

/// Storage index of block (h, k) among the nonzero ones (row-major in
/// (h, k)), or `None` where it is zero.
#[inline(always)]
pub const fn block_of(d: usize, terms: Terms, h: usize, k: usize) -> Option<usize> {
    if !present(terms, h, k) {
        return None;
    }
    let mut n = 0;
    let mut i = 0;
    while i < h * (d + 1) + k {
        if present(terms, i / (d + 1), i % (d + 1)) {
            n += 1;
        }
        i += 1;
    }
    Some(n)
}

/// Point values per quadrature point: NC²·[`blocks`].
pub const fn point_len(d: usize, nc: usize, terms: Terms) -> usize {
    nc * nc * blocks(d, terms)
}

/// Shared-memory values of one element of the GPU product (`partial`):
/// four arrays (value, three reference derivatives) of `nq³` points, rows
/// padded, per component.
pub const fn per_element(nq: usize, nc: usize) -> usize {
    4 * nc * nq * nq * fem_core::tensor::padded(nq)
}

/// Shared-memory values of one element of the GPU diagonal
/// (`partial_diagonal`): two arrays of `nq³` values, rows padded, after
/// the block's four `nq × nq` matrices.
pub const fn diagonal_per_element(nq: usize) -> usize {
    2 * nq * nq * fem_core::tensor::padded(nq)
}

/// Shared-memory values of a block of the GPU product with `epb`
/// elements: the two 1D matrices, then the elements' arrays.
pub const fn shared_len(nq: usize, nc: usize, epb: usize) -> usize {
    2 * nq * nq + epb * per_element(nq, nc)
}

/// Shared-memory values of one element of the quadrilaterals' GPU
/// product (`partial_quad`): three arrays (value, two reference
/// derivatives) of `nq × padded(nq)` points per component.
pub const fn per_element_quad(nq: usize, nc: usize) -> usize {
    3 * nc * nq * fem_core::tensor::padded(nq)
}

/// Shared-memory values of a block of the quadrilaterals' product with
/// `epb` elements: the two 1D matrices, then the elements' arrays.
pub const fn shared_len_quad(nq: usize, nc: usize, epb: usize) -> usize {
    2 * nq * nq + epb * per_element_quad(nq, nc)
}

/// The point data of one cell on the CPU: `out[j·NQ + q]` with j the
/// stored index of (c, e, block).
#[inline(always)]
pub fn cell_points<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    tab: &[T],
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    out: &mut [T],
) {
    for q in 0..NQ {
        point_values::<T, P, D, NC, NA, NB, NV, AUXN>(tab, q, |i| u[i], x, |i| a[i], time, |j, v| out[j * NQ + q] = v);
    }
}

/// The stored values of point `q` of a cell, handed to `put(j, value)`.
#[inline(always)]
pub fn point_values<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const AUXN: bool>(
    tab: &[T],
    q: usize,
    u: impl Fn(usize) -> T,
    x: &[T],
    aux: impl Fn(usize) -> T,
    time: T,
    put: impl FnMut(usize, T),
) {
    let stride = row_len(D, NB, NV);
    let (p, wdet, inv) = point::<T, D, NC, NA, NB, NV, AUXN>(&tab[q * stride..(q + 1) * stride], u, x, aux, time);
    stored_at::<T, P, D, NC, NA>(&p, wdet, &inv, put);
}

/// The stored values of the pointwise arguments `p` already evaluated,
/// with the point's |J|·w and J⁻¹: the element matrix's point values
/// ([`jacobian_at`]) less the blocks the physics' terms leave zero.
#[inline(always)]
pub fn stored_at<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize>(
    p: &Point<T, D, NC, NA>,
    wdet: T,
    inv: &[[T; D]; D],
    mut put: impl FnMut(usize, T),
) {
    let nblk = blocks(D, P::TERMS);
    jacobian_at::<T, P, D, NC, NA>(p, wdet, inv, |i, v| {
        let (ce, hk) = (i / ((1 + D) * (1 + D)), i % ((1 + D) * (1 + D)));
        if let Some(b) = block_of(D, P::TERMS, hk / (1 + D), hk % (1 + D)) {
            put(ce * nblk + b, v);
        }
    });
}

/// `V[c][h] = Σ_e Σ_k G[c][e][h][k]·U[e][k]` at one point: `u[e]` holds
/// component e's value (index 0) and reference derivatives (1..=D), `g(j)`
/// the point's stored value j. The loops have constant trip counts and the
/// block indices a closed form, so where `terms` is a constant after
/// inlining (the GPU product's specialisations, [`SPECIALISED_TERMS`]) every index folds, `u` and
/// `v` stay in registers and the point's loads are independent of one
/// another and may all be in flight at once.
#[inline(always)]
pub fn apply_point<T: Real, const D: usize, const NC: usize>(terms: Terms, g: impl Fn(usize) -> T, u: &[[T; 4]; NC]) -> [[T; 4]; NC] {
    let [g0, g1, g2, g3] = terms.g;
    let nblk = blocks(D, terms);
    // block (0, 1 + k) at o1 + k; block (1 + h, 0) at o2 + h·row and
    // (1 + h, 1 + k) after it at + g2 + k: [`block_of`] in closed form
    let (o1, o2, row) = (g0 as usize, g0 as usize + D * g1 as usize, g2 as usize + D * g3 as usize);
    let mut v = [[T::ZERO; 4]; NC];
    for c in 0..NC {
        for e in 0..NC {
            let base = (c * NC + e) * nblk;
            if g0 {
                v[c][0] = g(base).mad(u[e][0], v[c][0]);
            }
            if g1 {
                for k in 0..D {
                    v[c][0] = g(base + o1 + k).mad(u[e][1 + k], v[c][0]);
                }
            }
            for h in 0..D {
                let at = base + o2 + h * row;
                if g2 {
                    v[c][1 + h] = g(at).mad(u[e][0], v[c][1 + h]);
                }
                if g3 {
                    for k in 0..D {
                        v[c][1 + h] = g(at + g2 as usize + k).mad(u[e][1 + k], v[c][1 + h]);
                    }
                }
            }
        }
    }
    v
}

/// The Jacobian's terms as the GPU kernels take them: bit i for g_i.
#[inline(always)]
pub const fn terms_of(mask: u32) -> Terms {
    Terms { f0: false, f1: false, g: [mask & 1 == 1, mask >> 1 & 1 == 1, mask >> 2 & 1 == 1, mask >> 3 & 1 == 1], bf0: false, bg: [false; 2], g_reads_state: true }
}

/// Whether a Jacobian with `t` reads the direction's derivatives at the
/// points (g1, g3): the contractions to the points make them only then.
#[inline(always)]
pub const fn gets_derivatives(t: Terms) -> bool {
    t.g[1] || t.g[3]
}

/// Whether its product has derivative parts at the points (g2, g3): the
/// contractions back from the points integrate them only then.
#[inline(always)]
pub const fn gives_derivatives(t: Terms) -> bool {
    t.g[2] || t.g[3]
}

/// The inverse of [`terms_of`]: the mask the host passes.
pub fn terms_mask(t: Terms) -> u32 {
    t.g.iter().enumerate().map(|(i, &g)| (g as u32) << i).sum()
}

/// The masks whose GPU products are entry points of their own (`TERMS`
/// of `fem_partial`), the terms a constant in them so [`apply_point`]
/// folds: g0 (mass), g3 (Laplacian, elasticity, hyperelasticity) and
/// g0 + g3 (reaction–diffusion). A match on the mask inside one entry
/// point does not do it: the optimiser merges the identical arms back
/// into one that reads the terms at run time. The `TERMS` axis of the
/// GPU product's `#[kernel]` lists the same masks and 0 (the PTX test
/// checks every entry point the host may pick).
pub const SPECIALISED_TERMS: [u32; 3] = [0b0001, 0b1000, 0b1001];

/// The `TERMS` of the GPU product for `mask`: the mask where it is
/// specialised, else 0 (the entry point that reads it at run time).
pub fn specialisation(mask: u32) -> u32 {
    if SPECIALISED_TERMS.contains(&mask) {
        mask
    } else {
        0
    }
}

/// Diagonal entry of component `c` at the cell's node `node`
/// ([`element_entry`] of the row with itself).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn diagonal_entry<T: Real, const D: usize, const NC: usize>(
    terms: Terms,
    n1: usize,
    q1: usize,
    b: impl Fn(usize, usize) -> T,
    bd: impl Fn(usize, usize) -> T,
    node: usize,
    c: usize,
    g: impl Fn(usize, usize) -> T,
) -> T {
    element_entry::<T, D, NC>(terms, n1, q1, b, bd, (node, c), (node, c), g)
}

/// Entry (row, col) of the element matrix, each a (node, component) pair
/// (nodes by tensor index, first direction fastest), from the 1D tables:
/// `b(q, n)` the basis at the points and `bd(q, n)` its derivative, `n1`
/// nodes and `q1` points per direction; `g(j, q)` the cell's stored
/// values. The element matrix is the point data integrated against the
/// row's and the column's values and reference derivatives, which is how
/// the element kernels build it, so the two agree to rounding.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn element_entry<T: Real, const D: usize, const NC: usize>(
    terms: Terms,
    n1: usize,
    q1: usize,
    b: impl Fn(usize, usize) -> T,
    bd: impl Fn(usize, usize) -> T,
    (row, c): (usize, usize),
    (col, e): (usize, usize),
    g: impl Fn(usize, usize) -> T,
) -> T {
    let nblk = blocks(D, terms);
    let base = (c * NC + e) * nblk;
    let digits = |mut n: usize| {
        let mut idx = [0usize; 3];
        for i in idx.iter_mut().take(D) {
            *i = n % n1;
            n /= n1;
        }
        idx
    };
    let (ri, ci) = (digits(row), digits(col));
    let mut nq = 1;
    for _ in 0..D {
        nq *= q1;
    }
    let mut s = T::ZERO;
    for q in 0..nq {
        // values and reference derivatives of both basis functions at q
        let mut qi = [0usize; 3];
        let mut r = q;
        for i in qi.iter_mut().take(D) {
            *i = r % q1;
            r /= q1;
        }
        let (mut phi, mut psi) = ([T::ONE; 4], [T::ONE; 4]);
        for a in 0..D {
            let (v, dv) = (b(qi[a], ri[a]), bd(qi[a], ri[a]));
            let (w, dw) = (b(qi[a], ci[a]), bd(qi[a], ci[a]));
            for h in 0..=D {
                phi[h] = phi[h] * if h == a + 1 { dv } else { v };
                psi[h] = psi[h] * if h == a + 1 { dw } else { w };
            }
        }
        let mut blk = 0;
        for h in 0..=D {
            for k in 0..=D {
                if present(terms, h, k) {
                    s = (phi[h] * psi[k]).mad(g(base + blk, q), s);
                    blk += 1;
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(g: [bool; 4]) -> Terms {
        Terms { f0: true, f1: true, g, bf0: false, bg: [false; 2], g_reads_state: true }
    }

    #[test]
    fn blocks_are_numbered_densely_in_row_major_order() {
        for mask in 0..16u32 {
            let t = terms(core::array::from_fn(|i| mask >> i & 1 == 1));
            for d in [2, 3] {
                let mut next = 0;
                for h in 0..=d {
                    for k in 0..=d {
                        match block_of(d, t, h, k) {
                            Some(b) => {
                                assert_eq!(b, next);
                                next += 1;
                            }
                            None => assert!(!present(t, h, k)),
                        }
                    }
                }
                assert_eq!(next, blocks(d, t));
            }
        }
        // the Laplacian keeps only the 3 × 3 gradient block
        assert_eq!(blocks(3, terms([false, false, false, true])), 9);
        assert_eq!(blocks(3, terms([true; 4])), 16);
    }

    /// [`apply_point`]'s closed-form block offsets against the sum over
    /// [`block_of`], for every mask, 2D and 3D, one and three components.
    fn applies_as_the_block_sum<const D: usize, const NC: usize>() {
        for mask in 0..16u32 {
            let t = terms_of(mask);
            assert_eq!(terms_mask(t), mask);
            let len = point_len(D, NC, t);
            let g = |j: usize| 1.0 + (j as f64 * 0.37).sin();
            let u: [[f64; 4]; NC] = core::array::from_fn(|e| core::array::from_fn(|k| if k <= D { (e * 4 + k) as f64 - 2.5 } else { 0.0 }));
            let v = apply_point::<f64, D, NC>(t, g, &u);
            let mut want = [[0.0; 4]; NC];
            for c in 0..NC {
                for e in 0..NC {
                    for h in 0..=D {
                        for k in 0..=D {
                            if let Some(b) = block_of(D, t, h, k) {
                                let j = (c * NC + e) * blocks(D, t) + b;
                                assert!(j < len);
                                want[c][h] += g(j) * u[e][k];
                            }
                        }
                    }
                }
            }
            for c in 0..NC {
                for h in 0..4 {
                    assert!((v[c][h] - want[c][h]).abs() <= 1e-13 * (1.0 + want[c][h].abs()), "mask {mask:04b} D {D} NC {NC}: v[{c}][{h}] = {} against {}", v[c][h], want[c][h]);
                }
            }
        }
    }

    #[test]
    fn point_application_equals_the_sum_over_blocks() {
        applies_as_the_block_sum::<2, 1>();
        applies_as_the_block_sum::<2, 3>();
        applies_as_the_block_sum::<3, 1>();
        applies_as_the_block_sum::<3, 3>();
    }
}
