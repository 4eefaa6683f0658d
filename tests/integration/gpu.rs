//! GPU tests: the conformance suite, the device prelude, the copy probe
//! and GPU = CPU on the demo. They run when a CUDA device exists and
//! otherwise print that they were skipped.

use fem::host::backend::cuda::device_count;

/// Writes past the test harness's output capture, so a skip is visible in
/// a normal `cargo test` run.
macro_rules! skipped {
    ($($t:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}
use fem::host::{conformance, roofline, Backend, CpuBackend, CudaBackend, Error};

/// The GPU backend, or `None` (with a SKIPPED line) on a machine without one.
fn gpu(test: &str) -> Option<CudaBackend> {
    match device_count() {
        Ok(n) if n > 0 => Some(fem::cuda(0).expect("a CUDA device is present, so the backend must open")),
        Ok(_) => {
            skipped!("SKIPPED {test}: no CUDA device");
            None
        }
        Err(e) => {
            skipped!("SKIPPED {test}: {e}");
            None
        }
    }
}

#[test]
fn gpu_blas_conformance() {
    let Some(g) = gpu("gpu_blas_conformance") else { return };
    eprintln!("device: {} (PTX {})", g.name(), g.ptx_arch());
    conformance::check_blas(&g).unwrap();
    conformance::check_krylov(&g).unwrap();
}

#[test]
fn gpu_device_prelude() {
    let Some(g) = gpu("gpu_device_prelude") else { return };
    conformance::check_cuda_prelude(&g).unwrap();
}

#[test]
fn gpu_demo_matches_cpu_in_both_precisions() {
    let Some(g) = gpu("gpu_demo_matches_cpu_in_both_precisions") else { return };
    for r in [
        fem::demo::kernels::run::<_, f32>(&g, Some(&g), 3_000_017, 3, |_| {}).unwrap(),
        fem::demo::kernels::run::<_, f64>(&g, Some(&g), 3_000_017, 3, |_| {}).unwrap(),
    ] {
        assert!(r.passed, "{r}");
    }
}

#[test]
fn gpu_copy_probe() {
    let Some(g) = gpu("gpu_copy_probe") else { return };
    let p = g.props();
    let memcpy = roofline::copy_bandwidth(&g, 1 << 30, 10).unwrap();
    let kernel = roofline::copy_kernel_bandwidth(&g, 1 << 30, 10).unwrap();
    let theory = p.theoretical_bandwidth.unwrap_or(f64::NAN);
    eprintln!(
        "{}: copy of 1 GiB: memcpy {:.0} GB/s, copy kernel {:.0} GB/s (read + written); theoretical {:.0} GB/s; memcpy/theoretical {:.3}",
        p.name,
        memcpy.bytes_per_second / 1e9,
        kernel.bytes_per_second / 1e9,
        theory / 1e9,
        memcpy.bytes_per_second / theory
    );
    assert!(memcpy.bytes_per_second > 0.0 && kernel.bytes_per_second > 0.0);
    if p.theoretical_bandwidth.is_some() {
        // A measurement above the hardware's peak means the timing is wrong.
        assert!(memcpy.bytes_per_second < 1.05 * theory && kernel.bytes_per_second < 1.05 * theory);
    }
}

#[test]
fn gpu_cold_copy_reads_dram() {
    let Some(g) = gpu("gpu_cold_copy_reads_dram") else { return };
    let p = g.props();
    let Some(theory) = p.theoretical_bandwidth else {
        eprintln!("SKIPPED gpu_cold_copy_reads_dram: the driver reports no memory clock");
        return;
    };
    // source and destination together a quarter of L2: held there when warm
    let l2 = p.l2_cache_bytes as usize;
    let buffer = l2 / 8;
    let sets = roofline::cold_sets(2 * buffer, l2);
    let cold = roofline::best_copy_bandwidth_cycled(&g, buffer, 10, 20, sets).unwrap();
    let warm = roofline::best_copy_bandwidth_cycled(&g, buffer, 10, 20, 1).unwrap();
    eprintln!(
        "{}: copy of {} KB, {} sets cycled: {:.0} GB/s, one set: {:.0} GB/s; theoretical DRAM {:.0} GB/s",
        p.name,
        buffer >> 10,
        sets,
        cold.bytes_per_second / 1e9,
        warm.bytes_per_second / 1e9,
        theory / 1e9
    );
    assert!(sets >= 12, "three L2 sizes cycled: {sets} sets");
    // from DRAM, so never above its peak (a copy from L2 may be)
    assert!(cold.bytes_per_second < 1.05 * theory);
}

#[test]
fn gpu_refuses_allocations_larger_than_free_memory() {
    let Some(g) = gpu("gpu_refuses_allocations_larger_than_free_memory") else { return };
    let too_many = g.props().total_memory_bytes / 8 + 1;
    match g.zeros::<f64>(too_many) {
        Err(Error::OutOfDeviceMemory { requested, free }) => assert!(requested > free),
        other => panic!("expected OutOfDeviceMemory, got {:?}", other.map(|v| v.len())),
    }
}

#[test]
fn missing_ptx_is_a_clear_error() {
    static EMPTY: fem::host::PtxSet = fem::host::PtxSet { crate_name: "fem-kernels", sources: &[], unavailable: Some("device rustc not found") };
    match CudaBackend::new(0, &EMPTY) {
        Err(Error::PtxNotBuilt(why)) => {
            let msg = Error::PtxNotBuilt(why).to_string();
            assert!(msg.contains("device rustc not found") && msg.contains("apt-get install rustc-web"), "{msg}");
        }
        Err(Error::CudaUnavailable(why)) => skipped!("SKIPPED missing_ptx_is_a_clear_error (no GPU: {why})"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a backend opened without PTX"),
    }
}

#[test]
fn auto_falls_back_to_cpu_with_a_reason() {
    let (b, why) = fem::open_backend(fem::host::BackendChoice::Auto).unwrap();
    match device_count() {
        Ok(n) if n > 0 => assert!(why.is_none() && b.kind() == fem::host::BackendKind::Cuda),
        _ => {
            assert_eq!(b.kind(), fem::host::BackendKind::Cpu);
            assert!(why.unwrap().contains("CUDA is not available"));
        }
    }
    let _ = CpuBackend::new(Some(1)).unwrap();
}

/// Views at odd offsets are not 16-byte aligned, so the streaming kernels
/// take their scalar path; with one aligned and one unaligned pointer too.
#[test]
fn gpu_unaligned_views_take_the_scalar_path() {
    use fem::host::cudarc::driver::PushKernelArg;
    use fem::host::conformance::values;
    let Some(g) = gpu("gpu_unaligned_views_take_the_scalar_path") else { return };
    let n = 100_003;
    let x = values::<f64>(n + 1, 5);
    let y = values::<f64>(n + 1, 6);
    for (xo, yo) in [(1usize, 1usize), (0, 1), (1, 0)] {
        let dx = g.upload(&x).unwrap();
        let mut dy = g.upload(&y).unwrap();
        let xv = dx.slice(xo..xo + n);
        let mut yv = dy.slice_mut(yo..yo + n);
        let f = g.function("fem_axpy_f64").unwrap();
        let alpha = 0.25f64;
        unsafe { g.stream().launch_builder(&f).arg(&n).arg(&alpha).arg(&xv).arg(&mut yv).launch(g.grid::<f64>(n, 0)) }.unwrap();
        let got = g.stream().clone_dtoh(&yv).unwrap();
        for i in 0..n {
            assert_eq!(got[i].to_bits(), (alpha * x[xo + i] + y[yo + i]).to_bits(), "offsets ({xo}, {yo}), element {i}");
        }
        let mut partial = g.zeros::<f64>(4096).unwrap();
        let cfg = g.grid::<f64>(n, 8 * 8);
        let f = g.function("fem_dot_partial_f64").unwrap();
        unsafe { g.stream().launch_builder(&f).arg(&n).arg(&xv).arg(&mut yv).arg(&mut partial).launch(cfg) }.unwrap();
        let parts = g.download(&partial).unwrap();
        let got: f64 = parts[..cfg.grid_dim.0 as usize].iter().sum();
        let want: f64 = (0..n).map(|i| x[xo + i] * got_y(&y, yo, alpha, &x, xo, i)).sum();
        let scale: f64 = (0..n).map(|i| (x[xo + i] * got_y(&y, yo, alpha, &x, xo, i)).abs()).sum();
        assert!((got - want).abs() <= 2.0 * n as f64 * f64::EPSILON * scale, "dot at offsets ({xo}, {yo}): {got} vs {want}");
    }
}

/// y after the axpy above.
fn got_y(y: &[f64], yo: usize, alpha: f64, x: &[f64], xo: usize, i: usize) -> f64 {
    alpha * x[xo + i] + y[yo + i]
}

/// `write` copies host values into a vector in place, on either backend,
/// and refuses a length that does not match.
fn write_in_place<B: Backend>(b: &B) {
    let mut v = b.zeros::<f64>(5).unwrap();
    b.write(&[1.0, -2.0, 3.5, 0.25, 9.0], &mut v).unwrap();
    assert_eq!(b.download(&v).unwrap(), vec![1.0, -2.0, 3.5, 0.25, 9.0]);
    b.write(&[7.0; 5], &mut v).unwrap();
    assert_eq!(b.download(&v).unwrap(), vec![7.0; 5]);
    assert!(matches!(b.write(&[1.0; 4], &mut v), Err(Error::LengthMismatch { .. })));
    let mut empty = b.zeros::<f64>(0).unwrap();
    b.write(&[], &mut empty).unwrap();
}

#[test]
fn write_replaces_values_in_place() {
    write_in_place(&CpuBackend::new(Some(1)).unwrap());
}

#[test]
fn gpu_write_replaces_values_in_place() {
    let Some(g) = gpu("gpu_write_replaces_values_in_place") else { return };
    write_in_place(&g);
}

/// Copies through the page-locked buffers (arrays of 4 MiB and more, in
/// chunks of 16 MiB) give back what went in: below and at the threshold,
/// one partial chunk, exactly two chunks, chunks and a remainder, in f64,
/// f32 and u32; uploads back to back (a buffer reused while the device may
/// still read the other), writes in place, and the download of values a
/// kernel computed.
#[test]
fn gpu_staged_copies_round_trip() {
    let Some(g) = gpu("gpu_staged_copies_round_trip") else { return };
    let mix = |i: usize, salt: u64| (i as u64 ^ salt).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17;
    let lengths = [524_287, 524_288, 1_000_003, 4_194_304, 4_194_305, 10_485_763];
    let host: Vec<Vec<f64>> = lengths.iter().enumerate().map(|(k, &n)| (0..n).map(|i| mix(i, k as u64) as f64 * 0.5).collect()).collect();
    let device: Vec<_> = host.iter().map(|h| g.upload(h).unwrap()).collect();
    for (h, d) in host.iter().zip(&device) {
        assert!(g.download(d).unwrap() == *h, "f64, {} values", h.len());
    }
    let f: Vec<f32> = (0..9_437_185).map(|i| mix(i, 7) as f32).collect();
    assert!(g.download(&g.upload(&f).unwrap()).unwrap() == f, "f32");
    let u: Vec<u32> = (0..12_582_919).map(|i| mix(i, 9) as u32).collect();
    assert!(g.dtoh(&g.htod(&u).unwrap()).unwrap() == u, "u32");
    // in place, then 2x + y computed on the device
    let mut d = g.upload(&host[4]).unwrap();
    let y: Vec<f64> = (0..host[4].len()).map(|i| mix(i, 3) as f64).collect();
    g.write(&y, &mut d).unwrap();
    assert!(g.download(&d).unwrap() == y, "written in place");
    let x = g.upload(&host[4]).unwrap();
    g.axpy(2.0, &x, &mut d).unwrap();
    let want: Vec<f64> = host[4].iter().zip(&y).map(|(x, y)| 2.0 * x + y).collect();
    assert!(g.download(&d).unwrap() == want, "a kernel's values");
}

/// The element restriction gathers the same E-vector and scatters the
/// same sums on the GPU as on the CPU: a three-component Q3 field on a
/// shuffled, perturbed mesh (E-vector length not a multiple of the warp),
/// with skipped entries, which read zero and add nowhere; an empty map
/// gathers and scatters nothing, and wrong lengths are refused.
#[test]
fn gpu_restriction_matches_the_cpu_restriction() {
    use fem::host::mesh::BoxMesh;
    use fem::host::space::restriction::{Restriction, SKIP};
    use fem::host::space::Space;
    let Some(g) = gpu("gpu_restriction_matches_the_cpu_restriction") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let mesh = BoxMesh { dim: 2, cells: 5, perturb: 0.2, shuffle: true, seed: 3 }.build().unwrap();
    let space = Space::tensor(&mesh, 3).unwrap();
    let full = space.restriction(3);
    let map: Vec<u32> = full.map.iter().enumerate().map(|(k, &r)| if k % 7 == 3 { SKIP } else { r }).collect();
    for r in [full.clone(), Restriction::new(map, full.rows()), Restriction::new(Vec::new(), 4)] {
        assert!(r.map.is_empty() || r.map.len() % 32 != 0, "a partial last warp");
        let x = conformance::values::<f64>(r.rows(), 11);
        let ye = conformance::values::<f64>(r.map.len(), 12);
        let mut xe = vec![0.0; r.map.len()];
        r.gather(&cpu, &x, &mut xe).unwrap();
        let mut y = vec![0.0; r.rows()];
        r.scatter(&cpu, &ye, &mut y);
        let d = r.upload(&g).unwrap();
        let mut xe_d = g.zeros::<f64>(r.map.len()).unwrap();
        d.gather(&g, &g.upload(&x).unwrap(), &mut xe_d).unwrap();
        assert_eq!(g.download(&xe_d).unwrap(), xe);
        let mut y_d = g.zeros::<f64>(r.rows()).unwrap();
        d.add(&g, &g.upload(&ye).unwrap(), &mut y_d).unwrap();
        let got = g.download(&y_d).unwrap();
        let err = got.iter().zip(&y).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(err < 1e-13, "atomic sums differ from the row sums by {err:e}");
        assert!(d.gather(&g, &g.zeros::<f64>(r.rows() + 1).unwrap(), &mut xe_d).is_err());
        assert!(d.add(&g, &g.upload(&ye).unwrap(), &mut g.zeros::<f64>(r.rows() + 1).unwrap()).is_err());
    }
}
