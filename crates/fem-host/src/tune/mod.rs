//! Autotuning: users get tuned kernels without knowing the parameters.
//!
//! Every tunable operation names its problem by a *signature* (operation,
//! format, precision and bucketed sizes: the figures the best parameters
//! depend on) and offers candidate parameter sets, each with the
//! prediction of an a-priori model. [`search()`] times the hopeful ones with
//! CUDA events (warm-up, repeats, median) and keeps the fastest; the
//! winner goes into the device's tuning file ([`cache`]), which the host
//! API reads by itself the next time the same signature comes by. An
//! explicit parameter always wins over the file, the file over the entries
//! shipped for the device ([`seed_for`]), and those over the model's
//! default. [`select`] chooses among storages (CSR, ELL-WARP, LMA,
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

/// Tuning entries measured on known devices and shipped with the library
/// (`tune/seeds/`, written by `benches/gpu/seed_tuning.py` from the tuned
/// results under `benches/gpu/results`): [`Tuning::open`] falls back to
/// them below the user's own file, so on these devices the first run
/// already uses the launches the tuner found there.
const SEEDS: &[(&str, &str)] = &[
    ("NVIDIA H100 80GB HBM3", include_str!("seeds/nvidia-h100-80gb-hbm3.json")),
    ("NVIDIA H200", include_str!("seeds/nvidia-h200.json")),
];

/// The shipped entries for `device` (none for a device without seeds, or
/// if its seed does not parse as this version's tuning file).
pub fn seed_for(device: &str) -> TuningFile {
    SEEDS
        .iter()
        .filter(|(d, _)| *d == device)
        .filter_map(|(_, text)| serde_json::from_str::<TuningFile>(text).ok())
        .find(|f| f.format == cache::FORMAT_TAG && f.version == cache::VERSION && f.device == device)
        .unwrap_or_else(|| TuningFile::empty(device))
}

/// The devices with shipped entries.
pub fn seeded_devices() -> impl Iterator<Item = &'static str> {
    SEEDS.iter().map(|(d, _)| *d)
}

/// A device's tuning file, where it lives, and what was wrong with it.
#[derive(Clone, Debug)]
pub struct Tuning {
    /// `None`: nowhere to keep it (no home folder); lookups find nothing
    /// there.
    pub path: Option<PathBuf>,
    /// The entries in memory: those read from `path`, plus any recorded since.
    pub file: TuningFile,
    /// The shipped entries of this device ([`seed_for`]), consulted where
    /// `file` has none; never written back.
    pub seed: TuningFile,
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
        Self { path, file, seed: TuningFile::empty(device), warning }
    }

    /// The tuning file of `device` in [`cache::default_dir`], over the
    /// device's shipped entries; with `FEM_TUNING=off` neither is read
    /// (the built-in defaults, as benchmarks of the defaults need). A
    /// warning about an ignored file goes to stderr, since the caller
    /// asked for nothing and should still hear that its tuned parameters
    /// are gone.
    pub fn open(device: &str) -> Self {
        if std::env::var("FEM_TUNING").is_ok_and(|v| v == "off") {
            return Self::at(None, device);
        }
        let mut t = Self::at(cache::default_dir().map(|d| cache::path_in(&d, device)), device);
        t.seed = seed_for(device);
        if let Some(w) = &t.warning {
            eprintln!("warning: {w}");
        }
        t
    }

    /// The stored parameters of signature `key`, if there are any and they
    /// parse as `P`.
    pub fn get<P: DeserializeOwned>(&self, key: &str) -> Option<P> {
        self.file.get(key).or_else(|| self.seed.get(key))
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
    format!("2^{}", pow2_exponent(v))
}

/// The `k` of [`pow2_bucket`].
pub fn pow2_exponent(v: usize) -> u32 {
    (v.max(1) as f64).log2().round() as u32
}
