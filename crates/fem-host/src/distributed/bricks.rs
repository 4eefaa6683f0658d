//! A structured grid of hexahedra split into bricks, one a rank: the
//! partition every tensor-product benchmark of a box uses (nekRS, libCEED,
//! deal.II), with no graph and no rank building the whole mesh. Each rank
//! works out its own piece from the grid's sizes alone: the elements it
//! applies, the nodes it owns and the ghosts it reads; the send lists
//! come from one all-to-all ([`Layout::new`]).
//!
//! Ownership follows [`super::piece`]: a node belongs to the lowest rank
//! among its elements' ranks, and a rank applies every element with a node
//! it owns. Ranks are numbered x fastest over the brick grid, so the
//! lowest rank of a node is the brick of its lowest element along each
//! axis: a rank owns a box of nodes (its bricks' nodes but those on its
//! low faces inside the grid), and applies its own brick and one layer of
//! elements beyond each high face.

use super::comm::Communicator;
use super::layout::Layout;
use super::partition::{Partition, Partitioner};
use super::piece::Piece;
use crate::mesh::spectral::{Deformation, SpectralBox};
use crate::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;

/// The brick grid of a structured grid of elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bricks {
    /// Elements along x, y, z.
    pub cells: [usize; 3],
    /// Bricks (ranks) along x, y, z.
    pub grid: [usize; 3],
}

impl Bricks {
    /// `cells` split among `ranks` into the brick grid that cuts the
    /// fewest element faces, with at least one element a brick along
    /// every axis; an error where no such grid exists.
    pub fn new(cells: [usize; 3], ranks: usize) -> Result<Self> {
        let mut best: Option<([usize; 3], usize)> = None;
        for gx in (1..=ranks).filter(|g| ranks % g == 0) {
            for gy in (1..=ranks / gx).filter(|g| (ranks / gx) % g == 0) {
                let grid = [gx, gy, ranks / gx / gy];
                if (0..3).any(|a| grid[a] > cells[a]) {
                    continue;
                }
                let cut = Self { cells, grid }.cut_facets();
                if best.is_none_or(|(_, c)| cut < c) {
                    best = Some((grid, cut));
                }
            }
        }
        let (grid, _) = best.ok_or_else(|| Error::InvalidArgument(format!("{ranks} ranks do not split {}×{}×{} elements into bricks of at least one element an axis", cells[0], cells[1], cells[2])))?;
        Ok(Self { cells, grid })
    }

    /// Element faces between bricks.
    pub fn cut_facets(&self) -> usize {
        let [cx, cy, cz] = self.cells;
        (self.grid[0] - 1) * cy * cz + (self.grid[1] - 1) * cx * cz + (self.grid[2] - 1) * cx * cy
    }

    /// The elements of brick `b` along `axis`.
    fn span(&self, axis: usize, b: usize) -> Range<usize> {
        let (c, g) = (self.cells[axis], self.grid[axis]);
        b * c / g..(b + 1) * c / g
    }

    /// The brick of every element along each axis.
    fn along(&self) -> [Vec<usize>; 3] {
        std::array::from_fn(|a| (0..self.grid[a]).flat_map(|b| self.span(a, b).map(move |_| b)).collect())
    }

    /// The brick coordinates of `rank`.
    fn coords(&self, rank: usize) -> [usize; 3] {
        [rank % self.grid[0], (rank / self.grid[0]) % self.grid[1], rank / (self.grid[0] * self.grid[1])]
    }

    /// The rank of every element (x fastest), and the split's quality.
    pub fn partition(&self) -> Partition {
        let [cx, cy, _] = self.cells;
        let along = self.along();
        let n = self.cells.iter().product::<usize>();
        let rank: Vec<u32> = (0..n).into_par_iter().map(|e| (along[0][e % cx] + self.grid[0] * (along[1][(e / cx) % cy] + self.grid[1] * along[2][e / (cx * cy)])) as u32).collect();
        let parts = self.grid.iter().product::<usize>();
        let cells: Vec<usize> = (0..parts).map(|r| (0..3).map(|a| self.span(a, self.coords(r)[a]).len()).product()).collect();
        let imbalance = *cells.iter().max().unwrap_or(&0) as f64 * parts as f64 / n as f64;
        Partition { parts, rank, partitioner: Partitioner::Bricks, cut_facets: self.cut_facets(), cells, imbalance }
    }

    /// The nodes rank `rank` owns along each axis, for elements of degree
    /// `degree`: its bricks' nodes but those of a low face inside the grid.
    fn owned_nodes(&self, rank: usize, degree: usize) -> [Range<usize>; 3] {
        let b = self.coords(rank);
        std::array::from_fn(|a| {
            let s = self.span(a, b[a]);
            let start = if s.start == 0 { 0 } else { s.start * degree + 1 };
            start..s.end * degree + 1
        })
    }

    /// The owner of node `[i, j, k]` of the lattice: the brick of its
    /// lowest element along each axis.
    fn owner_of(&self, along: &[Vec<usize>; 3], degree: usize, node: [usize; 3]) -> usize {
        let b: [usize; 3] = std::array::from_fn(|a| along[a][node[a].saturating_sub(1) / degree]);
        b[0] + self.grid[0] * (b[1] + self.grid[1] * b[2])
    }

    /// This rank's piece of the grid's nodes for elements of degree
    /// `degree`: its node numbers those of the whole lattice
    /// ([`SpectralBox::lattice`]). Collective: the
    /// ranks exchange the ghosts they read once.
    pub fn piece(&self, comm: &dyn Communicator, degree: usize) -> Result<Piece> {
        let (rank, ranks) = (comm.rank(), comm.size());
        if ranks != self.grid.iter().product::<usize>() {
            return Err(Error::InvalidArgument(format!("a brick grid of {:?} ranks run on {ranks}", self.grid)));
        }
        let lattice = SpectralBox::lattice(degree, self.cells);
        let along = self.along();
        let boxes: Vec<[Range<usize>; 3]> = (0..ranks).map(|r| self.owned_nodes(r, degree)).collect();
        let mut starts = vec![0usize; ranks + 1];
        for r in 0..ranks {
            starts[r + 1] = starts[r] + boxes[r].iter().map(|s| s.len()).product::<usize>();
        }
        // the distributed number of a node: its owner's start and its place in the owner's box
        let number = |node: [usize; 3]| -> u32 {
            let q = self.owner_of(&along, degree, node);
            let b = &boxes[q];
            let l: [usize; 3] = std::array::from_fn(|a| node[a] - b[a].start);
            (starts[q] + l[0] + b[0].len() * (l[1] + b[1].len() * l[2])) as u32
        };
        let lattice_of = |n: [usize; 3]| -> u32 { (n[0] + lattice[0] * (n[1] + lattice[1] * n[2])) as u32 };
        // the own brick and one layer beyond each high face
        let b = self.coords(rank);
        let spans: [Range<usize>; 3] = std::array::from_fn(|a| {
            let s = self.span(a, b[a]);
            s.start..(s.end + 1).min(self.cells[a])
        });
        let mut cells = Vec::with_capacity(spans.iter().map(|s| s.len()).product());
        let mut own_cells = Vec::new();
        for k in spans[2].clone() {
            for j in spans[1].clone() {
                for i in spans[0].clone() {
                    if [i, j, k].iter().enumerate().all(|(a, &m)| self.span(a, b[a]).contains(&m)) {
                        own_cells.push(cells.len() as u32);
                    }
                    cells.push((i + self.cells[0] * (j + self.cells[1] * k)) as u32);
                }
            }
        }
        let mine = &boxes[rank];
        let owned: Vec<u32> = mine[2].clone().flat_map(|k| mine[1].clone().flat_map(move |j| mine[0].clone().map(move |i| [i, j, k]))).map(lattice_of).collect();
        // the nodes of the piece's elements outside the own box
        let nodes_of = |a: usize| spans[a].start * degree..spans[a].end * degree + 1;
        let ghosts: Vec<u32> = nodes_of(2)
            .into_par_iter()
            .flat_map_iter(|k| nodes_of(1).flat_map(move |j| nodes_of(0).map(move |i| [i, j, k])))
            .filter(|n| !(0..3).all(|a| mine[a].contains(&n[a])))
            .map(number)
            .collect();
        let layout = Layout::new(comm, owned.len(), ghosts)?;
        if layout.starts != starts {
            return Err(Error::InvalidArgument(format!("rank {rank}: the ranks count their owned nodes differently")));
        }
        // a ghost's lattice node from its distributed number
        let lattice_from = |g: u32| -> u32 {
            let q = super::layout::owner(&starts, g);
            let (b, mut l) = (&boxes[q], g as usize - starts[q]);
            let mut n = [0usize; 3];
            for a in 0..3 {
                n[a] = b[a].start + l % b[a].len();
                l /= b[a].len();
            }
            lattice_of(n)
        };
        let mut nodes = owned;
        nodes.extend(layout.ghosts.iter().map(|&g| lattice_from(g)));
        Ok(Piece { cells, own_cells, nodes, owned: layout.owned, first: starts[rank], global: lattice.iter().product(), recv: layout.recv, send: layout.send })
    }

    /// The elements of `piece` of rank `rank` (of degree `degree`,
    /// deformed as the whole mesh is), their nodes in the piece's local
    /// numbering, those whose nodes are all owned first; and how many
    /// those are (what an operator applies while the halo travels).
    pub fn mesh(&self, rank: usize, degree: usize, deformation: Deformation, piece: &Piece) -> Result<(SpectralBox, usize)> {
        let owned = self.owned_nodes(rank, degree);
        let [cx, cy, _] = self.cells;
        let inside = |e: u32| -> bool {
            let e = e as usize;
            let ec = [e % cx, (e / cx) % cy, e / (cx * cy)];
            (0..3).all(|a| owned[a].contains(&(ec[a] * degree)) && owned[a].contains(&((ec[a] + 1) * degree)))
        };
        let (mut order, rest): (Vec<u32>, Vec<u32>) = piece.cells.iter().partition(|&&e| inside(e));
        let interior = order.len();
        order.extend(rest);
        Ok((SpectralBox::elements_of(degree, self.cells, deformation, &order, piece.len(), local_numbering(piece))?, interior))
    }
}

/// The local node of every lattice node of `piece` (a hash of its ghosts;
/// owned nodes by their place in the owned box, which follows the lattice
/// order): what the piece's mesh numbers its elements' nodes by.
pub fn local_numbering(piece: &Piece) -> impl Fn(u32) -> u32 + Sync + '_ {
    let ghosts: std::collections::HashMap<u32, u32> = piece.nodes[piece.owned..].iter().enumerate().map(|(i, &g)| (g, (piece.owned + i) as u32)).collect();
    move |g| match piece.nodes[..piece.owned].binary_search(&g) {
        Ok(i) => i as u32,
        Err(_) => ghosts[&g],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::Threads;

    #[test]
    fn bricks_cut_the_fewest_faces_and_refuse_too_many_ranks() {
        let b = Bricks::new([8, 2, 2], 4).unwrap();
        // quartering x cuts 3·4 faces; halving x and y 4 + 16
        assert_eq!((b.grid, b.cut_facets()), ([4, 1, 1], 12));
        let p = b.partition();
        assert_eq!((p.cells.clone(), p.imbalance), (vec![8; 4], 1.0));
        assert_eq!(p.rank[..8], [0, 0, 1, 1, 2, 2, 3, 3]);
        // uneven bricks: 5 elements over 2
        let p = Bricks::new([5, 1, 1], 2).unwrap().partition();
        assert_eq!((p.cells, p.imbalance), (vec![2, 3], 1.2));
        assert!(Bricks::new([2, 2, 1], 5).is_err());
        assert!(Bricks::new([2, 2, 1], 8).is_err());
    }

    /// Every lattice node is owned once; a rank's elements are those with
    /// a node it owns and its own brick's; the ghosts arrive from their
    /// owners, whatever the sizes.
    #[test]
    fn pieces_own_every_node_once_and_their_halos_fill_the_ghosts() {
        for (cells, degree, ranks) in [([5, 3, 2], 2, 2), ([3, 4, 5], 3, 3), ([4, 4, 3], 1, 4), ([7, 2, 3], 2, 6)] {
            let bricks = Bricks::new(cells, ranks).unwrap();
            let partition = bricks.partition();
            let pieces = Threads::run(ranks, |c| bricks.piece(c, degree).unwrap());
            let lattice = SpectralBox::lattice(degree, cells);
            let nodes: usize = lattice.iter().product();
            let mut owner = vec![usize::MAX; nodes];
            for (r, p) in pieces.iter().enumerate() {
                assert_eq!(p.first, pieces[..r].iter().map(|q| q.owned).sum::<usize>());
                for &g in &p.nodes[..p.owned] {
                    assert_eq!(std::mem::replace(&mut owner[g as usize], r), usize::MAX, "{cells:?}: node {g} owned twice");
                }
            }
            assert!(owner.iter().all(|&o| o != usize::MAX), "{cells:?}: a node without owner");
            // the elements of each piece, by brute force over the whole grid
            let mesh = SpectralBox::new(degree, cells, Deformation::None).unwrap();
            let np = mesh.nodes_per_element();
            for (r, p) in pieces.iter().enumerate() {
                let expect: Vec<u32> = (0..mesh.elements()).filter(|&e| partition.rank[e] as usize == r || mesh.map[e * np..(e + 1) * np].iter().any(|&g| owner[g as usize] == r)).map(|e| e as u32).collect();
                assert_eq!(p.cells, expect, "{cells:?}, rank {r}");
                let own: Vec<u32> = p.own_cells.iter().map(|&k| p.cells[k as usize]).collect();
                assert!(own.iter().all(|&e| partition.rank[e as usize] as usize == r) && own.len() == partition.cells[r]);
                // every node of the piece's elements is a node of the piece
                let number = local_numbering(p);
                assert!(p.cells.iter().all(|&e| mesh.map[e as usize * np..(e as usize + 1) * np].iter().all(|&g| p.nodes[number(g) as usize] == g)));
            }
            let ok = Threads::run(ranks, |c| {
                let cpu = crate::CpuBackend::new(Some(1)).unwrap();
                let p = &pieces[c.rank()];
                let halo = super::super::Halo::new(&cpu, c, p, 1).unwrap();
                let mut x: Vec<f64> = (0..p.len()).map(|i| if i < p.owned { p.nodes[i] as f64 } else { f64::NAN }).collect();
                halo.update(&cpu, c, &mut x).unwrap();
                x.iter().zip(&p.nodes).all(|(&v, &g)| v == g as f64)
            });
            assert!(ok.iter().all(|&o| o), "{cells:?} on {ranks} ranks: {ok:?}");
        }
    }

    /// The tensor-product operators applied across ranks (each rank's
    /// elements after the halo exchange) give the whole operator's rows.
    #[test]
    fn operators_across_ranks_equal_the_whole_operator() {
        use crate::operator::tensor::{Problem, TensorOperator};
        use crate::operator::LinearOperator;
        let deformation = Deformation::Trilinear { amplitude: 0.2, seed: 3 };
        for (cells, degree, ranks) in [([5, 3, 2], 3, 2), ([4, 3, 5], 2, 3), ([6, 2, 2], 1, 4)] {
            let whole = SpectralBox::new(degree, cells, deformation).unwrap();
            let cpu = crate::CpuBackend::new(Some(1)).unwrap();
            let x: Vec<f64> = (0..whole.n_nodes).map(|g| ((g * 7919) % 101) as f64 / 50.0 - 1.0).collect();
            for problem in [Problem::Bp1, Problem::Bp35, Problem::Bp30] {
                let op = TensorOperator::new(problem, &whole, 0.7).unwrap();
                let mut y = vec![0.0; whole.n_nodes];
                op.apply(&cpu, &x, &mut y).unwrap();
                let scale = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let bricks = Bricks::new(cells, ranks).unwrap();
                let worst = Threads::run(ranks, |c| {
                    let cpu = crate::CpuBackend::new(Some(1)).unwrap();
                    let piece = bricks.piece(c, degree).unwrap();
                    let (mesh, interior) = bricks.mesh(c.rank(), degree, deformation, &piece).unwrap();
                    // the interior elements come first and read only owned nodes
                    let np = mesh.nodes_per_element();
                    assert!(mesh.map[..interior * np].iter().all(|&l| (l as usize) < piece.owned));
                    assert!((interior..mesh.elements()).all(|e| mesh.map[e * np..(e + 1) * np].iter().any(|&l| l as usize >= piece.owned)));
                    let local = TensorOperator::new(problem, &mesh, 0.7).unwrap();
                    let halo = super::super::Halo::new(&cpu, c, &piece, 1).unwrap();
                    let d = super::super::Distributed::new(&cpu, c, piece.owned);
                    let across = super::super::HaloOperator::new(&local, &halo).unwrap();
                    // owned values only: the ghosts come from the exchange
                    let mut xl: Vec<f64> = piece.nodes.iter().map(|&g| x[g as usize]).collect();
                    xl[piece.owned..].iter_mut().for_each(|v| *v = f64::NAN);
                    let mut yl = vec![0.0; piece.len()];
                    across.apply(&d, &xl, &mut yl).unwrap();
                    (0..piece.owned).fold(0.0f64, |m, i| m.max((yl[i] - y[piece.nodes[i] as usize]).abs()))
                });
                assert!(worst.iter().all(|&w| w <= 1e-12 * scale), "{problem:?} {cells:?} on {ranks} ranks: {worst:?} of {scale:e}");
            }
        }
    }
}
