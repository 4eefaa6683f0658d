//! Krylov solvers and preconditioners on the CPU backend: PCG with Jacobi,
//! coloured SSOR (CSR and ELLPACK) and SPAI(1); BiCGStab.

use fem::host::operator::csr::Csr;
use fem::host::operator::ell::Ell;
use fem::host::solver::spai::{inverse_residual, jacobi_matrix, spai1};
use fem::host::solver::ssor::{CpuSsor, RowColouring, SsorMatrix};
use fem::host::solver::multigrid::Smoother;
use fem::host::solver::{bicgstab, pcg, CgOptions, Identity, Jacobi, MatrixInverse, PrecondOps};
use fem::host::operator::LinearOperator;
use fem::host::sparse::generate::{fem_matrix, power_law};
use fem::host::CpuBackend;

fn cpu() -> CpuBackend {
    CpuBackend::new(Some(2)).unwrap()
}

fn opts(rtol: f64) -> CgOptions {
    CgOptions { rtol, max_iterations: 5000, jacobi: false }
}

/// ‖b − A x‖ / ‖b‖.
fn true_residual(cpu: &CpuBackend, a: &Csr<f64>, b: &[f64], x: &[f64]) -> f64 {
    let mut ax = vec![0.0; b.len()];
    a.spmv(cpu, x, &mut ax);
    let r: f64 = ax.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum::<f64>().sqrt();
    r / b.iter().map(|v| v * v).sum::<f64>().sqrt()
}

fn rhs(n: usize) -> Vec<f64> {
    (0..n).map(|i| 1.0 + (i as f64 * 0.37).sin()).collect()
}

fn solve(cpu: &CpuBackend, a: &Csr<f64>, m: &dyn LinearOperator<CpuBackend, f64>) -> (usize, Vec<f64>) {
    let b = rhs(a.n_rows);
    let mut x = vec![0.0; a.n_rows];
    let r = pcg(cpu, a, m, &b, &mut x, opts(1e-10)).unwrap();
    assert!(r.converged, "{} did not converge: {:?}", m.name(), r.history.last());
    assert!(true_residual(cpu, a, &b, &x) < 1e-9);
    (r.iterations, x)
}

#[test]
fn coloured_ssor_beats_jacobi_on_csr_and_ellpack() {
    let cpu = cpu();
    for (dim, p, rows) in [(2, 1, 4000), (2, 2, 4000), (3, 1, 3000), (3, 2, 3000)] {
        let a = fem_matrix::<f64>(&cpu, dim, p, rows, 1, true).unwrap();
        let colouring = RowColouring::new(&a).unwrap();
        assert!(colouring.is_valid(&a));
        let (jac, xj) = solve(&cpu, &a, &Jacobi::from_diagonal(&cpu, &a.diag()).unwrap());
        let csr = CpuSsor { matrix: SsorMatrix::Csr(a.clone()), colouring: colouring.clone() };
        let (ssor, xs) = solve(&cpu, &a, &csr);
        let ell = CpuSsor { matrix: SsorMatrix::Ell(Ell::from_csr(&a)), colouring };
        let (ssor_ell, _) = solve(&cpu, &a, &ell);
        assert!(ssor < jac, "{dim}D Q{p}: SSOR {ssor} vs Jacobi {jac} iterations");
        assert!(ssor_ell.abs_diff(ssor) <= 1, "CSR and ELLPACK sweeps differ: {ssor} vs {ssor_ell}");
        let diff = xj.iter().zip(&xs).map(|(u, v)| (u - v).abs()).fold(0.0, f64::max);
        assert!(diff < 1e-6 * xj.iter().fold(0.0f64, |m, v| m.max(v.abs())), "solutions differ by {diff}");
    }
}

#[test]
fn ssor_sweeps_invert_a_triangular_product() {
    // M = (L + D) D⁻¹ (L + D)ᵀ in colour order; check M z = r on a small matrix.
    let cpu = cpu();
    let a = fem_matrix::<f64>(&cpu, 2, 2, 300, 1, true).unwrap();
    let colouring = RowColouring::new(&a).unwrap();
    let pre = CpuSsor { matrix: SsorMatrix::Csr(a.clone()), colouring: colouring.clone() };
    let r = rhs(a.n_rows);
    let mut z = vec![0.0; a.n_rows];
    pre.apply(&cpu, &r, &mut z).unwrap();
    // Apply (L+D)ᵀ, then D⁻¹, then (L+D), with "lower" meaning a smaller colour.
    let c = &colouring.colour;
    let n = a.n_rows;
    let part = |v: &[f64], upper: bool| -> Vec<f64> {
        (0..n)
            .map(|i| {
                (a.row_ptr[i] as usize..a.row_ptr[i + 1] as usize)
                    .filter(|&p| {
                        let j = a.col[p] as usize;
                        j == i || (if upper { c[j] > c[i] } else { c[j] < c[i] })
                    })
                    .map(|p| a.val[p] * v[a.col[p] as usize])
                    .sum()
            })
            .collect()
    };
    let d = a.diag();
    let w: Vec<f64> = part(&z, true).iter().zip(&d).map(|(v, d)| v / d).collect();
    let back = part(&w, false);
    let err = back.iter().zip(&r).map(|(u, v)| (u - v).abs()).fold(0.0, f64::max);
    assert!(err < 1e-12, "M z differs from r by {err}");
}

#[test]
fn spai1_approximates_the_inverse_better_than_jacobi() {
    let cpu = cpu();
    for (dim, p) in [(2, 1), (2, 2), (3, 1)] {
        let a = fem_matrix::<f64>(&cpu, dim, p, 2000, 1, true).unwrap();
        let m = spai1(&cpu, &a).unwrap();
        let (fs, fj) = (inverse_residual(&cpu, &m, &a), inverse_residual(&cpu, &jacobi_matrix(&a), &a));
        assert!(fs < fj, "{dim}D Q{p}: ‖I − MA‖ SPAI {fs} vs Jacobi {fj}");
        // SPAI(1) is not symmetric: it preconditions BiCGStab (and smooths multigrid).
        let b = rhs(a.n_rows);
        let mut iterations = Vec::new();
        let spai = MatrixInverse::new(&cpu, &cpu, &a, Smoother::Spai, &|m: &Csr<f64>, n| cpu.store_matrix(m, n)).unwrap();
        for m in [&spai as &dyn LinearOperator<CpuBackend, f64>, &Jacobi::from_diagonal(&cpu, &a.diag()).unwrap()] {
            let mut x = vec![0.0; a.n_rows];
            let r = bicgstab(&cpu, &a, m, &b, &mut x, opts(1e-10)).unwrap();
            assert!(r.converged && true_residual(&cpu, &a, &b, &x) < 1e-9, "{}", m.name());
            iterations.push(r.iterations);
        }
        assert!(iterations[0] < iterations[1], "{dim}D Q{p}: SPAI-BiCGStab {} vs Jacobi-BiCGStab {}", iterations[0], iterations[1]);
    }
}

#[test]
fn sainv_approximates_the_inverse_and_preconditions_cg() {
    use fem::host::solver::sainv::{factor, sainv_factors};
    let cpu = cpu();
    for (dim, p) in [(2, 1), (2, 2), (3, 1)] {
        let a = fem_matrix::<f64>(&cpu, dim, p, 1000, 1, true).unwrap();
        // Without dropping, Z is exactly A-conjugate: Zᵀ A Z = D.
        let f = factor(&a, 0.0).unwrap();
        let az = |k: usize| {
            let mut v = vec![0.0; a.n_rows];
            for &(r, z) in &f.z[k] {
                for q in a.row_ptr[r as usize] as usize..a.row_ptr[r as usize + 1] as usize {
                    v[a.col[q] as usize] += a.val[q] * z;
                }
            }
            v
        };
        for k in [0, a.n_rows / 2, a.n_rows - 1] {
            let v = az(k);
            for j in [0, a.n_rows / 3, a.n_rows - 1] {
                let zjv: f64 = f.z[j].iter().map(|&(r, z)| z * v[r as usize]).sum();
                let expect = if j == k { f.p[k] } else { 0.0 };
                assert!((zjv - expect).abs() < 1e-9 * f.p[k].abs().max(1.0), "{dim}D Q{p}: z_{j}ᵀ A z_{k} = {zjv}");
            }
        }
        // M = Z D⁻¹ Zᵀ, formed here only to measure it.
        let (zt, z, inv_d) = sainv_factors(&a, 0.05).unwrap();
        let mut scaled = zt.clone();
        for k in 0..zt.n_rows {
            for q in zt.row_ptr[k] as usize..zt.row_ptr[k + 1] as usize {
                scaled.val[q] *= inv_d[k];
            }
        }
        let m = product(&z, &scaled);
        let (fs, fj) = (inverse_residual(&cpu, &m, &a), inverse_residual(&cpu, &jacobi_matrix(&a), &a));
        assert!(fs < fj, "{dim}D Q{p}: ‖I − MA‖ SAINV {fs} vs Jacobi {fj}");
        // the same inverse as the preconditioner, applied as its factors
        let sainv = MatrixInverse::new(&cpu, &cpu, &a, Smoother::Sainv, &|m: &Csr<f64>, n| cpu.store_matrix(m, n)).unwrap();
        let (its, _) = solve(&cpu, &a, &sainv);
        let (itj, _) = solve(&cpu, &a, &Jacobi::from_diagonal(&cpu, &a.diag()).unwrap());
        assert!(its < itj, "{dim}D Q{p}: SAINV-PCG {its} vs Jacobi-PCG {itj}");
    }
}

#[test]
fn bicgstab_solves_unsymmetric_and_symmetric_systems() {
    let cpu = cpu();
    let unsym = power_law::<f64>(3000, 2.0, 2.5, 200, 4).unwrap();
    let spd = fem_matrix::<f64>(&cpu, 2, 2, 3000, 1, true).unwrap();
    for a in [unsym, spd] {
        let b = rhs(a.n_rows);
        for m in [&Identity(a.n_rows) as &dyn LinearOperator<CpuBackend, f64>, &Jacobi::from_diagonal(&cpu, &a.diag()).unwrap()] {
            let mut x = vec![0.0; a.n_rows];
            let r = bicgstab(&cpu, &a, m, &b, &mut x, opts(1e-10)).unwrap();
            assert!(r.converged, "{}: {:?}", m.name(), &r.history[r.history.len().saturating_sub(3)..]);
            let t = true_residual(&cpu, &a, &b, &x);
            assert!(t < 1e-9, "{}: true residual {t}", m.name());
            assert_eq!(r.history.len(), r.iterations + 1);
        }
    }
    // A zero right-hand side converges at once.
    let a = fem_matrix::<f64>(&cpu, 2, 1, 100, 1, false).unwrap();
    let mut x = vec![0.0; a.n_rows];
    let r = bicgstab(&cpu, &a, &Identity(a.n_rows), &vec![0.0; a.n_rows], &mut x, opts(1e-10)).unwrap();
    assert_eq!(r.iterations, 0);
}

/// `A B` of square CSR matrices (dense accumulation per row; small tests only).
fn product(a: &Csr<f64>, b: &Csr<f64>) -> Csr<f64> {
    let n = a.n_rows;
    let mut row_ptr = vec![0u32];
    let (mut col, mut val) = (Vec::new(), Vec::new());
    let mut acc = vec![0.0; n];
    for r in 0..n {
        for p in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
            let k = a.col[p] as usize;
            for q in b.row_ptr[k] as usize..b.row_ptr[k + 1] as usize {
                acc[b.col[q] as usize] += a.val[p] * b.val[q];
            }
        }
        for (c, v) in acc.iter_mut().enumerate() {
            if *v != 0.0 {
                col.push(c as u32);
                val.push(*v);
                *v = 0.0;
            }
        }
        row_ptr.push(col.len() as u32);
    }
    Csr { n_rows: n, row_ptr, col, val }
}
