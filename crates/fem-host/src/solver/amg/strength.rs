//! Strength of connection (Vaněk, Mandel & Brezina 1996, eq. 3.1; pyamg's
//! `symmetric_strength_of_connection`): nodes `i ≠ j` are strongly
//! connected when `|a_ij| ≥ θ √(|a_ii| |a_jj|)`. Where every node carries
//! `block` unknowns (a vector field), `|a_ij|` is the Frobenius norm of
//! the `block × block` coupling of the two nodes, so aggregates keep a
//! node's components together.

use crate::operator::csr::Csr;
use crate::CpuBackend;
use rayon::prelude::*;

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

/// Node `i`'s couplings: (node, squared Frobenius norm), nodes ascending.
fn couplings(a: &Csr<f64>, block: usize, i: usize) -> Vec<(u32, f64)> {
    let terms = (i * block..(i + 1) * block).flat_map(|r| (a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize).map(move |k| (a.col[k] / block as u32, a.val[k] * a.val[k]))).collect();
    let (col, val) = super::product::merge(terms);
    col.into_iter().zip(val).collect()
}

/// The strong couplings of `a`'s nodes of `block` rows at threshold
/// `theta` (0: every nonzero coupling). Couplings whose values are all
/// zero (entries a pattern keeps for rows held fixed) are never strong.
pub fn strength(cpu: &CpuBackend, a: &Csr<f64>, block: usize, theta: f64) -> Graph {
    let n = a.n_rows / block;
    let diag: Vec<f64> = cpu.install(|| (0..n).into_par_iter().map(|i| couplings(a, block, i).into_iter().find(|c| c.0 as usize == i).map_or(0.0, |c| c.1.sqrt())).collect());
    let rows: Vec<Vec<u32>> = cpu.install(|| {
        (0..n)
            .into_par_iter()
            .map(|i| {
                couplings(a, block, i)
                    .into_iter()
                    .filter(|&(j, s2)| {
                        let j = j as usize;
                        j != i && s2 > 0.0 && s2.sqrt() >= theta * (diag[i] * diag[j]).sqrt()
                    })
                    .map(|c| c.0)
                    .collect()
            })
            .collect()
    });
    let mut g = Graph { row_ptr: Vec::with_capacity(n + 1), col: Vec::new() };
    g.row_ptr.push(0);
    for r in rows {
        g.col.extend_from_slice(&r);
        g.row_ptr.push(g.col.len() as u32);
    }
    g
}
