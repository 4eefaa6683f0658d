//! A computed Q_p function with its space, its L2 error and its `.vtu`
//! output through the space's writer.

use crate::io::vtk::{self, Encoding, Field};
use crate::space::{integrate, Layout, Space};
use crate::{Result, Scalar};
use std::path::Path;

/// u_h on a Q_p space.
#[derive(Clone, Debug)]
pub struct QpField {
    /// Its cells and DOFs (numbering as solved).
    pub space: Space,
    /// u_h at every DOF, Dirichlet values included.
    pub dofs: Vec<f64>,
}

impl QpField {
    /// The field of a solution `x` on the rows of `layout`; DOFs without a
    /// row (eliminated Dirichlet DOFs) take `fixed(dof)`. Takes the space
    /// over from the solve, which is done with it.
    pub fn from_rows<T: Scalar>(space: Space, layout: &Layout, x: &[T], fixed: impl Fn(usize) -> f64) -> Self {
        let mut dofs: Vec<f64> = (0..space.n_dofs).map(&fixed).collect();
        for (r, &d) in layout.row_dof.iter().enumerate() {
            if !layout.fixed[r] {
                dofs[d as usize] = x[r].to_f64();
            }
        }
        Self { space, dofs }
    }

    /// u_h at the mesh's vertices.
    pub fn vertex_values(&self) -> Vec<f64> {
        let s = &self.space;
        let (p, np, nb, nv) = (s.degree, s.degree + 1, s.nb(), s.shape.vertices());
        let mut out = vec![0.0; s.vertices.len()];
        for (k, &vertex) in s.cell_vertices.iter().enumerate() {
            let (c, v) = (k / nv, k % nv);
            let local: usize = (0..s.dim()).map(|a| ((v >> a) & 1) * p * np.pow(a as u32)).sum();
            out[vertex as usize] = self.dofs[s.cell_dofs[c * nb + local] as usize];
        }
        out
    }

    /// ‖u_h − u‖_{L2} against `exact` (x padded to three coordinates).
    pub fn l2_error(&self, exact: &(dyn Fn([f64; 3]) -> f64 + Sync)) -> f64 {
        integrate::l2_error(&self.space, 1, &self.dofs, |x, e| e[0] = exact(*x))
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
