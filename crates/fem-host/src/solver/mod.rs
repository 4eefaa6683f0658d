//! Iterative solvers on any backend and operator: CG and PCG, BiCGStab,
//! GMRES, geometric multigrid (with an exact dense coarsest solve), and
//! the preconditioners they take (Jacobi, coloured SSOR, SPAI(1), SAINV,
//! multigrid), built through [`PrecondOps`] on either backend.

pub mod backend;
pub mod bicgstab;
pub mod cg;
pub mod dense;
pub mod gmres;
pub mod krylov;
pub mod multigrid;
pub mod ordering;
pub mod precond;
pub mod richardson;
pub mod sainv;
pub mod spai;
pub mod ssor;
pub mod transfer;

pub use backend::PrecondOps;
pub use bicgstab::bicgstab;
pub use cg::{cg, pcg, CgOptions, CgReport};
pub use gmres::gmres;
pub use krylov::{Krylov, KrylovSolve};
pub use precond::{ApproximateInverse, Identity, Jacobi};
pub use richardson::richardson;
