//! Asynchronous copies from global to shared memory (`cp.async`, sm_80):
//! the copy needs no register and the thread goes on at once, so a block
//! can fetch its next batch while it computes on the current one.
//!
//! A thread issues copies, closes them into a group with [`commit`], and
//! later waits for all but its newest groups with [`wait_all_but`]; a
//! barrier after the wait makes every thread's copies visible to the block.

use fem_core::Real;

/// The address of `p` in the shared window (32 bits) and in the global
/// window, converted once so a loop of [`copy_async_16_at`] only adds
/// offsets.
#[inline(always)]
pub fn windows<T>(shared: *mut T, global: *const T) -> (u32, u64) {
    let (s, g): (u32, u64);
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 t; cvta.to.shared.u64 t, {d}; cvt.u32.u64 {s}, t; cvta.to.global.u64 {g}, {p}; }}",
            d = in(reg64) shared, p = in(reg64) global, s = out(reg32) s, g = out(reg64) g, options(nostack, pure, nomem)
        )
    };
    (s, g)
}

/// Starts copying 16 bytes from global address `g` into shared address
/// `s` (both from [`windows`]), bypassing L1 (`.cg`): a quarter (f32) or
/// half (f64) of the copy instructions of [`copy_async_at`] for the same
/// bytes.
///
/// # Safety
/// As [`copy_async_at`], with both addresses 16-byte aligned and valid for
/// 16 bytes.
#[inline(always)]
pub unsafe fn copy_async_16_at(s: u32, g: u64) {
    core::arch::asm!("cp.async.cg.shared.global [{s}], [{g}], 16;", s = in(reg32) s, g = in(reg64) g, options(nostack));
}

/// Starts copying one `T` from global address `g` into shared address
/// `s` (both from [`windows`]), aligned to `T`.
///
/// # Safety
/// `g` and `s` are valid for one `T`; `s` is not read before the copy's
/// group is waited.
#[inline(always)]
pub unsafe fn copy_async_at<T: Real>(s: u32, g: u64) {
    core::arch::asm!("cp.async.ca.shared.global [{s}], [{g}], {n};", s = in(reg32) s, g = in(reg64) g, n = const T::BYTES, options(nostack));
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
