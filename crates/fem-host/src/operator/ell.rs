//! ELLPACK in the transposed GPU layout, and its lazy variant (Reguly &
//! Giles §7): rows padded to a common width and stored slot-major,
//! `col[k · rows + r]`, so consecutive threads read consecutive rows.
//!
//! The lazy variant is filled by appending each element's row entries to
//! the end of the row, duplicates included; [`LazyEll::consolidate`] sorts
//! each row and merges equal columns, giving the ELLPACK of the CSR pattern.

use super::csr::Csr;
use super::elements::ElementMatrices;
use super::LinearOperator;
use crate::operator::cell_data::CellData;
use crate::{CpuBackend, Result, Scalar};
use fem_kernels::slots;
use fem_kernels::sparse::{ell_row, is_free, row_of, NONE};
use rayon::prelude::*;

/// Transposed ELLPACK; padding slots hold the row's own column and zero.
#[derive(Clone, Debug)]
pub struct Ell<T> {
    /// Number of rows.
    pub n_rows: usize,
    /// Slots per row: the longest row's entry count.
    pub width: usize,
    /// `col[k · n_rows + r]`: column of slot `k` of row `r`.
    pub col: Vec<u32>,
    /// `val[k · n_rows + r]`: value of slot `k` of row `r`.
    pub val: Vec<T>,
}

impl<T: Scalar> Ell<T> {
    /// From per-row (column, value) lists.
    fn from_rows(rows: &[Vec<(u32, T)>]) -> Self {
        let n_rows = rows.len();
        let width = rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut col = vec![0u32; width * n_rows];
        let mut val = vec![T::ZERO; width * n_rows];
        for (r, row) in rows.iter().enumerate() {
            for k in 0..width {
                let (c, v) = row.get(k).copied().unwrap_or((r as u32, T::ZERO));
                col[k * n_rows + r] = c;
                val[k * n_rows + r] = v;
            }
        }
        Self { n_rows, width, col, val }
    }

    /// The ELLPACK form of a CSR matrix, slot columns filled in parallel
    /// straight from the CSR arrays (a 3D Q4 matrix of 4M rows has 2.7e9
    /// slots), on the calling rayon pool ([`CpuBackend::install`] picks one).
    pub fn from_csr(csr: &Csr<T>) -> Self {
        let (col, val) = Self::planes_of_csr(csr, csr.n_rows);
        Self { n_rows: csr.n_rows, width: csr.max_row_len(), col, val }
    }

    /// The slot planes (columns, values) of [`Self::from_csr`] laid
    /// `ld ≥ n_rows` apart, slot `k` of row `r` at `k · ld + r`, rows past
    /// `n_rows` holding column 0 and zero: the GPU's padded layout, whose
    /// columns the device builds by the same [`slots::ell_column`]
    /// ([`super::device_pattern::DevicePattern::ell_columns`]).
    pub fn planes_of_csr(csr: &Csr<T>, ld: usize) -> (Vec<u32>, Vec<T>) {
        let (n_rows, width) = (csr.n_rows, csr.max_row_len());
        assert!(ld >= n_rows, "plane stride {ld} below {n_rows} rows");
        let mut col = vec![0u32; width * ld];
        let mut val = vec![T::ZERO; width * ld];
        if n_rows > 0 {
            col.par_chunks_mut(ld).zip(val.par_chunks_mut(ld)).enumerate().for_each(|(k, (cs, vs))| {
                for (r, (c, v)) in cs.iter_mut().zip(vs.iter_mut()).take(n_rows).enumerate() {
                    // SAFETY: r < n_rows, and the CSR's arrays hold its rows
                    *c = unsafe { slots::ell_column(r, k, n_rows, csr.row_ptr.as_ptr(), csr.col.as_ptr()) };
                    *v = if k < csr.row_len(r) { csr.val[csr.row_ptr[r] as usize + k] } else { T::ZERO };
                }
            });
        }
        (col, val)
    }

    /// Stored slots, padding included.
    pub fn slots(&self) -> usize {
        self.width * self.n_rows
    }

    /// `y = A x` on the CPU, rows in parallel.
    pub fn spmv(&self, cpu: &CpuBackend, x: &[T], y: &mut [T]) {
        cpu.install(|| {
            y.par_iter_mut().enumerate().for_each(|(r, yr)| {
                // SAFETY: r < n_rows and the arrays hold width × n_rows slots.
                *yr = unsafe { ell_row(r, self.n_rows, self.width, self.col.as_ptr(), self.val.as_ptr(), x.as_ptr()) };
            })
        });
    }

    /// The diagonal: the sum of every slot of row `r` in column `r`
    /// (repeated columns of a lazy matrix included, padding adding zero).
    pub fn diag(&self) -> Vec<T> {
        (0..self.n_rows)
            .map(|r| (0..self.width).map(|k| k * self.n_rows + r).filter(|&p| self.col[p] == r as u32).fold(T::ZERO, |a, p| a + self.val[p]))
            .collect()
    }
}

/// Lazily assembled ELLPACK: rows as appended, with repeated columns.
#[derive(Clone, Debug)]
pub struct LazyEll<T>(pub Ell<T>);

impl<T: Scalar> LazyEll<T> {
    /// Appends, cell by cell in order, every coupled entry of each free row
    /// of the element matrices; fixed rows get their unit diagonal.
    pub fn assemble(cd: &CellData<T>, elems: &ElementMatrices<T>) -> Self {
        let (ne, nb) = (cd.ne, cd.nb);
        let mut rows: Vec<Vec<(u32, T)>> = vec![Vec::new(); cd.n_rows];
        for &r in &cd.fixed_rows {
            rows[r as usize].push((r, T::ONE));
        }
        for e in 0..ne {
            let m = cd.rows_of(e);
            for i in 0..nb {
                if m[i] == NONE || !is_free(m[i]) {
                    continue;
                }
                for j in 0..nb {
                    if is_free(m[j]) {
                        rows[row_of(m[i])].push((row_of(m[j]) as u32, elems.get(e, i, j)));
                    }
                }
            }
        }
        Self(Ell::from_rows(&rows))
    }

    /// Sorts every row by column and sums repeated columns.
    pub fn consolidate(&self) -> Ell<T> {
        let e = &self.0;
        let rows: Vec<Vec<(u32, T)>> = (0..e.n_rows)
            .map(|r| {
                let mut row: Vec<(u32, T)> = (0..e.width).map(|k| (e.col[k * e.n_rows + r], e.val[k * e.n_rows + r])).filter(|&(_, v)| v != T::ZERO).collect();
                row.sort_by_key(|&(c, _)| c);
                let mut merged: Vec<(u32, T)> = Vec::with_capacity(row.len());
                for (c, v) in row {
                    match merged.last_mut() {
                        Some((lc, lv)) if *lc == c => *lv += v,
                        _ => merged.push((c, v)),
                    }
                }
                merged
            })
            .collect();
        Ell::from_rows(&rows)
    }
}

impl<T: Scalar> LinearOperator<CpuBackend, T> for Ell<T> {
    fn rows(&self) -> usize {
        self.n_rows
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        if !crate::error::product_lens("ell spmv", self.n_rows, x.len(), y.len())? {
            return Ok(());
        }
        self.spmv(cpu, x, y);
        Ok(())
    }
    fn diagonal(&self, _cpu: &CpuBackend) -> Result<Vec<T>> {
        Ok(self.diag())
    }
    fn name(&self) -> String {
        "ell".into()
    }
}

impl<T: Scalar> LinearOperator<CpuBackend, T> for LazyEll<T> {
    fn rows(&self) -> usize {
        self.0.n_rows
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        self.0.apply(cpu, x, y)
    }
    fn diagonal(&self, cpu: &CpuBackend) -> Result<Vec<T>> {
        self.0.diagonal(cpu)
    }
    fn name(&self) -> String {
        "lazy-ell".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 3 × 4 CSR with an empty middle row: [[1, 0, 2, 0], [0, 0, 0, 0],
    /// [5, 3, 0, 4]]: rows of 2, 0 and 3 entries.
    fn csr() -> Csr<f64> {
        Csr { n_rows: 3, row_ptr: vec![0, 2, 2, 5], col: vec![0, 2, 0, 1, 3], val: vec![1.0, 2.0, 5.0, 3.0, 4.0] }
    }

    #[test]
    fn from_csr_pads_every_row_to_the_widest_with_its_own_column() {
        let e = Ell::from_csr(&csr());
        assert_eq!((e.n_rows, e.width), (3, 3));
        // slot-major: slot k of row r at k·3 + r
        assert_eq!(e.col, vec![0, 1, 0, 2, 1, 1, 0, 1, 3]);
        assert_eq!(e.val, vec![1.0, 0.0, 5.0, 2.0, 0.0, 3.0, 0.0, 0.0, 4.0]);
        let empty = Ell::<f64>::from_csr(&Csr { n_rows: 0, row_ptr: vec![0], col: vec![], val: vec![] });
        assert_eq!((empty.width, empty.slots()), (0, 0));
    }

    /// The padded planes hold the unpadded matrix's slots at `k·ld + r`,
    /// padding rows column 0 and zero.
    #[test]
    fn planes_at_a_padded_stride_hold_the_same_slots() {
        let (c, ld) = (csr(), 5usize);
        let e = Ell::from_csr(&c);
        let (col, val) = Ell::planes_of_csr(&c, ld);
        assert_eq!((col.len(), val.len()), (e.width * ld, e.width * ld));
        for k in 0..e.width {
            for r in 0..ld {
                let want = if r < e.n_rows { (e.col[k * e.n_rows + r], e.val[k * e.n_rows + r]) } else { (0, 0.0) };
                assert_eq!((col[k * ld + r], val[k * ld + r]), want, "slot {k} row {r}");
            }
        }
    }
}
