//! `fem bench`: each suite writes its JSON, Markdown and PNG charts, and
//! refuses what it cannot run.

use crate::common::fem;
use std::path::PathBuf;

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fem-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn is_png(p: &std::path::Path) -> bool {
    std::fs::read(p).is_ok_and(|b| b.len() > 1000 && b.starts_with(b"\x89PNG\r\n\x1a\n"))
}

fn run(suite: &str, extra: &[&str]) -> (PathBuf, serde_json::Value) {
    let dir = out_dir(suite);
    let d = dir.to_str().unwrap();
    let out = fem(&[&["bench", suite, "--backend", "cpu", "--repeats", "2", "--out", d, "--json"][..], extra].concat());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join(format!("{suite}.json"))).unwrap()).unwrap();
    assert_eq!(v, file);
    let md = std::fs::read_to_string(dir.join(format!("{suite}.md"))).unwrap();
    let whole = v["points"].as_array().unwrap().iter().filter(|p| p.get("whole").is_some()).count();
    let rows = md.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| group") && !l.starts_with("| matrix") && !l.starts_with("| case")).count();
    assert_eq!(rows, v["points"].as_array().unwrap().len() + v["a_priori"].as_array().unwrap().len() + whole);
    // no temporary file left behind
    assert!(std::fs::read_dir(&dir).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with(".tmp")));
    (dir, v)
}

#[test]
fn spmv_suite_measures_every_format_and_checks_the_model() {
    let (dir, v) = run("spmv", &["--size", "3000", "--degrees", "1,2"]);
    let points = v["points"].as_array().unwrap();
    // 2 dimensions × 2 degrees × the 9 formats of the CPU backend
    assert_eq!(points.len(), 2 * 2 * 9);
    assert!(points.iter().all(|p| p["throughput"].as_f64().unwrap() > 0.0 && p["intensity"].as_f64().unwrap() > 0.0));
    let checks = v["a_priori"].as_array().unwrap();
    assert_eq!(checks.len(), 4);
    assert!(checks.iter().all(|c| c["slower_by"].as_f64().unwrap() >= 0.0));
    for f in ["spmv-throughput-2d.png", "spmv-throughput-3d.png", "spmv-roofline.png"] {
        assert!(is_png(&dir.join(f)), "{f}");
    }
}

#[test]
fn bp_and_solve_suites_chart_against_degree() {
    let (dir, v) = run("bp", &["--size", "3000", "--degrees", "1-2"]);
    assert_eq!(v["points"].as_array().unwrap().len(), 3 * 2);
    assert!(is_png(&dir.join("bp-throughput.png")) && is_png(&dir.join("bp-roofline.png")));
    let (dir, v) = run("solve", &["--size", "400", "--degrees", "1"]);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2 * 5, "2D and 3D, five formats");
    assert!(points.iter().all(|p| p["throughput"].as_f64().unwrap() > 0.0));
    assert!(is_png(&dir.join("solve-throughput-2d.png")));
    assert!(!dir.join("solve-roofline.png").exists(), "no flop counts, no roofline chart");
    // every solve keeps its residual history, falling to the tolerance, and is charted
    for p in points {
        let h: Vec<f64> = p["history"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert!(h.len() >= 2 && h[0] == 1.0 && *h.last().unwrap() <= 1e-8, "{h:?}");
    }
    assert!(is_png(&dir.join("solve-convergence-2d.png")) && is_png(&dir.join("solve-convergence-3d.png")));
    let (dir, v) = run("bp", &["--size", "3000", "--degrees", "1"]);
    assert!(v["points"][0].get("history").is_none() && !dir.join("bp-convergence.png").exists());
}

#[test]
fn bench_refuses_what_it_cannot_run() {
    let dir = out_dir("bad");
    let d = dir.to_str().unwrap();
    for (args, says) in [
        (vec!["bench", "nonsense", "--backend", "cpu", "--out", d], "unknown suite"),
        (vec!["bench", "residual", "--backend", "cpu", "--degrees", "3", "--out", d], "degrees 1 and 2"),
        (vec!["bench", "bp", "--backend", "cpu", "--precision", "f32", "--out", d], "f64 only"),
        (vec!["bench", "spmv", "--backend", "cpu", "--degrees", "0", "--out", d], "positive"),
    ] {
        let out = fem(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(!dir.exists() || std::fs::read_dir(&dir).unwrap().next().is_none(), "nothing written on error");
}

#[test]
fn residual_suite_reports_both_physics_in_both_dimensions() {
    let dir = out_dir("residual");
    let d = dir.to_str().unwrap();
    let out = fem(&["bench", "residual", "--backend", "cpu", "--size", "3000", "--degrees", "1", "--repeats", "1", "--out", d, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("residual.json")).unwrap()).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    for (series, group) in [("poisson", "2D"), ("poisson", "3D"), ("elasticity", "2D"), ("elasticity", "3D")] {
        let p = points.iter().find(|p| p["series"] == series && p["group"] == group).unwrap();
        assert!(p["gflops"].as_f64().unwrap() > 0.0 && p["roofline_fraction"].as_f64().unwrap() > 0.0);
    }
    assert!(is_png(&dir.join("residual-roofline.png")));
}

/// Whole commands, each in its own process: the stages a command reports
/// fall inside the wall time measured around it, its work (assembly and
/// solve) too, its peak memory is read, and the stages are charted.
#[test]
fn e2e_suite_times_whole_commands() {
    let (dir, v) = run("e2e", &["--size", "3000"]);
    let points = v["points"].as_array().unwrap();
    let series: Vec<&str> = points.iter().map(|p| p["series"].as_str().unwrap()).collect();
    assert_eq!(series, ["Q1 ELLPACK", "Q2 auto", "hole SPAI-MG"]);
    for p in points {
        let (w, wall) = (&p["whole"], p["seconds"].as_f64().unwrap());
        let stages: Vec<f64> = w["stages"].as_array().unwrap().iter().map(|s| s[1].as_f64().unwrap()).collect();
        // the command's own stages and what lies outside them make up the wall time
        assert!((stages.iter().sum::<f64>() - wall).abs() <= 1e-9 * wall, "{p}");
        assert!(stages.windows(2).all(|s| s[0] >= s[1]), "largest stage first: {p}");
        let work = w["work_seconds"].as_f64().unwrap();
        assert!(work > 0.0 && work < wall && w["peak_rss_bytes"].as_u64().unwrap() > 1 << 20, "{p}");
        assert!(p["dofs"].as_u64().unwrap() > 1000 && w["command"].as_str().unwrap().starts_with("solve --problem"));
    }
    let names = |p: &serde_json::Value| -> Vec<String> { p["whole"]["stages"].as_array().unwrap().iter().map(|s| s[0].as_str().unwrap().to_string()).collect() };
    assert!(names(&points[0]).iter().any(|n| n == "DOF numbering"), "the Poisson command reports its stages");
    for stage in ["mesh hierarchy", "coarse levels", "preconditioner", "solve", "output"] {
        assert!(names(&points[2]).iter().any(|n| n == stage), "the hole command reports its {stage}");
    }
    assert!(is_png(&dir.join("e2e-stages.png")));
    assert!(!dir.join("e2e-throughput.png").exists());
}
