//! CPU backend BLAS-1 throughput (bytes read + written per second), with
//! the backend's own copy as the roofline of the same bytes.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fem_host::conformance::values;
use fem_host::{Backend, CpuBackend};

fn blas(c: &mut Criterion) {
    let cpu = CpuBackend::new(None).expect("CPU backend");
    let mut group = c.benchmark_group("cpu_blas_f64");
    for n in [1usize << 16, 1 << 20, 1 << 23] {
        let x = values::<f64>(n, 1);
        let mut y = values::<f64>(n, 2);
        let bytes = 8 * n as u64;
        group.throughput(Throughput::Bytes(2 * bytes));
        group.bench_with_input(BenchmarkId::new("copy", n), &n, |b, _| b.iter(|| cpu.copy(&x, &mut y).unwrap()));
        group.throughput(Throughput::Bytes(3 * bytes));
        group.bench_with_input(BenchmarkId::new("axpy", n), &n, |b, _| b.iter(|| cpu.axpy(1e-9, &x, &mut y).unwrap()));
        group.throughput(Throughput::Bytes(2 * bytes));
        group.bench_with_input(BenchmarkId::new("dot", n), &n, |b, _| b.iter(|| cpu.dot(&x, &y).unwrap()));
        group.throughput(Throughput::Bytes(bytes));
        group.bench_with_input(BenchmarkId::new("norm2", n), &n, |b, _| b.iter(|| cpu.norm2(&x).unwrap()));
    }
    group.finish();
}

criterion_group!(benches, blas);
criterion_main!(benches);
