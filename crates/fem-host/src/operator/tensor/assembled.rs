//! A low-degree CEED operator assembled into CSR: the Q1 level of
//! `fem bp`'s p-multigrid, whose AMG needs the matrix. Each element
//! matrix comes from the element operator applied to the local unit
//! vectors, so the assembled matrix is exactly the operator the
//! matrix-free kernels apply (their quadrature, their factors).

use super::TensorOperator;
use crate::mesh::adjacency::VertexCells;
use crate::operator::csr::Csr;
use crate::{CpuBackend, Error, Result};
use rayon::prelude::*;

/// The highest degree [`TensorOperator::assembled`] takes: beyond it the
/// (N + 1)³ element products and the element matrices cost more than a
/// low-order level should.
pub const MAX_ASSEMBLED_DEGREE: usize = 2;

impl TensorOperator {
    /// `Rᵀ A_E R` as CSR: the element matrices by (N + 1)³ E-vector
    /// products with unit vectors, summed row by row in parallel (each
    /// row from the elements around it, so no two threads write one
    /// value). Degrees up to [`MAX_ASSEMBLED_DEGREE`].
    pub fn assembled(&self, cpu: &CpuBackend) -> Result<Csr<f64>> {
        if self.degree > MAX_ASSEMBLED_DEGREE {
            return Err(Error::InvalidArgument(format!("the CEED operators are assembled up to degree {MAX_ASSEMBLED_DEGREE} (the low-order level), not {}", self.degree)));
        }
        let (np, ne, n) = (self.np(), self.elements, self.restriction.rows());
        let map = &self.restriction.map;
        let k = self.element_matrices(cpu)?;
        let pattern = Csr::<f64>::cells_pattern(cpu, n, np, map, &[])?;
        let around = VertexCells::of_ids(ne, n, |c| &map[c * np..(c + 1) * np]);
        cpu.install(|| {
            Csr::from_row_fn(n, |r| pattern.row_len(r), |r, cols, vals| {
                let s = pattern.row_ptr[r] as usize;
                cols.copy_from_slice(&pattern.col[s..s + cols.len()]);
                for &c in &around.cells[around.start[r]..around.start[r + 1]] {
                    let (c, rows) = (c as usize, &map[c as usize * np..(c as usize + 1) * np]);
                    for i in (0..np).filter(|&i| rows[i] as usize == r) {
                        for (j, &col) in rows.iter().enumerate() {
                            let p = cols.binary_search(&col).expect("the pattern holds every coupling of the cells");
                            vals[p] += k[(c * np + i) * np + j];
                        }
                    }
                }
            })
        })
    }

    /// Every element's matrix, `k[(e·np + i)·np + j]`: column j from the
    /// element operators applied to the E-vector of unit j in each element.
    fn element_matrices(&self, cpu: &CpuBackend) -> Result<Vec<f64>> {
        let (np, ne) = (self.np(), self.elements);
        let mut k = vec![0.0; ne * np * np];
        let (mut x, mut y) = (vec![0.0; ne * np], vec![0.0; ne * np]);
        cpu.install(|| {
            for j in 0..np {
                x.par_iter_mut().enumerate().for_each(|(m, v)| *v = if m % np == j { 1.0 } else { 0.0 });
                self.apply_elements(&x, &mut y)?;
                k.par_chunks_mut(np * np).zip(y.par_chunks(np)).for_each(|(ke, ye)| ye.iter().enumerate().for_each(|(i, &v)| ke[i * np + j] = v));
            }
            Ok(k)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::spectral::{Deformation, SpectralBox};
    use crate::operator::tensor::Problem;
    use crate::operator::LinearOperator;

    /// The assembled BP3.5 and BP3.0 operators at N = 1 and 2 on a
    /// deformed grid of 3 × 2 × 2 cells give the matrix-free product of
    /// a random vector, with symmetric matrices; degree 3 is refused.
    #[test]
    fn assembled_operators_equal_the_matrix_free_product() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let mut r = crate::rng::SplitMix64::new(3);
        for problem in [Problem::Bp35, Problem::Bp30, Problem::Bp1] {
            for degree in 1..=2 {
                let mesh = SpectralBox::new(degree, [3, 2, 2], Deformation::Trilinear { amplitude: 0.1, seed: 2 }).unwrap();
                let op = TensorOperator::new(problem, &mesh, 1.5).unwrap();
                let a = op.assembled(&cpu).unwrap();
                let x: Vec<f64> = (0..mesh.n_nodes).map(|_| r.next_f64() - 0.5).collect();
                let (mut want, mut got) = (vec![0.0; mesh.n_nodes], vec![0.0; mesh.n_nodes]);
                op.apply(&cpu, &x, &mut want).unwrap();
                a.spmv(&cpu, &x, &mut got);
                let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let err = got.iter().zip(&want).fold(0.0f64, |m, (g, w)| m.max((g - w).abs()));
                assert!(err <= 1e-13 * scale, "{problem:?} N = {degree}: {err:e}");
                for row in 0..a.n_rows {
                    for p in a.row_ptr[row] as usize..a.row_ptr[row + 1] as usize {
                        let t = a.position(a.col[p] as usize, row as u32).map(|q| a.val[q]);
                        assert!(t.is_some_and(|t| (t - a.val[p]).abs() <= 1e-13 * scale), "{problem:?} N = {degree}: ({row}, {})", a.col[p]);
                    }
                }
            }
        }
        let mesh = SpectralBox::new(3, [1, 1, 1], Deformation::None).unwrap();
        let e = TensorOperator::new(Problem::Bp35, &mesh, 1.0).unwrap().assembled(&cpu).err().unwrap().to_string();
        assert!(e.contains("degree"), "{e}");
    }
}
