//! ELL-WARP (Wong, Kuhl & Darve §5): rows sorted longest first, grouped by
//! warp into slices padded to the slice's longest row, stored column-major
//! inside the slice. K1 gives every row one lane; K2 splits rows longer
//! than a threshold over 2..32 lanes. The numbering decides how `x` and
//! `y` are addressed:
//! * [`Numbering::Remap`] (K1, K2): original numbering, each result written
//!   through the inverse permutation;
//! * [`Numbering::Renumber`] (K1r, K2r): columns renumbered by the row
//!   sort, so `x` and `y` live in the sorted numbering and the write is
//!   coalesced;
//! * [`Numbering::RenumberSorted`] (K1rs, K2rs): as Renumber, each row's
//!   entries then sorted by their new column.

use super::SharedOut;
use crate::operator::csr::{cut, Csr};
use crate::{CpuBackend, Error, Result, Scalar};
use fem_kernels::sparse::{slice_lane_part, warp_lane_slots, Slice, NONE, SLICE_LANES};
use rayon::prelude::*;
use serde::Serialize;

/// How an ELL-WARP matrix addresses `x` and `y` after its rows are sorted
/// longest first (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Numbering {
    /// `x` and `y` in the original numbering; each row's result is written
    /// through the permutation (K1, K2).
    Remap,
    /// Columns renumbered by the row sort: `x` and `y` in the sorted
    /// numbering, results written in order (K1r, K2r).
    Renumber,
    /// As `Renumber`, with each row's entries then sorted by their new
    /// column (K1rs, K2rs).
    RenumberSorted,
}

impl Numbering {
    /// Suffix of the format name: "" for Remap, "r" for Renumber, "rs" for RenumberSorted.
    pub fn suffix(self) -> &'static str {
        match self {
            Self::Remap => "",
            Self::Renumber => "r",
            Self::RenumberSorted => "rs",
        }
    }
}

/// An ELL-WARP matrix on the host.
#[derive(Clone, Debug)]
pub struct EllWarp<T> {
    /// Rows of the matrix.
    pub n_rows: usize,
    /// Columns of the matrix (one more than the original for a [`Self::pattern`] matrix).
    pub n_cols: usize,
    /// How `x` and `y` are addressed.
    pub numbering: Numbering,
    /// K2's threshold on entries per lane; `None` for K1.
    pub threshold: Option<usize>,
    /// One slice per warp of sorted rows, in order: its first row, lanes per row,
    /// width and offset into `col` and `val`.
    pub slices: Vec<Slice>,
    /// Column of every slot, slices one after another, column-major inside each
    /// slice; in the sorted numbering unless `numbering` is Remap.
    pub col: Vec<u32>,
    /// Value of every slot, laid out as `col` (zero for padding).
    pub val: Vec<T>,
    /// Sorted position → original row.
    pub perm: Vec<u32>,
    /// Slot → position in the CSR arrays it was built from (`NONE` for
    /// padding): new values of the same pattern are a gather through it.
    pub src: Vec<u32>,
}

/// Lanes per row a K2 slice gives a row of `len` entries: the fewest
/// (a power of two, at most a warp) that keep each lane at or below
/// `threshold` entries.
pub fn lanes_for(len: usize, threshold: usize) -> u32 {
    let mut shift = 0;
    while shift < 5 && len.div_ceil(1 << shift) > threshold.max(1) {
        shift += 1;
    }
    shift
}

impl<T: Scalar> EllWarp<T> {
    /// K1 (`threshold` None) or K2 from `csr` with `n_cols` columns.
    pub fn new(
        cpu: &CpuBackend,
        csr: &Csr<T>,
        n_cols: usize,
        threshold: Option<usize>,
        numbering: Numbering,
    ) -> Result<Self> {
        Self::build(cpu, csr, n_cols, threshold, numbering, None)
    }

    /// A pattern matrix for the `UNIT` product: padding slots read column
    /// `n_cols`, a zero the caller appends to `x`, since padding values are
    /// not read. The matrix has `n_cols + 1` columns.
    pub fn pattern(
        cpu: &CpuBackend,
        csr: &Csr<T>,
        n_cols: usize,
        threshold: Option<usize>,
    ) -> Result<Self> {
        Self::build(
            cpu,
            csr,
            n_cols + 1,
            threshold,
            Numbering::Remap,
            Some(n_cols as u32),
        )
    }

    fn build(
        cpu: &CpuBackend,
        csr: &Csr<T>,
        n_cols: usize,
        threshold: Option<usize>,
        numbering: Numbering,
        pad: Option<u32>,
    ) -> Result<Self> {
        let n = csr.n_rows;
        if numbering != Numbering::Remap && n_cols != n {
            return Err(Error::InvalidArgument(format!(
                "renumbered ELL-WARP needs a square matrix, not {n} × {n_cols}"
            )));
        }
        let len = |r: usize| (csr.row_ptr[r + 1] - csr.row_ptr[r]) as usize;
        let mut perm: Vec<u32> = (0..n as u32).collect();
        // Stable: rows of equal length keep their order and their locality.
        cpu.install(|| perm.par_sort_by_key(|&r| std::cmp::Reverse(len(r as usize))));
        let mut inv = vec![0u32; if numbering == Numbering::Remap { 0 } else { n }];
        for (s, &r) in perm.iter().enumerate().take(inv.len()) {
            inv[r as usize] = s as u32;
        }
        let slices = Self::slices(n, |s| len(perm[s] as usize), threshold)?;
        // every slice's slots written where they stay, slices in parallel
        let slots = slices.last().map_or(0, |s| s.offset as usize + s.width as usize * SLICE_LANES);
        let (mut src, mut col) = (vec![0u32; slots], vec![0u32; slots]);
        let widths = || slices.iter().map(|s| s.width as usize * SLICE_LANES);
        let (src_parts, col_parts) = (cut(&mut src, widths()), cut(&mut col, widths()));
        cpu.install(|| {
            slices.par_iter().zip(src_parts).zip(col_parts).for_each_init(Vec::new, |pos, ((s, src), col)| fill_slice(csr, n, *s, &perm, &inv, numbering, pad, pos, src, col))
        });
        let mut m = Self {
            n_rows: n,
            n_cols,
            numbering,
            threshold,
            slices,
            col,
            val: vec![T::ZERO; src.len()],
            perm,
            src,
        };
        m.refill(cpu, &csr.val);
        Ok(m)
    }

    /// Slices over the sorted rows (`len(s)` of sorted row `s`).
    pub(crate) fn slices(
        n: usize,
        len: impl Fn(usize) -> usize,
        threshold: Option<usize>,
    ) -> Result<Vec<Slice>> {
        let (mut out, mut s, mut offset) =
            (Vec::with_capacity(n.div_ceil(SLICE_LANES)), 0usize, 0usize);
        while s < n {
            let l = len(s);
            let shift = threshold.map_or(0, |t| lanes_for(l, t));
            let width = l.div_ceil(1 << shift);
            out.push(Slice {
                offset: offset as u32,
                width: width as u32,
                row: s as u32,
                shift,
            });
            offset += width * SLICE_LANES;
            if offset > u32::MAX as usize {
                return Err(Error::InvalidArgument(format!(
                    "ELL-WARP needs more than 2^32 slots ({offset} after {s} rows)"
                )));
            }
            s += SLICE_LANES >> shift;
        }
        Ok(out)
    }

    /// Kernel name: k1, k2r, ...
    pub fn name(&self) -> String {
        format!(
            "k{}{}",
            if self.threshold.is_some() { 2 } else { 1 },
            self.numbering.suffix()
        )
    }

    /// Slots stored, padding included.
    pub fn slots(&self) -> usize {
        self.src.len()
    }

    /// Whether `y` is written through the permutation (K1, K2).
    pub fn remaps(&self) -> bool {
        self.numbering == Numbering::Remap
    }

    /// The values of a CSR matrix of the same pattern, reordered into the
    /// slots (the per-Newton-step reordering of §6).
    pub fn refill(&mut self, cpu: &CpuBackend, csr_val: &[T]) {
        super::gather_into(cpu, &self.src, csr_val, &mut self.val);
    }

    /// `y = A x` on the CPU through the same per-lane sums as the kernel;
    /// `x` and `y` in the format's numbering ([`Self::to_local`]). `UNIT`
    /// treats every stored value as one.
    pub fn spmv_with<const UNIT: bool>(&self, cpu: &CpuBackend, x: &[T], y: &mut [T]) {
        assert!(
            x.len() >= self.n_cols && y.len() >= self.n_rows,
            "vector lengths"
        );
        let out = SharedOut(y.as_mut_ptr());
        let (col, val) = (self.col.as_ptr() as usize, self.val.as_ptr() as usize);
        cpu.install(|| {
            self.slices.par_iter().for_each(|s| {
                let tpr = 1usize << s.shift;
                for q in 0..SLICE_LANES >> s.shift {
                    let r = s.row as usize + q;
                    if r >= self.n_rows {
                        break;
                    }
                    // SAFETY: slots and columns were built in range; rows are
                    // written once each (perm is a permutation).
                    unsafe {
                        let sum = (0..tpr).fold(T::ZERO, |a, p| {
                            a + slice_lane_part::<T, UNIT>(
                                *s,
                                q * tpr + p,
                                col as *const u32,
                                val as *const T,
                                x.as_ptr(),
                            )
                        });
                        out.write(
                            if self.remaps() {
                                self.perm[r] as usize
                            } else {
                                r
                            },
                            sum,
                        );
                    }
                }
            })
        });
    }

    /// `y = A x` on the CPU (the CPU backend's product), `x` and `y` in the
    /// format's numbering ([`Self::to_local`]).
    pub fn spmv(&self, cpu: &CpuBackend, x: &[T], y: &mut [T]) {
        self.spmv_with::<false>(cpu, x, y)
    }

    /// `x` in the format's numbering.
    pub fn to_local(&self, x: &[T]) -> Vec<T> {
        if self.remaps() {
            x.to_vec()
        } else {
            super::permute(&self.perm, x)
        }
    }

    /// `y` from the format's numbering back to the original one.
    pub fn from_local(&self, y: &[T]) -> Vec<T> {
        if self.remaps() {
            y.to_vec()
        } else {
            super::unpermute(&self.perm, y)
        }
    }
}

/// Source positions and columns of one slice's slots, written into `src`
/// and `col` (`pos` a reused buffer).
/// `pad`: the column every padding slot reads (default: the row's first).
#[allow(clippy::too_many_arguments)]
fn fill_slice<T: Scalar>(
    csr: &Csr<T>,
    n: usize,
    s: Slice,
    perm: &[u32],
    inv: &[u32],
    numbering: Numbering,
    pad: Option<u32>,
    pos: &mut Vec<u32>,
    src: &mut [u32],
    col: &mut [u32],
) {
    if numbering == Numbering::Remap {
        for lane in 0..SLICE_LANES {
            // SAFETY: the slice's own `width · 32` slots; the permutation,
            // offsets and columns are `csr`'s
            unsafe { warp_lane_slots(s, lane, n, perm.as_ptr(), csr.row_ptr.as_ptr(), csr.col.as_ptr(), pad.unwrap_or(NONE), col.as_mut_ptr(), src.as_mut_ptr()) };
        }
        return;
    }
    let (w, shift) = (s.width as usize, s.shift as usize);
    src.fill(NONE);
    col.fill(pad.unwrap_or(0));
    let new_col = |c: u32| {
        if numbering == Numbering::Remap {
            c
        } else {
            inv[c as usize]
        }
    };
    for q in 0..SLICE_LANES >> shift {
        let sr = s.row as usize + q;
        if sr >= n {
            break;
        }
        let r = perm[sr] as usize;
        pos.clear();
        pos.extend(csr.row_ptr[r]..csr.row_ptr[r + 1]);
        if numbering == Numbering::RenumberSorted {
            pos.sort_by_key(|&p| new_col(csr.col[p as usize]));
        }
        // Padding reads the row's first column again: already in cache.
        let pad = pad.unwrap_or_else(|| pos.first().map_or(0, |&p| new_col(csr.col[p as usize])));
        for lane in q << shift..(q + 1) << shift {
            for k in 0..w {
                col[k * SLICE_LANES + lane] = pad;
            }
        }
        for (j, &p) in pos.iter().enumerate() {
            let slot = (j >> shift) * SLICE_LANES + (q << shift) + (j & ((1 << shift) - 1));
            src[slot] = p;
            col[slot] = new_col(csr.col[p as usize]);
        }
    }
}
