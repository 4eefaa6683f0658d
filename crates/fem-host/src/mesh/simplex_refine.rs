//! Uniform (red) refinement of triangle and tetrahedron meshes: every edge
//! gets its midpoint, a triangle becomes four similar ones, a tetrahedron
//! eight (four at the corners and the inner octahedron cut along its
//! diagonal between the midpoints of edges 02 and 13, as in Bey's
//! refinement). New vertices come after the old ones, so vertex v of the
//! coarse mesh is vertex v of the fine one; every child is oriented
//! positively.

use super::simplex::SimplexMesh;
use crate::space::hash::IntMap;
use crate::{Error, Result};

/// Children of a tetrahedron by local vertex: 0..4 the corners, 4 + k the
/// midpoint of edge k of [`EDGES3`].
const TET_CHILDREN: [[usize; 4]; 8] = [[0, 4, 5, 6], [4, 1, 7, 8], [5, 7, 2, 9], [6, 8, 9, 3], [4, 5, 6, 8], [4, 5, 7, 8], [5, 6, 8, 9], [5, 7, 8, 9]];
/// Edges of a tetrahedron: 01, 02, 03, 12, 13, 23.
const EDGES3: [[usize; 2]; 6] = [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]];
/// Children of a triangle: corners 0..3, midpoints 3 + k of 01, 12, 20.
const TRI_CHILDREN: [[usize; 3]; 4] = [[0, 3, 5], [3, 1, 4], [5, 4, 2], [3, 4, 5]];
const EDGES2: [[usize; 2]; 3] = [[0, 1], [1, 2], [2, 0]];

impl SimplexMesh {
    /// The mesh refined `levels` times uniformly (8^levels or 4^levels
    /// times the cells); an error when the result would pass the u32
    /// index range.
    pub fn refined(&self, levels: usize) -> Result<SimplexMesh> {
        let mut m = self.clone();
        for _ in 0..levels {
            m = m.refine_once()?;
        }
        Ok(m)
    }

    /// The mesh refined once: the children of cell `c` are cells
    /// `k·c .. k·c + k` (k = 4 triangles, 8 tetrahedra).
    pub fn refine_once(&self) -> Result<SimplexMesh> {
        let d = self.dim;
        let (edges, children): (&[[usize; 2]], usize) = if d == 2 { (&EDGES2, 4) } else { (&EDGES3, 8) };
        let cells = self.cells.len().checked_mul(children).filter(|&n| n <= u32::MAX as usize);
        let Some(n_cells) = cells else {
            return Err(Error::InvalidArgument(format!("refining {} cells would pass the u32 index range", self.cells.len())));
        };
        let mut coords = self.coords.clone();
        let mut mid: IntMap<u64, u32> = IntMap::default();
        let mut out = Vec::with_capacity(n_cells);
        for cell in &self.cells {
            let mut local = [0u32; 10];
            local[..=d].copy_from_slice(&cell[..=d]);
            for (k, &[i, j]) in edges.iter().enumerate() {
                let (a, b) = (cell[i].min(cell[j]), cell[i].max(cell[j]));
                let next = coords.len() as u32;
                local[d + 1 + k] = *mid.entry((a as u64) << 32 | b as u64).or_insert_with(|| {
                    let (xa, xb) = (self.coords[a as usize], self.coords[b as usize]);
                    coords.push(std::array::from_fn(|c| 0.5 * (xa[c] + xb[c])));
                    next
                });
            }
            if d == 2 {
                out.extend(TRI_CHILDREN.iter().map(|c| [local[c[0]], local[c[1]], local[c[2]], u32::MAX]));
            } else {
                out.extend(TET_CHILDREN.iter().map(|c| [local[c[0]], local[c[1]], local[c[2]], local[c[3]]]));
            }
        }
        if coords.len() > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!("{} vertices pass the u32 index range", coords.len())));
        }
        let mut fine = SimplexMesh { dim: d, coords, cells: out };
        for c in 0..fine.cells.len() {
            if fine.signed_volume(c) < 0.0 {
                fine.cells[c].swap(0, 1);
            }
        }
        Ok(fine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::simplex::SimplexBox;

    fn volume(m: &SimplexMesh) -> f64 {
        let f = if m.dim == 2 { 2.0 } else { 6.0 };
        (0..m.n_cells()).map(|c| m.signed_volume(c) / f).sum()
    }

    #[test]
    fn refinement_keeps_the_volume_and_conformity() {
        for dim in [2, 3] {
            let coarse = SimplexBox::unstructured(dim, 3, 5).build().unwrap();
            let fine = coarse.refined(2).unwrap();
            fine.validate().unwrap();
            let k = if dim == 2 { 16 } else { 64 };
            assert_eq!(fine.n_cells(), k * coarse.n_cells());
            assert!((volume(&fine) - volume(&coarse)).abs() < 1e-12, "{dim}D");
            // the coarse vertices keep their numbers
            assert_eq!(fine.coords[..coarse.coords.len()], coarse.coords[..]);
            // conforming: every interior facet is shared by exactly two cells
            let mut facets = std::collections::HashMap::new();
            for c in &fine.cells {
                for skip in 0..=dim {
                    let mut f: Vec<u32> = (0..=dim).filter(|&i| i != skip).map(|i| c[i]).collect();
                    f.sort_unstable();
                    *facets.entry(f).or_insert(0) += 1;
                }
            }
            assert!(facets.values().all(|&n| n == 1 || n == 2));
            let boundary = facets.values().filter(|&&n| n == 1).count();
            // the box's boundary: 2·dim faces, each refined by 4^levels (2^levels edges in 2D)
            let per_face = if dim == 2 { 3 * 4 } else { 2 * 9 * 16 };
            assert_eq!(boundary, 2 * dim * per_face, "{dim}D");
        }
    }
}
