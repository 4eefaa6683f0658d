//! The sparsity pattern of a matrix assembled from element matrices, one
//! row at a time: a free row's columns are the free rows of the cells
//! around it, ascending and each once; a fixed row holds its diagonal
//! alone. The device builds it row by row in parallel with no sort of
//! candidate lists, each row in a thread's own memory. (A host core,
//! with memory to mark the columns a row has, keeps each once by its mark
//! and sorts them: `Csr::pattern`, checked against this one by the GPU
//! tests.)

use crate::sparse::{is_free, row_of};

/// Most columns of a row the device's pattern collects in a thread's own
/// memory (a Q2 hexahedral vertex row holds 125, a Q1 one 27); rows past
/// it have their pattern built on the host.
pub const DEVICE_ROW_COLUMNS: usize = 256;

/// Inserts `v` into the ascending, distinct `x[..len]` unless it is there
/// already; the new length, or `None` where it would pass `cap`.
///
/// # Safety
/// `x` valid for `cap` values.
#[inline(always)]
pub unsafe fn insert_distinct(x: *mut u32, len: usize, cap: usize, v: u32) -> Option<usize> {
    let a = match core::slice::from_raw_parts(x, len).binary_search(&v) {
        Ok(_) => return Some(len),
        Err(a) => a,
    };
    if len == cap {
        return None;
    }
    let mut j = len;
    while j > a {
        *x.add(j) = *x.add(j - 1);
        j -= 1;
    }
    *x.add(a) = v;
    Some(len + 1)
}

/// The columns of a free row whose cells' map entries are `entries`
/// ([`crate::sparse`]'s map: a row, flagged fixed, or [`NONE`](crate::sparse::NONE)): the free
/// rows among them, ascending and distinct, in `out[..n]`. Returns `n`,
/// or `None` where there are more than `cap`.
///
/// # Safety
/// `out` valid for `cap` values.
#[inline(always)]
pub unsafe fn row_columns(entries: impl Iterator<Item = u32>, out: *mut u32, cap: usize) -> Option<usize> {
    let mut n = 0;
    for m in entries {
        if is_free(m) {
            n = insert_distinct(out, n, cap, row_of(m) as u32)?;
        }
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::{FIXED, NONE};

    /// Duplicates kept once, eliminated and fixed entries left out,
    /// ascending; one column past the capacity refused.
    #[test]
    fn row_columns_are_the_distinct_free_rows() {
        let entries = [7, NONE, 3, 7 | FIXED, 9, 3, 0, 9, 5 | FIXED, 2];
        let mut out = [0u32; 8];
        let n = unsafe { row_columns(entries.iter().copied(), out.as_mut_ptr(), 8) }.unwrap();
        assert_eq!(&out[..n], &[0, 2, 3, 7, 9]);
        assert_eq!(unsafe { row_columns(entries.iter().copied(), out.as_mut_ptr(), 5) }, Some(5));
        assert_eq!(unsafe { row_columns(entries.iter().copied(), out.as_mut_ptr(), 4) }, None);
        assert_eq!(unsafe { row_columns([NONE, 1 | FIXED].into_iter(), out.as_mut_ptr(), 0) }, Some(0));
    }
}
