//! Finite-element spaces on a mesh: Q_p degrees of freedom ([`dofs`]) and
//! how they map to rows of the linear system under Dirichlet conditions
//! ([`dirichlet`]).

pub mod dirichlet;
pub mod dofs;
pub mod nodal;
pub(crate) mod hash;

pub use hash::IntMap;

pub use dirichlet::{DirichletMode, Layout};
pub use dofs::{Numbering, Space};
pub use nodal::NodalSpace;
