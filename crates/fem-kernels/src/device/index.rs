//! Thread, block and grid indices (PTX special registers `%tid`, `%ctaid`,
//! `%ntid`, `%nctaid`, `%laneid`).

use core::arch::nvptx;

macro_rules! special {
    ($(#[$doc:meta] $name:ident => $intr:ident;)*) => {$(
        #[$doc]
        #[inline(always)]
        pub fn $name() -> usize {
            unsafe { nvptx::$intr() as usize }
        }
    )*};
}

special! {
    /// `threadIdx.x`
    thread_idx_x => _thread_idx_x;
    /// `threadIdx.y`
    thread_idx_y => _thread_idx_y;
    /// `threadIdx.z`
    thread_idx_z => _thread_idx_z;
    /// `blockIdx.x`
    block_idx_x => _block_idx_x;
    /// `blockIdx.y`
    block_idx_y => _block_idx_y;
    /// `blockIdx.z`
    block_idx_z => _block_idx_z;
    /// `blockDim.x`
    block_dim_x => _block_dim_x;
    /// `blockDim.y`
    block_dim_y => _block_dim_y;
    /// `blockDim.z`
    block_dim_z => _block_dim_z;
    /// `gridDim.x`
    grid_dim_x => _grid_dim_x;
    /// `gridDim.y`
    grid_dim_y => _grid_dim_y;
    /// `gridDim.z`
    grid_dim_z => _grid_dim_z;
}

/// Global index of this thread in a 1D launch.
#[inline(always)]
pub fn global_idx_x() -> usize {
    block_idx_x() * block_dim_x() + thread_idx_x()
}

/// Threads in a 1D grid: the step of a grid-stride loop.
#[inline(always)]
pub fn grid_size_x() -> usize {
    grid_dim_x() * block_dim_x()
}

/// Lane of this thread in its warp (0..32).
#[inline(always)]
pub fn lane_id() -> u32 {
    let lane: u32;
    unsafe { core::arch::asm!("mov.u32 {l}, %laneid;", l = out(reg32) lane) };
    lane
}

/// Warp of this thread within a 1D block.
#[inline(always)]
pub fn warp_id_x() -> usize {
    thread_idx_x() / crate::launch::WARP as usize
}
