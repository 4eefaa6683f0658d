//! Iterative solvers on any backend and operator: CG and PCG, BiCGStab,
//! geometric multigrid, and the preconditioners they take (Jacobi,
//! coloured SSOR, SPAI(1), multigrid).

pub mod bicgstab;
pub mod cg;
pub mod gmres;
pub mod multigrid;
pub mod ordering;
pub mod precond;
pub mod sainv;
pub mod spai;
pub mod ssor;
pub mod transfer;

pub use bicgstab::bicgstab;
pub use cg::{cg, pcg, CgOptions, CgReport};
pub use gmres::gmres;
pub use precond::{ApproximateInverse, Identity, Jacobi, Preconditioner};
