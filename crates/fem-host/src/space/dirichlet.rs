//! Dirichlet conditions u = 0 on the boundary, in the two ways of Reguly &
//! Giles §3.2: eliminate the constrained DOFs (free-node renumbering), or
//! keep them and zero their rows and columns with a unit diagonal.

use rayon::prelude::*;
use super::Space;

/// Marks a local entry that has no row in the system (an eliminated DOF).
pub const NONE: u32 = u32::MAX;

/// How the Dirichlet condition u = 0 enters the linear system (parsed from
/// `eliminate` or `zero`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirichletMode {
    /// Constrained DOFs are removed; the free ones keep their order.
    Eliminate,
    /// All DOFs are rows; constrained rows and columns are zero except a
    /// unit diagonal, with a zero right-hand side.
    Zero,
}

impl std::str::FromStr for DirichletMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "eliminate" => Ok(Self::Eliminate),
            "zero" => Ok(Self::Zero),
            _ => Err(format!("unknown Dirichlet mode `{s}` (eliminate, zero)")),
        }
    }
}

/// How the local nodes of every cell map to rows of the linear system.
#[derive(Clone, Debug)]
pub struct Layout {
    /// How the boundary DOFs were treated when the rows were laid out.
    pub mode: DirichletMode,
    /// Rows of the system: the free DOFs (`Eliminate`) or all DOFs (`Zero`).
    pub n_rows: usize,
    /// Local nodes per cell, `nb` = (p + 1)^dim.
    pub dofs_per_cell: usize,
    /// `cell_rows[c * nb + i]`: row of local node `i` of cell `c`, or
    /// [`NONE`] for an eliminated DOF.
    pub cell_rows: Vec<u32>,
    /// Rows whose equation is `u = 0` (the constrained rows in `Zero` mode).
    pub fixed: Vec<bool>,
    /// DOF of each row.
    pub row_dof: Vec<u32>,
}

impl Layout {
    /// Rows of `space` under `mode`: free DOFs renumbered in order, or every
    /// DOF with the boundary ones marked fixed.
    pub fn new(space: &Space, mode: DirichletMode) -> Self {
        let nb = space.nb();
        match mode {
            DirichletMode::Eliminate => {
                let mut row_of = vec![NONE; space.n_dofs];
                let mut row_dof = Vec::new();
                for d in 0..space.n_dofs {
                    if !space.boundary[d] {
                        row_of[d] = row_dof.len() as u32;
                        row_dof.push(d as u32);
                    }
                }
                let cell_rows = space.cell_dofs.par_iter().map(|&d| row_of[d as usize]).collect();
                Self { mode, n_rows: row_dof.len(), dofs_per_cell: nb, cell_rows, fixed: vec![false; row_dof.len()], row_dof }
            }
            DirichletMode::Zero => Self {
                mode,
                n_rows: space.n_dofs,
                dofs_per_cell: nb,
                cell_rows: space.cell_dofs.clone(),
                fixed: space.boundary.clone(),
                row_dof: (0..space.n_dofs as u32).collect(),
            },
        }
    }

    /// The fixed rows, ascending.
    pub fn fixed_rows(&self) -> Vec<u32> {
        (0..self.n_rows as u32).into_par_iter().filter(|&r| self.fixed[r as usize]).collect()
    }

    /// Number of mesh cells.
    pub fn n_cells(&self) -> usize {
        self.cell_rows.len() / self.dofs_per_cell
    }

    /// Whether local entry (i, j) of cell `c` enters the matrix: both rows
    /// exist and neither is fixed.
    #[inline]
    pub fn couples(&self, c: usize, i: usize, j: usize) -> bool {
        let (ri, rj) = (self.cell_rows[c * self.dofs_per_cell + i], self.cell_rows[c * self.dofs_per_cell + j]);
        ri != NONE && rj != NONE && !self.fixed[ri as usize] && !self.fixed[rj as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::BoxMesh;

    #[test]
    fn elimination_keeps_free_dofs_in_order() {
        let mesh = BoxMesh::unstructured(2, 4, 2).build().unwrap();
        let s = Space::tensor(&mesh, 2).unwrap();
        let e = Layout::new(&s, DirichletMode::Eliminate);
        assert_eq!(e.n_rows, 7 * 7);
        assert!(e.row_dof.windows(2).all(|w| w[0] < w[1]));
        for (k, &r) in e.cell_rows.iter().enumerate() {
            let d = s.cell_dofs[k] as usize;
            assert_eq!(r == NONE, s.boundary[d]);
            if r != NONE {
                assert_eq!(e.row_dof[r as usize] as usize, d);
            }
        }
        let z = Layout::new(&s, DirichletMode::Zero);
        assert_eq!(z.n_rows, s.n_dofs);
        assert_eq!(z.fixed.iter().filter(|&&f| f).count(), s.n_dofs - 49);
        assert_eq!("zero".parse::<DirichletMode>().unwrap(), DirichletMode::Zero);
    }
}
