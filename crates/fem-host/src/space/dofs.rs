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

use crate::mesh::adjacency::VertexCells;
use crate::mesh::Mesh;
use crate::{Error, Result};
use fem_core::element::pow;
use rayon::prelude::*;
use crate::counters::{atomic, filled};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

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

/// What a local node of every cell is: a corner (its vertex bits), the
/// `j`-th node on an edge or face (entities several cells share, matched
/// by key), or an interior node (`first`: the cell's first interior one).
#[derive(Clone, Copy)]
enum LocalNode {
    Corner(usize),
    Shared(usize),
    Interior { first: bool },
}

/// The local nodes of Q_`p` in `dim` dimensions: their kind, the
/// dimension of the entity they lie on, and their tensor indices.
struct LocalNodes {
    kind: Vec<LocalNode>,
    entity_dim: Vec<usize>,
    tensor: Vec<[usize; 3]>,
    /// Edge and face nodes per cell.
    shared: usize,
}

impl LocalNodes {
    fn new(p: usize, dim: usize) -> Self {
        let np = p + 1;
        let nb = pow(np, dim);
        let (mut kind, mut entity_dim, mut tensor) = (Vec::with_capacity(nb), Vec::with_capacity(nb), Vec::with_capacity(nb));
        let (mut shared, mut interior) = (0, false);
        for i in 0..nb {
            let t: [usize; 3] = std::array::from_fn(|a| if a < dim { (i / pow(np, a)) % np } else { 0 });
            let inner = (0..dim).filter(|&a| t[a] > 0 && t[a] < p).count();
            kind.push(match inner {
                0 => LocalNode::Corner((0..dim).filter(|&a| t[a] == p).map(|a| 1 << a).sum()),
                n if n == dim => LocalNode::Interior { first: !std::mem::replace(&mut interior, true) },
                _ => {
                    shared += 1;
                    LocalNode::Shared(shared - 1)
                }
            });
            entity_dim.push(inner);
            tensor.push(t);
        }
        Self { kind, entity_dim, tensor, shared }
    }
}

/// Cells per chunk of the parallel passes over the node slots.
const CHUNK_CELLS: usize = 4096;

/// Numbers the DOFs of Q_`degree` on a validated `mesh`: their count and
/// every cell's DOFs (`[c·nb + i]`, tensor node order).
///
/// Entities are numbered by first encounter: node slot `k·nb + i` (node
/// `i` of the `k`-th cell visited) starts an entity when it is the
/// entity's smallest slot. The smallest slot of a vertex is an atomic
/// minimum, of an edge or face found in the first visited cell around
/// its corners ([`shared_heads`]), of a cell interior its first interior
/// node. Counting the
/// entities that start in each chunk of cells, by dimension, and a scan
/// of the counts give every entity its block of numbers, in parallel and
/// independent of the thread count; nothing is kept per slot but the
/// result.
pub(crate) fn tensor_dofs(mesh: &Mesh, degree: usize, numbering: Numbering) -> Result<(usize, Vec<u32>)> {
    if !(1..=MAX_TENSOR_DEGREE).contains(&degree) {
        return Err(Error::InvalidArgument(format!("degree must be in 1..={MAX_TENSOR_DEGREE}, not {degree}")));
    }
    mesh.validate()?;
    let (p, dim) = (degree, mesh.dim);
    let nodes = LocalNodes::new(p, dim);
    let nb = nodes.kind.len();
    let n_cells = mesh.n_cells();
    if n_cells * nb > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!("{} cell nodes exceed the u32 index range", n_cells * nb)));
    }
    // the blocked numberings visit the cells in another order; the others
    // visit cell k k-th, with no order to look up
    let order = matches!(numbering, Numbering::Blocked | Numbering::BlockedAligned).then(|| cell_order(mesh, numbering));
    let id = |k: usize| order.as_ref().map_or(k, |o| o[k] as usize);
    let cell = |k: usize| &mesh.cells[id(k)][..1 << dim];
    let locate_slot = |k: usize, i: usize| locate(p, dim, id(k), cell(k), &nodes.tensor[i][..dim]);
    // The smallest slot of every vertex, edge and face.
    let mut vertex_first = filled(mesh.coords.len(), u32::MAX);
    let vertex_first = atomic(&mut vertex_first);
    (0..n_cells).into_par_iter().for_each(|k| {
        for (i, n) in nodes.kind.iter().enumerate() {
            if let LocalNode::Corner(bits) = *n {
                vertex_first[cell(k)[bits] as usize].fetch_min((k * nb + i) as u32, Relaxed);
            }
        }
    });
    let shared_first = shared_heads(&nodes, p, dim, n_cells, mesh.coords.len(), &cell);
    let starts = |k: usize, i: usize| -> bool {
        let slot = (k * nb + i) as u32;
        match nodes.kind[i] {
            LocalNode::Corner(bits) => vertex_first[cell(k)[bits] as usize].load(Relaxed) == slot,
            LocalNode::Shared(j) => shared_first[k * nodes.shared + j] == slot,
            LocalNode::Interior { first } => first,
        }
    };
    // Entities starting in each chunk, by dimension, and before it.
    let chunks = n_cells.div_ceil(CHUNK_CELLS);
    let counts: Vec<[usize; 4]> = (0..chunks)
        .into_par_iter()
        .map(|ch| {
            let mut c = [0usize; 4];
            for k in ch * CHUNK_CELLS..((ch + 1) * CHUNK_CELLS).min(n_cells) {
                (0..nb).filter(|&i| starts(k, i)).for_each(|i| c[nodes.entity_dim[i]] += 1);
            }
            c
        })
        .collect();
    let mut before = Vec::with_capacity(chunks);
    let mut total = [0usize; 4];
    for c in &counts {
        before.push(total);
        (0..4).for_each(|d| total[d] += c[d]);
    }
    let dofs_of = |d: usize| pow(p - 1, d);
    let aligned = matches!(numbering, Numbering::Aligned | Numbering::BlockedAligned);
    let base: [usize; 4] = std::array::from_fn(|d| (0..d).map(|e| total[e] * dofs_of(e)).sum());
    let n: usize = (0..4).map(|d| total[d] * dofs_of(d)).sum();
    if n > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!("{n} DOFs exceed the u32 index range")));
    }
    // Every entity's first DOF, kept at its vertex, at its head slot's
    // edge or face node, or at its cell.
    let mut offsets = [mesh.coords.len(), n_cells * nodes.shared, n_cells].map(|n| filled(n, u32::MAX));
    let [vertex_offset, shared_offset, interior_offset] = offsets.each_mut().map(|o| atomic(o));
    let offset_of = |k: usize, i: usize| -> &AtomicU32 {
        match nodes.kind[i] {
            LocalNode::Corner(bits) => &vertex_offset[cell(k)[bits] as usize],
            LocalNode::Shared(j) => {
                let head = shared_first[k * nodes.shared + j] as usize;
                let LocalNode::Shared(j) = nodes.kind[head % nb] else { unreachable!("an edge or face starts at an edge or face node") };
                &shared_offset[head / nb * nodes.shared + j]
            }
            LocalNode::Interior { .. } => &interior_offset[k],
        }
    };
    (0..chunks).into_par_iter().for_each(|ch| {
        let mut seen = before[ch];
        for k in ch * CHUNK_CELLS..((ch + 1) * CHUNK_CELLS).min(n_cells) {
            for i in (0..nb).filter(|&i| starts(k, i)) {
                let d = nodes.entity_dim[i];
                let offset = if aligned { base[d] + seen[d] * dofs_of(d) } else { (0..4).map(|e| seen[e] * dofs_of(e)).sum() };
                seen[d] += 1;
                offset_of(k, i).store(offset as u32, Relaxed);
            }
        }
    });
    let position = order.as_ref().map(|o| crate::solver::ordering::invert(o));
    let mut cell_dofs = vec![0u32; n_cells * nb];
    cell_dofs.par_chunks_mut(nb).enumerate().for_each(|(c, dofs)| {
        let k = position.as_ref().map_or(c, |p| p[c] as usize);
        for (i, d) in dofs.iter_mut().enumerate() {
            // a vertex holds one DOF: no need to locate it within its entity
            let within = if let LocalNode::Corner(_) = nodes.kind[i] { 0 } else { locate_slot(k, i).1 as u32 };
            *d = offset_of(k, i).load(Relaxed) + within;
        }
    });
    Ok((n, cell_dofs))
}

/// For the `j`-th edge or face node of the `k`-th cell visited, at
/// `[k·shared + j]`: the smallest slot of its entity's nodes, in the
/// first visited cell that has the entity (the head a sort of (key, slot)
/// pairs would find), through the cells around every vertex: that cell is
/// the first of those around both ends of the entity's diagonal (an
/// edge's ends, a face's opposite corners, which only the face's cells
/// share), and its first node of the entity the one nearest its origin
/// on the entity's axes. `cell(k)` are the corners of the `k`-th cell
/// visited, ids below `n_vertices`. Sorting the keys took 0.3 s of a
/// 1.6M-cell refinement on 16 cores.
fn shared_heads<'a>(nodes: &LocalNodes, p: usize, dim: usize, n_cells: usize, n_vertices: usize, cell: &(impl Fn(usize) -> &'a [u32] + Sync)) -> Vec<u32> {
    let nb = nodes.kind.len();
    if nodes.shared == 0 {
        return Vec::new();
    }
    let around = VertexCells::of_ids(n_cells, n_vertices, |k| cell(k));
    let mut heads = filled(n_cells * nodes.shared, 0);
    heads.par_chunks_mut(nodes.shared).enumerate().for_each(|(k, heads)| {
        for (i, n) in nodes.kind.iter().enumerate() {
            let LocalNode::Shared(j) = *n else { continue };
            let t = &nodes.tensor[i];
            // the diagonal's corners: the node's end bits, and the inner
            // axes' bits clear or set
            let low: usize = (0..dim).filter(|&a| t[a] == p).map(|a| 1 << a).sum();
            let high = low | (0..dim).filter(|&a| t[a] > 0 && t[a] < p).map(|a| 1 << a).sum::<usize>();
            let (a, b) = (cell(k)[low], cell(k)[high]);
            let m = first_common(around.of(a as usize), around.of(b as usize)).unwrap_or(k as u32) as usize;
            let corners = cell(m);
            let bits = |g: u32| corners.iter().position(|&v| v == g).unwrap_or(0);
            let (va, vb) = (bits(a), bits(b));
            // the first node of the entity in cell m: 1 on its inner axes
            let first: usize = (0..dim).map(|x| if (va ^ vb) >> x & 1 == 1 { 1 } else { p * (va >> x & 1) } * pow(p + 1, x)).sum();
            heads[j] = (m * nb + first) as u32;
        }
    });
    heads
}

/// The first value in both ascending lists.
fn first_common(x: &[u32], y: &[u32]) -> Option<u32> {
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return Some(x[i]),
        }
    }
    None
}

/// The vertices of `mesh` refined once uniformly, at `[c·3^dim + l]` the
/// vertex at point `l` of cell `c`'s lattice (the nodes of Q2, point
/// `l = Σ t_a 3^a`): corners keep their vertex ids; edge midpoints, face
/// and cell centres are numbered after the mesh's vertices in the order
/// a serial pass over cells and points first meets them. Beside it, the
/// first slot (`c·3^dim + l`) of every new vertex, in order.
///
/// Edges and faces are matched as the Q_p numbering matches them
/// ([`shared_heads`], through the cells around every vertex),
/// and numbered from a scan of per-chunk counts: all passes parallel, the
/// numbers independent of the thread count.
pub(crate) fn refinement_lattice(mesh: &Mesh) -> Result<(Vec<u32>, Vec<u32>)> {
    let dim = mesh.dim;
    let nodes = LocalNodes::new(2, dim);
    let (nb, n_cells, nv) = (nodes.kind.len(), mesh.n_cells(), mesh.coords.len());
    if n_cells * nb > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!("refining {n_cells} cells: {} lattice points exceed the u32 index range", n_cells * nb)));
    }
    let cell = |k: usize| &mesh.cells[k][..1 << dim];
    let shared_first = shared_heads(&nodes, 2, dim, n_cells, nv, &cell);
    let starts = |k: usize, i: usize| match nodes.kind[i] {
        LocalNode::Corner(_) => false,
        LocalNode::Shared(j) => shared_first[k * nodes.shared + j] as usize == k * nb + i,
        LocalNode::Interior { .. } => true,
    };
    let chunk = |ch: usize| ch * CHUNK_CELLS..((ch + 1) * CHUNK_CELLS).min(n_cells);
    let chunks = n_cells.div_ceil(CHUNK_CELLS);
    let first_slot: Vec<u32> = (0..chunks).into_par_iter().flat_map_iter(|ch| chunk(ch).flat_map(move |k| (0..nb).filter(move |&i| starts(k, i)).map(move |i| (k * nb + i) as u32))).collect();
    if nv + first_slot.len() > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!("refining {n_cells} cells: {} vertices exceed the u32 index range", nv + first_slot.len())));
    }
    // where each chunk's new vertices start
    let before = |ch: usize| nv + first_slot.partition_point(|&s| (s as usize) < ch * CHUNK_CELLS * nb);
    let mut lattice = filled(n_cells * nb, u32::MAX);
    let at = atomic(&mut lattice);
    (0..chunks).into_par_iter().for_each(|ch| {
        let mut next = before(ch) as u32;
        for k in chunk(ch) {
            for (i, n) in nodes.kind.iter().enumerate() {
                match *n {
                    LocalNode::Corner(bits) => at[k * nb + i].store(cell(k)[bits], Relaxed),
                    _ if starts(k, i) => {
                        at[k * nb + i].store(next, Relaxed);
                        next += 1;
                    }
                    _ => {}
                }
            }
        }
    });
    // the others take their entity's number from its head
    (0..n_cells).into_par_iter().for_each(|k| {
        for (i, n) in nodes.kind.iter().enumerate() {
            if let LocalNode::Shared(j) = *n {
                let head = shared_first[k * nodes.shared + j] as usize;
                if head != k * nb + i {
                    at[k * nb + i].store(at[head].load(Relaxed), Relaxed);
                }
            }
        }
    });
    Ok((lattice, first_slot))
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

    /// The parallel numbering (first slots through the cells around the
    /// vertices and by atomic minimum,
    /// entities counted by chunk) is the serial first-encounter one, on
    /// shuffled meshes, a thread count that splits the cells unevenly and
    /// meshes of one chunk and of several, the last one partial.
    #[test]
    fn numbering_equals_the_serial_first_encounter_one() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for (dim, n, degrees) in [(2, 5usize, vec![1, 2, 4]), (3, 5, vec![1, 2, 4]), (2, 97, vec![1, 3]), (3, 21, vec![2])] {
            assert!(n < 10 || n.pow(dim as u32) > 2 * CHUNK_CELLS);
            for p in degrees {
                for mesh in [BoxMesh::structured(dim, n), BoxMesh::unstructured(dim, n, 7)] {
                    let mesh = mesh.build().unwrap();
                    for numbering in [Numbering::Original, Numbering::Aligned, Numbering::Blocked, Numbering::BlockedAligned] {
                        let (count, cell_dofs) = pool.install(|| tensor_dofs(&mesh, p, numbering)).unwrap();
                        assert_eq!(count, expected_dofs(dim, n, p));
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
