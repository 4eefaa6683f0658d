//! Streaming primitives: the element-wise map and the reduction every
//! BLAS-1 kernel is made of, loading 16-byte packets.
//!
//! A streaming kernel is bound by the bytes each SM keeps in flight, and
//! the SM tracks outstanding load *instructions*: one 16-byte vector load
//! (`ld.global.v2.f64`, `ld.global.v4.f32`) moves 512 bytes per warp where
//! a scalar `f32` load moves 128. Measured on an H200 (2²⁶ elements,
//! fraction of the device-to-device copy bandwidth), the packet loop
//! brought `f32` sum of squares from 0.60 to 0.96 and `f32` dot from 0.88 to
//! 1.06; unrolling several packets per thread (in tiles or a grid apart)
//! did not improve on one packet per iteration, so the loop stays plain.
//!
//! Pointers that are not 16-byte aligned (views at odd offsets) take the
//! scalar path; allocations are 256-byte aligned.

use super::grid::grid_stride_fold;
use fem_core::Real;

/// Elements of `T` in one 16-byte packet, for const generics:
/// `with_lanes!(T, L => body)` evaluates `body` with `const L: usize`.
#[macro_export]
macro_rules! with_lanes {
    ($t:ty, $l:ident => $body:expr) => {
        if <$t as fem_core::Real>::BYTES == 8 {
            const $l: usize = 2;
            $body
        } else {
            const $l: usize = 4;
            $body
        }
    };
}

/// `L` elements moved by one vector instruction.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct Packet<T, const L: usize>(pub [T; L]);

#[inline(always)]
fn aligned16<T>(p: *const T) -> bool {
    p as usize % 16 == 0
}

/// Whole packets at the start of `n` elements, or 0 when a pointer is not
/// 16-byte aligned; the elements after them are handled one by one.
#[inline(always)]
fn packet_count<T, const L: usize>(n: usize, ptrs: &[*const T]) -> usize {
    if ptrs.iter().all(|&p| aligned16(p)) {
        n / L
    } else {
        0
    }
}

/// `Σ term(acc, [src₀[i], …])` over this thread's share of `i < n`; the
/// caller combines threads (e.g. with `block_sum`). `L` must be
/// `16 / size_of::<T>()` (see [`with_lanes!`](crate::with_lanes)).
///
/// # Safety
/// Every `src[k]` must be valid for `n` reads.
#[inline(always)]
pub unsafe fn stream_reduce<T: Real, const K: usize, const L: usize>(
    n: usize,
    src: [*const T; K],
    term: impl Fn(T, [T; K]) -> T,
) -> T {
    let np = packet_count::<T, L>(n, &src);
    let packets = src.map(|s| s as *const Packet<T, L>);
    let acc = grid_stride_fold(np, T::ZERO, |mut acc, p| {
        let v = packets.map(|s| *s.add(p));
        for l in 0..L {
            acc = term(acc, core::array::from_fn(|k| v[k].0[l]));
        }
        acc
    });
    let base = np * L;
    grid_stride_fold(n - base, acc, |acc, i| term(acc, src.map(|s| *s.add(base + i))))
}

/// `dst[i] = f([src₀[i], …])` for `i < n`. `dst` may be one of the sources
/// (each element is read before it is written, by the same thread). `L`
/// as for [`stream_reduce`].
///
/// # Safety
/// Every `src[k]` must be valid for `n` reads and `dst` for `n` writes.
#[inline(always)]
pub unsafe fn stream_map<T: Real, const K: usize, const L: usize>(
    n: usize,
    src: [*const T; K],
    dst: *mut T,
    f: impl Fn([T; K]) -> T,
) {
    let np = if aligned16(dst) { packet_count::<T, L>(n, &src) } else { 0 };
    let packets = src.map(|s| s as *const Packet<T, L>);
    let out = dst as *mut Packet<T, L>;
    grid_stride_fold(np, (), |(), p| {
        let v = packets.map(|s| *s.add(p));
        *out.add(p) = Packet(core::array::from_fn(|l| f(core::array::from_fn(|k| v[k].0[l]))));
    });
    let base = np * L;
    grid_stride_fold(n - base, (), |(), i| *dst.add(base + i) = f(src.map(|s| *s.add(base + i))));
}

/// `dst[j][i] = f([src₀[i], …])[j]` for `i < n`, as [`stream_map`] with
/// several outputs, folding `term` over the outputs of the rows below
/// `owned` (this thread's share; the caller combines threads): an update
/// and the reductions of its result in one pass over the vectors. A
/// destination may be one of the sources.
///
/// # Safety
/// Every `src[k]` must be valid for `n` reads and every `dst[j]` for `n`
/// writes.
#[inline(always)]
pub unsafe fn stream_update<T: Real, const K: usize, const M: usize, const R: usize, const L: usize>(
    n: usize,
    owned: usize,
    src: [*const T; K],
    dst: [*mut T; M],
    f: impl Fn([T; K]) -> [T; M],
    term: impl Fn([T; R], [T; M]) -> [T; R],
) -> [T; R] {
    let np = if dst.iter().all(|&d| aligned16(d)) { packet_count::<T, L>(n, &src) } else { 0 };
    let packets = src.map(|s| s as *const Packet<T, L>);
    let outs = dst.map(|d| d as *mut Packet<T, L>);
    let acc = grid_stride_fold(np, [T::ZERO; R], |mut acc, p| {
        let v = packets.map(|s| *s.add(p));
        let mut out = [[T::ZERO; L]; M];
        for l in 0..L {
            let o = f(core::array::from_fn(|k| v[k].0[l]));
            for j in 0..M {
                out[j][l] = o[j];
            }
            if p * L + l < owned {
                acc = term(acc, o);
            }
        }
        for j in 0..M {
            *outs[j].add(p) = Packet(out[j]);
        }
        acc
    });
    let base = np * L;
    grid_stride_fold(n - base, acc, |acc, i| {
        let o = f(src.map(|s| *s.add(base + i)));
        for j in 0..M {
            *dst[j].add(base + i) = o[j];
        }
        if base + i < owned {
            term(acc, o)
        } else {
            acc
        }
    })
}
