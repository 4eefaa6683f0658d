//! Where a thread of the tensor-product kernels finds the geometric
//! factors of its z-column, slice by slice: stored ones loaded into
//! registers ahead of their use ([`GeoAhead`]) or copied into a shared
//! ring ([`GeoRing`]), or recomputed from the element's corners
//! ([`GeoTrilinear`]). The kernels are written once over [`SliceFactors`]
//! (BP1 over [`SliceWeights`], the one factor w·det J it needs).

use crate::device::*;
use crate::tensor::BpKernel;
use fem_core::tensor::{metric, TrilinearLine, GWJ, NGEO};
use fem_core::{unroll, Real};

/// The seven geometric factors of node (i, j, k) of an `N³` grid, read
/// one slice ahead of their use so the loads wait behind a slice's work
/// rather than in front of it (zero for a missing element).
#[inline(always)]
pub(super) unsafe fn geo_at<T: Real, const N: usize>(g: *const T, (i, j, k): (usize, usize, usize), live: bool) -> [T; NGEO] {
    let (np, n) = (N * N * N, (k * N + j) * N + i);
    if live && k < N {
        core::array::from_fn(|f| *g.add(f * np + n))
    } else {
        [T::ZERO; NGEO]
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
pub(super) struct GeoAhead<T, const N: usize> {
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
pub(super) trait SliceFactors<T>: Sized {
    /// Slice `k`'s factors (`k` counts up from 0), issuing a later one.
    unsafe fn take(&mut self, k: usize) -> [T; NGEO];
}

/// The stored factors of a thread's column.
pub(super) trait StoredFactors<T>: SliceFactors<T> {
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
pub(super) struct GeoRing<T, const N: usize, const AHEAD: usize> {
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
/// a node where the stored factors cost 56 bytes (BP1's w·det J about 20
/// where it costs 8).
///
/// The 1D rule's points and weights (GLL for BP3.5's collocation, GL for
/// BP1 and BP3.0; `N` of them) are read from a table in global memory
/// (`rule`: the points, then their weights), where the thread's own
/// (i, j) index them: a launch parameter indexed by the thread would be
/// held whole in registers. The corners are read at the first slice,
/// after the barriers before the loop over the slices.
pub(super) struct GeoTrilinear<T, const N: usize> {
    corners: *const T,
    rule: *const T,
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
    pub(super) fn new(corners: *const T, rule: *const T, e: usize, node: (usize, usize), live: bool) -> Self {
        let zero = [T::ZERO; 3];
        Self { corners: corners.wrapping_add(e * 24), rule, live, node, line: TrilinearLine::new(&[zero; 8], T::ZERO, T::ZERO), wij: T::ZERO }
    }
}

impl<T: Real, const N: usize> SliceFactors<T> for GeoTrilinear<T, N> {
    #[inline(always)]
    unsafe fn take(&mut self, k: usize) -> [T; NGEO] {
        let (point, weight) = (|m: usize| *self.rule.add(m), |m: usize| *self.rule.add(N + m));
        if k == 0 {
            let (i, j) = self.node;
            let x: [[T; 3]; 8] = core::array::from_fn(|v| core::array::from_fn(|c| if self.live { *self.corners.add(v * 3 + c) } else { T::ZERO }));
            self.line = TrilinearLine::new(&x, point(i), point(j));
            self.wij = weight(i) * weight(j);
        }
        metric(self.line.jacobian(point(k)), self.wij * weight(k)).0
    }
}

/// A thread's quadrature weights w·det J slice by slice: BP1's one
/// geometric factor.
pub(super) trait SliceWeights<T> {
    /// Slice `k`'s weight (`k` counts up from 0).
    unsafe fn weight(&mut self, k: usize) -> T;
}

/// The stored weights of a thread's column (factor [`GWJ`] of the
/// stored factors), all loaded at once before the element's first
/// contractions where there are at most [`WJ_AHEAD_MAX`] points, so the
/// loads wait behind them; above, each where it is used.
pub(super) struct WeightsAhead<T, const N: usize> {
    early: [T; N],
    g: *const T,
    live: bool,
}

/// Largest point count for which [`WeightsAhead`] loads its weights
/// before the interpolation: at 17 points the early values cost 212
/// registers, more than a 289-thread block may have.
const WJ_AHEAD_MAX: usize = 12;

impl<T: Real, const N: usize> WeightsAhead<T, N> {
    /// Column `node` of the element whose factors start at `g`.
    #[inline(always)]
    pub(super) unsafe fn start(g: *const T, (i, j): (usize, usize), live: bool) -> Self {
        let g = g.wrapping_add(GWJ * N * N * N + j * N + i);
        let early = core::array::from_fn(|k| if N <= WJ_AHEAD_MAX && live { *g.add(k * N * N) } else { T::ZERO });
        Self { early, g, live }
    }
}

impl<T: Real, const N: usize> SliceWeights<T> for WeightsAhead<T, N> {
    #[inline(always)]
    unsafe fn weight(&mut self, k: usize) -> T {
        if N <= WJ_AHEAD_MAX {
            self.early[k]
        } else if self.live {
            *self.g.add(k * N * N)
        } else {
            T::ZERO
        }
    }
}

impl<T: Real, const N: usize> SliceWeights<T> for GeoTrilinear<T, N> {
    #[inline(always)]
    unsafe fn weight(&mut self, k: usize) -> T {
        self.take(k)[GWJ]
    }
}
