//! fem's matrices and fields through faer, sprs, nalgebra-sparse and
//! ndarray: every round trip gives back the same bits, the buffers that
//! can be moved are moved (same allocation), the other crate computes
//! the same product as fem, and malformed matrices are errors, not panics.

use fem::host::interop::ndarray::{field_array, field_from_array, field_view};
use fem::host::operator::csr::Csr;

/// A rectangular matrix with an empty row, one long row and values whose
/// bits a lossy conversion would change.
fn sample() -> (Csr<f64>, usize) {
    let n_cols = 37;
    let mut row_ptr = vec![0u32];
    let (mut col, mut val) = (Vec::new(), Vec::new());
    for r in 0..33 {
        let cols: Vec<u32> = match r {
            3 => vec![],
            7 => (0..n_cols as u32).collect(),
            _ => vec![(r * 5 % n_cols) as u32, (r * 5 % n_cols + 1) as u32].into_iter().filter(|&c| (c as usize) < n_cols).collect::<Vec<_>>(),
        };
        let mut cols = cols;
        cols.sort_unstable();
        cols.dedup();
        for c in cols {
            col.push(c);
            val.push(1.0 / 3.0 + r as f64 * 1e-17 + c as f64 * std::f64::consts::PI);
        }
        row_ptr.push(col.len() as u32);
    }
    (Csr { n_rows: 33, row_ptr, col, val }, n_cols)
}

fn same_bits(a: &Csr<f64>, b: &Csr<f64>) {
    assert_eq!((a.n_rows, &a.row_ptr, &a.col), (b.n_rows, &b.row_ptr, &b.col));
    assert!(a.val.iter().zip(&b.val).all(|(x, y)| x.to_bits() == y.to_bits()) && a.val.len() == b.val.len());
}

/// y = A x by fem's own product on the host.
fn product(a: &Csr<f64>, x: &[f64]) -> Vec<f64> {
    (0..a.n_rows).map(|r| (a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize).map(|k| a.val[k] * x[a.col[k] as usize]).sum()).collect()
}

#[test]
fn faer_round_trips_by_moving_the_buffers() {
    let (a, n_cols) = sample();
    let m = a.clone().into_faer(n_cols).unwrap();
    assert_eq!((m.nrows(), m.ncols(), m.compute_nnz()), (33, n_cols, a.nnz()));
    // faer's product equals fem's
    let x: Vec<f64> = (0..n_cols).map(|i| (i as f64).sin()).collect();
    let xf = faer::Mat::<f64>::from_fn(n_cols, 1, |i, _| x[i]);
    let mut yf = faer::Mat::<f64>::zeros(33, 1);
    faer::sparse::linalg::matmul::sparse_dense_matmul(yf.as_mut(), faer::Accum::Replace, m.as_ref(), xf.as_ref(), 1.0, faer::Par::Seq);
    let y = product(&a, &x);
    assert!((0..33).all(|i| (yf[(i, 0)] - y[i]).abs() <= 1e-13 * (1.0 + y[i].abs())));
    let (back, cols) = Csr::from_faer(m).unwrap();
    assert_eq!(cols, n_cols);
    same_bits(&a, &back);
    // out and back without a clone: the same allocations
    let (p_col, p_val) = (a.col.as_ptr(), a.val.as_ptr());
    let (again, _) = Csr::from_faer(a.into_faer(n_cols).unwrap()).unwrap();
    assert_eq!((again.col.as_ptr(), again.val.as_ptr()), (p_col, p_val), "buffers moved, not copied");
}

#[test]
fn sprs_round_trips_by_moving_the_buffers() {
    let (a, n_cols) = sample();
    let m = a.clone().into_sprs(n_cols).unwrap();
    assert_eq!((m.rows(), m.cols(), m.nnz()), (33, n_cols, a.nnz()));
    let x: Vec<f64> = (0..n_cols).map(|i| (i as f64).cos()).collect();
    let y = product(&a, &x);
    let ys = &m * &ndarray::Array1::from(x.clone());
    assert!((0..33).all(|i| (ys[i] - y[i]).abs() <= 1e-13 * (1.0 + y[i].abs())));
    let (back, cols) = Csr::from_sprs(m).unwrap();
    assert_eq!(cols, n_cols);
    same_bits(&a, &back);
    let (p2_col, p2_val) = (back.col.as_ptr(), back.val.as_ptr());
    let (again, _) = Csr::from_sprs(back.into_sprs(n_cols).unwrap()).unwrap();
    assert_eq!((again.col.as_ptr(), again.val.as_ptr()), (p2_col, p2_val), "buffers moved, not copied");
    // a CSC matrix comes in as the same CSR
    let csc = a.clone().into_sprs(n_cols).unwrap().to_csc();
    same_bits(&a, &Csr::from_sprs(csc).unwrap().0);
}

#[test]
fn nalgebra_sparse_round_trips_the_same_bits() {
    let (a, n_cols) = sample();
    let m = a.clone().into_nalgebra(n_cols).unwrap();
    assert_eq!((m.nrows(), m.ncols(), m.nnz()), (33, n_cols, a.nnz()));
    let (back, cols) = Csr::from_nalgebra(m).unwrap();
    assert_eq!(cols, n_cols);
    same_bits(&a, &back);
}

#[test]
fn malformed_matrices_are_errors_in_every_direction() {
    let (a, n_cols) = sample();
    let mut unsorted = a.clone();
    let k = unsorted.row_ptr[7] as usize;
    unsorted.col.swap(k, k + 1);
    let mut short = a.clone();
    short.row_ptr.pop();
    let mut wide = a.clone();
    let last = wide.row_ptr[8] as usize - 1;
    wide.col[last] = 1000;
    for (bad, says) in [(unsorted, "strictly increasing"), (short, "offsets"), (wide, "beyond")] {
        for e in [bad.clone().into_faer(n_cols).unwrap_err(), bad.clone().into_sprs(n_cols).unwrap_err(), bad.clone().into_nalgebra(n_cols).unwrap_err()] {
            assert!(e.to_string().contains(says), "{says}: {e}");
        }
    }
    // offsets that run past the entries and come back
    let mut back = a.clone();
    back.row_ptr[1] = back.row_ptr[2] + 1;
    for e in [back.clone().into_faer(n_cols).unwrap_err(), back.clone().into_sprs(n_cols).unwrap_err(), back.clone().into_nalgebra(n_cols).unwrap_err()] {
        assert!(e.to_string().contains("decrease"), "{e}");
    }
    // a column count too small for the entries
    assert!(a.clone().into_faer(5).is_err() && a.clone().into_sprs(5).is_err() && a.into_nalgebra(5).is_err());
}

#[test]
fn fields_are_ndarray_arrays_without_copies() {
    let values: Vec<f64> = (0..30).map(|i| i as f64 / 7.0).collect();
    let v = field_view(&values, 3).unwrap();
    assert_eq!(v.dim(), (10, 3));
    assert_eq!(v[(4, 2)].to_bits(), values[14].to_bits());
    assert_eq!(v.as_ptr(), values.as_ptr());
    let a = field_array(values.clone(), 3).unwrap();
    let a_ptr = a.as_ptr();
    let back = field_from_array(a);
    assert_eq!(back.as_ptr(), a_ptr, "moved, not copied");
    assert!(back.iter().zip(&values).all(|(x, y)| x.to_bits() == y.to_bits()));
    // a transposed (non-standard) array is copied in node-major order
    let t = field_array(values.clone(), 3).unwrap().reversed_axes().as_standard_layout().into_owned().reversed_axes();
    assert_eq!(field_from_array(t), values);
    // a sliced array keeps only its rows
    let sliced = field_array(values.clone(), 3).unwrap().slice_move(ndarray::s![2.., ..]);
    assert_eq!(field_from_array(sliced), values[6..].to_vec());
    assert!(field_array(vec![0.0; 31], 3).unwrap_err().to_string().contains("not a whole number"));
    assert!(field_view(&values, 0).is_err());
}
