//! The environment of the nested cargo.
//!
//! A build script inherits the outer cargo's variables (target, profile,
//! flags, wrappers, the rustup toolchain). Passed on, they would make the
//! device build compile for the host or with the host's flags, so every
//! variable cargo or rustup sets for a build script is removed; only the
//! registry location and the jobserver stay.

use std::process::Command;

const KEEP: &[&str] = &["CARGO_HOME", "CARGO_MAKEFLAGS", "CARGO_NET_OFFLINE", "CARGO_REGISTRIES_CRATES_IO_PROTOCOL"];
const BUILD_SCRIPT_VARS: &[&str] = &["OUT_DIR", "TARGET", "HOST", "PROFILE", "OPT_LEVEL", "DEBUG", "NUM_JOBS", "RUSTC_LINKER"];

fn is_inherited_build_var(name: &str) -> bool {
    if KEEP.contains(&name) {
        return false;
    }
    name == "CARGO"
        || name.starts_with("CARGO_")
        || name.starts_with("RUSTC")
        || name.starts_with("RUSTDOC")
        || name == "RUSTFLAGS"
        || name == "RUSTUP_TOOLCHAIN"
        || name == "RUSTC_BOOTSTRAP"
        || BUILD_SCRIPT_VARS.contains(&name)
}

/// Removes the outer build's variables from `cmd`.
pub fn scrub(cmd: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if let Some(n) = name.to_str() {
            if is_inherited_build_var(n) {
                cmd.env_remove(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_inherited_build_var as inherited;

    #[test]
    fn scrubs_build_variables_but_keeps_registry_and_jobserver() {
        for v in ["CARGO", "CARGO_ENCODED_RUSTFLAGS", "CARGO_TARGET_DIR", "RUSTC", "RUSTC_WRAPPER", "RUSTFLAGS", "TARGET", "OUT_DIR", "RUSTUP_TOOLCHAIN", "CARGO_PROFILE_RELEASE_LTO"] {
            assert!(inherited(v), "{v}");
        }
        for v in ["CARGO_HOME", "CARGO_MAKEFLAGS", "PATH", "HOME", "RUSTUP_HOME"] {
            assert!(!inherited(v), "{v}");
        }
    }
}
