//! The local matrix approach (LMA): element matrices are kept, and
//! `y = Aᵀ K_e A x` is applied as gather – dense product – scatter per cell
//! (Reguly & Giles §3.3, §8). On the CPU the scatter is race-free by
//! colouring: the cells of one colour run in parallel.

use super::colouring::Colouring;
use super::elements::ElementMatrices;
use super::LinearOperator;
use crate::space::dirichlet::NONE;
use crate::space::Layout;
use crate::{CpuBackend, Result, Scalar};
use rayon::prelude::*;

/// Element matrices with the element-to-row map.
#[derive(Clone, Debug)]
pub struct Lma<T> {
    pub n_rows: usize,
    pub nb: usize,
    pub cell_rows: Vec<u32>,
    pub matrices: Vec<T>,
    /// Rows with the equation u = 0 (identity rows).
    pub fixed: Vec<bool>,
    pub colouring: Colouring,
}

/// A pointer that may be shared across the threads of one colour: no two
/// cells of a colour touch the same row, so their writes never overlap.
#[derive(Clone, Copy)]
struct Disjoint<T>(*mut T);
unsafe impl<T> Send for Disjoint<T> {}
unsafe impl<T> Sync for Disjoint<T> {}

impl<T: Scalar> Lma<T> {
    pub fn new(layout: &Layout, elems: ElementMatrices<T>) -> Self {
        Self {
            n_rows: layout.n_rows,
            nb: layout.dofs_per_cell,
            cell_rows: layout.cell_rows.clone(),
            matrices: elems.matrices,
            fixed: layout.fixed.clone(),
            colouring: Colouring::cells(layout),
        }
    }

    /// `y = A x`, colour by colour.
    pub fn spmv(&self, cpu: &CpuBackend, x: &[T], y: &mut [T]) {
        let nb = self.nb;
        for (r, yr) in y.iter_mut().enumerate() {
            *yr = if self.fixed[r] { x[r] } else { T::ZERO };
        }
        let out = Disjoint(y.as_mut_ptr());
        cpu.install(|| {
            for cells in &self.colouring.cells {
                cells.par_iter().for_each(|&c| {
                    let out = out;
                    let c = c as usize;
                    let rows = &self.cell_rows[c * nb..(c + 1) * nb];
                    let k = &self.matrices[c * nb * nb..(c + 1) * nb * nb];
                    for i in 0..nb {
                        if rows[i] == NONE {
                            continue;
                        }
                        let mut s = T::ZERO;
                        for j in 0..nb {
                            if rows[j] != NONE {
                                s += k[i * nb + j] * x[rows[j] as usize];
                            }
                        }
                        // SAFETY: rows of cells of one colour are disjoint.
                        unsafe { *out.0.add(rows[i] as usize) += s };
                    }
                });
            }
        });
    }

    pub fn diag(&self) -> Vec<T> {
        let nb = self.nb;
        let mut d: Vec<T> = self.fixed.iter().map(|&f| if f { T::ONE } else { T::ZERO }).collect();
        for c in 0..self.cell_rows.len() / nb {
            for i in 0..nb {
                let r = self.cell_rows[c * nb + i];
                if r != NONE {
                    d[r as usize] += self.matrices[c * nb * nb + i * nb + i];
                }
            }
        }
        d
    }
}

impl<T: Scalar> LinearOperator<CpuBackend, T> for Lma<T> {
    fn rows(&self) -> usize {
        self.n_rows
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        crate::error::same_len("lma spmv", x.len(), self.n_rows)?;
        crate::error::same_len("lma spmv", y.len(), self.n_rows)?;
        self.spmv(cpu, x, y);
        Ok(())
    }
    fn diagonal(&self, _cpu: &CpuBackend) -> Result<Vec<T>> {
        Ok(self.diag())
    }
}
