//! Device prelude: what a kernel needs beyond `core`, each a thin wrapper
//! over one PTX instruction or special register.
//!
//! | module | holds |
//! | --- | --- |
//! | [`index`] | thread, block and grid indices; lane and warp ids |
//! | [`grid`] | the grid-stride loop |
//! | [`stream`] | element-wise map and reduction with 16-byte vector loads |
//! | [`shared`] | the block's dynamic shared memory |
//! | [`copy_async`] | global-to-shared copies that need no register (`cp.async`) |
//! | [`sync`] | block and warp barriers, memory fences |
//! | [`warp`] | shuffles (down, xor) for 32- and 64-bit values, warp sums |
//! | [`block`] | block-wide sum through shuffles and shared memory |
//! | [`atomic`] | atomic add for `f32`, `f64`, `u32`; min and max of `u32` |
//! | [`fast_math`] | approximate transcendental instructions (`*.approx`) |
//! | [`lines`] | tensor-product line contractions and an element's shared work |
//!
//! Everything here is only compiled for `nvptx64`. The CPU backend never
//! needs it: it calls the per-item functions of the crate directly.

pub mod atomic;
pub mod block;
pub mod copy_async;
pub mod fast_math;
pub mod grid;
pub mod index;
pub mod lines;
pub mod shared;
pub mod stream;
pub mod sync;
pub mod warp;

pub use atomic::*;
pub use block::*;
pub use grid::*;
pub use index::*;
pub use shared::*;
pub use stream::*;
pub use sync::*;
pub use warp::*;
