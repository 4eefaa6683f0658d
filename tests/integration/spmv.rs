//! SpMV formats built from CSR, Matrix Market files and assembly by SpMV,
//! on the CPU backend.

use crate::common;

use common::{cases, rel_err, scratch};
use fem::host::io::matrix_market::{self, Field, MatrixMarketError, Symmetry};
use fem::host::operator::csr::Csr;
use fem::host::sparse::bench::{alpha, apply_original, reference, test_vector};
use fem::host::sparse::device::prepare_cpu;
use fem::host::sparse::params::SpmvParams;
use fem::host::sparse::stats::RowStats;
use fem::host::sparse::warp::{EllWarp, Numbering};
use fem::host::sparse::SpmvFormat;
use fem::host::{CpuBackend, Scalar};

fn cpu() -> CpuBackend {
    CpuBackend::new(Some(2)).unwrap()
}

fn every_format_matches_csr<T: Scalar>(tol: f64) {
    let cpu = cpu();
    for (name, csr) in cases::<T>() {
        let stats = RowStats::of(&csr);
        let x = test_vector::<T>(csr.n_rows, 4);
        let y_ref = reference(&cpu, &csr, &x);
        for f in SpmvFormat::ALL
            .into_iter()
            .filter(|&f| f != SpmvFormat::Cusparse)
        {
            // The a-priori parameters, and small thresholds that split many rows.
            for params in [
                SpmvParams::a_priori(&stats),
                SpmvParams {
                    threshold: 1,
                    ellt_threads: 4,
                    csr_threads: 8,
                    ..SpmvParams::a_priori(&stats)
                },
            ] {
                let m = prepare_cpu(&cpu, &csr, f, &params).unwrap();
                let y = apply_original(&cpu, m.as_ref(), &x).unwrap();
                let e = rel_err(&y, &y_ref);
                assert!(e <= tol, "{name}: {} differs from CSR by {e:e}", m.name());
            }
        }
    }
}

#[test]
fn every_format_equals_csr_f64() {
    every_format_matches_csr::<f64>(1e-13);
}

#[test]
fn every_format_equals_csr_f32() {
    every_format_matches_csr::<f32>(1e-5);
}

#[test]
fn reordering_refills_values_of_the_same_pattern() {
    let cpu = cpu();
    let (_, csr) = cases::<f64>().swap_remove(2);
    let mut scaled = csr.clone();
    scaled
        .val
        .iter_mut()
        .enumerate()
        .for_each(|(i, v)| *v = *v * 3.0 + i as f64 * 1e-3);
    let x = test_vector::<f64>(csr.n_rows, 8);
    let y_ref = reference(&cpu, &scaled, &x);
    let stats = RowStats::of(&csr);
    for f in SpmvFormat::ALL
        .into_iter()
        .filter(|&f| f != SpmvFormat::Cusparse)
    {
        let mut m = prepare_cpu(&cpu, &csr, f, &SpmvParams::a_priori(&stats)).unwrap();
        m.reorder(&cpu, &scaled.val).unwrap();
        let e = rel_err(&apply_original(&cpu, m.as_ref(), &x).unwrap(), &y_ref);
        assert!(e < 1e-13, "{} after reordering: {e:e}", m.name());
    }
}

#[test]
fn ell_warp_sorts_pads_per_warp_and_splits_long_rows() {
    let cpu = cpu();
    let (_, csr) = cases::<f64>().swap_remove(2); // one row of 333 among rows of 1..5
    let k1 = EllWarp::new(&cpu, &csr, csr.n_rows, None, Numbering::Remap).unwrap();
    // Sorted longest first: the long row leads, widths never grow.
    assert_eq!(k1.perm[0], 17);
    assert_eq!(k1.slices[0].width, 333);
    assert!(k1.slices.windows(2).all(|w| w[0].width >= w[1].width));
    assert_eq!(k1.slices.len(), csr.n_rows.div_ceil(32));
    // Padding is per warp: far less than ELLPACK's rows × longest row.
    assert!(k1.slots() < csr.n_rows * 333 / 4, "{} slots", k1.slots());
    let k2 = EllWarp::new(&cpu, &csr, csr.n_rows, Some(16), Numbering::Remap).unwrap();
    // The long row gets a whole warp (333 > 32 · 16 is false: 333 / 32 = 11 per lane).
    assert_eq!((k2.slices[0].shift, k2.slices[0].width), (5, 11));
    assert!(k2.slices[1..].iter().all(|s| s.shift == 0 && s.width <= 16));
    // Renumbered sorted: every row's new columns ascend.
    let rs = EllWarp::new(&cpu, &csr, csr.n_rows, None, Numbering::RenumberSorted).unwrap();
    for s in &rs.slices {
        for lane in 0..32 {
            let cols: Vec<u32> = (0..s.width as usize)
                .map(|k| s.offset as usize + k * 32 + lane)
                .filter(|&p| rs.src[p] != u32::MAX)
                .map(|p| rs.col[p])
                .collect();
            assert!(
                cols.windows(2).all(|w| w[0] < w[1]),
                "row of lane {lane} not sorted: {cols:?}"
            );
        }
    }
}

#[test]
fn a_priori_parameters_follow_the_row_lengths() {
    let cpu = cpu();
    let fem = fem::host::sparse::generate::fem_matrix::<f64>(&cpu, 2, 2, 5000, 1, false).unwrap();
    let pl = fem::host::sparse::generate::power_law::<f64>(20000, 1.0, 2.5, 4000, 1).unwrap();
    let (sf, sp) = (RowStats::of(&fem), RowStats::of(&pl));
    let (pf, pp) = (SpmvParams::a_priori(&sf), SpmvParams::a_priori(&sp));
    pf.validate().unwrap();
    pp.validate().unwrap();
    // FEM rows stay whole; the power law's outliers get split.
    assert!(pf.threshold >= sf.max_row, "{pf:?} {sf:?}");
    assert!(pp.threshold < sp.max_row, "{pp:?} {sp:?}");
    let lengths = fem::host::sparse::model::RowLengths::of(&pl);
    let k2 = fem::host::sparse::model::candidates(SpmvFormat::K2, pp, &lengths, fem::host::BackendKind::Cuda, true);
    assert!(k2.len() > 8 * 8 && k2.iter().all(|p| p.validate().is_ok()));
    assert!(SpmvParams { block: 48, ..pf }.validate().is_err());
    assert!(SpmvParams { threshold: 0, ..pf }.validate().is_err());
}

#[test]
fn alpha_is_the_break_even_number_of_products() {
    assert_eq!(alpha(10.0, 1.0, 2.0), Some(10.0));
    assert_eq!(alpha(10.5, 1.0, 2.0), Some(11.0));
    assert_eq!(alpha(1.0, 2.0, 2.0), None);
}

#[test]
fn generated_fem_matrices_are_symmetric_and_vector_valued_blocks_scale_rows() {
    let cpu = cpu();
    let s = fem::host::sparse::generate::fem_matrix::<f64>(&cpu, 3, 1, 3000, 1, true).unwrap();
    let v = fem::host::sparse::generate::fem_matrix::<f64>(&cpu, 3, 1, 3000 * 3, 3, true).unwrap();
    assert!(matrix_market::is_symmetric(&s, 1e-12) && matrix_market::is_symmetric(&v, 1e-12));
    let mut skew = s.clone();
    skew.val[1] += 1e-6;
    assert!(!matrix_market::is_symmetric(&skew, 1e-12));
    assert_eq!(v.n_rows, 3 * s.n_rows);
    assert_eq!(v.nnz(), 9 * s.nnz());
}

// ---- Matrix Market ----

fn read(text: &str) -> Result<matrix_market::Coordinate, MatrixMarketError> {
    matrix_market::read(text.as_bytes())
}

fn line_of(text: &str) -> usize {
    match read(text) {
        Err(MatrixMarketError::Syntax { line, .. }) => line,
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn matrix_market_reads_fields_symmetry_and_duplicates() {
    let g = read("%%MatrixMarket matrix coordinate real general\n% comment\n\n3 3 4\n1 1 1.5\n3 2 -2e0\n1 1 0.5\n2 3 4\n").unwrap();
    assert_eq!(
        (g.field, g.symmetry, g.stored),
        (Field::Real, Symmetry::General, 4)
    );
    let c = g.to_csr::<f64>().unwrap();
    // Duplicates summed, columns sorted.
    assert_eq!(
        (c.row_ptr.clone(), c.col.clone(), c.val.clone()),
        (vec![0, 1, 2, 3], vec![0, 2, 1], vec![2.0, 4.0, -2.0])
    );
    let s =
        read("%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n1 1 2\n3 1 -1\n2 2 7\n")
            .unwrap();
    let c = s.to_csr::<f64>().unwrap();
    assert_eq!(c.nnz(), 4);
    assert_eq!(
        (
            c.val[c.position(0, 2).unwrap()],
            c.val[c.position(2, 0).unwrap()]
        ),
        (-1.0, -1.0)
    );
    let p = read("%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 2\n2 1\n").unwrap();
    assert_eq!(p.to_csr::<f32>().unwrap().val, vec![1.0, 1.0]);
    let e = read("%%MatrixMarket matrix coordinate real general\n5 5 0\n")
        .unwrap()
        .to_csr::<f64>()
        .unwrap();
    assert_eq!((e.n_rows, e.nnz()), (5, 0));
}

#[test]
fn malformed_matrix_market_files_name_the_line() {
    assert_eq!(
        line_of("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 3 1.0\n"),
        3
    );
    assert_eq!(
        line_of("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n"),
        4
    );
    assert_eq!(
        line_of("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 x\n"),
        3
    );
    assert_eq!(
        line_of("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 2\n"),
        4
    );
    assert_eq!(
        line_of("%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n"),
        3
    );
    assert_eq!(
        line_of("%%MatrixMarket matrix coordinate real general\n% c\n2 two 1\n"),
        3
    );
    assert_eq!(
        line_of("%%MatrixMarket matrix coordinate real general\n2 2 1\n0 1 1\n"),
        3
    );
    assert_eq!(
        line_of("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1 9\n"),
        3
    );
    assert_eq!(
        line_of("%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n"),
        2
    );
    assert_eq!(line_of("not a banner\n"), 1);
    assert_eq!(line_of(""), 1);
    assert_eq!(
        line_of("%%MatrixMarket matrix coordinate real general\n"),
        2
    );
    assert!(matches!(
        read("%%MatrixMarket matrix array real general\n2 2\n"),
        Err(MatrixMarketError::Unsupported(_))
    ));
    assert!(matches!(
        read("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n"),
        Err(MatrixMarketError::Unsupported(_))
    ));
    assert!(matches!(
        read("%%MatrixMarket matrix coordinate real general\n2 3 0\n")
            .unwrap()
            .to_csr::<f64>(),
        Err(MatrixMarketError::Unsupported(_))
    ));
}

#[test]
fn matrix_market_round_trips_general_and_symmetric() {
    let cpu = cpu();
    let dir = scratch("mm");
    let a = fem::host::sparse::generate::fem_matrix::<f64>(&cpu, 2, 3, 2000, 1, true).unwrap();
    for sym in [false, true] {
        let p = dir.join(format!("a{sym}.mtx"));
        matrix_market::write_path(&a, sym, &p).unwrap();
        let back = matrix_market::read_path(&p).unwrap();
        assert_eq!(
            back.symmetry,
            if sym {
                Symmetry::Symmetric
            } else {
                Symmetry::General
            }
        );
        let b: Csr<f64> = back.to_csr().unwrap();
        assert_eq!(
            (b.row_ptr.clone(), b.col.clone()),
            (a.row_ptr.clone(), a.col.clone())
        );
        assert_eq!(b.val, a.val, "values must round-trip exactly");
    }
    // A write that cannot happen leaves nothing behind.
    let bad = dir.join("missing-dir").join("x.mtx");
    assert!(matrix_market::write_path(&a, false, &bad).is_err());
    assert!(!bad.exists() && !bad.with_extension("mtx.partial").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- assembly by SpMV ----

#[test]
fn assembly_by_spmv_equals_scatter_assembly() {
    use fem::host::mesh::BoxMesh;
    use fem::host::operator::cell_data::CellData;
    use fem::host::operator::elements;
    use fem::host::space::{DirichletMode, Layout, Space};
    use fem::host::sparse::assembly::{with_zero, AssemblyBySpmv};
    let cpu = cpu();
    for (dim, p, cells, mode) in [
        (2, 1, 9, DirichletMode::Eliminate),
        (2, 3, 5, DirichletMode::Zero),
        (3, 2, 3, DirichletMode::Eliminate),
    ] {
        let mesh = BoxMesh::unstructured(dim, cells, 3).build().unwrap();
        let space = Space::tensor(&mesh, p).unwrap();
        let layout = Layout::new(&space, mode);
        let cd = CellData::<f64>::new(&space, &layout);
        let elems = elements::assemble(&cpu, &cd, false).unwrap();
        let csr = Csr::assemble(&cpu, &layout, &elems).unwrap();
        for threshold in [None, Some(2)] {
            let a = AssemblyBySpmv::new(&cpu, &csr, &layout, &cd, threshold).unwrap();
            let (k, b) = a.assemble(&cpu, &with_zero(&elems.vals), &with_zero(&elems.load));
            let err = k
                .iter()
                .zip(&csr.val)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            assert!(
                err < 1e-12,
                "{dim}D p{p} {mode:?} {threshold:?}: matrix differs by {err:e}"
            );
            let b_ref = elements::load_vector(&cd, &elems);
            let err = b
                .iter()
                .zip(&b_ref)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            assert!(err < 1e-12, "{dim}D p{p}: load differs by {err:e}");
        }
    }
}
