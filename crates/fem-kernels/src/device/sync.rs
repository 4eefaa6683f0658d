//! Barriers and fences.

/// `__syncthreads()`: every thread of the block waits here, and shared
/// memory writes before it are visible after it. All threads of the block
/// must reach the same call.
#[inline(always)]
pub fn sync_threads() {
    unsafe { core::arch::nvptx::_syncthreads() }
}

/// `barrier.sync 0`: the block barrier without `.aligned`, for kernels
/// whose barriers follow per-thread branches (`if j < n { .. } barrier;`).
/// LLVM may merge such branches and duplicate the barrier into both arms;
/// the aligned `bar.sync` then deadlocks a warp whose threads took
/// different arms, while `barrier.sync` counts each thread's arrival
/// wherever it happens (sm_70 and later).
#[inline(always)]
pub fn barrier() {
    unsafe { core::arch::asm!("barrier.sync 0;") }
}

/// `__syncwarp()` over the full warp.
#[inline(always)]
pub fn sync_warp() {
    unsafe { core::arch::asm!("bar.warp.sync 0xffffffff;") }
}

/// `__threadfence()`: orders this thread's global writes for the device.
#[inline(always)]
pub fn fence_device() {
    unsafe { core::arch::asm!("fence.acq_rel.gpu;") }
}

/// `__threadfence_block()`.
#[inline(always)]
pub fn fence_block() {
    unsafe { core::arch::asm!("fence.acq_rel.cta;") }
}
