//! The cells around every vertex, and the facets only one cell has (the
//! boundary), found through them.

use rayon::prelude::*;
use crate::counters::{atomic, filled};
use std::sync::atomic::Ordering::Relaxed;

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
        let mut count = filled(n, 0);
        let left = atomic(&mut count);
        (0..n_cells).into_par_iter().for_each(|c| named(c).for_each(|v| _ = left[v as usize].fetch_add(1, Relaxed)));
        let mut start = Vec::with_capacity(n + 1);
        let mut at = 0usize;
        start.push(0);
        for c in left {
            at += c.load(Relaxed) as usize;
            start.push(at);
        }
        // each id's cells placed from its end down, its count the cursor
        let mut cells = filled(at, 0);
        let placed = atomic(&mut cells);
        (0..n_cells).into_par_iter().for_each(|c| named(c).for_each(|v| placed[start[v as usize] + left[v as usize].fetch_sub(1, Relaxed) as usize - 1].store(c as u32, Relaxed)));
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
/// vertices whose bits `facets[f]` sets (at least two).
pub fn single_facets<const N: usize>(cells: &[[u32; N]], nv: usize, n_vertices: usize, facets: &[u8]) -> Vec<(usize, usize)> {
    let around = VertexCells::new(cells, nv, n_vertices);
    (0..cells.len())
        .into_par_iter()
        .flat_map_iter(|c| {
            let lists: [&[u32]; 8] = std::array::from_fn(|j| if j < nv { around.of(cells[c][j] as usize) } else { &[] });
            let lone = (0..facets.len()).filter(|&f| !held_elsewhere(c as u32, &lists, facets[f])).fold(0u32, |m, f| m | 1 << f);
            (0..facets.len()).filter(move |f| lone >> f & 1 == 1).map(move |f| (c, f))
        })
        .collect()
}

/// Whether a cell other than `c` holds every vertex of the facet whose
/// local vertices `mask` sets, from the ascending cell lists around the
/// cell's vertices: the cells common to the facet's first and last
/// vertex (a diagonal of a quadrilateral facet, which only the facet's
/// cells share), merged, then looked up in the other vertices' lists.
/// About 130 comparisons a hexahedron, where tallying every neighbour's
/// vertices in a hash table took three times as long.
fn held_elsewhere(c: u32, lists: &[&[u32]; 8], mask: u8) -> bool {
    let (first, last) = (mask.trailing_zeros() as usize, 7 - mask.leading_zeros() as usize);
    let (a, b) = (lists[first], lists[last]);
    let inner = mask & !(1 << first | 1 << last);
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                let o = a[i];
                if o != c && (0..8).filter(|k| inner >> k & 1 == 1).all(|k| lists[k].binary_search(&o).is_ok()) {
                    return true;
                }
                (i, j) = (i + 1, j + 1);
            }
        }
    }
    false
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
