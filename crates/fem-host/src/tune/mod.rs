//! Autotuning: users get tuned kernels without knowing the parameters.
//!
//! Every tunable operation names its problem by a *signature* (operation,
//! format, precision and bucketed sizes: the figures the best parameters
//! depend on) and offers candidate parameter sets, each with the
//! prediction of an a-priori model. [`search`] times the hopeful ones with
//! CUDA events (warm-up, repeats, median) and keeps the fastest; the
//! winner goes into the device's tuning file ([`cache`]), which the host
//! API reads by itself the next time the same signature comes by. An
//! explicit parameter always wins over the file, and the file over the
//! model's default. [`select`] chooses among storages (CSR, ELL-WARP, LMA,
//! matrix-free, ...) the same way, counting the conversion against the
//! expected number of products.

pub mod cache;
pub mod search;
pub mod select;

pub use cache::TuningFile;
pub use search::{search, Candidate, Outcome, SearchOptions};

use crate::Result;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::PathBuf;

/// A device's tuning file, where it lives, and what was wrong with it.
#[derive(Clone, Debug)]
pub struct Tuning {
    /// `None`: nowhere to keep it (no home folder); lookups find nothing.
    pub path: Option<PathBuf>,
    /// The entries in memory: those read from `path`, plus any recorded since.
    pub file: TuningFile,
    /// Why the file on disk was ignored, if it was.
    pub warning: Option<String>,
}

impl Tuning {
    /// The tuning file of `device` at `path` (or none).
    pub fn at(path: Option<PathBuf>, device: &str) -> Self {
        let (file, warning) = match &path {
            Some(p) => TuningFile::load(p, device),
            None => (TuningFile::empty(device), None),
        };
        Self { path, file, warning }
    }

    /// The tuning file of `device` in [`cache::default_dir`]; with
    /// `FEM_TUNING=off` none is read. A warning about an ignored file goes
    /// to stderr, since the caller asked for nothing and should still hear
    /// that its tuned parameters are gone.
    pub fn open(device: &str) -> Self {
        if std::env::var("FEM_TUNING").is_ok_and(|v| v == "off") {
            return Self::at(None, device);
        }
        let t = Self::at(cache::default_dir().map(|d| cache::path_in(&d, device)), device);
        if let Some(w) = &t.warning {
            eprintln!("warning: {w}");
        }
        t
    }

    /// The stored parameters of signature `key`, if there are any and they
    /// parse as `P`.
    pub fn get<P: DeserializeOwned>(&self, key: &str) -> Option<P> {
        self.file.get(key)
    }

    /// Keeps the outcome of a search under `key` (call [`Tuning::save`] to write).
    pub fn record<P: Serialize>(&mut self, key: &str, o: &Outcome<P>) {
        self.file.insert(key, &o.best, o.seconds, o.default_seconds, o.timed.len(), o.pruned);
    }

    /// Writes the file to `path`; fails when `path` is `None` or the write
    /// fails.
    pub fn save(&self) -> Result<()> {
        match &self.path {
            Some(p) => self.file.save(p),
            None => Err(crate::Error::InvalidArgument("no folder for the tuning file: set FEM_TUNING_DIR".into())),
        }
    }
}

/// `v` rounded to the nearest power of two, as `2^k`: sizes within a
/// factor √2 share a signature.
pub fn pow2_bucket(v: usize) -> String {
    format!("2^{}", (v.max(1) as f64).log2().round() as u32)
}
