//! The tensor-product kernels on the GPU against the CPU reference: every
//! degree 1..=15 of BP1.0, BP3.5 (lines up to N = 8 with the column in
//! registers and in shared memory, and at N = 7 and 8 with the factors
//! through a shared ring of every depth; 2D slices above, 3D threads up
//! to N = 7) and BP3.0, the factors read or recomputed from the corners
//! of trilinear elements, on element blocks and assembled through the map, with
//! element counts that leave partial blocks; and the GPU Jacobi-CG.
//! Skipped without a device.

use crate::common;
use common::{gpu, rel_err};
use fem::host::sparse::bench::test_vector;

use fem::host::mesh::spectral::{Deformation, SpectralBox};
use fem::host::operator::tensor::gpu::{recomputes_at, Column, GpuTensor, MAX_DEGREE_3D, MAX_DEGREE_LINES, MAX_DEGREE_RECOMPUTE, RING_AHEAD, RING_DEGREES};
use fem::host::operator::tensor::tuning::BpLaunch;
use fem::host::operator::tensor::{Problem, TensorOperator};
use fem::host::operator::LinearOperator;
use fem::host::solver::cg::{cg, CgOptions};
use fem::host::{Backend, CpuBackend, CudaBackend};


fn check(g: &CudaBackend, op: &TensorOperator, threads_3d: bool, epb: Option<usize>) {
    check_column(g, op, threads_3d, epb, None)
}

fn check_column(g: &CudaBackend, op: &TensorOperator, threads_3d: bool, epb: Option<usize>, column: Option<Column>) {
    check_launch(g, op, threads_3d, epb, column, 0)
}

fn check_launch(g: &CudaBackend, op: &TensorOperator, threads_3d: bool, epb: Option<usize>, column: Option<Column>, ring: usize) {
    check_factors(g, op, threads_3d, epb, column, ring, false)
}

fn check_factors(g: &CudaBackend, op: &TensorOperator, threads_3d: bool, epb: Option<usize>, column: Option<Column>, ring: usize, recompute: bool) {
    let cpu = CpuBackend::new(None).unwrap();
    let builtin = BpLaunch::builtin(op.problem, op.degree, threads_3d);
    let l = BpLaunch { elements_per_block: epb.unwrap_or(builtin.elements_per_block), column, ring, recompute, ..builtin };
    let t = GpuTensor::with_launch(g, op, l).unwrap();
    let recomputes = recompute && op.corners.is_some() && recomputes_at(t.kernel, op.degree);
    assert_eq!(t.recomputes, recomputes, "the kernel recomputes the factors of trilinear elements where asked");
    assert_eq!(t.ring, if recomputes { 0 } else { ring }, "the named ring must be launched where the factors are read");
    if let Some(c) = column {
        assert_eq!(t.column, c, "the named column must be launched");
    }
    let what = format!("{:?} N={} E={} {:?} epb={} column {:?} ring {} recomputed {}", op.problem, op.degree, op.elements, t.kernel, t.elements_per_block, t.column, t.ring, t.recomputes);
    // element blocks
    let x = test_vector::<f64>(op.element_dofs(), 11);
    let mut want = vec![0.0; x.len()];
    op.apply_elements(&x, &mut want).unwrap();
    let xd = g.upload(&x).unwrap();
    let mut yd = g.upload(&vec![f64::NAN; x.len()]).unwrap();
    t.apply_elements(&xd, &mut yd).unwrap();
    let err = rel_err(&g.download(&yd).unwrap(), &want);
    assert!(err < 1e-13, "{what}: E-vector error {err:e}");
    // assembled
    let n = op.restriction.rows();
    let xl = test_vector::<f64>(n, 12);
    let mut want = vec![0.0; n];
    op.apply(&cpu, &xl, &mut want).unwrap();
    let xd = g.upload(&xl).unwrap();
    let mut yd = g.upload(&vec![f64::NAN; n]).unwrap();
    t.apply(g, &xd, &mut yd).unwrap();
    let err = rel_err(&g.download(&yd).unwrap(), &want);
    assert!(err < 1e-13, "{what}: L-vector error {err:e}");
}

#[test]
fn every_degree_matches_the_cpu() {
    let Some(g) = gpu("every_degree_matches_the_cpu") else { return };
    for degree in 1..=15 {
        // 7 elements: partial blocks for every elements-per-block above 1
        let mesh = SpectralBox::new(degree, [1, 1, 7], Deformation::Curved { amplitude: 0.05 }).unwrap();
        for problem in [Problem::Bp1, Problem::Bp35, Problem::Bp30] {
            let op = TensorOperator::new(problem, &mesh, 1.3).unwrap();
            check(&g, &op, false, None);
            check(&g, &op, false, Some(1));
            if problem == Problem::Bp35 && degree <= MAX_DEGREE_LINES {
                for column in [Column::Registers, Column::Shared] {
                    check_column(&g, &op, false, None, Some(column));
                    check_column(&g, &op, false, Some(1), Some(column));
                }
            }
            if problem == Problem::Bp35 && RING_DEGREES.contains(&degree) {
                for ring in RING_AHEAD {
                    for epb in [None, Some(1), Some(3)] {
                        check_launch(&g, &op, false, epb, Some(Column::Shared), ring);
                    }
                }
            }
            if problem == Problem::Bp35 && degree <= MAX_DEGREE_3D {
                check(&g, &op, true, None);
                check(&g, &op, true, Some(1));
            }
        }
    }
}

/// BP1's, BP3.0's and BP3.5's line kernel recomputing the geometric
/// factors from the corners of affine and trilinear elements equal the
/// CPU with its stored factors at every degree of the kernels (BP3.5's
/// both columns), with partial blocks and a register budget, on E- and
/// L-vectors, and the same launch reading the stored factors to
/// rounding. Curved elements have no corners: asked to recompute, the
/// kernel reads the factors; above N = 8 no kernel recomputes.
#[test]
fn recomputed_factors_equal_the_stored_ones() {
    let Some(g) = gpu("recomputed_factors_equal_the_stored_ones") else { return };
    for (problem, degree) in [Problem::Bp1, Problem::Bp35, Problem::Bp30].into_iter().flat_map(|p| (1..=MAX_DEGREE_RECOMPUTE).map(move |n| (p, n))) {
        for d in [Deformation::None, Deformation::Trilinear { amplitude: 0.25, seed: 3 }] {
            // 18 elements: partial blocks for 4 and 5 elements per block
            let mesh = SpectralBox::new(degree, [2, 3, 3], d).unwrap();
            let op = TensorOperator::new(problem, &mesh, 1.3).unwrap();
            assert!(op.corners.is_some(), "N = {degree} {d:?}: trilinear elements have corners");
            let columns = if problem == Problem::Bp35 { vec![Some(Column::Registers), Some(Column::Shared)] } else { vec![None] };
            for column in columns {
                for epb in [None, Some(1), Some(4)] {
                    check_factors(&g, &op, false, epb, column, 0, true);
                }
            }
            let builtin = BpLaunch::builtin(op.problem, op.degree, false);
            let mut t = GpuTensor::with_launch(&g, &op, BpLaunch { recompute: true, min_warps: 16, ..builtin }).unwrap();
            assert!(t.recomputes);
            let x = g.upload(&test_vector::<f64>(op.restriction.rows(), 8)).unwrap();
            let apply = |t: &GpuTensor| {
                let mut y = g.zeros::<f64>(op.restriction.rows()).unwrap();
                t.apply(&g, &x, &mut y).unwrap();
                g.download(&y).unwrap()
            };
            let recomputed = apply(&t);
            t.set_launch(builtin).unwrap();
            assert!(!t.recomputes, "N = {degree}: the built-in launch reads the factors");
            let err = rel_err(&recomputed, &apply(&t));
            assert!(err < 1e-13, "{problem:?} N = {degree} {d:?}: recomputed against stored factors {err:e}");
        }
    }
    for problem in [Problem::Bp1, Problem::Bp35, Problem::Bp30] {
        let curved = SpectralBox::new(3, [2, 2, 2], Deformation::Curved { amplitude: 0.05 }).unwrap();
        let op = TensorOperator::new(problem, &curved, 1.0).unwrap();
        assert!(op.corners.is_none(), "curved elements have no corners");
        check_factors(&g, &op, false, None, None, 0, true);
        let high = SpectralBox::new(MAX_DEGREE_RECOMPUTE + 1, [1, 1, 2], Deformation::None).unwrap();
        let op = TensorOperator::new(problem, &high, 1.0).unwrap();
        check_factors(&g, &op, false, None, None, 0, true);
    }
}

#[test]
fn larger_mesh_and_bad_launches() {
    let Some(g) = gpu("larger_mesh_and_bad_launches") else { return };
    let mesh = SpectralBox::new(3, [9, 7, 5], Deformation::Trilinear { amplitude: 0.2, seed: 4 }).unwrap();
    for problem in [Problem::Bp1, Problem::Bp35, Problem::Bp30] {
        let op = TensorOperator::new(problem, &mesh, 0.5).unwrap();
        check(&g, &op, false, Some(3));
    }
    let op = TensorOperator::new(Problem::Bp35, &mesh, 0.5).unwrap();
    assert!(GpuTensor::new(&g, &op, false, Some(1000)).is_err(), "16000 threads per block must be refused");
    let high = SpectralBox::new(8, [1, 1, 1], Deformation::None).unwrap();
    let op = TensorOperator::new(Problem::Bp35, &high, 0.5).unwrap();
    assert!(GpuTensor::new(&g, &op, true, None).is_err(), "729 threads per element exceed the 3D variant");
    let refused = |op: &TensorOperator, ring: usize, column: Option<Column>| GpuTensor::with_launch(&g, op, BpLaunch { column, ring, ..BpLaunch::builtin(op.problem, op.degree, false) }).is_err();
    let mut t = GpuTensor::new(&g, &op, false, None).unwrap();
    assert_eq!((t.recomputes, t.ring), (false, 2), "N = 8 takes its ring by default");
    t.set_launch(BpLaunch { recompute: true, ..BpLaunch::builtin(op.problem, op.degree, false) }).unwrap();
    assert_eq!((t.recomputes, t.ring), (true, 0), "recomputing its factors, N = 8 has no ring to stream them");
    assert!(refused(&op, 5, None), "no ring five slices deep");
    assert!(refused(&op, 2, Some(Column::Registers)), "the ring keeps its column in shared memory");
    let low = TensorOperator::new(Problem::Bp35, &mesh, 0.5).unwrap();
    assert!(refused(&low, 2, None), "no ring at N = 3");
    let bp1 = TensorOperator::new(Problem::Bp1, &high, 0.5).unwrap();
    assert!(refused(&bp1, 2, None), "no ring for BP1");
}

#[test]
fn a_replica_applies_the_same_operator() {
    let Some(g) = gpu("a_replica_applies_the_same_operator") else { return };
    let mesh = SpectralBox::new(5, [2, 3, 2], Deformation::Curved { amplitude: 0.05 }).unwrap();
    for problem in [Problem::Bp1, Problem::Bp35, Problem::Bp30] {
        let op = TensorOperator::new(problem, &mesh, 0.7).unwrap();
        let t = GpuTensor::new(&g, &op, false, Some(2)).unwrap();
        let r = t.replica().unwrap();
        assert_eq!((r.kernel, r.elements_per_block, r.column), (t.kernel, t.elements_per_block, t.column));
        let x = g.upload(&test_vector::<f64>(op.element_dofs(), 5)).unwrap();
        let apply = |t: &GpuTensor| {
            let mut y = g.upload(&vec![f64::NAN; op.element_dofs()]).unwrap();
            t.apply_elements(&x, &mut y).unwrap();
            g.download(&y).unwrap()
        };
        let (a, b) = (apply(&t), apply(&r));
        assert!(a.iter().all(|v| v.is_finite()) && a.iter().any(|&v| v != 0.0), "{problem:?}: the original applies");
        assert_eq!(a, b, "{problem:?}: the replica's data are the original's");
        // through the map, whose atomic sums may differ in order
        let n = op.restriction.rows();
        let xl = g.upload(&test_vector::<f64>(n, 6)).unwrap();
        let (mut y1, mut y2) = (g.zeros::<f64>(n).unwrap(), g.zeros::<f64>(n).unwrap());
        t.apply(&g, &xl, &mut y1).unwrap();
        r.apply(&g, &xl, &mut y2).unwrap();
        let err = rel_err(&g.download(&y2).unwrap(), &g.download(&y1).unwrap());
        assert!(err < 1e-14, "{problem:?}: the replica's map is the original's ({err:e})");
    }
}

#[test]
fn jacobi_cg_on_the_gpu_matches_the_cpu() {
    let Some(g) = gpu("jacobi_cg_on_the_gpu_matches_the_cpu") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let mesh = SpectralBox::new(4, [3, 3, 3], Deformation::Trilinear { amplitude: 0.2, seed: 2 }).unwrap();
    let op = TensorOperator::new(Problem::Bp35, &mesh, 1.0).unwrap();
    let t = GpuTensor::new(&g, &op, false, None).unwrap();
    let b = test_vector::<f64>(mesh.n_nodes, 3);
    let opts = CgOptions { rtol: 1e-10, max_iterations: 5000, jacobi: true };
    let mut uc = vec![0.0; mesh.n_nodes];
    let rc = cg(&cpu, &op, &b, &mut uc, opts).unwrap();
    let bd = g.upload(&b).unwrap();
    let mut ud = g.zeros::<f64>(mesh.n_nodes).unwrap();
    let rg = cg(&g, &t, &bd, &mut ud, opts).unwrap();
    assert!(rc.converged && rg.converged);
    assert!((rc.iterations as i64 - rg.iterations as i64).abs() <= 2, "{} vs {}", rc.iterations, rg.iterations);
    let err = rel_err(&g.download(&ud).unwrap(), &uc);
    assert!(err < 1e-8, "solution differs by {err:e}");
}

/// `fem bp` across ranks on the GPUs (threads of this process, rank r on
/// GPU r mod the GPUs; through NCCL where each rank has its own): each
/// rank's product equals the CPU operator on its piece, and the product's
/// norm and the Jacobi-CG solve equal one CPU rank's.
#[test]
fn bp_across_gpu_ranks_equals_one_cpu_rank() {
    let Some(first) = gpu("bp_across_gpu_ranks_equals_one_cpu_rank") else {
        return;
    };
    drop(first);
    use fem::bp::{across, BpOptions, Size};
    use fem::host::distributed::{Communicator, Serial, Threads};
    use fem::host::AnyBackend;
    let gpus = fem::host::backend::cuda::device_count().unwrap();
    let tuning = fem::host::tune::Tuning::at(None, "test");
    for (problem, degree) in [(Problem::Bp35, 7), (Problem::Bp30, 3), (Problem::Bp35, 2)] {
        let o = BpOptions {
            problem,
            degree,
            size: Size::Elements(105),
            deformation: Deformation::Trilinear { amplitude: 0.1, seed: 1 },
            lambda: 1.0,
            launch: Default::default(),
            repeats: 2,
            assembled: true,
            cpu_time: false,
            solve: Some(1e-10),
            p_multigrid: None,
            tune: false,
            l2: fem::bp::L2::Warm,
        };
        let cpu = AnyBackend::Cpu(CpuBackend::new(None).unwrap());
        let one = across::run(&o, &cpu, &Serial, &tuning, &|_| {}).unwrap();
        for ranks in [2, 3] {
            let out = Threads::run(ranks, |comm| {
                let gpu = AnyBackend::Cuda(fem::cuda(comm.rank() % gpus).unwrap());
                across::run(&o, &gpu, comm, &tuning, &|_| {}).unwrap()
            });
            for r in &out {
                let what = format!("{problem:?} N={degree} on {ranks} ranks ({gpus} GPUs, halo by {})", r.halo_transport);
                // the interior elements' products ran while the halo travelled
                assert!(r.overlapped && r.sequential_seconds_per_apply.is_some(), "{what}");
                assert!(r.max_rel_error_vs_cpu < 1e-12, "{what}: {:e}", r.max_rel_error_vs_cpu);
                assert!((r.product_norm - one.product_norm).abs() <= 1e-12 * one.product_norm, "{what}: ‖Ax‖ {} against {}", r.product_norm, one.product_norm);
                let (s, w) = (r.solve.as_ref().unwrap(), one.solve.as_ref().unwrap());
                assert!(s.converged && s.iterations.abs_diff(w.iterations) <= 2, "{what}: {} iterations against {}", s.iterations, w.iterations);
                // the iterates differ by rounding, within the solve's tolerance
                assert!((s.max_nodal_error - w.max_nodal_error).abs() <= 1e-8, "{what}: error {:e} against {:e}", s.max_nodal_error, w.max_nodal_error);
                if ranks <= gpus && std::env::var("FEM_NCCL").as_deref() != Ok("off") {
                    assert_eq!(r.halo_transport, "nccl", "{what}");
                }
                eprintln!("{what}: {:.3e} s an application", r.seconds_per_apply);
            }
        }
    }
}

/// p-multigrid CG of BP3.5 (N = 4; N = 6 by halving) and BP3.0 (N = 3)
/// on the GPU as on the CPU: the same iterations within one, the same solution to the
/// solve's tolerance. Skipped without a device.
#[test]
fn gpu_p_multigrid_solve_equals_the_cpus() {
    let Some(gpu) = gpu("gpu_p_multigrid_solve_equals_the_cpus") else {
        return;
    };
    use fem::bp::{run, BpOptions, Size};
    use fem::host::AnyBackend;
    let (gpu, cpu) = (AnyBackend::Cuda(gpu), AnyBackend::Cpu(CpuBackend::new(None).unwrap()));
    for (problem, degree, levels) in [(Problem::Bp35, 4, fem::bp::PmgLevels::Degrees(vec![1])), (Problem::Bp30, 3, fem::bp::PmgLevels::Degrees(vec![1])), (Problem::Bp35, 6, fem::bp::PmgLevels::Halving)] {
        let o = BpOptions {
            problem,
            degree,
            size: Size::Elements(5 * 5 * 5),
            deformation: Deformation::Trilinear { amplitude: 0.1, seed: 1 },
            lambda: 1.0,
            launch: Default::default(),
            repeats: 1,
            assembled: true,
            cpu_time: false,
            solve: Some(1e-10),
            p_multigrid: Some(fem::bp::BpPmg { options: Default::default(), levels: levels.clone() }),
            tune: false,
            l2: fem::bp::L2::Warm,
        };
        let mut tuning = fem::host::tune::Tuning::at(None, "test");
        let (g, c) = (run(&o, &gpu, &mut tuning, &|_, _| {}).unwrap().solve.unwrap(), run(&o, &cpu, &mut tuning, &|_, _| {}).unwrap().solve.unwrap());
        let what = format!("{problem:?} N = {degree}, levels {levels:?}");
        assert!(g.converged && c.converged && g.iterations.abs_diff(c.iterations) <= 1, "{what}: {} iterations against {}", g.iterations, c.iterations);
        let diff = g.u.iter().zip(&c.u).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(diff < 1e-7, "{what}: {diff:e}");
    }
}


/// p-multigrid's transfers between degrees on the GPU as on the CPU, both
/// ways (the interpolation and its transpose), every fine degree 2..=8
/// from degree 1 and by halving, on a grid whose lattice sides are no
/// multiple of the warp; and a product with empty 1D rows (a 1D matrix
/// of zeros along one axis). Skipped without a device.
#[test]
fn gpu_lattice_transfers_equal_the_cpus() {
    let Some(g) = gpu("gpu_lattice_transfers_equal_the_cpus") else {
        return;
    };
    use fem::host::operator::csr::Csr;
    use fem::host::operator::lattice::{CpuKronecker, GpuKronecker, Kronecker};
    let cpu = CpuBackend::new(None).unwrap();
    let check = |k: Kronecker, what: &str| {
        let x = test_vector(k.n_cols(), 3);
        let mut want = vec![0.0; k.n_rows()];
        CpuKronecker::new(k.clone()).apply(&cpu, &x, &mut want).unwrap();
        let n = k.n_rows();
        let op = GpuKronecker::new(&g, k).unwrap();
        let mut y = g.upload(&vec![f64::NAN; n]).unwrap();
        op.apply(&g, &g.upload(&x).unwrap(), &mut y).unwrap();
        let err = rel_err(&g.download(&y).unwrap(), &want);
        assert!(err < 1e-14, "{what}: {err:e}");
    };
    let cells = [3, 5, 2];
    for n in 2..=8 {
        let fine = SpectralBox::new(n, cells, Deformation::None).unwrap();
        for c in [1, n / 2].into_iter().filter(|&c| c >= 1 && c < n) {
            let p = fine.transfer_from(c).unwrap();
            check(p.transpose(), &format!("restriction to degree {c} from {n}"));
            check(p, &format!("interpolation from degree {c} to {n}"));
        }
    }
    let p = SpectralBox::new(3, cells, Deformation::None).unwrap().transfer_from(1).unwrap();
    let mut axes = p.axes.clone();
    axes[1] = Csr { n_rows: axes[1].n_rows, row_ptr: vec![0; axes[1].n_rows + 1], col: Vec::new(), val: Vec::new() };
    check(Kronecker::new(axes, p.cols).unwrap(), "a zero 1D matrix along y");
}
