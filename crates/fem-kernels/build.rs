//! Publishes this crate's source folder to the build scripts of the crates
//! that depend on it (`DEP_FEM_KERNELS_ROOT`): fem's compiles it to PTX.

fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:root={root}");
    println!("cargo:rerun-if-changed=build.rs");
}
