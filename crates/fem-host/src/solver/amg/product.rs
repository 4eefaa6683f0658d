//! Products of CSR matrices for the smoothed prolongators `A T` and the
//! Galerkin operators `Pᵀ (A P)`: each row of a product is the sum of the
//! second factor's rows weighted by the first's row, formed on its own
//! (rows in parallel) by sorting the row's contributions and merging equal
//! columns. A sort per row needs no accumulator the width of the matrix,
//! which rayon would allocate per task; rows of these products hold a few
//! hundred contributions at most. Written here rather than taken from
//! `sprs`: its product is serial and its index type is not the `u32` CSR
//! every backend reads.

use crate::operator::csr::Csr;
use crate::{CpuBackend, Error, Result};
use rayon::prelude::*;

/// The entries of one row: columns ascending, each once.
type Row = (Vec<u32>, Vec<f64>);

/// `A B` for `A` of `a.n_rows` rows and `B` of as many rows as `A` has
/// columns.
pub fn multiply(cpu: &CpuBackend, a: &Csr<f64>, b: &Csr<f64>) -> Result<Csr<f64>> {
    if let Some(&c) = a.col.iter().find(|&&c| c as usize >= b.n_rows) {
        return Err(Error::InvalidArgument(format!("matrix product: column {c} of the first factor beyond the second's {} rows", b.n_rows)));
    }
    let rows: Vec<Row> = cpu.install(|| {
        (0..a.n_rows)
            .into_par_iter()
            .map(|r| {
                let mut terms: Vec<(u32, f64)> = Vec::new();
                for k in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
                    let (j, v) = (a.col[k] as usize, a.val[k]);
                    let span = b.row_ptr[j] as usize..b.row_ptr[j + 1] as usize;
                    terms.extend(b.col[span.clone()].iter().zip(&b.val[span]).map(|(&c, &w)| (c, v * w)));
                }
                merge(terms)
            })
            .collect()
    });
    from_rows(rows)
}

/// `terms` summed by column, columns ascending.
pub(super) fn merge(mut terms: Vec<(u32, f64)>) -> Row {
    terms.sort_unstable_by_key(|t| t.0);
    let (mut col, mut val): (Vec<u32>, Vec<f64>) = (Vec::with_capacity(terms.len()), Vec::with_capacity(terms.len()));
    for (c, v) in terms {
        match col.last() {
            Some(&last) if last == c => *val.last_mut().expect("a value per column") += v,
            _ => {
                col.push(c);
                val.push(v);
            }
        }
    }
    (col, val)
}

/// The matrix of `rows`; an error where its entries overflow `u32`.
pub(super) fn from_rows(rows: Vec<Row>) -> Result<Csr<f64>> {
    let nnz: usize = rows.iter().map(|r| r.0.len()).sum();
    if nnz > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!("{nnz} nonzeros exceed the u32 index range of CSR")));
    }
    let mut m = Csr { n_rows: rows.len(), row_ptr: Vec::with_capacity(rows.len() + 1), col: Vec::with_capacity(nnz), val: Vec::with_capacity(nnz) };
    m.row_ptr.push(0);
    for (c, v) in rows {
        m.col.extend_from_slice(&c);
        m.val.extend_from_slice(&v);
        m.row_ptr.push(m.col.len() as u32);
    }
    Ok(m)
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
        let mut g = crate::rng::SplitMix64::new(seed);
        let rows = (0..rows)
            .map(|r| {
                // one row empty, one full
                let mut terms = Vec::new();
                for c in 0..cols as u32 {
                    if r != 3 && (r == 5 || g.next_f64() < fill) {
                        terms.push((c, g.next_f64() - 0.5));
                    }
                }
                merge(terms)
            })
            .collect();
        from_rows(rows).unwrap()
    }

    /// The product equals the dense product, empty and full rows included;
    /// a factor of the wrong size is an error.
    #[test]
    fn product_equals_the_dense_product() {
        let cpu = CpuBackend::new(None).unwrap();
        let (a, b) = (random(37, 23, 0.2, 1), random(23, 41, 0.15, 2));
        let ab = multiply(&cpu, &a, &b).unwrap();
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
