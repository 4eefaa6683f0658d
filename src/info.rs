//! What this build and machine offer: backends, the GPU, the embedded PTX.

use crate::KERNELS_PTX;
use fem_host::backend::cuda::device_count;
use fem_host::{Backend, CpuBackend, DeviceProps};
use serde::Serialize;

/// Whether one backend can be opened here.
#[derive(Serialize)]
pub struct BackendStatus {
    /// `cpu` or `cuda`.
    pub name: &'static str,
    /// Whether opening it succeeded.
    pub available: bool,
    /// Its description when available, else the error that prevented it.
    pub detail: String,
}

/// The embedded PTX of one virtual architecture.
#[derive(Serialize)]
pub struct PtxTarget {
    /// `sm_80`, `sm_90`, ...
    pub arch: &'static str,
    /// Names of the `.entry` kernels in the module.
    pub kernels: Vec<&'static str>,
    /// Size of the PTX text in bytes.
    pub bytes: usize,
}

/// The GPU kernels compiled into this binary.
#[derive(Serialize)]
pub struct PtxInfo {
    /// Package name of the kernel crate.
    pub kernel_crate: &'static str,
    /// One entry per architecture compiled for.
    pub targets: Vec<PtxTarget>,
    /// Why no PTX was built (toolchain missing, disabled), when none was.
    pub unavailable: Option<&'static str>,
}

/// What `fem info` prints, as text (`Display`) or JSON.
#[derive(Serialize)]
pub struct Info {
    /// The `fem` crate version.
    pub version: &'static str,
    /// The CPU and CUDA backends, in that order.
    pub backends: Vec<BackendStatus>,
    /// Properties of GPU 0, also read when the CUDA backend cannot open;
    /// `None` without a GPU.
    pub gpu: Option<DeviceProps>,
    /// The embedded PTX.
    pub ptx: PtxInfo,
}

/// Everything `fem info` reports. Opening the GPU is attempted so that its
/// status is the one a computation would meet.
pub fn gather() -> Info {
    let cpu = CpuBackend::new(None);
    let mut backends = vec![BackendStatus {
        name: "cpu",
        available: cpu.is_ok(),
        detail: cpu.map(|c| c.name()).unwrap_or_else(|e| e.to_string()),
    }];
    let (cuda, gpu) = match crate::cuda(0) {
        Ok(g) => (BackendStatus { name: "cuda", available: true, detail: format!("{} (PTX {})", g.name(), g.ptx_arch()) }, Some(g.props().clone())),
        Err(e) => {
            let gpu = device_count().ok().filter(|&n| n > 0).and_then(|_| cudarc_props().ok());
            (BackendStatus { name: "cuda", available: false, detail: e.to_string() }, gpu)
        }
    };
    backends.push(cuda);
    Info { version: env!("CARGO_PKG_VERSION"), backends, gpu, ptx: ptx_info() }
}

/// Properties of device 0 even when the backend cannot be opened (e.g. no PTX).
fn cudarc_props() -> fem_host::Result<DeviceProps> {
    let ctx = fem_host::backend::cuda::open_context(0)?;
    DeviceProps::read(&ctx)
}

/// The PTX embedded at build time, per architecture, without touching a GPU.
pub fn ptx_info() -> PtxInfo {
    PtxInfo {
        kernel_crate: KERNELS_PTX.crate_name,
        targets: KERNELS_PTX.sources.iter().map(|s| PtxTarget { arch: s.arch, kernels: s.entries(), bytes: s.ptx.len() }).collect(),
        unavailable: KERNELS_PTX.unavailable,
    }
}

impl std::fmt::Display for Info {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "fem {}", self.version)?;
        writeln!(f, "backends:")?;
        for b in &self.backends {
            let state = if b.available { "available" } else { "unavailable" };
            writeln!(f, "  {:<5} {state}: {}", b.name, b.detail)?;
        }
        match &self.gpu {
            Some(g) => {
                write!(f, "GPU 0: {} (compute capability {}.{}, {} SMs, {:.1} GiB, {} KiB shared memory per block opt-in",
                    g.name, g.compute_capability.0, g.compute_capability.1, g.sm_count,
                    g.total_memory_bytes as f64 / (1u64 << 30) as f64, g.shared_mem_per_block_optin / 1024)?;
                if let Some(bw) = g.theoretical_bandwidth {
                    write!(f, ", theoretical bandwidth {:.2} TB/s", bw / 1e12)?;
                }
                writeln!(f, ")")?;
            }
            None => writeln!(f, "GPU: none")?,
        }
        match self.ptx.unavailable {
            Some(why) => writeln!(f, "embedded PTX: none ({why})"),
            None => {
                for t in &self.ptx.targets {
                    writeln!(f, "embedded PTX: {} for {} ({} kernels, {} KiB)", self.ptx.kernel_crate, t.arch, t.kernels.len(), t.bytes / 1024)?;
                }
                Ok(())
            }
        }
    }
}
