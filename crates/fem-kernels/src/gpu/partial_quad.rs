//! Partial assembly of any pointwise physics' Jacobian on quadrilaterals
//! ([`crate::pointwise::partial`]): the product and the diagonal on
//! L-vectors (gather and atomic scatter fused), as [`super::partial`]
//! has them on hexahedra. One element per line of `NQ` threads,
//! `blockDim.y` elements per block: thread i owns the x-line of row i
//! and the y-column of column i of its element's arrays in shared memory.
//! Per component the node values go to the Gauss points along x (rows)
//! then y (the thread's column, in registers), with the collocation
//! derivatives there; each thread applies the point data of its column to
//! every component at once ([`apply_point`]), and the transposed
//! contractions bring the results back to the nodes.
//!
//! Tables as the hexahedra's: `[B | D]` (B points × nodes, D points ×
//! points) for the product, the four matrices of the diagonal for it.

use crate::device::lines::{line, line_t};
use crate::device::*;
use crate::pointwise::partial::{apply_point, gets_derivatives, gives_derivatives, per_element_quad, point_len, present, terms_of};
use crate::tensor::{interp_column, project_column};
use fem_core::tensor::padded;
use fem_core::{unroll, Real};
use fem_macros::kernel;

/// A map entry that is neither read nor written (a held row or column).
const NONE: u32 = u32::MAX;

/// Array `h` (0 the values, 1 and 2 the reference derivatives) of
/// component `c` in an element's work `w`.
#[inline(always)]
unsafe fn array<T, const NQ: usize>(w: *mut T, c: usize, h: usize) -> *mut T {
    w.add((c * 3 + h) * NQ * padded(NQ))
}

/// Node or point (i, j) (x, y) of an array.
#[inline(always)]
const fn at<const NQ: usize>(j: usize, i: usize) -> usize {
    j * padded(NQ) + i
}

/// A component's node values (array 0, a barrier passed) to its value
/// and reference derivatives at the Gauss points (arrays 0 to 2; the
/// derivatives only where `derivatives`). The whole block calls it; the
/// caller passes a barrier before reading.
#[inline(always)]
unsafe fn to_points<T: Real, const NQ: usize>(w: *mut T, c: usize, b: impl Fn(usize, usize) -> T + Copy, d: impl Fn(usize, usize) -> T + Copy, derivatives: bool) {
    let i = thread_idx_x();
    let (u, ux, uy) = (array::<T, NQ>(w, c, 0), array::<T, NQ>(w, c, 1), array::<T, NQ>(w, c, 2));
    line::<T, NQ, NQ, false>(u.add(at::<NQ>(i, 0)), u.add(at::<NQ>(i, 0)), 1, b);
    barrier();
    let r: [T; NQ] = core::array::from_fn(|j| *u.add(at::<NQ>(j, i)));
    let col = interp_column::<T, NQ, NQ, false>(b, &r);
    if !derivatives {
        unroll::<NQ>(|j| *u.add(at::<NQ>(j, i)) = col[j]);
        return;
    }
    let dy = interp_column::<T, NQ, NQ, true>(d, &col);
    unroll::<NQ>(|j| {
        *u.add(at::<NQ>(j, i)) = col[j];
        *uy.add(at::<NQ>(j, i)) = dy[j];
    });
    barrier();
    line::<T, NQ, NQ, true>(u.add(at::<NQ>(i, 0)), ux.add(at::<NQ>(i, 0)), 1, d);
}

/// The transpose of [`to_points`]: a component's values and reference
/// derivatives at the points (a barrier passed since they were written;
/// the values alone unless `derivatives`) integrated against the basis
/// into its node values, left in array 0 with a barrier passed.
#[inline(always)]
unsafe fn from_points<T: Real, const NQ: usize>(w: *mut T, c: usize, b: impl Fn(usize, usize) -> T + Copy, d: impl Fn(usize, usize) -> T + Copy, derivatives: bool) {
    let i = thread_idx_x();
    let (u, ux, uy) = (array::<T, NQ>(w, c, 0), array::<T, NQ>(w, c, 1), array::<T, NQ>(w, c, 2));
    let mut sum: [T; NQ] = core::array::from_fn(|j| *u.add(at::<NQ>(j, i)));
    if derivatives {
        let vy: [T; NQ] = core::array::from_fn(|j| *uy.add(at::<NQ>(j, i)));
        let z = project_column::<T, NQ, NQ, true>(d, &vy);
        line_t::<T, NQ, NQ, true>(ux.add(at::<NQ>(i, 0)), 1, d);
        barrier();
        sum = core::array::from_fn(|j| sum[j] + z[j] + *ux.add(at::<NQ>(j, i)));
    }
    let r = project_column::<T, NQ, NQ, false>(b, &sum);
    unroll::<NQ>(|j| *u.add(at::<NQ>(j, i)) = r[j]);
    barrier();
    line_t::<T, NQ, NQ, false>(u.add(at::<NQ>(i, 0)), 1, b);
    barrier();
}

/// `y += (I − F) A (I − F) x` for the quadrilateral elements `0..ne`, A
/// the partially assembled Jacobian with point data `g` (terms `mask`), F
/// the held entries (`map` = [`NONE`]); `map` takes E-vector entries
/// (`(e·NQ² + j·NQ + i)·NC + c`) to rows of `x` and `y`.
#[kernel(f64; degrees = 1..=8; NC = 1, 2)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn partial_quad<T: Real, const NQ: usize, const NC: usize>(ne: usize, mask: u32, tab: *const T, g: *const T, map: *const u32, x: *const T, y: *mut T) {
    let np = NQ * NQ;
    let s = dynamic_shared::<T>();
    let (t, nt) = (thread_idx_x() + block_dim_x() * thread_idx_y(), block_dim_x() * block_dim_y());
    let mut m = t;
    while m < 2 * np {
        *s.add(m) = *tab.add(m);
        m += nt;
    }
    let (sb, sd) = (s as *const T, s.add(np) as *const T);
    let b = move |q: usize, n: usize| *sb.add(q * NQ + n);
    let d = move |q: usize, n: usize| *sd.add(q * NQ + n);
    let w = s.add(2 * np + thread_idx_y() * per_element_quad(NQ, NC));
    let i = thread_idx_x();
    let e = block_idx_x() * block_dim_y() + thread_idx_y();
    let live = e < ne;
    let pos = |j: usize, c: usize| (e * np + j * NQ + i) * NC + c;
    let terms = terms_of(mask);
    if live {
        for c in 0..NC {
            unroll::<NQ>(|j| {
                let r = *map.add(pos(j, c));
                *array::<T, NQ>(w, c, 0).add(at::<NQ>(j, i)) = if r == NONE { T::ZERO } else { *x.add(r as usize) };
            });
        }
    }
    barrier();
    for c in 0..NC {
        to_points::<T, NQ>(w, c, b, d, gets_derivatives(terms));
    }
    barrier();
    if live {
        let ge = g.add(e * point_len(2, NC, terms) * np);
        for j in 0..NQ {
            let (n, q) = (at::<NQ>(j, i), j * NQ + i);
            let u: [[T; 4]; NC] = core::array::from_fn(|c| core::array::from_fn(|h| if h < 3 { *array::<T, NQ>(w, c, h).add(n) } else { T::ZERO }));
            let v = apply_point::<T, 2, NC>(terms, |jj| *ge.add(jj * np + q), &u);
            unroll::<NC>(|c| unroll::<3>(|h| *array::<T, NQ>(w, c, h).add(n) = v[c][h]));
        }
    }
    barrier();
    for c in 0..NC {
        from_points::<T, NQ>(w, c, b, d, gives_derivatives(terms));
        if live {
            unroll::<NQ>(|j| {
                let r = *map.add(pos(j, c));
                if r != NONE {
                    atomic_add(y.add(r as usize), *array::<T, NQ>(w, c, 0).add(at::<NQ>(j, i)));
                }
            });
        }
    }
}

/// `d += diag((I − F) A (I − F))` of the partially assembled Jacobian on
/// quadrilaterals with point data `g` (terms `mask`): entry (i, j, c) is
/// Σ_(h,k) Σ_(qx,qy) G_cc,hk(qx, qy) M_x(i, qx) M_y(j, qy), M the 1D
/// matrices f(q, n)·g(q, n), f, g ∈ {B, B'} of `tab` (`[B·B, B·B', B'·B,
/// B'·B']`, nodes × points each; index 2·(the row's factor is a
/// derivative) + (the column's is)), contracted along x then y: O(NQ³) a
/// block and an element. Thread i of an element's line takes its
/// column of nodes; no shared memory.
#[kernel(f64; degrees = 1..=8; NC = 1, 2)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn partial_diagonal_quad<T: Real, const NQ: usize, const NC: usize>(ne: usize, mask: u32, tab: *const T, g: *const T, map: *const u32, d: *mut T) {
    let np = NQ * NQ;
    let terms = terms_of(mask);
    let mat = |which: usize, n: usize, q: usize| *tab.add((which * NQ + n) * NQ + q);
    let i = thread_idx_x();
    let e = block_idx_x() * block_dim_y() + thread_idx_y();
    if e >= ne {
        return;
    }
    let len = point_len(2, NC, terms);
    let nblk = len / (NC * NC);
    for c in 0..NC {
        let mut acc = [T::ZERO; NQ];
        let mut blk = (c * NC + c) * nblk;
        for h in 0..3 {
            for k in 0..3 {
                if !present(terms, h, k) {
                    continue;
                }
                let which = |axis: usize| 2 * (h == axis + 1) as usize + (k == axis + 1) as usize;
                let (wx, wy) = (which(0), which(1));
                let gb = g.add((e * len + blk) * np);
                let col: [T; NQ] = core::array::from_fn(|qy| {
                    let mut v = T::ZERO;
                    unroll::<NQ>(|qx| v = mat(wx, i, qx).mad(*gb.add(qy * NQ + qx), v));
                    v
                });
                unroll::<NQ>(|j| unroll::<NQ>(|qy| acc[j] = mat(wy, j, qy).mad(col[qy], acc[j])));
                blk += 1;
            }
        }
        unroll::<NQ>(|j| {
            let r = *map.add((e * np + j * NQ + i) * NC + c);
            if r != NONE {
                atomic_add(d.add(r as usize), acc[j]);
            }
        });
    }
}
