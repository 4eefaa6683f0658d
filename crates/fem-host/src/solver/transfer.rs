//! The restriction `R = Pᵀ` of a prolongation between consecutive
//! levels (the nested spaces' [`crate::space::NestedSpaces::interpolation`]):
//! the transpose of a CSR matrix.

use crate::operator::csr::Csr;
use crate::Scalar;

/// `Aᵀ` of an `a.n_rows × n_cols` CSR matrix, columns sorted.
pub fn transpose<T: Scalar>(a: &Csr<T>, n_cols: usize) -> Csr<T> {
    let mut row_ptr = vec![0u32; n_cols + 1];
    for &c in &a.col {
        row_ptr[c as usize + 1] += 1;
    }
    for i in 0..n_cols {
        row_ptr[i + 1] += row_ptr[i];
    }
    let mut fill = row_ptr.clone();
    let (mut col, mut val) = (vec![0u32; a.nnz()], vec![T::ZERO; a.nnz()]);
    for r in 0..a.n_rows {
        for p in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
            let c = a.col[p] as usize;
            col[fill[c] as usize] = r as u32;
            val[fill[c] as usize] = a.val[p];
            fill[c] += 1;
        }
    }
    Csr { n_rows: n_cols, row_ptr, col, val }
}
