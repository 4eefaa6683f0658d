//! `Csr<T>` ⇄ `nalgebra_sparse::CsrMatrix<T>`: values moved, indices
//! widened to or narrowed from nalgebra-sparse's `usize`.

use super::{check_csr, to_u32, Csr, Error, Result};
use nalgebra_sparse::CsrMatrix;

impl<T> Csr<T> {
    /// The matrix as nalgebra-sparse's, with `n_cols` columns.
    pub fn into_nalgebra(self, n_cols: usize) -> Result<CsrMatrix<T>> {
        check_csr(self.n_rows, n_cols, &self.row_ptr, &self.col, self.val.len())?;
        let offsets = self.row_ptr.iter().map(|&o| o as usize).collect();
        let cols = self.col.iter().map(|&c| c as usize).collect();
        CsrMatrix::try_from_csr_data(self.n_rows, n_cols, offsets, cols, self.val).map_err(|e| Error::InvalidArgument(format!("nalgebra-sparse refused the matrix: {e}")))
    }

    /// nalgebra-sparse's matrix as fem's (and its column count).
    pub fn from_nalgebra(m: CsrMatrix<T>) -> Result<(Self, usize)> {
        let (n_rows, n_cols) = (m.nrows(), m.ncols());
        let (offsets, cols, val) = m.disassemble();
        let row_ptr = offsets.iter().map(|&o| to_u32(o, "an offset")).collect::<Result<Vec<u32>>>()?;
        let col = cols.iter().map(|&c| to_u32(c, "a column")).collect::<Result<Vec<u32>>>()?;
        check_csr(n_rows, n_cols, &row_ptr, &col, val.len())?;
        Ok((Csr { n_rows, row_ptr, col, val }, n_cols))
    }
}
