//! Solvers on the GPU against the CPU: coloured SSOR sweeps (CSR and
//! ELLPACK), PCG and BiCGStab, multigrid cycles. Skipped without a device.

use crate::common;
use common::gpu;

use fem::host::mesh::BoxMesh;
use fem::host::operator::ell::Ell;
use fem::host::operator::gpu::{GpuCsr, GpuEll};
use fem::host::solver::PrecondOps;
use fem::host::solver::multigrid::{MgOptions, Multigrid, Smoother};
use fem::host::solver::ssor::{CpuSsor, GpuSsor, GpuSsorMatrix, RowColouring, SsorMatrix};
use fem::host::solver::{bicgstab, pcg, CgOptions, Jacobi};
use fem::host::operator::LinearOperator;
use fem::host::sparse::generate::{fem_matrix, power_law};
use fem::host::{Backend, CpuBackend};


fn rhs(n: usize) -> Vec<f64> {
    (0..n).map(|i| 1.0 + 0.5 * (i as f64 * 0.37).sin()).collect()
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[test]
fn gpu_ssor_equals_cpu_ssor_and_preconditions_cg() {
    let Some(g) = gpu("gpu_ssor_equals_cpu_ssor_and_preconditions_cg") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    for (dim, p) in [(2, 1), (2, 3), (3, 2)] {
        let a = fem_matrix::<f64>(&cpu, dim, p, 20_000, 1, true).unwrap();
        let colouring = RowColouring::new(&a).unwrap();
        let cpu_pre = CpuSsor { matrix: SsorMatrix::Csr(a.clone()), colouring: colouring.clone() };
        let r = rhs(a.n_rows);
        let mut z_cpu = vec![0.0; a.n_rows];
        cpu_pre.apply(&cpu, &r, &mut z_cpu).unwrap();
        let scale = z_cpu.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let mats = [GpuSsorMatrix::Csr(GpuCsr::from_csr(&g, &a, 4).unwrap()), GpuSsorMatrix::Ell(GpuEll::upload(&g, &Ell::from_csr(&a)).unwrap())];
        for m in mats {
            let pre = GpuSsor::new(&g, m, &colouring).unwrap();
            let rd = g.upload(&r).unwrap();
            let mut zd = g.zeros::<f64>(a.n_rows).unwrap();
            pre.apply(&g, &rd, &mut zd).unwrap();
            let d = max_diff(&g.download(&zd).unwrap(), &z_cpu) / scale;
            assert!(d < 1e-12, "{dim}D Q{p}: GPU SSOR differs from CPU by {d:e}");
            let op = GpuCsr::from_csr(&g, &a, 4).unwrap();
            let mut x = g.zeros::<f64>(a.n_rows).unwrap();
            let opts = CgOptions { rtol: 1e-10, max_iterations: 5000, jacobi: false };
            let rep = pcg(&g, &op, &pre, &rd, &mut x, opts).unwrap();
            let mut xc = vec![0.0; a.n_rows];
            let cpu_rep = pcg(&cpu, &a, &cpu_pre, &r, &mut xc, opts).unwrap();
            assert!(rep.converged && rep.iterations.abs_diff(cpu_rep.iterations) <= 1, "GPU {} vs CPU {} iterations", rep.iterations, cpu_rep.iterations);
        }
    }
}

/// Jacobi's inverse diagonal made on the device equals the host's
/// (rows not a multiple of the warp), and a zero diagonal entry is
/// refused with its row named, as on the host.
#[test]
fn gpu_jacobi_inverts_on_the_device() {
    let Some(g) = gpu("gpu_jacobi_inverts_on_the_device") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let mut a = power_law::<f64>(10_001, 2.0, 2.5, 300, 5).unwrap();
    let host = Jacobi::new(&cpu, &a).unwrap();
    let dev = Jacobi::new(&g, &GpuCsr::from_csr(&g, &a, 2).unwrap()).unwrap();
    assert_eq!(g.download(&dev.inv_diag).unwrap(), host.inv_diag);
    let r = 4321;
    for k in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
        if a.col[k] as usize == r {
            a.val[k] = 0.0;
        }
    }
    let err = Jacobi::<_, f64>::new(&g, &GpuCsr::from_csr(&g, &a, 2).unwrap()).err().expect("refused").to_string();
    assert!(err.contains("row 4321"), "{err}");
}

#[test]
fn gpu_bicgstab_solves_an_unsymmetric_system() {
    let Some(g) = gpu("gpu_bicgstab_solves_an_unsymmetric_system") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let a = power_law::<f64>(50_000, 2.0, 2.5, 300, 3).unwrap();
    let op = GpuCsr::from_csr(&g, &a, 2).unwrap();
    let b = rhs(a.n_rows);
    let bd = g.upload(&b).unwrap();
    let mut x = g.zeros::<f64>(a.n_rows).unwrap();
    let jac = Jacobi::from_diagonal(&g, &a.diag()).unwrap();
    let r = bicgstab(&g, &op, &jac, &bd, &mut x, CgOptions { rtol: 1e-10, max_iterations: 1000, jacobi: false }).unwrap();
    assert!(r.converged);
    let xh = g.download(&x).unwrap();
    let mut ax = vec![0.0; a.n_rows];
    a.spmv(&cpu, &xh, &mut ax);
    let res = max_diff(&ax, &b) / b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(res < 1e-8, "true residual {res:e}");
}

#[test]
fn gpu_multigrid_matches_cpu_multigrid() {
    let Some(g) = gpu("gpu_multigrid_matches_cpu_multigrid") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    for (dim, degree, cells, levels) in [(2, 1, 4, 6), (2, 2, 3, 4), (3, 1, 2, 4)] {
        let coarse = BoxMesh::unstructured(dim, cells, 5).build().unwrap();
        let h = common::poisson_levels(&cpu, &coarse, degree, levels);
        for smoother in [Smoother::Jacobi, Smoother::Spai, Smoother::Sainv] {
            let opts = MgOptions::paper(dim, smoother);
            let mg_cpu = Multigrid::from_matrices(&cpu, &cpu, &h.0, &h.1, opts).unwrap();
            let mg_gpu = Multigrid::from_matrices(&g, &cpu, &h.0, &h.1, opts).unwrap();
            let b = rhs(mg_cpu.rows());
            let mut xc = vec![0.0; b.len()];
            let rc = mg_cpu.solve(&cpu, &b, &mut xc, 1e-8, 50).unwrap();
            let bd = g.upload(&b).unwrap();
            let mut xd = g.zeros::<f64>(b.len()).unwrap();
            let rg = mg_gpu.solve(&g, &bd, &mut xd, 1e-8, 50).unwrap();
            assert!(rc.converged && rg.converged);
            assert!(rg.iterations.abs_diff(rc.iterations) <= 1, "{dim}D Q{degree} {smoother:?}: GPU {} vs CPU {} cycles", rg.iterations, rc.iterations);
            let d = max_diff(&g.download(&xd).unwrap(), &xc) / xc.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(d < 1e-7, "{dim}D Q{degree} {smoother:?}: solutions differ by {d:e}");
            // the same hierarchy from its patterns, values refreshed on the device
            let mg_pat = common::refreshed_patterns(&g, &cpu, &h, opts);
            let mut xp = g.zeros::<f64>(b.len()).unwrap();
            let rp = mg_pat.solve(&g, &bd, &mut xp, 1e-8, 50).unwrap();
            assert!(rp.converged && rp.iterations.abs_diff(rc.iterations) <= 1, "{dim}D Q{degree} {smoother:?} of patterns: GPU {} vs CPU {} cycles", rp.iterations, rc.iterations);
            let d = max_diff(&g.download(&xp).unwrap(), &xc) / xc.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(d < 1e-7, "{dim}D Q{degree} {smoother:?} of patterns: solutions differ by {d:e}");
        }
    }
}

/// SPAI(1) built on the device, a thread a row, is the host's: `M r` and
/// `Mᵀ r` against the host's M and its transpose, in f64 and f32, on
/// rows of 9, 25 and 27 entries and, through the host, 125 (3D Q2, past
/// a thread's Gram matrix); linearly dependent rows are refused with the
/// first such row named, as on the host.
#[test]
fn gpu_spai_is_the_host_spai() {
    use fem::host::operator::csr::Csr;
    use fem::host::solver::spai::spai1;
    use fem::host::solver::transfer::transpose;
    let Some(g) = gpu("gpu_spai_is_the_host_spai") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    // mesh matrices (symmetric patterns: Mᵀ on M's own), and one whose
    // pattern is not symmetric (entries above the diagonal dropped where
    // r + c is a multiple of 3: Mᵀ transposed on the host)
    let mut cases: Vec<(String, Csr<f64>)> = [(2, 1), (2, 2), (3, 1), (3, 2)].iter().map(|&(dim, p)| (format!("{dim}D Q{p}"), fem_matrix::<f64>(&cpu, dim, p, 5_000, 1, true).unwrap())).collect();
    let full = &cases[0].1;
    let mut trimmed = Csr::<f64> { n_rows: full.n_rows, row_ptr: vec![0], col: Vec::new(), val: Vec::new() };
    for r in 0..full.n_rows {
        for k in full.row_ptr[r] as usize..full.row_ptr[r + 1] as usize {
            let c = full.col[k] as usize;
            if c <= r || (r + c) % 3 != 0 {
                trimmed.col.push(full.col[k]);
                trimmed.val.push(full.val[k]);
            }
        }
        trimmed.row_ptr.push(trimmed.col.len() as u32);
    }
    assert!(trimmed.nnz() < full.nnz());
    cases.push(("2D Q1, unsymmetric pattern".into(), trimmed));
    for (label, a) in &cases {
        let host = spai1(&cpu, a).unwrap();
        let host_t = transpose(&host, a.n_rows);
        let r = rhs(a.n_rows);
        let (mut want, mut want_t) = (vec![0.0; a.n_rows], vec![0.0; a.n_rows]);
        host.apply(&cpu, &r, &mut want).unwrap();
        host_t.apply(&cpu, &r, &mut want_t).unwrap();
        let scale = want.iter().chain(&want_t).fold(0.0f64, |m, v| m.max(v.abs()));
        let (m, mt) = g.spai(&cpu, &Csr { val: Vec::new(), ..a.clone() }, &g.upload(&a.val).unwrap()).unwrap();
        let rd = g.upload(&r).unwrap();
        for (op, want) in [(&m, &want), (&mt, &want_t)] {
            let mut z = g.zeros::<f64>(a.n_rows).unwrap();
            op.apply(&g, &rd, &mut z).unwrap();
            let d = max_diff(&g.download(&z).unwrap(), want) / scale;
            assert!(d < 1e-11, "{label} ({} rows): device SPAI(1) differs by {d:e}", a.n_rows);
        }
        // f32 values, the Gram matrix still summed in f64
        let a32 = a.converted::<f32>();
        let (m32, _) = g.spai(&cpu, &Csr { val: Vec::new(), ..a32.clone() }, &g.upload(&a32.val).unwrap()).unwrap();
        let mut z = g.zeros::<f32>(a.n_rows).unwrap();
        m32.apply(&g, &g.upload(&r.iter().map(|&v| v as f32).collect::<Vec<_>>()).unwrap(), &mut z).unwrap();
        let d = g.download(&z).unwrap().iter().zip(&want).map(|(x, y)| (*x as f64 - y).abs()).fold(0.0, f64::max) / scale;
        assert!(d < 1e-4, "{label} f32: {d:e}");
    }
    // rows 1 and 2 equal (a stored zero each): rows 1 and 2 of M combine
    // dependent rows, their Gram matrix singular to the last bit
    let a = Csr::<f64> { n_rows: 4, row_ptr: vec![0, 1, 3, 5, 6], col: vec![0, 1, 2, 1, 2, 3], val: vec![2.0, 1.0, 0.0, 1.0, 0.0, 3.0] };
    let host = spai1(&cpu, &a).unwrap_err().to_string();
    let dev = g.spai(&cpu, &Csr { val: Vec::new(), ..a.clone() }, &g.upload(&a.val).unwrap()).err().expect("refused").to_string();
    assert!(host.contains("row 1") && dev == host, "{host} / {dev}");
}

/// A random `rows × cols` matrix: every fifth row empty, the others up to
/// `max_len` distinct columns in no order, `long` rows more holding
/// column 7, and the last column never used.
fn random_transfer(rows: usize, cols: usize, max_len: usize, long: usize, seed: u64) -> fem::host::operator::csr::Csr<f64> {
    let mut rng = fem::host::rng::SplitMix64::new(seed);
    let mut a = fem::host::operator::csr::Csr::<f64> { n_rows: rows, row_ptr: vec![0], col: Vec::new(), val: Vec::new() };
    for r in 0..rows {
        let len = if r % 5 == 0 { 0 } else { 1 + rng.next_u64() as usize % max_len };
        let mut picked: Vec<u32> = (0..len).map(|_| (rng.next_u64() % (cols as u64 - 1)) as u32).collect();
        if r % 5 != 0 && r < 5 * long / 4 + 1 {
            picked.push(7);
        }
        picked.sort_unstable();
        picked.dedup();
        picked.reverse();
        a.val.extend(picked.iter().map(|&c| 0.5 + (r as f64 * 0.37 + c as f64 * 0.11).sin()));
        a.col.extend(picked);
        a.row_ptr.push(a.col.len() as u32);
    }
    a
}

/// `Aᵀ` made on the device is the host's (row offsets, rows ascending in
/// each row, source positions, the longest row), and the prolongation
/// and restriction stored from it apply as the host's: short rows (ELL-
/// WARP built on the device), a column of 1,500 rows (a restriction row
/// past the device's ELL-WARP build, made on the host), rows long enough
/// for CSR, sizes off the warp, no entries at all; a column past the
/// matrix is refused.
#[test]
fn gpu_transpose_and_transfers_are_the_hosts() {
    use fem::host::solver::transfer::TransposedPattern;
    use fem::host::sparse::device_transpose::DeviceTransposedPattern;
    let Some(g) = gpu("gpu_transpose_and_transfers_are_the_hosts") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    for (rows, cols, max_len, long) in [(5003, 3001, 9, 0), (5003, 1201, 9, 1500), (301, 203, 130, 0), (33, 17, 1, 0), (1, 1, 1, 0)] {
        let mut p = random_transfer(rows, cols, max_len, long, rows as u64);
        if rows == 33 {
            // no entries
            p = fem::host::operator::csr::Csr { n_rows: rows, row_ptr: vec![0; rows + 1], col: Vec::new(), val: Vec::new() };
        }
        let what = format!("{rows} x {cols}, rows up to {max_len}, {long} long");
        let want = TransposedPattern::of(&p.row_ptr, &p.col, cols);
        let t = DeviceTransposedPattern::of(&g, rows, cols, &g.htod(&p.row_ptr).unwrap(), &g.htod(&p.col).unwrap()).unwrap();
        assert_eq!(g.dtoh(&t.row_ptr).unwrap(), want.row_ptr, "{what}: row offsets");
        assert_eq!(g.dtoh(&t.col).unwrap(), want.col, "{what}: columns");
        assert_eq!(g.dtoh(&t.src).unwrap(), want.src, "{what}: sources");
        assert_eq!(t.width, want.row_ptr.windows(2).map(|w| (w[1] - w[0]) as usize).max().unwrap_or(0), "{what}: longest row");
        let (pc, rc) = cpu.store_transfers(&p, cols).unwrap();
        let (pg, rg) = g.store_transfers(&p, cols).unwrap();
        for (mc, mg, n) in [(&pc, &pg, cols), (&rc, &rg, rows)] {
            let x = rhs(n);
            let mut yc = vec![0.0; mc.rows()];
            mc.apply(&cpu, &x, &mut yc).unwrap();
            let mut yg = g.zeros::<f64>(mg.rows()).unwrap();
            mg.apply(&g, &g.upload(&x).unwrap(), &mut yg).unwrap();
            let scale = yc.iter().fold(1e-300f64, |m, v| m.max(v.abs()));
            let d = max_diff(&g.download(&yg).unwrap(), &yc) / scale;
            assert!(d < 1e-13, "{what}: {} rows apply differently by {d:e}", mc.rows());
        }
    }
    let bad = random_transfer(50, 20, 4, 0, 3);
    let e = DeviceTransposedPattern::of(&g, 50, 7, &g.htod(&bad.row_ptr).unwrap(), &g.htod(&bad.col).unwrap()).err().expect("columns past 7");
    assert!(e.to_string().contains("past its 7 columns"), "{e}");
}

/// A hole hierarchy whose finest level cannot fit on the GPU (12 levels
/// of 2D Q2: 1.6·10⁹ nodes, about 700 GB of Newton's set-up there) is
/// refused with its size before its mesh is made; the host check after it
/// would pass on a large machine, so the GPU's is the one that speaks.
#[test]
fn gpu_refuses_a_hole_that_cannot_fit_before_making_it() {
    use fem::host::problem::hole::HoleOptions;
    let Some(g) = gpu("gpu_refuses_a_hole_that_cannot_fit_before_making_it") else { return };
    let anyb = fem::host::AnyBackend::Cuda(g);
    match fem::solve::run_hole(&anyb, &HoleOptions::new(2, 2, 12)) {
        Err(e @ fem::host::Error::ProblemTooLarge { .. }) => {
            let text = e.to_string();
            assert!(text.contains("2D, Q2 on 12 levels") && text.contains("GiB on the GPU"), "{text}");
        }
        other => panic!("expected a refusal, got {:?}", other.map(|r| r.dofs)),
    }
}
