//! Matrices every SpMV format is checked on, shared by the CPU and GPU
//! tests, and the helpers the integration tests share.

#![allow(dead_code)]

use fem::host::backend::cuda::device_count;
use fem::host::operator::csr::Csr;
use fem::host::rng::SplitMix64;
use fem::host::{CudaBackend, Scalar};
use fem::host::mesh::simplex::SimplexBox;
use fem::host::mesh::BoxMesh;
use fem::host::space::Space;
use fem::kernels::pointwise::Variant;

/// The first GPU, or `None` after saying on stderr that `test` is skipped
/// and why.
pub fn gpu(test: &str) -> Option<CudaBackend> {
    match device_count() {
        Ok(n) if n > 0 => Some(fem::cuda(0).expect("a CUDA device is present, so the backend must open")),
        other => {
            use std::io::Write;
            let why = other.map_or_else(|e| e.to_string(), |_| "no CUDA device".into());
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
            None
        }
    }
}

/// CSR from per-row (column, value) lists, columns sorted.
pub fn csr_from_rows<T: Scalar>(rows: &[Vec<(u32, f64)>]) -> Csr<T> {
    let mut row_ptr = vec![0u32];
    let (mut col, mut val) = (Vec::new(), Vec::new());
    for r in rows {
        let mut r = r.clone();
        r.sort_by_key(|e| e.0);
        for (c, v) in r {
            col.push(c);
            val.push(T::from_f64(v));
        }
        row_ptr.push(col.len() as u32);
    }
    Csr {
        n_rows: rows.len(),
        row_ptr,
        col,
        val,
    }
}

/// A random square matrix with row lengths uniform in `lo..=hi` and distinct columns.
pub fn random<T: Scalar>(n: usize, lo: usize, hi: usize, seed: u64) -> Csr<T> {
    let mut rng = SplitMix64::new(seed);
    let rows: Vec<Vec<(u32, f64)>> = (0..n)
        .map(|_| {
            let len = (lo + rng.below(hi - lo + 1)).min(n);
            let mut cols: Vec<u32> = Vec::new();
            while cols.len() < len {
                let c = rng.below(n) as u32;
                if !cols.contains(&c) {
                    cols.push(c);
                }
            }
            cols.into_iter()
                .map(|c| (c, 2.0 * rng.next_f64() - 1.0))
                .collect()
        })
        .collect();
    csr_from_rows(&rows)
}

/// The edge cases of the standards: empty rows, one row far longer than
/// the rest, sizes not a multiple of 32, a single row, no nonzeros, plus
/// random and power-law matrices.
pub fn cases<T: Scalar>() -> Vec<(&'static str, Csr<T>)> {
    let mut long = random::<T>(333, 1, 5, 3);
    // Row 17 couples to every column.
    let mut rows: Vec<Vec<(u32, f64)>> = (0..long.n_rows)
        .map(|r| {
            (long.row_ptr[r]..long.row_ptr[r + 1])
                .map(|k| (long.col[k as usize], long.val[k as usize].to_f64()))
                .collect()
        })
        .collect();
    rows[17] = (0..333).map(|c| (c, 0.001 * c as f64 - 0.1)).collect();
    long = csr_from_rows(&rows);
    let mut empty = random::<T>(100, 0, 7, 5);
    let mut er: Vec<Vec<(u32, f64)>> = (0..empty.n_rows)
        .map(|r| {
            (empty.row_ptr[r]..empty.row_ptr[r + 1])
                .map(|k| (empty.col[k as usize], empty.val[k as usize].to_f64()))
                .collect()
        })
        .collect();
    for r in (0..100).step_by(3) {
        er[r].clear();
    }
    empty = csr_from_rows(&er);
    vec![
        ("random-1000", random(1000, 3, 40, 1)),
        ("random-33", random(33, 1, 33, 2)),
        ("one-long-row", long),
        ("empty-rows", empty),
        ("single-row", csr_from_rows(&[vec![(0, 2.5)]])),
        ("no-nonzeros", csr_from_rows(&vec![Vec::new(); 45])),
        (
            "no-rows",
            Csr {
                n_rows: 0,
                row_ptr: vec![0],
                col: vec![],
                val: vec![],
            },
        ),
        (
            "power-law",
            fem::host::sparse::generate::power_law(3000, 1.0, 2.2, 2500, 9).unwrap(),
        ),
    ]
}

/// Largest |a − b| relative to the largest |b| (1 when both are empty).
pub fn rel_err<T: Scalar>(a: &[T], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(1e-300f64, |m, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .map(|(x, y)| (x.to_f64() - y).abs())
        .fold(0.0, f64::max)
        / scale
}

/// [`rel_err`] of values that must all be finite, `b` not all zero.
pub fn rel_finite(a: &[f64], b: &[f64]) -> f64 {
    assert!(b.iter().any(|&v| v != 0.0) && a.iter().chain(b).all(|v| v.is_finite()));
    rel_err(a, b)
}

/// `n` values uniform in [−1, 1] from `seed`.
pub fn random_values(n: usize, seed: u64) -> Vec<f64> {
    let mut r = fem::host::rng::SplitMix64::new(seed);
    (0..n).map(|_| 2.0 * r.next_f64() - 1.0).collect()
}

/// Whether a test computes `v`'s element matrices on every cell: at most
/// `products` products of an entry and a point a cell. Element matrices
/// cost `n_local² · nq` a cell, which partial assembly avoids at high
/// degree; tests of those variants compare products and residuals
/// instead. [`CPU_PRODUCTS`] takes scalar Q5 and vector Q4 hexahedra,
/// [`GPU_PRODUCTS`] scalar Q4 and vector Q2: the GPU's one-thread-per-cell
/// kernel sums each entry apart, in one thread a cell.
pub fn element_matrices_testable(v: &Variant, products: usize) -> bool {
    v.n_local().pow(2) * v.nq <= products
}

/// [`element_matrices_testable`]'s bound for the CPU's element matrices.
pub const CPU_PRODUCTS: usize = 1 << 25;
/// [`element_matrices_testable`]'s bound for the GPU's.
pub const GPU_PRODUCTS: usize = 1 << 21;

pub fn pointwise_space(v: &Variant, n: usize) -> Space {
    let d = v.dim();
    if v.shape.is_simplex() {
        Space::simplex(&SimplexBox::unstructured(d, n, 5).build().unwrap(), v.degree).unwrap()
    } else {
        Space::tensor(&BoxMesh::unstructured(d, n, 5).build().unwrap(), v.degree).unwrap()
    }
}

/// Runs the `fem` binary with `args`, hermetic: no tuning file of the
/// machine running the tests.
/// `$check::<K>(gpu, aux, scale)` for every shipped physics with
/// hexahedral variants and a Jacobian: `aux(space)` its auxiliary fields
/// (and whether they are nodal), `scale` the size of a state that leaves
/// its points uninverted at Q1.
macro_rules! each_hexahedral_physics {
    ($check:ident, $gpu:expr) => {{
        use fem::host::space::Space;
        use fem::kernels::physics::{Elasticity, Mass, NeoHookean, Poisson, Radiation};
        let nodal = |s: &Space| -> (Vec<f64>, bool) {
            let mut r = fem::host::rng::SplitMix64::new(2);
            ((0..2 * s.n_dofs).map(|_| 1.0 + 2.0 * r.next_f64()).collect(), true)
        };
        let lame = |s: &Space| -> (Vec<f64>, bool) { ((0..s.n_cells()).flat_map(|c| [1.0 + (c % 5) as f64 * 0.1, 0.7]).collect(), false) };
        $check::<Poisson>($gpu, nodal, 1.0);
        $check::<Radiation>($gpu, nodal, 1.0);
        $check::<Mass>($gpu, nodal, 1.0);
        $check::<Elasticity>($gpu, lame, 1.0);
        // displacements small enough that no point inverts
        $check::<NeoHookean>($gpu, lame, 0.02);
    }};
}
pub(crate) use each_hexahedral_physics;

pub fn fem(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_fem")).env("FEM_TUNING", "off").args(args).output().expect("running fem")
}

/// An empty directory `fem-<name>-<pid>` in the system's temporary
/// directory, for one test's files.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("fem-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The Laplacian on Q_`degree` spaces of `coarse` and its `levels − 1`
/// uniform refinements, boundary rows held (unit diagonal), coarsest
/// first, with the prolongations between them (held rows and columns left
/// out): a hierarchy for the multigrid tests.
pub fn poisson_levels(cpu: &fem::host::CpuBackend, coarse: &fem::host::mesh::Mesh, degree: usize, levels: usize) -> (Vec<Csr<f64>>, Vec<Csr<f64>>) {
    use fem::host::operator::cell_data::CellData;
    use fem::host::operator::elements;
    use fem::host::space::nested::field_prolongation;
    use fem::host::space::{CellMesh, DirichletMode, Layout, NestedSpaces};
    let nested = NestedSpaces::new(CellMesh::Tensor(coarse.clone()), degree, levels).unwrap();
    let a = nested
        .spaces
        .iter()
        .map(|s| {
            let layout = Layout::new(s, DirichletMode::Zero);
            let elems = elements::assemble(cpu, &CellData::<f64>::new(s, &layout), false).unwrap();
            Csr::assemble(cpu, &layout, &elems).unwrap()
        })
        .collect();
    let p = (0..levels - 1).map(|l| field_prolongation(nested.interpolation(l).unwrap(), 1, &nested.spaces[l].boundary, &nested.spaces[l + 1].boundary).unwrap()).collect();
    (a, p)
}

/// The multigrid of the patterns of `h`'s operators (coarsest first) and
/// its prolongations, every level then refreshed with its operator's
/// values and inverse diagonal (and smoother, for SPAI(1) and SAINV) on
/// backend `bk`: what a rediscretised Newton hierarchy does with its
/// tangents.
pub fn refreshed_patterns<B: fem::host::solver::PrecondOps>(bk: &B, cpu: &fem::host::CpuBackend, h: &(Vec<Csr<f64>>, Vec<Csr<f64>>), opts: fem::host::solver::multigrid::MgOptions) -> fem::host::solver::multigrid::Multigrid<B, f64> {
    use fem::host::solver::multigrid::Multigrid;
    let patterns: Vec<&Csr<f64>> = h.0.iter().collect();
    let mut mg = Multigrid::of_patterns(bk, &patterns, &h.1, opts).unwrap();
    for (l, a) in h.0.iter().enumerate() {
        let inv: Vec<f64> = a.diag().iter().map(|d| 1.0 / d).collect();
        let val = bk.upload(&a.val).unwrap();
        mg.refresh(bk, l, &val, &bk.upload(&inv).unwrap()).unwrap();
        mg.refresh_smoother(bk, cpu, l, a, &val).unwrap();
    }
    mg
}

/// Newton on backend `b` from a set-up it owns ([`solve_owned`], its host
/// copies let go of as the backend takes them) gives what it gives from a
/// borrowed one: Q2 Poisson on hexahedra with a random load under
/// multigrid (f64 and f32, Jacobi and SPAI(1) smoothing), SPAI(1) and
/// SAINV, AMG, element
/// matrices and partial assembly. The set-up's values are zero and its
/// tangent base is 1 exactly on the fixed rows' diagonals.
///
/// [`solve_owned`]: fem::host::problem::nonlinear::solve_owned
pub fn owned_set_ups_solve_as_borrowed_ones<B: fem::host::problem::nonlinear::NewtonOps>(b: &B) {
    use fem::host::mesh::BoxMesh;
    use fem::host::operator::pointwise::Aux;
    use fem::host::problem::nonlinear::{solve, solve_owned, Assembly, Krylov, LineSearch, NewtonOptions, Precision, Precond, Setup};
    use fem::host::solver::multigrid::{MgOptions, Smoother};
    use fem::host::space::{BoundaryPart, CellMesh, Constraints, Load, NestedSpaces};
    use fem::kernels::physics::Poisson;
    let cpu = fem::host::CpuBackend::new(Some(2)).unwrap();
    // hexahedra: the GPU's partial assembly takes no quadrilaterals
    let nested = NestedSpaces::new(CellMesh::Tensor(BoxMesh::unstructured(3, 2, 4).build().unwrap()), 2, 3).unwrap();
    let space = nested.finest();
    let mut rng = fem::host::rng::SplitMix64::new(3);
    let nodal: Vec<f64> = (0..space.n_dofs).map(|_| 2.0 * rng.next_f64() - 1.0).collect();
    let load = Load::zero(space, 1).nodal_source(space, &nodal).unwrap();
    let kappa: Vec<f64> = space.dof_coords.iter().flat_map(|x| [1.0 + x[0], 0.0]).collect();
    let constraints = Constraints::none(space, 1).dirichlet(space, &BoundaryPart::All, |x, u| u[0] = x[1]).unwrap();
    let Precond::Multigrid(mg) = Precond::multigrid() else { unreachable!() };
    let spai_mg = Precond::Multigrid(MgOptions { smoother: Smoother::Spai, ..mg });
    let cases = [
        (Precond::multigrid(), Krylov::Cg, Assembly::default(), Precision::F64),
        (Precond::multigrid(), Krylov::Cg, Assembly::default(), Precision::F32),
        (spai_mg, Krylov::BiCgStab, Assembly::default(), Precision::F64),
        (Precond::Spai, Krylov::BiCgStab, Assembly::default(), Precision::F64),
        (Precond::Sainv, Krylov::Cg, Assembly::default(), Precision::F64),
        (Precond::Amg(Default::default()), Krylov::Cg, Assembly::default(), Precision::F64),
        (Precond::Jacobi, Krylov::Cg, Assembly::Lma, Precision::F64),
        (Precond::Jacobi, Krylov::Cg, Assembly::Partial, Precision::F64),
    ];
    for (precond, krylov, assembly, precision) in cases {
        let label = format!("{precond} {krylov:?} {assembly} {precision:?}");
        let finest = || Setup::<Poisson>::constrained_on(b, &cpu, space, Aux::Nodal(&kappa), &constraints, Some(&load)).unwrap();
        let levels = |s: Setup<Poisson>| match precond {
            Precond::Multigrid(_) => s.with_multigrid_on(b, &cpu, &nested),
            Precond::Amg(_) => s.with_low_order(space),
            _ => Ok(s),
        };
        // the full step: near the residual's floor the backtracking
        // search may find no decrease on sums made in any order
        let o = NewtonOptions { precond, krylov, assembly, precision, rtol: 1e-10, krylov_rtol: 1e-11, line_search: LineSearch::Full, ..Default::default() };
        let borrowed = levels(finest()).unwrap();
        assert!(borrowed.csr.val.iter().all(|&v| v == 0.0), "{label}: the pattern's values are zero");
        let base = borrowed.tangent_base();
        for r in 0..borrowed.n_rows() {
            let row = borrowed.csr.row_ptr[r] as usize..borrowed.csr.row_ptr[r + 1] as usize;
            for k in row {
                let unit = borrowed.fixed[r] && borrowed.csr.col[k] as usize == r;
                assert_eq!(base[k], unit as u8 as f64, "{label}: base at ({r}, {})", borrowed.csr.col[k]);
            }
        }
        let initial = constraints.initial();
        let (want, a) = solve(b, &borrowed, &initial, &o, &mut |_| {}).unwrap_or_else(|e| panic!("{label}, borrowed: {e}"));
        drop(borrowed);
        // the owned set-up's levels are made once its finest level is on
        // the backend and its host cell data and maps are gone
        let (got, c) = solve_owned(b, finest(), &initial, &o, &mut |s| levels(s), &mut |_| {}).unwrap_or_else(|e| panic!("{label}, owned: {e}"));
        assert!(a.converged && c.converged && a.steps.len() == c.steps.len(), "{label}: {:?} vs {:?}", a.residuals, c.residuals);
        // atomics sum in any order: within one iteration an update
        assert!(a.krylov_iterations.abs_diff(c.krylov_iterations) <= a.steps.len(), "{label}: {} vs {} iterations", a.krylov_iterations, c.krylov_iterations);
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = got.iter().zip(&want).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(scale > 0.0 && diff <= 1e-9 * scale, "{label}: {diff:e} of {scale:e}");
        assert!(!got.iter().zip(&initial).zip(&constraints.fixed).any(|((u, g), &f)| f && u != g), "{label}: fixed rows keep their values");
    }
}
