//! Strength of connection (Vaněk, Mandel & Brezina 1996, eq. 3.1; pyamg's
//! `symmetric_strength_of_connection`): nodes `i ≠ j` are strongly
//! connected when `|a_ij| ≥ θ √(|a_ii| |a_jj|)`. Where every node carries
//! `block` unknowns (a vector field), `|a_ij|` is the Frobenius norm of
//! the `block × block` coupling of the two nodes, so aggregates keep a
//! node's components together.

use crate::operator::csr::Csr;
use crate::{CpuBackend, Error, Result};
use fem_kernels::amg::nodes::{node_couplings, MAX_BLOCK};

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
    let norms = node_graph(cpu, a, block)?;
    let diag = norms.diag();
    let strong = super::product::build(cpu, norms.n_rows, |i, terms| {
        for k in norms.row_ptr[i] as usize..norms.row_ptr[i + 1] as usize {
            let j = norms.col[k] as usize;
            if j != i && fem_kernels::amg::strong(norms.val[k], diag[i], diag[j], theta) {
                terms.push((j as u32, 1.0));
            }
        }
    })?;
    Ok(Graph { row_ptr: strong.row_ptr, col: strong.col })
}

/// The node graph of `a` (`block` rows a node): the Frobenius norms of
/// the node couplings, as the GPU set-up forms them
/// ([`fem_kernels::amg::nodes::node_couplings`]).
pub fn node_graph(cpu: &CpuBackend, a: &Csr<f64>, block: usize) -> Result<Csr<f64>> {
    if !(1..=MAX_BLOCK).contains(&block) {
        return Err(Error::InvalidArgument(format!("AMG takes 1 to {MAX_BLOCK} unknowns a node, not {block}")));
    }
    super::product::build(cpu, a.n_rows / block, |i, terms| unsafe {
        node_couplings(i, block, a.row_ptr.as_ptr(), a.col.as_ptr(), a.val.as_ptr(), |j, s2| terms.push((j, s2.sqrt())));
    })
}
