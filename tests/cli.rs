//! The `fem` binary: output formats and exit codes (0 ok, 1 error, 2 usage).

use std::process::{Command, Output};

fn fem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fem")).args(args).output().expect("running fem")
}

fn has_gpu() -> bool {
    fem::host::backend::cuda::device_count().is_ok_and(|n| n > 0)
}

#[test]
fn info_json_lists_backends_and_ptx() {
    let out = fem(&["info", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let backends = v["backends"].as_array().unwrap();
    assert_eq!(backends[0]["name"], "cpu");
    assert_eq!(backends[0]["available"], true);
    assert_eq!(backends[1]["name"], "cuda");
    assert_eq!(backends[1]["available"], has_gpu() && fem::KERNELS_PTX.is_built());
    assert_eq!(v["ptx"]["kernel_crate"], "fem-kernels");
    let targets = v["ptx"]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), fem::KERNELS_PTX.sources.len());
    if let Some(t) = targets.first() {
        assert!(t["kernels"].as_array().unwrap().iter().any(|k| k == "fem_dot_partial_f64"));
    }
}

#[test]
fn info_text_names_the_ptx_targets() {
    let out = fem(&["info"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("backends:") && text.contains("cpu   available"));
    for s in fem::KERNELS_PTX.sources {
        assert!(text.contains(&format!("embedded PTX: fem-kernels for {}", s.arch)), "{text}");
    }
}

#[test]
fn cpu_demo_passes_and_reports_bandwidth() {
    let out = fem(&["demo", "--backend", "cpu", "--size", "100003", "--repeats", "3", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["passed"], true);
    assert_eq!(v["backend"], "cpu");
    assert_eq!(v["n"], 100003);
    assert!(v["copy"]["bytes_per_second"].as_f64().unwrap() > 0.0);
    assert_eq!(v["ops"].as_array().unwrap().len(), 5);
}

#[test]
fn cpu_demo_text_in_single_precision() {
    let out = fem(&["demo", "--backend", "cpu", "--size", "4097", "--repeats", "2", "--precision", "f32"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("f32 vectors of 4097 elements") && text.contains("all results agree"), "{text}");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(fem(&["demo", "--backend", "opencl"]).status.code(), Some(2));
    assert_eq!(fem(&["demo", "--repeats", "0"]).status.code(), Some(2));
    assert_eq!(fem(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(fem(&[]).status.code(), Some(2));
}

#[test]
fn errors_exit_1_with_a_message() {
    let out = fem(&["demo", "--backend", "cpu", "--size", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: invalid argument"));
    if !has_gpu() {
        let out = fem(&["demo", "--backend", "cuda"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("CUDA is not available"));
    }
}

#[test]
fn help_has_examples() {
    let out = fem(&["demo", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("fem demo --backend cpu"));
}
