//! Scalars the backends store and move: [`fem_core::Real`] plus what cudarc
//! needs to put them in device memory and pass them to kernels.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use fem_core::Real;

/// `f32` or `f64`, usable on every backend.
pub trait Scalar: Real + DeviceRepr + ValidAsZeroBits + Unpin {}

impl Scalar for f32 {}
impl Scalar for f64 {}
