//! Triangle and tetrahedron meshes of the unit square and cube.
//!
//! Built from the box mesh (so the same perturbation of interior vertices
//! applies) by splitting every square into two triangles along one
//! diagonal and every cube into the six Kuhn tetrahedra around its main
//! diagonal; the split follows the grid axes, so faces match between
//! neighbours. Then vertices are renumbered and cells shuffled at random,
//! so nothing downstream relies on lexicographic order. Every cell is
//! stored positively oriented.

use super::BoxMesh;
use crate::rng::SplitMix64;
use crate::{Error, Result};

/// A conforming simplex mesh: `cells[c][..dim + 1]` index `coords`.
#[derive(Clone, Debug)]
pub struct SimplexMesh {
    /// 2 (triangles) or 3 (tetrahedra).
    pub dim: usize,
    /// Vertex coordinates; only the first `dim` components are used.
    pub coords: Vec<[f64; 3]>,
    /// Vertex ids of each cell, positively oriented; the slot past a
    /// triangle's three is `u32::MAX`.
    pub cells: Vec<[u32; 4]>,
}

/// Parameters of a simplex mesh of the unit square or cube.
#[derive(Clone, Debug)]
pub struct SimplexBox {
    /// 2 (triangles of the unit square) or 3 (tetrahedra of the unit cube).
    pub dim: usize,
    /// Squares or cubes per direction before splitting.
    pub cells: usize,
    /// Largest random move of an interior vertex per coordinate, as a
    /// fraction of the grid spacing (at most 0.2, so no cell inverts).
    pub perturb: f64,
    /// Random vertex numbering and cell order.
    pub shuffle: bool,
    /// Seed of the perturbation and shuffle; equal seeds give identical
    /// meshes.
    pub seed: u64,
}

impl SimplexBox {
    /// The benchmark mesh: perturbed by 0.15 h and shuffled.
    pub fn unstructured(dim: usize, cells: usize, seed: u64) -> Self {
        Self { dim, cells, perturb: 0.15, shuffle: true, seed }
    }

    /// Grid divisions that give about `target` simplices (2n² or 6n³).
    pub fn divisions_for(dim: usize, target: usize) -> usize {
        let per = if dim == 2 { 2.0 } else { 6.0 };
        ((target as f64 / per).powf(1.0 / dim as f64).round() as usize).max(1)
    }

    /// Generates and validates the mesh; [`Error::InvalidArgument`] for a
    /// perturbation outside \[0, 0.2\] or more cells than u32 indices reach
    /// (and whatever [`BoxMesh::build`] refuses).
    pub fn build(&self) -> Result<SimplexMesh> {
        if !(0.0..=0.2).contains(&self.perturb) {
            return Err(Error::InvalidArgument(format!("perturbation {} outside [0, 0.2]", self.perturb)));
        }
        let grid = BoxMesh { dim: self.dim, cells: self.cells, perturb: self.perturb, shuffle: false, seed: self.seed }.build()?;
        let d = self.dim;
        let total = grid.cells.len() * if d == 2 { 2 } else { 6 };
        if total > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!("{total} cells exceed the u32 index range")));
        }
        let mut cells = Vec::with_capacity(total);
        for hex in &grid.cells {
            for path in kuhn_paths(d) {
                let mut s = [u32::MAX; 4];
                for (k, &w) in path.iter().enumerate() {
                    s[k] = hex[w];
                }
                cells.push(s);
            }
        }
        let mut mesh = SimplexMesh { dim: d, coords: grid.coords, cells };
        for c in 0..mesh.cells.len() {
            if mesh.signed_volume(c) < 0.0 {
                mesh.cells[c].swap(0, 1);
            }
        }
        if self.shuffle {
            mesh.shuffle(&mut SplitMix64::new(self.seed ^ 0x5eed));
        }
        mesh.validate()?;
        Ok(mesh)
    }
}

/// Local vertex indices (tensor bits) of the simplices of one square or
/// cube: monotone lattice paths from vertex 0 to vertex 2^d − 1.
pub fn kuhn_paths(d: usize) -> Vec<Vec<usize>> {
    let perms: &[&[usize]] = if d == 2 { &[&[0, 1], &[1, 0]] } else { &[&[0, 1, 2], &[0, 2, 1], &[1, 0, 2], &[1, 2, 0], &[2, 0, 1], &[2, 1, 0]] };
    perms
        .iter()
        .map(|perm| {
            let mut path = vec![0];
            let mut w = 0;
            for &a in perm.iter() {
                w |= 1 << a;
                path.push(w);
            }
            path
        })
        .collect()
}

impl SimplexMesh {
    /// Number of cells.
    pub fn n_cells(&self) -> usize {
        self.cells.len()
    }

    /// dim + 1: 3 for triangles, 4 for tetrahedra.
    pub fn vertices_per_cell(&self) -> usize {
        self.dim + 1
    }

    /// d! times the signed volume of cell `c` (the Jacobian determinant of
    /// its affine map).
    pub fn signed_volume(&self, c: usize) -> f64 {
        let v = &self.cells[c];
        let x0 = self.coords[v[0] as usize];
        let e = |k: usize, a: usize| self.coords[v[k] as usize][a] - x0[a];
        if self.dim == 2 {
            e(1, 0) * e(2, 1) - e(1, 1) * e(2, 0)
        } else {
            e(1, 0) * (e(2, 1) * e(3, 2) - e(2, 2) * e(3, 1)) - e(1, 1) * (e(2, 0) * e(3, 2) - e(2, 2) * e(3, 0))
                + e(1, 2) * (e(2, 0) * e(3, 1) - e(2, 1) * e(3, 0))
        }
    }

    /// Refuses inverted or degenerate cells and out-of-range vertices,
    /// naming the first offenders.
    pub fn validate(&self) -> Result<()> {
        let n = self.coords.len() as u32;
        let bad: Vec<usize> = (0..self.cells.len())
            .filter(|&c| self.cells[c][..=self.dim].iter().any(|&v| v >= n) || !(self.signed_volume(c) > 0.0))
            .take(5)
            .collect();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!("inverted, degenerate or out-of-range simplices, first: {bad:?}")))
        }
    }

    fn shuffle(&mut self, rng: &mut SplitMix64) {
        let vperm = super::generate::renumber_vertices(&mut self.coords, rng);
        let cperm = rng.permutation(self.cells.len());
        let mut cells = vec![[u32::MAX; 4]; self.cells.len()];
        for (old, &new) in cperm.iter().enumerate() {
            let mut s = self.cells[old];
            for v in s.iter_mut().take(self.dim + 1) {
                *v = vperm[*v as usize];
            }
            // An even permutation of the vertices keeps the orientation: any
            // rotation of three, a rotation by two of four.
            let k = if self.dim == 2 { rng.below(3) } else { 2 * rng.below(2) };
            s[..=self.dim].rotate_left(k);
            cells[new as usize] = s;
        }
        self.cells = cells;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_meshes_are_conforming_positive_and_fill_the_box() {
        for dim in [2, 3] {
            let n = 3;
            let mesh = SimplexBox::unstructured(dim, n, 7).build().unwrap();
            assert_eq!(mesh.n_cells(), if dim == 2 { 2 * n * n } else { 6 * n * n * n });
            let fact = if dim == 2 { 2.0 } else { 6.0 };
            let volume: f64 = (0..mesh.n_cells()).map(|c| mesh.signed_volume(c) / fact).sum();
            assert!((volume - 1.0).abs() < 1e-12, "volume {volume}");
            // Conforming: every interior facet is shared by exactly two cells.
            let mut facets = std::collections::HashMap::new();
            for cell in &mesh.cells {
                for skip in 0..=dim {
                    let mut f: Vec<u32> = (0..=dim).filter(|&k| k != skip).map(|k| cell[k]).collect();
                    f.sort_unstable();
                    *facets.entry(f).or_insert(0) += 1;
                }
            }
            let boundary = facets.values().filter(|&&k| k == 1).count();
            assert!(facets.values().all(|&k| k <= 2));
            assert_eq!(boundary, if dim == 2 { 4 * n } else { 6 * 2 * n * n });
        }
    }

    #[test]
    fn inverted_cells_are_refused() {
        let mut mesh = SimplexBox::unstructured(2, 2, 1).build().unwrap();
        mesh.cells[3].swap(1, 2);
        let err = mesh.validate().unwrap_err().to_string();
        assert!(err.contains("[3]"), "{err}");
    }
}
