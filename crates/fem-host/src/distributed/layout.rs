//! The rows of a vector across ranks by global number: each rank owns a
//! contiguous range of them (ranks in order) and reads some others as
//! ghosts. A mesh's piece has its ghosts from its cells ([`super::Piece`]);
//! the coarser levels of a hierarchy have theirs from the columns their
//! matrices couple, so this layout is made from any set of ghost rows, the
//! send lists following from one all-to-all of the rows each rank asks its
//! owners for.
//!
//! Local numbering, as a piece's: owned rows first, in global order, then
//! the ghosts in global order (hence grouped by owner).

use super::comm::Communicator;
use super::halo::{Halo, HaloBackend};
use super::packing::{Pack, Unpack};
use super::piece::Piece;
use crate::{CpuBackend, Error, Result};
use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;

/// One rank's rows of a distributed vector.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Rows this rank owns.
    pub owned: usize,
    /// Every rank's first global row, and the total last.
    pub starts: Vec<usize>,
    /// This rank.
    pub rank: usize,
    /// Global rows of the ghosts, ascending.
    pub ghosts: Vec<u32>,
    /// Local row of every ghost's global row.
    ghost_at: HashMap<u32, u32>,
    /// Owned local rows each other rank reads, in its order of ghosts.
    pub send: Vec<(usize, Vec<u32>)>,
    /// Ghost local rows from each owner.
    pub recv: Vec<(usize, Range<usize>)>,
}

/// Every rank's first global row when each owns `owned`, and the total
/// last. Collective.
pub fn starts(comm: &dyn Communicator, owned: usize) -> Result<Vec<usize>> {
    let counts = comm.all_gather(&[owned as f64])?;
    let mut s = Vec::with_capacity(counts.len() + 1);
    s.push(0usize);
    for c in counts {
        s.push(s.last().expect("one start") + c as usize);
    }
    if *s.last().expect("one start") > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!("{} rows exceed the u32 numbering of a distributed vector", s.last().expect("one start"))));
    }
    Ok(s)
}

/// The rank owning global row `g` under `starts`.
pub fn owner(starts: &[usize], g: u32) -> usize {
    starts.partition_point(|&s| s <= g as usize) - 1
}

impl Layout {
    /// `owned` rows here and the ghost rows `ghosts` (global numbers,
    /// any order, repeats allowed). Collective: the ranks tell each owner
    /// which of its rows they read. An error for a ghost this rank owns or
    /// that no rank does.
    pub fn new(comm: &dyn Communicator, owned: usize, mut ghosts: Vec<u32>) -> Result<Self> {
        ghosts.sort_unstable();
        ghosts.dedup();
        let starts = starts(comm, owned)?;
        let (rank, size, total) = (comm.rank(), comm.size(), *starts.last().expect("one start"));
        let mine = starts[rank]..starts[rank + 1];
        let bad = ghosts.iter().find(|&&g| g as usize >= total || mine.contains(&(g as usize)));
        // every rank stops where one does, rather than wait in the next collective
        if !comm.all_ok(bad.is_none())? {
            return Err(Error::InvalidArgument(match bad {
                Some(g) => format!("rank {rank}: ghost row {g} is owned here or lies past the {total} rows"),
                None => "another rank's ghost rows are not rows of the layout".into(),
            }));
        }
        let mut asks = vec![Vec::new(); size];
        let mut recv = Vec::new();
        let mut at = 0;
        while at < ghosts.len() {
            let q = owner(&starts, ghosts[at]);
            let end = at + ghosts[at..].partition_point(|&g| (g as usize) < starts[q + 1]);
            asks[q] = ghosts[at..end].to_vec();
            recv.push((q, owned + at..owned + end));
            at = end;
        }
        let sent: Vec<Vec<u64>> = asks.iter().map(|a| {
            let mut p = Pack::default();
            p.u32s(a);
            p.finish()
        }).collect();
        let got = comm.all_to_all(&sent)?;
        let mut send = Vec::new();
        for (q, words) in got.iter().enumerate() {
            let mut u = Unpack::new(words);
            let rows = u.u32s()?;
            u.end()?;
            // owners were found from the same starts: a row asked of the
            // wrong rank is a corrupt message
            if rows.iter().any(|&g| !mine.contains(&(g as usize))) {
                return Err(u.corrupt());
            }
            if !rows.is_empty() {
                send.push((q, rows.iter().map(|&g| g - starts[rank] as u32).collect()));
            }
        }
        let ghost_at = ghosts.iter().enumerate().map(|(i, &g)| (g, (owned + i) as u32)).collect();
        Ok(Self { owned, starts, rank, ghosts, ghost_at, send, recv })
    }

    /// The layout of `piece`'s rows, `nc` a node: the piece's own ghost
    /// order and lists (ghost numbers found by one exchange). Collective.
    pub fn of_piece(comm: &dyn Communicator, piece: &Piece, nc: usize) -> Result<Self> {
        let cpu = CpuBackend::new(Some(1))?;
        let halo = Halo::new(&cpu, comm, piece, nc)?;
        let first = starts(comm, piece.owned * nc)?[comm.rank()];
        let mut ids: Vec<f64> = (0..piece.len() * nc).map(|r| (first + r) as f64).collect();
        halo.update(&cpu, comm, &mut ids)?;
        let layout = Self::new(comm, piece.owned * nc, ids[piece.owned * nc..].iter().map(|&g| g as u32).collect())?;
        let same = layout.ghosts.iter().zip(&ids[piece.owned * nc..]).all(|(&g, &i)| g as f64 == i) && layout.ghosts.len() + layout.owned == ids.len();
        if !same {
            return Err(Error::InvalidArgument(format!("rank {}: the piece's ghosts are not in global order", comm.rank())));
        }
        Ok(layout)
    }

    /// Local rows: owned, then ghosts.
    pub fn rows(&self) -> usize {
        self.owned + self.ghosts.len()
    }

    /// Global rows over all ranks.
    pub fn total(&self) -> usize {
        *self.starts.last().expect("one start")
    }

    /// This rank's first global row.
    pub fn first(&self) -> usize {
        self.starts[self.rank]
    }

    /// The global row of local row `i`.
    pub fn global(&self, i: usize) -> u32 {
        match i < self.owned {
            true => (self.first() + i) as u32,
            false => self.ghosts[i - self.owned],
        }
    }

    /// The local row of global row `g`, if this rank holds it.
    pub fn local(&self, g: u32) -> Option<u32> {
        let first = self.first();
        match (g as usize).checked_sub(first) {
            Some(i) if i < self.owned => Some(i as u32),
            _ => self.ghost_at.get(&g).copied(),
        }
    }

    /// The halo exchange of this layout on `b`, over `link` (another
    /// halo's, or none: through the host).
    pub fn halo<B: HaloBackend>(&self, b: &B, link: Option<Rc<B::Link>>) -> Result<Halo<B>> {
        Halo::from_lists(b, self.owned, self.rows(), &self.send, self.recv.clone(), link)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::{Partition, Partitioner, Threads};
    use crate::mesh::simplex::SimplexBox;
    use crate::space::Space;

    #[test]
    fn any_ghosts_are_filled_from_their_owners() {
        // uneven: rank r owns 3r rows (rank 0 none), and reads every third
        // row it does not own, with repeats
        let ok = Threads::run(4, |c| {
            let cpu = CpuBackend::new(Some(1)).unwrap();
            let owned = 3 * c.rank();
            let total = 3 * (0 + 1 + 2 + 3);
            let first = 3 * (0..c.rank()).sum::<usize>();
            let ghosts: Vec<u32> = (0..total as u32).rev().filter(|g| g % 3 == 0 && !(first..first + owned).contains(&(*g as usize))).flat_map(|g| [g, g]).collect();
            let layout = Layout::new(c, owned, ghosts).unwrap();
            let halo = layout.halo(&cpu, None).unwrap();
            let mut x: Vec<f64> = (0..layout.rows()).map(|i| if i < owned { (first + i) as f64 } else { f64::NAN }).collect();
            halo.update(&cpu, c, &mut x).unwrap();
            let locals = (0..layout.rows()).all(|i| layout.local(layout.global(i)) == Some(i as u32));
            locals && (0..layout.rows()).all(|i| x[i] == layout.global(i) as f64) && layout.ghosts.len() == (0..total).filter(|g| g % 3 == 0 && !(first..first + owned).contains(g)).count()
        });
        assert!(ok.iter().all(|&o| o), "{ok:?}");
    }

    #[test]
    fn a_pieces_layout_keeps_its_order() {
        let mesh = SimplexBox::unstructured(3, 3, 5).build().unwrap();
        let space = Space::simplex(&mesh, 1).unwrap();
        let partition = Partition::new(&space, 3, Partitioner::Curve).unwrap();
        let pieces = Piece::split(&space, &partition).unwrap();
        let ok = Threads::run(3, |c| {
            let piece = &pieces[c.rank()];
            let layout = Layout::of_piece(c, piece, 2).unwrap();
            let recv: Vec<(usize, Range<usize>)> = piece.recv.iter().map(|(q, r)| (*q, 2 * r.start..2 * r.end)).collect();
            layout.recv == recv && layout.rows() == 2 * piece.len()
        });
        assert!(ok.iter().all(|&o| o), "{ok:?}");
    }

    #[test]
    fn a_ghost_owned_here_is_an_error() {
        let out = Threads::run(2, |c| Layout::new(c, 2, vec![c.rank() as u32 * 2]).map(|_| ()));
        assert!(out.iter().all(|r| r.is_err()), "{out:?}");
    }
}
