//! Row-length statistics of a sparse matrix: the columns of Wong, Kuhl &
//! Darve's Table 2, and the figures the a-priori format parameters are
//! computed from.

use crate::operator::csr::Csr;
use crate::Scalar;
use serde::Serialize;

/// Row-length statistics of one matrix (a line of the paper's Table 2).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RowStats {
    /// Rows of the matrix.
    pub rows: usize,
    /// Stored nonzeros.
    pub nnz: usize,
    /// The paper's matrix bytes: value, column index and one `x` value per
    /// nonzero (20 bytes in double precision).
    pub bytes: usize,
    /// Length of the shortest row.
    pub min_row: usize,
    /// Length of the longest row (ELLPACK's width).
    pub max_row: usize,
    /// Mean row length, `nnz / rows`.
    pub mean_row: f64,
    /// Median row length (nearest rank).
    pub median_row: usize,
    /// 90th and 99th percentiles of the row length.
    pub p90_row: usize,
    /// 99th percentile of the row length (nearest rank).
    pub p99_row: usize,
    /// Rows with no stored entry.
    pub empty_rows: usize,
    /// Slots ELLPACK would store over nonzeros (its padding overhead).
    pub ell_fill: f64,
}

impl RowStats {
    /// The statistics of `csr`; `bytes` counts values of `T`. All zero (and
    /// `ell_fill` 1) for a matrix with no rows.
    pub fn of<T: Scalar>(csr: &Csr<T>) -> Self {
        let mut len: Vec<usize> = (0..csr.n_rows)
            .map(|r| (csr.row_ptr[r + 1] - csr.row_ptr[r]) as usize)
            .collect();
        len.sort_unstable();
        let nnz = csr.nnz();
        let rows = csr.n_rows;
        let at = |q: f64| {
            if rows == 0 {
                0
            } else {
                len[((q * rows as f64).ceil() as usize).clamp(1, rows) - 1]
            }
        };
        let max_row = len.last().copied().unwrap_or(0);
        Self {
            rows,
            nnz,
            bytes: nnz * (2 * T::BYTES + 4),
            min_row: len.first().copied().unwrap_or(0),
            max_row,
            mean_row: if rows == 0 {
                0.0
            } else {
                nnz as f64 / rows as f64
            },
            median_row: at(0.5),
            p90_row: at(0.9),
            p99_row: at(0.99),
            empty_rows: len.iter().take_while(|&&l| l == 0).count(),
            ell_fill: if nnz == 0 {
                1.0
            } else {
                (max_row * rows) as f64 / nnz as f64
            },
        }
    }

    /// The Table 2 header and this matrix's line (tab-separated).
    pub fn table_header() -> &'static str {
        "matrix\tnz\tnrows\tbytes\tminrow\tmaxrow\tnz/nrows\tmedian\tp99\tempty\tell_fill"
    }

    /// This matrix's line of the table, under [`Self::table_header`], labelled `name`.
    pub fn table_row(&self, name: &str) -> String {
        format!(
            "{name}\t{}\t{}\t{}\t{}\t{}\t{:.1}\t{}\t{}\t{}\t{:.2}",
            self.nnz,
            self.rows,
            self.bytes,
            self.min_row,
            self.max_row,
            self.mean_row,
            self.median_row,
            self.p99_row,
            self.empty_rows,
            self.ell_fill
        )
    }
}
