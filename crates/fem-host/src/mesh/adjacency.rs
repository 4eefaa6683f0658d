//! The cells around every vertex, and the facets only one cell has (the
//! boundary), found through them.

use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};

/// The cells around every vertex: those of vertex `v` are
/// `cells[start[v]..start[v + 1]]`, ascending.
pub struct VertexCells {
    /// Where each vertex's cells begin (`n_vertices + 1` offsets).
    pub start: Vec<usize>,
    /// The cells, vertex after vertex.
    pub cells: Vec<u32>,
}

impl VertexCells {
    /// Of the first `nv` vertices of every cell in `cells` (ids below
    /// `n_vertices`, as a validated mesh has).
    pub fn new<const N: usize>(cells: &[[u32; N]], nv: usize, n_vertices: usize) -> Self {
        Self::of_ids(cells.len(), n_vertices, |c| &cells[c][..nv])
    }

    /// The cells around each of `n` ids (vertices, or the rows of a
    /// layout), cell `c` naming `ids(c)` (each below `n`, or `u32::MAX`
    /// for none): counted and placed in parallel, each id's cells then
    /// sorted, so the result does not depend on the threads. A serial
    /// count and fill of the rows' cells took about 0.6 s at 8M Q1 cells.
    pub fn of_ids<'a>(n_cells: usize, n: usize, ids: impl Fn(usize) -> &'a [u32] + Sync) -> Self {
        let named = |c: usize| ids(c).iter().copied().filter(|&v| v != u32::MAX);
        let count: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
        (0..n_cells).into_par_iter().for_each(|c| named(c).for_each(|v| _ = count[v as usize].fetch_add(1, Relaxed)));
        let mut start = Vec::with_capacity(n + 1);
        let mut at = 0usize;
        start.push(0);
        for c in &count {
            at += c.load(Relaxed) as usize;
            start.push(at);
        }
        let cursor: Vec<AtomicUsize> = start[..n].iter().map(|&s| AtomicUsize::new(s)).collect();
        let placed: Vec<AtomicU32> = (0..at).map(|_| AtomicU32::new(0)).collect();
        (0..n_cells).into_par_iter().for_each(|c| named(c).for_each(|v| placed[cursor[v as usize].fetch_add(1, Relaxed)].store(c as u32, Relaxed)));
        let mut cells: Vec<u32> = placed.into_iter().map(AtomicU32::into_inner).collect();
        // ids in blocks, each block's cells one slice, sorted id by id
        const BLOCK: usize = 4096;
        let mut blocks = Vec::with_capacity(n.div_ceil(BLOCK));
        let mut rest = cells.as_mut_slice();
        for b in 0..n.div_ceil(BLOCK) {
            let ids = b * BLOCK..((b + 1) * BLOCK).min(n);
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(start[ids.end] - start[ids.start]);
            blocks.push((ids, head));
            rest = tail;
        }
        blocks.into_par_iter().for_each(|(ids, slice)| {
            let base = start[ids.start];
            ids.for_each(|v| slice[start[v] - base..start[v + 1] - base].sort_unstable());
        });
        Self { start, cells }
    }

    /// The cells around vertex `v`.
    pub fn of(&self, v: usize) -> &[u32] {
        &self.cells[self.start[v]..self.start[v + 1]]
    }
}

/// The (cell, local facet) pairs, in that order, of the facets no other
/// cell shares, among the facets of each of `cells` (the first `nv`
/// vertices of each, ids below `n_vertices`), facet `f` being the local
/// vertices whose bits `facets[f]` sets. Each cell tallies, in a small
/// hash table, which of its vertices every cell around them holds; a
/// facet is shared when one of those cells holds all its vertices. Once
/// per cell, where a test per facet of the cells around its smallest
/// vertex cost about 150 ns a facet (half of the Q1 numbering).
pub fn single_facets<const N: usize>(cells: &[[u32; N]], nv: usize, n_vertices: usize, facets: &[u8]) -> Vec<(usize, usize)> {
    let around = VertexCells::new(cells, nv, n_vertices);
    (0..cells.len())
        .into_par_iter()
        .map_init(Neighbours::default, |table, c| {
            let shared = table.shared_facets(c, &cells[c][..nv], &around, facets);
            (0..facets.len()).filter(move |f| shared & (1 << f) == 0).map(move |f| (c, f))
        })
        .flat_map_iter(|lone| lone)
        .collect()
}

/// Which of a cell's vertices each cell around them holds: an open
/// addressing table of cell ids and vertex bits, cleared slot by slot
/// after each cell (a clear of the whole table per cell would cost more
/// than the tally).
#[derive(Default)]
struct Neighbours {
    key: Vec<u32>,
    bits: Vec<u8>,
    used: Vec<u32>,
}

impl Neighbours {
    /// Bit `f` set for each facet `facets[f]` of cell `c` (vertices
    /// `vs`) that another cell holds whole.
    fn shared_facets(&mut self, c: usize, vs: &[u32], around: &VertexCells, facets: &[u8]) -> u32 {
        let entries: usize = vs.iter().map(|&v| around.of(v as usize).len()).sum();
        let cap = (2 * entries).next_power_of_two().max(16);
        if self.key.len() < cap {
            self.key = vec![u32::MAX; cap];
            self.bits = vec![0; cap];
        }
        let mask = cap - 1;
        for (j, &v) in vs.iter().enumerate() {
            for &o in around.of(v as usize) {
                if o as usize == c {
                    continue;
                }
                let mut h = (o as usize).wrapping_mul(0x9E37_79B9) >> 7 & mask;
                while self.key[h] != o && self.key[h] != u32::MAX {
                    h = (h + 1) & mask;
                }
                if self.key[h] == u32::MAX {
                    self.key[h] = o;
                    self.used.push(h as u32);
                }
                self.bits[h] |= 1 << j;
            }
        }
        let mut shared = 0;
        for h in self.used.drain(..) {
            let b = self.bits[h as usize];
            for (f, &m) in facets.iter().enumerate() {
                if b & m == m {
                    shared |= 1 << f;
                }
            }
            self.key[h as usize] = u32::MAX;
            self.bits[h as usize] = 0;
        }
        shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cells naming ids with gaps (`u32::MAX`), ids no cell names, and
    /// more ids than a block: each id's cells ascending, as a serial pass
    /// in cell order lists them, on an uneven thread count.
    #[test]
    fn of_ids_is_the_serial_incidence() {
        let (n_cells, per, n) = (3000, 5, 9001);
        let ids: Vec<u32> = (0..n_cells * per).map(|k| if k % 7 == 3 { u32::MAX } else { ((k * 7919) % (n - 1)) as u32 }).collect();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let around = pool.install(|| VertexCells::of_ids(n_cells, n, |c| &ids[c * per..(c + 1) * per]));
        let mut want = vec![Vec::new(); n];
        for (k, &v) in ids.iter().enumerate() {
            if v != u32::MAX {
                want[v as usize].push((k / per) as u32);
            }
        }
        assert!(want[n - 1].is_empty());
        for (v, w) in want.iter().enumerate() {
            assert_eq!(around.of(v), &w[..], "id {v}");
        }
    }

    /// On shuffled, perturbed hexahedra and quadrilaterals (cells of
    /// several hundred ids, tables past their smallest size), the lone
    /// facets are those whose sorted vertices no other cell's facet has.
    #[test]
    fn single_facets_are_the_unmatched_keys() {
        for (dim, n) in [(2, 13), (3, 7)] {
            let mesh = crate::mesh::BoxMesh::unstructured(dim, n, 3).build().unwrap();
            let per = 2 * dim;
            let key = |c: usize, f: usize| crate::mesh::facet_key(&mesh, c, f / 2, f % 2);
            let mut count = std::collections::HashMap::new();
            for c in 0..mesh.n_cells() {
                for f in 0..per {
                    *count.entry(key(c, f)).or_insert(0) += 1;
                }
            }
            let want: Vec<(usize, usize)> = (0..mesh.n_cells() * per).map(|t| (t / per, t % per)).filter(|&(c, f)| count[&key(c, f)] == 1).collect();
            assert_eq!(want.len(), 2 * dim * n.pow(dim as u32 - 1));
            let got: Vec<(usize, usize)> = crate::mesh::boundary_facets(&mesh).into_iter().map(|(c, a, s)| (c, 2 * a + s)).collect();
            assert_eq!(got, want, "dim {dim}");
        }
    }

    /// Two unit squares side by side (0-1-3-4 and 1-2-4-5 in tensor
    /// order): six boundary edges, the shared one (1, 4) not among them;
    /// every vertex lists its cells.
    #[test]
    fn two_squares_share_one_edge() {
        let cells = [[0u32, 1, 3, 4], [1, 2, 4, 5]];
        let around = VertexCells::new(&cells, 4, 6);
        assert_eq!((around.of(0), around.of(1), around.of(5)), (&[0u32][..], &[0u32, 1][..], &[1u32][..]));
        // facet l of a square: axis l / 2, side l % 2 (vertices whose bit matches)
        let facets: Vec<u8> = (0..4).map(|l| (0..4).filter(|v| (v >> (l / 2)) & 1 == l % 2).map(|v| 1 << v).sum()).collect();
        assert_eq!(single_facets(&cells, 4, 6, &facets), vec![(0, 0), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3)]);
    }
}
