//! Tensor-product operators on hexahedra (Świrydowicz et al.), one element
//! per `threads × 1` slab of a block whose `blockDim.y` elements share the
//! block; the degree is a const parameter, so every loop is unrolled and
//! every per-thread array lives in registers.
//!
//! * `bp1`, `bp30`: line contractions. A thread owns one line of the
//!   element in shared memory at a time (x-line, y-line, then its z-column
//!   in registers), reads it once and writes each result once; the 1D
//!   matrices are launch parameters ([`Half`]), read by the whole warp at
//!   the same fixed index.
//! * `bp35_lines`: the same line contractions for BP3.5, N ≤ 8, the
//!   thread's z-column in registers or in shared memory (`SHARED_COL`);
//!   `bp35_lines_ring` (N = 7, 8) with the geometric factors copied into a
//!   shared ring ahead of their use instead of loaded into registers;
//!   `bp35_lines_trilinear` with the factors recomputed at each node from
//!   the element's corners (trilinear elements), 24 values an element
//!   read instead of 7 a node.
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

use crate::device::lines::{line, line_t};
use crate::device::*;
use crate::tensor::{interp_column, project_column, BpKernel, Half};
use fem_core::tensor::{apply_metric, metric, padded, TrilinearLine, GWJ, NGEO};
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

/// Largest GL point count for which [`bp1`] loads its weights before the
/// interpolation: at 17 points the early values cost 212 registers, more
/// than a 289-thread block may have.
const WJ_AHEAD_MAX: usize = 12;

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

/// The geometric factors of a thread's column, slice by slice, with the
/// next slices' loads in flight: the metric loops are short, and their
/// shared-memory stores keep the compilers from moving later loads ahead
/// of them. Two slices ahead up to 12 points per direction, one above,
/// where the registers of the second would spill; three at 9 points,
/// where they were measured to pay in both kernels that use this (H100,
/// fraction of the copy at 1e7 DOFs / 4096 elements: BP3.5 N = 8 0.899 →
/// 0.936 / 0.833 → 0.870, BP3.0 N = 7 0.804 → 0.861 / 0.751 → 0.800; at
/// 6, 7 and 10 points they lost 1–10 %).
struct GeoAhead<T, const N: usize> {
    ring: [[T; NGEO]; 3],
    g: *const T,
    node: (usize, usize),
    live: bool,
}

impl<T: Real, const N: usize> GeoAhead<T, N> {
    const DEPTH: usize = if N == 9 {
        3
    } else if N <= 12 {
        2
    } else {
        1
    };
}

/// A thread's geometric factors slice by slice: loaded, with later
/// slices in flight, or recomputed.
trait SliceFactors<T>: Sized {
    /// Slice `k`'s factors (`k` counts up from 0), issuing a later one.
    unsafe fn take(&mut self, k: usize) -> [T; NGEO];
}

/// The stored factors of a thread's column.
trait StoredFactors<T>: SliceFactors<T> {
    /// Issues the first slices of column `node` of the element whose
    /// factors start at `g`.
    unsafe fn start(g: *const T, node: (usize, usize), live: bool) -> Self;
}

impl<T: Real, const N: usize> StoredFactors<T> for GeoAhead<T, N> {
    #[inline(always)]
    unsafe fn start(g: *const T, node: (usize, usize), live: bool) -> Self {
        let ring = core::array::from_fn(|k| if k < Self::DEPTH { geo_at::<T, N>(g, (node.0, node.1, k), live) } else { [T::ZERO; NGEO] });
        Self { ring, g, node, live }
    }
}

impl<T: Real, const N: usize> SliceFactors<T> for GeoAhead<T, N> {
    #[inline(always)]
    unsafe fn take(&mut self, k: usize) -> [T; NGEO] {
        let d = Self::DEPTH;
        let gk = self.ring[k % d];
        self.ring[k % d] = geo_at::<T, N>(self.g, (self.node.0, self.node.1, k + d), self.live);
        gk
    }
}

/// The geometric factors of a thread's column through shared memory:
/// slice k + `AHEAD` is copied (`cp.async`, no register waits for it)
/// into a ring of `AHEAD` + 1 slots while slice k is used, so the loads in
/// flight cost shared memory instead of [`GeoAhead`]'s 7 registers per
/// slice. Each thread copies and reads only its own node's factors, so
/// no barrier is needed; the slot a copy overwrites was read a slice
/// earlier. The ring of element `threadIdx.y` follows the block's work
/// arrays of [`BpKernel::CollocatedLines`].
struct GeoRing<T, const N: usize, const AHEAD: usize> {
    /// The thread's first slot (generic address, for reading).
    slots: *const T,
    /// The same in the shared window, and the thread's node (i, j, 0) in
    /// the global window (for `cp.async`).
    windows: (u32, u64),
    live: bool,
}

impl<T: Real, const N: usize, const AHEAD: usize> GeoRing<T, N, AHEAD> {
    const SLOTS: usize = AHEAD + 1;
    /// [`SliceFactors::take`] waits with a literal count for each depth.
    const DEPTH_OK: () = assert!(AHEAD >= 1 && AHEAD <= 4, "a factor ring 1 to 4 slices deep");

    /// Shared values of one element's ring (as the host counts them).
    const fn len() -> usize {
        let k = BpKernel::CollocatedLines;
        k.shared_len_with_ring(N, 0, 1, AHEAD) - k.shared_len(N, 0, 1)
    }

    /// Copies slice `k`, if the element has it, into its slot.
    #[inline(always)]
    unsafe fn issue(&self, k: usize) {
        if self.live && k < N {
            let (s, g) = self.windows;
            let (nn, b) = (N * N, T::BYTES);
            unroll::<NGEO>(|f| copy_async::copy_async_at::<T>(s + (((k % Self::SLOTS) * NGEO + f) * nn * b) as u32, g + ((f * nn * N + k * nn) * b) as u64));
        }
        copy_async::commit();
    }
}

impl<T: Real, const N: usize, const AHEAD: usize> StoredFactors<T> for GeoRing<T, N, AHEAD> {
    #[inline(always)]
    unsafe fn start(g: *const T, (i, j): (usize, usize), live: bool) -> Self {
        let per = BpKernel::CollocatedLines.per_element(N, 0);
        let t = j * N + i;
        let slots = dynamic_shared::<T>().add(block_dim_y() * per + thread_idx_y() * Self::len() + t);
        let r = Self { slots, windows: copy_async::windows(slots, g.wrapping_add(t)), live };
        unroll::<AHEAD>(|k| r.issue(k));
        r
    }
}

impl<T: Real, const N: usize, const AHEAD: usize> SliceFactors<T> for GeoRing<T, N, AHEAD> {
    #[inline(always)]
    unsafe fn take(&mut self, k: usize) -> [T; NGEO] {
        let () = Self::DEPTH_OK;
        match AHEAD {
            1 => copy_async::wait_all_but::<0>(),
            2 => copy_async::wait_all_but::<1>(),
            3 => copy_async::wait_all_but::<2>(),
            4 => copy_async::wait_all_but::<3>(),
            _ => unreachable!(),
        }
        let slot = self.slots.add((k % Self::SLOTS) * NGEO * N * N);
        let gk = core::array::from_fn(|f| *slot.add(f * N * N));
        self.issue(k + AHEAD);
        gk
    }
}

/// The factors of a thread's column recomputed at each node from the
/// element's 24 corner coordinates (a trilinear element): the column's
/// Jacobians from five 3-vectors ([`TrilinearLine`]), the metric from
/// them ([`metric`], the host's). They cost about 60 arithmetic operations
/// a node where the stored factors cost 56 bytes.
///
/// The GLL points and weights are read from a table in global memory
/// (`gll`: the `N` points, then their weights), where the thread's own
/// (i, j) index them: a launch parameter indexed by the thread would be
/// held whole in registers. The corners are read at the first slice,
/// after the barriers before the loop over the slices.
struct GeoTrilinear<T, const N: usize> {
    corners: *const T,
    gll: *const T,
    live: bool,
    /// The column (i, j).
    node: (usize, usize),
    line: TrilinearLine<T>,
    /// The column's weight w_i·w_j.
    wij: T,
}

impl<T: Real, const N: usize> GeoTrilinear<T, N> {
    /// Column `node` of element `e`, whose corners are at `corners[e·24..]`.
    #[inline(always)]
    fn new(corners: *const T, gll: *const T, e: usize, node: (usize, usize), live: bool) -> Self {
        let zero = [T::ZERO; 3];
        Self { corners: corners.wrapping_add(e * 24), gll, live, node, line: TrilinearLine::new(&[zero; 8], T::ZERO, T::ZERO), wij: T::ZERO }
    }
}

impl<T: Real, const N: usize> SliceFactors<T> for GeoTrilinear<T, N> {
    #[inline(always)]
    unsafe fn take(&mut self, k: usize) -> [T; NGEO] {
        let (point, weight) = (|m: usize| *self.gll.add(m), |m: usize| *self.gll.add(N + m));
        if k == 0 {
            let (i, j) = self.node;
            let x: [[T; 3]; 8] = core::array::from_fn(|v| core::array::from_fn(|c| if self.live { *self.corners.add(v * 3 + c) } else { T::ZERO }));
            self.line = TrilinearLine::new(&x, point(i), point(j));
            self.wij = weight(i) * weight(j);
        }
        metric(self.line.jacobian(point(k)), self.wij * weight(k)).0
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
    let (np, gp, p) = (NQ * NQ * NQ, GQ * GQ * GQ, padded(GQ));
    let at = |k: usize, j: usize, i: usize| (k * GQ + j) * p + i;
    let a = |q: usize, m: usize| im.at(q, m);
    let w = work::<T>(BpKernel::Mass, NQ, GQ);
    let t = thread_idx_x();
    let (i, j) = (t % GQ, t / GQ);
    let (e, live) = element(ne);
    // the weights are needed after three barriers: their loads go first,
    // unless holding them would leave too few registers for a launch
    let g = geo.wrapping_add((e * NGEO + GWJ) * gp + j * GQ + i);
    let wj = |k: usize| if live { *g.add(k * GQ * GQ) } else { T::ZERO };
    let early = GQ <= WJ_AHEAD_MAX;
    let wj_early: [T; GQ] = core::array::from_fn(|k| if early { wj(k) } else { T::ZERO });
    load_element::<T, NQ, GQ>(w, i, j, live, |n| load(assembled, map, x, e * np + n));
    interpolate_xy::<T, NQ, GQ>(w, t, a);
    let r: [T; NQ] = core::array::from_fn(|k| *w.add(at(k, j, i)));
    let mut c = interp_column::<T, NQ, GQ, false>(a, &r);
    unroll::<GQ>(|k| c[k] *= if early { wj_early[k] } else { wj(k) });
    let r = project_column::<T, NQ, GQ, false>(a, &c);
    unroll::<NQ>(|k| *w.add(at(k, j, i)) = r[k]);
    barrier();
    project_yx::<T, NQ, GQ>(w, t, a, live, |n, v| store(assembled, map, y, e * np + n, v));
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
    let (np, gp, p) = (NQ * NQ * NQ, GQ * GQ * GQ, padded(GQ));
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
    let g = geo.wrapping_add(e * NGEO * gp);
    let mut geo_k = GeoAhead::<T, GQ>::start(g, (i, j), live);
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
