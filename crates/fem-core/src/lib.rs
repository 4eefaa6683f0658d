//! Mathematics shared by the CPU and GPU code of fem.
//!
//! Everything here is `#![no_std]` and free of allocation, so the same
//! functions compile for the host (CPU backend, tests) and for
//! `nvptx64-nvidia-cuda` (kernels). Later modules add reference elements,
//! quadrature, bases and geometry on top of [`Real`].
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(core_intrinsics))]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

pub mod real;

pub use real::Real;
