//! A physics' cell data kept once per node, for a backend that gathers
//! the element kernels' E-vectors itself. The vertices' coordinates and a
//! nodal field's E-vector hold each value once per cell around a node:
//! for Q1 in 2D, 128 bytes a cell against 32 a node here, the largest
//! arrays of a set-up on the host, which the GPU makes from these in
//! a pass ([`picked_node_entry`], one source with the host's expansion).

use super::{tables_of, Aux, Pointwise};
use crate::space::Space;
use crate::{Error, Result};
use fem_kernels::cells::picked_node_entry;
use fem_kernels::pointwise::{Kernels, Variant};
use rayon::prelude::*;
use std::marker::PhantomData;

/// What the cell data of a physics on a space is made from.
#[derive(Clone, Debug, PartialEq)]
pub struct NodalCells {
    /// The space's dimension.
    pub dim: usize,
    /// The space's nodes.
    pub nodes: usize,
    /// Every node's coordinates, `dim` a node.
    pub coords: Vec<f64>,
    /// The local nodes at a cell's vertices, in the order of the cell's
    /// vertices.
    pub corners: Vec<u32>,
    /// A nodal auxiliary field, `na` a node; empty where the physics
    /// takes none or takes it per cell (then it is the physics' `a`).
    pub aux: Vec<f64>,
}

impl<K: Kernels<f64>> Pointwise<f64, K> {
    /// [`Pointwise::new`] with the cell data left per node: the physics'
    /// `x` (and `a` for a nodal field) empty, and what they are made from.
    /// Where the space's corner nodes are not its vertices, the physics
    /// as [`Pointwise::new`] makes it and no nodal data.
    pub fn on_nodes(space: &Space, nq: Option<usize>, aux: Aux<'_>) -> Result<(Self, Option<NodalCells>)> {
        let Some(corners) = corner_nodes(space) else {
            return Ok((Self::new(space, nq, aux)?, None));
        };
        let variant = Self::variant_of(space, nq)?;
        let nodal = variant.aux_nodal && variant.na > 0;
        let field = Self::aux_field(&variant, space, aux, false)?;
        let (a, aux) = if nodal { (Vec::new(), field) } else { (field, Vec::new()) };
        let dim = space.dim();
        let mut coords = vec![0.0; space.n_dofs * dim];
        coords.par_chunks_mut(dim).zip(space.dof_coords.par_iter()).for_each(|(c, x)| c.copy_from_slice(&x[..dim]));
        let (tab, sf_tab) = tables_of(&variant)?;
        let physics = Self { variant, n_cells: space.n_cells(), tab, sf_tab, x: Vec::new(), a, time: 0.0, _physics: PhantomData };
        Ok((physics, Some(NodalCells { dim, nodes: space.n_dofs, coords, corners, aux })))
    }
}

/// One array of cell data made from the nodes: `per` values of each of
/// a cell's picked local nodes, read from `nodal` ([`picked_node_entry`]).
pub struct Picked<'a> {
    /// Values a picked node.
    pub per: usize,
    /// The picked local nodes of a cell.
    pub picks: Vec<u32>,
    /// The node values, `per` a node.
    pub nodal: &'a [f64],
}

impl Picked<'_> {
    /// Entries for `n_cells` cells.
    pub fn len(&self, n_cells: usize) -> usize {
        n_cells * self.picks.len() * self.per
    }
}

impl NodalCells {
    /// What the physics' `x` is made from, and its `a` for a nodal field,
    /// on cells of variant `v`: the corners' coordinates and every node's
    /// field. An error where they no longer cover the nodes: a set-up
    /// lets go of its node coordinates once the backend holds its own
    /// ([`crate::problem::nonlinear::Workspace::of_setup_then`]).
    pub fn picked(&self, v: &Variant) -> Result<(Picked<'_>, Option<Picked<'_>>)> {
        if self.coords.len() != self.nodes * self.dim || !(self.aux.is_empty() || self.aux.len() == self.nodes * v.na) {
            return Err(Error::InvalidArgument(format!("the cell data of {} nodes holds {} coordinates and {} field values: let go of once uploaded, or of another space", self.nodes, self.coords.len(), self.aux.len())));
        }
        let x = Picked { per: self.dim, picks: self.corners.clone(), nodal: &self.coords };
        let all = (0..v.shape.n_basis(v.degree) as u32).collect();
        Ok((x, (!self.aux.is_empty()).then(|| Picked { per: v.na, picks: all, nodal: &self.aux })))
    }

    /// The nodes a cell and the field's components of variant `v`
    /// (`nb`, `nc`), once the gather map's `map_len` entries are checked
    /// to cover `n_cells` cells.
    pub fn map_shape(v: &Variant, n_cells: usize, map_len: usize) -> Result<[usize; 2]> {
        let (nb, nc) = (v.shape.n_basis(v.degree), v.nc);
        if map_len < n_cells * nb * nc {
            return Err(Error::InvalidArgument(format!("{map_len} gather entries for {n_cells} cells of {nb} nodes and {nc} components")));
        }
        Ok([nb, nc])
    }

    /// The physics' `x` and, for a nodal field, `a` of `n_cells` cells of
    /// variant `v`, through the gather map `map` of its field: what
    /// [`Pointwise::new`] holds.
    pub fn expand(&self, v: &Variant, n_cells: usize, map: &[u32]) -> Result<(Vec<f64>, Option<Vec<f64>>)> {
        let [nb, nc] = Self::map_shape(v, n_cells, map.len())?;
        let gathered = |p: &Picked| -> Vec<f64> {
            (0..p.len(n_cells))
                .into_par_iter()
                // SAFETY: the picks are local nodes below nb, the map
                // covers the cells (checked above) and names nodes of the
                // space
                .map(|t| unsafe { picked_node_entry(t, p.per, p.picks.len(), p.picks.as_ptr(), nb, nc, map.as_ptr(), p.nodal.as_ptr()) })
                .collect()
        };
        let (x, a) = self.picked(v)?;
        Ok((gathered(&x), a.as_ref().map(gathered)))
    }
}

/// The local node at each vertex of a cell of `space` (simplices: the
/// first nodes; tensor cells: the corner of the vertex's bits in the
/// lexicographic numbering), where every cell's corner nodes sit at its
/// vertices; else `None`.
pub fn corner_nodes(space: &Space) -> Option<Vec<u32>> {
    let (p, dim, nb) = (space.degree, space.dim(), space.nb());
    let nv = space.shape.vertices();
    let corners: Vec<u32> = match space.shape.is_simplex() {
        true => (0..nv as u32).collect(),
        false => (0..nv).map(|v| (0..dim).map(|a| ((v >> a) & 1) * p * (p + 1).pow(a as u32)).sum::<usize>() as u32).collect(),
    };
    let at_vertices = (0..space.n_cells()).into_par_iter().all(|e| {
        corners.iter().enumerate().all(|(v, &b)| {
            let node = space.cell_dofs[e * nb + b as usize] as usize;
            let vertex = space.cell_vertices[e * nv + v] as usize;
            space.dof_coords[node][..dim] == space.vertices[vertex][..dim]
        })
    });
    at_vertices.then_some(corners)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::hole::HoleDomain;
    use crate::mesh::simplex::SimplexBox;
    use crate::mesh::BoxMesh;
    use crate::space::{CellMesh, NestedSpaces};
    use crate::CpuBackend;
    use fem_kernels::physics::{Elasticity, Poisson};

    fn spaces() -> Vec<(String, Space)> {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let mut out = Vec::new();
        for dim in [2, 3] {
            for p in [1, 2] {
                let mesh = CellMesh::Simplex(SimplexBox::unstructured(dim, 2, 3).build().unwrap());
                let s = NestedSpaces::new(mesh, p, 1).unwrap().renumbered(&cpu, crate::solver::ordering::Ordering::Random, 3).unwrap();
                out.push((format!("{dim}D P{p} shuffled"), s.spaces.into_iter().last().unwrap()));
            }
            for p in 1..=3 {
                let mesh = CellMesh::Tensor(BoxMesh::unstructured(dim, 2, 5).build().unwrap());
                let s = NestedSpaces::new(mesh, p, 1).unwrap().renumbered(&cpu, crate::solver::ordering::Ordering::Random, 3).unwrap();
                out.push((format!("{dim}D Q{p} shuffled"), s.spaces.into_iter().last().unwrap()));
            }
        }
        let domain = HoleDomain::benchmark(2);
        let coarse = CellMesh::Tensor(domain.coarse().unwrap());
        let hole = NestedSpaces::with_refinement(coarse, 2, 2, &|m| domain.refine(m)).unwrap();
        out.push(("the curved hole, Q2, refined".into(), hole.spaces.into_iter().last().unwrap()));
        out
    }

    /// The cell data made from the nodes is the one made per cell, bit for
    /// bit: vertex coordinates and a nodal field's E-vector, for a scalar
    /// and a vector field (whose gather map has a row a component), and a
    /// field per cell stays the physics' own.
    #[test]
    fn cell_data_from_the_nodes_is_the_cells_own() {
        for (label, s) in spaces() {
            let kappa: Vec<f64> = (0..s.n_dofs).flat_map(|i| [1.0 + i as f64, -(i as f64)]).collect();
            let want = Pointwise::<f64, Poisson>::new(&s, None, Aux::Nodal(&kappa)).unwrap();
            let (got, cells) = Pointwise::<f64, Poisson>::on_nodes(&s, None, Aux::Nodal(&kappa)).unwrap();
            let cells = cells.unwrap_or_else(|| panic!("{label}: the corner nodes are the vertices"));
            assert!(got.x.is_empty() && got.a.is_empty() && cells.aux == kappa, "{label}");
            let (px, pa) = cells.picked(&got.variant).unwrap();
            assert_eq!([px.len(got.n_cells), pa.unwrap().len(got.n_cells)], [want.x.len(), want.a.len()], "{label}");
            let (x, a) = cells.expand(&got.variant, got.n_cells, &s.restriction(1).map).unwrap();
            assert_eq!((x, a.unwrap()), (want.x.clone(), want.a.clone()), "{label}");
            if s.shape.is_simplex() || s.degree > 2 {
                continue;
            }
            let lame: Vec<f64> = (0..s.n_cells()).flat_map(|e| [1.0, 0.5 + e as f64]).collect();
            let want = Pointwise::<f64, Elasticity>::new(&s, None, Aux::Cell(&lame)).unwrap();
            let (got, cells) = Pointwise::<f64, Elasticity>::on_nodes(&s, None, Aux::Cell(&lame)).unwrap();
            let cells = cells.unwrap();
            assert!(cells.aux.is_empty() && got.a == lame, "{label}: a field per cell stays");
            let (x, a) = cells.expand(&got.variant, got.n_cells, &s.restriction(s.dim()).map).unwrap();
            assert!(x == want.x && a.is_none(), "{label}: elasticity");
        }
    }

    /// A space whose corner node is not at its vertex keeps its cell data
    /// per cell; a map too short for the cells, and node data let go of
    /// or too short for the nodes, are errors.
    #[test]
    fn moved_corners_and_short_maps_are_refused() {
        let (_, mut s) = spaces().swap_remove(3);
        let kappa = vec![1.0; 2 * s.n_dofs];
        let node = s.cell_dofs[0] as usize;
        s.dof_coords[node][0] += 1e-3;
        let (physics, cells) = Pointwise::<f64, Poisson>::on_nodes(&s, None, Aux::Nodal(&kappa)).unwrap();
        let want = Pointwise::<f64, Poisson>::new(&s, None, Aux::Nodal(&kappa)).unwrap();
        assert!(cells.is_none() && physics.x == want.x && physics.a == want.a);
        s.dof_coords[node][0] -= 1e-3;
        let (physics, cells) = Pointwise::<f64, Poisson>::on_nodes(&s, None, Aux::Nodal(&kappa)).unwrap();
        let map = s.restriction(1).map;
        let mut cells = cells.unwrap();
        let e = cells.expand(&physics.variant, physics.n_cells, &map[..map.len() - 1]).unwrap_err().to_string();
        assert!(e.contains("gather entries"), "{e}");
        assert!(cells.expand(&physics.variant, physics.n_cells, &map).is_ok());
        for cut in [|c: &mut NodalCells| c.coords = Vec::new(), |c: &mut NodalCells| c.aux.truncate(3)] {
            let mut short = cells.clone();
            cut(&mut short);
            let e = short.expand(&physics.variant, physics.n_cells, &map).unwrap_err().to_string();
            assert!(e.contains("let go of"), "{e}");
        }
        cells.nodes += 1;
        assert!(cells.expand(&physics.variant, physics.n_cells, &map).is_err());
        assert!(Pointwise::<f64, Poisson>::on_nodes(&s, None, Aux::Nodal(&kappa[1..])).is_err());
    }
}
