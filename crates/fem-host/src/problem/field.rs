//! A computed Q_p function with its mesh and space, and its `.vtu` output
//! through the space's writer.

use crate::io::vtk::{self, Encoding, Field};
use crate::mesh::Mesh;
use crate::space::{Layout, Space};
use crate::{Result, Scalar};
use std::path::Path;

/// u_h on a Q_p space.
#[derive(Clone, Debug)]
pub struct QpField {
    /// The cells.
    pub mesh: Mesh,
    /// Its DOFs (numbering as solved).
    pub space: Space,
    /// u_h at every DOF, Dirichlet values included.
    pub dofs: Vec<f64>,
}

impl QpField {
    /// The field of a solution `x` on the rows of `layout`; DOFs without a
    /// row (eliminated Dirichlet DOFs) take `fixed(dof)`. Takes the mesh
    /// and space over from the solve, which is done with them.
    pub fn from_rows<T: Scalar>(mesh: Mesh, space: Space, layout: &Layout, x: &[T], fixed: impl Fn(usize) -> f64) -> Self {
        let mut dofs: Vec<f64> = (0..space.n_dofs).map(&fixed).collect();
        for (r, &d) in layout.row_dof.iter().enumerate() {
            if !layout.fixed[r] {
                dofs[d as usize] = x[r].to_f64();
            }
        }
        Self { mesh, space, dofs }
    }

    /// u_h at the mesh's vertices.
    pub fn vertex_values(&self) -> Vec<f64> {
        let (p, np, nb) = (self.space.degree, self.space.degree + 1, self.space.nb());
        let mut out = vec![0.0; self.mesh.n_vertices()];
        for (c, cell) in self.mesh.cells.iter().enumerate() {
            for (v, &vertex) in cell.iter().enumerate().take(self.mesh.vertices_per_cell()) {
                let local: usize = (0..self.mesh.dim).map(|a| ((v >> a) & 1) * p * np.pow(a as u32)).sum();
                out[vertex as usize] = self.dofs[self.space.cell_dofs[c * nb + local] as usize];
            }
        }
        out
    }

    /// Writes `name` = u_h and, given the exact solution, `u_exact` and
    /// `error` = u_h − u at the nodes, with per-cell fields `cells`, whole
    /// or not at all: the space's own cells ([`vtk::vtu_nodal`]), so
    /// ParaView draws every field through the nodes as the solution's
    /// polynomials.
    pub fn write_vtk(&self, path: &Path, name: &str, exact: Option<&dyn Fn([f64; 3]) -> f64>, cells: &[Field], enc: Encoding) -> Result<()> {
        let ue: Vec<f64> = exact.map(|f| self.space.dof_coords.iter().map(|&x| f(x)).collect()).unwrap_or_default();
        let err: Vec<f64> = self.dofs.iter().zip(&ue).map(|(a, b)| a - b).collect();
        let mut fields = vec![Field { name, values: &self.dofs }];
        if exact.is_some() {
            fields.extend([Field { name: "u_exact", values: &ue }, Field { name: "error", values: &err }]);
        }
        vtk::write_nodal(path, &self.space, &fields, cells, enc)?;
        Ok(())
    }
}
