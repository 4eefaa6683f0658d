//! The finite-element space on a mesh ([`Space`], in [`lagrange`]): its
//! DOF numberings ([`dofs`]), boundary facets ([`facets`]), element
//! restriction ([`restriction`]), boundary conditions ([`constraints`]),
//! nested hierarchies ([`nested`]), and how its DOFs map to rows of a
//! linear system with Dirichlet DOFs eliminated or kept ([`dirichlet`]).

pub mod dirichlet;
pub mod constraints;
pub mod degree_transfer;
pub mod dofs;
pub mod facets;
pub mod integrate;
pub mod nested;
pub mod renumber;
pub mod lagrange;
pub mod restriction;
pub mod subspace;
pub(crate) mod hash;

pub use hash::IntMap;

pub use dirichlet::{DirichletMode, Layout};
pub use dofs::{Numbering, MAX_TENSOR_DEGREE};
pub use constraints::{BoundaryPart, Constraints, Load};
pub use nested::{CellMesh, NestedSpaces};
pub use lagrange::Space;
pub use restriction::Restriction;
