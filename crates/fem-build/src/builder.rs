//! The nested `cargo rustc` that turns a kernel crate into PTX.

use crate::embed;
use crate::env;
use crate::toolchain::{Toolchain, ToolchainError, INSTALL_HINT};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Architectures built when neither the caller nor `FEM_PTX_ARCHS` names
/// any. `sm_80` PTX is JIT-compiled by the driver for every newer GPU.
pub const DEFAULT_ARCHS: &[&str] = &["sm_80"];

/// Builds a kernel crate to PTX for one or more virtual architectures.
#[derive(Clone, Debug)]
pub struct PtxBuilder {
    crate_dir: PathBuf,
    archs: Vec<String>,
    target_dir: Option<PathBuf>,
    features: Vec<String>,
    watch: Vec<PathBuf>,
}

/// One built PTX file.
#[derive(Clone, Debug)]
pub struct PtxArtifact {
    /// The virtual architecture it was compiled for (`sm_80`, ...).
    pub arch: String,
    /// Where the PTX is: copied into `OUT_DIR` as `<crate>.<arch>.ptx` in a
    /// build script, else the file the device build left in its target dir.
    pub path: PathBuf,
    /// Names of the `.entry` kernels the module defines.
    pub entries: Vec<String>,
}

/// The result of [`PtxBuilder::build_or_warn`]: the artifacts, or the
/// reason there are none (the build still succeeds for CPU use).
#[derive(Clone, Debug)]
pub enum PtxBuild {
    /// The crate compiled for every requested architecture.
    Built {
        /// Package name of the kernel crate, from its `Cargo.toml`.
        crate_name: String,
        /// One artifact per architecture, in the order they were requested.
        artifacts: Vec<PtxArtifact>,
    },
    /// No PTX: disabled by `FEM_PTX=off` or no device toolchain found.
    Unavailable {
        /// Package name of the kernel crate, from its `Cargo.toml`.
        crate_name: String,
        /// Why nothing was built; embedded so the CUDA backend can report it.
        reason: String,
    },
}

/// Why a PTX build failed.
#[derive(Debug)]
pub enum BuildError {
    Toolchain(ToolchainError),
    Io(std::io::Error),
    Compile { arch: String, log: String },
    NoOutput(PathBuf),
    Config(String),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Toolchain(e) => write!(f, "{e}"),
            Self::Io(e) => write!(f, "I/O error: {e}"),
            Self::Compile { arch, log } => write!(f, "compiling kernels for {arch} failed:\n{log}"),
            Self::NoOutput(p) => write!(f, "the device build produced no PTX at {}", p.display()),
            Self::Config(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for BuildError {}

impl From<std::io::Error> for BuildError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

impl PtxBuilder {
    /// A builder for the kernel crate whose `Cargo.toml` is in `crate_dir`.
    pub fn new(crate_dir: impl Into<PathBuf>) -> Self {
        Self { crate_dir: crate_dir.into(), archs: Vec::new(), target_dir: None, features: Vec::new(), watch: Vec::new() }
    }

    /// Adds a virtual architecture (`sm_80`, `sm_90`, ...). `FEM_PTX_ARCHS`
    /// (comma-separated) overrides the list.
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.archs.push(arch.into());
        self
    }

    /// Where the device build keeps its target directory (and so its cached
    /// `core`). Default: `<cargo target dir>/fem-ptx` of the calling build.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// Enables a cargo feature of the kernel crate.
    pub fn feature(mut self, f: impl Into<String>) -> Self {
        self.features.push(f.into());
        self
    }

    /// Another source directory the kernels depend on (a path dependency):
    /// changes there rebuild the PTX too.
    pub fn watch(mut self, path: impl Into<PathBuf>) -> Self {
        self.watch.push(path.into());
        self
    }

    fn crate_name(&self) -> String {
        let manifest = std::fs::read_to_string(self.crate_dir.join("Cargo.toml")).unwrap_or_default();
        manifest
            .lines()
            .find_map(|l| {
                let l = l.trim();
                let v = l.strip_prefix("name")?.trim_start().strip_prefix('=')?;
                Some(v.trim().trim_matches('"').to_string())
            })
            .unwrap_or_else(|| "kernels".to_string())
    }

    fn archs(&self) -> Vec<String> {
        if let Ok(list) = std::env::var("FEM_PTX_ARCHS") {
            let archs: Vec<String> = list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
            if !archs.is_empty() {
                return archs;
            }
        }
        if self.archs.is_empty() {
            DEFAULT_ARCHS.iter().map(|s| s.to_string()).collect()
        } else {
            self.archs.clone()
        }
    }

    fn resolved_target_dir(&self) -> Result<PathBuf, BuildError> {
        if let Some(d) = &self.target_dir {
            return Ok(d.clone());
        }
        let out = std::env::var_os("OUT_DIR")
            .map(PathBuf::from)
            .ok_or_else(|| BuildError::Config("no target_dir given and OUT_DIR is unset (not in a build script)".into()))?;
        // OUT_DIR = <target>/<profile>/build/<pkg>-<hash>/out
        let profile_dir = out
            .ancestors()
            .find(|p| p.file_name().is_some_and(|n| n == "build"))
            .and_then(Path::parent)
            .ok_or_else(|| BuildError::Config(format!("unexpected OUT_DIR layout: {}", out.display())))?;
        Ok(profile_dir.parent().unwrap_or(profile_dir).join("fem-ptx"))
    }

    /// Prints `cargo:rerun-if-changed` for the crate, its watched
    /// dependencies, and the environment variables that steer the build,
    /// so the PTX is rebuilt when kernel sources change and not otherwise.
    pub fn emit_rerun_if_changed(&self) {
        for p in [self.crate_dir.join("src"), self.crate_dir.join("Cargo.toml")].iter().chain(&self.watch) {
            println!("cargo:rerun-if-changed={}", p.display());
        }
        for v in ["FEM_PTX", "FEM_PTX_ARCHS", "FEM_REQUIRE_PTX", "FEM_PTX_RUSTC", "FEM_PTX_CARGO"] {
            println!("cargo:rerun-if-env-changed={v}");
        }
    }

    /// Compiles the crate for every architecture; the PTX files are copied
    /// to `OUT_DIR` when run from a build script.
    pub fn build(&self) -> Result<Vec<PtxArtifact>, BuildError> {
        let tc = Toolchain::locate().map_err(BuildError::Toolchain)?;
        let target_root = self.resolved_target_dir()?;
        let name = self.crate_name().replace('-', "_");
        self.archs()
            .into_iter()
            .map(|arch| self.build_arch(&tc, &target_root, &name, &arch))
            .collect()
    }

    fn build_arch(&self, tc: &Toolchain, target_root: &Path, name: &str, arch: &str) -> Result<PtxArtifact, BuildError> {
        validate_arch(arch)?;
        // One target dir per architecture: the flags differ, so sharing one
        // would rebuild (and overwrite) the other architecture each time.
        let target_dir = target_root.join(arch);
        claim_output(&target_dir, &self.crate_name(), &self.crate_dir)?;
        let mut cmd = Command::new(&tc.cargo);
        env::scrub(&mut cmd);
        cmd.env("RUSTC", &tc.rustc)
            .env("RUSTC_BOOTSTRAP", "1")
            .env("CARGO_PROFILE_RELEASE_LTO", "fat")
            .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
            .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
            .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "3")
            .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
            .env("CARGO_PROFILE_RELEASE_INCREMENTAL", "false")
            .env("CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS", "false")
            .env("CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS", "false")
            .arg("rustc")
            .arg("--release")
            .arg("--manifest-path")
            .arg(self.crate_dir.join("Cargo.toml"))
            .args(["--crate-type", "cdylib", "--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core"])
            .arg("--target-dir")
            .arg(&target_dir);
        if !self.features.is_empty() {
            cmd.arg("--features").arg(self.features.join(","));
        }
        cmd.args(["--", "--emit", "asm", "-C"]).arg(format!("target-cpu={arch}")).args(["-C", "linker=/bin/true"]);
        let out = cmd.output()?;
        if !out.status.success() {
            return Err(BuildError::Compile { arch: arch.to_string(), log: String::from_utf8_lossy(&out.stderr).into_owned() });
        }
        let produced = target_dir.join("nvptx64-nvidia-cuda/release/deps").join(format!("{name}.s"));
        if !produced.is_file() {
            return Err(BuildError::NoOutput(produced));
        }
        // The module where cargo expects the cdylib (the skipped linker
        // writes none): without it cargo finds the crate dirty on every
        // call and recompiles all the kernels, as when the host's other
        // profile runs this build.
        std::fs::copy(&produced, produced.with_extension("ptx"))?;
        let path = match std::env::var_os("OUT_DIR") {
            Some(out_dir) => {
                let dest = PathBuf::from(out_dir).join(format!("{name}.{arch}.ptx"));
                std::fs::copy(&produced, &dest)?;
                dest
            }
            None => produced,
        };
        let text = std::fs::read_to_string(&path)?;
        let entries = embed::entry_names(&text).into_iter().map(String::from).collect();
        std::fs::write(owner_stamp(&target_dir, &self.crate_name()), checkout(&self.crate_dir))?;
        Ok(PtxArtifact { arch: arch.to_string(), path, entries })
    }

    /// The build-script entry point. Emits the rerun directives, then:
    /// * `FEM_PTX=off`: no PTX, by request;
    /// * toolchain missing: a cargo warning naming the install command, no
    ///   PTX, and the build goes on for CPU use;
    /// * `FEM_REQUIRE_PTX=1` (CI): any of the above fails the build;
    /// * a kernel that does not compile always fails the build.
    pub fn build_or_warn(&self) -> PtxBuild {
        self.emit_rerun_if_changed();
        let crate_name = self.crate_name();
        let required = std::env::var("FEM_REQUIRE_PTX").is_ok_and(|v| v == "1" || v == "true");
        let unavailable = |reason: String| {
            if required {
                panic!("FEM_REQUIRE_PTX is set but no PTX was built for {crate_name}: {reason}");
            }
            println!("cargo:warning=GPU kernels of {crate_name} not compiled to PTX ({reason}); the CPU backend works, the CUDA backend will report this at run time. Install: {INSTALL_HINT}");
            PtxBuild::Unavailable { crate_name: crate_name.clone(), reason }
        };
        if std::env::var("FEM_PTX").is_ok_and(|v| v == "off" || v == "0") {
            return unavailable("disabled by FEM_PTX=off".to_string());
        }
        match self.build() {
            Ok(artifacts) => PtxBuild::Built { crate_name, artifacts },
            Err(BuildError::Toolchain(e)) => unavailable(e.to_string()),
            Err(e) => panic!("PTX build of {crate_name} failed: {e}"),
        }
    }
}

/// Accepts `sm_XY` and `sm_XYa` names, the `-C target-cpu` values of rustc's
/// NVPTX backend.
fn validate_arch(arch: &str) -> Result<(), BuildError> {
    let digits = arch.strip_prefix("sm_").map(|d| d.trim_end_matches('a'));
    match digits {
        Some(d) if d.len() >= 2 && d.chars().all(|c| c.is_ascii_digit()) => Ok(()),
        _ => Err(BuildError::Config(format!("architecture `{arch}` is not of the form sm_XY"))),
    }
}

impl PtxBuild {
    /// Writes the `PtxSet` constant `const_name` for `include!`.
    pub fn write_embedding(&self, path: &Path, const_name: &str) -> std::io::Result<()> {
        match self {
            Self::Built { crate_name, artifacts } => {
                let arts: Vec<(String, PathBuf)> = artifacts.iter().map(|a| (a.arch.clone(), a.path.clone())).collect();
                embed::write_set(path, const_name, crate_name, &arts, None)
            }
            Self::Unavailable { crate_name, reason } => embed::write_set(path, const_name, crate_name, &[], Some(reason)),
        }
    }
}

/// The file naming the checkout whose build last wrote `package`'s PTX
/// in `target_dir`.
fn owner_stamp(target_dir: &Path, package: &str) -> PathBuf {
    target_dir.join(format!("{package}.checkout"))
}

/// The crate's directory as a stamp: canonical where it can be.
fn checkout(crate_dir: &Path) -> String {
    crate_dir.canonicalize().unwrap_or_else(|_| crate_dir.to_path_buf()).display().to_string()
}

/// The device build's output is named by crate, not by checkout, while
/// cargo's fingerprints are per source path: two checkouts sharing a
/// target directory would each find their own build fresh and read the
/// other's PTX. When another checkout wrote it last, `package`'s
/// fingerprints are dropped so this one's kernels are compiled again
/// (`core` stays built).
fn claim_output(target_dir: &Path, package: &str, crate_dir: &Path) -> std::io::Result<()> {
    let stamp = owner_stamp(target_dir, package);
    let Ok(owner) = std::fs::read_to_string(&stamp) else { return Ok(()) };
    if owner == checkout(crate_dir) {
        return Ok(());
    }
    let fingerprints = target_dir.join("nvptx64-nvidia-cuda/release/.fingerprint");
    if let Ok(dir) = std::fs::read_dir(&fingerprints) {
        for entry in dir.flatten() {
            let file = entry.file_name();
            let is_package = file.to_str().and_then(|f| f.strip_prefix(package)).is_some_and(|rest| rest.starts_with('-') && rest[1..].chars().all(|c| c.is_ascii_hexdigit()));
            if is_package {
                std::fs::remove_dir_all(entry.path())?;
            }
        }
    }
    std::fs::remove_file(stamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crate_name_and_archs() {
        let dir = std::env::temp_dir().join(format!("fem-build-name-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"my-kernels\"\nversion = \"0.1.0\"\n").unwrap();
        let b = PtxBuilder::new(&dir);
        assert_eq!(b.crate_name(), "my-kernels");
        if std::env::var_os("FEM_PTX_ARCHS").is_none() {
            assert_eq!(b.archs(), vec!["sm_80"]);
            assert_eq!(b.clone().arch("sm_90").archs(), vec!["sm_90"]);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn architecture_names() {
        for ok in ["sm_80", "sm_90", "sm_90a", "sm_100"] {
            assert!(validate_arch(ok).is_ok(), "{ok}");
        }
        for bad in ["compute_80", "sm_", "sm_8", "sm_8x", "80"] {
            assert!(validate_arch(bad).unwrap_err().to_string().contains("sm_XY"), "{bad}");
        }
    }
}
