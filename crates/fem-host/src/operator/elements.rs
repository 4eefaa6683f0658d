//! Element stiffness matrices and load vectors of every cell, computed in
//! parallel on the CPU by the per-cell kernel the GPU runs too
//! (`fem_kernels::cells::assemble`), in the transposed LMA layout.

use super::cell_data::{CellData, Disjoint};
use super::tables::RefTables;
use crate::{CpuBackend, Error, Result, Scalar};
use fem_core::poisson::{Coefficients, Scaled, SinePoisson};
use fem_kernels::cells::{self, Strategy};
use fem_kernels::sparse::sym_index;
use fem_kernels::with_element;
use rayon::prelude::*;

pub use fem_kernels::cells::Strategy as LocalVariant;

/// Element matrices (`vals[(i·nb + j)·ne + e]`, or packed symmetric
/// `vals[sym(i, j)·ne + e]`) and loads (`load[i·ne + e]`).
#[derive(Clone, Debug)]
pub struct ElementMatrices<T> {
    /// Basis functions per cell (each matrix is `nb × nb`).
    pub nb: usize,
    /// Cells.
    pub ne: usize,
    /// Whether only the upper triangle is stored, `nb (nb + 1) / 2` entries per cell.
    pub symmetric: bool,
    /// Element matrix entries, cell index fastest (see above).
    pub vals: Vec<T>,
    /// Element load vectors, `load[i·ne + e]`.
    pub load: Vec<T>,
}

impl<T: Scalar> ElementMatrices<T> {
    /// Entry (i, j) of cell `e`.
    pub fn get(&self, e: usize, i: usize, j: usize) -> T {
        let k = if self.symmetric { sym_index(i.min(j), i.max(j), self.nb) } else { i * self.nb + j };
        self.vals[k * self.ne + e]
    }
}

/// Quadrature points per direction for degree `p`: exact for the stiffness
/// of affine elements, one more than needed for the load.
pub fn quadrature_points(p: usize) -> usize {
    p + 2
}

/// The unsupported-degree error of the specialised kernels.
pub fn unsupported(dim: usize, p: usize) -> Error {
    Error::InvalidArgument(format!("degree {p} in {dim}D has no specialised kernels (2D: 1..=6, 3D: 1..=4)"))
}

/// Assembles every cell's element matrix and load of the sine problem on
/// the CPU.
pub fn assemble<T: Scalar>(cpu: &CpuBackend, cd: &CellData<T>, strategy: Strategy, symmetric: bool) -> Result<ElementMatrices<T>> {
    assemble_with(cpu, cd, strategy, symmetric, &SinePoisson)
}

/// Assembles every cell's element matrix and load for coefficients `coeff`.
pub fn assemble_with<T: Scalar, C: Coefficients<T, 2> + Coefficients<T, 3> + Sync>(
    cpu: &CpuBackend,
    cd: &CellData<T>,
    strategy: Strategy,
    symmetric: bool,
    coeff: &C,
) -> Result<ElementMatrices<T>> {
    let (ne, nb) = (cd.ne, cd.nb);
    let len = if symmetric { nb * (nb + 1) / 2 } else { nb * nb };
    let mut vals = vec![T::ZERO; len * ne];
    let mut load = vec![T::ZERO; nb * ne];
    let tables = RefTables::<T>::new(cd.degree, quadrature_points(cd.degree));
    let tab = tables.view();
    let (v, l) = (Disjoint(vals.as_mut_ptr()), Disjoint(load.as_mut_ptr()));
    let bad = with_element!(cd.dim, cd.degree, D, NB, QD => cpu.install(|| {
        (0..ne).into_par_iter().find_any(|&e| {
            let (v, l) = (v, l);
            // SAFETY: cell e writes only its own strided entries.
            unsafe {
                let verts = cells::vertices::<T, D>(e, ne, cd.verts.as_ptr());
                let rows: [u32; NB] = core::array::from_fn(|i| cd.map[i * ne + e]);
                let coeff = &Scaled { factor: cd.kappa[e], inner: coeff };
                let min_det = if symmetric {
                    cells::assemble::<T, _, D, NB, QD, true>(e, ne, &tab, &verts, coeff, &rows, strategy, v.0, l.0)
                } else {
                    cells::assemble::<T, _, D, NB, QD, false>(e, ne, &tab, &verts, coeff, &rows, strategy, v.0, l.0)
                };
                !(min_det > T::ZERO)
            }
        })
    }))
    .ok_or_else(|| unsupported(cd.dim, cd.degree))?;
    if let Some(e) = bad {
        return Err(Error::InvalidArgument(format!("cell {e} has a non-positive Jacobian at a quadrature point")));
    }
    Ok(ElementMatrices { nb, ne, symmetric, vals, load })
}

/// The global load vector: element loads summed into their (free) rows.
pub fn load_vector<T: Scalar>(cd: &CellData<T>, elems: &ElementMatrices<T>) -> Vec<T> {
    super::cell_data::sum_into_rows(&cd.map, cd.ne, cd.n_rows, &cd.fixed_rows, T::ZERO, |e, i| elems.load[i * cd.ne + e])
}

/// The diagonal of the operator the element matrices make (1 on fixed rows).
pub fn diagonal<T: Scalar>(cd: &CellData<T>, elems: &ElementMatrices<T>) -> Vec<T> {
    super::cell_data::sum_into_rows(&cd.map, cd.ne, cd.n_rows, &cd.fixed_rows, T::ONE, |e, i| elems.get(e, i, i))
}
