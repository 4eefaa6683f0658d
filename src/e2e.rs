//! `fem bench e2e`: whole commands as a user runs them, from start to the
//! solution written, against the device work inside them. Each case is
//! `fem solve` in a child process (so its peak memory is its own, and no
//! state of one case warms the next): its wall time, its peak resident
//! host memory and the seconds its own report gives by stage and to the
//! assembly and the solve.

use crate::bench::{BenchOptions, BenchResult, Point, SuiteReport};
use serde::Serialize;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

/// What one whole command took beyond a suite point's figures.
#[derive(Clone, Debug, Serialize)]
pub struct WholeCommand {
    /// The arguments after `fem`.
    pub command: String,
    /// Assembly plus solve as the command measured them (device time on
    /// the GPU): the work the rest of the wall time serves.
    pub work_seconds: f64,
    /// Wall time over the work.
    pub wall_over_work: f64,
    /// Peak resident host memory of the command.
    pub peak_rss_bytes: u64,
    /// The command's stages, largest first (empty where it reports none).
    pub stages: Vec<(String, f64)>,
}

/// One case: its label, degree and `fem solve` arguments.
struct Case {
    series: &'static str,
    degree: usize,
    args: Vec<String>,
}

/// The cases at about `dofs` unknowns: 3D Q1 in ELLPACK, 3D Q2 in the
/// automatic format (half the DOFs), both Jacobi-CG to 1e-8, and the hole
/// problem's SPAI multigrid at the level nearest `dofs`.
fn cases(dofs: usize, backend: &str, f32: bool) -> Vec<Case> {
    let common = |extra: &str| -> Vec<String> {
        let mut a: Vec<String> = extra.split_whitespace().map(String::from).collect();
        a.extend(["--backend".into(), backend.into(), "--json".into()]);
        if f32 {
            a.extend(["--precision".into(), "f32".into()]);
        }
        a
    };
    // the hole mesh has 6.29M DOFs at 9 levels, each level four times
    // the one below
    let levels = (9.0 + (dofs as f64 / 6.29e6).log(4.0)).round().clamp(3.0, 12.0) as usize;
    vec![
        Case { series: "Q1 ELLPACK", degree: 1, args: common(&format!("solve --problem poisson --dim 3 --degree 1 --dofs {dofs} --format ell --rtol 1e-8")) },
        Case { series: "Q2 auto", degree: 2, args: common(&format!("solve --problem poisson --dim 3 --degree 2 --dofs {} --format auto --rtol 1e-8", dofs / 2)) },
        Case { series: "hole SPAI-MG", degree: 1, args: common(&format!("solve --problem hole --dim 2 --degree 1 --levels {levels} --solver mg --precond spai --ordering xyz")) },
    ]
}

/// Runs every case with the program running now (the `fem` command) on
/// the backend of `r`, `gpu` or not.
pub fn run(o: &BenchOptions, gpu: bool, r: &mut SuiteReport, progress: &dyn Fn(&str, Option<(usize, usize)>)) -> BenchResult<()> {
    r.throughput_unit = "DOF/s end to end";
    let program = std::env::current_exe()?;
    let dofs = o.size.unwrap_or(if gpu { 8_000_000 } else { 200_000 });
    let cases = cases(dofs, if gpu { "cuda" } else { "cpu" }, o.f32);
    for (i, case) in cases.iter().enumerate() {
        progress(case.series, Some((i, cases.len())));
        let (wall, rss, out) = timed(&program, &case.args)?;
        let report: serde_json::Value = serde_json::from_str(&out).map_err(|e| format!("`fem {}` wrote no JSON report ({e})", case.args.join(" ")))?;
        let num = |k: &str| report.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
        let dofs = num("dofs") as usize;
        let work = num("assembly_seconds") + num("solve_seconds");
        let stages = stages(&report, wall);
        r.points.push(Point {
            group: String::new(),
            series: case.series.into(),
            degree: case.degree,
            dofs,
            seconds: wall,
            throughput: dofs as f64 / wall,
            gbytes_per_second: None,
            roofline_fraction: None,
            gflops: None,
            intensity: None,
            history: None,
            whole: Some(WholeCommand { command: case.args.join(" "), work_seconds: work, wall_over_work: wall / work.max(f64::MIN_POSITIVE), peak_rss_bytes: rss, stages }),
        });
    }
    Ok(())
}

/// The stages a command's `report` lists, largest first, and the rest of
/// the wall time `wall` measured around it (start-up, exit, what no stage
/// covers).
fn stages(report: &serde_json::Value, wall: f64) -> Vec<(String, f64)> {
    let listed = report.get("stages").and_then(|s| s.as_array()).map_or(&[][..], |s| s.as_slice());
    let mut out: Vec<(String, f64)> = listed.iter().filter_map(|s| Some((s.get("stage")?.as_str()?.to_string(), s.get("seconds")?.as_f64()?))).collect();
    let rest = wall - out.iter().map(|s| s.1).sum::<f64>();
    if rest > 0.0 {
        out.push(("outside the stages".into(), rest));
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// The stages of at least 3 % of their sum, the rest summed into one:
/// what a chart can show apart.
pub fn major_stages(stages: &[(String, f64)]) -> Vec<(String, f64)> {
    let total: f64 = stages.iter().map(|s| s.1).sum();
    let (mut major, minor): (Vec<_>, Vec<_>) = stages.iter().cloned().partition(|s| s.1 >= 0.03 * total);
    if !minor.is_empty() {
        major.push(("other stages".into(), minor.iter().map(|s| s.1).sum()));
    }
    major
}

/// Runs `program args`: its wall time, peak resident memory (bytes) and
/// standard output, or an error with the end of its standard error.
fn timed(program: &std::path::Path, args: &[String]) -> BenchResult<(f64, u64, String)> {
    let t = Instant::now();
    let mut child = Command::new(program).args(args).env("FEM_TUNING", "off").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let drain = |mut s: Box<dyn Read + Send>| std::thread::spawn(move || {
        let mut out = String::new();
        s.read_to_string(&mut out).map(|_| out)
    });
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let (status, rss) = wait_with_peak_memory(child.id())?;
    let wall = t.elapsed().as_secs_f64();
    let (out, err) = (out.join().map_err(|_| "reading the output failed")??, err.join().map_err(|_| "reading the errors failed")??);
    if !status {
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        return Err(format!("`fem {}` failed: {}", args.join(" "), tail.into_iter().rev().collect::<Vec<_>>().join(" / ")).into());
    }
    Ok((wall, rss, out))
}

/// Waits for child `pid`: whether it succeeded and its peak resident
/// memory in bytes (`wait4`'s resource usage; std's `wait` gives none).
fn wait_with_peak_memory(pid: u32) -> BenchResult<(bool, u64)> {
    let mut status = 0;
    // SAFETY: rusage is plain data the call fills; pid is our own child,
    // not waited for elsewhere.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) } < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    Ok((ok, usage.ru_maxrss.max(0) as u64 * 1024))
}

/// The Markdown table of the whole commands.
pub fn markdown(r: &SuiteReport) -> String {
    let mut s = "\n## Whole commands\n\n| case | DOFs | wall s | work s | wall / work | peak RSS GB | B/DOF | largest stages (s) |\n|---|---|---|---|---|---|---|---|\n".to_string();
    for p in &r.points {
        let Some(w) = &p.whole else { continue };
        let top: Vec<String> = w.stages.iter().take(4).map(|(n, t)| format!("{n} {t:.2}")).collect();
        s += &format!(
            "| {} | {} | {:.2} | {:.3} | {:.1} | {:.2} | {:.0} | {} |\n",
            p.series,
            p.dofs,
            p.seconds,
            w.work_seconds,
            w.wall_over_work,
            w.peak_rss_bytes as f64 / 1e9,
            w.peak_rss_bytes as f64 / p.dofs.max(1) as f64,
            top.join(", ")
        );
    }
    s += "\nEach case: `fem <command>`, timed from start to exit. Work: the command's own assembly and solve seconds (device time on the GPU).\n";
    s += &r.points.iter().filter_map(|p| Some(format!("- {}: `fem {}`\n", p.series, p.whole.as_ref()?.command))).collect::<String>();
    s
}
