//! The local matrix approach (LMA): element matrices are kept, and
//! `y = Aᵀ K_e A x` is applied as gather – dense product – scatter per cell
//! (Reguly & Giles §3.3, §8), with the per-cell functions the GPU runs. On
//! the CPU the scatter is race-free by colouring.

use super::cell_data::CellData;
use crate::sparse::SharedOut;
use super::colouring::Colouring;
use super::elements::{unsupported, ElementMatrices};
use super::LinearOperator;
use crate::space::Layout;
use crate::{CpuBackend, Result, Scalar};
use fem_kernels::sparse::{gather, is_free, lma_product, row_of};
use fem_kernels::with_element;
use rayon::prelude::*;

/// Element matrices with the transposed element-to-row map.
#[derive(Clone, Debug)]
pub struct Lma<T> {
    /// The cells: element-to-row map and fixed rows.
    pub cells: CellData<T>,
    /// The stored element matrices (loads unused by the product).
    pub elems: ElementMatrices<T>,
    /// Cell colouring that makes the CPU scatter race-free.
    pub colouring: Colouring,
}

/// `y ← x` on fixed rows and 0 elsewhere: the start of every
/// element-by-element product.
pub fn init_fixed<T: Scalar>(cd: &CellData<T>, x: &[T], y: &mut [T]) {
    y.iter_mut().for_each(|v| *v = T::ZERO);
    for &r in &cd.fixed_rows {
        y[r as usize] = x[r as usize];
    }
}

/// Adds a cell's local result into `y` (free rows only).
///
/// # Safety
/// No other thread writes the same rows concurrently.
pub(crate) unsafe fn scatter<T: Scalar>(rows: &[u32], yl: &[T], y: SharedOut<T>) {
    for (i, &m) in rows.iter().enumerate() {
        if is_free(m) {
            *y.0.add(row_of(m)) += yl[i];
        }
    }
}

impl<T: Scalar> Lma<T> {
    /// The operator of element matrices `elems` on `cells`, with the cells
    /// of `layout` coloured.
    pub fn new(layout: &Layout, cells: CellData<T>, elems: ElementMatrices<T>) -> Self {
        Self { cells, elems, colouring: Colouring::cells(layout) }
    }

    /// `y = A x`, colour by colour.
    fn spmv(&self, cpu: &CpuBackend, x: &[T], y: &mut [T]) -> Result<()> {
        let cd = &self.cells;
        init_fixed(cd, x, y);
        let out = SharedOut(y.as_mut_ptr());
        let (ne, sym) = (cd.ne, self.elems.symmetric);
        with_element!(cd.dim, cd.degree, D, NB, QD => cpu.install(|| {
            for cells in &self.colouring.cells {
                cells.par_iter().for_each(|&e| {
                    let out = out;
                    // SAFETY: cells of one colour touch disjoint rows.
                    unsafe {
                        let (rows, xl) = gather::<T, NB>(e as usize, ne, cd.map.as_ptr(), x.as_ptr());
                        let yl = if sym {
                            lma_product::<T, NB, true>(e as usize, ne, self.elems.vals.as_ptr(), &xl)
                        } else {
                            lma_product::<T, NB, false>(e as usize, ne, self.elems.vals.as_ptr(), &xl)
                        };
                        scatter(&rows, &yl, out);
                    }
                });
            }
        }))
        .ok_or_else(|| unsupported(cd.dim, cd.degree))
    }

    /// The diagonal, summed from the element matrices (1 on fixed rows).
    pub fn diag(&self) -> Vec<T> {
        super::elements::diagonal(&self.cells, &self.elems)
    }
}

impl<T: Scalar> LinearOperator<CpuBackend, T> for Lma<T> {
    fn rows(&self) -> usize {
        self.cells.n_rows
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        if !crate::error::product_lens("lma spmv", self.cells.n_rows, x.len(), y.len())? {
            return Ok(());
        }
        self.spmv(cpu, x, y)
    }
    fn diagonal(&self, _cpu: &CpuBackend) -> Result<Vec<T>> {
        Ok(self.diag())
    }
    fn name(&self) -> String {
        "lma".into()
    }
}
