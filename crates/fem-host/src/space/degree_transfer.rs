//! The coarse level of p-multigrid: Q1 on a Q_p space's cells, the
//! interpolation of its fields into Q_p (exact: Q1 ⊂ Q_p cell by cell)
//! and the fine node at each of its nodes.

use super::nested::{same_nodes, vertex_interpolation};
use super::Space;
use crate::mesh::{Cell, Mesh};
use crate::operator::csr::Csr;
use crate::{Error, Result};
use fem_core::element::pow;
use fem_core::lagrange::lagrange;
use rayon::prelude::*;

/// Q1 on the cells of the tensor space `fine` (its mesh's vertices and
/// cells), the coarse level of p-multigrid, with the transfer into
/// `fine` and the fine node at each coarse node.
pub struct VertexLevel {
    /// The Q1 space, its held nodes the fine space's at the same vertex.
    pub space: Space,
    /// `fine.n_dofs × space.n_dofs`: the Q1 functions at the fine nodes
    /// ([`vertex_interpolation`], its columns renumbered to the space's).
    pub interpolation: Csr<f64>,
    /// The fine node at each coarse node.
    pub injection: Vec<u32>,
}

impl VertexLevel {
    /// The Q1 level of `fine`; an error on simplices.
    pub fn of(fine: &Space) -> Result<Self> {
        if fine.shape.is_simplex() {
            return Err(Error::InvalidArgument(format!("p-multigrid coarsens Q_p to Q1 on quadrilaterals and hexahedra, not {} cells", fine.shape.name())));
        }
        let mut space = Space::tensor(&vertex_mesh(fine), 1)?;
        // the Q1 node of every vertex (u32::MAX: of no cell)
        let mut node = vec![u32::MAX; fine.vertices.len()];
        for (&v, &n) in fine.cell_vertices.iter().zip(&space.cell_dofs) {
            node[v as usize] = n;
        }
        let mut interpolation = vertex_interpolation(fine)?;
        let at_vertex = same_nodes(&interpolation, fine.vertices.len());
        interpolation.col.par_iter_mut().for_each(|c| *c = node[*c as usize]);
        let mut injection = vec![u32::MAX; space.n_dofs];
        for (v, &n) in node.iter().enumerate().filter(|(_, &n)| n != u32::MAX) {
            injection[n as usize] = at_vertex[v];
        }
        if injection.contains(&u32::MAX) {
            return Err(Error::InvalidArgument("a vertex of a cell is no node of the fine space".into()));
        }
        // a restricted boundary stays restricted
        space.boundary = injection.par_iter().map(|&f| fine.boundary[f as usize]).collect();
        Ok(Self { space, interpolation, injection })
    }
}

/// Q_q on the cells of the tensor space `fine` (Q_p, q < p), a level of
/// p-multigrid between Q_p and Q1 (the halved degrees nekRS and MFEM
/// take): the interpolation of its fields into Q_p, exact as Q_q ⊂ Q_p
/// cell by cell, and Q_p's fields interpolated at its nodes (the state
/// its tangent is taken at). The Gauss–Lobatto nodes of two degrees do
/// not nest, so that is no injection.
pub struct DegreeLevel {
    /// The Q_q space.
    pub space: Space,
    /// `fine.n_dofs × space.n_dofs`: the Q_q functions at the fine nodes.
    pub interpolation: Csr<f64>,
    /// `space.n_dofs × fine.n_dofs`: the Q_p functions at the Q_q nodes.
    pub restriction: Csr<f64>,
}

impl DegreeLevel {
    /// The Q`q` level of `fine`; an error on simplices and for a degree
    /// not between 1 and the fine one.
    pub fn of(fine: &Space, q: usize) -> Result<Self> {
        if fine.shape.is_simplex() || !(1..fine.degree).contains(&q) {
            return Err(Error::InvalidArgument(format!("p-multigrid's level Q{q} lies below Q{} on quadrilaterals and hexahedra, not on {} cells of degree {}", fine.degree, fine.shape.name(), fine.degree)));
        }
        let mut space = Space::tensor(&vertex_mesh(fine), q)?;
        let interpolation = between(fine, &space)?;
        let restriction = between(&space, fine)?;
        // a node stays on a restricted boundary where every fine node it
        // reads does
        space.boundary = (0..space.n_dofs).into_par_iter().map(|i| restriction.col[restriction.row_ptr[i] as usize..restriction.row_ptr[i + 1] as usize].iter().all(|&f| fine.boundary[f as usize])).collect();
        Ok(Self { space, interpolation, restriction })
    }
}

/// The mesh of a tensor space's vertices and cells.
fn vertex_mesh(space: &Space) -> Mesh {
    let nv = space.shape.vertices();
    let cells = space
        .cell_vertices
        .chunks(nv)
        .map(|c| {
            let mut cell: Cell = [0; 8];
            cell[..nv].copy_from_slice(c);
            cell
        })
        .collect();
    Mesh { dim: space.shape.dim(), coords: space.vertices.clone(), cells }
}

/// `to.n_dofs × from.n_dofs`: the functions of `from` at the nodes of
/// `to`, two tensor spaces of the same cells (Gauss–Lobatto nodes in
/// tensor order): a node's row is the product of 1D Lagrange polynomials
/// at its point in the cell that owns it.
pub fn between(to: &Space, from: &Space) -> Result<Csr<f64>> {
    if to.n_cells() != from.n_cells() || to.shape != from.shape || to.shape.is_simplex() {
        return Err(Error::InvalidArgument("interpolation between degrees needs two tensor spaces of the same cells".into()));
    }
    let dim = to.shape.dim();
    let (nt, nf) = (to.degree + 1, from.degree + 1);
    let (nbt, nbf) = (to.nb(), from.nb());
    let gll = |n: usize| {
        let (mut x, mut w) = (vec![0.0; n], vec![0.0; n]);
        fem_core::quadrature::gauss_lobatto(&mut x, &mut w);
        x
    };
    let (xt, xf) = (gll(nt), gll(nf));
    // the row of each local node of `to`: nonzeros of `from`'s basis there
    let table: Vec<Vec<(usize, f64)>> = (0..nbt)
        .map(|b| {
            let at = |j: usize| (0..dim).map(|a| lagrange(&xf, (j / pow(nf, a)) % nf, xt[(b / pow(nt, a)) % nt])).product::<f64>();
            (0..nbf).map(|j| (j, at(j))).filter(|e| e.1.abs() > 1e-12).collect()
        })
        .collect();
    let slots = to.owner_slots();
    let len = |i: usize| if slots[i] == u32::MAX { 0 } else { table[slots[i] as usize % nbt].len() };
    Csr::from_row_fn(to.n_dofs, len, |i, col, val| {
        let (c, b) = (slots[i] as usize / nbt, slots[i] as usize % nbt);
        let mut row: Vec<(u32, f64)> = table[b].iter().map(|&(j, w)| (from.cell_dofs[c * nbf + j], w)).collect();
        row.sort_unstable_by_key(|e| e.0);
        for (k, (j, w)) in row.into_iter().enumerate() {
            (col[k], val[k]) = (j, w);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::BoxMesh;

    /// On perturbed quadrilaterals and hexahedra (trilinear cells) the
    /// vertex coordinates interpolated into Q_p are the fine nodes'
    /// coordinates, every row sums to one, and the vertices' fine nodes
    /// sit at the coarse nodes.
    #[test]
    fn q1_fields_interpolate_exactly_into_q_p() {
        let cpu = crate::CpuBackend::new(Some(1)).unwrap();
        for dim in [2, 3] {
            let mesh = BoxMesh::unstructured(dim, 3, 7).build().unwrap();
            for p in [1, 2, 3, 5] {
                let fine = Space::tensor(&mesh, p).unwrap();
                let VertexLevel { space: coarse, interpolation: m, injection: inj } = VertexLevel::of(&fine).unwrap();
                assert_eq!(coarse.n_dofs, mesh.coords.len());
                for a in 0..dim {
                    let x: Vec<f64> = coarse.dof_coords.iter().map(|c| c[a]).collect();
                    let mut y = vec![0.0; fine.n_dofs];
                    m.spmv(&cpu, &x, &mut y);
                    let err = y.iter().zip(&fine.dof_coords).fold(0.0f64, |e, (v, c)| e.max((v - c[a]).abs()));
                    assert!(err < 1e-13, "{dim}D Q{p}, coordinate {a}: {err:e}");
                }
                assert!((0..m.n_rows).all(|r| (m.val[m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize].iter().sum::<f64>() - 1.0).abs() < 1e-13));
                assert!(inj.iter().enumerate().all(|(n, &f)| fine.dof_coords[f as usize] == coarse.dof_coords[n]));
                assert!(inj.iter().enumerate().all(|(n, &f)| fine.boundary[f as usize] == coarse.boundary[n]));
                assert!(coarse.boundary.iter().any(|&b| b) && !coarse.boundary.iter().all(|&b| b));
            }
        }
        let tri = Space::simplex(&crate::mesh::simplex::SimplexBox::unstructured(2, 2, 1).build().unwrap(), 2).unwrap();
        assert!(VertexLevel::of(&tri).err().unwrap().to_string().contains("quadrilaterals and hexahedra"));
    }

    /// Between degrees on perturbed cells: a linear function of the
    /// coordinates (in Q1, so in both) interpolated into Q_p is itself at
    /// the fine nodes, and back at the Q_q nodes; any Q_q field comes back
    /// from Q_p unchanged; boundaries agree, and degrees outside 1..p are
    /// refused.
    #[test]
    fn degrees_interpolate_exactly_both_ways() {
        let cpu = crate::CpuBackend::new(Some(1)).unwrap();
        for dim in [2, 3] {
            let mesh = BoxMesh::unstructured(dim, 3, 7).build().unwrap();
            for (p, q) in [(2, 1), (4, 2), (5, 3), (8, 4)] {
                let fine = Space::tensor(&mesh, p).unwrap();
                let DegreeLevel { space: coarse, interpolation: m, restriction: r } = DegreeLevel::of(&fine, q).unwrap();
                assert_eq!((m.n_rows, r.n_rows), (fine.n_dofs, coarse.n_dofs));
                // the coordinates are Q1 functions of trilinear cells
                let f = |x: &[f64; 3]| x[0] + 2.0 * x[1] - 3.0 * x[2];
                let (fc, ff): (Vec<f64>, Vec<f64>) = (coarse.dof_coords.iter().map(f).collect(), fine.dof_coords.iter().map(f).collect());
                let (mut up, mut down) = (vec![0.0; fine.n_dofs], vec![0.0; coarse.n_dofs]);
                m.spmv(&cpu, &fc, &mut up);
                r.spmv(&cpu, &ff, &mut down);
                let err = |a: &[f64], b: &[f64]| a.iter().zip(b).fold(0.0f64, |e, (x, y)| e.max((x - y).abs()));
                assert!(err(&up, &ff) < 1e-12 && err(&down, &fc) < 1e-12, "{dim}D Q{p}/Q{q}: {:e} {:e}", err(&up, &ff), err(&down, &fc));
                // a Q_q field's round trip through Q_p is itself
                let g: Vec<f64> = (0..coarse.n_dofs).map(|i| ((i * 37) % 11) as f64).collect();
                m.spmv(&cpu, &g, &mut up);
                r.spmv(&cpu, &up, &mut down);
                assert!(err(&down, &g) < 1e-11, "{dim}D Q{p}/Q{q} round trip: {:e}", err(&down, &g));
                assert_eq!(coarse.boundary.iter().filter(|&&b| b).count(), coarse.dof_coords.iter().filter(|x| x[..dim].iter().any(|&v| v < 1e-12 || v > 1.0 - 1e-12)).count());
            }
        }
        let q2 = Space::tensor(&BoxMesh::structured(2, 2).build().unwrap(), 2).unwrap();
        assert!(DegreeLevel::of(&q2, 2).is_err() && DegreeLevel::of(&q2, 0).is_err());
    }
}
