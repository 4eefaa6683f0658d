//! SpMV kernels of formats built from CSR (Wong, Kuhl & Darve): ELL-WARP
//! (K1, K2 and their renumbered variants) and ELLR-T, plus the value
//! reordering and the atomic scatter they are compared with.

use crate::device::*;
use crate::launch::WARP;
use crate::cells::node_entry;
use crate::sparse::{is_free, row_of, coloured_row, element_diagonal, row_diagonal, element_row_part, ellt_part, gathered, slice_lane_part, swept, Slice, NONE};
use fem_core::Real;
use fem_macros::kernel;

/// Sums `v` over aligned groups of `lanes` lanes (a power of two); every
/// lane of the warp must call it with the same `lanes`.
#[inline(always)]
fn group_sum<T: Real>(mut v: T, lanes: u32) -> T {
    let mut mask = lanes / 2;
    while mask > 0 {
        v += shfl_xor(v, mask);
        mask /= 2;
    }
    v
}

/// ELL-WARP SpMV, one warp per slice: K1 when every slice has one lane per
/// row, K2 when long rows span several lanes (their partial sums reduced
/// by warp shuffles, no shared memory). `REMAP` writes row `r` of the
/// sorted order to `y[perm[r]]` (K1, K2); without it `y` is in the sorted
/// numbering (K1r, K1rs, K2r, K2rs, whose columns were renumbered so that
/// `x` is too). Launch `n_slices · 32` threads in blocks of whole warps.
#[kernel(f32, f64; REMAP = false, true; UNIT = false, true)]
pub unsafe fn warp_spmv<T: Real, const REMAP: bool, const UNIT: bool>(
    n_slices: usize,
    n_rows: usize,
    slices: *const Slice,
    col: *const u32,
    val: *const T,
    perm: *const u32,
    x: *const T,
    y: *mut T,
) {
    let w = global_idx_x() / WARP as usize;
    if w >= n_slices {
        return; // whole warps only: w is uniform across the warp
    }
    let lane = lane_id();
    let s = *slices.add(w);
    let sum = group_sum(
        slice_lane_part::<T, UNIT>(s, lane as usize, col, val, x),
        1 << s.shift,
    );
    let r = s.row as usize + (lane >> s.shift) as usize;
    if lane & ((1 << s.shift) - 1) == 0 && r < n_rows {
        *y.add(if REMAP { *perm.add(r) as usize } else { r }) = sum;
    }
}

/// ELLR-T SpMV, `TPR` consecutive threads per row.
#[kernel(f32, f64; TPR = 1, 2, 4, 8, 16, 32)]
pub unsafe fn ellt_spmv<T: Real, const TPR: usize>(
    n_rows: usize,
    len: *const u32,
    col: *const u32,
    val: *const T,
    x: *const T,
    y: *mut T,
) {
    let gid = global_idx_x();
    let (r, t) = (gid / TPR, gid % TPR);
    let part = if r < n_rows {
        ellt_part(r, t, TPR, n_rows, *len.add(r) as usize, col, val, x)
    } else {
        T::ZERO
    };
    let sum = group_sum(part, TPR as u32);
    if t == 0 && r < n_rows {
        *y.add(r) = sum;
    }
}

/// `to[i] = from[src[i]]` (zero where `src[i]` is `NONE`): a format's
/// values refilled from CSR values, writes coalesced.
#[kernel(f32, f64)]
pub unsafe fn gather_values<T: Real>(n: usize, src: *const u32, from: *const T, to: *mut T) {
    let mut i = global_idx_x();
    while i < n {
        *to.add(i) = gathered(i, src, from);
        i += grid_size_x();
    }
}

/// `dst[pos[i]] += src[i]` atomically where `pos[i]` is not `NONE`: element
/// entries scattered into the global matrix with atomics, the baseline of
/// assembly by SpMV.
#[kernel(f32, f64)]
pub unsafe fn scatter_add<T: Real>(n: usize, pos: *const u32, src: *const T, dst: *mut T) {
    let mut i = global_idx_x();
    while i < n {
        let p = *pos.add(i);
        if p != NONE {
            atomic_add(dst.add(p as usize), *src.add(i));
        }
        i += grid_size_x();
    }
}

/// The local matrix approach for elements of any size: `y[map[row]] +=
/// Σ_j K[row, j] x[map[e·nl + j]]` by atomic adds over the `rows`
/// element rows, `lanes` consecutive threads per row (a power of two up
/// to 32) summed by shuffles; rows and columns whose map entry is
/// [`NONE`] are skipped ([`element_row_part`]). Launch `rows · lanes`
/// threads in blocks of whole warps.
#[kernel(f32, f64)]
pub unsafe fn element_spmv<T: Real>(rows: usize, nl: usize, lanes: u32, k: *const T, map: *const u32, x: *const T, y: *mut T) {
    let gid = global_idx_x();
    let (row, lane) = (gid / lanes as usize, gid % lanes as usize);
    let part = if row < rows {
        element_row_part(row, nl, lane, lanes as usize, k, map, x)
    } else {
        T::ZERO
    };
    let sum = group_sum(part, lanes);
    if lane == 0 && row < rows {
        let m = *map.add(row);
        if m != NONE {
            atomic_add(y.add(m as usize), sum);
        }
    }
}

/// `diag[r]` = row `r`'s diagonal entry of a CSR matrix ([`row_diagonal`]).
#[kernel(f32, f64)]
pub unsafe fn csr_diagonal<T: Real>(n: usize, row_ptr: *const u32, col: *const u32, val: *const T, diag: *mut T) {
    grid_stride_fold(n, (), |(), r| {
        let slots = *row_ptr.add(r) as usize..*row_ptr.add(r + 1) as usize;
        *diag.add(r) = row_diagonal(r, slots, col, val);
    });
}

/// `diag[r]` = row `r`'s diagonal entry of a transposed ELLPACK matrix
/// (slot `k` of row `r` at `k·ld + r`).
#[kernel(f32, f64)]
pub unsafe fn ell_diagonal<T: Real>(n: usize, ld: usize, width: usize, col: *const u32, val: *const T, diag: *mut T) {
    grid_stride_fold(n, (), |(), r| *diag.add(r) = row_diagonal(r, (0..width).map(|k| k * ld + r), col, val));
}

/// `out[row(map[i·ne + e])] += ev[node_entry(i)·ld + e]` over the free
/// (cell, node) pairs of `ne` cells of `nb` nodes (`map` plane-major, E-
/// vector planes `ld` apart): cells' loads or element-matrix diagonals
/// summed into rows on the device ([`node_entry`]).
#[kernel(f32, f64; WHAT = 0, 1, 2)]
pub unsafe fn sum_cells_into_rows<T: Real, const WHAT: usize>(ne: usize, nb: usize, ld: usize, map: *const u32, ev: *const T, out: *mut T) {
    grid_stride_fold(nb * ne, (), |(), t| {
        let (e, i) = (t % ne, t / ne);
        let m = *map.add(t);
        if is_free(m) {
            atomic_add(out.add(row_of(m)), *ev.add(node_entry::<WHAT>(i, nb) * ld + e));
        }
    });
}

/// `d[map[row]] += K[row, row mod nl]` over the `rows` element rows
/// (skipping [`NONE`]): the assembled diagonal of element matrices.
#[kernel(f32, f64)]
pub unsafe fn element_diagonal_add<T: Real>(rows: usize, nl: usize, k: *const T, map: *const u32, d: *mut T) {
    let mut row = global_idx_x();
    while row < rows {
        let m = *map.add(row);
        if m != NONE {
            atomic_add(d.add(m as usize), element_diagonal(row, nl, k));
        }
        row += grid_size_x();
    }
}

/// One colour of a coloured SSOR sweep on CSR: for each row `rows[k]` of
/// colour `c`, `v_i ← swept(rhs_i, coloured_row(...))` (Reguly & Giles,
/// Algorithm 3). Rows of one colour never couple, so they update in
/// parallel; the colours run one launch after another.
#[kernel(f32, f64; FORWARD = false, true)]
pub unsafe fn ssor_csr<T: Real, const FORWARD: bool>(
    n: usize,
    rows: *const u32,
    row_ptr: *const u32,
    col: *const u32,
    val: *const T,
    colour: *const u8,
    c: u32,
    rhs: *const T,
    v: *mut T,
) {
    each_row(n, rows, |i| {
        let range = *row_ptr.add(i) as usize..*row_ptr.add(i + 1) as usize;
        let part = coloured_row::<T, FORWARD>(i, range, col, val, colour, c as u8, v);
        *v.add(i) = swept::<T, FORWARD>(*rhs.add(i), part);
    });
}

/// Runs `f(row)` for the rows `rows[0..n]` of one colour, grid-stride.
#[inline(always)]
unsafe fn each_row(n: usize, rows: *const u32, mut f: impl FnMut(usize)) {
    let mut k = global_idx_x();
    while k < n {
        f(*rows.add(k) as usize);
        k += grid_size_x();
    }
}

/// The same sweep on transposed ELLPACK (`width` slots per row, padding
/// zero-valued).
#[kernel(f32, f64; FORWARD = false, true)]
pub unsafe fn ssor_ell<T: Real, const FORWARD: bool>(
    n: usize,
    rows: *const u32,
    n_rows: usize,
    width: usize,
    col: *const u32,
    val: *const T,
    colour: *const u8,
    c: u32,
    rhs: *const T,
    v: *mut T,
) {
    each_row(n, rows, |i| {
        let part = coloured_row::<T, FORWARD>(i, (0..width).map(|s| s * n_rows + i), col, val, colour, c as u8, v);
        *v.add(i) = swept::<T, FORWARD>(*rhs.add(i), part);
    });
}
