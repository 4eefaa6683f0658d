//! Strength of connection (Vaněk, Mandel & Brezina 1996, eq. 3.1; pyamg's
//! `symmetric_strength_of_connection`): nodes `i ≠ j` are strongly
//! connected when `|a_ij| ≥ θ √(|a_ii| |a_jj|)`. Where every node carries
//! `block` unknowns (a vector field), `|a_ij|` is the Frobenius norm of
//! the `block × block` coupling of the two nodes, so aggregates keep a
//! node's components together.

use crate::operator::csr::Csr;
use crate::{CpuBackend, Result};

/// The strong neighbours of every node, itself excluded: node `i`'s are
/// `col[row_ptr[i]..row_ptr[i + 1]]`, ascending.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// Node `i`'s neighbours are `col[row_ptr[i]..row_ptr[i + 1]]`.
    pub row_ptr: Vec<u32>,
    /// The neighbours of every node, ascending within a node.
    pub col: Vec<u32>,
}

impl Graph {
    /// Nodes of the graph.
    pub fn n_nodes(&self) -> usize {
        self.row_ptr.len() - 1
    }

    /// The strong neighbours of node `i`.
    pub fn neighbours(&self, i: usize) -> &[u32] {
        &self.col[self.row_ptr[i] as usize..self.row_ptr[i + 1] as usize]
    }
}

/// The strong couplings of `a`'s nodes of `block` rows at threshold
/// `theta` (0: every nonzero coupling). Couplings whose values are all
/// zero (entries a pattern keeps for rows held fixed) are never strong.
pub fn strength(cpu: &CpuBackend, a: &Csr<f64>, block: usize, theta: f64) -> Result<Graph> {
    let n = a.n_rows / block;
    // squared Frobenius norms of the node couplings
    let norms = super::product::build(cpu, n, |i, terms| {
        for r in i * block..(i + 1) * block {
            for k in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
                terms.push((a.col[k] / block as u32, a.val[k] * a.val[k]));
            }
        }
    })?;
    let diag: Vec<f64> = norms.diag().iter().map(|d| d.sqrt()).collect();
    let strong = super::product::build(cpu, n, |i, terms| {
        for k in norms.row_ptr[i] as usize..norms.row_ptr[i + 1] as usize {
            let (j, s2) = (norms.col[k] as usize, norms.val[k]);
            if j != i && fem_kernels::amg::strong(s2.sqrt(), diag[i], diag[j], theta) {
                terms.push((j as u32, 1.0));
            }
        }
    })?;
    Ok(Graph { row_ptr: strong.row_ptr, col: strong.col })
}
