//! Host side of fem: backends, device buffers, kernel launch and timing.
//!
//! The pipeline reads in module order as later issues fill it in:
//! mesh → space → operator → solver → backend. This crate currently holds
//! the bottom layer:
//!
//! * [`backend`]: the [`Backend`] trait with the CPU backend (rayon, running
//!   the per-item functions of `fem-kernels`) and the CUDA backend (cudarc,
//!   running the same functions compiled to PTX).
//! * [`roofline`]: the device-to-device copy probe every performance figure
//!   is divided by.
//! * [`timing`]: repeated measurements with warm-up and medians.
//! * [`conformance`]: the test suite every backend must pass, written once.
//!
//! ```
//! use fem_host::{Backend, CpuBackend};
//! let cpu = CpuBackend::new(None).unwrap();
//! let x = cpu.upload(&[1.0f64, 2.0, 3.0]).unwrap();
//! let mut y = cpu.upload(&[1.0f64, 1.0, 1.0]).unwrap();
//! cpu.axpy(2.0, &x, &mut y).unwrap();
//! assert_eq!(cpu.download(&y).unwrap(), vec![3.0, 5.0, 7.0]);
//! assert_eq!(cpu.dot(&x, &x).unwrap(), 14.0);
//! ```

#![deny(missing_docs)]
pub mod backend;
pub mod conformance;
pub mod counters;
pub mod distributed;
pub mod error;
pub mod interop;
pub mod io;
pub mod memory;
pub mod mesh;
pub mod operator;
pub mod problem;
pub mod rng;
pub mod roofline;
pub mod scalar;
pub mod solver;
pub mod sparse;
pub mod space;
pub mod stages;
pub mod timing;
pub mod tune;

pub use backend::cpu::CpuBackend;
pub use backend::cuda::{CudaBackend, DeviceProps};
pub use backend::{AnyBackend, Backend, BackendChoice, BackendKind};
pub use error::{Error, Result};
pub use fem_build::{PtxSet, PtxSource};
pub use scalar::Scalar;
/// The CUDA driver bindings the CUDA backend is built on, for launching
/// kernels of a user's own PTX through [`CudaBackend::stream`].
pub use cudarc;
