//! Mathematics shared by the CPU and GPU code of fem.
//!
//! Everything here is `#![no_std]` and free of allocation, so the same
//! functions compile for the host (CPU backend, tests) and for
//! `nvptx64-nvidia-cuda` (kernels): [`Real`] scalars, [`quadrature`] rules,
//! [`lagrange`] bases, the tensor-product reference [`element`] with its
//! geometry, the [`poisson`] element kernels, and [`unroll()`] for loops that
//! must be written out so their arrays stay in GPU registers.
#![cfg_attr(not(target_arch = "nvptx64"), deny(missing_docs))]
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(core_intrinsics))]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

pub mod contract;
pub mod element;
pub mod lagrange;
pub mod poisson;
pub mod quadrature;
pub mod physics;
pub mod real;
pub mod shape;
pub mod tensor;
pub mod unroll;

pub use real::Real;
pub use unroll::unroll;
