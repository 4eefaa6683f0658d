//! The tentative prolongator (Vaněk, Mandel & Brezina 1996, §3; pyamg's
//! `fit_candidates`): on every aggregate, the near-nullspace vectors
//! restricted to its unknowns are orthonormalised (a thin QR by modified
//! Gram–Schmidt); `Q` gives the prolongator's rows there, `R` the coarse
//! level's near-nullspace, so the vectors are reproduced exactly by the
//! coarse space. A vector that is (numerically) dependent on the others
//! in an aggregate too small to tell them apart gives a zero column.

use crate::operator::csr::Csr;
use crate::{CpuBackend, Error, Result};
use rayon::prelude::*;

/// Near-nullspace vectors: `k` values per row, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Nullspace {
    /// Vectors per row.
    pub k: usize,
    /// `values[r·k + j]`: vector `j` at row `r`.
    pub values: Vec<f64>,
}

impl Nullspace {
    /// One constant vector per component of `block` interleaved components
    /// on `rows` rows: the near-nullspace of a scalar or component-wise
    /// Laplacian.
    pub fn constants(rows: usize, block: usize) -> Self {
        Self { k: block, values: (0..rows * block).map(|i| ((i / block) % block == i % block) as u8 as f64).collect() }
    }

    /// The rigid-body modes of a `dim`-component field at nodes `coords`
    /// (`dim` rows a node): translations, then the rotations about the
    /// centroid (one in 2D, three in 3D): the near-nullspace of elasticity.
    pub fn rigid_body_modes(coords: &[[f64; 3]], dim: usize) -> Result<Self> {
        if !(2..=3).contains(&dim) {
            return Err(Error::InvalidArgument(format!("rigid-body modes need 2 or 3 components, not {dim}")));
        }
        let n = coords.len().max(1) as f64;
        let c: [f64; 3] = std::array::from_fn(|a| coords.iter().map(|x| x[a]).sum::<f64>() / n);
        let k = if dim == 2 { 3 } else { 6 };
        let mut values = vec![0.0; coords.len() * dim * k];
        for (i, x) in coords.iter().enumerate() {
            let (x, y, z) = (x[0] - c[0], x[1] - c[1], x[2] - c[2]);
            let rot: &[[f64; 3]] = if dim == 2 { &[[-y, x, 0.0]] } else { &[[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]] };
            for a in 0..dim {
                let row = &mut values[(i * dim + a) * k..][..k];
                row[a] = 1.0;
                for (m, r) in rot.iter().enumerate() {
                    row[dim + m] = r[a];
                }
            }
        }
        Ok(Self { k, values })
    }

    /// Rows it covers.
    pub fn rows(&self) -> usize {
        self.values.len() / self.k.max(1)
    }
}

/// Relative size below which an orthogonalised vector counts as
/// dependent on the ones before it.
const DEPENDENT: f64 = 1e-10;

/// The tentative prolongator of `aggregates` (one per node of `block`
/// rows, [`super::aggregate::NONE`] for none; `n_agg` of them)
/// for the vectors `b`: `rows × (n_agg·k)`, and the coarse vectors.
pub fn tentative(cpu: &CpuBackend, aggregates: &[u32], n_agg: usize, block: usize, b: &Nullspace) -> Result<(Csr<f64>, Nullspace)> {
    let (k, rows) = (b.k, aggregates.len() * block);
    if b.rows() != rows || k == 0 {
        return Err(Error::InvalidArgument(format!("near-nullspace of {} rows and {k} vectors for an operator of {rows} rows", b.rows())));
    }
    // the nodes of every aggregate, ascending
    let mut start = vec![0usize; n_agg + 1];
    for &a in aggregates.iter().filter(|&&a| a != super::aggregate::NONE) {
        start[a as usize + 1] += 1;
    }
    for a in 0..n_agg {
        start[a + 1] += start[a];
    }
    // and each node's place in its aggregate
    let mut fill = start.clone();
    let (mut nodes, mut place) = (vec![0u32; start[n_agg]], vec![0u32; aggregates.len()]);
    for (i, &a) in aggregates.iter().enumerate().filter(|(_, &a)| a != super::aggregate::NONE) {
        let a = a as usize;
        (nodes[fill[a]], place[i]) = (i as u32, (fill[a] - start[a]) as u32);
        fill[a] += 1;
    }
    // (Q rows, R) of every aggregate
    let fits: Vec<(Vec<f64>, Vec<f64>)> = cpu.install(|| {
        (0..n_agg)
            .into_par_iter()
            .map(|a| {
                let unknowns: Vec<usize> = nodes[start[a]..start[a + 1]].iter().flat_map(|&i| (0..block).map(move |c| i as usize * block + c)).collect();
                orthonormalise(unknowns.iter().map(|&r| &b.values[r * k..(r + 1) * k]), unknowns.len(), k)
            })
            .collect()
    });
    // row r is unknown c of node i: row `place[i]·block + c` of its
    // aggregate's Q
    let t = super::product::build(cpu, rows, |r, terms| {
        let (i, c) = (r / block, r % block);
        if aggregates[i] != super::aggregate::NONE {
            let a = aggregates[i] as usize;
            let q = &fits[a].0[(place[i] as usize * block + c) * k..][..k];
            terms.extend((0..k).filter(|&j| q[j] != 0.0).map(|j| ((a * k + j) as u32, q[j])));
        }
    })?;
    let coarse = Nullspace { k, values: fits.iter().flat_map(|f| f.1.iter().copied()).collect() };
    Ok((t, coarse))
}

/// The thin QR of the `m × k` matrix whose rows `rows` yields: `Q`
/// (`m × k`, row-major; zero columns for dependent vectors) and `R`
/// (`k × k`, row-major).
fn orthonormalise<'a>(rows: impl Iterator<Item = &'a [f64]>, m: usize, k: usize) -> (Vec<f64>, Vec<f64>) {
    let mut q: Vec<f64> = rows.flat_map(|r| r.iter().copied()).collect();
    let mut r = vec![0.0; k * k];
    for j in 0..k {
        let norm0 = (0..m).map(|i| q[i * k + j].powi(2)).sum::<f64>().sqrt();
        for i in 0..j {
            let d: f64 = (0..m).map(|l| q[l * k + i] * q[l * k + j]).sum();
            r[i * k + j] = d;
            for l in 0..m {
                q[l * k + j] -= d * q[l * k + i];
            }
        }
        let norm = (0..m).map(|i| q[i * k + j].powi(2)).sum::<f64>().sqrt();
        if norm > DEPENDENT * norm0 && norm > 0.0 {
            r[j * k + j] = norm;
            for l in 0..m {
                q[l * k + j] /= norm;
            }
        } else {
            for l in 0..m {
                q[l * k + j] = 0.0;
            }
        }
    }
    (q, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// T R reproduces the near-nullspace on every aggregated row (zero on
    /// the others), T's columns are orthonormal, and a two-node aggregate
    /// of 3D elasticity loses only its dependent rotation.
    #[test]
    fn the_coarse_space_reproduces_the_near_nullspace() {
        let cpu = CpuBackend::new(None).unwrap();
        let coords: Vec<[f64; 3]> = (0..9).map(|i| [i as f64 * 0.3, (i * i % 5) as f64, (i % 2) as f64]).collect();
        let b = Nullspace::rigid_body_modes(&coords, 3).unwrap();
        let aggregates = [0, 0, 1, 1, 1, super::super::aggregate::NONE, 2, 2, 2];
        let (t, bc) = tentative(&cpu, &aggregates, 3, 3, &b).unwrap();
        assert_eq!((t.n_rows, bc.rows()), (27, 18));
        let k = 6;
        for r in 0..27 {
            let span = t.row_ptr[r] as usize..t.row_ptr[r + 1] as usize;
            for j in 0..k {
                let got: f64 = t.col[span.clone()].iter().zip(&t.val[span.clone()]).map(|(&c, &v)| v * bc.values[c as usize * k + j]).sum();
                let want = if r / 3 == 5 { 0.0 } else { b.values[r * k + j] };
                assert!((got - want).abs() < 1e-12, "row {r} vector {j}: {got} against {want}");
            }
        }
        let tt = crate::solver::transfer::transpose(&t, 18);
        let gram = super::super::product::multiply(&cpu, &tt, &t).unwrap();
        for c in 0..18 {
            let diag = gram.position(c, c as u32).map_or(0.0, |p| gram.val[p]);
            // the first aggregate has two nodes: its rotation about their
            // axis is dependent, so one column is zero
            assert!(diag == 0.0 && c / 6 == 0 || (diag - 1.0).abs() < 1e-12, "column {c}: {diag}");
        }
        let zero = (0..6).filter(|&c| gram.position(c, c as u32).is_none()).count();
        assert_eq!(zero, 1);
        assert!(tentative(&cpu, &aggregates, 3, 2, &b).is_err());
    }
}
