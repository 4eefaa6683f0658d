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
    /// `n_rows` holding column 0 and zero: the GPU's padded layout
    /// ([`super::gpu::GpuEll::upload_planes`]) built in place, not copied
    /// plane by plane from the unpadded one (tens of GB at 3D Q4).
    pub fn planes_of_csr(csr: &Csr<T>, ld: usize) -> (Vec<u32>, Vec<T>) {
        let (n_rows, width) = (csr.n_rows, csr.max_row_len());
        assert!(ld >= n_rows, "plane stride {ld} below {n_rows} rows");
        let mut col = vec![0u32; width * ld];
        let mut val = vec![T::ZERO; width * ld];
        if n_rows > 0 {
            col.par_chunks_mut(ld).zip(val.par_chunks_mut(ld)).enumerate().for_each(|(k, (cs, vs))| {
                for (r, (c, v)) in cs.iter_mut().zip(vs.iter_mut()).take(n_rows).enumerate() {
                    (*c, *v) = if k < csr.row_len(r) { let p = csr.row_ptr[r] as usize + k; (csr.col[p], csr.val[p]) } else { (r as u32, T::ZERO) };
                }
            });
        }
        (col, val)
    }

    /// Slot index `k · ld + r` of each CSR position `p` (row r, k-th entry
    /// of the row) in [`Self::planes_of_csr`]'s planes `ld` apart
    /// (`ld = n_rows` for [`Self::from_csr`]); `u32::MAX` stays. An error
    /// when the planes hold more slots than 32-bit indices address
    /// (2³² − 1).
    pub fn slots_of_csr_positions(csr: &Csr<T>, pos: &[u32], ld: usize) -> Result<Vec<u32>> {
        let (n, width) = (csr.n_rows, csr.max_row_len());
        if width * ld.max(n) > u32::MAX as usize {
            return Err(crate::Error::InvalidArgument(format!("ELLPACK of {n} rows × {width} slots exceeds 32-bit slot indices (CSR and LMA store no padding)")));
        }
        Ok(pos
            .par_iter()
            .map(|&p| {
                if p == u32::MAX {
                    return p;
                }
                // The row holding position p: the last row starting at or before it.
                let r = csr.row_ptr.partition_point(|&s| s <= p) as u32 - 1;
                (p - csr.row_ptr[r as usize]) * ld as u32 + r
            })
            .collect())
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
                    if m[j] != NONE && is_free(m[j]) {
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

    #[test]
    fn csr_positions_map_to_their_slots() {
        let c = csr();
        let e = Ell::from_csr(&c);
        let pos: Vec<u32> = (0..5).chain([u32::MAX]).collect();
        let slots = Ell::slots_of_csr_positions(&c, &pos, c.n_rows).unwrap();
        assert_eq!(slots, vec![0, 3, 2, 5, 8, u32::MAX]);
        for (p, s) in pos.iter().zip(&slots).take(5) {
            assert_eq!((e.col[*s as usize], e.val[*s as usize]), (c.col[*p as usize], c.val[*p as usize]));
        }
        // 70 000 rows, the last of 70 000 entries: 4.9e9 slots.
        let n = 70_000u32;
        let wide = Csr::<f64> { n_rows: n as usize, row_ptr: (0..=n).map(|r| if r == n { 2 * n - 1 } else { r }).collect(), col: (0..2 * n - 1).map(|k| k % n).collect(), val: vec![1.0; 2 * n as usize - 1] };
        let err = Ell::slots_of_csr_positions(&wide, &[0], n as usize).unwrap_err().to_string();
        assert!(err.contains("32-bit"), "{err}");
    }

    /// The padded planes hold the unpadded matrix's slots at `k·ld + r`,
    /// padding rows column 0 and zero, and positions land on their entries.
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
        let pos: Vec<u32> = (0..5).chain([u32::MAX]).collect();
        let slots = Ell::slots_of_csr_positions(&c, &pos, ld).unwrap();
        assert_eq!(slots[5], u32::MAX);
        for (p, s) in pos.iter().zip(&slots).take(5) {
            assert_eq!((col[*s as usize], val[*s as usize]), (c.col[*p as usize], c.val[*p as usize]));
        }
    }
}
