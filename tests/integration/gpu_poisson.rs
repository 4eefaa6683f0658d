//! GPU finite-element operators against the CPU: every format and scatter
//! mode gives the CPU CSR product (with and without material regions), and
//! a GPU solve the CPU's error. They
//! run when a CUDA device exists and otherwise print that they were skipped.

use crate::common;
use common::gpu;

use fem::host::mesh::BoxMesh;
use fem::host::operator::gpu::Scatter;
use fem::host::problem::poisson::{build_gpu_operator, build_operator, solve_cpu, solve_cuda, Format, PoissonOptions};
use fem::host::space::{DirichletMode, Layout, Space};
use fem::host::{Backend, CpuBackend, CudaBackend, Scalar};


fn products_match<T: Scalar>(g: &CudaBackend, tol: f64) {
    let cpu = CpuBackend::new(None).unwrap();
    // (dim, p, unstructured, cells per side): 3D Q4 also on 27 cells, fewer
    // than the 32 a block of the shared-memory LMA product takes.
    for (dim, p, unstructured, n) in [(2, 1, false, 4), (2, 2, true, 4), (2, 4, true, 4), (2, 6, true, 4), (3, 1, true, 4), (3, 2, true, 4), (3, 3, false, 4), (3, 4, true, 4), (3, 4, false, 3)] {
        let mesh_opts = if unstructured { BoxMesh::unstructured(dim, n, 3) } else { BoxMesh::structured(dim, n) };
        let mesh = mesh_opts.build().unwrap();
        let space = Space::tensor(&mesh, p).unwrap();
        // material regions (κ per cell, up to 50× apart) on the unstructured meshes
        let kappa: Option<std::sync::Arc<[f64]>> = unstructured.then(|| (0..mesh.n_cells()).map(|c| [1.0, 50.0, 0.3][c % 3]).collect());
        for mode in [DirichletMode::Eliminate, DirichletMode::Zero] {
            let layout = Layout::new(&space, mode);
            let x = fem::host::conformance::values::<T>(layout.n_rows, 9);
            let (csr, b_cpu, _) = build_operator::<T>(&cpu, &space, &layout, Format::Csr, false, kappa.as_deref()).unwrap();
            let mut want = vec![T::ZERO; layout.n_rows];
            csr.apply(&cpu, &x, &mut want).unwrap();
            let scale = want.iter().fold(0.0f64, |m, v| m.max(v.to_f64().abs()));
            for format in Format::ALL {
                for scatter in [Scatter::Atomic, Scatter::Colour] {
                    for symmetric in [false, true] {
                        if symmetric && format != Format::Lma {
                            continue;
                        }
                        let mut opts = PoissonOptions::new(mesh_opts.clone(), p);
                        opts.format = format;
                        opts.scatter = scatter;
                        opts.symmetric = symmetric;
                        opts.kappa = kappa.clone();
                        let built = build_gpu_operator::<T>(g, &cpu, &space, &layout, &opts, &|_| {}).unwrap();
                        let (op, b) = (built.op, built.load);
                        let dx = g.upload(&x).unwrap();
                        let mut dy = g.zeros::<T>(layout.n_rows).unwrap();
                        op.apply(g, &dx, &mut dy).unwrap();
                        let got = g.download(&dy).unwrap();
                        let err = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a.to_f64() - b.to_f64()).abs()));
                        let what = format!("{} {format:?} {scatter:?} sym={symmetric} dim={dim} p={p} {mode:?}", T::NAME);
                        assert!(err <= tol * scale, "{what}: product error {err:e} (scale {scale:e})");
                        let bg = g.download(&b).unwrap();
                        let berr = bg.iter().zip(&b_cpu).fold(0.0f64, |m, (a, b)| m.max((a.to_f64() - b.to_f64()).abs()));
                        let bscale = b_cpu.iter().fold(0.0f64, |m, v| m.max(v.to_f64().abs()));
                        assert!(berr <= tol * bscale.max(1e-30), "{what}: load vector error {berr:e}");
                        let (d, d0) = (g.download(&op.diagonal(g).unwrap()).unwrap(), csr.diagonal(&cpu).unwrap());
                        assert!(d.iter().zip(&d0).all(|(a, b)| (a.to_f64() - b.to_f64()).abs() <= tol * scale), "{what}: diagonal");
                    }
                }
            }
        }
    }
}

#[test]
fn gpu_formats_match_cpu_csr_f64() {
    let Some(g) = gpu("gpu_formats_match_cpu_csr_f64") else { return };
    products_match::<f64>(&g, 1e-12);
}

#[test]
fn gpu_formats_match_cpu_csr_f32() {
    let Some(g) = gpu("gpu_formats_match_cpu_csr_f32") else { return };
    products_match::<f32>(&g, 2e-5);
}

#[test]
fn gpu_solve_matches_cpu_solve() {
    let Some(g) = gpu("gpu_solve_matches_cpu_solve") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    for (dim, p) in [(2, 3), (3, 2)] {
        for format in Format::ALL {
            let mut opts = PoissonOptions::new(BoxMesh::unstructured(dim, 6, 5), p);
            opts.format = format;
            opts.scatter = Scatter::Colour;
            let c = solve_cpu::<f64>(&cpu, &opts).unwrap();
            let r = solve_cuda::<f64>(&g, &cpu, &opts).unwrap();
            assert!(r.cg.converged && (r.l2_error - c.l2_error).abs() <= 1e-6 * c.l2_error, "{format:?} dim={dim}: {} vs {}", r.l2_error, c.l2_error);
        }
    }
}

/// A problem whose operator and CG vectors alone pass the GPU's free
/// memory is refused with its size before its mesh is made (a box of 900³
/// Q1 cells as ELLPACK needs about 250 GB; its mesh would take 30 GB of
/// host memory and a minute before the first upload failed), for a given
/// format and for `auto`, which finds no storage that fits; one that fits
/// is let through.
#[test]
fn gpu_refuses_a_problem_that_cannot_fit_before_making_it() {
    use fem::host::problem::poisson::{choose_format, memory};
    use fem::host::Error;
    let Some(g) = gpu("gpu_refuses_a_problem_that_cannot_fit_before_making_it") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let free = g.free_bytes().unwrap();
    let mut opts = PoissonOptions::new(BoxMesh::structured(3, 900), 1);
    opts.format = Format::Ell;
    let needs = memory::device_bytes_at_least(&opts, 8).unwrap();
    assert!(needs > free, "{needs} bytes would fit in {free}");
    match solve_cuda::<f64>(&g, &cpu, &opts) {
        Err(e @ Error::ProblemTooLarge { .. }) => {
            let text = e.to_string();
            assert!(text.contains("900^3 cells") && text.contains("GiB"), "{text}");
        }
        other => panic!("expected a refusal, got {:?}", other.map(|r| r.dofs)),
    }
    opts.mesh = fem::host::problem::poisson::MeshSource::Box(BoxMesh::structured(3, 20));
    memory::ensure_fits(&g, &opts, 8).unwrap();
    let m = fem::host::sparse::model::Machine::measure(&fem::host::AnyBackend::Cuda(g)).unwrap();
    let e = choose_format(3, 1, 900, 8, &m, 1e3).unwrap_err().to_string();
    assert!(e.contains("needs at least"), "{e}");
    assert!(choose_format(3, 1, 20, 8, &m, 1e3).is_ok());
}

/// The formats built on the device from an uploaded pattern equal the
/// host's: every element entry's CSR slot is the host's position and its
/// ELLPACK slot the same entry's plane slot, the column planes are the
/// host's, and only fixed rows get their unit diagonal; down to a system
/// without unknowns and up to the highest tensor degree, row counts not
/// a multiple of the warp.
#[test]
fn device_pattern_matches_host() {
    use fem::host::operator::csr::Csr;
    use fem::host::operator::device_pattern::DevicePattern;
    use fem::host::operator::ell::Ell;
    use fem::host::operator::gpu::{plane_stride, GpuCells, GpuCsr, GpuEll};
    let Some(g) = gpu("device_pattern_matches_host") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let top = fem::core::shape::MAX_TENSOR_DEGREE;
    for (dim, p, mesh) in [(2, 1, BoxMesh::structured(2, 1)), (2, 1, BoxMesh::structured(2, 5)), (2, 3, BoxMesh::unstructured(2, 4, 2)), (3, 2, BoxMesh::unstructured(3, 3, 4)), (3, 1, BoxMesh::structured(3, 6)), (2, top, BoxMesh::structured(2, 2))] {
        let space = Space::tensor(&mesh.build().unwrap(), p).unwrap();
        for mode in [DirichletMode::Eliminate, DirichletMode::Zero] {
            let layout = Layout::new(&space, mode);
            let what = format!("dim={dim} p={p} {mode:?} rows={}", layout.n_rows);
            let cells = GpuCells::<f64>::upload(&g, &space, &layout, None, Scatter::Atomic).unwrap();
            let csr = Csr::<f64>::pattern(&cpu, &layout).unwrap();
            let want = csr.element_positions(&layout);
            let pattern = DevicePattern::upload(&g, &csr).unwrap();
            let ld = plane_stride(csr.n_rows);
            let at_csr = g.stream().clone_dtoh(&pattern.entry_slots(&g, &cells, 0).unwrap()).unwrap();
            assert_eq!(at_csr, want, "{what}: CSR slots");
            let at_ell = g.stream().clone_dtoh(&pattern.entry_slots(&g, &cells, ld).unwrap()).unwrap();
            for (k, (&e, &c)) in at_ell.iter().zip(&want).enumerate() {
                let expect = if c == u32::MAX {
                    u32::MAX
                } else {
                    let r = csr.row_ptr.partition_point(|&s| s <= c) - 1;
                    (c - csr.row_ptr[r]) * ld as u32 + r as u32
                };
                assert_eq!(e, expect, "{what}: ELLPACK slot of entry {k}");
            }
            let (col, _) = Ell::planes_of_csr(&csr, ld);
            let fixed = cells.fixed_mask.as_ref();
            let ell = GpuEll::on_pattern(&g, &pattern, fixed).unwrap();
            assert_eq!(g.stream().clone_dtoh(&ell.col).unwrap(), col, "{what}: column planes");
            let val = g.download(&ell.val).unwrap();
            for (s, &v) in val.iter().enumerate() {
                let unit = s < csr.n_rows && layout.fixed[s];
                assert_eq!(v, if unit { 1.0 } else { 0.0 }, "{what}: ELLPACK value of slot {s}");
            }
            let m = GpuCsr::on_pattern(&g, pattern, fixed, 1).unwrap();
            let val = g.download(&m.val).unwrap();
            for r in 0..csr.n_rows {
                for k in csr.row_ptr[r] as usize..csr.row_ptr[r + 1] as usize {
                    let unit = layout.fixed[r] && k == csr.row_ptr[r] as usize;
                    assert_eq!(val[k], if unit { 1.0 } else { 0.0 }, "{what}: CSR value of row {r}");
                }
            }
        }
    }
}

/// The pattern built on the device is the host's, row by row, with
/// fixed rows kept or eliminated, on structured, unstructured and
/// renumbered meshes, row counts not a multiple of the warp and a system
/// without unknowns; where a row passes the device's capacity (Q4
/// hexahedra, 729 columns) it declines, for the host to build it.
#[test]
fn device_built_pattern_matches_host() {
    use fem::host::operator::csr::Csr;
    use fem::host::operator::device_pattern::DevicePattern;
    use fem::host::operator::gpu::GpuCells;
    use fem::kernels::pattern::DEVICE_ROW_COLUMNS;
    let Some(g) = gpu("device_built_pattern_matches_host") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let cases = [
        (1, BoxMesh::structured(2, 1)),
        (1, BoxMesh::structured(2, 37)),
        (3, BoxMesh::unstructured(2, 9, 2)),
        (1, BoxMesh::unstructured(3, 11, 4)),
        (2, BoxMesh::unstructured(3, 5, 4)),
        (1, BoxMesh { shuffle: true, seed: 7, ..BoxMesh::structured(3, 6) }),
        (4, BoxMesh::structured(3, 2)),
    ];
    for (p, mesh) in cases {
        let space = Space::tensor(&mesh.build().unwrap(), p).unwrap();
        for mode in [DirichletMode::Eliminate, DirichletMode::Zero] {
            let layout = Layout::new(&space, mode);
            let what = format!("dim={} p={p} {mode:?} rows={}", space.dim(), layout.n_rows);
            let cells = GpuCells::<f64>::upload(&g, &space, &layout, None, Scatter::Atomic).unwrap();
            let host = Csr::<f64>::pattern(&cpu, &layout).unwrap();
            let Some(dev) = DevicePattern::of_cells(&g, &cells).unwrap() else {
                assert!(host.max_row_len() > DEVICE_ROW_COLUMNS, "{what}: declined at {} columns", host.max_row_len());
                continue;
            };
            assert!(host.max_row_len() <= DEVICE_ROW_COLUMNS, "{what}");
            assert_eq!((dev.n_rows, dev.nnz, dev.width), (host.n_rows, host.nnz(), host.max_row_len()), "{what}: sizes");
            assert_eq!(g.stream().clone_dtoh(&dev.row_ptr).unwrap(), host.row_ptr, "{what}: row offsets");
            if host.nnz() > 0 {
                assert_eq!(g.stream().clone_dtoh(&dev.col).unwrap(), host.col, "{what}: columns");
            }
        }
    }
}

/// The device's L2 error of the sine problem is the host's, for any rows
/// (not only a solution): degree 1 to the highest with element kernels
/// (Q6 in 2D, Q4 in 3D), 2D and 3D, perturbed
/// cells, fixed rows kept or eliminated, cell counts not a multiple of
/// the warp, f64 and f32.
#[test]
fn device_l2_error_matches_host() {
    use fem::host::operator::gpu::GpuCells;
    use fem::host::problem::field::QpField;
    use fem::host::problem::poisson::sine_solution;
    let Some(g) = gpu("device_l2_error_matches_host") else { return };
    for (dim, p, mesh) in [(2, 1, BoxMesh::structured(2, 7)), (2, 6, BoxMesh::unstructured(2, 3, 2)), (3, 1, BoxMesh::unstructured(3, 5, 4)), (3, 2, BoxMesh::structured(3, 3)), (3, 4, BoxMesh::unstructured(3, 2, 6))] {
        let space = Space::tensor(&mesh.build().unwrap(), p).unwrap();
        for mode in [DirichletMode::Eliminate, DirichletMode::Zero] {
            let layout = Layout::new(&space, mode);
            // the sine solution's scale plus a perturbation: errors of both sizes
            let x: Vec<f64> = fem::host::conformance::values::<f64>(layout.n_rows, 3).iter().map(|v| 0.02 * v).collect();
            let exact = sine_solution(dim);
            let want = QpField::from_rows(space.clone(), &layout, &x, |_| 0.0).l2_error(exact.0.as_ref());
            let cells = GpuCells::<f64>::upload(&g, &space, &layout, None, Scatter::Atomic).unwrap();
            let got = cells.sine_l2_error(&g, &g.upload(&x).unwrap()).unwrap();
            assert!((got - want).abs() <= 1e-12 * want, "dim={dim} p={p} {mode:?}: device {got:e}, host {want:e}");
            let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let cells = GpuCells::<f32>::upload(&g, &space, &layout, None, Scatter::Atomic).unwrap();
            let got = cells.sine_l2_error(&g, &g.upload(&xf).unwrap()).unwrap();
            assert!((got - want).abs() <= 1e-4 * want, "dim={dim} p={p} {mode:?} f32: device {got:e}, host {want:e}");
        }
    }
}

/// The cells' input made on the device (transposed map with fixed flags,
/// vertex coordinates per cell, material factors) is the host's
/// [`CellData`], entry for entry: 2D and 3D, rows eliminated or fixed,
/// cell counts not a multiple of the warp, f64 and f32; bad material
/// factors are refused before anything is sent.
#[test]
fn device_cell_inputs_match_host() {
    use fem::host::operator::cell_data::CellData;
    use fem::host::operator::gpu::GpuCells;
    let Some(g) = gpu("device_cell_inputs_match_host") else { return };
    for (dim, p, mesh) in [(2, 1, BoxMesh::structured(2, 1)), (2, 3, BoxMesh::unstructured(2, 5, 3)), (3, 2, BoxMesh::unstructured(3, 3, 1)), (3, 1, BoxMesh::structured(3, 7))] {
        let space = Space::tensor(&mesh.build().unwrap(), p).unwrap();
        let kappa: Vec<f64> = (0..space.n_cells()).map(|c| 1.0 + c as f64 / 7.0).collect();
        for mode in [DirichletMode::Eliminate, DirichletMode::Zero] {
            let layout = Layout::new(&space, mode);
            let what = format!("dim={dim} p={p} {mode:?}");
            let want = CellData::<f64>::new(&space, &layout).with_kappa(&kappa).unwrap();
            let c = GpuCells::<f64>::upload(&g, &space, &layout, Some(&kappa), Scatter::Atomic).unwrap();
            assert_eq!(g.stream().clone_dtoh(&c.map).unwrap(), want.map, "{what}: map");
            assert_eq!(g.download(&c.verts).unwrap(), want.verts, "{what}: vertices");
            assert_eq!(g.download(&c.kappa).unwrap(), want.kappa, "{what}: κ");
            assert_eq!(c.fixed_rows, want.fixed_rows, "{what}: fixed rows");
            let c = GpuCells::<f32>::upload(&g, &space, &layout, None, Scatter::Atomic).unwrap();
            let want32: Vec<f32> = want.verts.iter().map(|&v| v as f32).collect();
            assert_eq!(g.download(&c.verts).unwrap(), want32, "{what}: f32 vertices");
        }
        let layout = Layout::new(&space, DirichletMode::Eliminate);
        assert!(GpuCells::<f64>::upload(&g, &space, &layout, Some(&kappa[1..]), Scatter::Atomic).is_err());
        let mut bad = kappa.clone();
        bad[0] = -1.0;
        assert!(GpuCells::<f64>::upload(&g, &space, &layout, Some(&bad), Scatter::Atomic).is_err());
    }
}
