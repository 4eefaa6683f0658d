//! Tunable parameters of the SpMV formats and their a-priori defaults from
//! the row-length statistics.

use super::ellt::ELLT_THREADS;
use super::stats::RowStats;
use crate::operator::gpu::{GpuCsr, THREADS_PER_ROW};
use crate::{Error, Result};
use serde::Serialize;

/// The tunable parameters of all SpMV formats together; each format reads
/// the ones that concern it ([`Self::describe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SpmvParams {
    /// Threads per block of the ELL-WARP and ELLR-T launches (a multiple
    /// of 32 from 32 to 1024).
    pub block: u32,
    /// K2: most entries one lane of a row takes before the row is split.
    pub threshold: usize,
    /// ELLR-T: threads per row.
    pub ellt_threads: usize,
    /// CSR: threads per row (1 scalar, more vector).
    pub csr_threads: usize,
}

impl SpmvParams {
    /// Defaults from the row lengths. K2 splits only rows well beyond the
    /// bulk (twice the mean, at least the 90th percentile), so uniform FEM
    /// matrices stay K1-like and power-law outliers get whole warps.
    /// ELLR-T takes one thread per 8 entries of a mean row: enough loads in
    /// flight per row without idle lanes on short rows.
    pub fn a_priori(s: &RowStats) -> Self {
        let pow2_below =
            |v: f64, set: &[usize]| *set.iter().rev().find(|&&t| t as f64 <= v).unwrap_or(&1);
        Self {
            block: 128,
            threshold: ((2.0 * s.mean_row).ceil() as usize).max(s.p90_row).max(1),
            ellt_threads: pow2_below(s.mean_row / 8.0, &ELLT_THREADS),
            csr_threads: GpuCsr::<f64>::default_threads_per_row(s.nnz, s.rows),
        }
    }

    /// The parameters format `f` uses, as text.
    pub fn describe(&self, f: super::SpmvFormat) -> String {
        use super::SpmvFormat::*;
        match f {
            Csr => format!("{} threads per row", self.csr_threads),
            EllT => format!("{} threads per row, block {}", self.ellt_threads, self.block),
            K1 | K1r | K1rs => format!("block {}", self.block),
            K2 | K2r | K2rs => format!("threshold {}, block {}", self.threshold, self.block),
            Ell | Cusparse => "no parameters".into(),
        }
    }

    /// Checks every parameter's range, whichever format will use it; returns
    /// [`Error::InvalidArgument`] naming the first one out of range.
    pub fn validate(&self) -> Result<()> {
        if self.block % 32 != 0 || !(32..=1024).contains(&self.block) {
            return Err(Error::InvalidArgument(format!(
                "block size {} is not a multiple of 32 in 32..=1024",
                self.block
            )));
        }
        if self.threshold == 0 {
            return Err(Error::InvalidArgument(
                "the K2 threshold must be at least 1".into(),
            ));
        }
        if !ELLT_THREADS.contains(&self.ellt_threads) {
            return Err(Error::InvalidArgument(format!(
                "ELLR-T threads per row must be one of {ELLT_THREADS:?}"
            )));
        }
        if !THREADS_PER_ROW.contains(&self.csr_threads) {
            return Err(Error::InvalidArgument(format!(
                "CSR threads per row must be one of {THREADS_PER_ROW:?}"
            )));
        }
        Ok(())
    }
}
