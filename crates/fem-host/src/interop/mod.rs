//! fem's matrices and fields in the crates a Rust user already holds
//! theirs in, each behind the cargo feature of the crate's name:
//! `faer` (`SparseRowMat<u32, T>`), `sprs` (`CsMatI<T, u32>`),
//! `nalgebra-sparse` (`CsrMatrix<T>`) for assembled [`Csr`] matrices, and
//! `ndarray` for fields (node-major values, one row per node).
//!
//! Conversions move the buffers where the other crate's layout is fem's
//! (CSR with `u32` indices: faer and sprs both ways, ndarray fields both
//! ways); nalgebra-sparse stores `usize` indices, so its indices are
//! converted and its values moved. Every conversion checks the structure
//! first (offsets, sorted unique columns within range, `u32` range) and
//! returns [`Error::InvalidArgument`] instead of letting the other crate
//! panic. Matrix Market stays the exchange format for files
//! ([`crate::io::matrix_market`]).

#[cfg(feature = "faer")]
mod faer;
#[cfg(feature = "nalgebra-sparse")]
mod nalgebra;
#[cfg(feature = "ndarray")]
pub mod ndarray;
#[cfg(feature = "sprs")]
mod sprs;

#[allow(unused_imports)]
use crate::operator::csr::Csr;
#[allow(unused_imports)]
use crate::{Error, Result};

/// Checks a CSR structure: `n_rows + 1` non-decreasing offsets from 0 to
/// the entry count, `values` entries, columns strictly increasing within
/// each row and below `n_cols`, and both sizes within the signed 32-bit
/// range faer requires of `u32` indices.
#[allow(dead_code)]
pub(crate) fn check_csr(n_rows: usize, n_cols: usize, row_ptr: &[u32], col: &[u32], values: usize) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidArgument(format!("not a CSR matrix fem can hold: {m}")));
    if n_rows > i32::MAX as usize || n_cols > i32::MAX as usize {
        return bad(format!("{n_rows} × {n_cols} exceeds 2³¹ − 1 rows or columns"));
    }
    if row_ptr.len() != n_rows + 1 || row_ptr[0] != 0 || row_ptr[n_rows] as usize != col.len() || col.len() != values {
        return bad(format!("{} offsets for {n_rows} rows, first {:?}, last {:?}, {} columns, {values} values", row_ptr.len(), row_ptr.first(), row_ptr.last(), col.len()));
    }
    if let Some(r) = (0..n_rows).find(|&r| row_ptr[r] > row_ptr[r + 1]) {
        return bad(format!("row {r}'s offsets decrease"));
    }
    for r in 0..n_rows {
        let (a, b) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
        let row = &col[a..b];
        if row.windows(2).any(|w| w[0] >= w[1]) {
            return bad(format!("row {r}'s columns are not strictly increasing"));
        }
        if row.last().is_some_and(|&c| c as usize >= n_cols) {
            return bad(format!("row {r} has a column at or beyond {n_cols}"));
        }
    }
    Ok(())
}

/// An index of another crate as `u32`, or an error naming what it is.
#[allow(dead_code)]
pub(crate) fn to_u32(v: usize, what: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::InvalidArgument(format!("{what} {v} exceeds fem's u32 indices")))
}
