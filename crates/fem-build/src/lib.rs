//! Compiles a `#![no_std]` kernel crate to PTX from a build script, with
//! rustc's own NVPTX backend.
//!
//! This is what `fem-kernels`' `build.rs` uses for itself, and what a
//! user's `build.rs` calls for a kernel crate of their own:
//!
//! ```no_run
//! // build.rs of a crate that embeds the PTX of ../my-kernels
//! let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
//! let build = fem_build::PtxBuilder::new("../my-kernels").arch("sm_80").build_or_warn();
//! build.write_embedding(&out.join("my_kernels_ptx.rs"), "MY_KERNELS_PTX").unwrap();
//! // in the crate: include!(concat!(env!("OUT_DIR"), "/my_kernels_ptx.rs"));
//! // gives MY_KERNELS_PTX: fem_build::PtxSet, to hand to fem_host's CUDA backend.
//! ```
//!
//! The recipe: Debian's `rustc-web` (whose library source `rust-web-src`
//! matches it exactly) builds `core` for `nvptx64-nvidia-cuda` with
//! `-Zbuild-std=core`; the crate is linked as a `cdylib` with fat LTO, so
//! one `.s` file holds every kernel and the parts of `core` they use, and
//! `-C linker=/bin/true` skips the bitcode linker that is not installed.
//! The device target directory is kept between builds, so `core` is built
//! once (about a minute) and later builds only recompile the kernels.

#![deny(missing_docs)]
mod builder;
mod embed;
mod env;
mod toolchain;

pub use builder::{PtxArtifact, PtxBuild, PtxBuilder};
pub use embed::{PtxSet, PtxSource, SplitPtx};
pub use toolchain::{Toolchain, ToolchainError, INSTALL_HINT};
