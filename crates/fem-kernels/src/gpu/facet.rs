//! The boundary term's linearisation kept by its points
//! ([`crate::pointwise::facet::facet_points`]): its product and diagonal
//! on L-vectors, gather and atomic scatter fused, at run-time sizes (one
//! kernel for every physics). The product runs in two launches: the point
//! data applied at every (facet, point, component), into a scratch of
//! `nqf · nc` values a facet, then tested against every basis function
//! of every facet; both have far more threads than facets, which are few.

use crate::device::*;
use crate::pointwise::facet::FacetShape;
use crate::sparse::NONE;
use fem_core::Real;
use fem_macros::kernel;

/// `t[(f·nqf + q)·nc + c]` = [`FacetShape::action`] at point q of facet f,
/// for the `n` facets with local numbers `local` and point data `h`, the
/// facets' E-vector gathered from `x` through `map` ([`NONE`] reads zero).
#[kernel(f64)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn facet_point_action<T: Real>(n: usize, d: usize, nb: usize, nc: usize, nqf: usize, nv: usize, tab: *const T, tab_len: usize, local: *const u32, h: *const T, map: *const u32, x: *const T, t: *mut T) {
    let s = FacetShape { d, nb, nc, nqf, nv };
    let tab = core::slice::from_raw_parts(tab, tab_len);
    let (hl, nl) = (s.point_len(), s.n_local());
    let mut i = global_idx_x();
    while i < n * nqf * nc {
        let (f, q, c) = (i / (nqf * nc), i / nc % nqf, i % nc);
        let m = map.add(f * nl);
        let hf = core::slice::from_raw_parts(h.add(f * hl), hl);
        *t.add(i) = s.action(tab, *local.add(f) as usize, q, c, hf, |j| {
            let r = *m.add(j);
            if r == NONE {
                T::ZERO
            } else {
                *x.add(r as usize)
            }
        });
        i += grid_size_x();
    }
}

/// `y[map[f·nl + i]] +=` [`FacetShape::test`] of entry i of facet f, from
/// the scratch `t` of [`facet_point_action`] ([`NONE`] rows skipped).
#[kernel(f64)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn facet_point_test<T: Real>(n: usize, d: usize, nb: usize, nc: usize, nqf: usize, nv: usize, tab: *const T, tab_len: usize, local: *const u32, t: *const T, map: *const u32, y: *mut T) {
    let s = FacetShape { d, nb, nc, nqf, nv };
    let tab = core::slice::from_raw_parts(tab, tab_len);
    let nl = s.n_local();
    let mut i = global_idx_x();
    while i < n * nl {
        let r = *map.add(i);
        if r != NONE {
            let f = i / nl;
            let tf = core::slice::from_raw_parts(t.add(f * nqf * nc), nqf * nc);
            atomic_add(y.add(r as usize), s.test(tab, *local.add(f) as usize, i % nl, tf));
        }
        i += grid_size_x();
    }
}

/// `diag[map[f·nl + i]] +=` [`FacetShape::diagonal`] of entry i of facet
/// f with point data `h` ([`NONE`] rows skipped).
#[kernel(f64)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn facet_point_diagonal<T: Real>(n: usize, d: usize, nb: usize, nc: usize, nqf: usize, nv: usize, tab: *const T, tab_len: usize, local: *const u32, h: *const T, map: *const u32, diag: *mut T) {
    let s = FacetShape { d, nb, nc, nqf, nv };
    let tab = core::slice::from_raw_parts(tab, tab_len);
    let (hl, nl) = (s.point_len(), s.n_local());
    let mut i = global_idx_x();
    while i < n * nl {
        let r = *map.add(i);
        if r != NONE {
            let f = i / nl;
            let hf = core::slice::from_raw_parts(h.add(f * hl), hl);
            atomic_add(diag.add(r as usize), s.diagonal(tab, *local.add(f) as usize, i % nl, hf));
        }
        i += grid_size_x();
    }
}
