//! `Csr<T>` ⇄ `sprs::CsMatI<T, u32>` in CSR storage: the same three
//! buffers, moved. A CSC matrix is converted to CSR on import.

use super::{check_csr, Csr, Error, Result};
use sprs::CsMatI;

impl<T: Clone + Default> Csr<T> {
    /// The matrix as sprs's (CSR storage, `u32` indices), with `n_cols`
    /// columns; the buffers are moved.
    pub fn into_sprs(self, n_cols: usize) -> Result<CsMatI<T, u32>> {
        check_csr(self.n_rows, n_cols, &self.row_ptr, &self.col, self.val.len())?;
        CsMatI::try_new((self.n_rows, n_cols), self.row_ptr, self.col, self.val).map_err(|(.., e)| Error::InvalidArgument(format!("sprs refused the matrix: {e}")))
    }

    /// sprs's matrix as fem's (and its column count): moved when stored as
    /// CSR, converted when stored as CSC.
    pub fn from_sprs(m: CsMatI<T, u32>) -> Result<(Self, usize)> {
        let m = if m.is_csr() { m } else { m.to_csr() };
        let (n_rows, n_cols) = m.shape();
        let (row_ptr, col, val) = m.into_raw_storage();
        check_csr(n_rows, n_cols, &row_ptr, &col, val.len())?;
        Ok((Csr { n_rows, row_ptr, col, val }, n_cols))
    }
}
