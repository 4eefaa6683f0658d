//! The restriction `R = Pᵀ` of a prolongation between consecutive
//! levels (the nested spaces' [`crate::space::NestedSpaces::interpolation`]):
//! the transpose of a CSR matrix.

use crate::counters::{atomic, filled};
use crate::operator::csr::Csr;
use crate::space::restriction::transpose_map;
use crate::Scalar;
use rayon::prelude::*;
use std::sync::atomic::Ordering::Relaxed;

/// `Aᵀ` of an `a.n_rows × n_cols` CSR matrix, columns sorted: each
/// column's entries in ascending position ([`transpose_map`] of the
/// columns, in parallel), so in ascending row.
pub fn transpose<T: Scalar>(a: &Csr<T>, n_cols: usize) -> Csr<T> {
    let t = TransposedPattern::of(&a.row_ptr, &a.col, n_cols);
    let val = t.src.par_iter().map(|&p| a.val[p as usize]).collect();
    Csr { n_rows: n_cols, row_ptr: t.row_ptr, col: t.col, val }
}

/// The pattern of `Aᵀ` and where its values come from: the entries of
/// each column of `A` in ascending position ([`transpose_map`] of the
/// columns, in parallel), so in ascending row.
pub struct TransposedPattern {
    /// Row offsets of `Aᵀ` (`n_cols + 1`).
    pub row_ptr: Vec<u32>,
    /// Column of every entry of `Aᵀ`: the row of `A` it comes from.
    pub col: Vec<u32>,
    /// Position in `A` of every entry of `Aᵀ`.
    pub src: Vec<u32>,
}

impl TransposedPattern {
    /// Of the CSR pattern `(row_ptr, col)` of `n_cols` columns.
    pub fn of(row_ptr: &[u32], col: &[u32], n_cols: usize) -> Self {
        let (t_ptr, src) = transpose_map(col, n_cols);
        let mut row_of = filled(col.len(), 0);
        let row = atomic(&mut row_of);
        (0..row_ptr.len().saturating_sub(1)).into_par_iter().for_each(|r| (row_ptr[r]..row_ptr[r + 1]).for_each(|p| row[p as usize].store(r as u32, Relaxed)));
        let t_col = src.par_iter().map(|&p| row_of[p as usize]).collect();
        Self { row_ptr: t_ptr, col: t_col, src }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// Against the entries listed one by one: a rectangular matrix whose
    /// rows hold their columns in any order, with empty rows and columns
    /// and a long row, transposed on an uneven thread count.
    #[test]
    fn transpose_lists_each_column_by_row() {
        let (rows, cols) = (5000, 3001);
        let mut rng = SplitMix64::new(11);
        let mut a = Csr::<f64> { n_rows: rows, row_ptr: vec![0], col: Vec::new(), val: Vec::new() };
        for r in 0..rows {
            let len = match r {
                7 => 900,
                _ if r % 5 == 0 => 0,
                _ => rng.next_u64() as usize % 9,
            };
            let mut picked: Vec<u32> = (0..len).map(|_| (rng.next_u64() % (cols as u64 - 1)) as u32).collect();
            picked.sort_unstable();
            picked.dedup();
            picked.reverse();
            a.val.extend(picked.iter().map(|&c| r as f64 + c as f64 / cols as f64));
            a.col.extend(picked);
            a.row_ptr.push(a.col.len() as u32);
        }
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let t = pool.install(|| transpose(&a, cols));
        let mut want = vec![Vec::new(); cols];
        for r in 0..rows {
            for p in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
                want[a.col[p] as usize].push((r as u32, a.val[p]));
            }
        }
        assert!(want[cols - 1].is_empty(), "the last column has no entry");
        assert_eq!(t.n_rows, cols);
        for (c, w) in want.iter().enumerate() {
            let got: Vec<(u32, f64)> = (t.row_ptr[c] as usize..t.row_ptr[c + 1] as usize).map(|p| (t.col[p], t.val[p])).collect();
            assert_eq!(&got, w, "column {c}");
        }
    }
}
