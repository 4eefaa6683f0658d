//! Greedy colouring of cells so that no two cells of one colour share a
//! row: cells of a colour can then scatter into the result without races
//! (Reguly & Giles §4.1: first colour not used by any neighbour).

use crate::space::dirichlet::NONE;
use crate::space::Layout;

/// Cells grouped by colour.
#[derive(Clone, Debug)]
pub struct Colouring {
    pub colour_of: Vec<u32>,
    /// `cells[k]` are the cells of colour `k`, ascending.
    pub cells: Vec<Vec<u32>>,
}

/// For every row, the cells that touch it (CSR-like: offsets and cells).
pub fn row_cells(layout: &Layout) -> (Vec<usize>, Vec<u32>) {
    let nb = layout.dofs_per_cell;
    let mut count = vec![0usize; layout.n_rows + 1];
    for &r in &layout.cell_rows {
        if r != NONE {
            count[r as usize + 1] += 1;
        }
    }
    for i in 0..layout.n_rows {
        count[i + 1] += count[i];
    }
    let mut fill = count.clone();
    let mut cells = vec![0u32; count[layout.n_rows]];
    for (k, &r) in layout.cell_rows.iter().enumerate() {
        if r != NONE {
            cells[fill[r as usize]] = (k / nb) as u32;
            fill[r as usize] += 1;
        }
    }
    (count, cells)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::BoxMesh;
    use crate::space::{DirichletMode, Numbering, Space};

    #[test]
    fn no_two_cells_of_a_colour_share_a_row() {
        for dim in [2, 3] {
            for mesh in [BoxMesh::structured(dim, 5), BoxMesh::unstructured(dim, 5, 4)] {
                let mesh = mesh.build().unwrap();
                let space = Space::new(&mesh, 2, Numbering::Original).unwrap();
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
    fn the_check_rejects_a_bad_colouring() {
        let mesh = BoxMesh::structured(2, 3).build().unwrap();
        let space = Space::new(&mesh, 1, Numbering::Original).unwrap();
        let layout = Layout::new(&space, DirichletMode::Zero);
        let mut col = Colouring::cells(&layout);
        let moved = col.cells[1].pop().unwrap();
        col.cells[0].push(moved);
        assert!(!col.is_valid(&layout));
    }
}
