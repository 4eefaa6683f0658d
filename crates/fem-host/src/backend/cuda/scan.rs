//! Exclusive prefix sums of `u32` on the device (the kernels of
//! `fem_kernels`' `scan` module): the offsets of compacted arrays, such as
//! the numbers of aggregates and the row offsets of a sparse matrix built
//! row by row.

use super::CudaBackend;
use crate::Result;
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use fem_kernels::launch::{BLOCK, SCAN_TILE, WARP};

impl CudaBackend {
    /// `out[i]` = the sum of `x[..i]` for every `i ≤ n` (`n + 1` values),
    /// and that sum over all of `x`, read back. Sums past `u32::MAX` wrap:
    /// callers count rows or entries that fit a `u32` index.
    pub fn exclusive_scan(&self, x: &CudaSlice<u32>) -> Result<(CudaSlice<u32>, u32)> {
        let n = x.len();
        let tiles = n.div_ceil(SCAN_TILE).max(1);
        let s = self.stream();
        let mut totals = s.alloc_zeros::<u32>(tiles + 1)?;
        let mut out = s.alloc_zeros::<u32>(n + 1)?;
        let shared = (BLOCK / WARP) * 4;
        let cfg = LaunchConfig { grid_dim: (tiles as u32, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: shared };
        let one = LaunchConfig { grid_dim: (1, 1, 1), ..cfg };
        unsafe {
            s.launch_builder(&self.function("fem_scan_totals")?).arg(&n).arg(x).arg(&mut totals).launch(cfg)?;
            s.launch_builder(&self.function("fem_scan_offsets")?).arg(&tiles).arg(&mut totals).launch(one)?;
            s.launch_builder(&self.function("fem_scan_apply")?).arg(&n).arg(&tiles).arg(x).arg(&totals).arg(&mut out).launch(cfg)?;
        }
        let total = s.clone_dtoh(&out.slice(n..))?[0];
        Ok((out, total))
    }
}
