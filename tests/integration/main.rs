//! The integration tests, one module per subject, in one test binary:
//! one link instead of one per file, and the tests of every subject share
//! the test threads instead of running file after file.

mod common;
mod amg;
mod bench;
mod boundary_conditions;
mod boundary_terms;
mod bp;
mod bp_physics;
mod builder;
mod cardiac;
mod cg;
mod cli;
mod demo;
mod distributed;
mod gmsh;
mod gmsh_versions;
mod gpu;
mod gpu_amg;
mod gpu_bp;
mod gpu_cardiac;
mod gpu_mesh_solve;
mod gpu_matrix_free;
mod gpu_partial;
mod gpu_pointwise;
mod gpu_poisson;
mod gpu_solvers;
mod gpu_spmv;
mod hole;
mod interop;
mod mesh_solve;
mod multigrid;
mod newton_precond;
mod nodal_vtu;
mod picture;
mod pointwise;
mod ptx;
mod readers;
mod renumber;
mod solvers;
mod spmv;
mod tune;
