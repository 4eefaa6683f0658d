//! Partial assembly of any pointwise physics' Jacobian on hexahedra
//! ([`crate::pointwise::partial`]): the product and the diagonal, on
//! L-vectors (gather and atomic scatter fused into the kernel).
//!
//! `partial` follows BP3.0's line contractions ([`super::bp`]): one element
//! per `NQ × NQ` slab of threads, `blockDim.y` elements per block. Per
//! component it interpolates the element's GLL values to the Gauss points
//! (x- and y-lines in shared memory, the thread's z-column in registers)
//! and differentiates there with the collocation matrix, into four shared
//! arrays (value, three reference derivatives). After a barrier each
//! thread applies the point data of its column to every component at once
//! ([`apply_point`]: the physics couples them), then the transposed
//! contractions run per component and the results are added to `y`.
//!
//! The contractions ([`to_points`], [`from_points`]) and the element's
//! shared work arrays ([`element_work`], [`field`]) live in
//! [`crate::device::lines`], where the sum-factorised residual and point
//! data ([`crate::pointwise::sum_factorised`]) reach them in a user's
//! kernel crate too.
//!
//! The kernel takes as many Gauss points per direction as GLL nodes (the
//! rule `#[fem_kernel]` hexahedra use, exact for degree 2p + 1). Its 1D
//! matrices come packed in `tab`, `[B | D]`: B (points × nodes) interpolates,
//! D (points × points) differentiates at the points; B is centro-symmetric
//! and D centro-antisymmetric, so the contractions read half of each.

use crate::device::lines::{at, element_work, field, from_points, to_points};
use crate::device::*;
use crate::pointwise::partial::{apply_point, diagonal_per_element, element_entry, gets_derivatives, gives_derivatives, point_len, present, terms_of};
use fem_core::tensor::padded;
use fem_core::{unroll, Real};
use fem_macros::kernel;

/// A map entry that is neither read nor written (a held row or column).
const NONE: u32 = u32::MAX;

/// `y += (I − F) A (I − F) x` for the hexahedral elements `0..ne`, A the
/// partially assembled Jacobian with point data `g` (terms `mask`, or
/// `TERMS` where not 0: [`crate::pointwise::partial::SPECIALISED_TERMS`]), F the
/// held entries (`map` = [`NONE`]); `map` takes E-vector entries
/// (`(e·NQ³ + n)·NC + c`) to rows of `x` and `y`.
#[kernel(f64; degrees = 1..=8; NC = 1, 3; TERMS = 0, 1, 8, 9)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn partial<T: Real, const NQ: usize, const NC: usize, const TERMS: u32>(ne: usize, mask: u32, tab: *const T, g: *const T, map: *const u32, x: *const T, y: *mut T) {
    let np = NQ * NQ * NQ;
    let (w, [b, d]) = element_work::<T, NQ>(tab, NC);
    let t = thread_idx_x();
    let (i, j) = (t % NQ, t / NQ);
    let e = block_idx_x() * block_dim_y() + thread_idx_y();
    let live = e < ne;
    let pos = |k: usize, c: usize| (e * np + (k * NQ + j) * NQ + i) * NC + c;
    let terms = terms_of(if TERMS == 0 { mask } else { TERMS });
    barrier();
    for c in 0..NC {
        if live {
            let v: [T; NQ] = core::array::from_fn(|k| {
                let r = *map.add(pos(k, c));
                if r == NONE {
                    T::ZERO
                } else {
                    *x.add(r as usize)
                }
            });
            unroll::<NQ>(|k| *field::<T, NQ>(w, c, 0).add(at::<NQ>(k, j, i)) = v[k]);
        }
        barrier();
        to_points::<T, NQ>(w, c, b, d, gets_derivatives(terms));
    }
    barrier();
    if live {
        let len = point_len(3, NC, terms);
        let ge = g.add(e * len * np);
        for k in 0..NQ {
            let (n, q) = (at::<NQ>(k, j, i), (k * NQ + j) * NQ + i);
            let u: [[T; 4]; NC] = core::array::from_fn(|c| core::array::from_fn(|h| *field::<T, NQ>(w, c, h).add(n)));
            let v = apply_point::<T, 3, NC>(terms, |jj| *ge.add(jj * np + q), &u);
            unroll::<NC>(|c| unroll::<4>(|h| *field::<T, NQ>(w, c, h).add(n) = v[c][h]));
        }
    }
    barrier();
    for c in 0..NC {
        from_points::<T, NQ>(w, c, b, d, gives_derivatives(terms));
        if live {
            unroll::<NQ>(|k| {
                let r = *map.add(pos(k, c));
                if r != NONE {
                    atomic_add(y.add(r as usize), *field::<T, NQ>(w, c, 0).add(at::<NQ>(k, j, i)));
                }
            });
        }
    }
}

/// `d += diag((I − F) A (I − F))` of the partially assembled Jacobian on
/// hexahedra with point data `g` (terms `mask`), by sum factorisation on
/// `partial`'s slabs: entry (n, c) is Σ_(h,k) Σ_q G_cc,hk(q) φ_h(q, n)
/// φ_k(q, n), each block's term the point data contracted along x, y and
/// z with one of four 1D matrices M(n, q) = f(q, n)·g(q, n), f, g ∈ {B, B'}
/// (x- and y-lines in shared memory, the z-column in the thread's
/// registers): O(NQ⁴) a block and a cell where the entry-by-entry sum is
/// O(NQ⁶), the host's [`crate::pointwise::partial::diagonal_entry`] being
/// the reference the tests compare with. `tab` holds the four matrices
/// `[B·B, B·B', B'·B, B'·B']` (nodes × points each), index 2·(the row's
/// factor is a derivative) + (the column's is); each element takes two
/// arrays of `NQ³` values (padded rows) after them in shared memory.
#[kernel(f64; degrees = 1..=8; NC = 1, 3)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn partial_diagonal<T: Real, const NQ: usize, const NC: usize>(ne: usize, mask: u32, tab: *const T, g: *const T, map: *const u32, d: *mut T) {
    let np = NQ * NQ * NQ;
    let terms = terms_of(mask);
    let s = dynamic_shared::<T>();
    let (t, ty) = (thread_idx_x(), thread_idx_y());
    let mut m = t + block_dim_x() * ty;
    while m < 4 * NQ * NQ {
        *s.add(m) = *tab.add(m);
        m += block_dim_x() * block_dim_y();
    }
    let (a0, a1) = (s.add(4 * NQ * NQ + ty * diagonal_per_element(NQ)), s.add(4 * NQ * NQ + ty * diagonal_per_element(NQ) + NQ * NQ * padded(NQ)));
    let mat = |which: usize, n: usize, q: usize| *s.add((which * NQ + n) * NQ + q);
    let (i, j) = (t % NQ, t / NQ);
    let e = block_idx_x() * block_dim_y() + ty;
    let live = e < ne;
    let len = point_len(3, NC, terms);
    let nblk = len / (NC * NC);
    barrier();
    for c in 0..NC {
        let mut acc = [T::ZERO; NQ];
        let mut blk = (c * NC + c) * nblk;
        for h in 0..4 {
            for k in 0..4 {
                if !present(terms, h, k) {
                    continue;
                }
                let which = |axis: usize| 2 * (h == axis + 1) as usize + (k == axis + 1) as usize;
                if live {
                    let gb = g.add((e * len + blk) * np);
                    unroll::<NQ>(|z| *a0.add(at::<NQ>(z, j, i)) = *gb.add((z * NQ + j) * NQ + i));
                }
                barrier();
                let (wx, wy, wz) = (which(0), which(1), which(2));
                unroll::<NQ>(|z| {
                    let mut v = T::ZERO;
                    unroll::<NQ>(|q| v = mat(wx, i, q).mad(*a0.add(at::<NQ>(z, j, q)), v));
                    *a1.add(at::<NQ>(z, j, i)) = v;
                });
                barrier();
                let col: [T; NQ] = core::array::from_fn(|z| {
                    let mut v = T::ZERO;
                    unroll::<NQ>(|q| v = mat(wy, j, q).mad(*a1.add(at::<NQ>(z, q, i)), v));
                    v
                });
                unroll::<NQ>(|z| unroll::<NQ>(|q| acc[z] = mat(wz, z, q).mad(col[q], acc[z])));
                blk += 1;
            }
        }
        if live {
            unroll::<NQ>(|z| {
                let r = *map.add((e * np + (z * NQ + j) * NQ + i) * NC + c);
                if r != NONE {
                    atomic_add(d.add(r as usize), acc[z]);
                }
            });
        }
    }
}

/// The element matrices of the partially assembled Jacobian on
/// hexahedra from its point data, one thread per entry: `out[e·nl² +
/// row·nl + col]` with `nl` = nodes × `NC` and row and col = node·NC +
/// component, as the element kernels store them. At Q2 and above this
/// replaces the element kernels' Jacobian, whose thread per element holds
/// a whole element matrix; `tab` is `[B | B']` (points × nodes each, B'
/// the basis derivatives at the points), `n1` nodes and `q1` points per
/// direction.
#[kernel(f64; NC = 1, 3)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn partial_elements<T: Real, const NC: usize>(ne: usize, n1: usize, q1: usize, mask: u32, tab: *const T, g: *const T, out: *mut T) {
    let terms = terms_of(mask);
    let (np, nq) = (n1 * n1 * n1, q1 * q1 * q1);
    let (len, nl) = (point_len(3, NC, terms), np * NC);
    let bd = tab.add(q1 * n1);
    let mut item = global_idx_x();
    while item < ne * nl * nl {
        let (e, row, col) = (item / (nl * nl), (item / nl) % nl, item % nl);
        let ge = g.add(e * len * nq);
        *out.add(item) = element_entry::<T, 3, NC>(terms, n1, q1, |q, n| *tab.add(q * n1 + n), |q, n| *bd.add(q * n1 + n), (row / NC, row % NC), (col / NC, col % NC), |jj, q| *ge.add(jj * nq + q));
        item += grid_size_x();
    }
}
