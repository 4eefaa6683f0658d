//! Entry points of algebraic multigrid's set-up on the GPU, one thread per
//! row or node over a grid-stride loop, each applying a per-item function
//! of [`crate::amg`] that the CPU calls too. Operators are CSR with `u32`
//! indices and sorted rows; graphs are an operator's pattern masked by
//! `strong` (one byte per entry).

use crate::amg;
use crate::device::{atomic_add_u32, atomic_min_u32, grid_stride_fold};
use fem_macros::kernel;

/// Row `r`'s bounds.
#[inline(always)]
unsafe fn bounds(row_ptr: *const u32, r: usize) -> (usize, usize) {
    (*row_ptr.add(r) as usize, *row_ptr.add(r + 1) as usize)
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

/// `count[i]` = the couplings of node `i` (rows `i·block..(i+1)·block`):
/// the row lengths of the node graph.
#[kernel]
pub unsafe fn amg_node_count(n: usize, block: usize, row_ptr: *const u32, col: *const u32, count: *mut u32) {
    grid_stride_fold(n, (), |(), i| *count.add(i) = amg::nodes::node_couplings(i, block, row_ptr, col, core::ptr::null(), |_, _| ()));
}

/// The node graph's rows from their offsets `node_ptr`: columns and the
/// Frobenius norms of the node couplings.
#[kernel]
pub unsafe fn amg_node_couplings(n: usize, block: usize, row_ptr: *const u32, col: *const u32, val: *const f64, node_ptr: *const u32, node_col: *mut u32, node_val: *mut f64) {
    grid_stride_fold(n, (), |(), i| {
        let mut at = *node_ptr.add(i) as usize;
        amg::nodes::node_couplings(i, block, row_ptr, col, val, |j, s| {
            *node_col.add(at) = j;
            *node_val.add(at) = fem_core::Real::sqrt(s);
            at += 1;
        });
    });
}

/// `size[a]` counts the nodes of aggregate `a`; `rows[u]` = `k` for every
/// unknown `u` of an aggregated node (its entries in the tentative
/// prolongator), else 0.
#[kernel]
pub unsafe fn amg_aggregate_sizes(n: usize, block: usize, k: u32, agg: *const u32, size: *mut u32, rows: *mut u32) {
    grid_stride_fold(n, (), |(), i| {
        let a = *agg.add(i);
        if a != amg::NONE {
            atomic_add_u32(size.add(a as usize), 1);
        }
        for c in 0..block {
            *rows.add(i * block + c) = if a != amg::NONE { k } else { 0 };
        }
    });
}

/// Every aggregated node into its aggregate's list `nodes[start[a]..]`
/// (`fill` counts the places taken; the fit sorts each list).
#[kernel]
pub unsafe fn amg_aggregate_nodes(n: usize, agg: *const u32, start: *const u32, fill: *mut u32, nodes: *mut u32) {
    grid_stride_fold(n, (), |(), i| {
        let a = *agg.add(i);
        if a != amg::NONE {
            let at = *start.add(a as usize) + atomic_add_u32(fill.add(a as usize), 1);
            *nodes.add(at as usize) = i as u32;
        }
    });
}

/// [`amg::fit::fit_aggregate`] of every aggregate, its node list sorted
/// first: the tentative prolongator's rows (`k` entries each from
/// `row_ptr`, columns `a·k..(a+1)·k`) and the coarse near-nullspace.
#[kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn amg_fit(n_agg: usize, start: *const u32, nodes: *mut u32, block: usize, k: usize, b: *const f64, row_ptr: *const u32, col: *mut u32, val: *mut f64, coarse: *mut f64) {
    grid_stride_fold(n_agg, (), |(), a| {
        let lo = *start.add(a) as usize;
        let (list, len) = (nodes.add(lo), *start.add(a + 1) as usize - lo);
        amg::fit::sort(list, len);
        let unknown = |l: usize| *list.add(l / block) as usize * block + l % block;
        for l in 0..len * block {
            let at = *row_ptr.add(unknown(l)) as usize;
            for j in 0..k {
                *col.add(at + j) = (a * k + j) as u32;
            }
        }
        amg::fit::fit_aggregate(len * block, k, b, unknown, |l| val.add(*row_ptr.add(unknown(l)) as usize), coarse.add(a * k * k));
    });
}

/// Whether row `r` holds only zeros (or nothing).
#[inline(always)]
unsafe fn zero_row(row_ptr: *const u32, val: *const f64, r: usize) -> bool {
    let (lo, hi) = bounds(row_ptr, r);
    (lo..hi).all(|k| *val.add(k) == 0.0)
}

/// `len[r]` = row `r`'s entries, or 1 where it holds only zeros or
/// nothing (and then `found[0]` = 1): the rows of [`amg_unit_rows`]'
/// matrix.
#[kernel]
pub unsafe fn amg_unit_row_lengths(n: usize, row_ptr: *const u32, val: *const f64, len: *mut u32, found: *mut u32) {
    grid_stride_fold(n, (), |(), r| {
        let (lo, hi) = bounds(row_ptr, r);
        let zero = zero_row(row_ptr, val, r);
        *len.add(r) = if zero { 1 } else { (hi - lo) as u32 };
        if zero {
            *found = 1;
        }
    });
}

/// The matrix whose rows of zeros (or of nothing) are a unit diagonal and
/// whose other rows are the input's: the coarse unknowns of dependent
/// near-nullspace vectors and of held vertices, kept invertible and zero
/// (the host's Galerkin product gives those rows the same).
#[kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn amg_unit_rows(n: usize, row_ptr: *const u32, col: *const u32, val: *const f64, out_ptr: *const u32, out_col: *mut u32, out_val: *mut f64) {
    grid_stride_fold(n, (), |(), r| {
        let (lo, hi) = bounds(row_ptr, r);
        let at = *out_ptr.add(r) as usize;
        if zero_row(row_ptr, val, r) {
            *out_col.add(at) = r as u32;
            *out_val.add(at) = 1.0;
        } else {
            for k in lo..hi {
                *out_col.add(at + k - lo) = *col.add(k);
                *out_val.add(at + k - lo) = *val.add(k);
            }
        }
    });
}

/// `x[i] = √x[i]`: the diagonal's roots that scale the power iterations.
#[kernel]
pub unsafe fn amg_sqrt(n: usize, x: *mut f64) {
    grid_stride_fold(n, (), |(), i| *x.add(i) = fem_core::Real::sqrt(*x.add(i)));
}

/// The values of `I − s D⁻¹A` on `A`'s pattern.
#[kernel]
pub unsafe fn amg_jacobi_step(n: usize, row_ptr: *const u32, col: *const u32, val: *const f64, diag: *const f64, s: f64, out: *mut f64) {
    grid_stride_fold(n, (), |(), r| amg::jacobi_step_row(r, row_ptr, col, val, *diag.add(r), s, out));
}

/// `out[i] = x[i] + delta` (wrapping): the row offsets of a run of rows
/// taken out of a matrix, or of a product's rows placed after others.
#[kernel]
pub unsafe fn amg_shift(n: usize, x: *const u32, delta: u32, out: *mut u32) {
    grid_stride_fold(n, (), |(), i| *out.add(i) = (*x.add(i)).wrapping_add(delta));
}

/// `len[r]` = row `r`'s entries in columns below `limit`: the rows of
/// [`amg_block_entries`]' matrix (a rank's coupling among its owned rows,
/// which aggregation reads).
#[kernel]
pub unsafe fn amg_block_lengths(n: usize, limit: u32, row_ptr: *const u32, col: *const u32, len: *mut u32) {
    grid_stride_fold(n, (), |(), r| {
        let (lo, hi) = bounds(row_ptr, r);
        *len.add(r) = (lo..hi).filter(|&k| *col.add(k) < limit).count() as u32;
    });
}

/// The entries of the first `n` rows in columns below `limit`, at the
/// offsets `out_ptr` of [`amg_block_lengths`].
#[kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn amg_block_entries(n: usize, limit: u32, row_ptr: *const u32, col: *const u32, val: *const f64, out_ptr: *const u32, out_col: *mut u32, out_val: *mut f64) {
    grid_stride_fold(n, (), |(), r| {
        let (lo, hi) = bounds(row_ptr, r);
        let mut at = *out_ptr.add(r) as usize;
        for k in lo..hi {
            if *col.add(k) < limit {
                *out_col.add(at) = *col.add(k);
                *out_val.add(at) = *val.add(k);
                at += 1;
            }
        }
    });
}

/// `len[i]` = the entries of row `rows[i]`: the rows of [`amg_take`]'s
/// matrix.
#[kernel]
pub unsafe fn amg_take_lengths(m: usize, rows: *const u32, row_ptr: *const u32, len: *mut u32) {
    grid_stride_fold(m, (), |(), i| {
        let (lo, hi) = bounds(row_ptr, *rows.add(i) as usize);
        *len.add(i) = (hi - lo) as u32;
    });
}

/// The matrix whose row `i` is row `rows[i]` of the input (rows a rank
/// sends to the ranks that hold them as ghosts), at the offsets `out_ptr`
/// of [`amg_take_lengths`].
#[kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn amg_take(m: usize, rows: *const u32, row_ptr: *const u32, col: *const u32, val: *const f64, out_ptr: *const u32, out_col: *mut u32, out_val: *mut f64) {
    grid_stride_fold(m, (), |(), i| {
        let (lo, hi) = bounds(row_ptr, *rows.add(i) as usize);
        let at = *out_ptr.add(i) as usize;
        for k in lo..hi {
            *out_col.add(at + k - lo) = *col.add(k);
            *out_val.add(at + k - lo) = *val.add(k);
        }
    });
}

/// `flags[c]` = 1 for every column `c` of the `nnz` entries outside
/// `first..end`: the ghost columns of a rank's rows in global numbers.
#[kernel]
pub unsafe fn amg_mark_outside(nnz: usize, col: *const u32, first: u32, end: u32, flags: *mut u32) {
    grid_stride_fold(nnz, (), |(), k| {
        let c = *col.add(k);
        if c < first || c >= end {
            *flags.add(c as usize) = 1;
        }
    });
}

/// Global columns to local ones: `c − first` for the `owned` columns from
/// `first`, else `owned + ghost[c]` (`ghost` the exclusive scan of
/// [`amg_mark_outside`]'s flags: the ghosts in ascending global order).
#[kernel]
pub unsafe fn amg_localize(nnz: usize, col: *mut u32, first: u32, owned: u32, ghost: *const u32) {
    grid_stride_fold(nnz, (), |(), k| {
        let c = *col.add(k);
        *col.add(k) = if c >= first && c - first < owned { c - first } else { owned + *ghost.add(c as usize) };
    });
}
