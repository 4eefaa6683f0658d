//! Dynamic shared memory: the bytes a launch asks for with
//! `shared_mem_bytes`, declared once for the whole module.

core::arch::global_asm!(".extern .shared .align 16 .b8 fem_dynamic_smem[];");

/// Generic pointer to the block's dynamic shared memory, viewed as `T`.
///
/// The region is 16-byte aligned and as large as the launch's
/// `shared_mem_bytes`; indexing past that is undefined behaviour.
#[inline(always)]
pub fn dynamic_shared<T>() -> *mut T {
    let p: u64;
    unsafe { core::arch::asm!("cvta.shared.u64 {p}, fem_dynamic_smem;", p = out(reg64) p) };
    p as *mut T
}
