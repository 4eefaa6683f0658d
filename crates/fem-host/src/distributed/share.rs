//! What rank 0 hands each rank of a solve across ranks: its piece, the
//! piece's subspace, and the problem's data there (Dirichlet rows, load,
//! the physics' auxiliary values, the boundary term's facets). Rank 0
//! alone builds the whole space and cuts it; every other rank receives
//! one message and never holds more than its piece (as deal.II's fully
//! distributed triangulation is made from a description built on one
//! rank).

use super::comm::Communicator;
use super::packing::{Pack, Unpack};
use super::partition::{Partition, Partitioner};
use super::piece::Piece;
use crate::operator::pointwise::Aux;
use crate::space::facets::Facet;
use crate::space::{BoundaryPart, Constraints, Load, Space};
use crate::{Error, Result};
use fem_core::shape::Shape;
use rayon::prelude::*;
use std::collections::HashSet;

/// One rank's part of a problem.
#[derive(Debug)]
pub struct Share {
    /// The rank's nodes, cells and halo lists.
    pub piece: Piece,
    /// The piece's subspace: its cells, its nodes in local order.
    pub space: Space,
    /// The Dirichlet rows on the piece.
    pub constraints: Constraints,
    /// The load on the piece's rows.
    pub load: Load,
    /// The physics' auxiliary values on the piece, a run of them for
    /// every node or every cell as `aux_at` says.
    pub aux: Vec<f64>,
    /// Where `aux` sits.
    pub aux_at: AuxAt,
    /// The boundary term's facets on the piece (indices into
    /// `space.facets`; none where the piece does not reach them).
    pub boundary: Vec<u32>,
    /// How the cells were split, and how well (its `rank` of every cell is
    /// on rank 0 only).
    pub partition: Partition,
}

/// A problem on the whole space, as rank 0 holds it.
pub struct Whole<'a> {
    /// The whole space.
    pub space: &'a Space,
    /// Its Dirichlet rows.
    pub constraints: &'a Constraints,
    /// Its load.
    pub load: &'a Load,
    /// The physics' auxiliary values: per node or per cell.
    pub aux: Aux<'a>,
    /// Where the physics' boundary term acts, if it has one.
    pub boundary: Option<&'a BoundaryPart>,
}

/// Where a physics' auxiliary values sit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuxAt {
    /// The physics has none.
    None,
    /// A run for every node.
    Nodes,
    /// A run for every cell.
    Cells,
}

const AUX_AT: [AuxAt; 3] = [AuxAt::None, AuxAt::Nodes, AuxAt::Cells];

impl AuxAt {
    /// Values `v` sitting here, as the physics' kernels take them.
    pub fn view(self, v: &[f64]) -> Aux<'_> {
        match self {
            AuxAt::None => Aux::None,
            AuxAt::Nodes => Aux::Nodal(v),
            AuxAt::Cells => Aux::Cell(v),
        }
    }
}

impl Share {
    /// The physics' auxiliary values as its kernels take them.
    pub fn aux(&self) -> Aux<'_> {
        self.aux_at.view(&self.aux)
    }

    /// The boundary term's part on the piece, `None` where the piece has
    /// none of its facets.
    pub fn boundary_part(&self) -> Option<BoundaryPart> {
        let keys: HashSet<[u32; 4]> = self.boundary.iter().map(|&f| self.space.facets[f as usize].key).collect();
        (!keys.is_empty()).then(|| BoundaryPart::Facets { name: "the boundary term's facets".into(), keys })
    }

    /// Every rank's share of `whole` split by `partition`: rank 0's, and
    /// the others' packed for [`Share::scatter`].
    pub fn cut(whole: &Whole, partition: &Partition) -> Result<(Share, Vec<Vec<u64>>)> {
        let pieces = Piece::split(whole.space, partition)?;
        let term: HashSet<(u32, u8)> = match whole.boundary {
            Some(part) => part.facets(whole.space)?.iter().map(|f| (f.cell, f.local)).collect(),
            None => HashSet::new(),
        };
        let summary = Partition { rank: Vec::new(), cells: partition.cells.clone(), ..*partition };
        let mut shares = pieces.into_par_iter().map(|piece| Self::of(whole, piece, &term, summary.clone())).collect::<Result<Vec<_>>>()?;
        let packed: Vec<Vec<u64>> = shares.par_iter().skip(1).map(Share::pack).collect();
        let first = shares.swap_remove(0);
        Ok((first, std::iter::once(Vec::new()).chain(packed).collect()))
    }

    /// The share of `piece`; `term` holds the boundary term's facets as
    /// (whole cell, local facet).
    fn of(whole: &Whole, piece: Piece, term: &HashSet<(u32, u8)>, partition: Partition) -> Result<Share> {
        let space = piece.space(whole.space)?;
        let constraints = piece.constraints(&space, whole.constraints)?;
        let load = piece.load(whole.load);
        let (aux, aux_at) = match whole.aux {
            Aux::None => (Vec::new(), AuxAt::None),
            Aux::Nodal(v) => (piece.restrict(v.len() / whole.space.n_dofs.max(1), v), AuxAt::Nodes),
            Aux::Cell(v) => (piece.restrict_cells(v.len() / whole.space.n_cells().max(1), v), AuxAt::Cells),
        };
        let boundary = space.facets.iter().enumerate().filter(|(_, f)| term.contains(&(piece.cells[f.cell as usize], f.local))).map(|(i, _)| i as u32).collect();
        Ok(Share { piece, space, constraints, load, aux, aux_at, boundary, partition })
    }

    /// This rank's share: rank 0 passes what [`Share::cut`] made, and
    /// sends the others theirs; they pass `None`. Collective.
    pub fn scatter(comm: &dyn Communicator, made: Option<(Share, Vec<Vec<u64>>)>) -> Result<Share> {
        match made {
            Some((mine, packed)) => {
                crate::error::same_len("shares", packed.len(), comm.size())?;
                comm.all_to_all(&packed)?;
                Ok(mine)
            }
            None => {
                let got = comm.all_to_all(&vec![Vec::new(); comm.size()])?;
                Share::unpack(&got[0])
            }
        }
    }

    /// The share as one message.
    fn pack(&self) -> Vec<u64> {
        let mut p = Pack::default();
        pack_piece(&mut p, &self.piece);
        pack_space(&mut p, &self.space);
        p.n(self.constraints.nc);
        p.bools(&self.constraints.fixed);
        p.f64s(&self.constraints.values);
        p.n(self.load.nc);
        p.f64s(&self.load.values);
        p.f64s(&self.aux);
        p.n(AUX_AT.iter().position(|&a| a == self.aux_at).unwrap_or(0));
        p.u32s(&self.boundary);
        let q = &self.partition;
        p.n(q.parts);
        p.n(q.partitioner as usize);
        p.n(q.cut_facets);
        p.f64s(&q.cells.iter().map(|&c| c as f64).collect::<Vec<_>>());
        p.f64s(&[q.imbalance]);
        p.finish()
    }

    /// A share from its message.
    fn unpack(message: &[u64]) -> Result<Share> {
        let mut u = Unpack::new(message);
        let piece = unpack_piece(&mut u)?;
        let space = unpack_space(&mut u)?;
        let mut constraints = Constraints::none(&space, u.n()?);
        constraints.fixed = u.bools()?;
        constraints.values = u.f64s()?;
        let load = Load { nc: u.n()?, values: u.f64s()? };
        let aux = u.f64s()?;
        let aux_at = AUX_AT.get(u.n()?).copied().ok_or_else(|| u.corrupt())?;
        let boundary = u.u32s()?;
        let parts = u.n()?;
        let partitioner = [Partitioner::Metis, Partitioner::Curve].get(u.n()?).copied().ok_or_else(|| u.corrupt())?;
        let cut_facets = u.n()?;
        let cells = u.f64s()?.into_iter().map(|c| c as usize).collect();
        let imbalance = *u.f64s()?.first().ok_or_else(|| u.corrupt())?;
        u.end()?;
        let rows = space.n_dofs * constraints.nc;
        if constraints.fixed.len() != rows || constraints.values.len() != rows || load.values.len() != space.n_dofs * load.nc || piece.len() != space.n_dofs {
            return Err(u.corrupt());
        }
        let partition = Partition { parts, rank: Vec::new(), partitioner, cut_facets, cells, imbalance };
        Ok(Share { piece, space, constraints, load, aux, aux_at, boundary, partition })
    }
}

fn pack_piece(p: &mut Pack, piece: &Piece) {
    p.u32s(&piece.cells);
    p.u32s(&piece.own_cells);
    p.u32s(&piece.nodes);
    for n in [piece.owned, piece.first, piece.global, piece.recv.len()] {
        p.n(n);
    }
    for (q, r) in &piece.recv {
        [*q, r.start, r.end].into_iter().for_each(|n| p.n(n));
    }
    p.n(piece.send.len());
    for (q, list) in &piece.send {
        p.n(*q);
        p.u32s(list);
    }
}

fn unpack_piece(u: &mut Unpack) -> Result<Piece> {
    let (cells, own_cells, nodes) = (u.u32s()?, u.u32s()?, u.u32s()?);
    let (owned, first, global) = (u.n()?, u.n()?, u.n()?);
    let recv = (0..u.n()?).map(|_| Ok((u.n()?, u.n()?..u.n()?))).collect::<Result<Vec<_>>>()?;
    let send = (0..u.n()?).map(|_| Ok((u.n()?, u.u32s()?))).collect::<Result<Vec<_>>>()?;
    Ok(Piece { cells, own_cells, nodes, owned, first, global, recv, send })
}

const SHAPES: [Shape; 4] = [Shape::Triangle, Shape::Tetrahedron, Shape::Quadrilateral, Shape::Hexahedron];

fn pack_space(p: &mut Pack, s: &Space) {
    p.n(SHAPES.iter().position(|&x| x == s.shape).unwrap_or(usize::MAX));
    p.n(s.degree);
    p.n(s.n_dofs);
    p.u32s(&s.cell_dofs);
    p.points(&s.vertices);
    p.u32s(&s.cell_vertices);
    p.points(&s.dof_coords);
    p.bools(&s.boundary);
    p.u32s(&s.facets.iter().map(|f| f.cell).collect::<Vec<_>>());
    p.u32s(&s.facets.iter().map(|f| f.local as u32).collect::<Vec<_>>());
    p.u32s(&s.facets.iter().flat_map(|f| f.key).collect::<Vec<_>>());
}

fn unpack_space(u: &mut Unpack) -> Result<Space> {
    let shape = SHAPES.get(u.n()?).copied().ok_or_else(|| u.corrupt())?;
    let (degree, n_dofs, cell_dofs, vertices, cell_vertices, dof_coords, boundary) = (u.n()?, u.n()?, u.u32s()?, u.points()?, u.u32s()?, u.points()?, u.bools()?);
    let (cells, locals, keys) = (u.u32s()?, u.u32s()?, u.u32s()?);
    if locals.len() != cells.len() || keys.len() != 4 * cells.len() || dof_coords.len() != n_dofs || boundary.len() != n_dofs {
        return Err(u.corrupt());
    }
    let facets = (0..cells.len()).map(|i| Facet { cell: cells[i], local: locals[i] as u8, key: [keys[4 * i], keys[4 * i + 1], keys[4 * i + 2], keys[4 * i + 3]] }).collect();
    let space = Space { shape, degree, n_dofs, cell_dofs, vertices, cell_vertices, dof_coords, boundary, facets, owner_slots: std::sync::OnceLock::new() };
    if space.cell_dofs.len() % space.nb() != 0 || space.cell_dofs.iter().any(|&d| d as usize >= n_dofs) {
        return Err(Error::InvalidArgument("a rank's share holds cells with nodes out of range".into()));
    }
    Ok(space)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::Threads;
    use crate::mesh::BoxMesh;

    #[test]
    fn every_rank_receives_the_share_rank_zero_cut_for_it() {
        let mesh = BoxMesh::unstructured(3, 3, 4).build().unwrap();
        let space = Space::tensor(&mesh, 2).unwrap();
        let (nc, ranks) = (3, 3);
        let left = BoundaryPart::at("x = 0", |x| x[0] < 1e-12);
        let constraints = Constraints::none(&space, nc).dirichlet(&space, &left, |x, u| u.fill(x[1])).unwrap();
        let load = Load::zero(&space, nc).source(&space, |x, f| f.fill(x[2].cos()));
        let aux: Vec<f64> = (0..space.n_cells() * 2).map(|i| i as f64 * 0.5).collect();
        let top = BoundaryPart::at("z = 1", |x| x[2] > 1.0 - 1e-12);
        let whole = Whole { space: &space, constraints: &constraints, load: &load, aux: Aux::Cell(&aux), boundary: Some(&top) };
        let partition = Partition::new(&space, ranks, Partitioner::Metis).unwrap();
        let direct = Share::cut(&whole, &partition).unwrap();
        let mut expected: Vec<String> = vec![format!("{:?}", direct.0)];
        expected.extend(direct.1[1..].iter().map(|m| format!("{:?}", Share::unpack(m).unwrap())));
        let got = Threads::run(ranks, |c| {
            let made = (c.rank() == 0).then(|| Share::cut(&whole, &partition).unwrap());
            format!("{:?}", Share::scatter(c, made).unwrap())
        });
        assert_eq!(got, expected);
        // the unpacked shares hold what the pieces cut: nodes, values, cells' values, facets
        let mut tops = 0;
        for r in 0..ranks {
            let s = if r == 0 { &direct.0 } else { &Share::unpack(&direct.1[r]).unwrap() };
            assert_eq!(s.load.values, s.piece.restrict(nc, &load.values));
            assert_eq!(s.constraints.values, s.piece.restrict(nc, &constraints.values));
            assert_eq!(s.aux, s.piece.restrict_cells(2, &aux));
            assert_eq!(s.space.dof_coords, s.piece.nodes.iter().map(|&g| space.dof_coords[g as usize]).collect::<Vec<_>>());
            // the boundary term's facets: the piece's facets on z = 1, by their corners
            let top = |f: &Facet| f.key.iter().all(|&v| v == u32::MAX || s.space.vertices[v as usize][2] > 1.0 - 1e-12);
            let want: Vec<u32> = (0..s.space.facets.len() as u32).filter(|&f| top(&s.space.facets[f as usize])).collect();
            assert_eq!(s.boundary, want);
            tops += want.len();
        }
        assert!(tops >= top.facets(&space).unwrap().len());
        assert!(expected.len() == ranks && direct.1.iter().skip(1).all(|m| !m.is_empty()));
        // a message cut short is an error, not a panic
        assert!(Share::unpack(&direct.1[1][..direct.1[1].len() / 2]).is_err());
    }
}
