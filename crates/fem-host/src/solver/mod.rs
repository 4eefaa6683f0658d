//! Iterative solvers on any backend and operator.

pub mod cg;

pub use cg::{cg, CgOptions, CgReport};
