//! The conjugate gradient method's device-side steps: its scalars stay in
//! a small `f64` array on the device ([`crate::krylov`]), so an iteration
//! launches work without waiting for the host.

use crate::device::{atomic_add_u32, block_dim_x, block_idx_x, block_sum, dynamic_shared, fence_device, global_idx_x, grid_dim_x, stream_reduce, stream_update, sync_threads, thread_idx_x};
use crate::krylov::{self, PQ, RZ, STATUS};
use crate::{blas, with_lanes};
use fem_core::Real;
use fem_macros::kernel;

/// `s[slot] = Σ_{i<n} xᵢyᵢ`: each block writes its partial, and the last
/// block to finish ([`last_block`]) sums the partials in order, so the
/// result stays on the device in one launch and does not depend on which
/// block came last. Shared memory as for `block_sum`.
#[kernel(f32, f64)]
pub unsafe fn dot_to_slot<T: Real>(n: usize, x: *const T, y: *const T, partial: *mut T, ticket: *mut u32, s: *mut f64, slot: usize) {
    let acc = with_lanes!(T, L => stream_reduce::<T, 2, L>(n, [x, y], |a, [p, q]| blas::dot_term(a, p, q)));
    let v = block_sum(acc);
    if thread_idx_x() == 0 {
        *partial.add(block_idx_x()) = v;
    }
    if last_block(ticket) {
        let total = sum_partials(partial, grid_dim_x());
        if thread_idx_x() == 0 {
            *s.add(slot) = total.to_f64();
        }
    }
}

/// `x ← x + αp`, `r ← r − αq` with α = `s[RZ] / s[PQ]`, then with an
/// inverse diagonal `d` (not null) `z ← d∘r`; `s[RR] = r·r` and
/// `s[RZN] = r·z` (`r·r` without `d`) over the rows below `owned`,
/// summed by the last block as in [`dot_to_slot`], which then, given a
/// `history` (not null), also closes the iteration
/// ([`krylov::advance`]). Nothing is written once the solve has stopped.
#[kernel(f32, f64)]
pub unsafe fn cg_update<T: Real>(n: usize, owned: usize, s: *mut f64, p: *const T, q: *const T, x: *mut T, r: *mut T, d: *const T, z: *mut T, partial: *mut T, ticket: *mut u32, history: *mut f64) {
    // every block reads the scalars before any block can reach the end,
    // where the last one changes them
    let Some(alpha) = krylov::step_length(*s.add(STATUS), *s.add(RZ), *s.add(PQ)) else {
        // stopped, or p·Ap ≤ 0, which closing reports (the other blocks
        // return here either way)
        if !history.is_null() && global_idx_x() == 0 {
            close(s, history);
        }
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
    let blocks = grid_dim_x();
    if thread_idx_x() == 0 {
        *partial.add(block_idx_x()) = rr;
        *partial.add(blocks + block_idx_x()) = rz;
    }
    if last_block(ticket) {
        let rr = sum_partials(partial, blocks);
        let rz = sum_partials(partial.add(blocks), blocks);
        if thread_idx_x() == 0 {
            *s.add(krylov::RR) = rr.to_f64();
            *s.add(krylov::RZN) = rz.to_f64();
            if !history.is_null() {
                close(s, history);
            }
        }
    }
}

/// Whether this block is the last of the launch to get here, once every
/// block's thread 0 has written its partials: a fence, then a ticket
/// (reset by the last block for the next launch).
unsafe fn last_block(ticket: *mut u32) -> bool {
    let flag = dynamic_shared::<u32>();
    if thread_idx_x() == 0 {
        fence_device();
        let last = atomic_add_u32(ticket, 1) as usize + 1 == grid_dim_x();
        if last {
            *ticket = 0;
        }
        *flag = last as u32;
    }
    sync_threads();
    let last = *flag != 0;
    // the slots are block_sum's again
    sync_threads();
    last
}

/// `Σ partial[..blocks]` in one block, in a fixed order, read past the
/// caches: other blocks of this launch wrote them.
unsafe fn sum_partials<T: Real>(partial: *const T, blocks: usize) -> T {
    let mut acc = T::ZERO;
    let mut i = thread_idx_x();
    while i < blocks {
        acc += core::ptr::read_volatile(partial.add(i));
        i += block_dim_x();
    }
    block_sum(acc)
}

/// [`krylov::advance`] on the device's scalars, recording the residual.
unsafe fn close(s: *mut f64, history: *mut f64) {
    if let Some((k, res)) = krylov::advance(&mut *(s as *mut [f64; krylov::SLOTS])) {
        *history.add(k) = res;
    }
}

/// Closes an iteration on the scalars ([`krylov::advance`]) and records
/// its relative residual in `history`; one thread.
#[kernel]
pub unsafe fn cg_advance(s: *mut f64, history: *mut f64) {
    if global_idx_x() == 0 {
        close(s, history);
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
