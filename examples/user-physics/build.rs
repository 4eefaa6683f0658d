//! Compiles the user's kernel crate to PTX and writes the table that
//! `main.rs` embeds, exactly as a user's host crate does. Without the
//! device toolchain the table is empty and the program runs on the CPU.

use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    fem_build::PtxBuilder::new(root.join("kernels"))
        .build_or_warn()
        .write_embedding(&out.join("user_kernels_ptx.rs"), "USER_PTX")
        .expect("writing the PTX table into OUT_DIR");
}
