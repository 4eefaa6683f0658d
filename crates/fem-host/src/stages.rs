//! A command's wall time split by stage (mesh, DOF numbering, sparsity,
//! uploads, solve, error, output): what a user waits for, of which the
//! device's kernels are often the smallest part.

use serde::Serialize;
use std::sync::Mutex;
use std::time::Instant;

/// Wall seconds spent in one stage, and the host memory at its end.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageSeconds {
    /// What the stage does.
    pub stage: String,
    /// Its wall time, device work it waited for included.
    pub seconds: f64,
    /// The process's resident memory when the stage ended: what the
    /// stages so far hold. Absent for a stage not timed by a clock (a
    /// solve's phases) or where the system does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<usize>,
    /// The process's peak resident memory when the stage ended: the
    /// first stage that reaches the command's peak is where it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<usize>,
}

impl StageSeconds {
    /// `seconds` of `stage`, its memory not read.
    pub fn new(stage: impl Into<String>, seconds: f64) -> Self {
        Self { stage: stage.into(), seconds, rss_bytes: None, peak_rss_bytes: None }
    }

    /// `seconds` of `stage`, which ends now: its memory read.
    pub fn ended(stage: impl Into<String>, seconds: f64) -> Self {
        let (rss_bytes, peak_rss_bytes) = crate::memory::resident_bytes().unzip();
        Self { rss_bytes, peak_rss_bytes, ..Self::new(stage, seconds) }
    }
}

/// Receives the name of each stage as it starts (a progress display).
pub type Show<'a> = &'a (dyn Fn(&str) + Sync);

/// Times consecutive stages: starting one ends the one before. A stage
/// started again adds to its first entry, so the list keeps the order in
/// which stages first ran.
pub struct StageClock<'a> {
    show: Show<'a>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    done: Vec<StageSeconds>,
    running: Option<(String, Instant)>,
}

impl State {
    fn close(&mut self, now: Instant) {
        if let Some((stage, start)) = self.running.take() {
            let seconds = now.duration_since(start).as_secs_f64();
            let ended = StageSeconds::ended(stage, seconds);
            match self.done.iter_mut().find(|s| s.stage == ended.stage) {
                Some(s) => *s = StageSeconds { seconds: s.seconds + seconds, ..ended },
                None => self.done.push(ended),
            }
        }
    }
}

impl<'a> StageClock<'a> {
    /// A clock showing each stage's name to `show` as it starts.
    pub fn new(show: Show<'a>) -> Self {
        Self { show, state: Mutex::new(State::default()) }
    }

    /// Ends the running stage and starts `stage`.
    pub fn start(&self, stage: &str) {
        let now = Instant::now();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.close(now);
        s.running = Some((stage.to_string(), now));
        drop(s);
        (self.show)(stage);
    }

    /// Ends the running stage and returns every stage's time.
    pub fn finish(&self) -> Vec<StageSeconds> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.close(Instant::now());
        s.done.clone()
    }
}

/// Times consecutive stages by their ends, for code that names a stage
/// as it finishes: each lap closes the time since the one before (or the
/// start) as a stage, with the host memory at its end.
pub struct Laps {
    start: Instant,
    last: Instant,
    done: Vec<StageSeconds>,
}

impl Default for Laps {
    fn default() -> Self {
        Self::new()
    }
}

impl Laps {
    /// No stages yet; the time starts now.
    pub fn new() -> Self {
        let now = Instant::now();
        Self { start: now, last: now, done: Vec::new() }
    }

    /// The time since the last lap as stage `stage`.
    pub fn lap(&mut self, stage: &str) {
        let now = Instant::now();
        self.done.push(StageSeconds::ended(stage, now.duration_since(self.last).as_secs_f64()));
        self.last = now;
    }

    /// Moves `seconds` of the last stage into a stage of its own, `stage`
    /// (a part the stage's work timed itself), which ended with it.
    pub fn split_last(&mut self, stage: &str, seconds: f64) {
        let part = match self.done.last_mut() {
            Some(last) => {
                last.seconds -= seconds;
                StageSeconds { stage: stage.to_string(), seconds, ..last.clone() }
            }
            None => StageSeconds::ended(stage, seconds),
        };
        self.done.push(part);
    }

    /// Adds `stage`, timed by the work itself inside a later stage (the
    /// levels a solve makes once its finest level is on the backend):
    /// the laps' time goes on from the last lap.
    pub fn push(&mut self, stage: StageSeconds) {
        self.done.push(stage);
    }

    /// The stages so far.
    pub fn stages(&self) -> &[StageSeconds] {
        &self.done
    }

    /// The stages, ending the laps.
    pub fn into_stages(self) -> Vec<StageSeconds> {
        self.done
    }

    /// Seconds since the laps began.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}

/// Text form: each stage with its seconds, the largest first, and their sum.
pub fn describe(stages: &[StageSeconds]) -> String {
    let mut sorted: Vec<&StageSeconds> = stages.iter().collect();
    sorted.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    let total = stages.iter().fold(0.0, |t, s| t + s.seconds);
    let parts: Vec<String> = sorted.iter().map(|s| format!("{} {:.3}", s.stage, s.seconds)).collect();
    let mut text = format!("{:.3} s by stage: {}", total, parts.join(", "));
    if let Some((peak, stage)) = peak(stages) {
        text += &format!("; host memory peak {:.2} GB, reached in {stage}", peak as f64 / 1e9);
    }
    text
}

/// The highest peak resident memory the stages read, and the first stage
/// that reached it.
pub fn peak(stages: &[StageSeconds]) -> Option<(usize, &str)> {
    let top = stages.iter().filter_map(|s| s.peak_rss_bytes).max()?;
    stages.iter().find(|s| s.peak_rss_bytes == Some(top)).map(|s| (top, s.stage.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn stages_are_timed_in_order_and_repeats_add_up() {
        let shown = Mutex::new(Vec::new());
        let show = |s: &str| shown.lock().unwrap().push(s.to_string());
        let clock = StageClock::new(&show);
        clock.start("a");
        std::thread::sleep(Duration::from_millis(20));
        clock.start("b");
        std::thread::sleep(Duration::from_millis(5));
        clock.start("a");
        std::thread::sleep(Duration::from_millis(20));
        let st = clock.finish();
        assert_eq!(st.iter().map(|s| s.stage.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert!(st[0].seconds >= 0.04, "both runs of a counted: {}", st[0].seconds);
        assert!(st[1].seconds >= 0.005 && st[1].seconds < st[0].seconds, "{st:?}");
        if crate::memory::resident_bytes().is_some() {
            for s in &st {
                let (rss, peak) = (s.rss_bytes.unwrap(), s.peak_rss_bytes.unwrap());
                assert!(rss > 0 && peak >= rss, "{s:?}");
            }
            assert!(st[1].peak_rss_bytes <= st[0].peak_rss_bytes, "a's second run ended last: {st:?}");
        }
        assert_eq!(*shown.lock().unwrap(), ["a", "b", "a"]);
        // finishing again adds nothing: no stage is running
        assert_eq!(clock.finish(), st);
        let text = describe(&st);
        assert!(text.find("a ").unwrap() < text.find("b ").unwrap(), "largest first: {text}");
        assert_eq!(text.contains("host memory peak"), crate::memory::resident_bytes().is_some(), "{text}");
    }

    #[test]
    fn the_peak_is_the_first_stage_that_reached_the_highest() {
        let at = |stage: &str, peak: Option<usize>| StageSeconds { peak_rss_bytes: peak, ..StageSeconds::new(stage, 1.0) };
        let st = [at("mesh", Some(10)), at("solve", None), at("uploads", Some(30)), at("output", Some(30))];
        assert_eq!(peak(&st), Some((30, "uploads")));
        assert_eq!(peak(&st[..2]), Some((10, "mesh")));
        assert_eq!(peak(&st[1..2]), None);
        assert!(describe(&st).ends_with("; host memory peak 0.00 GB, reached in uploads"), "{}", describe(&st));
        assert!(!describe(&st[1..2]).contains("peak"));
    }

    #[test]
    fn laps_close_the_time_since_the_last_and_a_part_splits_off() {
        let mut laps = Laps::new();
        std::thread::sleep(Duration::from_millis(20));
        laps.lap("mesh");
        std::thread::sleep(Duration::from_millis(5));
        laps.lap("pattern");
        laps.split_last("pattern, on the device", 0.002);
        let st = laps.stages();
        assert_eq!(st.iter().map(|s| s.stage.as_str()).collect::<Vec<_>>(), ["mesh", "pattern", "pattern, on the device"]);
        assert!(st[0].seconds >= 0.02 && st[1].seconds >= 0.003 && st[1].seconds < st[0].seconds, "{st:?}");
        assert_eq!((st[2].seconds, st[2].rss_bytes), (0.002, st[1].rss_bytes));
        let sum: f64 = st.iter().map(|s| s.seconds).sum();
        assert!(laps.elapsed() >= sum && sum >= 0.025, "{sum} of {}", laps.elapsed());
        if crate::memory::resident_bytes().is_some() {
            assert!(st.iter().all(|s| s.peak_rss_bytes.unwrap() >= s.rss_bytes.unwrap()));
        }
        let mut none = Laps::default();
        none.split_last("alone", 0.5);
        assert_eq!(none.into_stages()[0].seconds, 0.5);
    }

    #[test]
    fn a_clock_never_started_reports_nothing() {
        assert!(StageClock::new(&|_| {}).finish().is_empty());
        assert_eq!(describe(&[]), "0.000 s by stage: ");
    }
}
