//! Degrees of freedom of the continuous Q_p space.
//!
//! Nodes are the tensor products of the p + 1 Gauss–Lobatto–Legendre points;
//! each local node of a cell belongs to a mesh entity (vertex, edge, face
//! or the cell's interior) and has an index inside that entity that
//! neighbouring cells agree on, whatever their local orientation:
//! * edge nodes are counted from the edge's lower global vertex;
//! * face nodes use the face's lowest global vertex as origin and its
//!   neighbour with the lower global id as the first axis.
//!
//! Because GLL points are symmetric, agreeing on the index means agreeing
//! on the node's position. Entities then receive blocks of global numbers
//! in the order a [`Numbering`] prescribes.

use super::facets::{tensor_facets, Facet};
use crate::mesh::Mesh;
use crate::{Error, Result};
use fem_core::element::pow;
use rayon::prelude::*;

/// Highest Q_p degree a space may have: the degree the reference cells
/// are tabulated to.
pub use fem_core::shape::MAX_TENSOR_DEGREE;

/// Order in which global numbers are given out (Reguly & Giles §10.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Numbering {
    /// Cells in mesh order, entities numbered at first encounter.
    Original,
    /// All vertices, then edges, then faces, then cell interiors (rows of
    /// equal length side by side).
    Aligned,
    /// Cells visited by geometric blocks, entities at first encounter.
    Blocked,
    /// Blocks of cells, and within the whole mesh vertices before edges
    /// before faces before interiors.
    BlockedAligned,
}

impl std::str::FromStr for Numbering {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "original" => Ok(Self::Original),
            "aligned" => Ok(Self::Aligned),
            "blocked" => Ok(Self::Blocked),
            "blocked-aligned" => Ok(Self::BlockedAligned),
            _ => Err(format!("unknown numbering `{s}` (original, aligned, blocked, blocked-aligned)")),
        }
    }
}

/// A mesh entity: its dimension and its sorted global vertex ids (or the
/// cell id for a cell interior), padded with `u32::MAX`.
type EntityKey = (u8, [u32; 4]);

/// Where local node `tensor` of a cell lives: entity key, entity dimension
/// and the canonical index inside the entity.
fn locate(p: usize, dim: usize, cell_id: usize, cell: &[u32], tensor: &[usize]) -> (EntityKey, usize) {
    let mut inner_axes = [0usize; 3];
    let mut n_inner = 0;
    for a in (0..dim).filter(|&a| tensor[a] > 0 && tensor[a] < p) {
        inner_axes[n_inner] = a;
        n_inner += 1;
    }
    let inner = &inner_axes[..n_inner];
    // local vertex with the node's end bits and the given bits on inner axes
    let corner = |bits: &[usize]| -> u32 {
        let mut v = 0;
        for a in 0..dim {
            if tensor[a] == p {
                v |= 1 << a;
            }
        }
        for (k, &a) in inner.iter().enumerate() {
            v = (v & !(1 << a)) | (bits[k] << a);
        }
        cell[v]
    };
    let mut key = [u32::MAX; 4];
    match inner.len() {
        0 => {
            key[0] = corner(&[]);
            ((0, key), 0)
        }
        1 => {
            let (g0, g1) = (corner(&[0]), corner(&[1]));
            key[0] = g0.min(g1);
            key[1] = g0.max(g1);
            let t = tensor[inner[0]];
            ((1, key), if g0 < g1 { t - 1 } else { p - 1 - t })
        }
        2 if dim == 3 => {
            let (a, b) = (inner[0], inner[1]);
            let g = [[corner(&[0, 0]), corner(&[0, 1])], [corner(&[1, 0]), corner(&[1, 1])]];
            let mut sorted = [g[0][0], g[0][1], g[1][0], g[1][1]];
            sorted.sort_unstable();
            key = sorted;
            // origin corner (s0 along a, t0 along b)
            let (s0, t0) = (0..2).flat_map(|s| (0..2).map(move |t| (s, t))).min_by_key(|&(s, t)| g[s][t]).unwrap();
            let ua = if s0 == 0 { tensor[a] } else { p - tensor[a] };
            let ub = if t0 == 0 { tensor[b] } else { p - tensor[b] };
            let (u, v) = if g[1 - s0][t0] < g[s0][1 - t0] { (ua, ub) } else { (ub, ua) };
            ((2, key), (u - 1) + (p - 1) * (v - 1))
        }
        _ => {
            key[0] = cell_id as u32;
            let mut idx = 0;
            for a in (0..dim).rev() {
                idx = idx * (p - 1) + (tensor[a] - 1);
            }
            ((dim as u8 + 10, key), idx)
        }
    }
}

/// Cells in the order a numbering visits them.
fn cell_order(mesh: &Mesh, numbering: Numbering) -> Vec<u32> {
    let mut order: Vec<u32> = (0..mesh.n_cells() as u32).collect();
    if matches!(numbering, Numbering::Blocked | Numbering::BlockedAligned) {
        // Geometric blocks of about 8×8 (2D) or 4×4×4 (3D) cells.
        let per_dir = (mesh.n_cells() as f64).powf(1.0 / mesh.dim as f64);
        let block_cells = if mesh.dim == 2 { 8.0 } else { 4.0 };
        let blocks = (per_dir / block_cells).ceil().max(1.0) as usize;
        let (lo, hi) = bounding_box(mesh);
        let block_of = |c: u32| {
            let x = mesh.centroid(c as usize);
            let mut b = 0;
            for a in (0..mesh.dim).rev() {
                let t = ((x[a] - lo[a]) / (hi[a] - lo[a]).max(f64::MIN_POSITIVE) * blocks as f64) as usize;
                b = b * blocks + t.min(blocks - 1);
            }
            b
        };
        order.sort_by_key(|&c| (block_of(c), c));
    }
    order
}

fn bounding_box(mesh: &Mesh) -> ([f64; 3], [f64; 3]) {
    let mut lo = [f64::MAX; 3];
    let mut hi = [f64::MIN; 3];
    for x in &mesh.coords {
        for a in 0..3 {
            lo[a] = lo[a].min(x[a]);
            hi[a] = hi[a].max(x[a]);
        }
    }
    (lo, hi)
}

/// For every node slot (`k·nb + i`: node `i` of the `k`-th cell visited),
/// the first slot of the node's entity: the smallest slot of a vertex
/// (atomic minimum), the cell's first interior slot, and for edges and
/// faces the head of the entity's run in a parallel sort by key. Entities
/// in increasing first slot are the serial first-encounter order, so the
/// numbering does not depend on the thread count.
fn first_slots(located: &[(EntityKey, u32)], n_vertices: usize, nb: usize) -> Vec<u32> {
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
    let vertex: Vec<AtomicU32> = (0..n_vertices).map(|_| AtomicU32::new(u32::MAX)).collect();
    located.par_iter().enumerate().filter(|(_, l)| l.0 .0 == 0).for_each(|(s, l)| {
        vertex[l.0 .1[0] as usize].fetch_min(s as u32, Relaxed);
    });
    let mut first: Vec<u32> = located
        .par_chunks(nb)
        .enumerate()
        .flat_map_iter(|(k, nodes)| {
            let interior = nodes.iter().position(|l| l.0 .0 >= 10).map_or(u32::MAX, |i| (k * nb + i) as u32);
            let vertex = &vertex;
            nodes.iter().enumerate().map(move |(i, l)| match l.0 .0 {
                0 => vertex[l.0 .1[0] as usize].load(Relaxed),
                d if d >= 10 => interior,
                _ => (k * nb + i) as u32,
            })
        })
        .collect();
    let mut shared: Vec<(EntityKey, u32)> = located.par_iter().enumerate().filter(|(_, l)| matches!(l.0 .0, 1 | 2)).map(|(s, l)| (l.0, s as u32)).collect();
    shared.par_sort_unstable();
    let heads: Vec<(u32, u32)> = shared.par_chunk_by(|a, b| a.0 == b.0).flat_map_iter(|run| run.iter().map(move |&(_, s)| (s, run[0].1))).collect();
    drop(shared);
    for (s, head) in heads {
        first[s as usize] = head;
    }
    first
}

/// Numbers the DOFs of Q_`degree` on a validated `mesh`: their count,
/// every cell's DOFs (`[c·nb + i]`, tensor node order) and the boundary
/// facets (a sort of every cell's facet keys, done once here).
pub(crate) fn tensor_dofs(mesh: &Mesh, degree: usize, numbering: Numbering) -> Result<(usize, Vec<u32>, Vec<Facet>)> {
    if !(1..=MAX_TENSOR_DEGREE).contains(&degree) {
        return Err(Error::InvalidArgument(format!("degree must be in 1..={MAX_TENSOR_DEGREE}, not {degree}")));
    }
    mesh.validate()?;
    let facets = tensor_facets(mesh);
    let (p, dim) = (degree, mesh.dim);
    let np = p + 1;
    let nb = pow(np, dim);
    let n_cells = mesh.n_cells();
    // Entity of every local node, with its canonical index: located
    // in parallel, then numbered in the order the cells are visited.
    let order = cell_order(mesh, numbering);
    let located: Vec<(EntityKey, u32)> = order
        .par_iter()
        .flat_map_iter(|&c| {
            let cell = &mesh.cells[c as usize][..1 << dim];
            (0..nb).map(move |i| {
                let mut tensor = [0usize; 3];
                for (a, t) in tensor.iter_mut().enumerate().take(dim) {
                    *t = (i / pow(np, a)) % np;
                }
                let (key, idx) = locate(p, dim, c as usize, cell, &tensor[..dim]);
                (key, idx as u32)
            })
        })
        .collect();
    if located.len() > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!("{} cell nodes exceed the u32 index range", located.len())));
    }
    // Entities numbered by first encounter: a node slot that is the
    // first of its entity starts the next entity.
    let first = first_slots(&located, mesh.coords.len(), nb);
    let mut entity = vec![0u32; located.len()];
    let mut entity_dim: Vec<u8> = Vec::new();
    for (s, (&f, l)) in first.iter().zip(&located).enumerate() {
        if f as usize == s {
            entity[s] = entity_dim.len() as u32;
            entity_dim.push(if l.0 .0 >= 10 { l.0 .0 - 10 } else { l.0 .0 });
        }
    }
    let dofs_of = |d: u8| pow(p - 1, d as usize);
    // Offsets: entities in first-encounter order, grouped by dimension
    // for the aligned numberings.
    let mut ranked: Vec<u32> = (0..entity_dim.len() as u32).collect();
    if matches!(numbering, Numbering::Aligned | Numbering::BlockedAligned) {
        ranked.par_sort_by_key(|&e| (entity_dim[e as usize], e));
    }
    let mut offset = vec![0u32; entity_dim.len()];
    let mut n = 0usize;
    for &e in &ranked {
        offset[e as usize] = n as u32;
        n += dofs_of(entity_dim[e as usize]);
    }
    if n > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!("{n} DOFs exceed the u32 index range")));
    }
    let mut position = vec![0u32; n_cells];
    for (k, &c) in order.iter().enumerate() {
        position[c as usize] = k as u32;
    }
    let mut cell_dofs = vec![0u32; n_cells * nb];
    cell_dofs.par_chunks_mut(nb).zip(&position).for_each(|(dofs, &k)| {
        for (i, d) in dofs.iter_mut().enumerate() {
            let s = k as usize * nb + i;
            *d = offset[entity[first[s] as usize] as usize] + located[s].1;
        }
    });
    Ok((n, cell_dofs, facets))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::BoxMesh;
    use crate::space::Space;

    fn expected_dofs(dim: usize, n: usize, p: usize) -> usize {
        (n * p + 1).pow(dim as u32)
    }

    #[test]
    fn counts_and_boundary_on_structured_and_shuffled_meshes() {
        for dim in [2, 3] {
            for p in 1..=4 {
                let n = 3;
                for mesh in [BoxMesh::structured(dim, n), BoxMesh::unstructured(dim, n, 5)] {
                    let mesh = mesh.build().unwrap();
                    for numbering in [Numbering::Original, Numbering::Aligned, Numbering::Blocked, Numbering::BlockedAligned] {
                        let s = Space::tensor_numbered(&mesh, p, numbering).unwrap();
                        assert_eq!(s.n_dofs, expected_dofs(dim, n, p), "dim={dim} p={p}");
                        let interior = (n * p - 1).pow(dim as u32);
                        assert_eq!(s.boundary.iter().filter(|&&b| !b).count(), interior);
                        // every DOF is used
                        let mut used = vec![false; s.n_dofs];
                        for &d in &s.cell_dofs {
                            used[d as usize] = true;
                        }
                        assert!(used.iter().all(|&u| u));
                        if numbering == Numbering::Aligned {
                            // vertices first: the corner nodes hold exactly the first numbers
                            let corners: Vec<usize> = (0..1 << dim).map(|v| (0..dim).map(|a| ((v >> a) & 1) * p * (p + 1).pow(a as u32)).sum()).collect();
                            let nb = s.nb();
                            let n_vertices = (n + 1).pow(dim as u32) as u32;
                            for (k, &d) in s.cell_dofs.iter().enumerate() {
                                assert_eq!(corners.contains(&(k % nb)), d < n_vertices, "aligned numbering is grouped by entity");
                            }
                        }
                    }
                }
            }
        }
    }

    /// The decisive check of orientation: on a perturbed, shuffled, randomly
    /// rotated mesh, every cell that shares a DOF puts it at the same point.
    #[test]
    fn shared_dofs_sit_at_the_same_point_in_every_cell() {
        for dim in [2, 3] {
            for p in 1..=5 {
                let mesh = BoxMesh::unstructured(dim, 3, 11 + p as u64).build().unwrap();
                let s = Space::tensor(&mesh, p).unwrap();
                let x = &s.dof_coords;
                let (np, nb, nodes_1d) = (p + 1, s.nb(), s.gll_nodes());
                for c in 0..s.n_cells() {
                    for i in 0..nb {
                        let mut xi = [0.0; 3];
                        for a in 0..dim {
                            xi[a] = nodes_1d[(i / pow(np, a)) % np];
                        }
                        let here = match dim {
                            2 => {
                                let (q, _) = fem_core::element::geometry::<f64, 2>(&mesh.cell_vertices::<2>(c), [xi[0], xi[1]]);
                                [q[0], q[1], 0.0]
                            }
                            _ => fem_core::element::geometry::<f64, 3>(&mesh.cell_vertices::<3>(c), xi).0,
                        };
                        let d = s.cell_dofs[c * nb + i] as usize;
                        let err: f64 = (0..3).map(|a| (here[a] - x[d][a]).abs()).sum();
                        assert!(err < 1e-12, "dim={dim} p={p} cell {c} node {i}: DOF {d} at {here:?} vs {:?}", x[d]);
                    }
                }
                // boundary DOFs are exactly those on the unit box's faces
                for (d, xd) in x.iter().enumerate() {
                    let on = (0..dim).any(|a| xd[a].abs() < 1e-12 || (xd[a] - 1.0).abs() < 1e-12);
                    assert_eq!(s.boundary[d], on, "DOF {d} at {xd:?}");
                }
            }
        }
    }

    /// The numbering of [`tensor_dofs`] by its definition, serially: cells
    /// in visiting order, entities numbered at first encounter through a
    /// map, then given blocks of numbers in the numbering's order.
    fn serial_reference(mesh: &Mesh, p: usize, numbering: Numbering) -> Vec<u32> {
        let (np, dim) = (p + 1, mesh.dim);
        let nb = pow(np, dim);
        let mut first: std::collections::HashMap<EntityKey, u32> = std::collections::HashMap::new();
        let mut dims = Vec::new();
        let mut node_entity = vec![(0u32, 0u32); mesh.n_cells() * nb];
        for &c in &cell_order(mesh, numbering) {
            for i in 0..nb {
                let tensor: Vec<usize> = (0..dim).map(|a| (i / pow(np, a)) % np).collect();
                let (key, idx) = locate(p, dim, c as usize, &mesh.cells[c as usize][..1 << dim], &tensor);
                let e = *first.entry(key).or_insert_with(|| {
                    dims.push(if key.0 >= 10 { key.0 - 10 } else { key.0 });
                    dims.len() as u32 - 1
                });
                node_entity[c as usize * nb + i] = (e, idx as u32);
            }
        }
        let mut ranked: Vec<usize> = (0..dims.len()).collect();
        if matches!(numbering, Numbering::Aligned | Numbering::BlockedAligned) {
            ranked.sort_by_key(|&e| (dims[e], e));
        }
        let (mut offset, mut n) = (vec![0u32; dims.len()], 0);
        for e in ranked {
            offset[e] = n;
            n += pow(p - 1, dims[e] as usize) as u32;
        }
        node_entity.iter().map(|&(e, k)| offset[e as usize] + k).collect()
    }

    /// The parallel numbering (first slots by sort and atomic minimum) is
    /// the serial first-encounter one, on shuffled meshes and a thread
    /// count that splits the cells unevenly.
    #[test]
    fn numbering_equals_the_serial_first_encounter_one() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for dim in [2, 3] {
            for p in [1, 2, 4] {
                for mesh in [BoxMesh::structured(dim, 5), BoxMesh::unstructured(dim, 5, 7)] {
                    let mesh = mesh.build().unwrap();
                    for numbering in [Numbering::Original, Numbering::Aligned, Numbering::Blocked, Numbering::BlockedAligned] {
                        let (n, cell_dofs, _) = pool.install(|| tensor_dofs(&mesh, p, numbering)).unwrap();
                        assert_eq!(n, expected_dofs(dim, 5, p));
                        assert_eq!(cell_dofs, serial_reference(&mesh, p, numbering), "dim {dim} p {p} {numbering:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn bad_degree_and_invalid_mesh() {
        let mesh = BoxMesh::structured(2, 2).build().unwrap();
        assert!(Space::tensor(&mesh, 0).is_err());
        assert!(Space::tensor(&mesh, MAX_TENSOR_DEGREE + 1).is_err());
        let mut bad = mesh.clone();
        bad.cells[0].swap(0, 1);
        assert!(matches!(Space::tensor(&bad, 1), Err(Error::Mesh(_))));
        assert_eq!("blocked-aligned".parse::<Numbering>().unwrap(), Numbering::BlockedAligned);
        assert!("zigzag".parse::<Numbering>().is_err());
    }
}
