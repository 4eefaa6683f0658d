//! The conjugate gradient method's device-side steps: its scalars stay in
//! a small `f64` array on the device ([`crate::krylov`]), so an iteration
//! launches work without waiting for the host.

use crate::device::{block_dim_x, block_idx_x, block_sum, global_idx_x, stream_update, thread_idx_x};
use crate::krylov::{self, PQ, RZ, STATUS};
use crate::{blas, with_lanes};
use fem_core::Real;
use fem_macros::kernel;

/// `x ← x + αp`, `r ← r − αq` with α = `s[RZ] / s[PQ]`, then with an
/// inverse diagonal `d` (not null) `z ← d∘r`; one partial per block of
/// `r·r` into `partial[block]` and of `r·z` (`r·r` without `d`) into
/// `partial[blocks + block]`, over the rows below `owned`. Nothing is
/// written once the solve has stopped. Shared memory as for `block_sum`.
#[kernel(f32, f64)]
pub unsafe fn cg_update<T: Real>(n: usize, owned: usize, s: *const f64, p: *const T, q: *const T, x: *mut T, r: *mut T, d: *const T, z: *mut T, partial: *mut T) {
    let Some(alpha) = krylov::step_length(*s.add(STATUS), *s.add(RZ), *s.add(PQ)) else {
        return;
    };
    let alpha = T::from_f64(alpha);
    let [rr, rz] = if d.is_null() {
        with_lanes!(T, L => stream_update::<T, 4, 2, 2, L>(
            n, owned, [p, q, x, r], [x, r],
            |[p, q, x, r]| krylov::update(alpha, p, q, x, r),
            |[a, b], [_, r]| [blas::sumsq_term(a, r), blas::sumsq_term(b, r)],
        ))
    } else {
        with_lanes!(T, L => stream_update::<T, 5, 3, 2, L>(
            n, owned, [p, q, x, r, d], [x, r, z],
            |[p, q, x, r, d]| { let [x, r] = krylov::update(alpha, p, q, x, r); [x, r, blas::mul(d, r)] },
            |[a, b], [_, r, z]| [blas::sumsq_term(a, r), blas::dot_term(b, r, z)],
        ))
    };
    let (rr, rz) = (block_sum(rr), block_sum(rz));
    if thread_idx_x() == 0 {
        let blocks = crate::device::grid_dim_x();
        *partial.add(block_idx_x()) = rr;
        *partial.add(blocks + block_idx_x()) = rz;
    }
}

/// `s[slot + c] = Σ partial[c·blocks ..][..blocks]` for `c < count`, in
/// one block: the second launch of a reduction whose result stays on the
/// device.
#[kernel(f32, f64)]
pub unsafe fn sum_to_slots<T: Real>(blocks: usize, count: usize, partial: *const T, s: *mut f64, slot: usize) {
    for c in 0..count {
        let mut acc = T::ZERO;
        let mut i = thread_idx_x();
        while i < blocks {
            acc += *partial.add(c * blocks + i);
            i += block_dim_x();
        }
        let total = block_sum(acc);
        if thread_idx_x() == 0 {
            *s.add(slot + c) = total.to_f64();
        }
    }
}

/// Closes an iteration on the scalars ([`krylov::advance`]) and records
/// its relative residual in `history`; one thread.
#[kernel]
pub unsafe fn cg_advance(s: *mut f64, history: *mut f64) {
    if global_idx_x() == 0 {
        if let Some((k, res)) = krylov::advance(&mut *(s as *mut [f64; krylov::SLOTS])) {
            *history.add(k) = res;
        }
    }
}

/// `p ← z + βp` with β = `s[BETA]`, unless the solve has stopped.
#[kernel(f32, f64)]
pub unsafe fn cg_direction<T: Real>(n: usize, s: *const f64, z: *const T, p: *mut T) {
    if *s.add(STATUS) != krylov::RUNNING {
        return;
    }
    let beta = T::from_f64(*s.add(krylov::BETA));
    with_lanes!(T, L => crate::device::stream_map::<T, 2, L>(n, [z, p], p, |[z, p]| blas::axpby(T::ONE, z, beta, p)))
}
