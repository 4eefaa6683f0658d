//! Tensor-product operators on hexahedra (Świrydowicz et al.), one element
//! per `threads × 1` slab of a block whose `blockDim.y` elements share the
//! 1D tables; the degree is a const parameter, so every loop is unrolled
//! and every per-thread array lives in registers.
//!
//! * `bp1`: 2D thread slice (i, j) over the GL grid, the whole element in
//!   shared memory (six barriers), the z-contractions in registers.
//! * `bp35`: 2D thread slice over the GLL grid, the column `q[·][j][i]` in
//!   registers; per slice k the reference gradient is formed from one
//!   shared slice, the metric applied (its seven factors loaded during
//!   slice k − 1), the z-part of the transposed gradient accumulated in
//!   registers and the x/y-parts from two shared slices (two barriers per
//!   slice).
//! * `bp35_3d`: one thread per node for N ≤ 7, whole element in shared
//!   memory, two barriers.
//! * `bp30`: `bp1`'s interpolation, `bp35`'s slices on the GL grid, `bp1`'s
//!   projection.
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

use crate::device::*;
use crate::tensor::{interp_column, project_column, BpKernel};
use fem_core::tensor::{apply_metric, padded, GWJ, NGEO};
use fem_core::{unroll, Real};
use fem_macros::kernel;

/// Largest per-direction point count whose 1D matrix rows are kept in
/// registers; above it they are read from shared memory. Caching halves the
/// shared loads but costs 4·n registers per thread: on an H200 it pays up
/// to n = 5 and lowers occupancy enough to lose from n = 6 on.
const REG_MAX: usize = 5;

/// Entries `k·N + idx` (k < N) of a shared `N × N` (or `N × ·`) matrix:
/// row `idx` of the transpose, or column `idx` of the matrix.
#[inline(always)]
unsafe fn strided<T: Real, const N: usize>(m: *const T, stride: usize, idx: usize, cache: bool) -> [T; N] {
    if cache {
        core::array::from_fn(|k| *m.add(k * stride + idx))
    } else {
        [T::ZERO; N]
    }
}

/// `a[k]` when cached, else the shared entry `m[k·stride + idx]`.
#[inline(always)]
unsafe fn pick<T: Real, const N: usize>(a: &[T; N], m: *const T, stride: usize, idx: usize, cache: bool, k: usize) -> T {
    if cache {
        a[k]
    } else {
        *m.add(k * stride + idx)
    }
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
    (s, s.add(len + thread_idx_y() * kind.per_element(nq, gq)))
}

/// This thread's element, and whether it exists (threads of a missing
/// element still take part in the barriers).
#[inline(always)]
fn element(ne: usize) -> (usize, bool) {
    let e = block_idx_x() * block_dim_y() + thread_idx_y();
    (e, e < ne)
}

/// Interpolation to the GL grid in shared memory: in `w` (slices of
/// `gq × p`) the element's values on entry, and on return the thread's
/// column `u[·][j][i]` at the GL points (x and y through `w`, z in
/// registers). `it` is Iᵀ, `im` is I.
#[inline(always)]
unsafe fn interpolate<T: Real, const NQ: usize, const GQ: usize>(it: *const T, im: *const T, w: *mut T, i: usize, j: usize) -> [T; GQ] {
    let p = padded(GQ);
    let at = |k: usize, j: usize, i: usize| k * GQ * p + j * p + i;
    let cache = GQ <= REG_MAX;
    let (ri, rj) = (strided::<T, NQ>(it, GQ, i, cache), strided::<T, NQ>(it, GQ, j, cache));
    let mut r = [T::ZERO; NQ];
    if j < NQ {
        unroll::<NQ>(|k| {
            let mut s = T::ZERO;
            unroll::<NQ>(|m| s = pick(&ri, it, GQ, i, cache, m).mad(*w.add(at(k, j, m)), s));
            r[k] = s;
        });
    }
    barrier();
    if j < NQ {
        unroll::<NQ>(|k| *w.add(at(k, j, i)) = r[k]);
    }
    barrier();
    unroll::<NQ>(|k| {
        let mut s = T::ZERO;
        unroll::<NQ>(|m| s = pick(&rj, it, GQ, j, cache, m).mad(*w.add(at(k, m, i)), s));
        r[k] = s;
    });
    interp_column::<T, NQ, GQ>(|q, m| *im.add(q * NQ + m), &r)
}

/// The transpose of [`interpolate`]: from the thread's GL column `c`, the
/// element's result at the GLL nodes, stored to `y`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn project<T: Real, const NQ: usize, const GQ: usize>(im: *const T, w: *mut T, i: usize, j: usize, c: &[T; GQ], live: bool, out: impl Fn(usize, T)) {
    let p = padded(GQ);
    let at = |k: usize, j: usize, i: usize| k * GQ * p + j * p + i;
    let cache = GQ <= REG_MAX;
    let (ci, cj) = (strided::<T, GQ>(im, NQ, i, cache && i < NQ), strided::<T, GQ>(im, NQ, j, cache && j < NQ));
    let mut r = project_column::<T, NQ, GQ>(|q, m| *im.add(q * NQ + m), c);
    barrier();
    unroll::<NQ>(|k| *w.add(at(k, j, i)) = r[k]);
    barrier();
    if j < NQ {
        unroll::<NQ>(|k| {
            let mut s = T::ZERO;
            unroll::<GQ>(|m| s = pick(&cj, im, NQ, j, cache, m).mad(*w.add(at(k, m, i)), s));
            r[k] = s;
        });
    }
    barrier();
    if j < NQ {
        unroll::<NQ>(|k| *w.add(at(k, j, i)) = r[k]);
    }
    barrier();
    if live && i < NQ && j < NQ {
        unroll::<NQ>(|k| {
            let mut s = T::ZERO;
            unroll::<GQ>(|m| s = pick(&ci, im, NQ, i, cache, m).mad(*w.add(at(k, j, m)), s));
            out((k * NQ + j) * NQ + i, s);
        });
    }
}

/// Loads the element's GLL values into the GL-sized work array `w`.
#[inline(always)]
unsafe fn load_element<T: Real, const NQ: usize, const GQ: usize>(w: *mut T, i: usize, j: usize, live: bool, input: impl Fn(usize) -> T) {
    let p = padded(GQ);
    if live && i < NQ && j < NQ {
        unroll::<NQ>(|k| *w.add(k * GQ * p + j * p + i) = input((k * NQ + j) * NQ + i));
    }
    barrier();
}

/// BP1.0: `y = Iᵀ W J I x` per element.
#[kernel(f64; degrees)]
pub unsafe fn bp1<T: Real, const NQ: usize, const GQ: usize>(ne: usize, tab: *const T, geo: *const T, assembled: u32, map: *const u32, x: *const T, y: *mut T) {
    let (np, gp) = (NQ * NQ * NQ, GQ * GQ * GQ);
    let (s, w) = shared_setup(BpKernel::Mass, NQ, GQ, tab);
    let (im, it) = (s, s.add(GQ * NQ));
    let (i, j) = (thread_idx_x() % GQ, thread_idx_x() / GQ);
    let (e, live) = element(ne);
    load_element::<T, NQ, GQ>(w, i, j, live, |n| load(assembled, map, x, e * np + n));
    let mut c = interpolate::<T, NQ, GQ>(it, im, w, i, j);
    if live {
        let g = geo.add((e * NGEO + GWJ) * gp + j * GQ + i);
        unroll::<GQ>(|k| c[k] *= *g.add(k * GQ * GQ));
    }
    project::<T, NQ, GQ>(im, w, i, j, &c, live, |n, v| store(assembled, map, y, e * np + n, v));
}

/// The seven geometric factors of node (i, j, k) of an `N³` grid, read
/// one slice ahead of their use so the loads wait behind a slice's work
/// rather than in front of it (zero for a missing element).
#[inline(always)]
unsafe fn geo_at<T: Real, const N: usize>(g: *const T, (i, j, k): (usize, usize, usize), live: bool) -> [T; NGEO] {
    let (np, n) = (N * N * N, (k * N + j) * N + i);
    if live && k < N {
        core::array::from_fn(|f| *g.add(f * np + n))
    } else {
        [T::ZERO; NGEO]
    }
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
    rows: &Rows<T, N>,
    col: &[T; N],
    acc: &mut [T; N],
    gr: *mut T,
    gs: *mut T,
) {
    let (mut qr, mut qs, mut qt) = (T::ZERO, T::ZERO, T::ZERO);
    // row k of D, read once and used for the gradient and its transpose
    let dk: [T; N] = core::array::from_fn(|m| *d.add(k * N + m));
    let c = rows.cache;
    unroll::<N>(|m| {
        qr = pick(&rows.di, dt, N, i, c, m).mad(*sq.add(j * row + m), qr);
        qs = pick(&rows.dj, dt, N, j, c, m).mad(*sq.add(m * row + i), qs);
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
unsafe fn slice_transpose<T: Real, const N: usize>(d: *const T, row: usize, gr: *const T, gs: *const T, i: usize, j: usize, rows: &Rows<T, N>) -> T {
    let mut s = T::ZERO;
    let c = rows.cache;
    unroll::<N>(|m| s = pick(&rows.ci, d, N, i, c, m).mad(*gr.add(j * row + m), pick(&rows.cj, d, N, j, c, m).mad(*gs.add(m * row + i), s)));
    s
}

/// Rows i, j (`di`, `dj`) and columns i, j (`ci`, `cj`) of the `N × N`
/// differentiation matrix for thread (i, j): in registers when `cache`.
struct Rows<T, const N: usize> {
    cache: bool,
    di: [T; N],
    dj: [T; N],
    ci: [T; N],
    cj: [T; N],
}

impl<T: Real, const N: usize> Rows<T, N> {
    /// From `d` and its transpose `dt` in shared memory (after the barrier
    /// that follows their loading).
    #[inline(always)]
    unsafe fn new(d: *const T, dt: *const T, i: usize, j: usize) -> Self {
        let cache = N <= REG_MAX;
        Self { cache, di: strided(dt, N, i, cache), dj: strided(dt, N, j, cache), ci: strided(d, N, i, cache), cj: strided(d, N, j, cache) }
    }
}

/// BP3.5: `y = (Dᵀ G D + λ W J) x` per element with GLL collocation.
#[kernel(f64; degrees)]
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
    let rows = Rows::<T, NQ>::new(d, dt, i, j);
    let mut next = geo_at::<T, NQ>(g, (i, j, 0), live);
    unroll::<NQ>(|k| {
        let gk = next;
        next = geo_at::<T, NQ>(g, (i, j, k + 1), live);
        *sq.add(j * p + i) = col[k];
        barrier();
        if live {
            slice_metric::<T, NQ>(d, dt, sq, p, &gk, lambda, (i, j, k), &rows, &col, &mut acc, gr, gs);
        }
        barrier();
        if live {
            acc[k] += slice_transpose::<T, NQ>(d, p, gr, gs, i, j, &rows);
        }
    });
    if live {
        unroll::<NQ>(|k| store(assembled, map, y, e * np + (k * NQ + j) * NQ + i, acc[k]));
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
    let (ri, rj, rk): ([T; NQ], [T; NQ], [T; NQ]) = (strided(dt, NQ, i, true), strided(dt, NQ, j, true), strided(dt, NQ, k, true));
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
    let (ci, cj, ck): ([T; NQ], [T; NQ], [T; NQ]) = (strided(d, NQ, i, true), strided(d, NQ, j, true), strided(d, NQ, k, true));
    if live {
        unroll::<NQ>(|m| {
            out = ci[m].mad(*gr.add(at(k, j, m)), cj[m].mad(*gs.add(at(k, m, i)), ck[m].mad(*gt.add(at(m, j, i)), out)));
        });
        store(assembled, map, y, e * np + t, out);
    }
}

/// BP3.0: `y = Iᵀ (glDᵀ G glD + λ W J) I x` per element with GL quadrature.
#[kernel(f64; degrees)]
pub unsafe fn bp30<T: Real, const NQ: usize, const GQ: usize>(ne: usize, lambda: T, tab: *const T, geo: *const T, assembled: u32, map: *const u32, x: *const T, y: *mut T) {
    let (np, gp) = (NQ * NQ * NQ, GQ * GQ * GQ);
    let p = padded(GQ);
    let (s, w) = shared_setup(BpKernel::Quadrature, NQ, GQ, tab);
    let (im, it) = (s, s.add(GQ * NQ));
    let (d, dt) = (s.add(2 * GQ * NQ + 2 * NQ * NQ), s.add(2 * GQ * NQ + 2 * NQ * NQ + GQ * GQ));
    let (gr, gs) = (w.add(GQ * GQ * p), w.add((GQ + 1) * GQ * p));
    let (i, j) = (thread_idx_x() % GQ, thread_idx_x() / GQ);
    let (e, live) = element(ne);
    load_element::<T, NQ, GQ>(w, i, j, live, |n| load(assembled, map, x, e * np + n));
    let col = interpolate::<T, NQ, GQ>(it, im, w, i, j);
    barrier();
    unroll::<GQ>(|k| *w.add(k * GQ * p + j * p + i) = col[k]);
    barrier();
    let g = geo.wrapping_add(e * NGEO * gp);
    let mut acc = [T::ZERO; GQ];
    let rows = Rows::<T, GQ>::new(d, dt, i, j);
    let mut next = geo_at::<T, GQ>(g, (i, j, 0), live);
    unroll::<GQ>(|k| {
        let gk = next;
        next = geo_at::<T, GQ>(g, (i, j, k + 1), live);
        if live {
            slice_metric::<T, GQ>(d, dt, w.add(k * GQ * p), p, &gk, lambda, (i, j, k), &rows, &col, &mut acc, gr, gs);
        }
        barrier();
        if live {
            acc[k] += slice_transpose::<T, GQ>(d, p, gr, gs, i, j, &rows);
        }
        barrier();
    });
    project::<T, NQ, GQ>(im, w, i, j, &acc, live, |n, v| store(assembled, map, y, e * np + n, v));
}
