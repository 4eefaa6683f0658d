//! A rank's piece of a partitioned space: the nodes it owns, the ghost
//! nodes it reads from their owners, and the cells it assembles on, with
//! the halo lists both ways.
//!
//! A node belongs to the lowest rank among its cells' ranks. A rank
//! assembles every cell that has a node it owns (its own cells that do,
//! and one layer of its neighbours' cells), so the rows of the nodes it
//! owns are complete: an operator applied to owned values and ghost values
//! gives the owned rows exactly, with one exchange of ghost values before
//! it (PETSc's and MFEM's layout of a distributed matrix).
//!
//! Local numbering: owned nodes first (in global order), then ghosts
//! grouped by owner (in global order within each), so that the values
//! from one owner land in one contiguous range. The distributed global
//! numbering is this rank's offset plus the local index of an owned node.

use super::comm::{agree, Communicator};
use super::partition::Partition;
use crate::space::{Constraints, Load, Space};
use crate::{Error, Result};
use std::ops::Range;

/// One rank's share of a partitioned space.
#[derive(Clone, Debug)]
pub struct Piece {
    /// Cells of the whole space this rank assembles, in global order.
    pub cells: Vec<u32>,
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

/// A hash of the space's cell-to-node map and the partition, exact as an
/// `f64` (48 bits), to check that the ranks agree on both.
fn fingerprint(space: &Space, partition: &Partition) -> f64 {
    let mix = |h: u64, v: u64| (h ^ v).wrapping_mul(0x0100_0000_01b3);
    let h = space.cell_dofs.iter().chain(&partition.rank).fold(mix(0xcbf2_9ce4_8422_2325, space.n_dofs as u64), |h, &v| mix(h, v as u64));
    (h >> 16) as f64
}

impl Piece {
    /// This rank's piece of `space` split by `partition` (the same on
    /// every rank). Collective: the ranks tell each owner which of its
    /// nodes they read.
    pub fn new(comm: &dyn Communicator, space: &Space, partition: &Partition) -> Result<Self> {
        let (me, size) = (comm.rank(), comm.size());
        // every rank built the space on its own: it must be the same one
        let print = fingerprint(space, partition);
        if comm.all_gather(&[print])?.iter().any(|&p| p != print) {
            return Err(Error::InvalidArgument("the ranks built different spaces or partitions of the mesh (a different file or numbering on some rank)".into()));
        }
        let local = Self::local(comm, space, partition);
        let piece = agree(comm, local)?;
        // ask each owner for the ghosts it owns, by global node
        let mut ask = vec![Vec::new(); size];
        for (q, range) in &piece.recv {
            ask[*q] = piece.nodes[range.clone()].iter().map(|&g| g as u64).collect();
        }
        let asked = comm.all_to_all(&ask)?;
        let position = |g: u64| piece.nodes[..piece.owned].binary_search(&(g as u32)).map(|i| i as u32);
        let send: Result<Vec<(usize, Vec<u32>)>> = asked
            .into_iter()
            .enumerate()
            .filter(|(_, a)| !a.is_empty())
            .map(|(q, a)| {
                let idx = a.iter().map(|&g| position(g)).collect::<std::result::Result<Vec<u32>, usize>>();
                idx.map(|i| (q, i)).map_err(|_| Error::InvalidArgument(format!("rank {q} asked rank {me} for a node it does not own")))
            })
            .collect();
        let send = agree(comm, send)?;
        Ok(Self { send, ..piece })
    }

    /// Everything but the send lists, from the replicated space alone.
    fn local(comm: &dyn Communicator, space: &Space, partition: &Partition) -> Result<Self> {
        let (me, nb) = (comm.rank() as u32, space.nb());
        if partition.parts != comm.size() || partition.rank.len() != space.n_cells() {
            return Err(Error::InvalidArgument(format!("a partition into {} parts of {} cells does not fit {} ranks and {} cells", partition.parts, partition.rank.len(), comm.size(), space.n_cells())));
        }
        let owner = owners(space, partition);
        let cells: Vec<u32> = (0..space.n_cells()).filter(|&c| space.cell_dofs[c * nb..(c + 1) * nb].iter().any(|&d| owner[d as usize] == me)).map(|c| c as u32).collect();
        let mut nodes: Vec<u32> = cells.iter().flat_map(|&c| space.cell_dofs[c as usize * nb..(c as usize + 1) * nb].iter().copied()).collect();
        nodes.sort_unstable_by_key(|&g| (owner[g as usize] != me, owner[g as usize], g));
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
        let first = owner.iter().filter(|&&o| o < me).count();
        Ok(Self { cells, nodes, owned, first, global: space.n_dofs, recv, send: Vec::new() })
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
        space.subspace(&self.cells, &self.nodes)
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

    /// The whole field on every rank from each rank's owned values
    /// (`owned·nc` of them, local order). Collective.
    pub fn assemble(&self, comm: &dyn Communicator, nc: usize, owned: &[f64]) -> Result<Vec<f64>> {
        crate::error::same_len("owned values", owned.len(), self.owned * nc)?;
        let mut tagged = Vec::with_capacity(owned.len() + self.owned);
        for (i, &g) in self.nodes[..self.owned].iter().enumerate() {
            tagged.push(g as f64);
            tagged.extend_from_slice(&owned[i * nc..(i + 1) * nc]);
        }
        let all = comm.all_gather(&tagged)?;
        let mut out = vec![f64::NAN; self.global * nc];
        for chunk in all.chunks_exact(nc + 1) {
            let g = chunk[0] as usize;
            out[g * nc..(g + 1) * nc].copy_from_slice(&chunk[1..]);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::{Partitioner, Threads};
    use crate::mesh::simplex::SimplexBox;

    #[test]
    fn pieces_own_every_node_once_and_their_halos_match() {
        let mesh = SimplexBox::unstructured(2, 5, 3).build().unwrap();
        let space = Space::simplex(&mesh, 2).unwrap();
        // 3 ranks on METIS and the curve; 40 ranks for 50 cells: ranks that own no node
        for (ranks, how) in [(3, Partitioner::Metis), (3, Partitioner::Curve), (40, Partitioner::Metis)] {
            let partition = Partition::new(&space, ranks, how).unwrap();
            let pieces = Threads::run(ranks, |c| Piece::new(c, &space, &partition).unwrap());
            let mut owner = vec![usize::MAX; space.n_dofs];
            let mut first = 0;
            for (r, p) in pieces.iter().enumerate() {
                assert_eq!(p.first, first);
                first += p.owned;
                for &g in &p.nodes[..p.owned] {
                    assert_eq!(std::mem::replace(&mut owner[g as usize], r), usize::MAX, "node {g} owned twice");
                }
                // every cell with an owned node is in the piece
                for c in 0..space.n_cells() {
                    let has = space.cell_dofs[c * 6..(c + 1) * 6].iter().any(|g| p.nodes[..p.owned].contains(g));
                    assert_eq!(has, p.cells.contains(&(c as u32)));
                }
            }
            assert!(owner.iter().all(|&o| o != usize::MAX));
            assert_eq!(pieces.iter().filter(|p| p.is_empty()).count(), if ranks == 40 { 40 - pieces.iter().filter(|p| p.owned > 0).count() } else { 0 });
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
