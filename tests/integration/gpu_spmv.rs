//! The SpMV formats on the GPU against the CPU CSR product (cuSPARSE too
//! when its library loads), value reordering on the device, and assembly
//! by SpMV against atomic scatter. Skipped without a CUDA device.

use crate::common;

use common::{cases, gpu, rel_err};
use fem::host::sparse::bench::{apply_original, reference, test_vector};
use fem::host::sparse::cusparse::CusparseCsr;
use fem::host::sparse::device::prepare_gpu;
use fem::host::sparse::params::SpmvParams;
use fem::host::sparse::stats::RowStats;
use fem::host::sparse::SpmvFormat;
use fem::host::{Backend, CpuBackend, CudaBackend, Scalar};


fn formats() -> Vec<SpmvFormat> {
    let with_cusparse = CusparseCsr::<f64>::available();
    if !with_cusparse {
        eprintln!("cuSPARSE not loadable: compared formats exclude it");
    }
    SpmvFormat::ALL
        .into_iter()
        .filter(|&f| with_cusparse || f != SpmvFormat::Cusparse)
        .collect()
}

fn every_format_on_gpu<T: Scalar>(g: &CudaBackend, tol: f64) {
    let cpu = CpuBackend::new(None).unwrap();
    for (name, csr) in cases::<T>() {
        let stats = RowStats::of(&csr);
        let x = test_vector::<T>(csr.n_rows, 4);
        let y_ref = reference(&cpu, &csr, &x);
        for f in formats() {
            if f == SpmvFormat::Cusparse && csr.n_rows == 0 {
                continue;
            }
            for params in [
                SpmvParams::a_priori(&stats),
                SpmvParams {
                    threshold: 1,
                    ellt_threads: 4,
                    csr_threads: 8,
                    block: 32,
                    ..SpmvParams::a_priori(&stats)
                },
            ] {
                let m = prepare_gpu(g, &cpu, &csr, f, &params).unwrap();
                let e = rel_err(&apply_original(g, m.as_ref(), &x).unwrap(), &y_ref);
                assert!(
                    e <= tol,
                    "{name}: {} on the GPU differs from CSR by {e:e}",
                    m.name()
                );
            }
        }
    }
}

#[test]
fn gpu_every_spmv_format_equals_csr() {
    let Some(g) = gpu("gpu_every_spmv_format_equals_csr") else {
        return;
    };
    every_format_on_gpu::<f64>(&g, 1e-13);
    every_format_on_gpu::<f32>(&g, 1e-5);
}

#[test]
fn gpu_reordering_matches_the_host_layout() {
    let Some(g) = gpu("gpu_reordering_matches_the_host_layout") else {
        return;
    };
    let cpu = CpuBackend::new(None).unwrap();
    let (_, csr) = cases::<f64>().swap_remove(2);
    let mut scaled = csr.clone();
    scaled.val.iter_mut().for_each(|v| *v = -2.0 * *v + 0.25);
    let x = test_vector::<f64>(csr.n_rows, 8);
    let y_ref = reference(&cpu, &scaled, &x);
    let vals = g.upload(&scaled.val).unwrap();
    for f in formats() {
        let mut m = prepare_gpu(
            &g,
            &cpu,
            &csr,
            f,
            &SpmvParams::a_priori(&RowStats::of(&csr)),
        )
        .unwrap();
        m.reorder(&g, &vals).unwrap();
        let e = rel_err(&apply_original(&g, m.as_ref(), &x).unwrap(), &y_ref);
        assert!(e < 1e-13, "{} after reordering on the GPU: {e:e}", m.name());
    }
}

#[test]
fn gpu_assembly_by_spmv_equals_cpu_assembly() {
    let Some(g) = gpu("gpu_assembly_by_spmv_equals_cpu_assembly") else {
        return;
    };
    let cpu = CpuBackend::new(None).unwrap();
    for (dim, p, threshold) in [(2, 1, None), (2, 4, Some(2)), (3, 2, None), (3, 1, Some(1))] {
        let r = fem::host::sparse::assembly::bench_gpu::<f64>(&g, &cpu, dim, p, 5000, threshold, 2)
            .unwrap();
        assert!(r.max_abs_diff < 1e-12, "{dim}D p{p} {threshold:?}: {r:?}");
    }
}

/// `fem_element_spmv` (the local matrix approach for element matrices of
/// any size) equals the CPU's rows of the same per-item function summed
/// in order, for 1 to 32 lanes per row, elements of 1, 3, 33 and 100
/// entries a row (sizes not a multiple of the warp, one huge element),
/// fixed rows and columns (`NONE` in the map) skipped, rows sharing a
/// target added atomically; and `fem_element_diagonal_add` equals the
/// diagonal entries scattered.
#[test]
fn element_matrices_of_any_size_apply_as_on_the_cpu() {
    use fem::host::cudarc::driver::PushKernelArg;
    use fem::kernels::sparse::{element_diagonal, element_row_part, NONE};
    let Some(g) = gpu("element_matrices_of_any_size_apply_as_on_the_cpu") else {
        return;
    };
    let mut rng = fem::host::rng::SplitMix64::new(7);
    for (nl, elements) in [(1, 40), (3, 301), (33, 17), (100, 1)] {
        let (rows, n) = (nl * elements, 50 + nl);
        let map: Vec<u32> = (0..rows).map(|_| if rng.below(7) == 0 { NONE } else { rng.below(n) as u32 }).collect();
        let k: Vec<f64> = (0..rows * nl).map(|_| rng.next_f64() - 0.5).collect();
        let x: Vec<f64> = (0..n).map(|_| rng.next_f64() - 0.5).collect();
        let (mut want, mut diag) = (vec![0.0; n], vec![0.0; n]);
        for r in 0..rows {
            if map[r] != NONE {
                want[map[r] as usize] += unsafe { element_row_part(r, nl, 0, 1, k.as_ptr(), map.as_ptr(), x.as_ptr()) };
                diag[map[r] as usize] += unsafe { element_diagonal(r, nl, k.as_ptr()) };
            }
        }
        let (kd, md, xd) = (g.upload(&k).unwrap(), g.stream().clone_htod(&map).unwrap(), g.upload(&x).unwrap());
        for lanes in [1u32, 2, 4, 8, 16, 32] {
            let mut y = g.zeros::<f64>(n).unwrap();
            let f = g.kernel::<f64>("element_spmv").unwrap();
            let cfg = fem::host::cudarc::driver::LaunchConfig { grid_dim: ((rows * lanes as usize).div_ceil(128) as u32, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
            unsafe { g.stream().launch_builder(&f).arg(&rows).arg(&nl).arg(&lanes).arg(&kd).arg(&md).arg(&xd).arg(&mut y).launch(cfg) }.unwrap();
            let e = rel_err(&g.download(&y).unwrap(), &want);
            assert!(e < 1e-13, "nl = {nl}, {lanes} lanes: {e:e}");
        }
        let mut d = g.zeros::<f64>(n).unwrap();
        let f = g.kernel::<f64>("element_diagonal_add").unwrap();
        unsafe { g.stream().launch_builder(&f).arg(&rows).arg(&nl).arg(&kd).arg(&md).arg(&mut d).launch(g.grid::<f64>(rows, 0)) }.unwrap();
        assert!(rel_err(&g.download(&d).unwrap(), &diag) < 1e-14, "nl = {nl}: diagonal");
    }
}

/// ELL-WARP built on the device is the host's, array for array: the same
/// row order (longest first, ties in row order), slices, columns, source
/// positions and values, for K1 and K2 at several thresholds, with the
/// padding column of the pattern matrices too; on empty rows, one long
/// row, sizes that are not a multiple of a warp and no rows at all; and a
/// row past the device's limit is an error.
#[test]
fn gpu_ell_warp_built_on_the_device_is_the_hosts() {
    use fem::host::sparse::device::GpuEllWarp;
    use fem::host::sparse::device_warp::{DeviceCsrView, DEVICE_WARP_MAX_ROW};
    use fem::host::sparse::warp::{EllWarp, Numbering};
    use fem::host::cudarc::driver::CudaSlice;
    let Some(g) = gpu("gpu_ell_warp_built_on_the_device_is_the_hosts") else {
        return;
    };
    let cpu = CpuBackend::new(None).unwrap();
    let mut all = cases::<f64>();
    all.push(("none", fem::host::operator::csr::Csr { n_rows: 0, row_ptr: vec![0], col: vec![], val: vec![] }));
    all.push(("37 rows", common::csr_from_rows(&(0..37).map(|r| (0..(r % 5) as u32).map(|c| ((c * 7 + r as u32) % 37, 1.0 + c as f64)).collect()).collect::<Vec<_>>())));
    for (name, csr) in all {
        let (row_ptr, val) = (g.stream().clone_htod(&csr.row_ptr).unwrap(), g.upload(&csr.val).unwrap());
        let col: CudaSlice<u32> = if csr.col.is_empty() { g.stream().null().unwrap() } else { g.stream().clone_htod(&csr.col).unwrap() };
        for threshold in [None, Some(1), Some(4), Some(16)] {
            for pad in [false, true] {
                let n = csr.n_rows;
                let host = match pad {
                    false => EllWarp::new(&cpu, &csr, n, threshold, Numbering::Remap).unwrap(),
                    true => EllWarp::pattern(&cpu, &csr, n, threshold).unwrap(),
                };
                let m = DeviceCsrView { n_rows: n, n_cols: host.n_cols, max_len: csr.max_row_len(), row_ptr: &row_ptr, col: &col, val: Some(&val) };
                let dev = GpuEllWarp::on_device(&g, &m, threshold, pad.then_some(n as u32), 128).unwrap();
                let what = format!("{name}, threshold {threshold:?}, pad {pad}");
                assert_eq!((dev.name.as_str(), dev.n_rows, dev.n_cols, dev.n_slices), (host.name().as_str(), n, host.n_cols, host.slices.len()), "{what}");
                let flat: Vec<u32> = host.slices.iter().flat_map(|s| [s.offset, s.width, s.row, s.shift]).collect();
                let down = |v: &CudaSlice<u32>, len: usize| if len == 0 { Vec::new() } else { g.stream().clone_dtoh(v).unwrap()[..len].to_vec() };
                assert_eq!(down(&dev.slices, flat.len()), flat, "{what}: slices");
                assert_eq!(down(&dev.perm, n), host.perm, "{what}: row order");
                assert_eq!(down(&dev.col, host.col.len()), host.col, "{what}: columns");
                assert_eq!(down(&dev.src, host.src.len()), host.src, "{what}: sources");
                assert_eq!(g.download(&dev.val).unwrap(), host.val, "{what}: values");
            }
        }
    }
    // one row past the limit
    let long = common::csr_from_rows::<f64>(&[(0..DEVICE_WARP_MAX_ROW as u32 + 1).map(|c| (c, 1.0)).collect(), vec![(0, 1.0)]]);
    let err = GpuEllWarp::from_csr(&g, &long, DEVICE_WARP_MAX_ROW + 1, None, 128).err().expect("a row past the limit is refused");
    assert!(err.to_string().contains("longer"), "{err}");
}
