//! Finding a rustc that can build `core` for NVPTX.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The command that installs the device toolchain on Debian 12.
pub const INSTALL_HINT: &str = "apt-get install rustc-web cargo-web rust-web-src";

/// A rustc/cargo pair with library source matching the compiler, which
/// `-Zbuild-std` needs.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// Path of the `rustc` binary the device build runs as `RUSTC`.
    pub rustc: PathBuf,
    /// Path of the `cargo` binary that drives the device build.
    pub cargo: PathBuf,
    /// The compiler's `rustc --version` line, used in error messages.
    pub version: String,
}

/// Why no device toolchain could be used.
#[derive(Clone, Debug)]
pub enum ToolchainError {
    /// A binary or the compiler's library source is not installed.
    Missing {
        /// What is missing, with the path that was looked at.
        what: String,
    },
    /// A binary is present but could not be run or reported an error.
    Broken {
        /// The binary (and arguments) that failed.
        what: String,
        /// The OS error or the command's standard error.
        detail: String,
    },
}

impl fmt::Display for ToolchainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { what } => write!(f, "{what} not found; install it with `{INSTALL_HINT}`"),
            Self::Broken { what, detail } => write!(f, "{what}: {detail}"),
        }
    }
}

impl std::error::Error for ToolchainError {}

impl Toolchain {
    /// Locates the toolchain: `FEM_PTX_RUSTC` / `FEM_PTX_CARGO` if set,
    /// else Debian's `/usr/bin/rustc` and `/usr/bin/cargo`.
    pub fn locate() -> Result<Self, ToolchainError> {
        Self::at(path_from_env("FEM_PTX_RUSTC", "/usr/bin/rustc"), path_from_env("FEM_PTX_CARGO", "/usr/bin/cargo"))
    }

    /// Checks the toolchain at the given paths: both binaries present, and
    /// the compiler's library source installed.
    pub fn at(rustc: PathBuf, cargo: PathBuf) -> Result<Self, ToolchainError> {
        for (p, what) in [(&rustc, "rustc"), (&cargo, "cargo")] {
            if !p.is_file() {
                return Err(ToolchainError::Missing { what: format!("device {what} ({})", p.display()) });
            }
        }
        let version = run_version(&rustc)?;
        let sysroot = sysroot(&rustc)?;
        let src = sysroot.join("lib/rustlib/src/rust/library/core");
        if !src.is_dir() {
            return Err(ToolchainError::Missing {
                what: format!("library source for {version} ({})", src.display()),
            });
        }
        Ok(Self { rustc, cargo, version })
    }
}

fn path_from_env(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| PathBuf::from(default))
}

fn capture(cmd: &Path, args: &[&str]) -> Result<String, ToolchainError> {
    let out = Command::new(cmd).args(args).output().map_err(|e| ToolchainError::Broken {
        what: cmd.display().to_string(),
        detail: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(ToolchainError::Broken {
            what: format!("{} {}", cmd.display(), args.join(" ")),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn run_version(rustc: &Path) -> Result<String, ToolchainError> {
    capture(rustc, &["--version"])
}

fn sysroot(rustc: &Path) -> Result<PathBuf, ToolchainError> {
    capture(rustc, &["--print", "sysroot"]).map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_toolchain_names_the_install_command() {
        let e = Toolchain::at("/nonexistent/rustc".into(), "/nonexistent/cargo".into()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("/nonexistent/rustc") && msg.contains(INSTALL_HINT), "{msg}");
    }

    #[test]
    fn a_rustc_without_library_source_is_rejected() {
        // rustup's rustc on PATH has no rust-src for nvptx here; whichever
        // rustc is found, the check either passes with the source present or
        // names the missing source.
        let rustc = PathBuf::from(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()));
        let Ok(found) = which(&rustc) else { return };
        match Toolchain::at(found.clone(), found) {
            Ok(tc) => assert!(tc.version.starts_with("rustc ")),
            Err(e) => assert!(e.to_string().contains("library source"), "{e}"),
        }
    }

    fn which(p: &Path) -> Result<PathBuf, ()> {
        if p.is_absolute() {
            return Ok(p.to_path_buf());
        }
        std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join(p)).find(|c| c.is_file()))
            .ok_or(())
    }
}
