//! Atomic add on device memory (`atom.add`, `red.add`), and the minimum
//! and maximum of `u32` (`red.min`, `red.max`).
//!
//! Generic addressing is used, so the pointer may be global or shared.
//! `red` (no return value) is what a scatter needs; `atom` returns the old
//! value.

/// `atomicAdd(p, v)` for `f64`, returning the previous value.
///
/// # Safety
/// `p` must be a valid, 8-byte aligned device pointer.
#[inline(always)]
pub unsafe fn atomic_add_f64(p: *mut f64, v: f64) -> f64 {
    let old: f64;
    core::arch::asm!("atom.add.f64 {o}, [{p}], {v};", o = out(reg64) old, p = in(reg64) p, v = in(reg64) v);
    old
}

/// `atomicAdd(p, v)` for `f32`, returning the previous value.
///
/// # Safety
/// `p` must be a valid, 4-byte aligned device pointer.
#[inline(always)]
pub unsafe fn atomic_add_f32(p: *mut f32, v: f32) -> f32 {
    let old: f32;
    core::arch::asm!("atom.add.f32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) p, v = in(reg32) v);
    old
}

/// `atomicAdd(p, v)` for `u32`, returning the previous value.
///
/// # Safety
/// `p` must be a valid, 4-byte aligned device pointer.
#[inline(always)]
pub unsafe fn atomic_add_u32(p: *mut u32, v: u32) -> u32 {
    let old: u32;
    core::arch::asm!("atom.add.u32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) p, v = in(reg32) v);
    old
}

/// Atomic add without the old value (`red.global.add`) to global memory,
/// for either precision: the scatter of element kernels.
///
/// # Safety
/// `p` must be a valid, aligned pointer to global memory.
#[inline(always)]
pub unsafe fn atomic_add<T: fem_core::Real>(p: *mut T, v: T) {
    if T::BYTES == 8 {
        let v = f64::from_bits(v.to_bits_u64());
        core::arch::asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; red.global.add.f64 [g], {v}; }}", p = in(reg64) p, v = in(reg64) v);
    } else {
        let v = f32::from_bits(v.to_bits_u64() as u32);
        core::arch::asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; red.global.add.f32 [g], {v}; }}", p = in(reg64) p, v = in(reg32) v);
    }
}

/// `atomicMin(p, v)` for `u32`, without the old value.
///
/// # Safety
/// `p` must be a valid, 4-byte aligned device pointer.
#[inline(always)]
pub unsafe fn atomic_min_u32(p: *mut u32, v: u32) {
    core::arch::asm!("red.min.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v);
}

/// `atomicMax(p, v)` for `u32`, without the old value.
///
/// # Safety
/// `p` must be a valid, 4-byte aligned device pointer.
#[inline(always)]
pub unsafe fn atomic_max_u32(p: *mut u32, v: u32) {
    core::arch::asm!("red.max.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v);
}
