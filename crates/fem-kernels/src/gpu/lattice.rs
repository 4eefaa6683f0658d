//! A 1D matrix along one axis of a lattice ([`crate::lattice`]).

use crate::device::grid_stride_fold;
use crate::lattice::axis_entry;
use fem_core::Real;
use fem_macros::kernel;

/// `y = A along axis `axis` of `x``, one thread an entry of `y` (dims
/// `o0 × o1 × o2`; `x`'s are `i0 × i1 × i2`): [`axis_entry`].
#[kernel(f32, f64)]
pub unsafe fn lattice_axis<T: Real>(o0: usize, o1: usize, o2: usize, i0: usize, i1: usize, i2: usize, axis: usize, ptr: *const u32, col: *const u32, val: *const T, x: *const T, y: *mut T) {
    let (out, inp) = ([o0, o1, o2], [i0, i1, i2]);
    grid_stride_fold(o0 * o1 * o2, (), |(), i| *y.add(i) = axis_entry(i, out, inp, axis, ptr, col, val, x));
}
