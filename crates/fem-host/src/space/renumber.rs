//! Renumbering the nodes of a space, and of every level of nested spaces,
//! by one of the orderings of [`crate::solver::ordering`]. The numbering
//! decides the bandwidth of every matrix assembled on the space (so its
//! SpMV's memory access) and what order-dependent preconditioners (SSOR,
//! SAINV) compute; Geveler et al. §4 measure its effect on multigrid. A
//! renumbered space is the same space: operators, transfers and output
//! are built from it as from any other.

use super::{NestedSpaces, Space};
use crate::operator::csr::Csr;
use crate::operator::pointwise::field_layout;
use crate::solver::ordering::{inverse, permutations, Ordering};
use crate::{CpuBackend, Error, Result};
use rayon::prelude::*;
use std::sync::OnceLock;

impl Space {
    /// The space with node `perm[new]` renumbered `new`: cells, mesh and
    /// facets unchanged, node positions and boundary flags moved with
    /// their nodes. An error unless `perm` is a permutation of the nodes.
    pub fn renumbered(mut self, perm: &[u32]) -> Result<Space> {
        let n = self.n_dofs;
        let new = inverse(perm).filter(|_| perm.len() == n).ok_or_else(|| Error::InvalidArgument(format!("a renumbering of {n} nodes must be a permutation of them")))?;
        // one array made at a time, the old one let go of as the new one
        // takes its place: a level's nodes are not held twice
        self.cell_dofs.par_iter_mut().for_each(|d| *d = new[*d as usize]);
        drop(new);
        self.dof_coords = perm.par_iter().map(|&o| self.dof_coords[o as usize]).collect();
        self.boundary = perm.par_iter().map(|&o| self.boundary[o as usize]).collect();
        // the cells are in the same order: a node's first slot is its old
        // node's
        if let Some(s) = self.owner_slots.take() {
            self.owner_slots = OnceLock::from(perm.par_iter().map(|&o| s[o as usize]).collect::<Vec<u32>>());
        }
        // the mesh's arrays stay: a renumbering changes only the nodes
        Ok(self)
    }
}

impl NestedSpaces {
    /// Every level renumbered by `ordering` (`seed` for the random one),
    /// the orderings reading each level's node graph, node positions and
    /// the interpolation from the level below.
    pub fn renumbered(self, cpu: &CpuBackend, ordering: Ordering, seed: u64) -> Result<Self> {
        if ordering == Ordering::Original {
            return Ok(self);
        }
        // each ordering reads only what it needs: graphs (CM), transfers
        // (2LV, Hie) or positions (XYZ); every one the level sizes
        let graphs = self
            .spaces
            .iter()
            .map(|s| match ordering {
                Ordering::CuthillMcKee => Csr::<f64>::pattern(cpu, &field_layout(s, 1)),
                _ => Ok(Csr { n_rows: s.n_dofs, row_ptr: vec![0; s.n_dofs + 1], col: Vec::new(), val: Vec::new() }),
            })
            .collect::<Result<Vec<_>>>()?;
        let p = match ordering {
            Ordering::TwoLevel | Ordering::Hierarchical => (0..self.levels() - 1).map(|l| self.interpolation(l)).collect::<Result<Vec<_>>>()?,
            _ => Vec::new(),
        };
        let coords: Vec<&[[f64; 3]]> = match ordering {
            Ordering::Xyz => self.spaces.iter().map(|s| s.dof_coords.as_slice()).collect(),
            _ => Vec::new(),
        };
        let perms = cpu.install(|| permutations(&graphs, &p, &coords, ordering, seed));
        let spaces = cpu.install(|| self.spaces.into_iter().zip(&perms).map(|(s, p)| s.renumbered(p)).collect::<Result<_>>())?;
        Ok(Self { spaces, parents: self.parents, children: self.children })
    }
}
