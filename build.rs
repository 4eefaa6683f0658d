//! Compiles `fem-kernels` to PTX (see `fem-build`) and writes the table
//! that `src/lib.rs` embeds as `fem::KERNELS_PTX`.

use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // fem-kernels says where its source is (its build script), in this
    // workspace or in a registry.
    let kernels = std::env::var_os("DEP_FEM_KERNELS_ROOT").map(PathBuf::from).unwrap_or_else(|| root.join("crates/fem-kernels"));
    let mut builder = fem_build::PtxBuilder::new(kernels).feature("entry-points");
    let crates = root.join("crates");
    if crates.is_dir() {
        // the workspace's own sources of the kernels' dependencies
        builder = builder.watch(crates.join("fem-core/src")).watch(crates.join("fem-core/Cargo.toml")).watch(crates.join("fem-macros/src"));
    }
    let build = builder.build_or_warn();
    build
        .write_embedding(&out.join("fem_kernels_ptx.rs"), "KERNELS_PTX")
        .expect("writing the PTX table into OUT_DIR");
}
