//! Compiles `fem-kernels` to PTX (see `fem-build`) and writes the table
//! that `src/lib.rs` embeds as `fem::KERNELS_PTX`.

use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let crates = root.join("crates");
    let build = fem_build::PtxBuilder::new(crates.join("fem-kernels"))
        .feature("entry-points")
        .watch(crates.join("fem-core/src"))
        .watch(crates.join("fem-core/Cargo.toml"))
        .watch(crates.join("fem-macros/src"))
        .build_or_warn();
    build
        .write_embedding(&out.join("fem_kernels_ptx.rs"), "KERNELS_PTX")
        .expect("writing the PTX table into OUT_DIR");
}
