//! Mathematics shared by the CPU and GPU code of fem.
//!
//! Everything here is `#![no_std]` and free of allocation, so the same
//! functions compile for the host (CPU backend, tests) and for
//! `nvptx64-nvidia-cuda` (kernels): [`Real`] scalars, [`quadrature`] rules,
//! [`lagrange`] bases, the tensor-product reference [`element`] with its
//! geometry, and the [`poisson`] element kernels.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(core_intrinsics))]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

pub mod element;
pub mod lagrange;
pub mod poisson;
pub mod quadrature;
pub mod real;

pub use real::Real;
