//! Uniform refinement: every quadrilateral into 4, every hexahedron into
//! 8, in the parent's own reference frame, so a child keeps its parent's
//! local orientation and its position inside the parent is known exactly
//! (what multigrid prolongation needs). New vertices at edge midpoints,
//! face and cell centres are shared between neighbours through the sorted
//! ids of the parent corners that span them, and placed at the mean of
//! those corners: the exact image of the reference point under the
//! multilinear cell map.

use super::{Cell, Mesh};
use std::collections::HashMap;

/// A refined mesh and where each fine cell came from.
#[derive(Clone, Debug)]
pub struct Refinement {
    /// The refined mesh: 2^dim children per coarse cell, coarse vertices
    /// keeping their ids.
    pub fine: Mesh,
    /// Parent (coarse) cell of each fine cell.
    pub parent: Vec<u32>,
    /// Position of each fine cell in its parent: bit `a` is the half along
    /// reference axis `a`.
    pub child: Vec<u8>,
}

/// Refines every cell of `mesh` once.
pub fn refine(mesh: &Mesh) -> Refinement {
    refine_with(mesh, |_, x| x)
}

/// Refines every cell of `mesh` once; `place(corners, mean)` positions a
/// new vertex spanned by the coarse vertices `corners` (a curved boundary
/// projects those that lie on it).
pub fn refine_with(mesh: &Mesh, place: impl Fn(&[u32], [f64; 3]) -> [f64; 3]) -> Refinement {
    let dim = mesh.dim;
    let nv = 1usize << dim;
    let mut coords = mesh.coords.clone();
    let mut ids: HashMap<[u32; 8], u32> = HashMap::new();
    let (mut cells, mut parent, mut child) = (Vec::new(), Vec::new(), Vec::new());
    for (c, cell) in mesh.cells.iter().enumerate() {
        // The 3^dim lattice of the parent: t_a ∈ {0, 1, 2} (2 = the far side).
        let mut lattice = [0u32; 27];
        for (l, slot) in lattice.iter_mut().enumerate().take(3usize.pow(dim as u32)) {
            let t: Vec<usize> = (0..dim).map(|a| (l / 3usize.pow(a as u32)) % 3).collect();
            let corners: Vec<u32> = (0..nv).filter(|&v| (0..dim).all(|a| t[a] == 1 || t[a] == 2 * ((v >> a) & 1))).map(|v| cell[v]).collect();
            *slot = if corners.len() == 1 {
                corners[0]
            } else {
                let mut key = [u32::MAX; 8];
                let mut sorted = corners.clone();
                sorted.sort_unstable();
                key[..sorted.len()].copy_from_slice(&sorted);
                *ids.entry(key).or_insert_with(|| {
                    let mut x = [0.0; 3];
                    for &v in &corners {
                        for a in 0..3 {
                            x[a] += mesh.coords[v as usize][a] / corners.len() as f64;
                        }
                    }
                    coords.push(place(&corners, x));
                    (coords.len() - 1) as u32
                })
            };
        }
        for k in 0..nv {
            let mut fine: Cell = [0; 8];
            for (v, fv) in fine.iter_mut().enumerate().take(nv) {
                let l: usize = (0..dim).map(|a| (((k >> a) & 1) + ((v >> a) & 1)) * 3usize.pow(a as u32)).sum();
                *fv = lattice[l];
            }
            cells.push(fine);
            parent.push(c as u32);
            child.push(k as u8);
        }
    }
    Refinement { fine: Mesh { dim, coords, cells }, parent, child }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::BoxMesh;

    #[test]
    fn refinement_conforms_and_keeps_the_volume() {
        for dim in [2, 3] {
            let coarse = BoxMesh::unstructured(dim, 3, 5).build().unwrap();
            let r = refine(&coarse);
            let fine = &r.fine;
            fine.validate().unwrap();
            assert_eq!(fine.n_cells(), coarse.n_cells() << dim);
            // (2n + 1)^dim vertices for an n^dim box: shared vertices were merged.
            assert_eq!(fine.n_vertices(), 7usize.pow(dim as u32));
            // Children sit inside their parents: centroids agree on average.
            for c in 0..coarse.n_cells() {
                let kids: Vec<usize> = (0..fine.n_cells()).filter(|&f| r.parent[f] as usize == c).collect();
                assert_eq!(kids.len(), 1 << dim);
                let mean: Vec<f64> = (0..3).map(|a| kids.iter().map(|&k| fine.centroid(k)[a]).sum::<f64>() / kids.len() as f64).collect();
                let pc = coarse.centroid(c);
                assert!((0..dim).all(|a| (mean[a] - pc[a]).abs() < 0.05), "{mean:?} vs {pc:?}");
            }
        }
    }
}
