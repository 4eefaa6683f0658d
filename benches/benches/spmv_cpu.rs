//! SpMV formats and the BP3.5 operator on the CPU backend (criterion):
//! the figures the a-priori model's CPU efficiencies are checked against.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fem_host::mesh::spectral::{Deformation, SpectralBox};
use fem_host::operator::tensor::{Problem, TensorOperator};
use fem_host::sparse::device::prepare_cpu;
use fem_host::sparse::generate::fem_matrix;
use fem_host::sparse::params::SpmvParams;
use fem_host::sparse::stats::RowStats;
use fem_host::sparse::SpmvFormat;
use fem_host::{Backend, CpuBackend};

fn spmv(c: &mut Criterion) {
    let cpu = CpuBackend::new(None).unwrap();
    let csr = fem_matrix::<f64>(&cpu, 2, 2, 200_000, 1, false).unwrap();
    let p = SpmvParams::a_priori(&RowStats::of(&csr));
    let x = cpu.upload(&vec![1.0; csr.n_rows]).unwrap();
    let mut y = cpu.zeros::<f64>(csr.n_rows).unwrap();
    let mut g = c.benchmark_group("spmv_2d_q2");
    g.throughput(Throughput::Elements(csr.nnz() as u64));
    for f in [SpmvFormat::Csr, SpmvFormat::Ell, SpmvFormat::K1r, SpmvFormat::K2rs] {
        let m = prepare_cpu(&cpu, &csr, f, &p).unwrap();
        g.bench_function(f.name(), |b| b.iter(|| m.apply(&cpu, &x, &mut y).unwrap()));
    }
    g.finish();
}

fn bp35(c: &mut Criterion) {
    let cpu = CpuBackend::new(None).unwrap();
    let mut g = c.benchmark_group("bp3.5");
    for degree in [2, 5] {
        let mesh = SpectralBox::new(degree, [6, 6, 6], Deformation::None).unwrap();
        let op = TensorOperator::new(Problem::Bp35, &mesh, 1.0).unwrap();
        let x = vec![1.0; op.element_dofs()];
        let mut y = vec![0.0; op.element_dofs()];
        g.throughput(Throughput::Elements(op.element_dofs() as u64));
        g.bench_function(format!("n{degree}"), |b| b.iter(|| cpu.install(|| op.apply_elements(&x, &mut y)).unwrap()));
    }
    g.finish();
}

criterion_group!(benches, spmv, bp35);
criterion_main!(benches);
