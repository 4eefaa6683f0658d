//! The matrix-free operator: element matrices are recomputed in every
//! product and applied at once (Reguly & Giles §3.4, §9); nothing but the
//! mesh and the element map is stored.

use super::cell_data::CellData;
use crate::sparse::SharedOut;
use super::colouring::Colouring;
use super::elements::{quadrature_points, unsupported};
use super::lma::{init_fixed, scatter};
use super::tables::RefTables;
use super::LinearOperator;
use crate::space::Layout;
use crate::{CpuBackend, Result, Scalar};
use fem_core::element::MAX_VERTICES;
use fem_core::poisson::{Scaled, SinePoisson};
use fem_kernels::cells::{diagonal_and_load, matrix_free_product, vertices};
use fem_kernels::sparse::gather;
use fem_kernels::with_element;
use rayon::prelude::*;

/// The stiffness operator applied matrix-free on the CPU.
#[derive(Clone, Debug)]
pub struct MatrixFree<T> {
    /// The cells whose element matrices every product recomputes.
    pub cells: CellData<T>,
    /// Reference tables of the cells' degree, with `p + 2` quadrature points.
    pub tables: RefTables<T>,
    /// Cell colouring that makes the scatter race-free.
    pub colouring: Colouring,
    /// The diagonal, computed once at set-up for Jacobi.
    pub diagonal: Vec<T>,
}

impl<T: Scalar> MatrixFree<T> {
    /// The operator on `cells` (the cells of `layout`) and its load
    /// vector: the diagonal (1 on fixed rows) and the load summed cell by
    /// cell, colour by colour, no element matrix formed.
    pub fn new(cpu: &CpuBackend, layout: &Layout, cells: CellData<T>) -> Result<(Self, Vec<T>)> {
        let tables = RefTables::new(cells.degree, quadrature_points(cells.degree));
        let colouring = Colouring::cells(layout);
        let mut diagonal = vec![T::ZERO; cells.n_rows];
        let mut load = vec![T::ZERO; cells.n_rows];
        for &r in &cells.fixed_rows {
            diagonal[r as usize] = T::ONE;
        }
        let (d, l) = (SharedOut(diagonal.as_mut_ptr()), SharedOut(load.as_mut_ptr()));
        let (tab, cd, ne) = (tables.view(), &cells, cells.ne);
        with_element!(cd.dim, cd.degree, D, NB, QD => cpu.install(|| each_coloured_cell::<T, D>(&colouring, cd, |e, verts, coeff| {
            let rows: [u32; NB] = std::array::from_fn(|i| cd.map[i * ne + e]);
            let (dl, ll) = diagonal_and_load::<T, _, D, NB>(&tab, verts, coeff, &rows);
            // SAFETY: cells of one colour touch disjoint rows.
            unsafe {
                scatter(&rows, &dl, d);
                scatter(&rows, &ll, l);
            }
        })))
        .ok_or_else(|| unsupported(cd.dim, cd.degree))?;
        Ok((Self { cells, tables, colouring, diagonal }, load))
    }

    fn spmv(&self, cpu: &CpuBackend, x: &[T], y: &mut [T]) -> Result<()> {
        let cd = &self.cells;
        init_fixed(cd, x, y);
        let out = SharedOut(y.as_mut_ptr());
        let tab = self.tables.view();
        let ne = cd.ne;
        with_element!(cd.dim, cd.degree, D, NB, QD => cpu.install(|| each_coloured_cell::<T, D>(&self.colouring, cd, |e, verts, coeff| {
            // SAFETY: the map's rows index `x`; cells of one colour touch
            // disjoint rows.
            unsafe {
                let (rows, xl) = gather::<T, NB>(e, ne, cd.map.as_ptr(), x.as_ptr());
                scatter(&rows, &matrix_free_product::<T, _, D, NB>(&tab, verts, coeff, &rows, &xl), out);
            }
        })))
        .ok_or_else(|| unsupported(cd.dim, cd.degree))
    }
}

/// Runs `f(e, vertices, coefficients)` for every cell of `cd`, the cells
/// of one colour in parallel and the colours in turn, so that `f` may add
/// into its cell's rows without atomics: the loop of the product and of
/// the set-up.
fn each_coloured_cell<T: Scalar, const D: usize>(colouring: &Colouring, cd: &CellData<T>, f: impl Fn(usize, &[[T; D]; MAX_VERTICES], &Scaled<'_, T, SinePoisson>) + Sync) {
    for colour in &colouring.cells {
        colour.par_iter().for_each(|&e| {
            let e = e as usize;
            // SAFETY: `verts` holds the 2^D × D coordinates of every cell.
            let verts = unsafe { vertices::<T, D>(e, cd.ne, cd.verts.as_ptr()) };
            f(e, &verts, &Scaled { factor: cd.kappa[e], inner: &SinePoisson });
        });
    }
}

impl<T: Scalar> LinearOperator<CpuBackend, T> for MatrixFree<T> {
    fn rows(&self) -> usize {
        self.cells.n_rows
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        if !crate::error::product_lens("matrix-free apply", self.cells.n_rows, x.len(), y.len())? {
            return Ok(());
        }
        self.spmv(cpu, x, y)
    }
    fn diagonal(&self, _cpu: &CpuBackend) -> Result<Vec<T>> {
        Ok(self.diagonal.clone())
    }
    fn name(&self) -> String {
        "matrix-free".into()
    }
}
