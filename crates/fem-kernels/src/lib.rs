//! Kernels of fem, one source for the CPU and the GPU.
//!
//! * [`blas`] and the other top-level modules hold the mathematics as small
//!   `#[inline(always)]` per-item functions. The CPU backend (rayon) calls
//!   them directly; the GPU entry points call the same functions.
//! * `device` (only on `nvptx64`) is the device prelude: thread indices,
//!   shared memory, barriers, warp shuffles, atomics and fast math.
//! * `gpu` (only on `nvptx64`, with the `entry-points` feature) holds the
//!   `extern "ptx-kernel"` entry points,
//!   named mechanically (`fem_<kernel>_<precision>`) by
//!   [`fem_macros::kernel`].
//!
//! The crate is `#![no_std]`; the root build script compiles it to PTX with
//! rustc's NVPTX backend and the host library embeds the result.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

pub mod blas;
pub mod cells;
pub mod launch;
pub mod sparse;
pub mod tensor;

#[cfg(target_arch = "nvptx64")]
pub mod device;

#[cfg(all(target_arch = "nvptx64", feature = "entry-points"))]
mod gpu;

/// A panic in a kernel (an out-of-bounds slice index, say) aborts the
/// launch with an illegal-instruction error the host reports.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe { core::arch::nvptx::trap() }
}
