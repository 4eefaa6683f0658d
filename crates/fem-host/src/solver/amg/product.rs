//! Products of CSR matrices for the smoothed prolongators and the
//! Galerkin operators `Pᵀ (A P)`, and the matrices of the set-up built
//! row by row: each row is the sum by column of the terms it is given,
//! formed by sorting them and merging equal columns (no accumulator the
//! width of the matrix), rows in parallel in blocks of [`BLOCK`] so that
//! a matrix allocates per block, not per row (per-row vectors from many
//! threads cost time and leave the allocator's arenas fragmented: several
//! times the matrices' size in peak memory). Written here rather than
//! taken from `sprs`: its product is serial and its index type is not the
//! `u32` CSR every backend reads.

use crate::operator::csr::Csr;
use crate::{CpuBackend, Error, Result};
use rayon::prelude::*;

/// Rows per task of [`build`].
const BLOCK: usize = 2048;

/// One block of rows: each row's length, then the columns and values.
type Block = (Vec<u32>, Vec<u32>, Vec<f64>);

/// The `n_rows`-row matrix whose row `r` is the sum by column of the
/// terms `row(r, terms)` pushes (onto an empty vector).
pub fn build(cpu: &CpuBackend, n_rows: usize, row: impl Fn(usize, &mut Vec<(u32, f64)>) + Sync) -> Result<Csr<f64>> {
    build_with(cpu, n_rows, None, row)
}

/// [`build`] for rows of many terms on few columns, all below `width`:
/// each task sums into an accumulator `width` wide and sorts only the
/// distinct columns (a Galerkin product's rows of thousands of terms on a
/// few hundred columns: sorting the terms themselves is most of its time).
pub fn build_within(cpu: &CpuBackend, n_rows: usize, width: usize, row: impl Fn(usize, &mut Vec<(u32, f64)>) + Sync) -> Result<Csr<f64>> {
    build_with(cpu, n_rows, Some(width), row)
}

/// [`build`], through an accumulator `width` wide where there is one.
fn build_with(cpu: &CpuBackend, n_rows: usize, width: Option<usize>, row: impl Fn(usize, &mut Vec<(u32, f64)>) + Sync) -> Result<Csr<f64>> {
    let blocks: Vec<Block> = cpu.install(|| {
        (0..n_rows.div_ceil(BLOCK))
            .into_par_iter()
            // one accumulator a task of several blocks, not one a block
            .map_init(|| (Vec::new(), width.map(Accumulator::new)), |(terms, wide), b| {
                let rows = b * BLOCK..((b + 1) * BLOCK).min(n_rows);
                let (mut len, mut col, mut val) = (Vec::with_capacity(rows.len()), Vec::new(), Vec::new());
                for r in rows {
                    terms.clear();
                    row(r, terms);
                    let n = match wide.as_mut() {
                        Some(w) => w.merge_into(r as u32, terms, &mut col, &mut val),
                        None => merge_into(terms, &mut col, &mut val),
                    };
                    len.push(n as u32);
                }
                (len, col, val)
            })
            .collect()
    });
    let nnz: usize = blocks.iter().map(|b| b.1.len()).sum();
    if nnz > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!("{nnz} nonzeros exceed the u32 index range of CSR")));
    }
    let mut m = Csr { n_rows, row_ptr: Vec::with_capacity(n_rows + 1), col: Vec::with_capacity(nnz), val: Vec::with_capacity(nnz) };
    m.row_ptr.push(0);
    for (len, col, val) in blocks {
        for l in len {
            m.row_ptr.push(m.row_ptr.last().expect("one offset") + l);
        }
        m.col.extend_from_slice(&col);
        m.val.extend_from_slice(&val);
    }
    Ok(m)
}

/// `terms` summed by column, columns ascending, appended to `col` and
/// `val`; returns how many entries that made.
fn merge_into(terms: &mut [(u32, f64)], col: &mut Vec<u32>, val: &mut Vec<f64>) -> usize {
    terms.sort_unstable_by_key(|t| t.0);
    let start = col.len();
    for &(c, v) in terms.iter() {
        if col.len() > start && col.last() == Some(&c) {
            *val.last_mut().expect("a value per column") += v;
        } else {
            col.push(c);
            val.push(v);
        }
    }
    col.len() - start
}

/// Sums by column over a row's terms, as wide as the matrix.
struct Accumulator {
    sum: Vec<f64>,
    /// The row each column's sum is of.
    row: Vec<u32>,
    touched: Vec<u32>,
}

impl Accumulator {
    fn new(width: usize) -> Self {
        Self { sum: vec![0.0; width], row: vec![u32::MAX; width], touched: Vec::new() }
    }

    /// Row `r`'s `terms` summed by column, columns ascending, appended to
    /// `col` and `val`; returns how many entries that made.
    fn merge_into(&mut self, r: u32, terms: &[(u32, f64)], col: &mut Vec<u32>, val: &mut Vec<f64>) -> usize {
        self.touched.clear();
        for &(c, v) in terms {
            let c_ = c as usize;
            if self.row[c_] == r {
                self.sum[c_] += v;
            } else {
                self.row[c_] = r;
                self.sum[c_] = v;
                self.touched.push(c);
            }
        }
        self.touched.sort_unstable();
        col.extend_from_slice(&self.touched);
        val.extend(self.touched.iter().map(|&c| self.sum[c as usize]));
        self.touched.len()
    }
}

/// Pushes row `r` of `m` scaled by `s` onto `terms`.
pub(crate) fn push_row(m: &Csr<f64>, r: usize, s: f64, terms: &mut Vec<(u32, f64)>) {
    let span = m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize;
    terms.extend(m.col[span.clone()].iter().zip(&m.val[span]).map(|(&c, &v)| (c, s * v)));
}

/// `A B` for `A` of `a.n_rows` rows and `B` of as many rows as `A` has
/// columns.
pub fn multiply(cpu: &CpuBackend, a: &Csr<f64>, b: &Csr<f64>) -> Result<Csr<f64>> {
    if let Some(&c) = a.col.iter().find(|&&c| c as usize >= b.n_rows) {
        return Err(Error::InvalidArgument(format!("matrix product: column {c} of the first factor beyond the second's {} rows", b.n_rows)));
    }
    build(cpu, a.n_rows, |r, terms| {
        for k in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
            push_row(b, a.col[k] as usize, a.val[k], terms);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(m: &Csr<f64>, n_cols: usize) -> Vec<f64> {
        let mut d = vec![0.0; m.n_rows * n_cols];
        for r in 0..m.n_rows {
            for k in m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize {
                d[r * n_cols + m.col[k] as usize] += m.val[k];
            }
        }
        d
    }

    fn random(rows: usize, cols: usize, fill: f64, seed: u64) -> Csr<f64> {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let mut g = crate::rng::SplitMix64::new(seed);
        // drawn ahead: one row empty, one full
        let entries: Vec<Vec<(u32, f64)>> = (0..rows)
            .map(|r| {
                let mut terms = Vec::new();
                for c in 0..cols as u32 {
                    if r != 3 && (r == 5 || g.next_f64() < fill) {
                        terms.push((c, g.next_f64() - 0.5));
                    }
                }
                terms
            })
            .collect();
        build(&cpu, rows, |r, t| t.extend_from_slice(&entries[r])).unwrap()
    }

    /// The product equals the dense product, empty and full rows included;
    /// a factor of the wrong size is an error.
    #[test]
    fn product_equals_the_dense_product() {
        let cpu = CpuBackend::new(None).unwrap();
        let (a, b) = (random(37, 23, 0.2, 1), random(23, 41, 0.15, 2));
        let ab = multiply(&cpu, &a, &b).unwrap();
        // the same product summed in an accumulator as wide as the columns
        let wide = build_within(&cpu, a.n_rows, 41, |r, terms| (a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize).for_each(|k| push_row(&b, a.col[k] as usize, a.val[k], terms))).unwrap();
        assert_eq!((&wide.row_ptr, &wide.col), (&ab.row_ptr, &ab.col));
        assert!(wide.val.iter().zip(&ab.val).all(|(x, y)| (x - y).abs() < 1e-14));
        let (da, db, dab) = (dense(&a, 23), dense(&b, 41), dense(&ab, 41));
        for r in 0..37 {
            for c in 0..41 {
                let want: f64 = (0..23).map(|k| da[r * 23 + k] * db[k * 41 + c]).sum();
                assert!((dab[r * 41 + c] - want).abs() < 1e-14, "({r}, {c})");
            }
            assert!(ab.col[ab.row_ptr[r] as usize..ab.row_ptr[r + 1] as usize].windows(2).all(|w| w[0] < w[1]));
        }
        assert_eq!(ab.row_len(3), 0);
        assert!(multiply(&cpu, &b, &a).is_err());
    }
}
