//! Repeated measurements. Performance figures are medians over repeats
//! after warm-up runs, timed by the backend (CUDA events on the GPU).

use crate::{Backend, Result};
use serde::Serialize;

/// Summary of repeated timings, in seconds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Timing {
    /// Median over the timed repeats (the mean of the middle two for an even count).
    pub median: f64,
    /// Fastest repeat.
    pub min: f64,
    /// Slowest repeat.
    pub max: f64,
    /// Number of timed repeats (warm-up runs excluded; at least 1).
    pub repeats: usize,
}

/// Runs `f` `warmup` times untimed, then `repeats` times timed by the
/// backend, and summarises.
pub fn measure<B: Backend>(backend: &B, warmup: usize, repeats: usize, f: impl FnMut() -> Result<()>) -> Result<Timing> {
    measure_batched(backend, warmup, repeats, 1, f)
}

/// As [`measure`], each timed repeat running `f` `batch` times back to
/// back and counting the mean: launches then queue behind running work
/// as they do inside a solver, so the time of an operation made of
/// several launches no longer includes the host's latency before each.
pub fn measure_batched<B: Backend>(backend: &B, warmup: usize, repeats: usize, batch: usize, mut f: impl FnMut() -> Result<()>) -> Result<Timing> {
    for _ in 0..warmup {
        f()?;
    }
    backend.synchronize()?;
    let batch = batch.max(1);
    let mut times = Vec::with_capacity(repeats.max(1));
    for _ in 0..repeats.max(1) {
        let t = backend.time(&mut || (0..batch).try_for_each(|_| f()))?;
        times.push(t / batch as f64);
    }
    Ok(summarise(&mut times))
}

fn summarise(times: &mut [f64]) -> Timing {
    times.sort_by(f64::total_cmp);
    let n = times.len();
    let median = if n % 2 == 1 { times[n / 2] } else { 0.5 * (times[n / 2 - 1] + times[n / 2]) };
    Timing { median, min: times[0], max: times[n - 1], repeats: n }
}

#[cfg(test)]
mod tests {
    use super::summarise;

    #[test]
    fn median_of_odd_and_even() {
        let t = summarise(&mut [3.0, 1.0, 2.0]);
        assert_eq!((t.median, t.min, t.max, t.repeats), (2.0, 1.0, 3.0, 3));
        assert_eq!(summarise(&mut [4.0, 1.0, 2.0, 3.0]).median, 2.5);
    }
}
