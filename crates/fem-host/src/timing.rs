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
pub fn measure<B: Backend>(backend: &B, warmup: usize, repeats: usize, mut f: impl FnMut() -> Result<()>) -> Result<Timing> {
    for _ in 0..warmup {
        f()?;
    }
    backend.synchronize()?;
    let mut times = Vec::with_capacity(repeats.max(1));
    for _ in 0..repeats.max(1) {
        times.push(backend.time(&mut f)?);
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
