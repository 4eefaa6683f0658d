//! Finite-element spaces on a mesh: Q_p degrees of freedom ([`dofs`]) and
//! how they map to rows of the linear system under Dirichlet conditions
//! ([`dirichlet`]).

pub mod dirichlet;
pub mod constraints;
pub mod dofs;
pub mod facets;
pub mod integrate;
pub mod nested;
pub mod nodal;
pub mod restriction;
pub(crate) mod hash;

pub use hash::IntMap;

pub use dirichlet::{DirichletMode, Layout};
pub use dofs::{Numbering, Space};
pub use constraints::{BoundaryPart, Constraints, Load};
pub use nested::{CellMesh, NestedSpaces};
pub use nodal::NodalSpace;
pub use restriction::Restriction;
