//! A rank's piece of a partitioned space: the nodes it owns, the ghost
//! nodes it reads from their owners, and the cells it assembles on, with
//! the halo lists both ways.
//!
//! A node belongs to the lowest rank among its cells' ranks. A rank
//! assembles every cell that has a node it owns (its own cells that do,
//! and one layer of its neighbours' cells), so the rows of the nodes it
//! owns are complete: an operator applied to owned values and ghost values
//! gives the owned rows exactly, with one exchange of ghost values before
//! it (PETSc's and MFEM's layout of a distributed matrix). It also keeps
//! its own cells that have no node it owns, so that its output piece
//! covers every cell the partition gives it.
//!
//! Local numbering: owned nodes first (in global order), then ghosts
//! grouped by owner (in global order within each), so that the values
//! from one owner land in one contiguous range. The distributed global
//! numbering is this rank's offset plus the local index of an owned node.
//!
//! Every piece is cut where the whole space is ([`Piece::split`], on rank
//! 0): the send lists then follow from the receivers' ghost lists without
//! a message.

use super::comm::Communicator;
use super::partition::Partition;
use crate::space::{Constraints, Load, Space};
use crate::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;

/// One rank's share of a partitioned space.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    /// Cells of the whole space this rank assembles, in global order.
    pub cells: Vec<u32>,
    /// The partition's cells of this rank, as indices into `cells`: what
    /// its output piece shows.
    pub own_cells: Vec<u32>,
    /// The whole space's node of every local node.
    pub nodes: Vec<u32>,
    /// Local nodes this rank owns: the first `owned` of `nodes`.
    pub owned: usize,
    /// The distributed number of the first owned node (the owned nodes of
    /// lower ranks come before).
    pub first: usize,
    /// Nodes of the whole space.
    pub global: usize,
    /// Ghost slots filled from each owner: (rank, local nodes).
    pub recv: Vec<(usize, Range<usize>)>,
    /// Owned local nodes each other rank reads as ghosts: (rank, local
    /// nodes, in that rank's order of its ghost slots).
    pub send: Vec<(usize, Vec<u32>)>,
}

/// Owner of every node: the lowest rank among its cells.
pub fn owners(space: &Space, partition: &Partition) -> Vec<u32> {
    let nb = space.nb();
    let mut owner = vec![u32::MAX; space.n_dofs];
    for (c, &r) in partition.rank.iter().enumerate() {
        for &d in &space.cell_dofs[c * nb..(c + 1) * nb] {
            owner[d as usize] = owner[d as usize].min(r);
        }
    }
    owner
}

impl Piece {
    /// Every rank's piece of `space` split by `partition`, in rank order.
    pub fn split(space: &Space, partition: &Partition) -> Result<Vec<Self>> {
        let size = partition.parts;
        if partition.rank.len() != space.n_cells() || partition.rank.iter().any(|&r| r as usize >= size) {
            return Err(Error::InvalidArgument(format!("a partition into {size} parts of {} cells does not fit a space of {} cells", partition.rank.len(), space.n_cells())));
        }
        let owner = owners(space, partition);
        if let Some(n) = owner.iter().position(|&o| o == u32::MAX) {
            return Err(Error::InvalidArgument(format!("node {n} lies in no cell, so no rank owns it")));
        }
        let mut first = vec![0usize; size + 1];
        owner.iter().for_each(|&o| first[o as usize + 1] += 1);
        for q in 0..size {
            first[q + 1] += first[q];
        }
        let mut pieces: Vec<Self> = (0..size).into_par_iter().map(|me| Self::of_rank(space, partition, &owner, me as u32, first[me])).collect();
        // what r reads from q, q sends r: q's local positions of r's ghosts
        for r in 0..size {
            for (q, range) in pieces[r].recv.clone() {
                let (ghosts, from) = (&pieces[r].nodes[range], &pieces[q]);
                let list: Vec<u32> = ghosts.par_iter().map(|g| from.nodes[..from.owned].binary_search(g).map(|i| i as u32).map_err(|_| *g)).collect::<std::result::Result<_, u32>>().map_err(|g| Error::InvalidArgument(format!("rank {r} reads node {g} from rank {q}, which does not own it")))?;
                pieces[q].send.push((r, list));
            }
        }
        Ok(pieces)
    }

    /// Rank `me`'s piece but for its send lists: its first owned node is
    /// `first`.
    fn of_rank(space: &Space, partition: &Partition, owner: &[u32], me: u32, first: usize) -> Self {
        let nb = space.nb();
        let keep = |c: usize| partition.rank[c] == me || space.cell_dofs[c * nb..(c + 1) * nb].iter().any(|&d| owner[d as usize] == me);
        let cells: Vec<u32> = (0..space.n_cells()).into_par_iter().filter(|&c| keep(c)).map(|c| c as u32).collect();
        let own_cells = cells.iter().enumerate().filter(|(_, &c)| partition.rank[c as usize] == me).map(|(k, _)| k as u32).collect();
        let mut nodes: Vec<u32> = cells.par_iter().flat_map_iter(|&c| space.cell_dofs[c as usize * nb..(c as usize + 1) * nb].iter().copied()).collect();
        nodes.par_sort_unstable_by_key(|&g| (owner[g as usize] != me, owner[g as usize], g));
        nodes.dedup();
        let owned = nodes.iter().take_while(|&&g| owner[g as usize] == me).count();
        let mut recv: Vec<(usize, Range<usize>)> = Vec::new();
        for (i, &g) in nodes.iter().enumerate().skip(owned) {
            let q = owner[g as usize] as usize;
            match recv.last_mut() {
                Some((r, range)) if *r == q => range.end = i + 1,
                _ => recv.push((q, i..i + 1)),
            }
        }
        Self { cells, own_cells, nodes, owned, first, global: space.n_dofs, recv, send: Vec::new() }
    }

    /// Nodes in the piece: owned and ghosts.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the piece has no node (a rank that owns nothing and reads
    /// nothing).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The piece's subspace: its cells, its nodes in local order.
    pub fn space(&self, space: &Space) -> Result<Space> {
        space.subspace(&self.cells, &self.nodes).map(|(s, _)| s)
    }

    /// The local values of an `nc`-component field given on the whole
    /// space (`node·nc + component`).
    pub fn restrict<T: Copy>(&self, nc: usize, global: &[T]) -> Vec<T> {
        self.nodes.iter().flat_map(|&g| (0..nc).map(move |c| global[g as usize * nc + c])).collect()
    }

    /// The piece's cells' values of a field given on every cell of the
    /// whole space, `per` values a cell.
    pub fn restrict_cells<T: Copy>(&self, per: usize, global: &[T]) -> Vec<T> {
        self.cells.iter().flat_map(|&c| global[c as usize * per..(c as usize + 1) * per].iter().copied()).collect()
    }

    /// The Dirichlet rows of the whole space's `c` on the piece's space
    /// `local`; an error for values that change in time (not carried to
    /// the pieces yet).
    pub fn constraints(&self, local: &Space, c: &Constraints) -> Result<Constraints> {
        if !c.moving_rows().is_empty() {
            return Err(Error::InvalidArgument("a distributed solve takes Dirichlet values fixed in time".into()));
        }
        let mut out = Constraints::none(local, c.nc);
        out.fixed = self.restrict(c.nc, &c.fixed);
        out.values = self.restrict(c.nc, &c.values);
        Ok(out)
    }

    /// The whole space's load vector on the piece's rows.
    pub fn load(&self, l: &Load) -> Load {
        Load { nc: l.nc, values: self.restrict(l.nc, &l.values) }
    }

    /// The whole field on rank 0 (`None` elsewhere) from each rank's
    /// owned values (`owned·nc` of them, local order). Collective.
    pub fn gather(&self, comm: &dyn Communicator, nc: usize, owned: &[f64]) -> Result<Option<Vec<f64>>> {
        crate::error::same_len("owned values", owned.len(), self.owned * nc)?;
        let mut tagged = Vec::with_capacity(owned.len() + self.owned);
        for (i, &g) in self.nodes[..self.owned].iter().enumerate() {
            tagged.push(g as f64);
            tagged.extend_from_slice(&owned[i * nc..(i + 1) * nc]);
        }
        let Some(all) = comm.gather(&tagged)? else { return Ok(None) };
        let mut out = vec![f64::NAN; self.global * nc];
        for chunk in all.chunks_exact(nc + 1) {
            let g = chunk[0] as usize;
            out[g * nc..(g + 1) * nc].copy_from_slice(&chunk[1..]);
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::Partitioner;
    use crate::mesh::simplex::SimplexBox;

    #[test]
    fn pieces_own_every_node_once_and_their_halos_match() {
        let mesh = SimplexBox::unstructured(2, 5, 3).build().unwrap();
        let space = Space::simplex(&mesh, 2).unwrap();
        // 3 ranks on METIS and the curve; 40 ranks for 50 cells: ranks that own no node
        for (ranks, how) in [(3, Partitioner::Metis), (3, Partitioner::Curve), (40, Partitioner::Metis)] {
            let partition = Partition::new(&space, ranks, how).unwrap();
            let pieces = Piece::split(&space, &partition).unwrap();
            assert_eq!(pieces.len(), ranks);
            let mut owner = vec![usize::MAX; space.n_dofs];
            let mut first = 0;
            for (r, p) in pieces.iter().enumerate() {
                assert_eq!(p.first, first);
                first += p.owned;
                for &g in &p.nodes[..p.owned] {
                    assert_eq!(std::mem::replace(&mut owner[g as usize], r), usize::MAX, "node {g} owned twice");
                }
                // every cell with an owned node, and every own cell, is in the piece
                for c in 0..space.n_cells() {
                    let has = space.cell_dofs[c * 6..(c + 1) * 6].iter().any(|g| p.nodes[..p.owned].contains(g));
                    let own = partition.rank[c] as usize == r;
                    assert_eq!(has || own, p.cells.contains(&(c as u32)));
                    assert_eq!(own, p.own_cells.iter().any(|&k| p.cells[k as usize] == c as u32));
                }
            }
            assert!(owner.iter().all(|&o| o != usize::MAX));
            // a rank is empty only without cells
            assert!(pieces.iter().enumerate().all(|(r, p)| p.is_empty() == (partition.cells[r] == 0)));
            // what q sends r is what r's ghost slots from q hold
            for (r, p) in pieces.iter().enumerate() {
                for (q, range) in &p.recv {
                    let (_, list) = pieces[*q].send.iter().find(|(to, _)| *to == r).expect("a send list");
                    let sent: Vec<u32> = list.iter().map(|&i| pieces[*q].nodes[i as usize]).collect();
                    assert_eq!(sent, p.nodes[range.clone()]);
                }
            }
        }
    }
}
