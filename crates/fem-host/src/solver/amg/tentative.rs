//! The tentative prolongator (Vaněk, Mandel & Brezina 1996, §3; pyamg's
//! `fit_candidates`) on the host: the near-nullspace fitted on every
//! aggregate by [`fem_kernels::amg::fit`], as the GPU set-up fits it, and
//! the zeros of `Q` (a dependent vector's column, the other components of
//! a translation) left out of the matrix.

use crate::operator::csr::Csr;
use crate::{CpuBackend, Error, Result};
use fem_kernels::amg::fit::fit_aggregate;
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
                let list = &nodes[start[a]..start[a + 1]];
                let m = list.len() * block;
                let (mut q, mut r) = (vec![0.0; m * k], vec![0.0; k * k]);
                let qp = q.as_mut_ptr();
                // SAFETY: `b` holds k values a row for every unknown, `q`
                // k for each of the m, `r` k²
                unsafe { fit_aggregate(m, k, b.values.as_ptr(), |l| list[l / block] as usize * block + l % block, |l| qp.add(l * k), r.as_mut_ptr()) };
                (q, r)
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
