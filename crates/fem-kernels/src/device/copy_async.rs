//! Asynchronous copies from global to shared memory (`cp.async`, sm_80):
//! the copy needs no register and the thread goes on at once, so a block
//! can fetch its next batch while it computes on the current one.
//!
//! A thread issues copies, closes them into a group with [`commit`], and
//! later waits for all but its newest groups with [`wait_all_but`]; a
//! barrier after the wait makes every thread's copies visible to the block.

use fem_core::Real;

/// Starts copying `*src` (global) into `*dst` (shared), both given as
/// generic pointers aligned to `T`.
///
/// # Safety
/// `src` points into global memory and `dst` into shared memory, both
/// valid for one `T`; `dst` is not read before the copy's group is waited.
#[inline(always)]
pub unsafe fn copy_async<T: Real>(dst: *mut T, src: *const T) {
    core::arch::asm!(
        "{{ .reg .u64 s, g; cvta.to.shared.u64 s, {d}; cvta.to.global.u64 g, {p}; cp.async.ca.shared.global [s], [g], {n}; }}",
        d = in(reg64) dst, p = in(reg64) src, n = const T::BYTES, options(nostack)
    );
}

/// Closes this thread's copies issued since the last commit into a group
/// (possibly empty, which keeps the group count regular).
#[inline(always)]
pub fn commit() {
    unsafe { core::arch::asm!("cp.async.commit_group;", options(nostack)) }
}

/// Waits until at most `N` of this thread's newest groups are still in
/// flight.
#[inline(always)]
pub fn wait_all_but<const N: u32>() {
    unsafe { core::arch::asm!("cp.async.wait_group {n};", n = const N, options(nostack)) }
}
