//! fem: finite-element computation on NVIDIA GPUs, with a CPU backend.
//!
//! This facade is the crate a user adds. It re-exports the workspace
//! crates and embeds the PTX that the build script compiled from
//! `fem-kernels`, so [`open_backend`] gives a ready GPU (or CPU) backend:
//!
//! ```
//! use fem::host::{Backend, BackendChoice};
//! let (backend, _why_not_gpu) = fem::open_backend(BackendChoice::Cpu).unwrap();
//! fem::host::with_backend!(&backend, |b| {
//!     let x = b.upload(&[3.0f64, 4.0]).unwrap();
//!     assert_eq!(b.norm2(&x).unwrap(), 5.0);
//! });
//! ```

#![deny(missing_docs)]
pub use fem_core as core;
pub use fem_host as host;
pub use fem_kernels as kernels;

pub mod bench;
pub mod bp;
pub mod cardiac;
pub mod demo;
pub mod info;
pub mod picture;
pub mod plot;
pub mod residual;
pub mod solve;
pub mod spmv;

use fem_host::{AnyBackend, BackendChoice, CudaBackend};

include!(concat!(env!("OUT_DIR"), "/fem_kernels_ptx.rs"));

/// Opens a backend with fem's embedded kernels. With
/// [`BackendChoice::Auto`] the second value says why the GPU was not used.
pub fn open_backend(choice: BackendChoice) -> fem_host::Result<(AnyBackend, Option<String>)> {
    AnyBackend::open(choice, &KERNELS_PTX)
}

/// Opens GPU `ordinal` with fem's embedded kernels.
pub fn cuda(ordinal: usize) -> fem_host::Result<CudaBackend> {
    CudaBackend::new(ordinal, &KERNELS_PTX)
}
