//! SpMV under the tuner: signatures, the parameters a product runs with
//! (explicit, else tuned, else the model's), the search over a format's
//! parameters, and the format `auto` chooses.

use super::model::{best_params, candidates, predict, Machine, RowLengths};
use super::params::SpmvParams;
use super::stats::RowStats;
use super::{Spmv, SpmvFormat};
use crate::operator::csr::Csr;
use crate::timing::measure;
use crate::tune::select::{choose, Choice, Costed};
use crate::tune::{pow2_bucket, search, Candidate, Outcome, SearchOptions, Tuning};
use crate::{Backend, Result, Scalar};
use serde::Serialize;

/// The signature of an SpMV in format `f`: the figures its best parameters
/// depend on (rows and longest row to a factor √2, mean row length).
pub fn signature(f: SpmvFormat, precision: &str, s: &RowStats) -> String {
    format!("spmv/{}/{precision}/rows={}/mean={:.0}/max={}", f.name(), pow2_bucket(s.rows), s.mean_row, pow2_bucket(s.max_row))
}

/// The signature of the format choice itself.
pub fn choice_signature(precision: &str, s: &RowStats, products: f64) -> String {
    format!("spmv-format/{precision}/rows={}/mean={:.0}/max={}/products={}", pow2_bucket(s.rows), s.mean_row, pow2_bucket(s.max_row), pow2_bucket(products as usize))
}

/// Parameters the user fixed; they override everything else.
#[derive(Clone, Copy, Debug, Default)]
pub struct Overrides {
    /// Threads per block of the ELL-WARP and ELLR-T launches (`--block`).
    pub block: Option<u32>,
    /// K2's threshold on entries per lane (`--threshold`).
    pub threshold: Option<usize>,
    /// ELLR-T threads per row (`--threads-per-row`).
    pub ellt_threads: Option<usize>,
    /// CSR threads per row (`--csr-threads`).
    pub csr_threads: Option<usize>,
}

impl Overrides {
    /// `p` with every parameter the user fixed replaced by the fixed value.
    pub fn apply(&self, mut p: SpmvParams) -> SpmvParams {
        p.block = self.block.unwrap_or(p.block);
        p.threshold = self.threshold.unwrap_or(p.threshold);
        p.ellt_threads = self.ellt_threads.unwrap_or(p.ellt_threads);
        p.csr_threads = self.csr_threads.unwrap_or(p.csr_threads);
        p
    }
}

/// Where a format's parameters came from (before explicit overrides).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The device's tuning file.
    Tuned,
    /// The a-priori model.
    Model,
    /// The rule of thumb of [`SpmvParams::a_priori`] (no machine to model).
    Rule,
}

/// What an SpMV needs to know to pick parameters.
pub struct Context<'a> {
    /// Row-length statistics of the matrix: the rule of thumb and the signatures.
    pub stats: &'a RowStats,
    /// Sorted row lengths, for the model.
    pub lengths: &'a RowLengths,
    /// Scalar type of the product, `f32` or `f64` (part of the signatures).
    pub precision: &'static str,
    /// Bytes of one matrix value (4 or 8), for the model's byte counts.
    pub value_bytes: usize,
    /// The measured machine; without it the model is skipped and `choose` fails.
    pub machine: Option<&'a Machine>,
    /// The device's tuning file, whose entries come before the model.
    pub tuning: Option<&'a Tuning>,
}

impl Context<'_> {
    /// The parameters of `f`: explicit ones over the tuning file's over the
    /// model's over the rule of thumb.
    pub fn resolve(&self, f: SpmvFormat, o: &Overrides) -> (SpmvParams, Origin) {
        let rule = SpmvParams::a_priori(self.stats);
        let tuned = self.tuning.and_then(|t| t.get::<SpmvParams>(&signature(f, self.precision, self.stats))).filter(|p| p.validate().is_ok());
        let (p, origin) = match (tuned, self.machine) {
            (Some(p), _) => (p, Origin::Tuned),
            (None, Some(m)) => match best_params(f, rule, self.lengths, self.value_bytes, m) {
                Ok((p, _)) => (p, Origin::Model),
                Err(_) => (rule, Origin::Rule),
            },
            (None, None) => (rule, Origin::Rule),
        };
        (o.apply(p), origin)
    }

    /// The storage `auto` takes over `products` products, priced by the
    /// model, among `formats`; a choice measured earlier on this device
    /// comes first.
    pub fn choose(&self, formats: &[SpmvFormat], products: f64, o: &Overrides) -> Result<(Choice, Origin)> {
        let m = self.machine.ok_or_else(|| crate::Error::InvalidArgument("the format model needs the machine".into()))?;
        let options = formats.iter().map(|&f| {
            let p = o.apply(best_params(f, SpmvParams::a_priori(self.stats), self.lengths, self.value_bytes, m).map(|b| b.0).unwrap_or(SpmvParams::a_priori(self.stats)));
            match predict(f, &p, self.lengths, self.value_bytes, m) {
                Ok(pr) => Costed { storage: f.name().into(), product_seconds: pr.seconds, conversion_seconds: pr.conversion_seconds, unavailable: None },
                Err(e) => Costed { storage: f.name().into(), product_seconds: f64::INFINITY, conversion_seconds: 0.0, unavailable: Some(e) },
            }
        });
        let mut choice = choose(options.collect(), products)?;
        let key = choice_signature(self.precision, self.stats, products);
        let remembered = self.tuning.and_then(|t| t.get::<String>(&key)).filter(|s| choice.ranking.iter().any(|c| &c.storage == s && c.unavailable.is_none()));
        Ok(match remembered {
            Some(s) => {
                choice.storage = s;
                (choice, Origin::Tuned)
            }
            None => (choice, Origin::Model),
        })
    }
}

/// Tunes format `f`: candidates around `base` ranked by the model,
/// hopeless ones pruned, the rest timed (`repeats` medians after warm-up),
/// built by `prepare` once per parameter set that is not just a block size.
/// Parameters in `fixed` are not varied.
#[allow(clippy::too_many_arguments)]
pub fn tune_format<B: Backend, T: Scalar>(
    b: &B,
    csr: &Csr<T>,
    f: SpmvFormat,
    ctx: &Context,
    base: SpmvParams,
    fixed: &Overrides,
    so: &SearchOptions,
    repeats: usize,
    mut prepare: impl FnMut(SpmvFormat, &SpmvParams) -> Result<Box<dyn Spmv<B, T>>>,
    progress: impl FnMut(usize, usize, &SpmvParams),
) -> Result<Outcome<SpmvParams>> {
    let kind = ctx.machine.map_or(b.kind(), |m| m.kind);
    let mut params: Vec<SpmvParams> = candidates(f, base, ctx.lengths, kind, true).into_iter().map(|p| fixed.apply(p)).collect();
    params.dedup();
    let cands: Vec<Candidate<SpmvParams>> = params
        .into_iter()
        .map(|p| Candidate { predicted: ctx.machine.and_then(|m| predict(f, &p, ctx.lengths, ctx.value_bytes, m).ok()).map(|pr| pr.seconds), params: p })
        .collect();
    let x = b.upload(&super::bench::test_vector::<T>(csr.n_rows, 11))?;
    let mut y = b.zeros::<T>(csr.n_rows)?;
    let mut built: Option<(SpmvParams, Box<dyn Spmv<B, T>>)> = None;
    let time = |p: &SpmvParams| -> Result<f64> {
        let same = built.as_ref().is_some_and(|(q, _)| SpmvParams { block: p.block, ..*q } == *p);
        if !same {
            built = None;
            built = Some((*p, prepare(f, p)?));
        }
        let m = &mut built.as_mut().expect("built above").1;
        m.set_block(p.block);
        Ok(measure(b, 2, repeats, || m.apply(b, &x, &mut y))?.median)
    };
    search(base, &cands, so, time, progress)
}
