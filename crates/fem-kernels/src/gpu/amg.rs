//! Entry points of algebraic multigrid's set-up on the GPU, one thread per
//! row or node over a grid-stride loop, each applying a per-item function
//! of [`crate::amg`] that the CPU calls too. Operators are CSR with `u32`
//! indices and sorted rows; graphs are an operator's pattern masked by
//! `strong` (one byte per entry).

use crate::amg;
use crate::device::{atomic_add, atomic_min_u32, grid_stride_fold};
use fem_macros::kernel;

/// Row `r`'s bounds.
#[inline(always)]
unsafe fn bounds(row_ptr: *const u32, r: usize) -> (usize, usize) {
    (*row_ptr.add(r) as usize, *row_ptr.add(r + 1) as usize)
}

/// `diag[r]` = the diagonal entry of row `r`.
#[kernel]
pub unsafe fn amg_diagonal(n: usize, row_ptr: *const u32, col: *const u32, val: *const f64, diag: *mut f64) {
    grid_stride_fold(n, (), |(), r| {
        let (lo, hi) = bounds(row_ptr, r);
        *diag.add(r) = amg::row_diagonal(r, lo, hi, col, val);
    });
}

/// `first[b]` lowered to every row with defect bit `b` of
/// [`amg::row_defect`] (`first` starts at `u32::MAX`).
#[kernel]
pub unsafe fn amg_defects(n: usize, row_ptr: *const u32, col: *const u32, val: *const f64, diag: *const f64, first: *mut u32) {
    grid_stride_fold(n, (), |(), r| {
        let bits = amg::row_defect(r, n, row_ptr, col, val, diag);
        for b in 0..4 {
            if bits & (1 << b) != 0 {
                atomic_min_u32(first.add(b), r as u32);
            }
        }
    });
}

/// `strong[k]` = whether entry `k` is a strong off-diagonal coupling.
#[kernel]
pub unsafe fn amg_strength(n: usize, row_ptr: *const u32, col: *const u32, val: *const f64, diag: *const f64, theta: f64, strong: *mut u8) {
    grid_stride_fold(n, (), |(), r| {
        let (lo, hi) = bounds(row_ptr, r);
        for k in lo..hi {
            let c = *col.add(k) as usize;
            *strong.add(k) = (c != r && amg::strong(*val.add(k), *diag.add(r), *diag.add(c), theta)) as u8;
        }
    });
}

/// Every node's key before the first round.
#[kernel]
pub unsafe fn amg_initial_keys(n: usize, row_ptr: *const u32, col: *const u32, strong: *const u8, keys: *mut u64) {
    grid_stride_fold(n, (), |(), i| {
        let (lo, hi) = bounds(row_ptr, i);
        *keys.add(i) = amg::initial_key(i, lo, hi, col, strong);
    });
}

/// `out[i]` = the largest `x` over node `i` and its neighbours.
#[kernel]
pub unsafe fn amg_neighbourhood_max(n: usize, row_ptr: *const u32, col: *const u32, strong: *const u8, x: *const u64, out: *mut u64) {
    grid_stride_fold(n, (), |(), i| {
        let (lo, hi) = bounds(row_ptr, i);
        *out.add(i) = amg::neighbourhood_max(i, lo, hi, col, strong, x);
    });
}

/// One round's decisions; `undecided[0]` set where a node still waits.
#[kernel]
pub unsafe fn amg_mis_update(n: usize, keys: *mut u64, max2: *const u64, undecided: *mut u32) {
    grid_stride_fold(n, (), |(), i| {
        let k = amg::mis_update(*keys.add(i), *max2.add(i));
        *keys.add(i) = k;
        if amg::state_of(k) == amg::UNDECIDED {
            *undecided = 1;
        }
    });
}

/// `flags[i]` = 1 where node `i` is in the set (a root), else 0.
#[kernel]
pub unsafe fn amg_roots(n: usize, keys: *const u64, flags: *mut u32) {
    grid_stride_fold(n, (), |(), i| *flags.add(i) = (amg::state_of(*keys.add(i)) == amg::IN) as u32);
}

/// [`amg::root_aggregate`] of every node.
#[kernel]
pub unsafe fn amg_root_aggregate(n: usize, row_ptr: *const u32, col: *const u32, strong: *const u8, keys: *const u64, id: *const u32, first: *mut u32) {
    grid_stride_fold(n, (), |(), i| {
        let (lo, hi) = bounds(row_ptr, i);
        *first.add(i) = amg::root_aggregate(i, lo, hi, col, strong, keys, id);
    });
}

/// [`amg::join_aggregate`] of every node.
#[kernel]
pub unsafe fn amg_join_aggregate(n: usize, row_ptr: *const u32, col: *const u32, strong: *const u8, first: *const u32, agg: *mut u32) {
    grid_stride_fold(n, (), |(), i| {
        let (lo, hi) = bounds(row_ptr, i);
        *agg.add(i) = amg::join_aggregate(i, lo, hi, col, strong, first);
    });
}

/// `flags[i]` = 1 where node `i` joined an aggregate, and
/// `norm2[a] += b[i]²` over the nodes of aggregate `a`.
#[kernel]
pub unsafe fn amg_aggregate_norms(n: usize, agg: *const u32, b: *const f64, flags: *mut u32, norm2: *mut f64) {
    grid_stride_fold(n, (), |(), i| {
        let a = *agg.add(i);
        *flags.add(i) = (a != amg::NONE) as u32;
        if a != amg::NONE {
            atomic_add(norm2.add(a as usize), *b.add(i) * *b.add(i));
        }
    });
}

/// The tentative prolongator of one near-nullspace vector `b`: row `i`
/// holds `b[i] / ‖b‖` of its aggregate at `row_ptr[i]` (rows of nodes in
/// no aggregate are empty).
#[kernel]
pub unsafe fn amg_tentative(n: usize, agg: *const u32, b: *const f64, norm2: *const f64, row_ptr: *const u32, col: *mut u32, val: *mut f64) {
    grid_stride_fold(n, (), |(), i| {
        let a = *agg.add(i);
        if a != amg::NONE {
            let k = *row_ptr.add(i) as usize;
            *col.add(k) = a;
            *val.add(k) = *b.add(i) / fem_core::Real::sqrt(*norm2.add(a as usize));
        }
    });
}

/// `x[i] = √x[i]`: the coarse near-nullspace from the aggregates' squared
/// norms.
#[kernel]
pub unsafe fn amg_sqrt(n: usize, x: *mut f64) {
    grid_stride_fold(n, (), |(), i| *x.add(i) = fem_core::Real::sqrt(*x.add(i)));
}

/// The values of `I − s D⁻¹A` on `A`'s pattern.
#[kernel]
pub unsafe fn amg_jacobi_step(n: usize, row_ptr: *const u32, col: *const u32, val: *const f64, diag: *const f64, s: f64, out: *mut f64) {
    grid_stride_fold(n, (), |(), r| amg::jacobi_step_row(r, row_ptr, col, val, *diag.add(r), s, out));
}

/// `x[i]` = [`amg::hash_unit`]`(i)`: the power iterations' start.
#[kernel]
pub unsafe fn amg_hash_start(n: usize, x: *mut f64) {
    grid_stride_fold(n, (), |(), i| *x.add(i) = amg::hash_unit(i as u32));
}

/// `z = α x ∘ y`.
#[kernel]
pub unsafe fn amg_scaled_product(n: usize, alpha: f64, x: *const f64, y: *const f64, z: *mut f64) {
    grid_stride_fold(n, (), |(), i| *z.add(i) = alpha * *x.add(i) * *y.add(i));
}
