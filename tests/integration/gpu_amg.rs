//! AMG set up on the GPU equals the CPU's set-up: the same aggregates and
//! so the same levels, the same CG iterations, the same refusals; and the
//! device prefix sum it builds on equals the host's (skipped without a
//! GPU).

use crate::common;
use fem::host::operator::csr::Csr;
use fem::host::rng::SplitMix64;
use fem::host::solver::amg::{self, AmgOptions, Nullspace, Pattern};
use fem::host::solver::multigrid::Multigrid;
use fem::host::solver::{pcg, CgOptions};
use fem::host::sparse::generate::fem_matrix;
use fem::host::sparse::spgemm::{DeviceCsr, Sparse};
use fem::host::{Backend, CpuBackend, CudaBackend};

#[test]
fn gpu_prefix_sums_equal_the_hosts() {
    let Some(gpu) = common::gpu("gpu_prefix_sums_equal_the_hosts") else { return };
    let mut g = SplitMix64::new(3);
    // one value, a warp's tail, a tile, a tile and one, many tiles
    for n in [1usize, 31, 2048, 2049, 300_007] {
        let x: Vec<u32> = (0..n).map(|_| (g.next_f64() * 4.0) as u32).collect();
        let (out, total) = gpu.exclusive_scan(&gpu.stream().clone_htod(&x).unwrap()).unwrap();
        let got = gpu.stream().clone_dtoh(&out).unwrap();
        let want: Vec<u32> = std::iter::once(0).chain(x.iter().scan(0u32, |s, v| { *s += v; Some(*s) })).collect();
        assert_eq!(total, *want.last().unwrap(), "n = {n}");
        assert_eq!(got, want, "n = {n}");
    }
}

/// A product taken in runs of rows is the product taken whole, and the
/// host's: the chunking that keeps cuSPARSE within its 2³¹ intermediate
/// products on large operators.
#[test]
fn gpu_products_in_runs_of_rows_equal_the_whole() {
    let Some(gpu) = common::gpu("gpu_products_in_runs_of_rows_equal_the_whole") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let a: Csr<f64> = fem_matrix(&cpu, 3, 1, 3_000, 1, true).unwrap();
    let s = gpu.stream();
    let down = |m: &DeviceCsr| (s.clone_dtoh(&m.row_ptr).unwrap(), s.clone_dtoh(&m.col).unwrap(), gpu.download(&m.val).unwrap());
    let sparse = Sparse::new(&gpu).unwrap();
    let (da, host) = (DeviceCsr::upload(&gpu, &a, a.n_rows).unwrap(), amg::product::multiply(&cpu, &a, &a).unwrap());
    let whole = down(&sparse.multiply_runs(&gpu, &da, &da, 1).unwrap());
    // the same product as the host's, applied to a vector
    let x: Vec<f64> = (0..a.n_rows).map(|i| (i as f64 * 0.37).sin()).collect();
    let mut want = vec![0.0; a.n_rows];
    host.spmv(&cpu, &x, &mut want);
    let got = Csr { n_rows: a.n_rows, row_ptr: whole.0.clone(), col: whole.1.clone(), val: whole.2.clone() };
    let mut y = vec![0.0; a.n_rows];
    got.spmv(&cpu, &x, &mut y);
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(y.iter().zip(&want).all(|(p, q)| (p - q).abs() <= 1e-12 * scale));
    for runs in [2, 7, a.n_rows] {
        let got = down(&sparse.multiply_runs(&gpu, &da, &da, runs).unwrap());
        assert_eq!(got.0, whole.0, "{runs} runs");
        assert_eq!(got.1, whole.1, "{runs} runs");
        assert!(got.2.iter().zip(&whole.2).all(|(x, y)| (x - y).abs() <= 1e-12 * y.abs().max(1.0)), "{runs} runs");
    }
}

/// `a` (`block` rows a node) on the device through an AMG pattern, and
/// the hierarchy built there with near-nullspace `b`.
fn on_gpu(gpu: &CudaBackend, a: &Csr<f64>, block: usize, b: &Nullspace, o: &AmgOptions) -> fem::host::Result<(Multigrid<CudaBackend, f64>, amg::AmgStats)> {
    let mut pattern = Pattern::new(a, block);
    pattern.build_on_gpu(gpu, &gpu.upload(&a.val)?, b, o)
}

/// Iterations of CG to 10⁻¹⁰ on the CPU preconditioned by `m`.
fn cpu_iterations(cpu: &CpuBackend, a: &Csr<f64>, m: &Multigrid<CpuBackend, f64>, b: &[f64]) -> usize {
    let mut x = vec![0.0; b.len()];
    let r = pcg(cpu, a, m, &b.to_vec(), &mut x, CgOptions { rtol: 1e-10, max_iterations: 500, jacobi: false }).unwrap();
    assert!(r.converged);
    r.iterations
}

#[test]
fn gpu_amg_setup_equals_the_cpus() {
    let Some(gpu) = common::gpu("gpu_amg_setup_equals_the_cpus") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    // Q1 and Q2 Laplacians on unstructured hexahedra; Q1 elasticity with
    // its six rigid-body modes (three unknowns a node, six on the coarse
    // levels)
    let mut cases: Vec<(String, Csr<f64>, usize, Nullspace)> = [(3, 1, 30_000), (3, 2, 20_000), (2, 1, 5_000)]
        .into_iter()
        .map(|(dim, degree, rows)| {
            let a: Csr<f64> = fem_matrix(&cpu, dim, degree, rows, 1, true).unwrap();
            let b = Nullspace::constants(a.n_rows, 1);
            (format!("Q{degree} in {dim}D, {} rows", a.n_rows), a, 1, b)
        })
        .collect();
    let (a, b) = crate::amg::elasticity_matrix(&cpu, 3);
    cases.push((format!("Q1 elasticity, {} rows", a.n_rows), a, 3, b));
    for (label, a, block, b) in cases {
        let o = AmgOptions { max_coarse: 50, ..Default::default() };
        let host = amg::hierarchy(&cpu, &a, block, &b, &o).unwrap().stats;
        let (mg, stats) = on_gpu(&gpu, &a, block, &b, &o).unwrap();
        let rows = |s: &amg::AmgStats| s.levels.iter().map(|l| (l.rows, l.nonzeros)).collect::<Vec<_>>();
        // the same aggregates, so the same rows; the products' patterns too
        // (cuSPARSE keeps structural zeros as the host's product does; the
        // device also keeps a dependent rigid-body mode's zero column, whose
        // coarse row and column the host leaves out)
        let (got, want) = (rows(&stats), rows(&host));
        assert_eq!(got.len(), want.len(), "{label}: levels {got:?} {want:?}");
        let slack = if block == 1 { 100 } else { 10 };
        for ((r, z), (wr, wz)) in got.iter().zip(&want) {
            assert!(r == wr && z.abs_diff(*wz) <= wz / slack, "{label}: levels {got:?} {want:?}");
        }
        let (cpu_mg, _) = amg::build::<CpuBackend, f64>(&cpu, &cpu, &a, block, &b, &o).unwrap();
        let mut g = SplitMix64::new(5);
        let b: Vec<f64> = (0..a.n_rows).map(|_| g.next_f64() - 0.5).collect();
        let gpu_a = fem::host::operator::gpu::GpuCsr::from_csr(&gpu, &a, 4).unwrap();
        let rhs = gpu.upload(&b).unwrap();
        let mut x = gpu.zeros::<f64>(a.n_rows).unwrap();
        let on_device = pcg(&gpu, &gpu_a, &mg, &rhs, &mut x, CgOptions { rtol: 1e-10, max_iterations: 500, jacobi: false }).unwrap();
        let on_host = cpu_iterations(&cpu, &a, &cpu_mg, &b);
        eprintln!("{label}: levels {:?}, CG {} iterations on the GPU, {on_host} on the CPU", rows(&stats), on_device.iterations);
        assert!(on_device.converged && on_device.iterations.abs_diff(on_host) <= 1, "{label}: GPU {} CPU {on_host}", on_device.iterations);
    }
}

/// From its second application on, the GPU's cycle replays as one CUDA
/// graph, and every application, replayed or not, equals the CPU's for a
/// new right-hand side (a graph that read stale buffers would not).
#[test]
fn gpu_cycles_replayed_from_a_graph_equal_the_cpus() {
    let Some(gpu) = common::gpu("gpu_cycles_replayed_from_a_graph_equal_the_cpus") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let a: Csr<f64> = fem_matrix(&cpu, 3, 1, 8_000, 1, true).unwrap();
    let b = Nullspace::constants(a.n_rows, 1);
    let o = AmgOptions { max_coarse: 50, ..Default::default() };
    let (on_device, _) = on_gpu(&gpu, &a, 1, &b, &o).unwrap();
    let (on_host, _) = amg::build::<CpuBackend, f64>(&cpu, &cpu, &a, 1, &b, &o).unwrap();
    use fem::host::operator::LinearOperator;
    let mut g = SplitMix64::new(11);
    for k in 0..4 {
        let r: Vec<f64> = (0..a.n_rows).map(|_| g.next_f64() - 0.5).collect();
        let mut z = gpu.zeros::<f64>(a.n_rows).unwrap();
        on_device.apply(&gpu, &gpu.upload(&r).unwrap(), &mut z).unwrap();
        let got = gpu.download(&z).unwrap();
        let mut want = vec![0.0; a.n_rows];
        on_host.apply(&cpu, &r, &mut want).unwrap();
        let err = got.iter().zip(&want).map(|(p, q)| (p - q).powi(2)).sum::<f64>().sqrt();
        let norm = want.iter().map(|q| q * q).sum::<f64>().sqrt();
        assert!(err <= 1e-9 * norm, "application {k}: {err:e} of {norm:e}");
        assert_eq!(on_device.replays(), k >= 1, "application {k}");
    }
}

#[test]
fn gpu_amg_refuses_what_the_cpu_refuses() {
    let Some(gpu) = common::gpu("gpu_amg_refuses_what_the_cpu_refuses") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let a: Csr<f64> = fem_matrix(&cpu, 2, 1, 400, 1, false).unwrap();
    let o = AmgOptions { max_coarse: 10, ..Default::default() };
    let mut skew = a.clone();
    skew.val[1] *= 2.0;
    let mut neg = a.clone();
    neg.val[a.position(0, 0).unwrap()] = -1.0;
    let mut nan = a.clone();
    nan.val[5] = f64::NAN;
    for (m, want) in [(&skew, "symmetric"), (&neg, "diagonal"), (&nan, "NaN")] {
        let e = on_gpu(&gpu, m, 1, &Nullspace::constants(m.n_rows, 1), &o).err().expect("refused").to_string();
        let host = amg::hierarchy(&cpu, m, 1, &Nullspace::constants(m.n_rows, 1), &o).err().expect("refused").to_string();
        assert!(e.contains(want) && e == host, "GPU: {e}; CPU: {host}");
    }
}

/// The partitioned hierarchy set up on each rank's GPU is the one the
/// hosts set up: the same levels, and one cycle of each gives the same
/// vector, on 1, 2 and 3 ranks (GPUs shared where fewer), for a scalar
/// field and one of three unknowns a node.
#[test]
fn partitioned_gpu_setup_equals_the_hosts() {
    let Some(first) = common::gpu("partitioned_gpu_setup_equals_the_hosts") else { return };
    drop(first);
    use fem::host::distributed::amg::{on_hosts, Input};
    use fem::host::distributed::amg_device::on_gpus;
    use fem::host::distributed::{Communicator, Distributed, Layout, Partition, Partitioner, Piece, Threads};
    use fem::host::mesh::simplex::SimplexBox;
    use fem::host::operator::LinearOperator;
    use fem::host::solver::PrecondOps;
    use fem::host::space::Space;
    use std::cell::RefCell;
    use std::rc::Rc;
    let gpus = fem::host::backend::cuda::device_count().unwrap();
    let space = Space::simplex(&SimplexBox::unstructured(3, 9, 6).build().unwrap(), 1).unwrap();
    let o = AmgOptions { max_coarse: 10, ..AmgOptions::default() };
    for block in [1usize, 3] {
        // the graph Laplacian of the cells' cliques, shifted (SPD), on each
        // of `block` components with a weak coupling between them
        let nb = space.nb();
        let mut entries = Vec::new();
        for c in space.cell_dofs.chunks(nb) {
            for (&i, &j) in c.iter().flat_map(|i| c.iter().map(move |j| (i, j))) {
                for (e, f) in (0..block).flat_map(|e| (0..block).map(move |f| (e, f))) {
                    let v = match (i == j, e == f) {
                        (true, true) => (nb - 1) as f64 + 0.01,
                        (false, true) => -1.0,
                        (true, false) => 0.1,
                        (false, false) => -0.02,
                    };
                    entries.push((i * block as u32 + e as u32, j * block as u32 + f as u32, v));
                }
            }
        }
        let n = space.n_dofs * block;
        let whole = fem::host::distributed::rows::from_entries(&CpuBackend::new(Some(1)).unwrap(), n, &entries);
        for ranks in [1, 2, 3] {
            let partition = Partition::new(&space, ranks, Partitioner::Metis).unwrap();
            let pieces = Piece::split(&space, &partition).unwrap();
            let out = Threads::run(ranks, |c| {
                let gpu = fem::cuda(c.rank() % gpus).unwrap();
                let cpu = CpuBackend::new(Some(1)).unwrap();
                let piece = &pieces[c.rank()];
                let layout = Layout::of_piece(c, piece, block).unwrap();
                let local: std::collections::HashMap<u32, u32> = piece.nodes.iter().enumerate().map(|(i, &node)| (node, i as u32)).collect();
                // the whole matrix's rows of this rank's owned unknowns, in local columns
                let rows: Vec<(u32, u32, f64)> = (0..layout.owned)
                    .flat_map(|i| {
                        let node = piece.nodes[i / block] as usize * block + i % block;
                        (whole.row_ptr[node] as usize..whole.row_ptr[node + 1] as usize).map(|k| (i as u32, whole.col[k], whole.val[k])).collect::<Vec<_>>()
                    })
                    .map(|(i, col, v)| (i, local[&(col / block as u32)] * block as u32 + col % block as u32, v))
                    .collect();
                let mut a = fem::host::distributed::rows::from_entries(&cpu, layout.owned, &rows);
                a.row_ptr.resize(layout.rows() + 1, *a.row_ptr.last().unwrap());
                a.n_rows = layout.rows();
                let values = gpu.upload(&a.val).unwrap();
                let nullspace = Nullspace::constants(layout.owned, block);
                let d = Distributed::new(&gpu, c, layout.owned);
                let finest = Rc::new(RefCell::new(gpu.store_matrix(&a, layout.rows()).unwrap()));
                let input = |finest| Input { cpu: &cpu, layout: &layout, pattern: &a, values: &values, block, nullspace: &nullspace, low: None, rho: 2.0, finest, link: None };
                let host = on_hosts(&d, input(finest.clone()), &o).unwrap();
                let dev = on_gpus(&d, input(finest), &o).unwrap();
                let x = gpu.upload(&(0..layout.rows()).map(|i| (0.7 * layout.global(i) as f64).sin()).collect::<Vec<_>>()).unwrap();
                let (mut y_host, mut y_dev) = (gpu.zeros::<f64>(layout.rows()).unwrap(), gpu.zeros::<f64>(layout.rows()).unwrap());
                host.mg.apply(&d, &x, &mut y_host).unwrap();
                dev.mg.apply(&d, &x, &mut y_dev).unwrap();
                let (h, g) = (gpu.download(&y_host).unwrap(), gpu.download(&y_dev).unwrap());
                let owned = layout.owned;
                let diff = h[..owned].iter().zip(&g[..owned]).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                let size = h[..owned].iter().fold(0.0f64, |m, a| m.max(a.abs()));
                let sizes = |s: &amg::AmgStats| s.levels.iter().map(|l| l.rows).collect::<Vec<_>>();
                (sizes(&host.stats), sizes(&dev.stats), diff, size)
            });
            for (rank, (host, dev, diff, size)) in out.iter().enumerate() {
                let what = format!("{block} unknowns a node, rank {rank} of {ranks}");
                assert!(host.len() >= 3, "{what}: levels {host:?}");
                assert_eq!(host, dev, "{what}: levels");
                assert!(*diff <= 1e-10 * size, "{what}: a cycle differs by {diff:e} of {size:e}");
            }
        }
    }
}
