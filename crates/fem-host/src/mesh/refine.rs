//! Uniform refinement: every quadrilateral into 4, every hexahedron into
//! 8, in the parent's own reference frame, so a child keeps its parent's
//! local orientation and its position inside the parent is known exactly
//! (what multigrid prolongation needs). New vertices at edge midpoints,
//! face and cell centres are shared between neighbours through the sorted
//! ids of the parent corners that span them, and placed at the mean of
//! those corners: the exact image of the reference point under the
//! multilinear cell map.

use super::{Cell, Mesh};
use crate::space::dofs::refinement_lattice;
use crate::Result;
use rayon::prelude::*;

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
pub fn refine(mesh: &Mesh) -> Result<Refinement> {
    refine_with(mesh, |_, x| x)
}

/// Refines every cell of `mesh` once; `place(corners, mean)` positions a
/// new vertex spanned by the coarse vertices `corners` (a curved boundary
/// projects those that lie on it). Every pass runs in parallel: the new
/// vertices are the points of each cell's 3^dim lattice that are not its
/// corners, numbered as a serial pass would first meet them
/// ([`refinement_lattice`]), each placed once, from the cell that meets it
/// first.
pub fn refine_with(mesh: &Mesh, place: impl Fn(&[u32], [f64; 3]) -> [f64; 3] + Sync) -> Result<Refinement> {
    let dim = mesh.dim;
    let (nv, points) = (1usize << dim, 3usize.pow(dim as u32));
    let (lattice, first_slot) = refinement_lattice(mesh)?;
    let placed: Vec<[f64; 3]> = first_slot
        .par_iter()
        .map(|&slot| {
            let (c, l) = (slot as usize / points, slot as usize % points);
            let cell = &mesh.cells[c];
            // the corners spanning point t_a ∈ {0, 1, 2} (2 = the far side)
            let t: [usize; 3] = std::array::from_fn(|a| l / 3usize.pow(a as u32) % 3);
            let mut corners = [0u32; 8];
            let mut n = 0;
            for v in (0..nv).filter(|&v| (0..dim).all(|a| t[a] == 1 || t[a] == 2 * ((v >> a) & 1))) {
                corners[n] = cell[v];
                n += 1;
            }
            let mut x = [0.0; 3];
            for &v in &corners[..n] {
                for a in 0..3 {
                    x[a] += mesh.coords[v as usize][a] / n as f64;
                }
            }
            place(&corners[..n], x)
        })
        .collect();
    let mut coords = Vec::with_capacity(mesh.coords.len() + placed.len());
    coords.extend_from_slice(&mesh.coords);
    coords.extend(placed);
    let children = mesh.n_cells() * nv;
    let cells: Vec<Cell> = (0..children)
        .into_par_iter()
        .map(|f| {
            let (c, k) = (f / nv, f % nv);
            let mut fine: Cell = [0; 8];
            for (v, fv) in fine.iter_mut().enumerate().take(nv) {
                let l: usize = (0..dim).map(|a| (((k >> a) & 1) + ((v >> a) & 1)) * 3usize.pow(a as u32)).sum();
                *fv = lattice[c * points + l];
            }
            fine
        })
        .collect();
    let parent = (0..children).into_par_iter().map(|f| (f / nv) as u32).collect();
    let child = (0..children).into_par_iter().map(|f| (f % nv) as u8).collect();
    Ok(Refinement { fine: Mesh { dim, coords, cells }, parent, child })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::hole::HoleDomain;
    use crate::mesh::BoxMesh;
    use std::collections::HashMap;

    /// The definition: cells in order, their lattice points in order, a
    /// new vertex at the first meeting of the corners spanning it.
    fn serial(mesh: &Mesh, place: impl Fn(&[u32], [f64; 3]) -> [f64; 3]) -> Refinement {
        let dim = mesh.dim;
        let nv = 1usize << dim;
        let mut coords = mesh.coords.clone();
        let mut ids: HashMap<Vec<u32>, u32> = HashMap::new();
        let (mut cells, mut parent, mut child) = (Vec::new(), Vec::new(), Vec::new());
        for (c, cell) in mesh.cells.iter().enumerate() {
            let lattice: Vec<u32> = (0..3usize.pow(dim as u32))
                .map(|l| {
                    let t: Vec<usize> = (0..dim).map(|a| (l / 3usize.pow(a as u32)) % 3).collect();
                    let corners: Vec<u32> = (0..nv).filter(|&v| (0..dim).all(|a| t[a] == 1 || t[a] == 2 * ((v >> a) & 1))).map(|v| cell[v]).collect();
                    if corners.len() == 1 {
                        return corners[0];
                    }
                    let mut key = corners.clone();
                    key.sort_unstable();
                    *ids.entry(key).or_insert_with(|| {
                        let mut x = [0.0; 3];
                        for &v in &corners {
                            (0..3).for_each(|a| x[a] += mesh.coords[v as usize][a] / corners.len() as f64);
                        }
                        coords.push(place(&corners, x));
                        (coords.len() - 1) as u32
                    })
                })
                .collect();
            for k in 0..nv {
                let mut fine: Cell = [0; 8];
                for (v, fv) in fine.iter_mut().enumerate().take(nv) {
                    *fv = lattice[(0..dim).map(|a| (((k >> a) & 1) + ((v >> a) & 1)) * 3usize.pow(a as u32)).sum::<usize>()];
                }
                cells.push(fine);
                parent.push(c as u32);
                child.push(k as u8);
            }
        }
        Refinement { fine: Mesh { dim, coords, cells }, parent, child }
    }

    /// The parallel refinement is the serial definition to the bit, on
    /// shuffled boxes of more than one chunk of cells and on the hole's
    /// curved meshes, whatever the thread count.
    #[test]
    fn parallel_refinement_is_the_serial_one() {
        for dim in [2, 3] {
            let hole = HoleDomain::benchmark(dim);
            let box_mesh = BoxMesh::unstructured(dim, if dim == 2 { 70 } else { 17 }, 3).build().unwrap();
            let hole_mesh = hole.coarse().unwrap();
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                for (mesh, curved) in [(&box_mesh, false), (&hole_mesh, true)] {
                    let got = pool.install(|| if curved { hole.refine(mesh).unwrap() } else { refine(mesh).unwrap() });
                    let want = if curved { serial(mesh, |c, x| hole.place(mesh, c, x)) } else { serial(mesh, |_, x| x) };
                    assert_eq!(got.fine.cells, want.fine.cells, "{dim}D, {threads} threads, curved {curved}");
                    assert_eq!((&got.parent, &got.child), (&want.parent, &want.child));
                    let same = got.fine.coords.iter().zip(&want.fine.coords).all(|(a, b)| a.map(f64::to_bits) == b.map(f64::to_bits));
                    assert!(same && got.fine.coords.len() == want.fine.coords.len(), "{dim}D coordinates");
                }
            }
        }
    }

    #[test]
    fn refinement_conforms_and_keeps_the_volume() {
        for dim in [2, 3] {
            let coarse = BoxMesh::unstructured(dim, 3, 5).build().unwrap();
            let r = refine(&coarse).unwrap();
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
