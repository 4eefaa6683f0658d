//! Element stiffness matrices and load vectors for every cell, computed in
//! parallel on the CPU with the kernels of `fem_core::poisson`.
//!
//! Entries that do not enter the system (an eliminated or fixed row or
//! column) are stored as zero, so every format built from these matrices
//! sees the same operator.

use super::tables::RefTables;
use crate::mesh::Mesh;
use crate::space::Layout;
use crate::{CpuBackend, Error, Result, Scalar};
use fem_core::element::{pow, MAX_VERTICES};
use fem_core::poisson::{self, point_data_len, Coefficients};
use rayon::prelude::*;

/// The two local assembly strategies of Reguly & Giles §4.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalVariant {
    /// Geometry recomputed for every entry and point (registers independent of p).
    Redundant,
    /// Per-point data computed once per element and reused.
    Reuse,
}

/// Dense element matrices (row-major, `nb × nb` per cell, cells in order)
/// and element load vectors (`nb` per cell).
#[derive(Clone, Debug)]
pub struct ElementMatrices<T> {
    pub nb: usize,
    pub matrices: Vec<T>,
    pub loads: Vec<T>,
}

impl<T> ElementMatrices<T> {
    pub fn n_cells(&self) -> usize {
        self.loads.len() / self.nb
    }
}

/// Quadrature points per direction used for degree `p`: exact for the
/// stiffness of affine elements and one more than needed for the load.
pub fn quadrature_points(p: usize) -> usize {
    p + 2
}

fn vertices<T: Scalar, const D: usize>(mesh: &Mesh, c: usize) -> [[T; D]; MAX_VERTICES] {
    let v = mesh.cell_vertices::<D>(c);
    let mut out = [[T::ZERO; D]; MAX_VERTICES];
    for (o, vi) in out.iter_mut().zip(v) {
        for a in 0..D {
            o[a] = T::from_f64(vi[a]);
        }
    }
    out
}

fn assemble_dim<T: Scalar, C: Coefficients<T, D> + Sync, const D: usize>(
    cpu: &CpuBackend,
    mesh: &Mesh,
    layout: &Layout,
    degree: usize,
    variant: LocalVariant,
    coeff: &C,
) -> Result<ElementMatrices<T>> {
    let tables = RefTables::<T>::new(degree, quadrature_points(degree));
    let tab = tables.view();
    let nb = pow(degree + 1, D);
    let n_cells = layout.n_cells();
    let mut matrices = vec![T::ZERO; n_cells * nb * nb];
    let mut loads = vec![T::ZERO; n_cells * nb];
    let nq_total = pow(tab.nq, D);
    let bad = cpu.install(|| {
        matrices
            .par_chunks_mut(nb * nb)
            .zip(loads.par_chunks_mut(nb))
            .enumerate()
            .map_init(
                || vec![T::ZERO; nq_total * point_data_len(D)],
                |data, (c, (k, l))| {
                    let verts = vertices::<T, D>(mesh, c);
                    let min_det = poisson::point_data(&tab, &verts, coeff, data);
                    for i in 0..nb {
                        let row = layout.cell_rows[c * nb + i];
                        let active = row != crate::space::dirichlet::NONE && !layout.fixed[row as usize];
                        if active {
                            l[i] = match variant {
                                LocalVariant::Redundant => poisson::load_redundant(&tab, &verts, coeff, i),
                                LocalVariant::Reuse => poisson::load_reuse::<T, D>(&tab, data, i),
                            };
                        }
                        for j in i..nb {
                            if !layout.couples(c, i, j) {
                                continue;
                            }
                            let v = match variant {
                                LocalVariant::Redundant => poisson::stiffness_redundant(&tab, &verts, coeff, i, j),
                                LocalVariant::Reuse => poisson::stiffness_reuse::<T, D>(&tab, data, i, j),
                            };
                            k[i * nb + j] = v;
                            k[j * nb + i] = v;
                        }
                    }
                    (!(min_det > T::ZERO)).then_some(c)
                },
            )
            .find_any(|bad| bad.is_some())
            .flatten()
    });
    if let Some(c) = bad {
        return Err(Error::InvalidArgument(format!("cell {c} has a non-positive Jacobian at a quadrature point")));
    }
    Ok(ElementMatrices { nb, matrices, loads })
}

/// Element matrices and loads of −∇·(κ∇u) = f on every cell.
pub fn assemble<T: Scalar, C: Coefficients<T, 2> + Coefficients<T, 3> + Sync>(
    cpu: &CpuBackend,
    mesh: &Mesh,
    layout: &Layout,
    degree: usize,
    variant: LocalVariant,
    coeff: &C,
) -> Result<ElementMatrices<T>> {
    match mesh.dim {
        2 => assemble_dim::<T, C, 2>(cpu, mesh, layout, degree, variant, coeff),
        _ => assemble_dim::<T, C, 3>(cpu, mesh, layout, degree, variant, coeff),
    }
}

/// The global load vector: element loads summed into their rows.
pub fn load_vector<T: Scalar>(layout: &Layout, elems: &ElementMatrices<T>) -> Vec<T> {
    let mut b = vec![T::ZERO; layout.n_rows];
    for (k, &r) in layout.cell_rows.iter().enumerate() {
        if r != crate::space::dirichlet::NONE {
            b[r as usize] += elems.loads[k];
        }
    }
    b
}
