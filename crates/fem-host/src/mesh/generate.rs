//! Box meshes of \[0,1\]^D, structured or unstructured-like.
//!
//! The unstructured-like variant starts from the structured grid and then
//! moves interior vertices randomly, renumbers vertices randomly, shuffles
//! the cell order and gives every cell a random proper rotation of its
//! local vertex order, so that no later stage can rely on lexicographic
//! numbering or on neighbours sharing a local orientation.

use rayon::prelude::*;
use super::{Cell, Mesh};
use crate::rng::SplitMix64;
use crate::{Error, Result};

/// Parameters of a box mesh.
#[derive(Clone, Debug)]
pub struct BoxMesh {
    /// Space dimension: 2 (quadrilaterals) or 3 (hexahedra).
    pub dim: usize,
    /// Cells per direction.
    pub cells: usize,
    /// Largest random move of an interior vertex per coordinate, as a
    /// fraction of the cell size (0 for a structured grid; at most 0.25 so
    /// every cell stays convex).
    pub perturb: f64,
    /// Random vertex numbering, cell order and local orientation.
    pub shuffle: bool,
    /// Seed of the SplitMix64 stream behind the perturbation and shuffle;
    /// equal seeds give identical meshes.
    pub seed: u64,
}

impl BoxMesh {
    /// A structured grid of `cells`^dim cells.
    pub fn structured(dim: usize, cells: usize) -> Self {
        Self { dim, cells, perturb: 0.0, shuffle: false, seed: 1 }
    }

    /// The unstructured-like variant: perturbed by 0.2 h and shuffled.
    pub fn unstructured(dim: usize, cells: usize, seed: u64) -> Self {
        Self { dim, cells, perturb: 0.2, shuffle: true, seed }
    }

    /// Generates the mesh of \[0,1\]^dim; [`Error::InvalidArgument`] for a
    /// dimension other than 2 or 3, zero cells, a perturbation outside
    /// \[0, 0.25\] or more vertices than u32 indices reach.
    pub fn build(&self) -> Result<Mesh> {
        if !(2..=3).contains(&self.dim) {
            return Err(Error::InvalidArgument(format!("mesh dimension must be 2 or 3, not {}", self.dim)));
        }
        if self.cells == 0 {
            return Err(Error::InvalidArgument("a mesh needs at least one cell per direction".into()));
        }
        if !(0.0..=0.25).contains(&self.perturb) {
            return Err(Error::InvalidArgument(format!("perturbation {} outside [0, 0.25]", self.perturb)));
        }
        let (n, d) = (self.cells, self.dim);
        let nv1 = n + 1;
        let n_vertices = nv1.pow(d as u32);
        let n_cells = n.pow(d as u32);
        if n_vertices > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!("{n_vertices} vertices exceed the u32 index range")));
        }
        let mut rng = SplitMix64::new(self.seed);
        let h = 1.0 / n as f64;
        // the grid in parallel; the perturbation draws from one sequence,
        // vertex after vertex, so a seed gives one mesh
        let mut coords: Vec<[f64; 3]> = (0..n_vertices)
            .into_par_iter()
            .map(|v| {
                let mut x = [0.0; 3];
                let mut rest = v;
                for xa in x.iter_mut().take(d) {
                    *xa = (rest % nv1) as f64 * h;
                    rest /= nv1;
                }
                x
            })
            .collect();
        if self.perturb > 0.0 {
            for x in coords.iter_mut() {
                if x[..d].iter().all(|&xa| xa > 0.5 * h && xa < 1.0 - 0.5 * h) {
                    for xa in x.iter_mut().take(d) {
                        *xa += (2.0 * rng.next_f64() - 1.0) * self.perturb * h;
                    }
                }
            }
        }
        let mut cells: Vec<Cell> = (0..n_cells)
            .into_par_iter()
            .map(|c| {
                let mut base = [0usize; 3];
                let mut rest = c;
                for b in base.iter_mut().take(d) {
                    *b = rest % n;
                    rest /= n;
                }
                let mut cell = [0u32; 8];
                for (k, ck) in cell.iter_mut().enumerate().take(1 << d) {
                    let mut v = 0;
                    for a in (0..d).rev() {
                        v = v * nv1 + base[a] + ((k >> a) & 1);
                    }
                    *ck = v as u32;
                }
                cell
            })
            .collect();
        if self.shuffle {
            shuffle(d, &mut coords, &mut cells, &mut rng);
        }
        Ok(Mesh { dim: d, coords, cells })
    }
}

/// The proper rotations of the reference square or cube, as maps of local
/// vertex index `w ↦ T(w)` with `T(w)_a = w_{σ(a)} ⊕ f_a`: the axis
/// permutations σ and flips f whose combined parity is even.
pub fn rotations(dim: usize) -> Vec<[u8; 8]> {
    let perms: Vec<Vec<usize>> = match dim {
        2 => vec![vec![0, 1], vec![1, 0]],
        _ => vec![vec![0, 1, 2], vec![0, 2, 1], vec![1, 0, 2], vec![1, 2, 0], vec![2, 0, 1], vec![2, 1, 0]],
    };
    let mut out = Vec::new();
    for sigma in perms {
        let inversions = (0..dim).flat_map(|i| (i + 1..dim).map(move |j| (i, j))).filter(|&(i, j)| sigma[i] > sigma[j]).count();
        for flips in 0..(1usize << dim) {
            if (inversions + flips.count_ones() as usize) % 2 != 0 {
                continue;
            }
            let mut map = [0u8; 8];
            for (w, m) in map.iter_mut().enumerate().take(1 << dim) {
                let mut t = 0;
                for a in 0..dim {
                    t |= (((w >> sigma[a]) & 1) ^ ((flips >> a) & 1)) << a;
                }
                *m = t as u8;
            }
            out.push(map);
        }
    }
    out
}

/// Renumbers the vertices at random and returns the new id of each old one.
pub(super) fn renumber_vertices(coords: &mut Vec<[f64; 3]>, rng: &mut SplitMix64) -> Vec<u32> {
    let vperm = rng.permutation(coords.len());
    let mut new_coords = vec![[0.0; 3]; coords.len()];
    for (old, &new) in vperm.iter().enumerate() {
        new_coords[new as usize] = coords[old];
    }
    *coords = new_coords;
    vperm
}

fn shuffle(dim: usize, coords: &mut Vec<[f64; 3]>, cells: &mut Vec<Cell>, rng: &mut SplitMix64) {
    let vperm = renumber_vertices(coords, rng);
    let rots = rotations(dim);
    let cperm = rng.permutation(cells.len());
    let mut new_cells = vec![[0u32; 8]; cells.len()];
    for (old, &new) in cperm.iter().enumerate() {
        let rot = &rots[rng.below(rots.len())];
        let cell = &cells[old];
        let out = &mut new_cells[new as usize];
        for w in 0..(1 << dim) {
            out[w] = vperm[cell[rot[w] as usize] as usize];
        }
    }
    *cells = new_cells;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_counts() {
        assert_eq!(rotations(2).len(), 4);
        assert_eq!(rotations(3).len(), 24);
        for r in rotations(3) {
            let mut seen = [false; 8];
            for &v in &r {
                seen[v as usize] = true;
            }
            assert!(seen.iter().all(|&s| s), "{r:?} is not a permutation");
        }
    }

    #[test]
    fn sizes_and_bad_parameters() {
        let m = BoxMesh::structured(3, 4).build().unwrap();
        assert_eq!((m.n_vertices(), m.n_cells()), (125, 64));
        let m = BoxMesh::unstructured(2, 5, 3).build().unwrap();
        assert_eq!((m.n_vertices(), m.n_cells()), (36, 25));
        assert!(BoxMesh::structured(4, 2).build().is_err());
        assert!(BoxMesh::structured(2, 0).build().is_err());
        assert!(BoxMesh { perturb: 0.4, ..BoxMesh::structured(2, 2) }.build().is_err());
    }

    #[test]
    fn shuffled_mesh_is_the_same_geometry() {
        // Same cells as sets of points, in a different order and orientation.
        let key = |m: &Mesh| {
            let mut cs: Vec<Vec<(i64, i64, i64)>> = (0..m.n_cells())
                .map(|c| {
                    let mut pts: Vec<_> = m.cells[c][..m.vertices_per_cell()]
                        .iter()
                        .map(|&v| {
                            let x = m.coords[v as usize];
                            ((x[0] * 1e9) as i64, (x[1] * 1e9) as i64, (x[2] * 1e9) as i64)
                        })
                        .collect();
                    pts.sort();
                    pts
                })
                .collect();
            cs.sort();
            cs
        };
        let a = BoxMesh::structured(3, 3).build().unwrap();
        let b = BoxMesh { shuffle: true, ..BoxMesh::structured(3, 3) }.build().unwrap();
        assert_eq!(key(&a), key(&b));
        assert_ne!(a.cells, b.cells);
    }
}
