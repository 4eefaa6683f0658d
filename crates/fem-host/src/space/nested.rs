//! Nested nodal spaces: a mesh and its uniform refinements, the space of
//! one degree on each, and the transfers between consecutive levels that
//! multigrid by rediscretisation needs, for every cell kind a nodal space
//! takes.
//!
//! The prolongation is the coarse basis evaluated at the fine nodes,
//! `P_ij = φ_j(ξ_i)`, with `ξ_i` the fine node's position in the reference
//! cell of the coarse cell that contains it. Tensor refinement keeps the
//! parent's reference frame, so there `ξ_i` follows from the child's
//! index alone ([`tensor_interpolation`]), exactly, also where the
//! refinement moved new vertices onto a curved boundary and the children
//! no longer tile their parent; a simplex's node is located by Newton's
//! method on the cell's geometry map. It is computed once per pair of
//! levels on scalar nodes and then expanded to fields of `nc` components
//! under any Dirichlet rows.
//!
//! Boundary facets of a refined level keep the key of the coarse facet
//! they lie in, so boundary parts named on the coarse mesh (Gmsh physical
//! groups) select the same boundary on every level.

use super::facets::Facet;
use super::{Numbering, Space};
use crate::mesh::refine::{refine, Refinement};
use crate::mesh::simplex::SimplexMesh;
use crate::mesh::Mesh;
use crate::operator::csr::Csr;
use crate::{Error, Result};
use fem_core::element::{det_inv, pow};
use fem_core::lagrange::lagrange;
use fem_core::shape::Shape;
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::HashMap;

/// Prolongation entries below this are zeros up to round-off.
const DROP: f64 = 1e-10;

/// The cells a nodal space is built on.
#[derive(Clone, Debug)]
pub enum CellMesh {
    /// Triangles or tetrahedra.
    Simplex(SimplexMesh),
    /// Quadrilaterals or hexahedra.
    Tensor(Mesh),
}

impl CellMesh {
    /// The space of degree `degree` on these cells.
    pub fn space(&self, degree: usize) -> Result<Space> {
        match self {
            Self::Simplex(m) => Space::simplex(m, degree),
            Self::Tensor(m) => Space::tensor(m, degree),
        }
    }

    /// The mesh refined once uniformly (quadrilaterals and hexahedra by
    /// `tensor`), the coarse cell that contains each fine cell, and for
    /// tensor cells each child's position in its parent.
    fn refine(&self, tensor: &dyn Fn(&Mesh) -> Result<Refinement>) -> Result<(Self, Vec<u32>, Option<Vec<u8>>)> {
        match self {
            Self::Simplex(m) => {
                let children = if m.dim == 2 { 4 } else { 8 };
                let fine = m.refine_once()?;
                let parent = (0..fine.n_cells()).map(|f| (f / children) as u32).collect();
                Ok((Self::Simplex(fine), parent, None))
            }
            Self::Tensor(m) => {
                if m.n_cells() << m.dim > u32::MAX as usize {
                    return Err(Error::InvalidArgument(format!("refining {} cells would pass the u32 index range", m.n_cells())));
                }
                let r = tensor(m)?;
                if r.parent.len() != r.fine.n_cells() || r.child.len() != r.fine.n_cells() {
                    return Err(Error::InvalidArgument("the refinement names no parent or child for some cells".into()));
                }
                Ok((Self::Tensor(r.fine), r.parent, Some(r.child)))
            }
        }
    }

    /// Number of cells.
    pub fn n_cells(&self) -> usize {
        match self {
            Self::Simplex(m) => m.n_cells(),
            Self::Tensor(m) => m.n_cells(),
        }
    }
}

/// Cells and Q_`degree` nodes of the quadrilateral or hexahedral mesh
/// `coarse` refined uniformly `refinements` times, without refining it:
/// the refined mesh's Q_p nodes are the coarse mesh's Q_q nodes, q =
/// p·2^refinements, (q − 1)^d on each entity of dimension d, and the
/// coarse mesh's vertices, edges, faces and cells are read off its Q1, Q2
/// (and in 3D Q3) numberings. For refusing a hierarchy that cannot fit
/// before it is made; saturating where the counts pass `usize`.
pub fn refined_sizes(coarse: &Mesh, degree: usize, refinements: usize) -> Result<(usize, usize)> {
    if !(1..=super::MAX_TENSOR_DEGREE).contains(&degree) {
        return Err(Error::InvalidArgument(format!("degree must be in 1..={}, not {degree}", super::MAX_TENSOR_DEGREE)));
    }
    let (dim, c) = (coarse.dim, coarse.n_cells());
    let nodes = |p: usize| Space::tensor(coarse, p).map(|s| s.n_dofs);
    let (v, n2) = (nodes(1)?, nodes(2)?);
    // Q2: one node per vertex, edge, face and cell; Q3: 2 per edge, 4 per
    // face, 8 per cell
    let (e, f) = match dim {
        2 => (n2 - v - c, 0),
        _ => {
            let (s, t) = (n2 - v - c, nodes(3)? - v - 8 * c);
            let f = (t - 2 * s) / 2;
            (s - f, f)
        }
    };
    let scale = u32::try_from(refinements).ok().and_then(|r| 2usize.checked_pow(r));
    let (cells, q) = match scale {
        Some(s) => (s.checked_pow(dim as u32).map_or(usize::MAX, |k| c.saturating_mul(k)), degree.saturating_mul(s)),
        None => (usize::MAX, usize::MAX),
    };
    let m = q - 1;
    let per = |count: usize, d: u32| m.checked_pow(d).map_or(usize::MAX, |k| count.saturating_mul(k));
    let interior = if dim == 2 { per(c, 2) } else { per(f, 2).saturating_add(per(c, 3)) };
    Ok((cells, v.saturating_add(per(e, 1)).saturating_add(interior)))
}

/// Spaces of one degree on a mesh and its uniform refinements.
#[derive(Clone, Debug)]
pub struct NestedSpaces {
    /// Coarsest first; the last is the one a problem is solved on.
    pub spaces: Vec<Space>,
    /// `parents[l][f]`: the cell of level `l` containing cell `f` of level `l + 1`.
    pub parents: Vec<Vec<u32>>,
    /// `children[l][f]`: for tensor cells, the position of cell `f` of
    /// level `l + 1` in its parent (bit `a`: the half along axis `a`).
    pub children: Vec<Option<Vec<u8>>>,
}

impl NestedSpaces {
    /// `levels` spaces of degree `degree`: on `coarse` and on its
    /// `levels − 1` successive uniform refinements.
    pub fn new(coarse: CellMesh, degree: usize, levels: usize) -> Result<Self> {
        Self::with_refinement(coarse, degree, levels, &refine)
    }

    /// [`NestedSpaces::new`] with quadrilaterals and hexahedra refined by
    /// `tensor` instead of [`refine`]: a refinement that places new
    /// vertices on a curved boundary
    /// ([`refine_with`](crate::mesh::refine::refine_with)).
    pub fn with_refinement(coarse: CellMesh, degree: usize, levels: usize, tensor: &dyn Fn(&Mesh) -> Result<Refinement>) -> Result<Self> {
        if levels == 0 {
            return Err(Error::InvalidArgument("a hierarchy needs at least one level".into()));
        }
        let mut spaces = vec![coarse.space(degree)?];
        let (mut mesh, mut parents, mut children) = (Some(coarse), Vec::new(), Vec::new());
        for level in 1..levels {
            let (fine, parent, child) = mesh.take().expect("the level's mesh").refine(tensor)?;
            let coarse_space = spaces.last().expect("one level");
            // the finest mesh is not refined again: its space takes it
            let last = level + 1 == levels;
            let space = match (fine, child.as_deref()) {
                (CellMesh::Tensor(m), Some(child)) if last => Space::tensor_with_facets(Cow::Owned(m), degree, Numbering::Original, &|| refined_facets(coarse_space, &parent, child))?,
                (CellMesh::Tensor(m), Some(child)) => {
                    let space = Space::tensor_with_facets(Cow::Borrowed(&m), degree, Numbering::Original, &|| refined_facets(coarse_space, &parent, child))?;
                    mesh = Some(CellMesh::Tensor(m));
                    space
                }
                (fine, _) => {
                    let mut space = fine.space(degree)?;
                    space.facets = located_facets(coarse_space, &space, &parent)?;
                    mesh = Some(fine);
                    space
                }
            };
            spaces.push(space);
            parents.push(parent);
            children.push(child);
        }
        Ok(Self { spaces, parents, children })
    }

    /// The space solved on.
    pub fn finest(&self) -> &Space {
        self.spaces.last().expect("at least one level")
    }

    /// Lets go of the finest space's geometry (its vertices, cells'
    /// vertices, node positions and boundary facets) once the finest
    /// level's set-up is made, where the coarser levels' transfers do not
    /// read it: tensor cells refined into known children
    /// ([`tensor_interpolation`] reads the cells' nodes alone); kept
    /// otherwise. The finest space can then be neither set up nor
    /// written.
    pub(crate) fn release_finest_geometry(&mut self) {
        if self.children.last().is_some_and(|c| c.is_none()) {
            return;
        }
        let fine = self.spaces.last_mut().expect("at least one level");
        (fine.vertices, fine.cell_vertices, fine.dof_coords, fine.facets) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    }

    /// Number of levels.
    pub fn levels(&self) -> usize {
        self.spaces.len()
    }

    /// The scalar prolongation from level `l` to level `l + 1`: row `i`
    /// holds `φ_j(ξ_i)` for the coarse nodes `j` of the cell containing
    /// fine node `i` (values below 1e-10 dropped: the round-off of the
    /// zeros, never a true value at nested nodes).
    pub fn interpolation(&self, l: usize) -> Result<Csr<f64>> {
        let (coarse, fine, parent) = (&self.spaces[l], &self.spaces[l + 1], &self.parents[l]);
        match &self.children[l] {
            Some(child) => tensor_interpolation(&coarse.cell_dofs, fine, parent, child),
            None => located_interpolation(coarse, fine, parent),
        }
    }
}

/// The interpolation with every fine node located in its coarse cell by
/// [`reference_point`]: for refinements whose children tile their parent.
fn located_interpolation(coarse: &Space, fine: &Space, parent: &[u32]) -> Result<Csr<f64>> {
    let (nbc, d) = (coarse.nb(), fine.shape.dim());
    let nbf = fine.nb() as u32;
    let rows: Vec<Vec<(u32, f64)>> = fine
        .owner_slots()
        .par_iter()
        .enumerate()
        .map(|(i, &k)| {
            let c = parent[(k / nbf) as usize] as usize;
            let xi = reference_point(coarse, c, &fine.dof_coords[i])?;
            let (mut val, mut grad) = (vec![0.0; nbc], vec![0.0; nbc * d]);
            coarse.shape.basis(coarse.degree, &xi[..d], &mut val, &mut grad);
            let mut row: Vec<(u32, f64)> = (0..nbc).filter(|&j| val[j].abs() > DROP).map(|j| (coarse.cell_dofs[c * nbc + j], val[j])).collect();
            row.sort_unstable_by_key(|e| e.0);
            Ok(row)
        })
        .collect::<Result<_>>()?;
    from_rows(rows)
}

/// The interpolation of the P1/Q1 functions of `space`'s mesh into
/// `space` (`n_dofs × n_vertices`): row `i` holds the vertex basis of the
/// cell that contains node `i` at its reference point, so the low-order
/// level of p-multigrid is the mesh's own vertices, whatever the degree.
pub fn vertex_interpolation(space: &Space) -> Result<Csr<f64>> {
    let (nv, nb, d) = (space.shape.vertices(), space.nb(), space.shape.dim());
    // the vertex basis at each local node's reference point: one table
    // for every cell (a node's reference point in its cell is its node's)
    let table: Vec<Vec<(usize, f64)>> = (0..nb)
        .map(|b| {
            let xi = space.shape.node(space.degree, b);
            let (mut val, mut grad) = (vec![0.0; nv], vec![0.0; nv * d]);
            space.shape.geometry_basis(&xi[..d], &mut val, &mut grad);
            (0..nv).filter(|&v| val[v].abs() > DROP).map(|v| (v, val[v])).collect()
        })
        .collect();
    let slots = space.owner_slots();
    let len = |i: usize| if slots[i] == u32::MAX { 0 } else { table[slots[i] as usize % nb].len() };
    Csr::from_row_fn(space.n_dofs, len, |i, col, val| {
        let (c, b) = (slots[i] as usize / nb, slots[i] as usize % nb);
        let mut row = [(0u32, 0.0); 8];
        for (e, &(v, w)) in row.iter_mut().zip(&table[b]) {
            *e = (space.cell_vertices[c * nv + v], w);
        }
        let row = &mut row[..col.len()];
        row.sort_unstable_by_key(|e| e.0);
        for (k, &(j, w)) in row.iter().enumerate() {
            (col[k], val[k]) = (j, w);
        }
    })
}

/// The scalar interpolation between the Q_p numbering `coarse` (cell DOFs
/// in tensor order, `(p + 1)^dim` per cell) of a mesh and the space `fine`
/// of the same degree on its uniform tensor refinement: `parent[f]` and `child[f]`
/// place fine cell `f` in the coarse mesh. A fine node's reference point
/// in its parent is its point in the child's cell, halved and shifted by
/// the child's bits, so `P_ij = φ_j(ξ_i)` is exact whatever the children's
/// physical shape. Its `n_fine × n_coarse` rows hold the coarse cell's
/// nodes whose value there is not zero (beyond round-off).
pub fn tensor_interpolation(coarse: &[u32], fine: &Space, parent: &[u32], child: &[u8]) -> Result<Csr<f64>> {
    let (dim, n_fine) = (fine.shape.dim(), fine.n_dofs);
    let (np, nb) = (fine.degree + 1, fine.nb());
    if fine.cell_dofs.len() != parent.len() * nb || child.len() != parent.len() || parent.par_iter().any(|&c| (c as usize + 1) * nb > coarse.len()) {
        return Err(Error::InvalidArgument("the numberings are not one uniform tensor refinement apart".into()));
    }
    let (mut nodes, mut w) = (vec![0.0; np], vec![0.0; np]);
    fem_core::quadrature::gauss_lobatto(&mut nodes, &mut w);
    // a fine node's row depends only on its child index and local node:
    // the coarse basis there, nonzeros only, per (child, node)
    let weights: Vec<Vec<(usize, f64)>> = (0..(1usize << dim) * nb)
        .map(|t| {
            let (kid, local) = (t / nb, t % nb);
            let xi: Vec<f64> = (0..dim).map(|a| (nodes[(local / pow(np, a)) % np] - 1.0) / 2.0 + ((kid >> a) & 1) as f64).collect();
            (0..nb).map(|j| (j, (0..dim).map(|a| lagrange(&nodes, (j / pow(np, a)) % np, xi[a])).product::<f64>())).filter(|e| e.1.abs() > DROP).collect()
        })
        .collect();
    let slot = fine.owner_slots();
    let row = |i: usize| {
        let k = slot[i] as usize;
        // a node of no cell has an empty row
        (k != u32::MAX as usize).then(|| {
            let f = k / nb;
            (f, &weights[child[f] as usize * nb + k % nb])
        })
    };
    Csr::from_row_fn(n_fine, |i| row(i).map_or(0, |(_, w)| w.len()), |i, col, val| {
        let Some((f, w)) = row(i) else { return };
        let c = parent[f] as usize;
        for (k, &(j, phi)) in w.iter().enumerate() {
            (col[k], val[k]) = (coarse[c * nb + j], phi);
        }
        sort_row(col, val);
    })
}

/// Sorts a row's entries by column (insertion sort: rows are short, and
/// nothing is allocated).
fn sort_row<T: Copy>(col: &mut [u32], val: &mut [T]) {
    for k in 1..col.len() {
        let (c, v) = (col[k], val[k]);
        let mut m = k;
        while m > 0 && col[m - 1] > c {
            (col[m], val[m]) = (col[m - 1], val[m - 1]);
            m -= 1;
        }
        (col[m], val[m]) = (c, v);
    }
}

/// The CSR matrix of sorted rows (also the Q_p transfers').
pub(crate) fn from_rows<T: crate::Scalar>(rows: Vec<Vec<(u32, T)>>) -> Result<Csr<T>> {
    Csr::from_row_fn(rows.len(), |r| rows[r].len(), |r, col, val| {
        for (k, &(c, v)) in rows[r].iter().enumerate() {
            (col[k], val[k]) = (c, v);
        }
    })
}

/// The prolongation of `nc`-component fields (`dof·nc + c`) from the
/// scalar one `p`: fixed rows of the fine level and fixed columns of the
/// coarse one are left out, so a correction never moves a held value.
/// A scalar field's is `p` itself with those entries removed in place:
/// the finest level's would otherwise be held twice.
pub fn field_prolongation(mut p: Csr<f64>, nc: usize, fixed_coarse: &[bool], fixed_fine: &[bool]) -> Result<Csr<f64>> {
    crate::error::same_len("fixed fine rows", fixed_fine.len(), p.n_rows * nc)?;
    if let Some(j) = p.col.par_iter().max().filter(|&&j| (j as usize + 1) * nc > fixed_coarse.len()) {
        return Err(Error::InvalidArgument(format!("the prolongation names coarse node {j}, past the {} fixed flags of the coarse field", fixed_coarse.len())));
    }
    if nc == 1 {
        p.retain(|i, j| !fixed_fine[i] && !fixed_coarse[j as usize]);
        return Ok(p);
    }
    let p = &p;
    let entries = |r: usize| {
        let (i, c) = (r / nc, r % nc);
        let kept = (p.row_ptr[i] as usize..p.row_ptr[i + 1] as usize).map(move |k| (p.col[k] * nc as u32 + c as u32, p.val[k])).filter(|&(j, _)| !fixed_coarse[j as usize]);
        kept.take(if fixed_fine[r] { 0 } else { usize::MAX })
    };
    Csr::from_row_fn(p.n_rows * nc, |r| entries(r).count(), |r, col, val| {
        for (k, (j, w)) in entries(r).enumerate() {
            (col[k], val[k]) = (j, w);
        }
    })
}

/// For every coarse node, the fine node at the same point (the rows of
/// `p` that are a single 1): the injection of a field to the coarse
/// level. An error when some coarse node is not a fine one (nodes that do
/// not nest, as the Gauss–Lobatto nodes of Q3 and above).
pub fn injection(p: &Csr<f64>, n_coarse: usize) -> Result<Vec<u32>> {
    let inj = same_nodes(p, n_coarse);
    if let Some(j) = inj.par_iter().position_first(|&v| v == u32::MAX) {
        return Err(Error::InvalidArgument(format!("coarse node {j} is no node of the refined space: the nodes of this degree do not nest (multigrid by rediscretisation takes degrees 1 and 2)")));
    }
    Ok(inj)
}

/// For every coarse node, the fine node at the same point (the row of
/// `p` that is a single 1), `u32::MAX` where there is none.
pub fn same_nodes(p: &Csr<f64>, n_coarse: usize) -> Vec<u32> {
    // rows in parallel, the last such row of a node kept (as a serial
    // pass would keep it) as the largest `i + 1`, 0 for none
    let mut last = crate::counters::filled(n_coarse, 0u32);
    let at = crate::counters::atomic(&mut last);
    (0..p.n_rows).into_par_iter().for_each(|i| {
        let (a, b) = (p.row_ptr[i] as usize, p.row_ptr[i + 1] as usize);
        if b == a + 1 && (p.val[a] - 1.0).abs() < 1e-10 {
            at[p.col[a] as usize].fetch_max(i as u32 + 1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    last.into_par_iter().map(|v| v.wrapping_sub(1)).collect()
}

/// Reference coordinates in cell `c` of `space` of the physical point `x`
/// (Newton's method on the P1/Q1 geometry map, from the cell's centre).
pub fn reference_point(space: &Space, c: usize, x: &[f64; 3]) -> Result<[f64; 3]> {
    let (shape, d) = (space.shape, space.shape.dim());
    let nv = shape.vertices();
    let mut xi = [0.0; 3];
    if shape.is_simplex() {
        xi[..d].fill(1.0 / (d + 1) as f64);
    }
    let (mut val, mut grad) = (vec![0.0; nv], vec![0.0; nv * d]);
    for _ in 0..30 {
        shape.geometry_basis(&xi[..d], &mut val, &mut grad);
        let mut r = [0.0; 3];
        let mut jac = [[0.0; 3]; 3];
        for v in 0..nv {
            let xv = space.vertex(c, v);
            for a in 0..d {
                r[a] += xv[a] * val[v];
                for b in 0..d {
                    jac[a][b] += xv[a] * grad[v * d + b];
                }
            }
        }
        let step = solve(d, &jac, std::array::from_fn(|a| x[a] - r[a]));
        for a in 0..d {
            xi[a] += step[a];
        }
        // quadratic convergence: after a step of 1e-10 the error is at
        // round-off, which a tighter test would not see through (ξ carries
        // the round-off of x amplified by 1/h)
        if step[..d].iter().map(|s| s.abs()).fold(0.0, f64::max) < 1e-10 {
            return Ok(xi);
        }
    }
    Err(Error::InvalidArgument(format!("the point {x:?} could not be located in cell {c}: the cell is degenerate or the point outside it")))
}

/// `J⁻¹ r` for the leading d×d block.
fn solve(d: usize, jac: &[[f64; 3]; 3], r: [f64; 3]) -> [f64; 3] {
    let mut out = [0.0; 3];
    if d == 2 {
        let (_, inv) = det_inv(&[[jac[0][0], jac[0][1]], [jac[1][0], jac[1][1]]]);
        for a in 0..2 {
            out[a] = inv[a][0] * r[0] + inv[a][1] * r[1];
        }
    } else {
        let (_, inv) = det_inv(jac);
        for a in 0..3 {
            out[a] = (0..3).map(|b| inv[a][b] * r[b]).sum();
        }
    }
    out
}

/// Whether the reference point lies on local facet `local` (to round-off).
fn near_facet(shape: Shape, local: usize, xi: &[f64; 3]) -> bool {
    const TOL: f64 = 1e-9;
    if shape.is_simplex() {
        let lambda = if local == 0 { 1.0 - xi[..shape.dim()].iter().sum::<f64>() } else { xi[local - 1] };
        lambda.abs() < TOL
    } else {
        let (axis, side) = (local / 2, local % 2);
        (xi[axis] - if side == 1 { 1.0 } else { -1.0 }).abs() < TOL
    }
}

/// The boundary facets of a tensor refinement: the children of each of
/// `coarse`'s boundary facets (`parent[f]`, `child[f]`: fine cell `f`'s
/// place), those on the facet's side of their parent (a child shares its
/// parent's frame), with the coarse facet's key, in the (cell, local facet)
/// order [`tensor_facets`](super::facets::tensor_facets) lists. Built from
/// the coarse list, where matching every fine facet against its
/// neighbours again took a quarter of the hierarchy's time.
fn refined_facets(coarse: &Space, parent: &[u32], child: &[u8]) -> Vec<Facet> {
    let per = coarse.shape.local_facets();
    let mut at = vec![u32::MAX; coarse.n_cells() * per];
    for (i, f) in coarse.facets.iter().enumerate() {
        at[f.cell as usize * per + f.local as usize] = i as u32;
    }
    (0..parent.len())
        .into_par_iter()
        .flat_map_iter(|f| {
            let (c, k) = (parent[f] as usize, child[f] as usize);
            let at = &at[c * per..(c + 1) * per];
            (0..per).filter(move |&l| at[l] != u32::MAX && (k >> (l / 2)) & 1 == l % 2).map(move |l| Facet { cell: f as u32, local: l as u8, key: coarse.facets[at[l] as usize].key })
        })
        .collect()
}

/// The boundary facets of `fine` with the key of the `coarse` facet each
/// lies in, the one all the facet's vertices lie on: for refinements
/// whose children are not in their parent's frame (simplices).
fn located_facets(coarse: &Space, fine: &Space, parent: &[u32]) -> Result<Vec<Facet>> {
    let keys: HashMap<(u32, u8), [u32; 4]> = coarse.facets.iter().map(|f| ((f.cell, f.local), f.key)).collect();
    let (shape, d) = (fine.shape, fine.shape.dim());
    let nv = shape.vertices();
    fine.facets
        .par_iter()
        .map(|f| {
            let c = parent[f.cell as usize];
            // the facet's vertices in the parent's reference cell
            let corners: Vec<[f64; 3]> = (0..nv)
                .filter(|&v| on_local_facet(shape, f.local as usize, v))
                .map(|v| {
                    let p = fine.vertex(f.cell as usize, v);
                    let mut x = [0.0; 3];
                    x[..d].copy_from_slice(p);
                    reference_point(coarse, c as usize, &x)
                })
                .collect::<Result<_>>()?;
            let local = (0..shape.local_facets()).find(|&l| corners.iter().all(|xi| near_facet(shape, l, xi)));
            let key = local.and_then(|l| keys.get(&(c, l as u8)));
            let key = key.ok_or_else(|| Error::InvalidArgument(format!("boundary facet {} of refined cell {} lies on no boundary facet of its parent cell {c}", f.local, f.cell)))?;
            Ok(Facet { key: *key, ..*f })
        })
        .collect()
}

/// Whether vertex `v` of a cell of `shape` is on its local facet `local`.
fn on_local_facet(shape: Shape, local: usize, v: usize) -> bool {
    if shape.is_simplex() {
        v != local
    } else {
        (v >> (local / 2)) & 1 == local % 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::simplex::SimplexBox;
    use crate::mesh::BoxMesh;

    /// The sizes of a refinement counted without it are those of the
    /// refined spaces: shuffled boxes and the curved hole domain, 2D and
    /// 3D, degrees 1 to 3, up to three refinements; absurd ones saturate.
    #[test]
    fn refined_sizes_are_those_of_the_refined_spaces() {
        use crate::mesh::hole::HoleDomain;
        for dim in [2, 3] {
            let hole = HoleDomain::benchmark(dim);
            let curved = |m: &Mesh| hole.refine(m);
            let cases: [(Mesh, &dyn Fn(&Mesh) -> Result<Refinement>); 2] = [(BoxMesh::unstructured(dim, 2, 7).build().unwrap(), &refine), (hole.coarse().unwrap(), &curved)];
            for (coarse, refiner) in cases {
                for degree in 1..=3 {
                    let levels = if dim == 2 { 4 } else { 3 };
                    let nested = NestedSpaces::with_refinement(CellMesh::Tensor(coarse.clone()), degree, levels, refiner).unwrap();
                    for (r, s) in nested.spaces.iter().enumerate() {
                        assert_eq!(refined_sizes(&coarse, degree, r).unwrap(), (s.n_cells(), s.n_dofs), "dim {dim}, Q{degree}, {r} refinements");
                    }
                }
            }
            assert_eq!(refined_sizes(&hole.coarse().unwrap(), 2, 200).unwrap(), (usize::MAX, usize::MAX));
            assert!(refined_sizes(&hole.coarse().unwrap(), 0, 2).is_err());
        }
    }

    fn meshes() -> Vec<CellMesh> {
        let mut out = Vec::new();
        for dim in [2, 3] {
            out.push(CellMesh::Simplex(SimplexBox::unstructured(dim, 2, 7).build().unwrap()));
            out.push(CellMesh::Tensor(BoxMesh::unstructured(dim, 2, 7).build().unwrap()));
        }
        // small cells far from the origin: ξ carries x's round-off times 1/h
        let mut far = BoxMesh::unstructured(3, 2, 7).build().unwrap();
        far.coords.iter_mut().for_each(|x| x.iter_mut().for_each(|v| *v = 1.0 + 1e-3 * *v));
        out.push(CellMesh::Tensor(far));
        out
    }

    /// P reproduces every polynomial of the degree: prolonging the coarse
    /// interpolant gives the fine one; injection picks the node at the
    /// same point.
    #[test]
    fn prolongation_is_exact_on_the_coarse_space() {
        let cpu = crate::CpuBackend::new(Some(2)).unwrap();
        for mesh in meshes() {
            for degree in [1, 2] {
                let h = NestedSpaces::new(mesh.clone(), degree, 3).unwrap();
                for l in 0..2 {
                    let (c, f) = (&h.spaces[l], &h.spaces[l + 1]);
                    let poly = |x: &[f64; 3]| if degree == 1 { 1.0 + x[0] - 2.0 * x[1] + 0.5 * x[2] } else { x[0] * x[1] - x[2] * x[2] + 2.0 * x[0] };
                    let p = h.interpolation(l).unwrap();
                    let uc: Vec<f64> = c.dof_coords.iter().map(poly).collect();
                    let mut uf = vec![0.0; f.n_dofs];
                    p.spmv(&cpu, &uc, &mut uf);
                    let worst = uf.iter().zip(&f.dof_coords).map(|(v, x)| (v - poly(x)).abs()).fold(0.0, f64::max);
                    assert!(worst < 1e-10, "{:?} p{degree} level {l}: {worst:e}", c.shape);
                    let inj = injection(&p, c.n_dofs).unwrap();
                    for (j, &i) in inj.iter().enumerate() {
                        let (a, b) = (c.dof_coords[j], f.dof_coords[i as usize]);
                        assert!((0..3).all(|k| (a[k] - b[k]).abs() < 1e-12));
                    }
                }
            }
        }
    }

    /// A field's prolongation keeps exactly the entries of free fine rows
    /// and free coarse columns, for each component at its own rows and
    /// columns: a scalar field's, made in place, and a vector field's
    /// against the scalar one entry by entry; with empty rows, a fixed
    /// first and last row, and a column past the flags an error.
    #[test]
    fn field_prolongations_leave_out_the_fixed_rows_and_columns() {
        for mesh in meshes() {
            let h = NestedSpaces::new(mesh, 1, 2).unwrap();
            let p = h.interpolation(0).unwrap();
            let (nf, ncoarse) = (p.n_rows, h.spaces[0].n_dofs);
            for nc in [1, 3] {
                let mut fine: Vec<bool> = (0..nf * nc).map(|r| r % 7 == 3).collect();
                (fine[0], fine[nf * nc - 1]) = (true, true);
                let coarse: Vec<bool> = (0..ncoarse * nc).map(|j| j % 5 == 1).collect();
                let got = field_prolongation(p.clone(), nc, &coarse, &fine).unwrap();
                assert_eq!((got.n_rows, got.row_ptr.len()), (nf * nc, nf * nc + 1));
                for r in 0..nf * nc {
                    let (i, c) = (r / nc, r % nc);
                    let want: Vec<(u32, f64)> = (p.row_ptr[i] as usize..p.row_ptr[i + 1] as usize)
                        .map(|k| (p.col[k] * nc as u32 + c as u32, p.val[k]))
                        .filter(|&(j, _)| !fine[r] && !coarse[j as usize])
                        .collect();
                    let row: Vec<(u32, f64)> = (got.row_ptr[r] as usize..got.row_ptr[r + 1] as usize).map(|k| (got.col[k], got.val[k])).collect();
                    assert_eq!(row, want, "nc {nc}, row {r}");
                }
                assert!(field_prolongation(p.clone(), nc, &coarse[..coarse.len() - nc], &fine).is_err());
            }
        }
    }

    /// The vertex interpolation reproduces P1/Q1 functions (linear ones
    /// on every cell kind) at the nodes of P2 and of Q2 to Q4.
    #[test]
    fn vertex_interpolation_is_exact_on_linear_functions() {
        let cpu = crate::CpuBackend::new(Some(2)).unwrap();
        for mesh in meshes() {
            let top = if matches!(mesh, CellMesh::Simplex(_)) { 2 } else { 4 };
            for degree in 2..=top {
                let space = mesh.space(degree).unwrap();
                let lin = |x: &[f64; 3]| 1.0 + x[0] - 2.0 * x[1] + 0.5 * x[2];
                let p = vertex_interpolation(&space).unwrap();
                let uv: Vec<f64> = space.vertices.iter().map(lin).collect();
                let mut u = vec![0.0; space.n_dofs];
                p.spmv(&cpu, &uv, &mut u);
                let worst = u.iter().zip(&space.dof_coords).map(|(v, x)| (v - lin(x)).abs()).fold(0.0, f64::max);
                assert!(worst < 1e-10, "{:?} p{degree}: {worst:e}", space.shape);
            }
        }
    }

    /// Every refined boundary facet keeps a coarse key, and the facets of
    /// one key cover as much boundary on every level (their count grows by
    /// 2^(d−1) per level).
    #[test]
    fn refined_facets_keep_the_coarse_keys() {
        for mesh in meshes() {
            let h = NestedSpaces::new(mesh, 1, 3).unwrap();
            let d = h.spaces[0].shape.dim();
            let coarse_keys: std::collections::HashSet<[u32; 4]> = h.spaces[0].facets.iter().map(|f| f.key).collect();
            for (l, s) in h.spaces.iter().enumerate() {
                for key in &coarse_keys {
                    let n = s.facets.iter().filter(|f| f.key == *key).count();
                    assert_eq!(n, 1 << ((d - 1) * l), "level {l}");
                }
            }
            if h.children[0].is_some() {
                facets_are_the_fine_meshes(&h);
            }
        }
    }

    /// Where children tile their parent, the child's index and Newton's
    /// location of the fine nodes give the same transfer (Q1 to Q3).
    #[test]
    fn child_index_and_located_transfers_agree_on_straight_refinements() {
        for mesh in meshes().into_iter().filter(|m| matches!(m, CellMesh::Tensor(_))) {
            for degree in [1, 2, 3] {
                let h = NestedSpaces::new(mesh.clone(), degree, 2).unwrap();
                assert!(h.children[0].is_some());
                let by_child = h.interpolation(0).unwrap();
                let located = located_interpolation(&h.spaces[0], &h.spaces[1], &h.parents[0]).unwrap();
                assert_eq!((&by_child.row_ptr, &by_child.col), (&located.row_ptr, &located.col), "p{degree}");
                let worst = by_child.val.iter().zip(&located.val).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                assert!(worst < 1e-9, "p{degree}: {worst:e}");
            }
        }
    }

    /// A refinement that moves new vertices onto a curved boundary (the
    /// hole benchmark's): the children no longer tile their parent, the
    /// transfer still reproduces constants in every row and injects at
    /// the nested nodes, and refined boundary facets keep their parents'
    /// keys.
    #[test]
    fn curved_refinements_keep_the_transfer_and_the_facet_keys() {
        for dim in [2, 3] {
            let domain = crate::mesh::hole::HoleDomain::benchmark(dim);
            let coarse = CellMesh::Tensor(domain.coarse().unwrap());
            let h = NestedSpaces::with_refinement(coarse, 2, 3, &|m| domain.refine(m)).unwrap();
            for l in 0..2 {
                let p = h.interpolation(l).unwrap();
                for r in 0..p.n_rows {
                    let sum: f64 = p.val[p.row_ptr[r] as usize..p.row_ptr[r + 1] as usize].iter().sum();
                    assert!((sum - 1.0).abs() < 1e-12, "{dim}D level {l} row {r}: {sum}");
                }
                // Q2's nodes nest in the reference cell: each coarse node is a fine one
                assert_eq!(injection(&p, h.spaces[l].n_dofs).unwrap().len(), h.spaces[l].n_dofs);
            }
            let moved = h.spaces[2].dof_coords.iter().filter(|x| domain.on_hole(**x)).count();
            assert!(moved > 0);
            let keys: std::collections::HashSet<[u32; 4]> = h.spaces[0].facets.iter().map(|f| f.key).collect();
            for (l, s) in h.spaces.iter().enumerate() {
                assert_eq!(s.facets.len(), h.spaces[0].facets.len() << ((dim - 1) * l));
                assert!(s.facets.iter().all(|f| keys.contains(&f.key)));
            }
            facets_are_the_fine_meshes(&h);
        }
    }

    /// The refined levels' facets of tensor hierarchies are the boundary
    /// facets a search of the fine mesh finds, in its order, each with its
    /// parent's facet's key.
    fn facets_are_the_fine_meshes(h: &NestedSpaces) {
        for l in 1..h.levels() {
            let (coarse, fine) = (&h.spaces[l - 1], &h.spaces[l]);
            let nv = fine.shape.vertices();
            let cells = fine.cell_vertices.chunks(nv).map(|c| std::array::from_fn(|k| if k < nv { c[k] } else { 0 })).collect();
            let mesh = Mesh { dim: fine.dim(), coords: fine.vertices.clone(), cells };
            let found: Vec<(u32, u8)> = crate::space::facets::tensor_facets(&mesh).iter().map(|f| (f.cell, f.local)).collect();
            let got: Vec<(u32, u8)> = fine.facets.iter().map(|f| (f.cell, f.local)).collect();
            assert_eq!(got, found, "level {l}");
            for f in &fine.facets {
                let parent = coarse.facets.iter().find(|p| p.cell == h.parents[l - 1][f.cell as usize] && p.local == f.local);
                assert_eq!(parent.map(|p| p.key), Some(f.key), "level {l}, facet {f:?}");
            }
        }
    }

    #[test]
    fn q3_nodes_do_not_nest() {
        let mesh = CellMesh::Tensor(BoxMesh::unstructured(2, 2, 1).build().unwrap());
        let h = NestedSpaces::new(mesh, 3, 2).unwrap();
        let p = h.interpolation(0).unwrap();
        assert!(injection(&p, h.spaces[0].n_dofs).is_err());
    }
}
