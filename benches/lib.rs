//! Benchmarks of fem live in `benches/`; run them with
//! `cargo bench -p fem-benches`.
