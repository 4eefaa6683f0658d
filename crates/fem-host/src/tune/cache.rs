//! The tuning file: one JSON file per device holding the winner of every
//! tuned problem signature. It is a cache, not a configuration: anything
//! wrong with it (unreadable, corrupt, another device's, another version)
//! costs the tuned parameters and a warning, never the run.

use crate::{Error, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `format` field every tuning file carries.
pub const FORMAT_TAG: &str = "fem-tuning";
/// Bumped when the meaning of stored parameters changes, so old files are
/// ignored instead of misread.
pub const VERSION: u32 = 1;

/// The winner of one signature and how it was found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The winning parameters, as the operation serialises them.
    pub params: serde_json::Value,
    /// Median seconds of the winner (0 where the search does not report it).
    pub seconds: f64,
    /// Median seconds of the default parameters the winner was compared with
    /// (0 where the search does not report them).
    pub default_seconds: f64,
    /// Candidates timed, and candidates the model ruled out untimed.
    pub timed: usize,
    /// Candidates the model ruled out without timing them.
    pub pruned: usize,
}

/// The tuned parameters of one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuningFile {
    /// Always [`FORMAT_TAG`]; a file with another tag is not a tuning file.
    pub format: String,
    /// [`VERSION`] of the code that wrote it; a file of another version is ignored.
    pub version: u32,
    /// The device the timings were taken on, as its backend names it.
    pub device: String,
    /// The winner of every tuned signature, by signature.
    pub entries: BTreeMap<String, Entry>,
}

impl TuningFile {
    /// A file for `device` with no entries.
    pub fn empty(device: &str) -> Self {
        Self {
            format: FORMAT_TAG.into(),
            version: VERSION,
            device: device.into(),
            entries: BTreeMap::new(),
        }
    }

    /// The file at `path` for `device`, or an empty one. A missing file is
    /// no news; any other problem comes back as the warning to show.
    pub fn load(path: &Path, device: &str) -> (Self, Option<String>) {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Self::empty(device), None),
            Err(e) => return Self::ignored(device, path, &format!("cannot be read ({e})")),
        };
        let file: Self = match serde_json::from_str(&text) {
            Ok(f) => f,
            Err(e) => return Self::ignored(device, path, &format!("is not a tuning file ({e})")),
        };
        if file.format != FORMAT_TAG || file.version != VERSION {
            let why = format!("has format `{}` version {} (expected `{FORMAT_TAG}` version {VERSION})", file.format, file.version);
            return Self::ignored(device, path, &why);
        }
        if file.device != device {
            return Self::ignored(device, path, &format!("was tuned on `{}`, not on this device `{device}`", file.device));
        }
        (file, None)
    }

    fn ignored(device: &str, path: &Path, why: &str) -> (Self, Option<String>) {
        let w = format!("tuning file {} {why}; it is ignored and defaults are used", path.display());
        (Self::empty(device), Some(w))
    }

    /// Writes the file whole: to a temporary file beside it, then renamed,
    /// so a reader never sees half of it.
    pub fn save(&self, path: &Path) -> Result<()> {
        let io = |what: &str, e: std::io::Error| Error::InvalidArgument(format!("tuning file {}: {what}: {e}", path.display()));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| io("creating its folder", e))?;
        }
        let text = serde_json::to_string_pretty(self).expect("tuning files serialise");
        crate::io::atomic_write(path, text.as_bytes()).map_err(|e| io("writing", e))
    }

    /// The stored parameters of `key`, if they parse as `P`.
    pub fn get<P: DeserializeOwned>(&self, key: &str) -> Option<P> {
        self.entries.get(key).and_then(|e| serde_json::from_value(e.params.clone()).ok())
    }

    /// Stores `params` as the winner of signature `key`, replacing an earlier
    /// entry, with the search figures of [`Entry`] (in memory; [`Self::save`] writes).
    pub fn insert<P: Serialize>(&mut self, key: &str, params: &P, seconds: f64, default_seconds: f64, timed: usize, pruned: usize) {
        let params = serde_json::to_value(params).expect("parameters serialise");
        self.entries.insert(key.into(), Entry { params, seconds, default_seconds, timed, pruned });
    }
}

/// Where tuning files live: `$FEM_TUNING_DIR`, else `$XDG_CACHE_HOME/fem`,
/// else `~/.cache/fem`.
pub fn default_dir() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    env("FEM_TUNING_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("fem")))
        .or_else(|| env("HOME").map(|h| h.join(".cache").join("fem")))
}

/// The file of `device` in `dir`: `tuning-<device as a file name>.json`.
pub fn path_in(dir: &Path, device: &str) -> PathBuf {
    dir.join(format!("tuning-{}.json", slug(device)))
}

/// Lower-case letters and digits, everything else one `-`.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(slug("CPU (rayon, 2 threads)"), "cpu-rayon-2-threads");
    }
}
