//! A command's wall time split by stage (mesh, DOF numbering, sparsity,
//! uploads, solve, error, output): what a user waits for, of which the
//! device's kernels are often the smallest part.

use serde::Serialize;
use std::sync::Mutex;
use std::time::Instant;

/// Wall seconds spent in one stage.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageSeconds {
    /// What the stage does.
    pub stage: String,
    /// Its wall time, device work it waited for included.
    pub seconds: f64,
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
            match self.done.iter_mut().find(|s| s.stage == stage) {
                Some(s) => s.seconds += seconds,
                None => self.done.push(StageSeconds { stage, seconds }),
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

/// Text form: each stage with its seconds, the largest first, and their sum.
pub fn describe(stages: &[StageSeconds]) -> String {
    let mut sorted: Vec<&StageSeconds> = stages.iter().collect();
    sorted.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    let total = stages.iter().fold(0.0, |t, s| t + s.seconds);
    let parts: Vec<String> = sorted.iter().map(|s| format!("{} {:.3}", s.stage, s.seconds)).collect();
    format!("{:.3} s by stage: {}", total, parts.join(", "))
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
        assert_eq!(*shown.lock().unwrap(), ["a", "b", "a"]);
        // finishing again adds nothing: no stage is running
        assert_eq!(clock.finish(), st);
        let text = describe(&st);
        assert!(text.find("a ").unwrap() < text.find("b ").unwrap(), "largest first: {text}");
    }

    #[test]
    fn a_clock_never_started_reports_nothing() {
        assert!(StageClock::new(&|_| {}).finish().is_empty());
        assert_eq!(describe(&[]), "0.000 s by stage: ");
    }
}
