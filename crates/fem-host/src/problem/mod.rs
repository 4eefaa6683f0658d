//! Complete problems: mesh → space → operator → solver, with error
//! measurement against known solutions.

pub mod cardiac;
pub mod field;
pub mod hole;
pub mod nonlinear;
pub mod phases;
pub mod poisson;
