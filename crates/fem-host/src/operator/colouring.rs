//! Greedy colouring of cells so that no two cells of one colour share a
//! row: cells of a colour can then scatter into the result without races
//! (Reguly & Giles §4.1: first colour not used by any neighbour).

use crate::space::dirichlet::NONE;
use crate::space::Layout;

/// Cells grouped by colour.
#[derive(Clone, Debug)]
pub struct Colouring {
    /// `colour_of[c]`: colour of cell `c`.
    pub colour_of: Vec<u32>,
    /// `cells[k]` are the cells of colour `k`, ascending.
    pub cells: Vec<Vec<u32>>,
}

/// For every row, the cells that touch it, ascending (CSR-like: offsets
/// and cells), found in parallel.
pub fn row_cells(layout: &Layout) -> (Vec<usize>, Vec<u32>) {
    let nb = layout.dofs_per_cell;
    let around = crate::mesh::adjacency::VertexCells::of_ids(layout.n_cells(), layout.n_rows, |c| &layout.cell_rows[c * nb..(c + 1) * nb]);
    (around.start, around.cells)
}

impl Colouring {
    /// Colours the cells of `layout`: cells sharing any row conflict.
    pub fn cells(layout: &Layout) -> Self {
        let nb = layout.dofs_per_cell;
        let n_cells = layout.n_cells();
        let (offsets, touching) = row_cells(layout);
        let mut colour_of = vec![u32::MAX; n_cells];
        let mut used: Vec<u32> = Vec::new(); // used[k] == c  ⇔  colour k taken by a neighbour of c
        for c in 0..n_cells {
            for &r in &layout.cell_rows[c * nb..(c + 1) * nb] {
                if r == NONE {
                    continue;
                }
                for &other in &touching[offsets[r as usize]..offsets[r as usize + 1]] {
                    let k = colour_of[other as usize];
                    if k != u32::MAX {
                        if used.len() <= k as usize {
                            used.resize(k as usize + 1, u32::MAX);
                        }
                        used[k as usize] = c as u32;
                    }
                }
            }
            let k = (0..).find(|&k| used.get(k).is_none_or(|&u| u != c as u32)).unwrap();
            colour_of[c] = k as u32;
        }
        let n_colours = colour_of.iter().map(|&k| k as usize + 1).max().unwrap_or(0);
        let mut cells = vec![Vec::new(); n_colours];
        for (c, &k) in colour_of.iter().enumerate() {
            cells[k as usize].push(c as u32);
        }
        Self { colour_of, cells }
    }

    /// Number of colours (one parallel pass each).
    pub fn n_colours(&self) -> usize {
        self.cells.len()
    }

    /// Checks the defining property: no row is touched twice within a colour.
    pub fn is_valid(&self, layout: &Layout) -> bool {
        let nb = layout.dofs_per_cell;
        let mut last = vec![u32::MAX; layout.n_rows];
        for (k, cells) in self.cells.iter().enumerate() {
            for &c in cells {
                for &r in &layout.cell_rows[c as usize * nb..(c as usize + 1) * nb] {
                    if r == NONE {
                        continue;
                    }
                    if last[r as usize] == k as u32 {
                        return false;
                    }
                    last[r as usize] = k as u32;
                }
            }
        }
        true
    }
}

/// Two-level colouring for GPU element kernels (Reguly & Giles §4.1):
/// blocks of `block_size` consecutive cells are coloured so that blocks of
/// one colour share no row (one launch per block colour), and the cells of
/// a block get thread colours so that cells of one thread colour in a
/// block share no row (written one thread colour at a time between
/// barriers).
#[derive(Clone, Debug)]
pub struct TwoLevel {
    /// Consecutive cells per block (the cells of one thread block).
    pub block_size: usize,
    /// Block ids of each block colour.
    pub block_colours: Vec<Vec<u32>>,
    /// Thread colour of every cell within its block.
    pub thread_colour: Vec<u8>,
    /// Thread colours used in every block.
    pub block_n_colours: Vec<u8>,
}

/// The rows of the cells of block `b` (cells `b·block_size..`), a row
/// once per cell that has it.
fn block_rows(layout: &Layout, block_size: usize, b: usize) -> impl Iterator<Item = u32> + '_ {
    let (nb, ne) = (layout.dofs_per_cell, layout.n_cells());
    layout.cell_rows[b * block_size * nb..((b + 1) * block_size).min(ne) * nb].iter().copied().filter(|&r| r != NONE)
}

/// The blocks of `block_size` consecutive cells of `layout` by greedy
/// colour, ascending in each colour: blocks of one colour share no row.
/// Cells of a block run one after another on one core, so they may share
/// rows, and a core sweeps rows its neighbouring cells just touched where
/// a colouring of single cells spreads every colour over the whole mesh.
pub fn block_colours(layout: &Layout, block_size: usize) -> Vec<Vec<u32>> {
    colour_items(layout.n_rows, layout.n_cells().div_ceil(block_size), |b| block_rows(layout, block_size, b))
}

/// Whether no row is shared by two blocks of one colour of `colours`
/// ([`block_colours`]).
pub fn blocks_are_valid(layout: &Layout, block_size: usize, colours: &[Vec<u32>]) -> bool {
    let mut owner = vec![u32::MAX; layout.n_rows];
    for blocks in colours {
        owner.iter_mut().for_each(|o| *o = u32::MAX);
        for &b in blocks {
            for r in block_rows(layout, block_size, b as usize) {
                if owner[r as usize] != u32::MAX && owner[r as usize] != b {
                    return false;
                }
                owner[r as usize] = b;
            }
        }
    }
    true
}

/// Greedy colouring of `items`, where each item lists the rows it touches:
/// first colour not used by an earlier item sharing a row. `seen` maps a row
/// to the colours already on it (a vector over all rows for many items, a
/// small map for the cells of one block).
fn greedy<S: RowColours>(mut seen: S, items: impl Iterator<Item = Vec<u32>>) -> Vec<u32> {
    let mut out = Vec::new();
    let mut taken = Vec::new();
    for rows in items {
        taken.clear();
        for &r in &rows {
            taken.extend_from_slice(seen.colours(r));
        }
        taken.sort_unstable();
        taken.dedup();
        let c = (0u32..).find(|k| taken.binary_search(k).is_err()).unwrap();
        for &r in &rows {
            seen.add(r, c);
        }
        out.push(c);
    }
    out
}

/// Items (cells) grouped by greedy colour, item `i` touching the rows
/// `rows(i)` (`n_rows` rows in all, repeats allowed): the items of one
/// group share no row.
pub fn colour_items<I: IntoIterator<Item = u32>>(n_rows: usize, n_items: usize, rows: impl Fn(usize) -> I) -> Vec<Vec<u32>> {
    let colour = greedy_in_masks(n_rows, n_items, &rows).unwrap_or_else(|| greedy(vec![Vec::new(); n_rows], (0..n_items).map(|i| rows(i).into_iter().collect())));
    let mut groups = vec![Vec::new(); colour.iter().map(|&c| c as usize + 1).max().unwrap_or(0)];
    for (item, &c) in colour.iter().enumerate() {
        groups[c as usize].push(item as u32);
    }
    groups
}

/// [`greedy`]'s colours, each row's colours one bit of a word: no
/// vector per row and no sort of an item's rows, which took a fifth of a
/// second at a million rows on one core. `None` where an item would need
/// a 65th colour.
fn greedy_in_masks<I: IntoIterator<Item = u32>>(n_rows: usize, n_items: usize, rows: impl Fn(usize) -> I) -> Option<Vec<u32>> {
    let mut mask = vec![0u64; n_rows];
    (0..n_items)
        .map(|i| {
            let taken = rows(i).into_iter().fold(0u64, |m, r| m | mask[r as usize]);
            let c = (!taken).trailing_zeros();
            if c == u64::BITS {
                return None;
            }
            rows(i).into_iter().for_each(|r| mask[r as usize] |= 1 << c);
            Some(c)
        })
        .collect()
}

/// Colours recorded per row.
trait RowColours {
    fn colours(&self, r: u32) -> &[u32];
    fn add(&mut self, r: u32, c: u32);
}

impl RowColours for Vec<Vec<u32>> {
    fn colours(&self, r: u32) -> &[u32] {
        &self[r as usize]
    }
    fn add(&mut self, r: u32, c: u32) {
        self[r as usize].push(c);
    }
}

impl RowColours for crate::space::IntMap<u32, Vec<u32>> {
    fn colours(&self, r: u32) -> &[u32] {
        self.get(&r).map_or(&[], Vec::as_slice)
    }
    fn add(&mut self, r: u32, c: u32) {
        self.entry(r).or_default().push(c);
    }
}

impl TwoLevel {
    /// Colours the blocks of `block_size` cells of `layout`, then the cells
    /// within every block; an error when a block needs more than 254 thread
    /// colours.
    pub fn new(layout: &Layout, block_size: usize) -> crate::Result<Self> {
        let nb = layout.dofs_per_cell;
        let ne = layout.n_cells();
        let rows = |c: usize| -> Vec<u32> { layout.cell_rows[c * nb..(c + 1) * nb].iter().copied().filter(|&r| r != NONE).collect() };
        let n_blocks = ne.div_ceil(block_size);
        let block_colours = block_colours(layout, block_size);
        let mut thread_colour = vec![0u8; ne];
        let mut block_n_colours = vec![0u8; n_blocks];
        for b in 0..n_blocks {
            let cells = b * block_size..((b + 1) * block_size).min(ne);
            let tcol = greedy(crate::space::IntMap::default(), cells.clone().map(rows));
            let max = tcol.iter().copied().max().unwrap_or(0);
            if max >= u8::MAX as u32 {
                return Err(crate::Error::InvalidArgument(format!("block {b} needs {} thread colours (at most 254)", max + 1)));
            }
            for (c, k) in cells.zip(tcol) {
                thread_colour[c] = k as u8;
            }
            block_n_colours[b] = max as u8 + 1;
        }
        Ok(Self { block_size, block_colours, thread_colour, block_n_colours })
    }

    /// Checks both levels: no row shared by two blocks of one block colour,
    /// nor by two cells of one thread colour in one block.
    pub fn is_valid(&self, layout: &Layout) -> bool {
        let nb = layout.dofs_per_cell;
        let ne = layout.n_cells();
        if !blocks_are_valid(layout, self.block_size, &self.block_colours) {
            return false;
        }
        for b in 0..ne.div_ceil(self.block_size) {
            let cells: Vec<usize> = (b * self.block_size..((b + 1) * self.block_size).min(ne)).collect();
            for (x, &c1) in cells.iter().enumerate() {
                for &c2 in &cells[x + 1..] {
                    if self.thread_colour[c1] == self.thread_colour[c2] {
                        let r1 = &layout.cell_rows[c1 * nb..(c1 + 1) * nb];
                        if layout.cell_rows[c2 * nb..(c2 + 1) * nb].iter().any(|r| *r != NONE && r1.contains(r)) {
                            return false;
                        }
                    }
                }
                if self.thread_colour[c1] >= self.block_n_colours[b] {
                    return false;
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::BoxMesh;
    use crate::space::{DirichletMode, Space};

    #[test]
    fn no_two_cells_of_a_colour_share_a_row() {
        for dim in [2, 3] {
            for mesh in [BoxMesh::structured(dim, 5), BoxMesh::unstructured(dim, 5, 4)] {
                let mesh = mesh.build().unwrap();
                let space = Space::tensor(&mesh, 2).unwrap();
                for mode in [DirichletMode::Eliminate, DirichletMode::Zero] {
                    let layout = Layout::new(&space, mode);
                    let col = Colouring::cells(&layout);
                    assert!(col.is_valid(&layout));
                    // a vertex shared by 2^dim cells needs at least 2^dim colours
                    assert!(col.n_colours() >= 1 << dim && col.n_colours() <= 3usize.pow(dim as u32) + 2);
                    assert_eq!(col.cells.iter().map(Vec::len).sum::<usize>(), mesh.n_cells());
                }
            }
        }
    }

    #[test]
    fn two_level_colouring_is_valid_on_shuffled_meshes() {
        for dim in [2, 3] {
            let mesh = BoxMesh::unstructured(dim, 6, 8).build().unwrap();
            let space = Space::tensor(&mesh, 2).unwrap();
            let layout = Layout::new(&space, DirichletMode::Zero);
            let tl = TwoLevel::new(&layout, 32).unwrap();
            assert!(tl.is_valid(&layout));
            assert!(tl.block_colours.len() >= 2 && tl.block_n_colours.iter().all(|&n| n >= 1));
            assert_eq!(tl.block_colours.iter().map(Vec::len).sum::<usize>(), mesh.n_cells().div_ceil(32));
            // ascending in each colour: the CPU's tasks of one block each
            // rely on the short last block ending its colour
            assert!(tl.block_colours.iter().all(|bs| bs.windows(2).all(|w| w[0] < w[1])));
            let mut bad = tl.clone();
            bad.thread_colour.iter_mut().for_each(|c| *c = 0);
            assert!(!bad.is_valid(&layout));
            let mut bad = tl.clone();
            let all: Vec<u32> = bad.block_colours.concat();
            bad.block_colours = vec![all];
            assert!(!bad.is_valid(&layout));
        }
    }

    /// Colours in words equal colours in vectors, and past 64 colours the
    /// vectors take over: items sharing rows in a ring (some twice), and
    /// 70 items all on one row.
    #[test]
    fn colours_in_words_are_greedy_colours() {
        let ring = |i: usize| [(i % 50) as u32, ((i + 1) % 50) as u32, ((i * 7) % 50) as u32, (i % 50) as u32];
        let want = greedy(vec![Vec::new(); 50], (0..200).map(|i| ring(i).to_vec()));
        assert_eq!(greedy_in_masks(50, 200, ring), Some(want.clone()));
        let groups = colour_items(50, 200, ring);
        for (k, g) in groups.iter().enumerate() {
            assert!(g.iter().all(|&i| want[i as usize] == k as u32));
        }
        let star = |i: usize| [0u32, i as u32 + 1];
        assert_eq!(greedy_in_masks(71, 70, star), None);
        let groups = colour_items(71, 70, star);
        assert_eq!(groups.len(), 70);
        assert!(groups.iter().enumerate().all(|(k, g)| g == &[k as u32]));
    }

    #[test]
    fn the_check_rejects_a_bad_colouring() {
        let mesh = BoxMesh::structured(2, 3).build().unwrap();
        let space = Space::tensor(&mesh, 1).unwrap();
        let layout = Layout::new(&space, DirichletMode::Zero);
        let mut col = Colouring::cells(&layout);
        let moved = col.cells[1].pop().unwrap();
        col.cells[0].push(moved);
        assert!(!col.is_valid(&layout));
    }
}
