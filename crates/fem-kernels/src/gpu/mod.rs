//! PTX entry points. Each generic kernel here is instantiated per precision
//! by `#[kernel(f32, f64)]` as `fem_<name>_<precision>`; host code relies on
//! these names (see `fem_host::kernels`).

mod amg;
mod blas;
mod bp;
mod bp_factors;
mod cardiac;
mod facet;
mod fem;
mod krylov;
mod lattice;
mod partial;
mod partial_quad;
mod pattern;
mod prelude_check;
mod reduce;
mod scan;
mod slots;
mod spai;
mod spmv;
mod transpose;
mod warp;
