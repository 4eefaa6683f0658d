//! The PTX builder on a user's own kernel crate, the way a user's
//! `build.rs` calls it: a crate outside this workspace that defines a
//! kernel with `#[fem_macros::kernel]` on top of the device prelude.

use fem_build::{PtxBuild, PtxBuilder, Toolchain};
use std::io::Write;
use std::path::{Path, PathBuf};

const LIB_RS: &str = r#"#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx, asm_experimental_arch))]
use fem_core::Real;

/// x ← a·x
#[fem_macros::kernel(f32, f64)]
pub unsafe fn scale<T: Real>(n: usize, a: T, x: *mut T) {
    #[cfg(target_arch = "nvptx64")]
    {
        let i = fem_kernels::device::global_idx_x();
        if i < n {
            *x.add(i) = a * *x.add(i);
        }
    }
}

/// A pointwise physics: the thread-transposition entry points are generated
/// in the user's PTX.
#[fem_kernels::fem_kernel(elements(tri(p = 1, q = 1)), precision(f64))]
pub mod diffusion {
    use fem_core::Real;
    pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[T; D]; 1] {
        [du[0]]
    }
}
"#;

fn write_user_crate(dir: &Path, root: &Path, package: &str, lib_rs: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    // the package is published as fem-gpu-macros; its library is fem_macros
    let dep = |c: &str| format!("{} = {{ path = {:?} }}\n", if c == "fem-macros" { "fem-gpu-macros" } else { c }, root.join("crates").join(c).display().to_string());
    let manifest = format!(
        "[package]\nname = \"{package}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n{}{}{}\n[workspace]\n",
        dep("fem-core"),
        dep("fem-macros"),
        dep("fem-kernels")
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/lib.rs"), lib_rs).unwrap();
}

/// A user kernel crate named `name` (its package and directory) with
/// `lib_rs` as its source, and the
/// device target dir to build it in (the workspace's, so the `core` built
/// for fem is reused); `None` (after a SKIPPED line) without the device
/// toolchain, which with `CI=true` is a failure.
fn user_crate(test: &str, name: &str, lib_rs: &str) -> Option<(PathBuf, PathBuf)> {
    if let Err(e) = Toolchain::locate() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true but the device toolchain is missing: {e}");
        }
        let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {e}");
        return None;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.join(name);
    write_user_crate(&dir, &root, name, lib_rs);
    Some((dir, tmp.parent().unwrap().join("fem-ptx")))
}

/// Two checkouts of one kernel crate (same package, other kernels)
/// building in one target directory each get their own PTX, also when
/// the first builds again after the second: the output file is shared,
/// and the first's cargo finds its own build fresh.
#[test]
fn two_checkouts_sharing_a_target_dir_keep_their_own_kernels() {
    let Some((first, target)) = user_crate("two_checkouts_sharing_a_target_dir_keep_their_own_kernels", "checkout-kernels", LIB_RS) else { return };
    let second = first.with_file_name("checkout-kernels-other");
    write_user_crate(&second, &PathBuf::from(env!("CARGO_MANIFEST_DIR")), "checkout-kernels", &LIB_RS.replace("fn scale<", "fn stretch<"));
    let kernels = |dir: &Path| PtxBuilder::new(dir).target_dir(&target).arch("sm_80").build().unwrap().remove(0).entries;
    let has = |entries: &[String], k: &str| entries.iter().any(|e| e == k);
    for (dir, own, other) in [(&first, "fem_scale_f64", "fem_stretch_f64"), (&second, "fem_stretch_f64", "fem_scale_f64"), (&first, "fem_scale_f64", "fem_stretch_f64")] {
        let entries = kernels(dir);
        assert!(has(&entries, own) && !has(&entries, other), "{}: {entries:?}", dir.display());
    }
}

#[test]
fn builds_a_user_kernel_crate_to_ptx() {
    let Some((dir, target)) = user_crate("builds_a_user_kernel_crate_to_ptx", "user-kernels", LIB_RS) else { return };
    let artifacts = PtxBuilder::new(&dir).target_dir(&target).arch("sm_80").build().unwrap();
    assert_eq!(artifacts.len(), 1);
    let a = &artifacts[0];
    assert_eq!(a.arch, "sm_80");
    for k in ["fem_scale_f32", "fem_scale_f64", "fem_residual_diffusion_tri_p1_q1_f64"] {
        assert!(a.entries.iter().any(|e| e == k), "{k} missing: {:?}", a.entries);
    }
    assert!(!a.entries.iter().any(|e| e == "fem_axpy_f64" || e.starts_with("fem_residual_poisson")), "fem's own kernels leaked into the user's PTX");
    let ptx = std::fs::read_to_string(&a.path).unwrap();
    assert!(ptx.contains(".target sm_80") && ptx.contains("mul.rn.f64"));

    let table = dir.join("user_kernels_ptx.rs");
    PtxBuild::Built { crate_name: "user-kernels".into(), artifacts }.write_embedding(&table, "USER_PTX").unwrap();
    let text = std::fs::read_to_string(&table).unwrap();
    assert!(text.contains("pub static USER_PTX: ::fem_build::PtxSet") && text.contains("sm_80"));
}

#[test]
fn a_kernel_that_does_not_compile_is_reported() {
    let broken = LIB_RS.replace("a * *x.add(i)", "a * undefined_name");
    let Some((dir, target)) = user_crate("a_kernel_that_does_not_compile_is_reported", "broken-kernels", &broken) else { return };
    let err = PtxBuilder::new(&dir).target_dir(&target).build().unwrap_err().to_string();
    assert!(err.contains("compiling kernels for sm_80 failed") && err.contains("undefined_name"), "{err}");
}
