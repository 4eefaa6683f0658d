//! Tensor-product operators on hexahedra (Świrydowicz et al.), one element
//! per `threads × 1` slab of a block whose `blockDim.y` elements share the
//! block; the degree is a const parameter, so every loop is unrolled and
//! every per-thread array lives in registers.
//!
//! * `bp1`, `bp30`: line contractions. A thread owns one line of the
//!   element in shared memory at a time (x-line, y-line, then its z-column
//!   in registers), reads it once and writes each result once; the 1D
//!   matrices are launch parameters ([`Half`]), read by the whole warp at
//!   the same fixed index. `bp1_trilinear` and `bp30_trilinear` (N ≤ 8)
//!   recompute the geometric factors at each GL point from the element's
//!   corners (trilinear elements) instead of reading them.
//! * `bp35_lines`: the same line contractions for BP3.5, N ≤ 8, the
//!   thread's z-column in registers or in shared memory (`SHARED_COL`);
//!   `bp35_lines_ring` (N = 7, 8) with the geometric factors copied into a
//!   shared ring ahead of their use instead of loaded into registers;
//!   `bp35_lines_trilinear` with the factors recomputed at each node from
//!   the element's corners, 24 values an element read instead of 7 a
//!   node. Where the factors come from is `bp_factors`'.
//! * `bp35`: 2D thread slice over the GLL grid, the column `q[·][j][i]` in
//!   registers; per slice k the reference gradient is formed from one
//!   shared slice, the metric applied (its seven factors loaded during
//!   slice k − 1), the z-part of the transposed gradient accumulated in
//!   registers and the x/y-parts from two shared slices (two barriers per
//!   slice).
//! * `bp35_3d`: one thread per node for N ≤ 7, whole element in shared
//!   memory, two barriers.
//!
//! Barriers are [`barrier`]s: several follow branches on the thread's
//! position, which the compiler may merge around them. Every contraction
//! accumulates with `Real::mad` (`fma.rn`): written as `s += a * b` the
//! compiler keeps a multiply and an add, and BP3.5 lost up to a quarter
//! of its speed to that.
//!
//! The input and output are E-vectors, or with `assembled` ≠ 0 the
//! L-vectors read through `map` and added to atomically (the caller zeroes
//! `y`).

use super::bp_factors::{geo_at, GeoAhead, GeoRing, GeoTrilinear, SliceFactors, SliceWeights, StoredFactors, WeightsAhead};
use crate::device::lines::{line, line_t};
use crate::device::*;
use crate::tensor::{interp_column, project_column, BpKernel, Half};
use fem_core::tensor::{apply_metric, padded, NGEO};
use fem_core::{unroll, Real};
use fem_macros::kernel;

/// Entries `k·N + idx` (k < N) of a shared `N × N` (or `N × ·`) matrix:
/// row `idx` of the transpose, or column `idx` of the matrix.
#[inline(always)]
unsafe fn strided<T: Real, const N: usize>(m: *const T, stride: usize, idx: usize) -> [T; N] {
    core::array::from_fn(|k| *m.add(k * stride + idx))
}

/// The element's value at local position `pos` of the E-vector.
#[inline(always)]
unsafe fn load<T: Real>(assembled: u32, map: *const u32, x: *const T, pos: usize) -> T {
    if assembled != 0 {
        *x.add(*map.add(pos) as usize)
    } else {
        *x.add(pos)
    }
}

#[inline(always)]
unsafe fn store<T: Real>(assembled: u32, map: *const u32, y: *mut T, pos: usize, v: T) {
    if assembled != 0 {
        atomic_add(y.add(*map.add(pos) as usize), v);
    } else {
        *y.add(pos) = v;
    }
}

/// Copies the kernel's part of the packed table to the start of shared
/// memory; returns it and the first element work array (not yet synced).
#[inline(always)]
unsafe fn shared_setup<T: Real>(kind: BpKernel, nq: usize, gq: usize, tab: *const T) -> (*mut T, *mut T) {
    let s = dynamic_shared::<T>();
    let (off, len) = kind.table(nq, gq);
    let (t, nt) = (thread_idx_x() + block_dim_x() * thread_idx_y(), block_dim_x() * block_dim_y());
    let mut m = t;
    while m < len {
        *s.add(m) = *tab.add(off + m);
        m += nt;
    }
    (s, work_at(s, kind, nq, gq))
}

/// This thread's element work array in the shared memory starting at `s`:
/// past the kernel's table, `per_element` values per element of the block.
#[inline(always)]
unsafe fn work_at<T: Real>(s: *mut T, kind: BpKernel, nq: usize, gq: usize) -> *mut T {
    s.add(kind.table(nq, gq).1 + thread_idx_y() * kind.per_element(nq, gq))
}

/// This thread's element, and whether it exists (threads of a missing
/// element still take part in the barriers).
#[inline(always)]
fn element(ne: usize) -> (usize, bool) {
    let e = block_idx_x() * block_dim_y() + thread_idx_y();
    (e, e < ne)
}

/// Loads the element's GLL values into the GL-sized work array `w`. All
/// loads are issued before the first store: the work array is a generic
/// pointer that may alias the input as far as the compilers know, so a
/// load after a store would wait for the one before it.
#[inline(always)]
unsafe fn load_element<T: Real, const NQ: usize, const GQ: usize>(w: *mut T, i: usize, j: usize, live: bool, input: impl Fn(usize) -> T) {
    let p = padded(GQ);
    if live && i < NQ && j < NQ {
        let v: [T; NQ] = core::array::from_fn(|k| input((k * NQ + j) * NQ + i));
        unroll::<NQ>(|k| *w.add(k * GQ * p + j * p + i) = v[k]);
    }
    barrier();
}

/// Interpolation in x and y of the element loaded in `w` (slices of
/// `GQ × padded(GQ)`): thread `t` takes x-line (t mod N + 1, t div N + 1),
/// then y-line (t mod G, t div G).
#[inline(always)]
unsafe fn interpolate_xy<T: Real, const NQ: usize, const GQ: usize>(w: *mut T, t: usize, a: impl Fn(usize, usize) -> T + Copy) {
    let p = padded(GQ);
    if t < NQ * NQ {
        let x = w.add(((t / NQ) * GQ + t % NQ) * p);
        line::<T, NQ, GQ, false>(x, x, 1, a);
    }
    barrier();
    if t < GQ * NQ {
        let y = w.add((t / GQ) * GQ * p + t % GQ);
        line::<T, NQ, GQ, false>(y, y, p, a);
    }
    barrier();
}

/// The transpose of [`interpolate_xy`] (y-lines, then x-lines), then the
/// element's `NQ³` results stored by thread (i, j).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn project_yx<T: Real, const NQ: usize, const GQ: usize>(w: *mut T, t: usize, a: impl Fn(usize, usize) -> T + Copy, live: bool, out: impl Fn(usize, T)) {
    let p = padded(GQ);
    if t < GQ * NQ {
        line_t::<T, NQ, GQ, false>(w.add((t / GQ) * GQ * p + t % GQ), p, a);
    }
    barrier();
    if t < NQ * NQ {
        line_t::<T, NQ, GQ, false>(w.add(((t / NQ) * GQ + t % NQ) * p), 1, a);
    }
    barrier();
    let (i, j) = (t % GQ, t / GQ);
    if live && i < NQ && j < NQ {
        unroll::<NQ>(|k| out((k * NQ + j) * NQ + i, *w.add((k * GQ + j) * p + i)));
    }
}

/// The element's work arrays ([`work_at`]) for the kernels without shared
/// tables.
#[inline(always)]
unsafe fn work<T: Real>(kind: BpKernel, nq: usize, gq: usize) -> *mut T {
    work_at(dynamic_shared::<T>(), kind, nq, gq)
}

/// BP1.0: `y = Iᵀ W J I x` per element, as six line contractions: x- and
/// y-lines ([`interpolate_xy`]), the z-column (i, j) in registers where
/// the weights are applied and the z-projection follows at once, then the
/// y- and x-lines backwards ([`project_yx`]). I comes as a launch
/// parameter.
#[kernel(f64; degrees)]
pub unsafe fn bp1<T: Real, const NQ: usize, const GQ: usize, const HQ: usize>(ne: usize, im: Half<T, NQ, HQ>, geo: *const T, assembled: u32, map: *const u32, x: *const T, y: *mut T) {
    let weights = |e: usize, node, live| WeightsAhead::<T, GQ>::start(geo.wrapping_add(e * NGEO * GQ * GQ * GQ), node, live);
    bp1_body::<T, NQ, GQ, HQ, _>(ne, im, weights, assembled, map, x, y)
}

/// [`bp1`] with the weights w·det J recomputed at each point from the
/// corners of trilinear elements ([`GeoTrilinear`] on the GL rule `gl`):
/// 24 values an element read instead of one a point.
#[kernel(f64; degrees = 1..=8)]
pub unsafe fn bp1_trilinear<T: Real, const NQ: usize, const GQ: usize, const HQ: usize>(ne: usize, im: Half<T, NQ, HQ>, gl: *const T, corners: *const T, assembled: u32, map: *const u32, x: *const T, y: *mut T) {
    let weights = |e: usize, node, live| GeoTrilinear::<T, GQ>::new(corners, gl, e, node, live);
    bp1_body::<T, NQ, GQ, HQ, _>(ne, im, weights, assembled, map, x, y)
}

#[inline(always)]
unsafe fn bp1_body<T: Real, const NQ: usize, const GQ: usize, const HQ: usize, F: SliceWeights<T>>(
    ne: usize,
    im: Half<T, NQ, HQ>,
    weights: impl FnOnce(usize, (usize, usize), bool) -> F,
    assembled: u32,
    map: *const u32,
    x: *const T,
    y: *mut T,
) {
    let (np, p) = (NQ * NQ * NQ, padded(GQ));
    let at = |k: usize, j: usize, i: usize| (k * GQ + j) * p + i;
    let a = |q: usize, m: usize| im.at(q, m);
    let w = work::<T>(BpKernel::Mass, NQ, GQ);
    let t = thread_idx_x();
    let (i, j) = (t % GQ, t / GQ);
    let (e, live) = element(ne);
    // the stored weights are needed after three barriers: their loads go
    // first
    let mut wj = weights(e, (i, j), live);
    load_element::<T, NQ, GQ>(w, i, j, live, |n| load(assembled, map, x, e * np + n));
    interpolate_xy::<T, NQ, GQ>(w, t, a);
    let r: [T; NQ] = core::array::from_fn(|k| *w.add(at(k, j, i)));
    let mut c = interp_column::<T, NQ, GQ, false>(a, &r);
    unroll::<GQ>(|k| c[k] *= wj.weight(k));
    let r = project_column::<T, NQ, GQ, false>(a, &c);
    unroll::<NQ>(|k| *w.add(at(k, j, i)) = r[k]);
    barrier();
    project_yx::<T, NQ, GQ>(w, t, a, live, |n, v| store(assembled, map, y, e * np + n, v));
}

/// The screened Poisson operator on one slice `k` of an `n³` grid, for the
/// thread (i, j) holding the column `col` and the node's factors `gk`:
/// gradient from the shared slice `sq` (or the whole element, `sq` then
/// points at slice k), metric, the z-part of the transpose into `acc`,
/// x/y-parts through `gr`/`gs`.
/// `d`/`dt` are the differentiation matrix and its transpose.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn slice_metric<T: Real, const N: usize>(
    d: *const T,
    dt: *const T,
    sq: *const T,
    row: usize,
    gk: &[T; NGEO],
    lambda: T,
    (i, j, k): (usize, usize, usize),
    col: &[T; N],
    acc: &mut [T; N],
    gr: *mut T,
    gs: *mut T,
) {
    let (mut qr, mut qs, mut qt) = (T::ZERO, T::ZERO, T::ZERO);
    // row k of D, read once and used for the gradient and its transpose
    let dk: [T; N] = core::array::from_fn(|m| *d.add(k * N + m));
    unroll::<N>(|m| {
        qr = (*dt.add(m * N + i)).mad(*sq.add(j * row + m), qr);
        qs = (*dt.add(m * N + j)).mad(*sq.add(m * row + i), qs);
        qt = dk[m].mad(col[m], qt);
    });
    let (vr, vs, vt, mass) = apply_metric(gk, lambda, col[k], qr, qs, qt);
    *gr.add(j * row + i) = vr;
    *gs.add(j * row + i) = vs;
    acc[k] += mass;
    unroll::<N>(|m| acc[m] = dk[m].mad(vt, acc[m]));
}

/// The x/y-parts of the transposed gradient at (i, j) of a slice.
#[inline(always)]
unsafe fn slice_transpose<T: Real, const N: usize>(d: *const T, row: usize, gr: *const T, gs: *const T, i: usize, j: usize) -> T {
    let mut s = T::ZERO;
    unroll::<N>(|m| s = (*d.add(m * N + i)).mad(*gr.add(j * row + m), (*d.add(m * N + j)).mad(*gs.add(m * row + i), s)));
    s
}

/// BP3.5: `y = (Dᵀ G D + λ W J) x` per element with GLL collocation, in
/// 2D thread slices (from N = 9; [`bp35_lines`] below).
#[kernel(f64; degrees = 9..=15)]
pub unsafe fn bp35<T: Real, const NQ: usize, const GQ: usize>(ne: usize, lambda: T, tab: *const T, geo: *const T, assembled: u32, map: *const u32, x: *const T, y: *mut T) {
    let np = NQ * NQ * NQ;
    let p = padded(NQ);
    let (s, w) = shared_setup(BpKernel::Collocated, NQ, GQ, tab);
    let (d, dt) = (s, s.add(NQ * NQ));
    let (sq, gr, gs) = (w, w.add(NQ * p), w.add(2 * NQ * p));
    let (i, j) = (thread_idx_x() % NQ, thread_idx_x() / NQ);
    let (e, live) = element(ne);
    let mut col = [T::ZERO; NQ];
    let mut acc = [T::ZERO; NQ];
    if live {
        unroll::<NQ>(|k| col[k] = load(assembled, map, x, e * np + (k * NQ + j) * NQ + i));
    }
    let g = geo.wrapping_add(e * NGEO * np);
    barrier();
    let mut next = geo_at::<T, NQ>(g, (i, j, 0), live);
    unroll::<NQ>(|k| {
        let gk = next;
        next = geo_at::<T, NQ>(g, (i, j, k + 1), live);
        *sq.add(j * p + i) = col[k];
        barrier();
        if live {
            slice_metric::<T, NQ>(d, dt, sq, p, &gk, lambda, (i, j, k), &col, &mut acc, gr, gs);
        }
        barrier();
        if live {
            acc[k] += slice_transpose::<T, NQ>(d, p, gr, gs, i, j);
        }
    });
    if live {
        unroll::<NQ>(|k| store(assembled, map, y, e * np + (k * NQ + j) * NQ + i, acc[k]));
    }
}

/// BP3.5 as [`bp30`]'s middle part on the GLL grid: the x- and
/// y-derivatives as lines into `w` and `v`, the z-derivative, metric and
/// z-transpose in the thread's column, the x/y-transposes as lines in
/// place; four barriers. D comes as a launch parameter (its first `HQ` ≥
/// ⌈NQ/2⌉ rows).
///
/// With `SHARED_COL` the thread's column (input, then mass and z-parts)
/// lives in `u` between the passes rather than in registers: four more
/// shared accesses per node for 30–60 fewer registers (N = 8: 199 → 138),
/// which at N = 6 and 8 doubles the resident warps. Up to N = 8; the
/// slices ([`bp35`]) take the higher degrees.
#[kernel(f64; degrees = 1..=8; SHARED_COL = false, true)]
pub unsafe fn bp35_lines<T: Real, const NQ: usize, const GQ: usize, const HQ: usize, const SHARED_COL: bool>(
    ne: usize,
    lambda: T,
    dm: Half<T, NQ, HQ>,
    geo: *const T,
    assembled: u32,
    map: *const u32,
    x: *const T,
    y: *mut T,
) {
    let np = NQ * NQ * NQ;
    let factors = |e: usize, node, live| GeoAhead::<T, NQ>::start(geo.wrapping_add(e * NGEO * np), node, live);
    bp35_lines_body::<T, NQ, HQ, SHARED_COL, _>(ne, lambda, dm, factors, assembled, map, x, y)
}

/// [`bp35_lines`] with the geometric factors recomputed at each node from
/// the corners of trilinear elements ([`GeoTrilinear`]): 24 values an
/// element read instead of 7 a node.
#[kernel(f64; degrees = 1..=8; SHARED_COL = false, true)]
pub unsafe fn bp35_lines_trilinear<T: Real, const NQ: usize, const GQ: usize, const HQ: usize, const SHARED_COL: bool>(
    ne: usize,
    lambda: T,
    dm: Half<T, NQ, HQ>,
    gll: *const T,
    corners: *const T,
    assembled: u32,
    map: *const u32,
    x: *const T,
    y: *mut T,
) {
    let factors = |e: usize, node, live| GeoTrilinear::<T, NQ>::new(corners, gll, e, node, live);
    bp35_lines_body::<T, NQ, HQ, SHARED_COL, _>(ne, lambda, dm, factors, assembled, map, x, y)
}

/// [`bp35_lines`] with the column in shared memory and the geometric
/// factors copied into a shared ring `AHEAD` slices ahead of their use
/// ([`GeoRing`]) instead of loaded into registers: at N = 8 (`ptxas`,
/// sm_90) 96 registers instead of 136 for two slices ahead, 80 for four,
/// so more elements reside and the copies in flight hold no register.
/// For N = 7 and 8; below, [`bp35_lines`] was measured faster.
#[kernel(f64; degrees = 7..=8; AHEAD = 2, 3, 4)]
pub unsafe fn bp35_lines_ring<T: Real, const NQ: usize, const GQ: usize, const HQ: usize, const AHEAD: usize>(
    ne: usize,
    lambda: T,
    dm: Half<T, NQ, HQ>,
    geo: *const T,
    assembled: u32,
    map: *const u32,
    x: *const T,
    y: *mut T,
) {
    let np = NQ * NQ * NQ;
    let factors = |e: usize, node, live| GeoRing::<T, NQ, AHEAD>::start(geo.wrapping_add(e * NGEO * np), node, live);
    bp35_lines_body::<T, NQ, HQ, true, _>(ne, lambda, dm, factors, assembled, map, x, y)
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn bp35_lines_body<T: Real, const NQ: usize, const HQ: usize, const SHARED_COL: bool, F: SliceFactors<T>>(
    ne: usize,
    lambda: T,
    dm: Half<T, NQ, HQ>,
    factors: impl FnOnce(usize, (usize, usize), bool) -> F,
    assembled: u32,
    map: *const u32,
    x: *const T,
    y: *mut T,
) {
    let (np, p) = (NQ * NQ * NQ, padded(NQ));
    let at = |k: usize, j: usize, i: usize| (k * NQ + j) * p + i;
    let d = |q: usize, m: usize| dm.at(q, m);
    let u = work::<T>(BpKernel::CollocatedLines, NQ, 0);
    let (v, w) = (u.add(NQ * NQ * p), u.add(2 * NQ * NQ * p));
    let t = thread_idx_x();
    let (i, j) = (t % NQ, t / NQ);
    let (e, live) = element(ne);
    let mut c: [T; NQ] = core::array::from_fn(|k| if live { load(assembled, map, x, e * np + (k * NQ + j) * NQ + i) } else { T::ZERO });
    let mut geo_k = factors(e, (i, j), live);
    unroll::<NQ>(|k| *u.add(at(k, j, i)) = c[k]);
    barrier();
    let (yl, xl) = (at(j, 0, i), at(j, i, 0));
    line::<T, NQ, NQ, true>(u.add(yl), v.add(yl), p, d);
    line::<T, NQ, NQ, true>(u.add(xl), w.add(xl), 1, d);
    barrier();
    if SHARED_COL {
        unroll::<NQ>(|k| c[k] = *u.add(at(k, j, i)));
    }
    let mut vt = interp_column::<T, NQ, NQ, true>(d, &c);
    let mut acc = [T::ZERO; NQ];
    unroll::<NQ>(|k| {
        let gk = geo_k.take(k);
        let n = at(k, j, i);
        let ck = if SHARED_COL { *u.add(n) } else { c[k] };
        let (vr, vs, vz, mass) = apply_metric(&gk, lambda, ck, *w.add(n), *v.add(n), vt[k]);
        *w.add(n) = vr;
        *v.add(n) = vs;
        vt[k] = vz;
        if SHARED_COL {
            *u.add(n) = mass;
        } else {
            acc[k] = mass;
        }
    });
    let z = project_column::<T, NQ, NQ, true>(d, &vt);
    if SHARED_COL {
        unroll::<NQ>(|k| *u.add(at(k, j, i)) += z[k]);
    } else {
        unroll::<NQ>(|k| acc[k] += z[k]);
    }
    barrier();
    line_t::<T, NQ, NQ, true>(w.add(xl), 1, d);
    line_t::<T, NQ, NQ, true>(v.add(yl), p, d);
    barrier();
    if live {
        unroll::<NQ>(|k| {
            let n = at(k, j, i);
            let a = if SHARED_COL { *u.add(n) } else { acc[k] };
            store(assembled, map, y, e * np + (k * NQ + j) * NQ + i, a + *w.add(n) + *v.add(n))
        });
    }
}

/// BP3.5 with one thread per node (N ≤ 7): gradient, metric and transpose
/// through four whole-element shared arrays, two barriers.
#[kernel(f64; degrees = 1..=7)]
pub unsafe fn bp35_3d<T: Real, const NQ: usize, const GQ: usize>(ne: usize, lambda: T, tab: *const T, geo: *const T, assembled: u32, map: *const u32, x: *const T, y: *mut T) {
    let np = NQ * NQ * NQ;
    let p = padded(NQ);
    let vol = NQ * p * NQ;
    let (s, w) = shared_setup(BpKernel::Collocated3d, NQ, GQ, tab);
    let (d, dt) = (s, s.add(NQ * NQ));
    let (sq, gr, gs, gt) = (w, w.add(vol), w.add(2 * vol), w.add(3 * vol));
    let t = thread_idx_x();
    let (i, j, k) = (t % NQ, (t / NQ) % NQ, t / (NQ * NQ));
    let at = |k: usize, j: usize, i: usize| (k * NQ + j) * p + i;
    let (e, live) = element(ne);
    let u = if live { load(assembled, map, x, e * np + t) } else { T::ZERO };
    *sq.add(at(k, j, i)) = u;
    barrier();
    let mut out = T::ZERO;
    let (ri, rj, rk): ([T; NQ], [T; NQ], [T; NQ]) = (strided(dt, NQ, i), strided(dt, NQ, j), strided(dt, NQ, k));
    if live {
        let (mut qr, mut qs, mut qt) = (T::ZERO, T::ZERO, T::ZERO);
        unroll::<NQ>(|m| {
            qr = ri[m].mad(*sq.add(at(k, j, m)), qr);
            qs = rj[m].mad(*sq.add(at(k, m, i)), qs);
            qt = rk[m].mad(*sq.add(at(m, j, i)), qt);
        });
        let g = geo.add(e * NGEO * np + t);
        let gk: [T; NGEO] = core::array::from_fn(|f| *g.add(f * np));
        let (vr, vs, vt, mass) = apply_metric(&gk, lambda, u, qr, qs, qt);
        *gr.add(at(k, j, i)) = vr;
        *gs.add(at(k, j, i)) = vs;
        *gt.add(at(k, j, i)) = vt;
        out = mass;
    }
    barrier();
    let (ci, cj, ck): ([T; NQ], [T; NQ], [T; NQ]) = (strided(d, NQ, i), strided(d, NQ, j), strided(d, NQ, k));
    if live {
        unroll::<NQ>(|m| {
            out = ci[m].mad(*gr.add(at(k, j, m)), cj[m].mad(*gs.add(at(k, m, i)), ck[m].mad(*gt.add(at(m, j, i)), out)));
        });
        store(assembled, map, y, e * np + t, out);
    }
}

/// BP3.0: `y = Iᵀ (glDᵀ G glD + λ W J) I x` per element with GL quadrature,
/// as [`bp1`]'s line contractions: interpolation to the GL grid in `u`,
/// the y- and x-derivatives as lines into `v` and `w`, the z-derivative,
/// metric and z-transpose in the thread's column, the x/y-transposes as
/// lines in place, then [`bp1`]'s projection. I and glD come as launch
/// parameters.
#[kernel(f64; degrees)]
pub unsafe fn bp30<T: Real, const NQ: usize, const GQ: usize, const HQ: usize>(
    ne: usize,
    lambda: T,
    im: Half<T, NQ, HQ>,
    gd: Half<T, GQ, HQ>,
    geo: *const T,
    assembled: u32,
    map: *const u32,
    x: *const T,
    y: *mut T,
) {
    let factors = |e: usize, node, live| GeoAhead::<T, GQ>::start(geo.wrapping_add(e * NGEO * GQ * GQ * GQ), node, live);
    bp30_body::<T, NQ, GQ, HQ, _>(ne, lambda, im, gd, factors, assembled, map, x, y)
}

/// [`bp30`] with the geometric factors recomputed at each GL point from
/// the corners of trilinear elements ([`GeoTrilinear`] on the GL rule
/// `gl`): 24 values an element read instead of 7 a point.
#[kernel(f64; degrees = 1..=8)]
pub unsafe fn bp30_trilinear<T: Real, const NQ: usize, const GQ: usize, const HQ: usize>(
    ne: usize,
    lambda: T,
    im: Half<T, NQ, HQ>,
    gd: Half<T, GQ, HQ>,
    gl: *const T,
    corners: *const T,
    assembled: u32,
    map: *const u32,
    x: *const T,
    y: *mut T,
) {
    let factors = |e: usize, node, live| GeoTrilinear::<T, GQ>::new(corners, gl, e, node, live);
    bp30_body::<T, NQ, GQ, HQ, _>(ne, lambda, im, gd, factors, assembled, map, x, y)
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn bp30_body<T: Real, const NQ: usize, const GQ: usize, const HQ: usize, F: SliceFactors<T>>(
    ne: usize,
    lambda: T,
    im: Half<T, NQ, HQ>,
    gd: Half<T, GQ, HQ>,
    factors: impl FnOnce(usize, (usize, usize), bool) -> F,
    assembled: u32,
    map: *const u32,
    x: *const T,
    y: *mut T,
) {
    let (np, p) = (NQ * NQ * NQ, padded(GQ));
    let at = |k: usize, j: usize, i: usize| (k * GQ + j) * p + i;
    let (a, d) = (|q: usize, m: usize| im.at(q, m), |q: usize, m: usize| gd.at(q, m));
    let u = work::<T>(BpKernel::Quadrature, NQ, GQ);
    let (v, w) = (u.add(GQ * GQ * p), u.add(2 * GQ * GQ * p));
    let t = thread_idx_x();
    let (i, j) = (t % GQ, t / GQ);
    let (e, live) = element(ne);
    load_element::<T, NQ, GQ>(u, i, j, live, |n| load(assembled, map, x, e * np + n));
    interpolate_xy::<T, NQ, GQ>(u, t, a);
    let r: [T; NQ] = core::array::from_fn(|k| *u.add(at(k, j, i)));
    let c = interp_column::<T, NQ, GQ, false>(a, &r);
    unroll::<GQ>(|k| *u.add(at(k, j, i)) = c[k]);
    barrier();
    // the first slices' factors are in flight through the derivatives
    let mut geo_k = factors(e, (i, j), live);
    // y-derivative of line (t mod G, t div G) into v, x-derivative of line
    // (t mod G, t div G) into w
    let (yl, xl) = (at(t / GQ, 0, t % GQ), at(t / GQ, t % GQ, 0));
    line::<T, GQ, GQ, true>(u.add(yl), v.add(yl), p, d);
    line::<T, GQ, GQ, true>(u.add(xl), w.add(xl), 1, d);
    barrier();
    let c: [T; GQ] = core::array::from_fn(|k| *u.add(at(k, j, i)));
    let mut vt = interp_column::<T, GQ, GQ, true>(d, &c);
    let mut acc = [T::ZERO; GQ];
    unroll::<GQ>(|k| {
        let gk = geo_k.take(k);
        let n = at(k, j, i);
        let (vr, vs, vz, mass) = apply_metric(&gk, lambda, *u.add(n), *w.add(n), *v.add(n), vt[k]);
        *w.add(n) = vr;
        *v.add(n) = vs;
        vt[k] = vz;
        acc[k] = mass;
    });
    let z = project_column::<T, GQ, GQ, true>(d, &vt);
    unroll::<GQ>(|k| acc[k] += z[k]);
    barrier();
    line_t::<T, GQ, GQ, true>(w.add(xl), 1, d);
    line_t::<T, GQ, GQ, true>(v.add(yl), p, d);
    barrier();
    let s: [T; GQ] = core::array::from_fn(|k| acc[k] + *w.add(at(k, j, i)) + *v.add(at(k, j, i)));
    let r = project_column::<T, NQ, GQ, false>(a, &s);
    unroll::<NQ>(|k| *u.add(at(k, j, i)) = r[k]);
    barrier();
    project_yx::<T, NQ, GQ>(u, t, a, live, |n, v| store(assembled, map, y, e * np + n, v));
}
