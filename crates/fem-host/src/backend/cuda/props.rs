//! Device properties read from the driver, with the theoretical memory
//! bandwidth that reports compare measured figures with.

use crate::Result;
use cudarc::driver::sys::CUdevice_attribute as A;
use cudarc::driver::CudaContext;
use serde::Serialize;
use std::sync::Arc;

/// What performance work needs to know about a GPU.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceProps {
    /// CUDA device index, as passed to [`CudaBackend::new`](super::CudaBackend::new).
    pub ordinal: usize,
    /// Product name reported by the driver (e.g. "NVIDIA H100 80GB HBM3").
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0) for Hopper; selects the embedded PTX.
    pub compute_capability: (u32, u32),
    /// Number of streaming multiprocessors; grid-stride launches size their grids by it.
    pub sm_count: u32,
    /// Largest block size a launch may use (threads).
    pub max_threads_per_block: u32,
    /// Shared memory a block gets without opting in (bytes).
    pub shared_mem_per_block: u32,
    /// Shared memory a block can get after opting in (bytes).
    pub shared_mem_per_block_optin: u32,
    /// Shared memory of one SM, shared by its resident blocks (bytes).
    pub shared_mem_per_sm: u32,
    /// L2 cache size (bytes).
    pub l2_cache_bytes: u32,
    /// Total device memory (bytes).
    pub total_memory_bytes: usize,
    /// Peak memory clock (kHz) and bus width (bits), when the driver reports them.
    pub memory_clock_khz: Option<u32>,
    /// Memory bus width (bits), when the driver reports it.
    pub memory_bus_width_bits: Option<u32>,
    /// 2 × clock × bus width (double data rate), bytes per second.
    pub theoretical_bandwidth: Option<f64>,
}

fn attr(ctx: &Arc<CudaContext>, a: A) -> Result<u32> {
    Ok(ctx.attribute(a)?.max(0) as u32)
}

/// Theoretical DRAM bandwidth in bytes/s from the memory clock and bus width.
pub fn theoretical_bandwidth(memory_clock_khz: u32, bus_width_bits: u32) -> f64 {
    2.0 * memory_clock_khz as f64 * 1e3 * bus_width_bits as f64 / 8.0
}

impl DeviceProps {
    /// Queries the device of `ctx`; the memory clock and bus width are `None`
    /// (and so is the bandwidth) when the driver reports them as missing or zero.
    pub fn read(ctx: &Arc<CudaContext>) -> Result<Self> {
        let (major, minor) = ctx.compute_capability()?;
        let nonzero = |v: Result<u32>| v.ok().filter(|&v| v > 0);
        let memory_clock_khz = nonzero(attr(ctx, A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE));
        let memory_bus_width_bits = nonzero(attr(ctx, A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH));
        Ok(Self {
            ordinal: ctx.ordinal(),
            name: ctx.name()?,
            compute_capability: (major as u32, minor as u32),
            sm_count: attr(ctx, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            max_threads_per_block: attr(ctx, A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            shared_mem_per_block: attr(ctx, A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            shared_mem_per_block_optin: attr(ctx, A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            shared_mem_per_sm: attr(ctx, A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
            l2_cache_bytes: attr(ctx, A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            total_memory_bytes: ctx.total_mem()?,
            memory_clock_khz,
            memory_bus_width_bits,
            theoretical_bandwidth: memory_clock_khz.zip(memory_bus_width_bits).map(|(c, w)| theoretical_bandwidth(c, w)),
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hbm3_bandwidth() {
        // H100 SXM: 2619 MHz, 5120-bit bus -> 3.35 TB/s.
        let bw = super::theoretical_bandwidth(2_619_000, 5120);
        assert!((bw / 1e12 - 3.352).abs() < 0.01, "{bw}");
    }
}
