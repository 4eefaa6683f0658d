//! Compiles this crate to PTX with its GPU entry points (see `fem-build`)
//! and writes the table that [`KERNELS_PTX`] embeds.
//!
//! The device build runs here, in the build script of the crate every host
//! crate of fem depends on, rather than in the facade's: cargo starts it
//! near the beginning of a build, so its long single-threaded LLVM pass
//! overlaps the host's dependencies instead of following them.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // The device build of this crate, and of a user's kernel crate that
    // depends on it, runs this script too: nothing to embed there.
    if std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "nvptx64") {
        return;
    }
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut builder = fem_build::PtxBuilder::new(&root).feature("entry-points");
    // the workspace's own sources of the kernels' dependencies (a
    // registry's do not change)
    let crates = root.parent().expect("the crate lies in a folder");
    for dep in ["fem-core", "fem-macros"] {
        let dir = crates.join(dep);
        if dir.join("src").is_dir() {
            builder = builder.watch(dir.join("src")).watch(dir.join("Cargo.toml"));
        }
    }
    builder
        .build_or_warn()
        .write_embedding(&out.join("fem_kernels_ptx.rs"), "KERNELS_PTX")
        .expect("writing the PTX table into OUT_DIR");
}
