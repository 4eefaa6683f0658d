//! The per-step kernels of the monodomain solver besides its `#[fem_kernel]`
//! residual and tangent: the point-history update after a converged step
//! and the Jacobi preconditioner read off the assembled values.

use crate::device::*;
use crate::physics::cardiac::{activation, advance_cell, AUX};
use crate::sparse::gathered;
use fem_core::Real;
use fem_macros::kernel;

/// [`advance_cell`] for every cell: `u` holds the cells' `nl` values
/// (E-vector), `aux` their [`AUX`] point values, updated in place; the
/// stimulus of cell `c` for the next step is `amp[c] · on`.
#[kernel(f64)]
pub unsafe fn cardiac_advance<T: Real>(n_cells: usize, nl: usize, u: *const T, aux: *mut T, amp: *const T, on: T) {
    let mut c = global_idx_x();
    while c < n_cells {
        let cell_u = core::slice::from_raw_parts(u.add(c * nl), nl);
        let a = core::slice::from_raw_parts_mut(aux.add(c * AUX), AUX);
        advance_cell(cell_u, a, *amp.add(c) * on);
        c += grid_size_x();
    }
}

/// `inv[i] = 1 / vals[pos[i]]`: the inverse diagonal of an assembled
/// matrix whose diagonal entries sit at `pos`.
#[kernel(f32, f64)]
pub unsafe fn inverse_gathered<T: Real>(n: usize, pos: *const u32, vals: *const T, inv: *mut T) {
    let mut i = global_idx_x();
    while i < n {
        *inv.add(i) = T::ONE / gathered(i, pos, vals);
        i += grid_size_x();
    }
}

/// [`activation`] for every node.
#[kernel(f64)]
pub unsafe fn cardiac_activation<T: Real>(n: usize, prev: *const T, phi: *const T, t: T, dt: T, act: *mut T) {
    let mut i = global_idx_x();
    while i < n {
        *act.add(i) = activation(*prev.add(i), *phi.add(i), t, dt, *act.add(i));
        i += grid_size_x();
    }
}
