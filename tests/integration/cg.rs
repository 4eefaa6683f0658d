//! PCG against the textbook iteration with every scalar on the host: the
//! same iterates whether the preconditioner is fused into the update (the
//! identity, Jacobi) or applied (any other operator), nothing moved by
//! the iterations run past the stop between two looks at the scalars, and
//! breakdowns reported.

use fem::host::operator::csr::Csr;
use fem::host::operator::LinearOperator;
use fem::host::solver::{pcg, CgOptions, Identity, Jacobi};
use fem::host::sparse::generate::fem_matrix;
use fem::host::{CpuBackend, Result};

fn cpu() -> CpuBackend {
    CpuBackend::new(Some(2)).unwrap()
}

/// A load with every frequency in it.
fn rhs(n: usize) -> Vec<f64> {
    (0..n).map(|i| 1.0 + (i as f64 * 0.37).sin() + 0.5 * ((i * i) as f64 * 0.011).cos()).collect()
}

/// Jacobi hidden behind a plain `apply`: CG must apply it as any
/// preconditioner, not fuse it.
struct Opaque<'a>(&'a Jacobi<CpuBackend, f64>);

impl LinearOperator<CpuBackend, f64> for Opaque<'_> {
    fn rows(&self) -> usize {
        self.0.rows()
    }
    fn apply(&self, b: &CpuBackend, r: &Vec<f64>, z: &mut Vec<f64>) -> Result<()> {
        self.0.apply(b, r, z)
    }
    fn name(&self) -> String {
        "opaque jacobi".into()
    }
}

fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}

/// The textbook PCG from zero: the iterate after `iterations` steps and
/// the relative residual after each.
fn textbook(cpu: &CpuBackend, a: &Csr<f64>, inv_diag: Option<&[f64]>, b: &[f64], iterations: usize) -> (Vec<f64>, Vec<f64>) {
    let n = b.len();
    let precond = |r: &[f64]| -> Vec<f64> { inv_diag.map_or(r.to_vec(), |d| r.iter().zip(d).map(|(r, d)| r * d).collect()) };
    let (mut x, mut r) = (vec![0.0; n], b.to_vec());
    let mut z = precond(&r);
    let mut p = z.clone();
    let mut rz = dot(&r, &z);
    let scale = dot(b, b).sqrt();
    let mut history = vec![dot(&r, &r).sqrt() / scale];
    let mut q = vec![0.0; n];
    for _ in 0..iterations {
        a.spmv(cpu, &p, &mut q);
        let alpha = rz / dot(&p, &q);
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        z = precond(&r);
        let rz_new = dot(&r, &z);
        for i in 0..n {
            p[i] = z[i] + rz_new / rz * p[i];
        }
        rz = rz_new;
        history.push(dot(&r, &r).sqrt() / scale);
    }
    (x, history)
}

fn relative_difference(x: &[f64], y: &[f64]) -> f64 {
    let d = x.iter().zip(y).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    d / y.iter().map(|v| v.abs()).fold(0.0, f64::max)
}

#[test]
fn pcg_follows_the_textbook_iteration_with_fused_and_applied_preconditioners() {
    let cpu = cpu();
    // small enough that rounding stays far below the differences checked
    let a = fem_matrix::<f64>(&cpu, 2, 1, 400, 1, true).unwrap();
    let b = rhs(a.n_rows);
    let jacobi = Jacobi::new(&cpu, &a).unwrap();
    // a loose tolerance, so that each further step still moves the iterate
    let opts = CgOptions { rtol: 1e-5, max_iterations: 5000, jacobi: false };
    let cases: [(&dyn LinearOperator<CpuBackend, f64>, Option<&[f64]>); 3] =
        [(&Identity(a.n_rows), None), (&jacobi, Some(&jacobi.inv_diag)), (&Opaque(&jacobi), Some(&jacobi.inv_diag))];
    for (m, inv_diag) in cases {
        let mut x = vec![0.0; a.n_rows];
        let report = pcg(&cpu, &a, &m, &b, &mut x, opts).unwrap();
        assert!(report.converged && report.iterations > 10, "{}: {} iterations", m.name(), report.iterations);
        assert_eq!(report.history.len(), report.iterations + 1);
        // the iterate is the textbook's after exactly that many steps:
        // the steps run past the stop before CG looked did not move it
        let (want, _) = textbook(&cpu, &a, inv_diag, &b, report.iterations + 1);
        let d = relative_difference(&x, &want);
        assert!(d > 1e-9, "{}: one more step would not have shown ({d:e})", m.name());
        let (want, history) = textbook(&cpu, &a, inv_diag, &b, report.iterations);
        let d = relative_difference(&x, &want);
        assert!(d < 1e-12, "{}: the iterate differs from the textbook's by {d:e}", m.name());
        for (k, (got, want)) in report.history.iter().zip(&history).enumerate() {
            assert!((got - want).abs() <= 1e-9 * want, "{}: residual {k} is {got:e}, textbook {want:e}", m.name());
        }
        assert!(history[report.iterations - 1] > opts.rtol && history[report.iterations] <= opts.rtol * 1.001, "{}: stopped at the wrong iteration", m.name());
    }
}

#[test]
fn pcg_stops_at_the_iteration_limit_and_reports_it() {
    let cpu = cpu();
    let a = fem_matrix::<f64>(&cpu, 2, 1, 2000, 1, true).unwrap();
    let b = rhs(a.n_rows);
    let jacobi = Jacobi::new(&cpu, &a).unwrap();
    for limit in [1, 7, 40] {
        let mut x = vec![0.0; a.n_rows];
        let report = pcg(&cpu, &a, &jacobi, &b, &mut x, CgOptions { rtol: 1e-14, max_iterations: limit, jacobi: false }).unwrap();
        assert_eq!((report.iterations, report.converged, report.history.len()), (limit, false, limit + 1));
        let (want, _) = textbook(&cpu, &a, Some(&jacobi.inv_diag), &b, limit);
        assert!(relative_difference(&x, &want) < 1e-10, "limit {limit}");
    }
    // a start that already solves it takes no iteration
    let mut x = vec![0.0; a.n_rows];
    let report = pcg(&cpu, &a, &jacobi, &vec![0.0; a.n_rows], &mut x, CgOptions::default()).unwrap();
    assert_eq!((report.iterations, report.converged), (0, true));
}

#[test]
fn pcg_reports_an_operator_that_is_not_positive_definite() {
    let cpu = cpu();
    let mut a = fem_matrix::<f64>(&cpu, 2, 1, 500, 1, true).unwrap();
    a.val.iter_mut().for_each(|v| *v = -*v);
    let b = rhs(a.n_rows);
    let mut x = vec![0.0; a.n_rows];
    let e = pcg(&cpu, &a, &Identity(a.n_rows), &b, &mut x, CgOptions::default()).unwrap_err();
    assert!(e.to_string().contains("not positive definite"), "{e}");
    // and the iterate was not moved by the failed step
    assert!(x.iter().all(|v| *v == 0.0));
}
