//! The tensor-product operators (BP1.0, BP3.5, BP3.0) on the CPU: exact
//! integrals, analytic results for linear fields, symmetry, the matrix-free
//! diagonal, an independent dense quadrature loop, and the convergence of
//! the Jacobi-CG solve.

use fem::core::lagrange::{lagrange, lagrange_deriv};
use fem::core::tensor::{GWJ, NGEO};
use fem::host::mesh::spectral::{Deformation, SpectralBox};
use fem::host::operator::tensor::geometry::Points;
use fem::host::operator::tensor::{Problem, TensorOperator};
use fem::host::operator::LinearOperator;
use fem::host::sparse::bench::test_vector;
use fem::host::CpuBackend;

const TRILINEAR: Deformation = Deformation::Trilinear { amplitude: 0.25, seed: 3 };
const CURVED: Deformation = Deformation::Curved { amplitude: 0.05 };
const ALL: [Problem; 3] = [Problem::Bp1, Problem::Bp35, Problem::Bp30];

fn cpu() -> CpuBackend {
    CpuBackend::new(Some(2)).unwrap()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn apply(op: &TensorOperator, x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    op.apply(&cpu(), &x.to_vec(), &mut y).unwrap();
    y
}

#[test]
fn mass_of_ones_is_the_volume() {
    for degree in 1..=15 {
        let mesh = SpectralBox::new(degree, [2, 2, 2], TRILINEAR).unwrap();
        let op = TensorOperator::new(Problem::Bp1, &mesh, 0.0).unwrap();
        let ones = vec![1.0; mesh.n_nodes];
        let vol: f64 = apply(&op, &ones).iter().sum();
        assert!((vol - 1.0).abs() < 1e-12, "N={degree}: volume {vol}");
        // every operator's own mass: GL quadrature, and GLL collocation
        // (diagonal; exact for the constant Jacobians of affine elements)
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let affine = SpectralBox::new(degree, [2, 3, 2], Deformation::None).unwrap();
        for (problem, mesh) in [(Problem::Bp30, &mesh), (Problem::Bp35, &affine)] {
            let op = TensorOperator::new(problem, mesh, 0.0).unwrap();
            let vol: f64 = op.mass(&cpu, &vec![1.0; mesh.n_nodes]).unwrap().iter().sum();
            assert!((vol - 1.0).abs() < 1e-12, "{problem:?} N={degree}: volume {vol}");
        }
        // the GL mass of the screened operator's factors is BP1's
        let (bp30, x) = (TensorOperator::new(Problem::Bp30, &mesh, 0.0).unwrap(), (0..mesh.n_nodes).map(|i| (i % 7) as f64).collect::<Vec<_>>());
        let (a, b) = (bp30.mass(&cpu, &x).unwrap(), apply(&op, &x));
        assert!(a.iter().zip(&b).all(|(a, b)| (a - b).abs() <= 1e-13 * b.abs().max(1.0)), "N={degree}");
    }
    // curved elements: the isoparametric volume converges to 1
    let mesh = SpectralBox::new(8, [2, 2, 2], CURVED).unwrap();
    let op = TensorOperator::new(Problem::Bp1, &mesh, 0.0).unwrap();
    let vol: f64 = apply(&op, &vec![1.0; mesh.n_nodes]).iter().sum();
    assert!((vol - 1.0).abs() < 1e-6, "curved volume {vol}");
}

/// vᵀAu for u = a·x, v = b·x: a·b + λ∫(a·x)(b·x) over the unit cube.
fn linear_exact(a: [f64; 3], b: [f64; 3], lambda: f64) -> f64 {
    let ab: f64 = (0..3).map(|i| a[i] * b[i]).sum();
    let mut m = 0.0;
    for i in 0..3 {
        for j in 0..3 {
            m += a[i] * b[j] * if i == j { 1.0 / 3.0 } else { 0.25 };
        }
    }
    ab + lambda * m
}

fn check_linear(problem: Problem, degree: usize, deformation: Deformation, lambda: f64) {
    let mesh = SpectralBox::new(degree, [2, 2, 3], deformation).unwrap();
    let op = TensorOperator::new(problem, &mesh, lambda).unwrap();
    let (a, b) = ([1.0, -2.0, 0.5], [0.3, 0.7, -1.1]);
    let u = mesh.interpolate(|x| a[0] * x[0] + a[1] * x[1] + a[2] * x[2]);
    let v = mesh.interpolate(|x| b[0] * x[0] + b[1] * x[1] + b[2] * x[2]);
    let got = dot(&v, &apply(&op, &u));
    let want = linear_exact(a, b, lambda);
    assert!((got - want).abs() < 1e-11 * want.abs().max(1.0), "{problem:?} N={degree} {deformation:?}: {got} vs {want}");
    // the stiffness alone annihilates constants
    let c = vec![1.0; mesh.n_nodes];
    let op0 = TensorOperator::new(problem, &mesh, 0.0).unwrap();
    assert!(apply(&op0, &c).iter().all(|r| r.abs() < 1e-10), "{problem:?} N={degree}: constants");
}

#[test]
fn screened_poisson_of_linear_fields_is_analytic() {
    for degree in 1..=15 {
        check_linear(Problem::Bp30, degree, TRILINEAR, 2.0);
    }
    // GLL collocation integrates the trilinear Jacobian times u·v exactly from N = 3,
    // an affine one from N = 2; the stiffness alone from N = 1 on affine boxes
    for degree in 3..=15 {
        check_linear(Problem::Bp35, degree, TRILINEAR, 2.0);
    }
    check_linear(Problem::Bp35, 2, Deformation::None, 2.0);
    check_linear(Problem::Bp35, 1, Deformation::None, 0.0);
}

#[test]
fn operators_are_symmetric() {
    for problem in ALL {
        for degree in [1, 2, 5, 9, 15] {
            let mesh = SpectralBox::new(degree, [2, 1, 2], CURVED).unwrap();
            let op = TensorOperator::new(problem, &mesh, 1.5).unwrap();
            let (x, y) = (test_vector::<f64>(op.element_dofs(), 1), test_vector::<f64>(op.element_dofs(), 2));
            let (mut ax, mut ay) = (vec![0.0; x.len()], vec![0.0; x.len()]);
            op.apply_elements(&x, &mut ax).unwrap();
            op.apply_elements(&y, &mut ay).unwrap();
            let (a, b) = (dot(&y, &ax), dot(&x, &ay));
            assert!((a - b).abs() < 1e-11 * a.abs().max(1.0), "{problem:?} N={degree}: {a} vs {b}");
            assert!(dot(&x, &ax) > 0.0, "{problem:?} N={degree}: not positive");
        }
    }
}

#[test]
fn matrix_free_diagonal_matches_unit_vectors() {
    for problem in ALL {
        for degree in [1, 2, 3] {
            let mesh = SpectralBox::new(degree, [2, 1, 1], TRILINEAR).unwrap();
            let op = TensorOperator::new(problem, &mesh, 0.7).unwrap();
            let diag = op.assembled_diagonal();
            for n in 0..mesh.n_nodes {
                let mut e = vec![0.0; mesh.n_nodes];
                e[n] = 1.0;
                let ae = apply(&op, &e);
                assert!((ae[n] - diag[n]).abs() < 1e-12 * ae[n].abs().max(1.0), "{problem:?} N={degree} node {n}: {} vs {}", ae[n], diag[n]);
            }
        }
    }
}

/// The element operator by a dense loop over quadrature points with the
/// Lagrange basis evaluated directly (no sum factorisation).
fn dense_element(op: &TensorOperator, e: usize, x: &[f64]) -> Vec<f64> {
    let b = &op.tables.basis;
    let nq = b.nq;
    let pts: &[f64] = if op.problem.points() == Points::Gll { &b.gll } else { &b.gl };
    let q = pts.len();
    let p = q * q * q;
    let g = &op.factors[e * NGEO * p..][..NGEO * p];
    let phi = |n: usize, a: usize| lagrange(&b.gll, n, pts[a]);
    let dphi = |n: usize, a: usize| lagrange_deriv(&b.gll, n, pts[a]);
    let np = nq * nq * nq;
    let split = |n: usize, m: usize| [n % m, (n / m) % m, n / (m * m)];
    let grad = |n: usize, k: usize| {
        let ([i, j, l], [a, bq, c]) = (split(n, nq), split(k, q));
        [dphi(i, a) * phi(j, bq) * phi(l, c), phi(i, a) * dphi(j, bq) * phi(l, c), phi(i, a) * phi(j, bq) * dphi(l, c)]
    };
    let val = |n: usize, k: usize| {
        let ([i, j, l], [a, bq, c]) = (split(n, nq), split(k, q));
        phi(i, a) * phi(j, bq) * phi(l, c)
    };
    let mut y = vec![0.0; np];
    for k in 0..p {
        let u: f64 = (0..np).map(|m| val(m, k) * x[m]).sum();
        let mut du = [0.0; 3];
        for m in 0..np {
            let gm = grad(m, k);
            (0..3).for_each(|a| du[a] += gm[a] * x[m]);
        }
        let gg = |f: usize| g[f * p + k];
        let metric = [[gg(0), gg(1), gg(2)], [gg(1), gg(3), gg(4)], [gg(2), gg(4), gg(5)]];
        let flux: Vec<f64> = (0..3).map(|a| (0..3).map(|c| metric[a][c] * du[c]).sum()).collect();
        let lambda = if op.problem == Problem::Bp1 { 0.0 } else { op.lambda };
        let mass = if op.problem == Problem::Bp1 { 1.0 } else { lambda };
        for n in 0..np {
            let gn = grad(n, k);
            let stiff = if op.problem == Problem::Bp1 { 0.0 } else { (0..3).map(|a| gn[a] * flux[a]).sum() };
            y[n] += stiff + mass * gg(GWJ) * val(n, k) * u;
        }
    }
    y
}

#[test]
fn sum_factorisation_matches_a_dense_quadrature_loop() {
    for problem in ALL {
        for degree in [1, 2, 3, 4] {
            let mesh = SpectralBox::new(degree, [1, 2, 1], CURVED).unwrap();
            let op = TensorOperator::new(problem, &mesh, 0.9).unwrap();
            let x = test_vector::<f64>(op.element_dofs(), 5);
            let mut y = vec![0.0; x.len()];
            op.apply_elements(&x, &mut y).unwrap();
            let np = op.np();
            for e in 0..op.elements {
                let d = dense_element(&op, e, &x[e * np..][..np]);
                for (a, b) in y[e * np..][..np].iter().zip(&d) {
                    assert!((a - b).abs() < 1e-11 * b.abs().max(1.0), "{problem:?} N={degree} e={e}: {a} vs {b}");
                }
            }
        }
    }
}

#[test]
fn jacobi_cg_converges_at_order_n_plus_1() {
    use fem::bp::{run, BpOptions, Size};
    use fem::host::AnyBackend;
    let backend = AnyBackend::Cpu(cpu());
    for (problem, degree) in [(Problem::Bp30, 2), (Problem::Bp35, 3)] {
        let err = |n: usize| {
            let o = BpOptions {
                problem,
                degree,
                size: Size::Elements(n * n * n),
                deformation: Deformation::None,
                lambda: 1.0,
                launch: Default::default(),
                repeats: 1,
                assembled: true,
                cpu_time: false,
                solve: Some(1e-12),
                p_multigrid: None,
                tune: false,
                l2: fem::bp::L2::Cold,
            };
            let mut tuning = fem::host::tune::Tuning::at(None, "cpu");
            let s = run(&o, &backend, &mut tuning, &|_, _| {}).unwrap().solve.unwrap();
            assert!(s.converged && s.relative_residual <= 1e-12);
            s.max_nodal_error
        };
        let (coarse, fine) = (err(2), err(4));
        let rate = (coarse / fine).log2();
        assert!(rate > degree as f64 + 1.0 - 0.3, "{problem:?} N={degree}: errors {coarse:e} → {fine:e}, rate {rate}");
    }
}

/// The solve of `o` on the CPU backend.
fn solved(o: &fem::bp::BpOptions) -> fem::bp::SolveReport {
    let mut tuning = fem::host::tune::Tuning::at(None, "cpu");
    fem::bp::run(o, &fem::host::AnyBackend::Cpu(cpu()), &mut tuning, &|_, _| {}).unwrap().solve.unwrap()
}

/// The options of a solve of `problem` at degree `degree` on `n`³
/// trilinear elements to 10⁻¹⁰, with p-multigrid where given.
fn solve_options(problem: Problem, degree: usize, n: usize, pmg: Option<fem::bp::BpPmg>) -> fem::bp::BpOptions {
    use fem::bp::{BpOptions, Size};
    BpOptions { problem, degree, size: Size::Elements(n * n * n), deformation: TRILINEAR, lambda: 1.0, launch: Default::default(), repeats: 1, assembled: true, cpu_time: false, solve: Some(1e-10), p_multigrid: pmg, tune: false, l2: fem::bp::L2::Cold }
}

/// p-multigrid reaches Jacobi-CG's solution in a fraction of its
/// iterations on BP3.5 (N = 4) and BP3.0 (N = 3), and its count grows
/// little when h halves; degree 1 has nothing to coarsen.
#[test]
fn p_multigrid_cg_solves_the_screened_poisson_problems() {
    let two = |levels| Some(fem::bp::BpPmg { options: Default::default(), levels });
    let pmg = two(fem::bp::PmgLevels::Degrees(vec![1]));
    for (problem, degree) in [(Problem::Bp35, 4), (Problem::Bp30, 3)] {
        let mut counts = Vec::new();
        for n in [3, 6] {
            let (jacobi, p) = (solved(&solve_options(problem, degree, n, None)), solved(&solve_options(problem, degree, n, pmg.clone())));
            let what = format!("{problem:?} N = {degree} on {n}³");
            assert!(jacobi.converged && p.converged && p.preconditioner == "p-multigrid", "{what}");
            let diff = p.u.iter().zip(&jacobi.u).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(diff < 1e-7, "{what}: the solutions differ by {diff:e}");
            assert!(4 * p.iterations < jacobi.iterations, "{what}: {} iterations against Jacobi's {}", p.iterations, jacobi.iterations);
            let levels = p.p_multigrid.as_ref().unwrap();
            assert_eq!((levels.degrees.clone(), levels.rows.last()), (vec![degree, 1], Some(&(n + 1).pow(3))), "{what}");
            counts.push(p.iterations);
        }
        assert!(counts[1] as f64 <= 1.3 * counts[0] as f64 + 2.0, "{problem:?}: {counts:?} iterations when h halves");
    }
    // more levels (BP3.5 N = 6: 6, 3, 1 and 6, 4, 2, 1) reach the same solution in about as many iterations
    let (jacobi, direct) = (solved(&solve_options(Problem::Bp35, 6, 3, None)), solved(&solve_options(Problem::Bp35, 6, 3, pmg.clone())));
    for levels in [fem::bp::PmgLevels::Halving, fem::bp::PmgLevels::Degrees(vec![4, 2, 1])] {
        let s = solved(&solve_options(Problem::Bp35, 6, 3, two(levels.clone())));
        let diff = s.u.iter().zip(&jacobi.u).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(s.converged && diff < 1e-7, "{levels:?}: {diff:e}");
        assert!(s.iterations <= direct.iterations + 3 && 4 * s.iterations < jacobi.iterations, "{levels:?}: {} iterations, two levels {}, Jacobi {}", s.iterations, direct.iterations, jacobi.iterations);
        assert_eq!(s.p_multigrid.as_ref().unwrap().rho.len() + 1, s.p_multigrid.as_ref().unwrap().degrees.len());
    }
    // across ranks the solve is Jacobi's: p-multigrid is refused with the reason
    let tuning = fem::host::tune::Tuning::at(None, "cpu");
    let e = fem::bp::across::run(&solve_options(Problem::Bp35, 4, 2, pmg.clone()), &fem::host::AnyBackend::Cpu(cpu()), &fem::host::distributed::Serial, &tuning, &|_| {}).err().unwrap().to_string();
    assert!(e.contains("Jacobi"), "{e}");
    // degree 1 has nothing to coarsen, and the degrees must descend to 1
    let mut tuning = fem::host::tune::Tuning::at(None, "cpu");
    for (n, levels, want) in [(1, vec![1], "N is 1"), (4, vec![2], "descend"), (4, vec![1, 2], "descend"), (4, vec![4, 1], "descend")] {
        let e = fem::bp::run(&solve_options(Problem::Bp35, n, 2, two(fem::bp::PmgLevels::Degrees(levels))), &fem::host::AnyBackend::Cpu(cpu()), &mut tuning, &|_, _| {}).err().unwrap().to_string();
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn bad_input_is_an_error() {
    assert!(SpectralBox::new(0, [1, 1, 1], Deformation::None).is_err());
    assert!(SpectralBox::new(16, [1, 1, 1], Deformation::None).is_err());
    assert!(SpectralBox::new(2, [0, 1, 1], Deformation::None).is_err());
    // nodes within 32 bits (1621³), element nodes past them (108³ · 16³)
    let err = SpectralBox::check(15, [108, 108, 108]).unwrap_err();
    assert!(err.to_string().contains("element nodes"), "{err}");
    assert!(SpectralBox::check(15, [100, 100, 100]).is_ok());
    // a fold: the curved map turns elements inside out
    let mesh = SpectralBox::new(3, [2, 2, 2], Deformation::Curved { amplitude: 2.0 }).unwrap();
    let err = TensorOperator::new(Problem::Bp35, &mesh, 1.0).unwrap_err();
    assert!(err.to_string().contains("inverted"), "{err}");
    assert!("bp2".parse::<Problem>().is_err());
}
