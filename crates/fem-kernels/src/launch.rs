//! Launch geometry the host and the kernels agree on.
//!
//! Reductions keep one partial sum per block in shared memory slots of one
//! per warp; these constants fix the shapes so the host's launch
//! configuration and the kernels' assumptions cannot drift apart.

/// Threads in a warp on every NVIDIA GPU the project targets.
pub const WARP: u32 = 32;
/// Block size of element-wise and reduction kernels (a multiple of [`WARP`]).
pub const BLOCK: u32 = 256;
/// Block size of the final single-block reduction over partial sums.
pub const FINAL_BLOCK: u32 = 1024;
/// Largest number of warps in a block, hence shared-memory slots a block
/// reduction needs.
pub const MAX_WARPS: u32 = 1024 / WARP;

/// Values each thread of a prefix-sum kernel takes, consecutive.
pub const SCAN_ITEMS: usize = 8;
/// Values of one block's tile in the prefix sums: blocks of [`BLOCK`]
/// threads.
pub const SCAN_TILE: usize = BLOCK as usize * SCAN_ITEMS;

/// Bytes a streaming kernel moves per load instruction and thread (see
/// `device::stream`).
pub const PACKET_BYTES: usize = 16;

/// Items a streaming kernel's threads take one at a time: the packets
/// covering `n` elements of `elem_bytes` each.
pub fn packets(n: usize, elem_bytes: usize) -> usize {
    n.div_ceil(PACKET_BYTES / elem_bytes)
}

/// Blocks for a grid-stride kernel over `items`: enough for one item per
/// thread, capped at `max_blocks` (a few waves of the device's SMs) so the
/// per-block partials of a reduction stay few.
pub fn grid_blocks(items: usize, block: u32, max_blocks: u32) -> u32 {
    let needed = items.div_ceil(block as usize).max(1);
    needed.min(max_blocks.max(1) as usize) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_covers_and_caps() {
        assert_eq!(grid_blocks(0, 256, 100), 1);
        assert_eq!(grid_blocks(256, 256, 100), 1);
        assert_eq!(grid_blocks(257, 256, 100), 2);
        assert_eq!(packets(9, 4), 3);
        assert_eq!(packets(8, 8), 4);
        assert_eq!(packets(0, 8), 0);
        assert_eq!(grid_blocks(1 << 30, 256, 1056), 1056);
        assert_eq!(BLOCK % WARP, 0);
        assert!(MAX_WARPS * WARP >= FINAL_BLOCK);
    }
}
