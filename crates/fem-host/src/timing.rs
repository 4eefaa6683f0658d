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

/// Backend time a reference spends warming up before it is timed. Two
/// untimed copies were not enough on an H100: the first copy probe of a
/// process, on freshly allocated buffers after seconds of host work, ran at
/// 2.1–2.5 TB/s against 2.7–3.0 in every later one, and put operators
/// above the roofline.
pub const REFERENCE_WARMUP_SECONDS: f64 = 0.05;

/// Runs `f` in doubling batches until the backend has spent `seconds` on
/// it (at most 2¹⁶ runs in all, so a nearly free `f` still ends), and
/// returns the mean time of one run in the last batch.
pub fn warm_up<B: Backend>(backend: &B, seconds: f64, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let (mut spent, mut batch, mut last) = (0.0, 1usize, 0.0);
    while spent < seconds && batch < 1 << 16 {
        let t = backend.time(&mut || (0..batch).try_for_each(|_| f()))?;
        (spent, last) = (spent + t, t / batch as f64);
        batch *= 2;
    }
    Ok(last)
}

/// Shortest timed repeat of a short operation: one launch of a few
/// microseconds timed alone is mostly the events' and the launch's
/// overhead (a copy of 10 MB measured 1.5–1.9 TB/s from one run to the
/// next, one of 700 MB 2.7–3.0).
pub const MIN_REPEAT_SECONDS: f64 = 1e-3;

/// Runs per timed repeat so that one repeat of an operation taking
/// `seconds` lasts [`MIN_REPEAT_SECONDS`] (1 to 1000).
pub fn batch_for(seconds: f64) -> usize {
    if seconds > 0.0 {
        (MIN_REPEAT_SECONDS / seconds).ceil().clamp(1.0, 1000.0) as usize
    } else {
        1000
    }
}

fn summarise(times: &mut [f64]) -> Timing {
    times.sort_by(f64::total_cmp);
    let n = times.len();
    let median = if n % 2 == 1 { times[n / 2] } else { 0.5 * (times[n / 2 - 1] + times[n / 2]) };
    Timing { median, min: times[0], max: times[n - 1], repeats: n }
}

#[cfg(test)]
mod tests {
    use super::{summarise, warm_up};
    use crate::CpuBackend;

    #[test]
    fn warm_up_runs_until_the_time_is_spent() {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let mut runs = 0usize;
        let start = std::time::Instant::now();
        let per = warm_up(&cpu, 0.02, || {
            runs += 1;
            std::thread::sleep(std::time::Duration::from_millis(1));
            Ok(())
        })
        .unwrap();
        assert!(start.elapsed().as_secs_f64() >= 0.02, "stopped before the time was spent");
        // whole doubling batches, and 31 runs of at least 1 ms are past 20 ms
        assert!((runs + 1).is_power_of_two() && runs <= 31, "{runs} runs");
        assert!(per >= 1e-3, "the mean of the last batch, each run at least 1 ms: {per}");
        let mut free = 0usize;
        warm_up(&cpu, 1e9, || {
            free += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(free, (1 << 16) - 1, "a free closure stops at the run limit");
    }

    #[test]
    fn batches_last_a_millisecond() {
        use super::batch_for;
        assert_eq!(batch_for(2e-3), 1);
        assert_eq!(batch_for(1e-3), 1);
        assert_eq!(batch_for(2.4e-4), 5);
        assert_eq!(batch_for(1e-5), 100);
        assert_eq!(batch_for(1e-9), 1000);
        assert_eq!(batch_for(0.0), 1000);
    }

    #[test]
    fn median_of_odd_and_even() {
        let t = summarise(&mut [3.0, 1.0, 2.0]);
        assert_eq!((t.median, t.min, t.max, t.repeats), (2.0, 1.0, 3.0, 3));
        assert_eq!(summarise(&mut [4.0, 1.0, 2.0, 3.0]).median, 2.5);
    }
}
