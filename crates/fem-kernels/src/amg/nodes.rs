//! The node graph of a vector field (`block` interleaved unknowns a
//! node): node `i` couples to node `j` where any of its rows holds a
//! column of `j`'s, with the Frobenius norm of the `block × block`
//! coupling as its weight. Strength of connection and aggregation then
//! treat a node's components as one, so no aggregate splits them.

/// Unknowns per node the set-up takes at most (3D elasticity's coarse
/// levels carry six, one per rigid-body mode).
pub const MAX_BLOCK: usize = 16;

/// Node `i`'s couplings, ascending, from rows `i·block..(i+1)·block` of a
/// CSR operator with sorted rows: `f(j, Σ a_rc²)` over the entries of
/// every node `j` they touch (the sum is not taken where `val` is null:
/// counting needs the columns only). Returns their number. The rows are
/// merged as sorted lists, so no row need hold every node of the others.
///
/// # Safety
/// `block ≤ MAX_BLOCK`; the rows' `row_ptr`, `col` (and `val` unless null)
/// readable.
#[inline(always)]
pub unsafe fn node_couplings(i: usize, block: usize, row_ptr: *const u32, col: *const u32, val: *const f64, mut f: impl FnMut(u32, f64)) -> u32 {
    let (mut head, mut end) = ([0usize; MAX_BLOCK], [0usize; MAX_BLOCK]);
    for c in 0..block {
        head[c] = *row_ptr.add(i * block + c) as usize;
        end[c] = *row_ptr.add(i * block + c + 1) as usize;
    }
    let b = block as u32;
    let mut count = 0;
    loop {
        let mut j = u32::MAX;
        for c in 0..block {
            if head[c] < end[c] {
                j = j.min(*col.add(head[c]) / b);
            }
        }
        if j == u32::MAX {
            return count;
        }
        let mut s = 0.0;
        for c in 0..block {
            while head[c] < end[c] && *col.add(head[c]) / b == j {
                if !val.is_null() {
                    let v = *val.add(head[c]);
                    s += v * v;
                }
                head[c] += 1;
            }
        }
        f(j, s);
        count += 1;
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::{vec, vec::Vec};

    /// Two nodes of two unknowns whose rows touch different nodes: the
    /// merge finds both nodes for each, with the blocks' squared norms.
    #[test]
    fn rows_merge_into_node_couplings() {
        // row 0: (0, 1) (1, 2) (2, 3); row 1: (1, 4) ; rows 2, 3: (3, 5) / (0, 6) (3, 7)
        let row_ptr = [0u32, 3, 4, 5, 7];
        let col = [0u32, 1, 2, 1, 3, 0, 3];
        let val = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
        let mut got = Vec::new();
        let n = unsafe { node_couplings(0, 2, row_ptr.as_ptr(), col.as_ptr(), val.as_ptr(), |j, s| got.push((j, s))) };
        assert_eq!((n, got), (2, vec![(0, 1.0 + 4.0 + 16.0), (1, 9.0)]));
        let mut got = Vec::new();
        let n = unsafe { node_couplings(1, 2, row_ptr.as_ptr(), col.as_ptr(), core::ptr::null(), |j, s| got.push((j, s))) };
        assert_eq!((n, got), (2, vec![(0, 0.0), (1, 0.0)]));
    }
}
