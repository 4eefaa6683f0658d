//! Reading and writing matrices and meshes in the field's exchange formats.

pub mod matrix_market;
