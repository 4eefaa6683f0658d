//! Compressed sparse row storage of the assembled stiffness matrix.
//!
//! The pattern comes from the element map: row r couples to every row of
//! every cell that touches r (Reguly & Giles §6). Values are summed from
//! the element matrices through a precomputed position of every element
//! entry in the CSR arrays (the "indexing data" of global assembly).

use super::colouring::row_cells;
use super::elements::ElementMatrices;
use super::LinearOperator;
use crate::space::dirichlet::NONE;
use crate::space::Layout;
use crate::{CpuBackend, Error, Result, Scalar};
use fem_kernels::sparse::csr_row_part;
use rayon::prelude::*;

/// A sparse matrix in CSR form with `u32` indices (also used for
/// rectangular transfer matrices and matrices read from files).
#[derive(Clone, Debug)]
pub struct Csr<T> {
    /// Number of rows.
    pub n_rows: usize,
    /// Row `r`'s entries are `row_ptr[r]..row_ptr[r + 1]` (`n_rows + 1` offsets).
    pub row_ptr: Vec<u32>,
    /// Column of every entry, ascending within a row.
    pub col: Vec<u32>,
    /// Value of every entry, aligned with `col`.
    pub val: Vec<T>,
}

impl<T: Scalar> Csr<T> {
    /// The sparsity pattern of `layout`'s operator, values zero. Fixed rows
    /// hold their diagonal only.
    pub fn pattern(cpu: &CpuBackend, layout: &Layout) -> Result<Self> {
        let nb = layout.dofs_per_cell;
        let (offsets, touching) = row_cells(layout);
        let rows: Vec<Vec<u32>> = cpu.install(|| {
            (0..layout.n_rows)
                .into_par_iter()
                .map(|r| {
                    if layout.fixed[r] {
                        return vec![r as u32];
                    }
                    let mut cols: Vec<u32> = touching[offsets[r]..offsets[r + 1]]
                        .iter()
                        .flat_map(|&c| layout.cell_rows[c as usize * nb..(c as usize + 1) * nb].iter().copied())
                        .filter(|&j| j != NONE && !layout.fixed[j as usize])
                        .collect();
                    cols.sort_unstable();
                    cols.dedup();
                    cols
                })
                .collect()
        });
        let nnz: usize = rows.iter().map(Vec::len).sum();
        if nnz > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!("{nnz} nonzeros exceed the u32 index range of CSR")));
        }
        let mut row_ptr = Vec::with_capacity(layout.n_rows + 1);
        row_ptr.push(0u32);
        let mut col = Vec::with_capacity(nnz);
        for r in rows {
            col.extend_from_slice(&r);
            row_ptr.push(col.len() as u32);
        }
        Ok(Self { n_rows: layout.n_rows, row_ptr, col, val: vec![T::ZERO; nnz] })
    }

    /// The same matrix in precision `U` (values rounded to nearest when
    /// narrowing).
    pub fn converted<U: Scalar>(&self) -> Csr<U> {
        Csr { n_rows: self.n_rows, row_ptr: self.row_ptr.clone(), col: self.col.clone(), val: self.val.iter().map(|v| U::from_f64(v.to_f64())).collect() }
    }

    /// The matrix in precision `U`: itself, borrowed, where `U` is `T`
    /// (no copy of a large pattern), else [`Csr::converted`].
    pub fn in_precision<U: Scalar>(&self) -> std::borrow::Cow<'_, Csr<U>> {
        match (self as &dyn std::any::Any).downcast_ref::<Csr<U>>() {
            Some(same) => std::borrow::Cow::Borrowed(same),
            None => std::borrow::Cow::Owned(self.converted()),
        }
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.col.len()
    }

    /// Entries stored in row `r`.
    pub fn row_len(&self, r: usize) -> usize {
        (self.row_ptr[r + 1] - self.row_ptr[r]) as usize
    }

    /// Entries of the longest row (0 without rows): the width of its
    /// ELLPACK form.
    pub fn max_row_len(&self) -> usize {
        (0..self.n_rows).map(|r| self.row_len(r)).max().unwrap_or(0)
    }

    /// Position in `col`/`val` of entry (r, c), if stored.
    pub fn position(&self, r: usize, c: u32) -> Option<usize> {
        let (lo, hi) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
        self.col[lo..hi].binary_search(&c).ok().map(|k| lo + k)
    }

    /// For every element entry, in the transposed layout
    /// `pos[(i·nb + j)·ne + e]`, its position in `val`, or `u32::MAX` where
    /// the entry does not enter the matrix: the indexing data of global
    /// assembly (Reguly & Giles eq. 16).
    pub fn element_positions(&self, layout: &Layout) -> Vec<u32> {
        let (nb, ne) = (layout.dofs_per_cell, layout.n_cells());
        let mut pos = vec![u32::MAX; ne * nb * nb];
        if ne == 0 {
            return pos;
        }
        // In parallel over the element row i: its nb planes are one
        // contiguous block, and each cell's row ri is searched for all j.
        pos.par_chunks_mut(nb * ne).enumerate().for_each(|(i, planes)| {
            for c in 0..ne {
                let ri = layout.cell_rows[c * nb + i];
                for j in (0..nb).filter(|&j| layout.couples(c, i, j)) {
                    let rj = layout.cell_rows[c * nb + j];
                    planes[j * ne + c] = self.position(ri as usize, rj).expect("pattern holds every coupling") as u32;
                }
            }
        });
        pos
    }

    /// Assembles the global matrix from element matrices (sum of the
    /// entries at each position; unit diagonal on fixed rows).
    pub fn assemble(cpu: &CpuBackend, layout: &Layout, elems: &ElementMatrices<T>) -> Result<Self> {
        let mut m = Self::pattern(cpu, layout)?;
        let pos = m.element_positions(layout);
        let (nb, ne) = (elems.nb, elems.ne);
        for (k, &p) in pos.iter().enumerate() {
            if p != u32::MAX {
                let (ij, e) = (k / ne, k % ne);
                m.val[p as usize] += elems.get(e, ij / nb, ij % nb);
            }
        }
        for r in 0..layout.n_rows {
            if layout.fixed[r] {
                let p = m.position(r, r as u32).expect("fixed rows keep their diagonal");
                m.val[p] = T::ONE;
            }
        }
        Ok(m)
    }

    /// `y = A x` on the CPU, rows in parallel (one lane per row).
    pub fn spmv(&self, cpu: &CpuBackend, x: &[T], y: &mut [T]) {
        cpu.install(|| {
            y.par_iter_mut().enumerate().for_each(|(r, yr)| {
                let (lo, hi) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
                // SAFETY: positions come from row_ptr, columns are rows of x.
                *yr = unsafe { csr_row_part(lo, hi, 0, 1, self.col.as_ptr(), self.val.as_ptr(), x.as_ptr()) };
            })
        });
    }

    /// The diagonal, zero where `(r, r)` is not stored.
    pub fn diag(&self) -> Vec<T> {
        (0..self.n_rows).map(|r| self.position(r, r as u32).map_or(T::ZERO, |p| self.val[p])).collect()
    }
}

impl<T: Scalar> LinearOperator<CpuBackend, T> for Csr<T> {
    fn rows(&self) -> usize {
        self.n_rows
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        if !crate::error::product_lens("csr spmv", self.n_rows, x.len(), y.len())? {
            return Ok(());
        }
        self.spmv(cpu, x, y);
        Ok(())
    }
    fn diagonal(&self, _cpu: &CpuBackend) -> Result<Vec<T>> {
        Ok(self.diag())
    }
    fn name(&self) -> String {
        "csr".into()
    }
}
