//! A space restricted to some of its cells: what one rank of a distributed
//! solve assembles on. The nodes keep their identity (position, boundary
//! flag) and take the numbering the caller gives, so that a rank can put
//! the nodes it owns first and its ghosts after them; the mesh's vertices
//! only those its cells use, numbered in the same order (so a facet's
//! sorted key stays sorted), and [`Space::subspace`] gives the mesh's
//! vertex of each, to translate the keys Gmsh groups name facets by.

use super::Space;
use crate::{Error, Result};

/// Marks a node that is not in the subspace.
const ABSENT: u32 = u32::MAX;

impl Space {
    /// The space on `cells` (in that order) whose node `nodes[i]` is
    /// renumbered `i`. Boundary facets stay those of the whole mesh that
    /// belong to the kept cells, so a facet where the kept cells meet the
    /// others is not mistaken for the boundary. An error when a cell is
    /// out of range or has a node that `nodes` does not list. Also gives
    /// the whole mesh's vertex of every vertex of the subspace.
    pub fn subspace(&self, cells: &[u32], nodes: &[u32]) -> Result<(Space, Vec<u32>)> {
        let (nb, nv) = (self.nb(), self.shape.vertices());
        let mut local = vec![ABSENT; self.n_dofs];
        for (i, &g) in nodes.iter().enumerate() {
            let slot = local.get_mut(g as usize).ok_or_else(|| Error::InvalidArgument(format!("node {g} of a subspace is not one of the space's {}", self.n_dofs)))?;
            if *slot != ABSENT {
                return Err(Error::InvalidArgument(format!("node {g} is listed twice in a subspace")));
            }
            *slot = i as u32;
        }
        let mut cell_dofs = Vec::with_capacity(cells.len() * nb);
        let mut cell_vertices = Vec::with_capacity(cells.len() * nv);
        let mut new_cell = vec![ABSENT; self.n_cells()];
        for (k, &c) in cells.iter().enumerate() {
            let c = c as usize;
            if c >= self.n_cells() {
                return Err(Error::InvalidArgument(format!("cell {c} of a subspace is not one of the space's {}", self.n_cells())));
            }
            new_cell[c] = k as u32;
            for &g in &self.cell_dofs[c * nb..(c + 1) * nb] {
                match local[g as usize] {
                    ABSENT => return Err(Error::InvalidArgument(format!("cell {c} of a subspace has node {g}, which its nodes leave out"))),
                    l => cell_dofs.push(l),
                }
            }
            cell_vertices.extend_from_slice(&self.cell_vertices[c * nv..(c + 1) * nv]);
        }
        // the cells' vertices, renumbered in increasing order
        let mut used: Vec<u32> = cell_vertices.clone();
        used.sort_unstable();
        used.dedup();
        let vertex = |v: u32| used.binary_search(&v).map_or(ABSENT, |i| i as u32);
        cell_vertices.iter_mut().for_each(|v| *v = vertex(*v));
        let facets = self
            .facets
            .iter()
            .filter(|f| new_cell[f.cell as usize] != ABSENT)
            .map(|f| super::facets::Facet { cell: new_cell[f.cell as usize], key: f.key.map(|v| if v == ABSENT { v } else { vertex(v) }), ..*f })
            .collect();
        let space = Space {
            shape: self.shape,
            degree: self.degree,
            n_dofs: nodes.len(),
            cell_dofs,
            vertices: used.iter().map(|&v| self.vertices[v as usize]).collect(),
            cell_vertices,
            dof_coords: nodes.iter().map(|&g| self.dof_coords[g as usize]).collect(),
            boundary: nodes.iter().map(|&g| self.boundary[g as usize]).collect(),
            facets,
            owner_slots: std::sync::OnceLock::new(),
        };
        Ok((space, used))
    }
}

#[cfg(test)]
mod tests {
    use crate::mesh::BoxMesh;
    use crate::space::Space;

    #[test]
    fn a_subspace_keeps_its_cells_nodes_and_true_boundary() {
        let mesh = BoxMesh::structured(2, 4).build().unwrap();
        let space = Space::tensor(&mesh, 2).unwrap();
        // the left half of the cells, nodes in reverse order of first use
        let cells: Vec<u32> = (0..space.n_cells() as u32).filter(|&c| mesh.centroid(c as usize)[0] < 0.5).collect();
        let mut nodes: Vec<u32> = Vec::new();
        for &c in &cells {
            for &d in &space.cell_dofs[c as usize * 9..(c as usize + 1) * 9] {
                if !nodes.contains(&d) {
                    nodes.push(d);
                }
            }
        }
        nodes.reverse();
        let (sub, vertices) = space.subspace(&cells, &nodes).unwrap();
        assert_eq!((sub.n_cells(), sub.n_dofs, sub.vertices.len()), (8, 5 * 9, 5 * 3));
        // the same corners, numbered apart from the mesh's, and keys translated
        for (k, &c) in cells.iter().enumerate() {
            for v in 0..4 {
                assert_eq!(vertices[sub.cell_vertices[k * 4 + v] as usize], space.cell_vertices[c as usize * 4 + v]);
            }
        }
        for f in &sub.facets {
            let whole = space.facets.iter().find(|g| g.cell == cells[f.cell as usize] && g.local == f.local).unwrap();
            assert_eq!(f.key.map(|v| if v == u32::MAX { v } else { vertices[v as usize] }), whole.key);
        }
        for (k, &c) in cells.iter().enumerate() {
            for b in 0..9 {
                let (l, g) = (sub.cell_dofs[k * 9 + b], space.cell_dofs[c as usize * 9 + b]);
                assert_eq!(nodes[l as usize], g);
                assert_eq!(sub.dof_coords[l as usize], space.dof_coords[g as usize]);
            }
        }
        // the cut at x = 1/2 is no boundary: 4 facets on x = 0, 2 + 2 on y = 0 and y = 1
        assert_eq!(sub.facets.len(), 8);
        assert!(sub.dof_coords.iter().zip(&sub.boundary).all(|(x, &b)| b == (x[0] < 1e-12 || x[1] < 1e-12 || x[1] > 1.0 - 1e-12 || x[0] > 1.0 - 1e-12)));
        assert!(space.subspace(&cells, &nodes[1..]).is_err());
        assert!(space.subspace(&[99], &nodes).is_err());
    }
}
