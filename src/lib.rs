//! fem: finite-element computation on NVIDIA GPUs, with a CPU backend.
//!
//! This facade is the crate a user adds (published as `fem-gpu`, used as
//! `fem`). It re-exports the workspace crates and the PTX that `fem-kernels`'
//! build script compiled from that crate, so [`open_backend`] gives a
//! ready GPU (or CPU) backend:
//!
//! ```
//! use fem::host::{Backend, BackendChoice};
//! let (backend, _why_not_gpu) = fem::open_backend(BackendChoice::Cpu).unwrap();
//! fem::host::with_backend!(&backend, |b| {
//!     let x = b.upload(&[3.0f64, 4.0]).unwrap();
//!     assert_eq!(b.norm2(&x).unwrap(), 5.0);
//! });
//! ```
//!
//! # Where to start
//!
//! - **Your own physics on the GPU, step by step**: [`guide`].
//! - **See it run**: `cargo run --release -- demo` solves a nonlinear
//!   problem on a Gmsh mesh on the GPU (or the CPU) and writes a `.vtu`
//!   and a picture; [`demo`] is its source, one short module from
//!   the file to the pictures, and the shape of a user's own program.
//! - **Meshes**: [`host::io::gmsh`] reads Gmsh files of MSH 2.2, 4.0 and
//!   4.1 (`fem mesh-info FILE` describes one), [`host::mesh`] generates
//!   boxes and refines them; physical groups select boundaries and
//!   material regions.
//! - **Your physics**: write pointwise functions with
//!   `#[fem_macros::fem_kernel]` (see [`kernels::physics`] for the shipped
//!   ones, and `examples/user-physics` in the repository for a crate of a
//!   user's own, compiled to PTX by `fem-build`), put boundary conditions
//!   on a [`host::space::Space`] with [`host::space::Constraints`] and
//!   [`host::space::Load`], then solve with
//!   [`host::problem::nonlinear::solve`] on either backend; or run
//!   `fem solve --mesh FILE --physics {poisson,elasticity}` ([`mesh_solve`]).
//! - **Linear solvers and formats**: [`host::solver`] (CG, BiCGStab,
//!   multigrid), [`host::sparse`] (CSR, ELL-WARP, cuSPARSE) and
//!   [`host::operator`] (assembled, element-matrix and matrix-free
//!   operators); `fem solve --help` lists what the command line reaches.
//! - **Output**: [`host::io::vtk`] for ParaView, [`picture`] for PNG
//!   pictures of fields, [`plot`] for charts.
//! - **Other crates**: the cargo features `faer`, `sprs`,
//!   `nalgebra-sparse` and `ndarray` convert matrices and fields
//!   ([`host::interop`]).

#![deny(missing_docs)]
pub use fem_core as core;
pub use fem_host as host;
pub use fem_kernels as kernels;

pub mod bench;
pub mod bp;
pub mod cardiac;
pub mod demo;
pub mod e2e;
pub mod expression;
pub mod guide;
pub mod huge_pages;
pub mod info;
pub mod mesh_solve;
pub mod picture;
pub mod plot;
pub mod residual;
pub mod solve;
pub mod spmv;

use fem_host::{AnyBackend, BackendChoice, CudaBackend};

/// The PTX of fem's kernels, which `fem-kernels`' build script compiled.
pub use fem_kernels::KERNELS_PTX;

/// Opens a backend with fem's embedded kernels. With
/// [`BackendChoice::Auto`] the second value says why the GPU was not used.
pub fn open_backend(choice: BackendChoice) -> fem_host::Result<(AnyBackend, Option<String>)> {
    AnyBackend::open(choice, &KERNELS_PTX)
}

/// [`open_backend`] on GPU `ordinal`.
pub fn open_backend_on(choice: BackendChoice, ordinal: usize) -> fem_host::Result<(AnyBackend, Option<String>)> {
    AnyBackend::open_on(choice, ordinal, &KERNELS_PTX)
}

/// Opens GPU `ordinal` with fem's embedded kernels.
pub fn cuda(ordinal: usize) -> fem_host::Result<CudaBackend> {
    CudaBackend::new(ordinal, &KERNELS_PTX)
}
