//! Operators on a lattice of nodes numbered x fastest that are tensor
//! products `A_z ⊗ A_y ⊗ A_x` of 1D sparse matrices: applied one axis at
//! a time, each pass a 1D matrix along one axis of a 3D array
//! ([`axis_entry`], one output entry a call, shared by the CPU and the
//! GPU kernel `fem_lattice_axis_<precision>`). p-multigrid's transfers
//! between the degrees of one spectral-element grid are such products:
//! their 1D matrices hold a few entries a row, where the assembled 3D
//! transfer holds their product.

use fem_core::Real;

/// The lattice coordinates of entry `i` of an array of `dims`, x fastest.
#[inline(always)]
pub fn coordinates(i: usize, dims: [usize; 3]) -> [usize; 3] {
    [i % dims[0], (i / dims[0]) % dims[1], i / (dims[0] * dims[1])]
}

/// Entry `i` of `y = A along axis `axis` of `x``: `y` has dims `out`, `x`
/// has dims `inp`, the two equal but along `axis`, where `y` has `A`'s
/// `out[axis]` rows and `x` its `inp[axis]` columns; `A` is CSR (`ptr`,
/// `col`, `val`, columns below `inp[axis]`).
///
/// # Safety
/// `i` is below `out`'s product; `ptr` has `out[axis] + 1` offsets into
/// `col` and `val`; `x` holds `inp`'s product of values.
#[inline(always)]
pub unsafe fn axis_entry<T: Real>(i: usize, out: [usize; 3], inp: [usize; 3], axis: usize, ptr: *const u32, col: *const u32, val: *const T, x: *const T) -> T {
    let mut c = coordinates(i, out);
    let row = c[axis];
    c[axis] = 0;
    let base = c[0] + inp[0] * (c[1] + inp[1] * c[2]);
    let stride = match axis {
        0 => 1,
        1 => inp[0],
        _ => inp[0] * inp[1],
    };
    let mut sum = T::ZERO;
    for k in *ptr.add(row) as usize..*ptr.add(row + 1) as usize {
        sum = (*val.add(k)).mad(*x.add(base + *col.add(k) as usize * stride), sum);
    }
    sum
}
