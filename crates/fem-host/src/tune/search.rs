//! The search: a model ranks the candidates, those it predicts hopeless
//! are dropped untimed, the rest (and always the default) are timed, and
//! the fastest wins. Timing is the caller's closure, normally
//! [`crate::timing::measure`]'s median (CUDA events on the GPU, warm-up
//! first), so this file stays free of backends.

use crate::{Error, Result};
use serde::Serialize;

/// A parameter set and the model's predicted seconds (`None`: no model, so
/// never pruned).
#[derive(Clone, Debug)]
pub struct Candidate<P> {
    /// The parameter set to try.
    pub params: P,
    /// The model's predicted seconds, `None` where there is no model.
    pub predicted: Option<f64>,
}

/// How hard to look.
#[derive(Clone, Copy, Debug)]
pub struct SearchOptions {
    /// Time only candidates predicted within this factor of the best
    /// prediction (∞: time them all).
    pub prune: f64,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self { prune: 1.5 }
    }
}

/// One timed candidate.
#[derive(Clone, Debug, Serialize)]
pub struct Timed<P> {
    /// The parameter set timed.
    pub params: P,
    /// The model's predicted seconds for it, if any.
    pub predicted: Option<f64>,
    /// Median seconds, or why the candidate could not run.
    pub seconds: Option<f64>,
    /// Why the candidate could not run (the timing closure's error), when
    /// `seconds` is `None`.
    pub error: Option<String>,
}

/// What the search found.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome<P> {
    /// The fastest parameters measured (the default when nothing beat it).
    pub best: P,
    /// The winner's measured seconds.
    pub seconds: f64,
    /// The default parameters, always timed.
    pub default: P,
    /// The default's measured seconds.
    pub default_seconds: f64,
    /// Every candidate on the shortlist, in the order timed, with its result.
    pub timed: Vec<Timed<P>>,
    /// Candidates the model ruled out.
    pub pruned: usize,
}

impl<P> Outcome<P> {
    /// The default's time over the winner's (≥ 1).
    pub fn margin(&self) -> f64 {
        self.default_seconds / self.seconds
    }
}

/// The candidates worth timing: the default, and every candidate whose
/// prediction is within `prune` of the best one (or has none).
pub fn shortlist<P: Clone + PartialEq>(default: &P, candidates: &[Candidate<P>], o: &SearchOptions) -> (Vec<Candidate<P>>, usize) {
    let best = candidates.iter().filter_map(|c| c.predicted).fold(f64::INFINITY, f64::min);
    let mut keep: Vec<Candidate<P>> = Vec::new();
    let mut pruned = 0;
    for c in candidates {
        let hopeful = c.predicted.is_none_or(|p| p <= o.prune * best);
        if keep.iter().any(|k| k.params == c.params) {
            continue;
        }
        if hopeful || c.params == *default {
            keep.push(c.clone());
        } else {
            pruned += 1;
        }
    }
    if !keep.iter().any(|k| k.params == *default) {
        keep.insert(0, Candidate { params: default.clone(), predicted: None });
    }
    (keep, pruned)
}

/// Times the shortlist with `time` and returns the fastest. A candidate
/// whose `time` fails is recorded and skipped; the default must run.
/// `progress(done, total, params)` hears of each candidate as it starts.
pub fn search<P: Clone + PartialEq>(
    default: P,
    candidates: &[Candidate<P>],
    o: &SearchOptions,
    mut time: impl FnMut(&P) -> Result<f64>,
    mut progress: impl FnMut(usize, usize, &P),
) -> Result<Outcome<P>> {
    let (list, pruned) = shortlist(&default, candidates, o);
    let mut timed = Vec::with_capacity(list.len());
    for (i, c) in list.iter().enumerate() {
        progress(i, list.len(), &c.params);
        let (seconds, error) = match time(&c.params) {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e.to_string())),
        };
        timed.push(Timed { params: c.params.clone(), predicted: c.predicted, seconds, error });
    }
    let of_default = timed.iter().find(|t| t.params == default).expect("the default is on the shortlist");
    let default_seconds = match (of_default.seconds, &of_default.error) {
        (Some(s), _) => s,
        (None, e) => return Err(Error::InvalidArgument(format!("the default parameters fail: {}", e.clone().unwrap_or_default()))),
    };
    let (best, seconds) = timed
        .iter()
        .filter_map(|t| t.seconds.map(|s| (t.params.clone(), s)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("the default ran");
    Ok(Outcome { best, seconds, default, default_seconds, timed, pruned })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cands(p: &[(u32, f64)]) -> Vec<Candidate<u32>> {
        p.iter().map(|&(params, t)| Candidate { params, predicted: Some(t) }).collect()
    }

    #[test]
    fn prunes_by_the_model_but_always_times_the_default() {
        let c = cands(&[(1, 1.0), (2, 1.2), (3, 5.0), (4, 9.0)]);
        let (list, pruned) = shortlist(&4, &c, &SearchOptions { prune: 1.5 });
        let p: Vec<u32> = list.iter().map(|c| c.params).collect();
        assert_eq!(p, vec![1, 2, 4]);
        assert_eq!(pruned, 1);
    }

    #[test]
    fn picks_the_fastest_measured_and_skips_failures() {
        let c = cands(&[(1, 1.0), (2, 1.0), (3, 1.0)]);
        let measured = |p: &u32| match p {
            1 => Ok(3.0),
            2 => Err(Error::InvalidArgument("no".into())),
            _ => Ok(2.0),
        };
        let o = search(1, &c, &SearchOptions::default(), measured, |_, _, _| {}).unwrap();
        assert_eq!((o.best, o.seconds, o.default_seconds), (3, 2.0, 3.0));
        assert_eq!(o.margin(), 1.5);
        assert!(o.timed.iter().any(|t| t.params == 2 && t.error.is_some()));
    }

    #[test]
    fn a_failing_default_is_an_error() {
        let c = cands(&[(1, 1.0), (2, 1.0)]);
        let r = search(1, &c, &SearchOptions::default(), |p| if *p == 1 { Err(Error::InvalidArgument("x".into())) } else { Ok(1.0) }, |_, _, _| {});
        assert!(r.is_err());
    }
}
