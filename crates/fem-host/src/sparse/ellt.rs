//! ELLR-T (Vázquez et al., the ELLPACK-T of Geveler et al. §3.1): ELLPACK
//! with `T` threads per row, each row's entries in groups of `T`
//! contiguous slots, groups of consecutive rows adjacent, and the row
//! lengths stored so each row stops after its own groups.

use super::SharedOut;
use crate::operator::csr::Csr;
use crate::operator::ell::Ell;
use crate::{CpuBackend, Error, Result, Scalar};
use fem_kernels::sparse::{ellt_part, NONE};
use rayon::prelude::*;

/// An ELLR-T matrix on the host.
#[derive(Clone, Debug)]
pub struct EllT<T> {
    /// Rows of the matrix.
    pub n_rows: usize,
    /// Threads (lanes) that share a row, `T`: one of [`ELLT_THREADS`].
    pub threads_per_row: usize,
    /// Slot groups per row (the longest row's).
    pub groups: usize,
    /// Stored entries of each row, so each row stops after its own groups.
    pub len: Vec<u32>,
    /// Column of every slot; group `k` of row `r` starts at slot `(k · n_rows + r) · T`.
    /// Padding slots read the row's first column.
    pub col: Vec<u32>,
    /// Value of every slot, laid out as `col` (zero for padding).
    pub val: Vec<T>,
    /// Slot → CSR position (`NONE` for padding).
    pub src: Vec<u32>,
}

/// Threads per row ELLR-T is specialised for.
pub const ELLT_THREADS: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// Most padded slots per nonzero (beyond a small allowance) a padded
/// format may store: past it the padding, not the matrix, fills memory.
pub const MAX_FILL: usize = 20;

/// Slots of a padded format of `nnz` nonzeros, refused beyond the 32-bit
/// positions the formats record or [`MAX_FILL`] times the nonzeros (a
/// power-law matrix would otherwise need tens of gigabytes).
pub fn padded_slots(rows: usize, per_row: usize, nnz: usize, what: &str) -> Result<usize> {
    let slots = rows
        .checked_mul(per_row)
        .filter(|&s| s <= u32::MAX as usize && s <= MAX_FILL * nnz + (1 << 20));
    slots.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{what} of {rows} rows padded to {per_row} slots stores {:.1}× the {nnz} nonzeros (at most {MAX_FILL}× and 2^32 slots); use an ELL-WARP format",
            rows as f64 * per_row as f64 / nnz.max(1) as f64
        ))
    })
}

impl<T: Scalar> EllT<T> {
    /// ELLR-T of `csr` with `threads_per_row` threads per row; fails when that is
    /// not one of [`ELLT_THREADS`] or the padding exceeds [`padded_slots`]'s limits.
    pub fn new(cpu: &CpuBackend, csr: &Csr<T>, threads_per_row: usize) -> Result<Self> {
        if !ELLT_THREADS.contains(&threads_per_row) {
            return Err(Error::InvalidArgument(format!(
                "ELLR-T threads per row must be one of {ELLT_THREADS:?}, not {threads_per_row}"
            )));
        }
        let (n, t) = (csr.n_rows, threads_per_row);
        let len: Vec<u32> = (0..n)
            .map(|r| csr.row_ptr[r + 1] - csr.row_ptr[r])
            .collect();
        let groups = len
            .iter()
            .map(|&l| (l as usize).div_ceil(t))
            .max()
            .unwrap_or(0);
        let slots = padded_slots(n, groups * t, csr.nnz(), "ELLR-T")?;
        let mut src = vec![NONE; slots];
        let mut col = vec![0u32; slots];
        let (s_out, c_out) = (SharedOut(src.as_mut_ptr()), SharedOut(col.as_mut_ptr()));
        cpu.install(|| {
            (0..n).into_par_iter().for_each(|r| {
                let lo = csr.row_ptr[r] as usize;
                let pad = csr.col.get(lo).copied().filter(|_| len[r] > 0).unwrap_or(0);
                for k in 0..groups {
                    for j in k * t..(k + 1) * t {
                        let p = (k * n + r) * t + j % t;
                        let inside = j < len[r] as usize;
                        // SAFETY: every (row, slot) pair is written by its row only.
                        unsafe {
                            s_out.write(p, if inside { (lo + j) as u32 } else { NONE });
                            c_out.write(p, if inside { csr.col[lo + j] } else { pad });
                        }
                    }
                }
            })
        });
        let mut m = Self {
            n_rows: n,
            threads_per_row: t,
            groups,
            len,
            col,
            val: vec![T::ZERO; slots],
            src,
        };
        m.refill(cpu, &csr.val);
        Ok(m)
    }

    /// Slots stored, padding included.
    pub fn slots(&self) -> usize {
        self.src.len()
    }

    /// Slots a product reads: each row's own groups, not the padding
    /// groups beyond them.
    pub fn read_slots(&self) -> usize {
        read_slots(&self.len, self.threads_per_row)
    }

    /// The values of a CSR matrix of the same pattern, gathered into the slots.
    pub fn refill(&mut self, cpu: &CpuBackend, csr_val: &[T]) {
        super::gather_into(cpu, &self.src, csr_val, &mut self.val);
    }

    /// `y = A x` on the CPU through the same per-thread sums as the kernel.
    pub fn spmv(&self, cpu: &CpuBackend, x: &[T], y: &mut [T]) {
        let t = self.threads_per_row;
        cpu.install(|| {
            y.par_iter_mut().enumerate().for_each(|(r, yr)| {
                // SAFETY: groups and columns built in range.
                *yr = (0..t).fold(T::ZERO, |a, p| {
                    a + unsafe {
                        ellt_part(
                            r,
                            p,
                            t,
                            self.n_rows,
                            self.len[r] as usize,
                            self.col.as_ptr(),
                            self.val.as_ptr(),
                            x.as_ptr(),
                        )
                    }
                });
            })
        });
    }
}

/// Plain ELLPACK of `csr` and its slot → CSR position map.
pub fn ell_with_source<T: Scalar>(csr: &Csr<T>) -> Result<(Ell<T>, Vec<u32>)> {
    let (n, width) = (csr.n_rows, csr.max_row_len());
    let slots = padded_slots(n, width, csr.nnz(), "ELLPACK")?;
    let mut src = vec![NONE; slots];
    for r in 0..n {
        for (k, p) in (csr.row_ptr[r]..csr.row_ptr[r + 1]).enumerate() {
            src[k * n + r] = p;
        }
    }
    Ok((Ell::from_csr(csr), src))
}

/// Slots ELLR-T reads for rows of lengths `len` with `t` threads per row.
pub fn read_slots(len: &[u32], t: usize) -> usize {
    len.iter().map(|&l| (l as usize).div_ceil(t) * t).sum()
}
