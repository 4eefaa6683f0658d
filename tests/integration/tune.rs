//! The tuner: its file, the order explicit > tuned > model, the a-priori
//! SpMV model against the formats it describes, and `auto`'s choices.

use crate::common;

use common::{cases, scratch};
use fem::host::sparse::device::prepare_cpu;
use fem::host::sparse::model::{best_params, predict, Machine, RowLengths};
use fem::host::sparse::params::SpmvParams;
use fem::host::sparse::stats::RowStats;
use fem::host::sparse::tuning::{signature, Context, Origin, Overrides};
use fem::host::sparse::SpmvFormat;
use fem::host::tune::{Tuning, TuningFile};
use fem::host::{BackendKind, CpuBackend, Scalar};
use std::process::{Command, Output};

fn cpu() -> CpuBackend {
    CpuBackend::new(Some(2)).unwrap()
}

/// An H200-like GPU and a CPU, as the model sees them.
fn gpu_machine() -> Machine {
    Machine { kind: BackendKind::Cuda, bytes_per_second: 4.0e12, resident_threads: 132 * 2048, free_bytes: None }
}

fn cpu_machine() -> Machine {
    Machine { kind: BackendKind::Cpu, bytes_per_second: 2.0e10, resident_threads: 2, free_bytes: None }
}

#[test]
fn the_tuning_file_round_trips() {
    let dir = scratch("tune-roundtrip");
    let path = dir.join("t.json");
    let mut t = Tuning::at(Some(path.clone()), "NVIDIA H200");
    assert!(t.warning.is_none() && t.file.entries.is_empty());
    let p = SpmvParams { block: 224, threshold: 64, ellt_threads: 2, csr_threads: 8 };
    t.file.insert("spmv/k2r/f64/x", &p, 1e-4, 2e-4, 12, 3);
    t.save().unwrap();
    let back = Tuning::at(Some(path.clone()), "NVIDIA H200");
    assert!(back.warning.is_none());
    assert_eq!(back.file, t.file);
    assert_eq!(back.get::<SpmvParams>("spmv/k2r/f64/x"), Some(p));
    assert_eq!(back.get::<SpmvParams>("spmv/k1/f64/x"), None);
    // nothing left beside it
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

#[test]
fn corrupt_foreign_and_old_files_are_ignored_with_a_warning() {
    let dir = scratch("tune-bad");
    let path = dir.join("t.json");
    let mut good = TuningFile::empty("NVIDIA H200");
    good.insert("k", &1u32, 1.0, 1.0, 1, 0);
    for (text, says) in [
        ("{ not json".to_string(), "is not a tuning file"),
        (String::new(), "is not a tuning file"),
        (serde_json::to_string(&TuningFile { device: "NVIDIA A100".into(), ..good.clone() }).unwrap(), "was tuned on `NVIDIA A100`"),
        (serde_json::to_string(&TuningFile { version: 99, ..good.clone() }).unwrap(), "version 99"),
    ] {
        std::fs::write(&path, text).unwrap();
        let t = Tuning::at(Some(path.clone()), "NVIDIA H200");
        let w = t.warning.expect("a warning");
        assert!(w.contains(says) && w.contains("ignored"), "{w}");
        assert!(t.file.entries.is_empty());
    }
    std::fs::write(&path, serde_json::to_string(&good).unwrap()).unwrap();
    let t = Tuning::at(Some(path), "NVIDIA H200");
    assert!(t.warning.is_none() && t.get::<u32>("k") == Some(1));
}

fn context<'a>(stats: &'a RowStats, lengths: &'a RowLengths, m: &'a Machine, tuning: Option<&'a Tuning>) -> Context<'a> {
    Context { stats, lengths, precision: "f64", value_bytes: 8, machine: Some(m), tuning }
}

#[test]
fn explicit_parameters_override_the_file_and_the_file_the_model() {
    let cpu = cpu();
    let csr = fem::host::sparse::generate::power_law::<f64>(20000, 1.0, 2.5, 4000, 1).unwrap();
    let (stats, lengths) = (RowStats::of(&csr), RowLengths::of(&csr));
    let m = gpu_machine();
    let mut tuning = Tuning::at(None, "gpu");
    let (model, origin) = context(&stats, &lengths, &m, Some(&tuning)).resolve(SpmvFormat::K2r, &Overrides::default());
    assert_eq!(origin, Origin::Model);
    assert_eq!(model, best_params(SpmvFormat::K2r, SpmvParams::a_priori(&stats), &lengths, 8, &m).unwrap().0);
    let stored = SpmvParams { block: 96, threshold: model.threshold + 3, ..model };
    tuning.file.insert(&signature(SpmvFormat::K2r, "f64", &stats), &stored, 1.0, 2.0, 5, 0);
    assert_eq!(context(&stats, &lengths, &m, Some(&tuning)).resolve(SpmvFormat::K2r, &Overrides::default()), (stored, Origin::Tuned));
    let explicit = Overrides { threshold: Some(5), ..Default::default() };
    let (p, _) = context(&stats, &lengths, &m, Some(&tuning)).resolve(SpmvFormat::K2r, &explicit);
    assert_eq!((p.threshold, p.block), (5, 96));
    // another format's or precision's entry is not this one's
    assert_eq!(context(&stats, &lengths, &m, Some(&tuning)).resolve(SpmvFormat::K2, &Overrides::default()).1, Origin::Model);
    // no machine: the rule of thumb
    let rule = Context { machine: None, ..context(&stats, &lengths, &m, None) }.resolve(SpmvFormat::K2r, &Overrides::default());
    assert_eq!(rule, (SpmvParams::a_priori(&stats), Origin::Rule));
    drop(cpu);
}

/// The model's bytes are the bytes the built format moves: its arrays and
/// the two vectors, for every format and matrix, padding included.
fn model_bytes_match_the_formats<T: Scalar>() {
    let cpu = cpu();
    let m = cpu_machine();
    for (name, csr) in cases::<T>() {
        let (stats, lengths) = (RowStats::of(&csr), RowLengths::of(&csr));
        for f in SpmvFormat::ALL.into_iter().filter(|&f| f != SpmvFormat::Cusparse) {
            for p in fem::host::sparse::model::candidates(f, SpmvParams::a_priori(&stats), &lengths, BackendKind::Cuda, false) {
                let built = prepare_cpu(&cpu, &csr, f, &p);
                match (predict(f, &p, &lengths, T::BYTES, &m), built) {
                    (Ok(pr), Ok(b)) => assert_eq!(pr.bytes, b.matrix_bytes() + 2 * csr.n_rows * T::BYTES, "{name} {f:?} {p:?}"),
                    (Err(_), Err(_)) => {}
                    (pr, b) => panic!("{name} {f:?}: model {:?}, format {:?}", pr.map(|p| p.bytes), b.map(|b| b.matrix_bytes()).map_err(|e| e.to_string())),
                }
            }
        }
    }
}

#[test]
fn model_bytes_match_the_formats_f64() {
    model_bytes_match_the_formats::<f64>();
}

#[test]
fn model_bytes_match_the_formats_f32() {
    model_bytes_match_the_formats::<f32>();
}

#[test]
fn the_model_splits_long_rows_when_rows_are_too_few_to_fill_the_gpu() {
    let cpu = cpu();
    // 3D Q4: ~300-entry rows, 20k of them on a GPU of 16 SMs: far fewer
    // rows than the 2 × 32k lanes it needs busy (the H200's 3D Q4 case
    // scaled down; the model depends on the ratio only).
    let csr = fem::host::sparse::generate::fem_matrix::<f64>(&cpu, 3, 4, 20_000, 1, false).unwrap();
    let (stats, lengths) = (RowStats::of(&csr), RowLengths::of(&csr));
    let m = Machine { resident_threads: 16 * 2048, ..gpu_machine() };
    let (p, pr) = best_params(SpmvFormat::K2r, SpmvParams::a_priori(&stats), &lengths, 8, &m).unwrap();
    assert!(p.threshold < stats.max_row / 2, "{p:?}, max row {}", stats.max_row);
    let k1 = predict(SpmvFormat::K1r, &p, &lengths, 8, &m).unwrap();
    assert!(pr.seconds < 0.7 * k1.seconds, "K2r {pr:?} K1r {k1:?}");
    // vector CSR: several threads per row of ~300 entries
    let (pc, _) = best_params(SpmvFormat::Csr, SpmvParams::a_priori(&stats), &lengths, 8, &m).unwrap();
    assert!(pc.csr_threads >= 4, "{pc:?}");
    // a power law: the warp of the longest rows would read them one entry
    // after another, so they are split
    let pl = fem::host::sparse::generate::power_law::<f64>(200_000, 2.0, 2.5, 2000, 1).unwrap();
    let (sp, lp) = (RowStats::of(&pl), RowLengths::of(&pl));
    let (pp, k2) = best_params(SpmvFormat::K2r, SpmvParams::a_priori(&sp), &lp, 8, &m).unwrap();
    assert!(pp.threshold <= sp.max_row / 8, "{pp:?}, max row {}", sp.max_row);
    assert!(k2.seconds < 0.5 * predict(SpmvFormat::K1r, &pp, &lp, 8, &m).unwrap().seconds);
    // on the CPU, rows are not split for parallelism
    let (pc, _) = best_params(SpmvFormat::K2r, SpmvParams::a_priori(&stats), &lengths, 8, &cpu_machine()).unwrap();
    assert!(pc.threshold >= p.threshold);
}

#[test]
fn auto_never_picks_a_format_that_fails_for_the_input() {
    let cpu = cpu();
    // One row of 4000 entries among short ones: ELLPACK and ELLR-T refuse
    // the padding; the CPU has no cuSPARSE.
    let csr = fem::host::sparse::generate::power_law::<f64>(20000, 1.0, 2.5, 4000, 1).unwrap();
    let (stats, lengths) = (RowStats::of(&csr), RowLengths::of(&csr));
    for (m, formats) in [(gpu_machine(), SpmvFormat::ALL.to_vec()), (cpu_machine(), SpmvFormat::ALL.to_vec())] {
        let ctx = Context { stats: &stats, lengths: &lengths, precision: "f64", value_bytes: 8, machine: Some(&m), tuning: None };
        for products in [1.0, 1e3, 1e6] {
            let (c, _) = ctx.choose(&formats, products, &Overrides::default()).unwrap();
            let f: SpmvFormat = c.storage.parse().unwrap();
            assert!(prepare_cpu(&cpu, &csr, f, &ctx.resolve(f, &Overrides::default()).0).is_ok() || (f == SpmvFormat::Cusparse && m.kind == BackendKind::Cuda), "{c:?}");
            for r in &c.ranking {
                if matches!(r.storage.as_str(), "ell" | "ellt") || (r.storage == "cusparse" && m.kind == BackendKind::Cpu) {
                    assert!(r.unavailable.is_some(), "{r:?}");
                }
            }
        }
    }
}

#[test]
fn auto_pays_for_a_conversion_only_over_enough_products() {
    let cpu = cpu();
    let csr = fem::host::sparse::generate::fem_matrix::<f64>(&cpu, 2, 2, 100_000, 1, false).unwrap();
    let (stats, lengths) = (RowStats::of(&csr), RowLengths::of(&csr));
    let m = Machine { resident_threads: 8 * 2048, ..gpu_machine() };
    let ctx = Context { stats: &stats, lengths: &lengths, precision: "f64", value_bytes: 8, machine: Some(&m), tuning: None };
    let formats = SpmvFormat::ALL;
    // Many products: a renumbered ELL-WARP format, as measured on the H200.
    let (many, _) = ctx.choose(&formats, 1e5, &Overrides::default()).unwrap();
    assert!(matches!(many.storage.as_str(), "k1r" | "k1rs" | "k2r" | "k2rs"), "{many:?}");
    // One product: the conversion does not pay, so a CSR kernel.
    let (one, _) = ctx.choose(&formats, 1.0, &Overrides::default()).unwrap();
    assert!(matches!(one.storage.as_str(), "csr" | "cusparse"), "{one:?}");
}

fn fem_cli(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fem")).env("FEM_TUNING_DIR", dir).env_remove("FEM_TUNING").args(args).output().expect("running fem")
}

fn json(out: &Output) -> serde_json::Value {
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn fem_tune_writes_the_file_that_fem_spmv_then_reads() {
    let dir = scratch("tune-cli");
    let m = ["--generate", "powerlaw:rows=20000,max=2000", "--backend", "cpu", "--repeats", "2"];
    let tuned = json(&fem_cli(&dir, &[&["tune", "spmv", "--format", "k2r", "--json"][..], &m].concat()));
    let best = tuned["tuned"][0]["outcome"]["best"].clone();
    assert!(tuned["tuned"][0]["margin"].as_f64().unwrap() >= 1.0);
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 1, "one tuning file for the CPU backend");
    // A later run reads it by itself ...
    let later = json(&fem_cli(&dir, &[&["spmv", "--format", "k2r", "--json"][..], &m].concat()));
    assert_eq!(later["params"], best);
    assert_eq!(later["origins"][0][1], "tuned");
    // ... and an explicit parameter overrides it.
    let forced = json(&fem_cli(&dir, &[&["spmv", "--format", "k2r", "--threshold", "3", "--json"][..], &m].concat()));
    assert_eq!(forced["params"]["threshold"], 3);
    // A corrupt file costs a warning, not the run.
    let path = files[0].as_ref().unwrap().path();
    std::fs::write(&path, "garbage").unwrap();
    let out = fem_cli(&dir, &[&["spmv", "--format", "k2r", "--json"][..], &m].concat());
    let v = json(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: tuning file"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(v["origins"][0][1], "model");
}

#[test]
fn fem_spmv_auto_reports_its_choice_and_ranking() {
    let dir = scratch("tune-auto");
    let out = fem_cli(&dir, &["spmv", "--generate", "fem:dim=2,degree=2,rows=20000", "--backend", "cpu", "--repeats", "2", "--json"]);
    let v = json(&out);
    let choice = &v["choice"];
    assert_eq!(choice["storage"], v["format"].as_str().unwrap().split("-t").next().unwrap());
    let ranking = choice["ranking"].as_array().unwrap();
    // every format of the CPU backend, priced (cuSPARSE is not one)
    assert_eq!(ranking.len(), SpmvFormat::ALL.len() - 1);
    assert!(ranking.iter().all(|r| r["storage"] != "cusparse" && r["product_seconds"].as_f64().unwrap() > 0.0));
}

#[test]
fn bp_tuning_needs_the_gpu_and_bad_options_are_errors() {
    let dir = scratch("tune-bp");
    let out = fem_cli(&dir, &["tune", "bp", "--backend", "cpu", "--degree", "2", "--elements", "8"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CUDA backend"));
    let out = fem_cli(&dir, &["spmv", "--generate", "fem:dim=2,degree=1,rows=100", "--backend", "cpu", "--products", "0"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn poisson_auto_prices_every_storage_and_follows_the_h200_measurements() {
    use fem::host::problem::poisson::choose_format;
    let m = Machine { bytes_per_second: 4.1e12, ..gpu_machine() };
    // `fem bench solve` on the H200 at 1M DOFs (benches/gpu/results/tune):
    // per CG iteration, LMA is fastest for Q2 in 2D and 3D, ELLPACK for Q1
    // (CSR within 5%), matrix-free 5–190× slower.
    for (dim, degree, cells, best) in [(2, 2, 500, &["lma"][..]), (3, 2, 50, &["lma"]), (2, 1, 1000, &["ell", "csr", "lazy-ell"]), (3, 1, 100, &["ell", "csr", "lazy-ell"])] {
        let c = choose_format(dim, degree, cells, 8, &m, 1e4).unwrap();
        assert!(best.contains(&c.storage.as_str()), "{dim}D Q{degree}: {c:?}");
        assert_eq!(c.ranking.len(), 5);
        assert_eq!(c.ranking.last().unwrap().storage, "matrix-free", "{c:?}");
        assert!(c.ranking.iter().all(|r| r.unavailable.is_none() && r.storage.parse::<fem::host::problem::poisson::Format>().is_ok()));
    }
    // sizes past every index range are refused, not priced
    let e = choose_format(3, 1, 1 << 20, 8, &m, 1e4).unwrap_err().to_string();
    assert!(e.contains("index range"), "{e}");
    // The SpMV choice for a matrix (say, read from a file) never offers a
    // storage that needs the mesh.
    let cpu = cpu();
    let csr = fem::host::sparse::generate::fem_matrix::<f64>(&cpu, 2, 1, 5000, 1, false).unwrap();
    let (stats, lengths) = (RowStats::of(&csr), RowLengths::of(&csr));
    let (c, _) = context(&stats, &lengths, &m, None).choose(&SpmvFormat::ALL, 1e3, &Overrides::default()).unwrap();
    assert!(c.ranking.iter().all(|r| !matches!(r.storage.as_str(), "lma" | "matrix-free" | "lazy-ell")));
}

#[test]
fn fem_solve_auto_solves_in_the_chosen_format() {
    let dir = scratch("tune-solve");
    let v = json(&fem_cli(&dir, &["solve", "--dim", "2", "--degree", "2", "--cells", "12", "--format", "auto", "--backend", "cpu", "--json"]));
    assert_eq!(v["format"], v["choice"]["storage"]);
    assert!(v["l2_error"].as_f64().unwrap() < 1e-3 && v["relative_residual"].as_f64().unwrap() < 1e-9);
    let out = fem_cli(&dir, &["solve", "--format", "auto", "--backend", "cpu", "--products", "0"]);
    assert_eq!(out.status.code(), Some(1));
}

/// Every shipped seed parses as this version's tuning file of its device,
/// and its entries deserialise as the launches their signatures name.
#[test]
fn shipped_seeds_parse_as_the_launches_they_name() {
    use fem::host::operator::pointwise::Transposition;
    use fem::host::operator::tensor::tuning::BpLaunch;
    use fem::host::tune::{seed_for, seeded_devices};
    let mut devices = 0;
    for device in seeded_devices() {
        let seed = seed_for(device);
        assert_eq!(seed.device, device);
        assert!(!seed.entries.is_empty(), "{device}: no entries");
        for key in seed.entries.keys() {
            let ok = if key.starts_with("bp/") {
                seed.get::<BpLaunch>(key).is_some()
            } else if key.starts_with("residual/") {
                seed.get::<Transposition>(key).is_some()
            } else {
                false
            };
            assert!(ok, "{device}: `{key}` is not a launch of its operation");
        }
        devices += 1;
    }
    assert!(devices >= 2);
    assert!(seed_for("some other GPU").entries.is_empty());
}

/// Lookups: the user's file first, then the device's shipped entries; a
/// tuning opened without a file (`at`) has no seed.
#[test]
fn the_users_file_wins_over_the_shipped_seed() {
    use fem::host::operator::tensor::tuning::BpLaunch;
    use fem::host::tune::seed_for;
    let device = "NVIDIA H100 80GB HBM3";
    let seed = seed_for(device);
    let key = seed.entries.keys().find(|k| k.starts_with("bp/")).expect("an H100 BP seed").clone();
    let seeded: BpLaunch = seed.get(&key).unwrap();
    let mut t = Tuning::at(None, device);
    assert!(t.get::<BpLaunch>(&key).is_none());
    t.seed = seed;
    assert_eq!(t.get::<BpLaunch>(&key), Some(seeded));
    let mine = BpLaunch { threads_3d: false, elements_per_block: seeded.elements_per_block + 1, min_warps: 24, column: None, ring: 0, recompute: false };
    t.file.insert(&key, &mine, 1e-4, 2e-4, 3, 0);
    assert_eq!(t.get::<BpLaunch>(&key), Some(mine));
}
