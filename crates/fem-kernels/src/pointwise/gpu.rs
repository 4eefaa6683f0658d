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
//! The table is loaded into shared memory once per block. A batch's
//! coefficients, vertex coordinates and auxiliary fields are copied into
//! shared memory asynchronously (`cp.async`) one batch ahead: while the
//! block computes on batch b, the copies of batch b + 1 are in flight into
//! the other of two input buffers, overlapping that batch's memory latency
//! with this one's work. A one-batch chunk needs only one buffer. The
//! last chunk may be partial (remainder cells are masked, not left to the
//! host).
//!
//! Shared memory: table, point values (`blockDim·N_q·point_len`) and
//! `min(batches, 2)` input buffers (`blockDim·(NB·NC + NV·D + aux)`), each
//! region padded to 16 bytes ([`super::Layout`]); the host computes the
//! total with [`super::shared_len`].

use super::*;
use crate::device::copy_async::{commit, copy_async_16_at, copy_async_at, wait_all_but, windows};
use crate::device::{block_dim_x, block_idx_x, dynamic_shared, sync_threads, thread_idx_x};

/// The block's shared regions: table, point values, then the two input
/// buffers (coefficients, vertices, aux), the second only touched when
/// the chunk has a second batch.
struct Regions<'a, T> {
    tab: &'a mut [T],
    pts: &'a mut [T],
    inputs: Buffers<T>,
}

/// The two input buffers, `len` elements each.
struct Buffers<T> {
    first: *mut T,
    len: usize,
}

impl<T> Clone for Buffers<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Buffers<T> {}

impl<T> Buffers<T> {
    /// The buffer of batch `b`. Computed, not picked from an array: an
    /// array indexed at run time would live in local memory.
    #[inline(always)]
    unsafe fn of(self, b: usize) -> *mut T {
        self.first.add((b & 1) * self.len)
    }
}

#[inline(always)]
unsafe fn regions<'a, T>(l: &Layout, pts_len: usize) -> Regions<'a, T> {
    let base = dynamic_shared::<T>();
    Regions {
        tab: core::slice::from_raw_parts_mut(base, l.tab_len),
        pts: core::slice::from_raw_parts_mut(base.add(l.pts), pts_len),
        inputs: Buffers { first: base.add(l.inputs), len: l.input_len },
    }
}

/// Loads per array each thread has in flight at once in [`load`].
const IN_FLIGHT: usize = 2;

/// Copies `n` values from `src` into `dst` with the whole block, coalesced,
/// [`IN_FLIGHT`] independent loads per thread before it stores any: a
/// load-store pair per value would wait out the full memory latency every
/// time.
#[inline(always)]
unsafe fn load<T: Real>(dst: &mut [T], src: *const T, n: usize) {
    let bd = block_dim_x();
    let mut i = thread_idx_x();
    while i < n {
        let mut v = [T::ZERO; IN_FLIGHT];
        for (k, v) in v.iter_mut().enumerate() {
            if i + k * bd < n {
                *v = *src.add(i + k * bd);
            }
        }
        for (k, v) in v.iter().enumerate() {
            if i + k * bd < n {
                *dst.get_unchecked_mut(i + k * bd) = *v;
            }
        }
        i += IN_FLIGHT * bd;
    }
}

/// Starts copying the `n[s]` values of each input `src[s]` into the
/// shared buffer at `dst`, where input s begins at `off[s]`, with the
/// whole block, coalesced, and commits them as one group (empty when
/// every `n[s]` is 0). An input whose source and destination are both
/// 16-byte aligned (the usual case: [`Layout`] aligns the destinations,
/// and a batch of cells usually starts on 16 bytes) goes 16 bytes per
/// copy, its remainder and any other input one value per copy.
#[inline(always)]
unsafe fn prefetch<T: Real>(dst: *mut T, off: [usize; 3], src: [*const T; 3], n: [usize; 3]) {
    let (bd, t) = (block_dim_x(), thread_idx_x());
    let w = 16 / T::BYTES;
    for s in 0..3 {
        let (d, g) = (dst.add(off[s]), src[s]);
        let wide = if (d as usize | g as usize) % 16 == 0 { n[s] / w } else { 0 };
        // 32-bit offsets from addresses converted once: the loop is the
        // copies, not 64-bit pointer arithmetic.
        let (sa, ga) = windows(d, g);
        let (mut i, step, wide32) = (t as u32, bd as u32, wide as u32);
        while i < wide32 {
            copy_async_16_at(sa + 16 * i, ga + 16 * i as u64);
            i += step;
        }
        let (mut i, b) = ((wide * w) as u32 + t as u32, T::BYTES as u32);
        while i < n[s] as u32 {
            copy_async_at::<T>(sa + b * i, ga + (b * i) as u64);
            i += step;
        }
    }
    commit();
}

/// The batch loop shared by the residual and the Jacobian, whose
/// quadrature phase writes `pl` values per (cell, point). Loads each batch,
/// runs `quad(row, u, x, a, pts)` for every (cell, point) with that cell's
/// shared E-vectors, the point's table row and its `pl` output slots, and
/// `basis(cell, k, &item(k, tab), tab, pts)` for every item k < NB·NC of
/// every cell (`cell` counted over the whole mesh, `pts` the cell's
/// N_q·pl values).
///
/// The block size is a multiple of both N_q and NB·NC, so a thread keeps
/// the same point t mod N_q and the same item t mod NB·NC for all its
/// cells: with `hoist`, `item` (what the item reads from the table) runs
/// once per batch instead of once per cell.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn batches<T: Real, S, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    n_cells: usize,
    n_batches: usize,
    tab: *const T,
    inputs: [*const T; 3],
    pl: usize,
    quad: impl Fn(&[T], &[T], &[T], &[T], &mut [T]),
    hoist: bool,
    item: impl Fn(usize, &[T]) -> S,
    basis: impl Fn(usize, usize, &S, &[T], &[T]),
) {
    let (nl, stride) = (NB * NC, row_len(D, NB, NV));
    let sizes = [nl, NV * D, aux_len(NB, NA, AUXN), NQ * pl];
    let bc = block_dim_x();
    let t = thread_idx_x();
    let l = Layout::new(D, NB, NV, NQ, bc, pl, [sizes[0], sizes[1], sizes[2]]);
    let (tab_len, off) = (l.tab_len, l.off);
    let mut r = regions::<T>(&l, bc * sizes[3]);
    let first = block_idx_x() * n_batches;
    // Cells of batch b of this chunk (0 past the mesh's end).
    let cells = |b: usize| n_cells.saturating_sub((first + b) * bc).min(bc);
    let bufs = r.inputs;
    let fetch = |b: usize| {
        let (cell0, n) = ((first + b) * bc, if b < n_batches { cells(b) } else { 0 });
        prefetch(bufs.of(b), off, [0, 1, 2].map(|k| inputs[k].wrapping_add(cell0 * sizes[k])), [0, 1, 2].map(|k| n * sizes[k]));
    };
    fetch(0);
    load(&mut *r.tab, tab, tab_len);
    for batch in 0..n_batches {
        let n = cells(batch);
        if n == 0 {
            break;
        }
        fetch(batch + 1);
        wait_all_but::<1>();
        // Every thread's copies of this batch are in, and the previous
        // batch's basis phase is done with the point values.
        sync_threads();
        let buf = bufs.of(batch);
        let q = t % NQ;
        for j in 0..NQ {
            let cell = t / NQ + j * (bc / NQ);
            if cell < n {
                let (uo, xo, ao) = (off[0] + cell * sizes[0], off[1] + cell * sizes[1], off[2] + cell * sizes[2]);
                quad(
                    r.tab.get_unchecked(q * stride..(q + 1) * stride),
                    core::slice::from_raw_parts(buf.add(uo), sizes[0]),
                    core::slice::from_raw_parts(buf.add(xo), sizes[1]),
                    core::slice::from_raw_parts(buf.add(ao), sizes[2]),
                    r.pts.get_unchecked_mut((cell * NQ + q) * pl..(cell * NQ + q + 1) * pl),
                );
            }
        }
        // The point values are complete, and the quadrature phase is done
        // with this buffer, which the next iteration refills.
        sync_threads();
        let (cell0, k) = ((first + batch) * bc, t % nl);
        let pts = |cell: usize| r.pts.get_unchecked(cell * sizes[3]..(cell + 1) * sizes[3]);
        let tab = &*r.tab;
        if hoist {
            let s = item(k, tab);
            for j in 0..nl {
                let cell = t / nl + j * (bc / nl);
                if cell < n {
                    basis(cell0 + cell, k, &s, tab, pts(cell));
                }
            }
        } else {
            for j in 0..nl {
                let cell = t / nl + j * (bc / nl);
                if cell < n {
                    basis(cell0 + cell, k, &item(k, tab), tab, pts(cell));
                }
            }
        }
    }
    // No copy may outlive the block.
    wait_all_but::<0>();
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
    time: T,
) {
    let pl = residual_point_len(D, NC);
    batches::<T, _, D, NC, NA, NB, NV, NQ, AUXN>(
        n_cells,
        n_batches,
        tab,
        [u, x, a],
        pl,
        |row, us, xs, as_, pts| {
            residual_point::<T, P, D, NC, NA, NB, NV, AUXN>(row, |i| at(us, i), xs, |i| at(as_, i), time, |c, h, v| *pts.get_unchecked_mut(c * (1 + D) + h) = v)
        },
        // Up to 32 hoisted table values per thread (P2 tetrahedra: 16, Q1
        // hexahedra: 32); Q2 hexahedra would hold 108 and read per cell.
        NQ * (D + 1) <= 32,
        |k, tab| BasisRow::<T, NQ>::new::<D, NC, NB, NV>(tab, P::TERMS, k),
        |cell, k, row, _, pts| {
            let c = k % NC;
            *out.add(cell * NB * NC + k) = row.apply(|q, h| at(pts, q * pl + c * (1 + D) + h));
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
    time: T,
) {
    let (nl, pl) = (NB * NC, jacobian_point_len(D, NC));
    batches::<T, _, D, NC, NA, NB, NV, NQ, AUXN>(
        n_cells,
        n_batches,
        tab,
        [u, x, a],
        pl,
        |row, us, xs, as_, pts| jacobian_point::<T, P, D, NC, NA, NB, NV, AUXN>(row, |i| at(us, i), xs, |i| at(as_, i), time, |i, v| *pts.get_unchecked_mut(i) = v),
        false,
        |_, _| (),
        |cell, i, _, tab, pts| {
            let row = out.add((cell * nl + i) * nl);
            for j in 0..nl {
                *row.add(j) = jacobian_entry::<T, D, NC, NB, NV, NQ>(tab, i, j, |q, k| at(pts, q * pl + k));
            }
        },
    );
}

/// Element residuals with one thread per cell from global memory
/// ([`cell_residual`], the CPU's sums): the fallback for variants whose
/// table and point values for one block of cells exceed shared memory
/// (Q3 and vector Q2 hexahedra). `_batches` is unused; the launch is any
/// 1D grid.
///
/// # Safety
/// Every pointer covers `n_cells` cells of its E-vector layout.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn residual_cells<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    n_cells: usize,
    _batches: usize,
    tab: *const T,
    u: *const T,
    x: *const T,
    a: *const T,
    out: *mut T,
    time: T,
) {
    per_cell(n_cells, NB * NC, NB * NC, NV * D, aux_len(NB, NA, AUXN), [u, x, a], out, |u, x, a, o| {
        cell_residual::<T, P, D, NC, NA, NB, NV, NQ, AUXN>(core::slice::from_raw_parts(tab, NQ * row_len(D, NB, NV)), u, x, a, time, o)
    });
}

/// The Jacobian's point data for partial assembly
/// ([`super::partial::point_values`]), one thread per (cell, point) over
/// a 1D grid, reading the cell's E-vectors from global memory: the data
/// are set up once per Newton update, and neighbouring threads write
/// neighbouring words (`out[cell][j][q]`, point fastest).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn points<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    n_cells: usize,
    _batches: usize,
    tab: *const T,
    u: *const T,
    x: *const T,
    a: *const T,
    out: *mut T,
    time: T,
) {
    let (nu, nx, na) = (NB * NC, NV * D, aux_len(NB, NA, AUXN));
    let len = super::partial::point_len(D, NC, P::TERMS);
    let tab = core::slice::from_raw_parts(tab, NQ * row_len(D, NB, NV));
    let mut item = crate::device::global_idx_x();
    while item < n_cells * NQ {
        let (cell, q) = (item / NQ, item % NQ);
        let (uc, xc, ac) = (u.add(cell * nu), core::slice::from_raw_parts(x.add(cell * nx), nx), a.add(cell * na));
        let o = out.add(cell * len * NQ + q);
        super::partial::point_values::<T, P, D, NC, NA, NB, NV, AUXN>(tab, q, |i| *uc.add(i), xc, |i| *ac.add(i), time, |j, v| *o.add(j * NQ) = v);
        item += crate::device::grid_size_x();
    }
}

/// Runs `f` on the E-vector slices (`nl`, `nx`, `na` input and `no`
/// output values per cell) of one cell per thread, over a 1D grid.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn per_cell<T: Real>(n_cells: usize, nl: usize, no: usize, nx: usize, na: usize, [u, x, a]: [*const T; 3], out: *mut T, f: impl Fn(&[T], &[T], &[T], &mut [T])) {
    let mut cell = crate::device::global_idx_x();
    while cell < n_cells {
        f(
            core::slice::from_raw_parts(u.add(cell * nl), nl),
            core::slice::from_raw_parts(x.add(cell * nx), nx),
            core::slice::from_raw_parts(a.add(cell * na), na),
            core::slice::from_raw_parts_mut(out.add(cell * no), no),
        );
        cell += crate::device::grid_size_x();
    }
}

/// Element matrices with one thread per cell, everything read from global
/// memory and the point values kept per thread ([`cell_jacobian`]'s
/// sums entry by entry): the fallback for variants whose point values for one block
/// of cells exceed shared memory (vector Q1 hexahedra, vector P2
/// tetrahedra). `_batches` is unused; the launch is any 1D grid.
///
/// # Safety
/// As [`jacobian`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn jacobian_cells<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    n_cells: usize,
    _batches: usize,
    tab: *const T,
    u: *const T,
    x: *const T,
    a: *const T,
    out: *mut T,
    time: T,
) {
    let nl = NB * NC;
    per_cell(n_cells, nl, nl * nl, NV * D, aux_len(NB, NA, AUXN), [u, x, a], out, |u, x, a, o| {
        cell_jacobian::<T, P, D, NC, NA, NB, NV, NQ, AUXN>(core::slice::from_raw_parts(tab, NQ * row_len(D, NB, NV)), u, x, a, time, o)
    });
}
