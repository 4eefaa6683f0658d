//! Thread transposition on the GPU (Knepley, Rupp & Terrel §3).
//!
//! A thread block takes a chunk of `batches` consecutive batches of
//! `blockDim.x` cells, one after another. The block size is a multiple of
//! the cell block LCM(N_q, N_b·N_comp) (the host checks), so:
//!
//! * in the **quadrature phase** thread t evaluates point q = t mod N_q
//!   for N_q cells of the batch (items t, t + blockDim, …; item k is cell
//!   k / N_q), writing the pulled-back f0/f1 values to shared memory;
//! * after a barrier, in the **basis phase** thread t accumulates local
//!   function t mod (N_b·N_comp) for N_b·N_comp cells, reading those
//!   values: no reduction across threads, and the element vector of the
//!   batch is written by consecutive threads to consecutive addresses.
//!
//! The batch's coefficients, vertex coordinates and auxiliary fields are
//! first loaded into shared memory by all threads with coalesced reads,
//! and the reference table once per block. The last chunk may be partial
//! (remainder cells are masked, not left to the host).
//!
//! Shared memory (elements of T): `table_len + blockDim·(NB·NC + NV·D +
//! aux + N_q·point_len)`; the host computes it with
//! [`super::shared_len`].

use super::*;
use crate::device::{block_dim_x, block_idx_x, dynamic_shared, sync_threads, thread_idx_x};

/// The block's shared regions: table, coefficients, vertices, aux, point
/// values.
struct Regions<'a, T> {
    tab: &'a mut [T],
    u: &'a mut [T],
    x: &'a mut [T],
    a: &'a mut [T],
    pts: &'a mut [T],
}

#[inline(always)]
unsafe fn regions<'a, T>(tab_len: usize, cells: usize, sizes: [usize; 4]) -> Regions<'a, T> {
    let base = dynamic_shared::<T>();
    let mut off = 0;
    let mut take = |len: usize| {
        let s = core::slice::from_raw_parts_mut(base.add(off), len);
        off += len;
        s
    };
    Regions { tab: take(tab_len), u: take(cells * sizes[0]), x: take(cells * sizes[1]), a: take(cells * sizes[2]), pts: take(cells * sizes[3]) }
}

/// Loads per array each thread has in flight at once in [`load`].
const IN_FLIGHT: usize = 2;

/// Copies `n[s]` values from `src[s]` into `dst[s]` for each of the `S`
/// arrays with the whole block, coalesced. Each thread issues up to
/// S·[`IN_FLIGHT`] independent (predicated) loads before it stores any: a
/// load-store pair per value would wait out the full memory latency every
/// time, and the kernel is latency-bound. More in flight costs registers
/// (and occupancy) faster than it hides latency: 2 measured best.
#[inline(always)]
unsafe fn load<T: Real, const S: usize>(mut dst: [&mut [T]; S], src: [*const T; S], n: [usize; S]) {
    let bd = block_dim_x();
    let m = n.into_iter().max().unwrap_or(0);
    let mut i = thread_idx_x();
    while i < m {
        let mut v = [[T::ZERO; IN_FLIGHT]; S];
        for k in 0..IN_FLIGHT {
            for s in 0..S {
                if i + k * bd < n[s] {
                    v[s][k] = *src[s].add(i + k * bd);
                }
            }
        }
        for k in 0..IN_FLIGHT {
            for s in 0..S {
                if i + k * bd < n[s] {
                    *dst[s].get_unchecked_mut(i + k * bd) = v[s][k];
                }
            }
        }
        i += IN_FLIGHT * bd;
    }
}

/// The batch loop shared by the residual and the Jacobian, whose
/// quadrature phase writes `pl` values per (cell, point). Loads each batch,
/// runs `quad(row, u, x, a, pts)` for every (cell, point) with that cell's
/// shared E-vectors, the point's table row and its `pl` output slots, and
/// `basis(cell, k, tab, pts)` for every item k < NB·NC of every cell
/// (`cell` counted over the whole mesh, `pts` the cell's N_q·pl values).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn batches<T: Real, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    n_cells: usize,
    n_batches: usize,
    tab: *const T,
    inputs: [*const T; 3],
    pl: usize,
    quad: impl Fn(&[T], &[T], &[T], &[T], &mut [T]),
    basis: impl Fn(usize, usize, &[T], &[T]),
) {
    let (nl, stride) = (NB * NC, row_len(D, NB, NV));
    let sizes = [nl, NV * D, aux_len(NB, NA, AUXN), NQ * pl];
    let tab_len = NQ * stride;
    let bc = block_dim_x();
    let t = thread_idx_x();
    let mut r = regions::<T>(tab_len, bc, sizes);
    load([&mut *r.tab], [tab], [tab_len]);
    for batch in 0..n_batches {
        let cell0 = (block_idx_x() * n_batches + batch) * bc;
        if cell0 >= n_cells {
            break;
        }
        let n = (n_cells - cell0).min(bc);
        // The previous batch's basis phase must be done with shared memory.
        sync_threads();
        load([&mut *r.u, &mut *r.x, &mut *r.a], [0, 1, 2].map(|k| inputs[k].add(cell0 * sizes[k])), [0, 1, 2].map(|k| n * sizes[k]));
        sync_threads();
        for j in 0..NQ {
            let k = t + j * bc;
            let (cell, q) = (k / NQ, k % NQ);
            if cell < n {
                let (uo, xo, ao) = (cell * sizes[0], cell * sizes[1], cell * sizes[2]);
                quad(
                    r.tab.get_unchecked(q * stride..(q + 1) * stride),
                    r.u.get_unchecked(uo..uo + sizes[0]),
                    r.x.get_unchecked(xo..xo + sizes[1]),
                    r.a.get_unchecked(ao..ao + sizes[2]),
                    r.pts.get_unchecked_mut(k * pl..(k + 1) * pl),
                );
            }
        }
        sync_threads();
        for j in 0..nl {
            let k = t + j * bc;
            let cell = k / nl;
            if cell < n {
                basis(cell0 + cell, k % nl, r.tab, r.pts.get_unchecked(cell * sizes[3]..(cell + 1) * sizes[3]));
            }
        }
    }
}

/// Element residuals of `n_cells` cells, `out[cell·NB·NC + b·NC + c]`.
///
/// # Safety
/// The launch follows [`super::shared_len`] and the block-size rule above;
/// every pointer covers `n_cells` cells of its E-vector layout.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn residual<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    n_cells: usize,
    n_batches: usize,
    tab: *const T,
    u: *const T,
    x: *const T,
    a: *const T,
    out: *mut T,
) {
    let pl = residual_point_len(D, NC);
    batches::<T, D, NC, NA, NB, NV, NQ, AUXN>(
        n_cells,
        n_batches,
        tab,
        [u, x, a],
        pl,
        |row, us, xs, as_, pts| {
            residual_point::<T, P, D, NC, NA, NB, NV, AUXN>(row, |i| at(us, i), xs, |i| at(as_, i), |c, h, v| *pts.get_unchecked_mut(c * (1 + D) + h) = v)
        },
        |cell, k, tab, pts| {
            *out.add(cell * NB * NC + k) = residual_basis::<T, D, NC, NB, NV, NQ>(tab, P::TERMS, k, |q, c, h| at(pts, q * pl + c * (1 + D) + h));
        },
    );
}

/// Element matrices of `n_cells` cells, row-major:
/// `out[cell·n² + i·n + j]`, n = NB·NC. Thread item k is row k of a cell.
///
/// # Safety
/// As [`residual`], with `out` covering n² values per cell.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn jacobian<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    n_cells: usize,
    n_batches: usize,
    tab: *const T,
    u: *const T,
    x: *const T,
    a: *const T,
    out: *mut T,
) {
    let (nl, pl) = (NB * NC, jacobian_point_len(D, NC));
    batches::<T, D, NC, NA, NB, NV, NQ, AUXN>(
        n_cells,
        n_batches,
        tab,
        [u, x, a],
        pl,
        |row, us, xs, as_, pts| jacobian_point::<T, P, D, NC, NA, NB, NV, AUXN>(row, |i| at(us, i), xs, |i| at(as_, i), |i, v| *pts.get_unchecked_mut(i) = v),
        |cell, i, tab, pts| {
            let row = out.add((cell * nl + i) * nl);
            for j in 0..nl {
                *row.add(j) = jacobian_entry::<T, D, NC, NB, NV, NQ>(tab, i, j, |q, k| at(pts, q * pl + k));
            }
        },
    );
}
