//! Operators: the stiffness matrix in the storage formats of Reguly &
//! Giles (global CSR and ELLPACK, element matrices (LMA), matrix-free) and
//! the machinery they share: reference tables, element assembly, colouring.

pub mod cell_data;
pub mod colouring;
pub mod csr;
pub mod device_pattern;
pub mod elements;
pub mod ell;
pub mod gpu;
pub mod lattice;
pub mod linear;
pub mod lma;
pub mod matrix_free;
pub mod pointwise;
pub mod tables;
pub mod tensor;

pub use linear::{LinearOperator, Pointwise};
