//! The coarse level of p-multigrid: Q1 on a Q_p space's cells, the
//! interpolation of its fields into Q_p (exact: Q1 ⊂ Q_p cell by cell)
//! and the fine node at each of its nodes.

use super::nested::{same_nodes, vertex_interpolation};
use super::Space;
use crate::mesh::{Cell, Mesh};
use crate::operator::csr::Csr;
use crate::{Error, Result};
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
        let (dim, nv) = (fine.shape.dim(), fine.shape.vertices());
        let cells = fine
            .cell_vertices
            .chunks(nv)
            .map(|c| {
                let mut cell: Cell = [0; 8];
                cell[..nv].copy_from_slice(c);
                cell
            })
            .collect();
        let mut space = Space::tensor(&Mesh { dim, coords: fine.vertices.clone(), cells }, 1)?;
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
}
