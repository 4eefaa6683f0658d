//! `Csr<T>` ⇄ `faer::sparse::SparseRowMat<u32, T>`: the same three
//! buffers, moved.

use super::{check_csr, Csr, Error, Result};
use faer::sparse::{SparseRowMat, SymbolicSparseRowMat};

impl<T> Csr<T> {
    /// The matrix as faer's, with `n_cols` columns; the buffers are moved.
    pub fn into_faer(self, n_cols: usize) -> Result<SparseRowMat<u32, T>> {
        check_csr(self.n_rows, n_cols, &self.row_ptr, &self.col, self.val.len())?;
        let symbolic = SymbolicSparseRowMat::new_checked(self.n_rows, n_cols, self.row_ptr, None, self.col);
        Ok(SparseRowMat::new(symbolic, self.val))
    }

    /// faer's matrix as fem's (and its column count); the buffers are
    /// moved. Uncompressed matrices (per-row counts) and rows with
    /// unsorted or repeated columns are refused.
    pub fn from_faer(m: SparseRowMat<u32, T>) -> Result<(Self, usize)> {
        let (symbolic, val) = m.into_parts();
        let (n_rows, n_cols, row_ptr, row_nnz, col) = symbolic.into_parts();
        if row_nnz.is_some() {
            return Err(Error::InvalidArgument("an uncompressed faer matrix (per-row counts): compress it first".into()));
        }
        check_csr(n_rows, n_cols, &row_ptr, &col, val.len())?;
        Ok((Csr { n_rows, row_ptr, col, val }, n_cols))
    }
}
