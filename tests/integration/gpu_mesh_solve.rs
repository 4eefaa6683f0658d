//! The pipeline's solve on the GPU equals the CPU's: Poisson and
//! elasticity on triangles, quadrilaterals, tetrahedra and hexahedra, with
//! a random load (skipped without a GPU).

use crate::common;

use fem::host::io::gmsh::GmshMesh;
use fem::host::mesh::simplex::SimplexBox;
use fem::host::mesh::BoxMesh;
use fem::host::{AnyBackend, CpuBackend};
use fem::host::problem::nonlinear::Krylov;
use fem::mesh_solve::{run, LoadKind, MeshSolveOptions, Physics};

/// An unstructured box of `n`^`dim` quadrilaterals or hexahedra as a
/// Gmsh file of one group.
fn tensor(dim: usize, n: usize) -> GmshMesh {
    let m = BoxMesh::unstructured(dim, n, 3).build().unwrap();
    GmshMesh::from_box_mesh(&m, &vec![0; m.n_cells()], &["domain"]).unwrap()
}

fn options(physics: Physics, degree: usize) -> MeshSolveOptions {
    let mut newton = fem::host::problem::nonlinear::NewtonOptions::default();
    newton.krylov_rtol = 1e-12;
    MeshSolveOptions {
        physics,
        degree,
        refine: 0,
        dirichlet: Vec::new(),
        neumann: Vec::new(),
        robin: Vec::new(),
        load: LoadKind::Random,
        young: 1.0,
        poisson_ratio: 0.3,
        newton,
        ordering: fem::host::solver::ordering::Ordering::Original,
        time: None,
        partitioner: fem::host::distributed::Partitioner::Metis,
        write_system: None,
        pmg_levels: fem::bp::PmgLevels::Degrees(vec![1]),
    }
}

#[test]
fn gpu_solutions_equal_the_cpus_on_every_cell_kind() {
    let Some(gpu) = common::gpu("gpu_solutions_equal_the_cpus_on_every_cell_kind") else {
        return;
    };
    let (gpu, cpu) = (
        AnyBackend::Cuda(gpu),
        AnyBackend::Cpu(CpuBackend::new(None).unwrap()),
    );
    for dim in [2, 3] {
        let n = if dim == 2 { 24 } else { 6 };
        let simplex =
            GmshMesh::from_simplex_mesh(&SimplexBox::unstructured(dim, n, 3).build().unwrap());
        let tensor_mesh = BoxMesh::unstructured(dim, n, 3).build().unwrap();
        let tensor =
            GmshMesh::from_box_mesh(&tensor_mesh, &vec![0; tensor_mesh.n_cells()], &["domain"])
                .unwrap();
        for (file, kind) in [(&simplex, "simplex"), (&tensor, "tensor")] {
            for (physics, degree) in [
                (Physics::Poisson, 1),
                (Physics::Poisson, 2),
                (Physics::Elasticity, 1),
                (Physics::Elasticity, 2),
            ] {
                if kind == "tensor" && physics == Physics::Elasticity && degree == 2 {
                    continue;
                }
                let o = options(physics, degree);
                let (_, want, _) = run(&cpu, file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
                let (_, got, report) = run(&gpu, file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
                assert!(
                    report.newton.converged,
                    "{dim}D {kind} {physics:?} p = {degree}"
                );
                let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let diff = got
                    .iter()
                    .zip(&want)
                    .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(
                    diff <= 1e-10 * scale,
                    "{dim}D {kind} {physics:?} p = {degree}: {diff:e} of {scale:e}"
                );
                // the methods for unsymmetric tangents give the same solution on the GPU
                if physics == Physics::Elasticity && degree == 1 {
                    for krylov in [Krylov::BiCgStab, Krylov::Gmres { restart: 30 }] {
                        let mut o = options(physics, degree);
                        o.newton.krylov = krylov;
                        let (_, got, report) = run(&gpu, file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
                        let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                        assert!(report.newton.converged && diff <= 1e-9 * scale, "{dim}D {kind} {krylov}: {diff:e} of {scale:e}");
                    }
                }
            }
        }
    }
}

/// SSOR, SAINV and multigrid by rediscretisation on the GPU give the
/// CPU's solution in as many iterations, on refined tetrahedra and
/// hexahedra (Poisson P2, elasticity P1), also with f32 linear solves.
#[test]
fn gpu_preconditioners_equal_the_cpus() {
    use fem::host::problem::nonlinear::Precond;
    let Some(gpu) = common::gpu("gpu_preconditioners_equal_the_cpus") else { return };
    let (gpu, cpu) = (AnyBackend::Cuda(gpu), AnyBackend::Cpu(CpuBackend::new(None).unwrap()));
    let simplex = GmshMesh::from_simplex_mesh(&SimplexBox::unstructured(3, 2, 3).build().unwrap());
    let tensor_mesh = BoxMesh::unstructured(3, 2, 3).build().unwrap();
    let tensor = GmshMesh::from_box_mesh(&tensor_mesh, &vec![0; tensor_mesh.n_cells()], &["domain"]).unwrap();
    for file in [&simplex, &tensor] {
        for (physics, degree) in [(Physics::Poisson, 2), (Physics::Elasticity, 1)] {
            let mut o = options(physics, degree);
            o.refine = 2;
            let (_, want, _) = run(&cpu, file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
            let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            // SPAI(1) and SAINV smoothers are rebuilt on the host and uploaded
            let Precond::Multigrid(base) = Precond::multigrid() else { unreachable!() };
            let smoothed = |smoother, omega| Precond::Multigrid(fem::host::solver::multigrid::MgOptions { smoother, omega, ..base });
            use fem::host::solver::multigrid::Smoother;
            use fem::host::problem::nonlinear::Precision::{F32, F64};
            let amg = Precond::Amg(fem::host::solver::amg::AmgOptions::default());
            for (precond, precision) in [(Precond::Ssor, F64), (Precond::multigrid(), F64), (smoothed(Smoother::Spai, 1.0), F64), (smoothed(Smoother::Sainv, 0.5), F64), (Precond::Sainv, F64), (Precond::multigrid(), F32), (Precond::Jacobi, F32), (amg, F64), (amg, F32)] {
                (o.newton.precond, o.newton.precision) = (precond, precision);
                let (_, got, report) = run(&gpu, file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
                let (_, _, on_cpu) = run(&cpu, file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
                let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                let label = format!("{} {physics:?} p = {degree} {precond} {precision:?}", report.element);
                assert!(report.newton.converged && diff <= 1e-9 * scale, "{label}: {diff:e} of {scale:e}");
                // f32 rounds differently on the two: its iterations may differ a little more
                let slack = if precision == F32 { 1 + on_cpu.newton.krylov_iterations / 10 } else { 1 };
                assert!(report.newton.krylov_iterations.abs_diff(on_cpu.newton.krylov_iterations) <= slack, "{label}: GPU {} CPU {}", report.newton.krylov_iterations, on_cpu.newton.krylov_iterations);
            }
        }
    }
}

/// Time stepping on the GPU equals the CPU's: the heat equation on P2
/// triangles by Crank–Nicolson and BDF2, with boundary values and a load
/// that change in time (set on the device at every step).
#[test]
fn gpu_time_steps_equal_the_cpus() {
    use fem::host::operator::pointwise::Aux;
    use fem::host::problem::nonlinear::time::{integrate, Forcing, Scheme, TimeOptions};
    use fem::host::problem::nonlinear::{Assembly, NewtonOptions, Setup};
    use fem::host::space::{BoundaryPart, Constraints, Load, Space};
    let Some(gpu) = common::gpu("gpu_time_steps_equal_the_cpus") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let space = Space::simplex(&SimplexBox::unstructured(2, 20, 4).build().unwrap(), 2).unwrap();
    let coefficients: Vec<f64> = (0..space.n_dofs).flat_map(|_| [1.0, 1.0]).collect();
    let bcs = Constraints::none(&space, 1).dirichlet_in_time(&space, &BoundaryPart::All, |x, t, u| u[0] = (5.0 * t).sin() * x[0]).unwrap();
    let setup = Setup::<fem::kernels::physics::Poisson>::constrained(&cpu, &space, Aux::Nodal(&coefficients), &bcs, None).unwrap();
    let u0 = bcs.initial();
    for (scheme, assembly) in [(Scheme::Theta(0.5), Assembly::Auto), (Scheme::Bdf2, Assembly::Auto), (Scheme::Bdf2, Assembly::Lma)] {
        let o = TimeOptions { dt: 0.01, steps: 10, scheme, newton: NewtonOptions { krylov_rtol: 1e-12, assembly, ..Default::default() } };
        let load = |t: f64, f: &mut [f64]| f.copy_from_slice(&Load::zero(&space, 1).source(&space, |x, v| v[0] = (3.0 * t).cos() * x[1]).values);
        let forcing = Forcing { boundary: Some(&bcs), load: Some(&load) };
        let (want, _) = integrate(&cpu, &setup, &space, &u0, forcing, &o, &mut |_, _, _| Ok(())).unwrap();
        let (got, report) = integrate(&gpu, &setup, &space, &u0, forcing, &o, &mut |_, _, _| Ok(())).unwrap();
        assert_eq!(report.steps.len(), 10);
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(scale > 0.01 && diff <= 1e-10 * scale, "{scheme:?} {assembly}: {diff:e} of {scale:e}");
    }
}

/// Every storage of the tangent on the GPU (every sparse format that
/// keeps the rows' numbering, and element matrices), its values summed by
/// atomics or by SpMV, gives the CPU's CSR solution, on element sizes of 3 (P1 triangles) to 30 (P2 tetrahedra,
/// elasticity) entries a row.
#[test]
fn every_tangent_storage_on_the_gpu_gives_the_cpus_solution() {
    use fem::host::problem::nonlinear::{Assembly, Scatter};
    use fem::host::sparse::SpmvFormat;
    let Some(gpu) = common::gpu("every_tangent_storage_on_the_gpu_gives_the_cpus_solution") else { return };
    let (gpu, cpu) = (AnyBackend::Cuda(gpu), AnyBackend::Cpu(CpuBackend::new(None).unwrap()));
    let simplex = |dim, n| GmshMesh::from_simplex_mesh(&SimplexBox::unstructured(dim, n, 3).build().unwrap());
    // Q3 hexahedra run their residuals and tangents one thread per cell
    let cases = [
        (simplex(2, 24), Physics::Poisson, 1),
        (simplex(3, 4), Physics::Elasticity, 2),
        (tensor(3, 5), Physics::Poisson, 2),
        (tensor(3, 3), Physics::Poisson, 3),
        (tensor(3, 5), Physics::Elasticity, 1),
        (tensor(3, 3), Physics::Elasticity, 2),
        (tensor(2, 6), Physics::Elasticity, 3),
    ];
    let mut storages: Vec<Assembly> = [SpmvFormat::Csr, SpmvFormat::Ell, SpmvFormat::EllT, SpmvFormat::K1, SpmvFormat::K2].map(Assembly::Sparse).into();
    if fem::host::sparse::cusparse::CusparseCsr::<f64>::available() {
        storages.push(Assembly::Sparse(SpmvFormat::Cusparse));
    }
    storages.push(Assembly::Lma);
    // every storage summed by atomics; by SpMV with ELL-WARP's gather
    // matrices, with cuSPARSE's beside a cuSPARSE tangent, and the
    // residual's beside element matrices
    let mut runs: Vec<(Assembly, Scatter)> = storages.iter().map(|&a| (a, Scatter::Atomic)).collect();
    runs.extend(storages.iter().filter(|a| matches!(a, Assembly::Lma | Assembly::Sparse(SpmvFormat::K2 | SpmvFormat::Cusparse))).map(|&a| (a, Scatter::Spmv)));
    for (file, physics, degree) in &cases {
        let mut o = options(*physics, *degree);
        o.newton.assembly = Assembly::Sparse(SpmvFormat::Csr);
        let (_, want, _) = run(&cpu, file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for &(assembly, scatter) in &runs {
            (o.newton.assembly, o.newton.scatter) = (assembly, scatter);
            let (_, got, report) = run(&gpu, file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
            let label = format!("{physics:?} p = {degree}, {assembly}, {scatter:?}: {}", report.newton.kernels);
            assert!(report.newton.converged, "{label}");
            assert_eq!(report.newton.kernels.contains("SpMV"), scatter == Scatter::Spmv, "{label}");
            let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(diff <= 1e-10 * scale, "{label}: {diff:e} of {scale:e}");
        }
    }
    // the partially assembled tangent on the hexahedra, in as many Krylov
    // iterations as element matrices take on the CPU
    // and matrix-free
    for (file, physics, degree) in &cases[2..6] {
        cells_on_gpu_as_on_cpu(&gpu, &cpu, file, *physics, *degree, Assembly::Lma, Assembly::Partial);
        cells_on_gpu_as_on_cpu(&gpu, &cpu, file, *physics, *degree, Assembly::Lma, Assembly::MatrixFree);
    }
}

/// Newton with the tangent partially assembled or matrix-free on `gpu`
/// (`on_gpu`) reaches the solution of `cpu` with the tangent stored as
/// `on_cpu`, in as many Krylov iterations (within one).
fn cells_on_gpu_as_on_cpu(gpu: &AnyBackend, cpu: &AnyBackend, file: &GmshMesh, physics: Physics, degree: usize, on_cpu: fem::host::problem::nonlinear::Assembly, on_gpu: fem::host::problem::nonlinear::Assembly) {
    let mut o = options(physics, degree);
    o.newton.assembly = on_cpu;
    let (_, want, reference) = run(cpu, file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
    o.newton.assembly = on_gpu;
    let (_, got, report) = run(gpu, file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
    let label = format!("{physics:?} p = {degree}, {on_gpu} against {on_cpu}: {}", report.newton.kernels);
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    let named = if on_gpu == fem::host::problem::nonlinear::Assembly::Partial { "partially assembled" } else { "matrix-free" };
    assert!(report.newton.converged && report.newton.kernels.contains(named) && diff <= 1e-10 * scale, "{label}: {diff:e} of {scale:e}");
    assert!(report.newton.krylov_iterations.abs_diff(reference.newton.krylov_iterations) <= 1, "{label}: GPU {} CPU {}", report.newton.krylov_iterations, reference.newton.krylov_iterations);
}

/// From Q4 to Q8 the GPU's partially assembled tangent gives the CPU's
/// solution in as many Krylov iterations, its residuals one thread per
/// cell; so does the matrix-free one.
#[test]
fn high_degree_hexahedra_solve_partially_assembled_on_the_gpu() {
    use fem::host::problem::nonlinear::Assembly;
    let Some(gpu) = common::gpu("high_degree_hexahedra_solve_partially_assembled_on_the_gpu") else { return };
    let (gpu, cpu) = (AnyBackend::Cuda(gpu), AnyBackend::Cpu(CpuBackend::new(None).unwrap()));
    let cases = [(tensor(3, 2), Physics::Poisson, 4), (tensor(3, 2), Physics::Poisson, 8), (tensor(3, 2), Physics::Elasticity, 4), (tensor(3, 1), Physics::Elasticity, 8)];
    for (file, physics, degree) in &cases {
        cells_on_gpu_as_on_cpu(&gpu, &cpu, file, *physics, *degree, Assembly::Partial, Assembly::Partial);
        cells_on_gpu_as_on_cpu(&gpu, &cpu, file, *physics, *degree, Assembly::Partial, Assembly::MatrixFree);
    }
}

/// On quadrilaterals the GPU's partially assembled tangent (its 2D
/// kernels) gives the CPU's solution in as many Krylov iterations, scalar
/// and vector fields, Q2 to Q8.
#[test]
fn quadrilaterals_solve_partially_assembled_on_the_gpu() {
    use fem::host::problem::nonlinear::Assembly;
    let Some(gpu) = common::gpu("quadrilaterals_solve_partially_assembled_on_the_gpu") else { return };
    let (gpu, cpu) = (AnyBackend::Cuda(gpu), AnyBackend::Cpu(CpuBackend::new(None).unwrap()));
    let cases = [(tensor(2, 6), Physics::Poisson, 2), (tensor(2, 4), Physics::Poisson, 5), (tensor(2, 3), Physics::Poisson, 8), (tensor(2, 6), Physics::Elasticity, 2), (tensor(2, 4), Physics::Elasticity, 3)];
    for (file, physics, degree) in &cases {
        cells_on_gpu_as_on_cpu(&gpu, &cpu, file, *physics, *degree, Assembly::Partial, Assembly::Partial);
    }
}

/// p-multigrid on the GPU (Chebyshev on the partially assembled or
/// matrix-free Q_p tangent, AMG on Q1) gives the CPU's solution in as
/// many Krylov iterations, within two, and far fewer than Jacobi's, on
/// hexahedra and quadrilaterals.
#[test]
fn p_multigrid_on_the_gpu_as_on_the_cpu() {
    use fem::host::problem::nonlinear::{Assembly, PmgOptions, Precond};
    let Some(gpu) = common::gpu("p_multigrid_on_the_gpu_as_on_the_cpu") else { return };
    let (gpu, cpu) = (AnyBackend::Cuda(gpu), AnyBackend::Cpu(CpuBackend::new(None).unwrap()));
    // hexahedra, and quadrilaterals (their 2D partial kernels)
    let cases = [(3, 3, Physics::Poisson, 3, Assembly::Partial), (3, 3, Physics::Elasticity, 2, Assembly::MatrixFree), (3, 2, Physics::Poisson, 6, Assembly::MatrixFree), (2, 8, Physics::Poisson, 4, Assembly::Partial), (2, 6, Physics::Elasticity, 3, Assembly::Partial)];
    for (dim, n, physics, degree, assembly) in cases {
        let file = tensor(dim, n);
        let mut o = options(physics, degree);
        o.newton.assembly = assembly;
        let (_, _, jacobi) = run(&gpu, &file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
        o.newton.precond = Precond::PMultigrid(PmgOptions::default());
        let (_, want, reference) = run(&cpu, &file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
        let (_, got, report) = run(&gpu, &file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
        let label = format!("{physics:?} Q{degree} {dim}D {assembly}");
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        let (its, cpu_its, jacobi_its) = (report.newton.krylov_iterations, reference.newton.krylov_iterations, jacobi.newton.krylov_iterations);
        assert!(report.newton.converged && diff <= 1e-9 * scale, "{label}: {diff:e} of {scale:e}");
        assert!(its.abs_diff(cpu_its) <= 2 && 3 * its < jacobi_its, "{label}: GPU {its}, CPU {cpu_its}, Jacobi {jacobi_its}");
        // levels of halved degree between (Q6 → Q3 → Q1, Q4 → Q2 → Q1, ...)
        if degree >= 3 {
            o.pmg_levels = fem::bp::PmgLevels::Halving;
            let (_, want, reference) = run(&cpu, &file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
            let (_, got, report) = run(&gpu, &file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
            let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            let (halved, cpu_halved) = (report.newton.krylov_iterations, reference.newton.krylov_iterations);
            assert!(report.newton.converged && diff <= 1e-9 * scale, "{label}, halving: {diff:e} of {scale:e}");
            assert!(halved.abs_diff(cpu_halved) <= 2 && halved <= its + 1, "{label}, halving: GPU {halved}, CPU {cpu_halved}, two levels {its}");
        }
    }
}

/// Ranks on the GPUs (threads of this process, each with its own CUDA
/// backend, rank r on GPU r mod the GPUs) solve as the CPU does on one
/// rank: the halo's device gather and ghost writes (through NCCL where
/// each rank has a GPU of its own and NCCL is there, through the host
/// where ranks share a GPU), and reductions over the owned rows.
#[test]
fn gpu_ranks_solve_as_one_cpu_rank() {
    let Some(first) = common::gpu("gpu_ranks_solve_as_one_cpu_rank") else {
        return;
    };
    drop(first);
    use fem::host::problem::nonlinear::Precond;
    let gpus = fem::host::backend::cuda::device_count().unwrap();
    let cpu = AnyBackend::Cpu(CpuBackend::new(None).unwrap());
    let mesh = BoxMesh::unstructured(3, 6, 4).build().unwrap();
    let file = GmshMesh::from_box_mesh(&mesh, &vec![0; mesh.n_cells()], &["domain"]).unwrap();
    // the tangent partially assembled (auto on Q2), assembled (the default
    // format) and as element matrices; AMG's partitioned hierarchy with its
    // halos on every level
    let lma = fem::host::problem::nonlinear::Assembly::Lma;
    let (jacobi, amg) = (Precond::Jacobi, Precond::Amg(fem::host::solver::amg::AmgOptions { max_coarse: 20, ..Default::default() }));
    for (physics, degree, assembly, precond) in [(Physics::Poisson, 2, None, jacobi), (Physics::Elasticity, 1, None, jacobi), (Physics::Poisson, 3, Some(lma), jacobi), (Physics::Elasticity, 1, None, amg), (Physics::Poisson, 2, None, amg)] {
        let mut o = options(physics, degree);
        o.newton.assembly = assembly.unwrap_or_default();
        o.newton.precond = precond;
        let (space, want, _) = run(&cpu, &file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap();
        let nc = want.len() / space.n_dofs;
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for ranks in [2, 3] {
            let out = fem::host::distributed::Threads::run(ranks, |comm| {
                let gpu = AnyBackend::Cuda(fem::cuda(fem::host::distributed::Communicator::rank(comm) % gpus).unwrap());
                fem::mesh_solve::run_on(&gpu, comm, &file, &o, &|_| {}, &mut |_, _, _, _| Ok(())).unwrap()
            });
            for (r, s) in out.iter().enumerate() {
                // rank 0's gathered solution, and every rank's piece with its ghosts
                let piece = s.piece.as_ref().unwrap();
                let mut diff = piece.u.iter().enumerate().fold(0.0f64, |m, (i, a)| m.max((a - want[piece.nodes[i / nc] as usize * nc + i % nc]).abs()));
                assert_eq!(s.whole.is_some(), r == 0);
                if let Some((_, got)) = &s.whole {
                    diff = got.iter().zip(&want).fold(diff, |m, (a, b)| m.max((a - b).abs()));
                }
                let report = &s.report;
                assert!(report.newton.converged && diff <= 1e-10 * scale, "{physics:?} p = {degree}, rank {r} of {ranks}: {diff:e} of {scale:e}");
                let p = report.ranks.as_ref().unwrap();
                assert_eq!(p.ranks, ranks);
                eprintln!("{physics:?} p = {degree}, {ranks} ranks on {gpus} GPUs: halo through {}, {}", p.halo_transport, report.newton.kernels);
                assert_eq!(assembly.is_some(), report.newton.kernels.contains("LMA"), "{}", report.newton.kernels);
                // auto takes partial assembly on the GPU from Q2 with Jacobi
                let partial = assembly.is_none() && precond == jacobi && degree >= 2;
                assert_eq!(partial, report.newton.kernels.contains("partially assembled"), "{}", report.newton.kernels);
                assert_eq!(precond != jacobi, report.newton.amg.as_ref().is_some_and(|a| a.last.levels.len() >= 2), "{precond}");
                if ranks > gpus {
                    assert_eq!(p.halo_transport, "host", "ranks sharing a GPU exchange through the host");
                }
            }
        }
    }
}

/// A Newton set-up's sparsity patterns built on the GPU
/// (`Setup::constrained_on`, `Setup::with_multigrid_on`) are the host's,
/// level by level, with the same diagonals and fixed rows: triangles,
/// tetrahedra, quadrilaterals and hexahedra in random node orders, scalar
/// and vector fields, and rows too long for the device (Q3 hexahedra,
/// 3D Q2 elasticity), which the host builds. And the device's pattern
/// alone: rows no cell touches, no cells, and a row past the end.
#[test]
fn gpu_set_up_patterns_are_the_hosts() {
    use fem::host::operator::csr::Csr;
    use fem::host::operator::device_pattern::DevicePattern;
    use fem::host::operator::pointwise::Aux;
    use fem::host::problem::nonlinear::Setup;
    use fem::host::solver::ordering::Ordering;
    use fem::host::space::{BoundaryPart, CellMesh, Constraints, NestedSpaces};
    use fem::kernels::physics::{Elasticity, Poisson};
    let Some(gpu) = common::gpu("gpu_set_up_patterns_are_the_hosts") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let same = |a: &Setup<Poisson>, b: &Setup<Poisson>, label: &str| {
        assert_eq!((a.csr.n_rows, &a.csr.row_ptr, &a.csr.col), (b.csr.n_rows, &b.csr.row_ptr, &b.csr.col), "{label}");
        assert_eq!((&a.csr.val, &a.diag_pos, &a.fixed), (&b.csr.val, &b.diag_pos, &b.fixed), "{label}");
    };
    let simplex = |d, n| CellMesh::Simplex(SimplexBox::unstructured(d, n, 3).build().unwrap());
    let tensor = |d, n| CellMesh::Tensor(BoxMesh::unstructured(d, n, 3).build().unwrap());
    for (mesh, p, levels, label) in [(simplex(2, 3), 1, 3, "P1 triangles"), (simplex(2, 2), 2, 2, "P2 triangles"), (simplex(3, 1), 2, 2, "P2 tetrahedra"), (tensor(2, 3), 1, 3, "Q1 quadrilaterals"), (tensor(3, 1), 2, 2, "Q2 hexahedra"), (tensor(3, 2), 3, 1, "Q3 hexahedra")] {
        let nested = NestedSpaces::new(mesh, p, levels).unwrap().renumbered(&cpu, Ordering::Random, 5).unwrap();
        let s = nested.finest();
        let kappa: Vec<f64> = (0..s.n_dofs).flat_map(|_| [1.0, 0.0]).collect();
        let bcs = Constraints::none(s, 1).dirichlet(s, &BoundaryPart::All, |_, u| u[0] = 0.0).unwrap();
        let host = Setup::<Poisson>::constrained(&cpu, s, Aux::Nodal(&kappa), &bcs, None).unwrap();
        let device = Setup::<Poisson>::constrained_on(&gpu, &cpu, s, Aux::Nodal(&kappa), &bcs, None).unwrap();
        same(&host, &device, label);
        if levels == 1 {
            continue; // Q3's nodes do not nest
        }
        let host = host.with_multigrid(&cpu, &nested).unwrap();
        let device = device.with_multigrid_on(&gpu, &cpu, &nested).unwrap();
        let (h, d) = (host.levels.as_ref().unwrap(), device.levels.as_ref().unwrap());
        assert_eq!(h.setups.len(), levels - 1);
        for (l, (a, b)) in h.setups.iter().zip(&d.setups).enumerate() {
            same(a, b, &format!("{label}, level {l}"));
        }
    }
    for (mesh, p) in [(tensor(2, 3), 1), (tensor(3, 1), 2)] {
        let s = NestedSpaces::new(mesh, p, 1).unwrap().spaces.remove(0);
        let lame: Vec<f64> = (0..s.n_cells()).flat_map(|_| [1.0, 0.5]).collect();
        let bcs = Constraints::none(&s, s.dim()).dirichlet(&s, &BoundaryPart::All, |_, u| u.fill(0.0)).unwrap();
        let host = Setup::<Elasticity>::constrained(&cpu, &s, Aux::Cell(&lame), &bcs, None).unwrap();
        let device = Setup::<Elasticity>::constrained_on(&gpu, &cpu, &s, Aux::Cell(&lame), &bcs, None).unwrap();
        assert_eq!((&host.csr.row_ptr, &host.csr.col, &host.csr.val, &host.diag_pos), (&device.csr.row_ptr, &device.csr.col, &device.csr.val, &device.diag_pos), "elasticity Q{p}");
    }
    // two triangles and a lone quadrilateral's worth of rows, rows 7 and 8 in no cell
    let rows = [0, 1, 2, 2, 1, 3, 4, 5, 6, 4, 6, 0];
    let p = DevicePattern::host_pattern(&gpu, 9, 3, &rows).unwrap().unwrap();
    let q = Csr::<f64>::cells_pattern(&cpu, 9, 3, &rows, &[]).unwrap();
    assert_eq!((p.n_rows, &p.row_ptr, &p.col, &p.val), (q.n_rows, &q.row_ptr, &q.col, &q.val));
    assert_eq!(&p.row_ptr[7..], &[p.col.len() as u32; 3]);
    assert!(DevicePattern::host_pattern(&gpu, 9, 3, &[]).unwrap().is_none());
    let e = DevicePattern::host_pattern(&gpu, 6, 3, &rows).unwrap_err().to_string();
    assert!(e.contains("row 6") && e.contains("6 rows"), "{e}");
    assert!(DevicePattern::host_pattern(&gpu, 9, 5, &rows).is_err());
}

/// The GPU's solve from an owned set-up (its host cell data and maps let
/// go of after the upload, before the preconditioner) equals its solve
/// from a borrowed one, with every preconditioner and tangent storage.
#[test]
fn gpu_owned_set_ups_solve_as_borrowed_ones() {
    let Some(gpu) = common::gpu("gpu_owned_set_ups_solve_as_borrowed_ones") else { return };
    common::owned_set_ups_solve_as_borrowed_ones(&gpu);
}
