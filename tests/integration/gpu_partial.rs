//! Partial assembly's GPU product and diagonal against the CPU's sum
//! factorisation, at every degree the kernels take (1 to 8), scalar and
//! vector fields, random point data with every term of the Jacobian or
//! only some, some rows held (skipped by the map), on distorted
//! hexahedral and quadrilateral meshes whose cell counts leave a partial
//! last block;
//! and the point data of the generated physics on the GPU against their
//! CPU variants, with the element matrices built from them against the
//! CPU element kernels' Jacobian. Skipped without a device.

use crate::common;

use fem::host::mesh::BoxMesh;
use fem::host::operator::pointwise::diagonal::diagonal_cpu;
use fem::host::operator::pointwise::partial::{apply_cpu, points_per_cell, GpuPartial, Tables1d, GPU_MAX_DEGREE};
use fem::host::operator::pointwise::{Aux, GpuPointwise, Pointwise};
use fem::host::space::restriction::SKIP;
use fem::host::space::Space;
use fem::host::{Backend, CpuBackend};
use fem::kernels::fem_core::physics::Terms;
use fem::kernels::fem_core::shape::Shape;
use fem::kernels::pointwise::{Kernels, Variant};

use common::{random_values as random, rel_finite as rel};

/// A tensor variant of `shape` and degree `p` with `nc` components and
/// the Jacobian terms `g` (no entry points: only the product is launched).
fn variant(shape: Shape, p: usize, nc: usize, g: [bool; 4]) -> Variant {
    let terms = Terms { f0: true, f1: true, g, bf0: false, bg: [false; 2], g_reads_state: true };
    Variant { shape, degree: p, nq: (p + 1).pow(shape.dim() as u32), nc, na: 0, aux_nodal: false, terms, block: 1, residual: "", jacobian: None, precisions: &["f64"], nqf: 0, facet_residual: None, facet_jacobian: None, points: None, sum_factorised: false, matrix_free: false }
}

#[test]
fn gpu_partial_product_and_diagonal_equal_the_cpus() {
    let Some(gpu) = common::gpu("gpu_partial_product_and_diagonal_equal_the_cpus") else { return };
    let cpu = CpuBackend::new(None).unwrap();
    // 3³ = 27 and 13² = 169 cells: not a multiple of the elements per block at any degree
    for (shape, side) in [(Shape::Hexahedron, 3), (Shape::Quadrilateral, 13)] {
    let dim = shape.dim();
    for p in 1..=GPU_MAX_DEGREE {
        let space = Space::tensor(&BoxMesh::unstructured(dim, side, 5).build().unwrap(), p).unwrap();
        // every specialised entry point (g3, g0, g0 + g3) and the one that reads the terms at run time
        let (g0, g3, g03) = ([true, false, false, false], [false, false, false, true], [true, false, false, true]);
        for (nc, g) in [(1, g3), (1, g0), (1, g03), (1, [true; 4]), (dim, g3), (dim, g0), (dim, g03), (dim, [true, true, false, true])] {
            let v = variant(shape, p, nc, g);
            let (cells, nl) = (space.n_cells(), v.n_local());
            let rows = space.n_dofs * nc;
            let mut map = space.restriction(nc).map;
            // rows divisible by 7 held
            map.iter_mut().filter(|r| **r % 7 == 0).for_each(|r| *r = SKIP);
            let data = random(cells * points_per_cell(&v), 3 + p as u64);
            let x = random(rows, 4);
            let xe: Vec<f64> = map.iter().map(|&r| if r == SKIP { 0.0 } else { x[r as usize] }).collect();
            let mut ye = vec![0.0; cells * nl];
            let t = Tables1d::new(&v).unwrap();
            apply_cpu(&cpu, &t, &v, &data, &xe, &mut ye).unwrap();
            let de = diagonal_cpu(&cpu, &t, &v, &data).unwrap();
            let (mut want, mut dwant) = (vec![0.0; rows], vec![0.0; rows]);
            for (k, &r) in map.iter().enumerate().filter(|(_, &r)| r != SKIP) {
                want[r as usize] += ye[k];
                dwant[r as usize] += de[k];
            }
            let op = GpuPartial::new(&gpu, &v, cells).unwrap();
            let (gd, md, xd) = (gpu.upload(&data).unwrap(), gpu.stream().clone_htod(&map).unwrap(), gpu.upload(&x).unwrap());
            let (mut y, mut d) = (gpu.zeros::<f64>(rows).unwrap(), gpu.zeros::<f64>(rows).unwrap());
            op.apply(&gpu, &gd, &md, &xd, &mut y).unwrap();
            op.add_diagonal(&gpu, &gd, &md, &mut d).unwrap();
            let what = format!("{} p = {p}, {nc} components, terms {g:?}", shape.name());
            let err = rel(&gpu.download(&y).unwrap(), &want);
            assert!(err < 1e-13, "{what}: product {err:e}");
            let err = rel(&gpu.download(&d).unwrap(), &dwant);
            assert!(err < 1e-13, "{what}: diagonal {err:e}");
        }
    }
    }
    // a degree past the kernels' is refused with the reason, and so are
    // two components on hexahedra
    let e = GpuPartial::new(&gpu, &variant(Shape::Hexahedron, GPU_MAX_DEGREE + 1, 1, [false, false, false, true]), 1).err().unwrap().to_string();
    assert!(e.contains("degree"), "{e}");
    let e = GpuPartial::new(&gpu, &variant(Shape::Hexahedron, 2, 2, [false, false, false, true]), 1).err().unwrap().to_string();
    assert!(e.contains("components"), "{e}");
}

/// The point data of one physics' hexahedral variants, GPU against CPU.
fn points_match<K: Kernels<f64>>(gpu: &fem::host::CudaBackend, aux: impl Fn(&Space) -> (Vec<f64>, bool), scale: f64) {
    let cpu = CpuBackend::new(None).unwrap();
    for v in K::VARIANTS.iter().filter(|v| v.shape == Shape::Hexahedron) {
        let space = Space::tensor(&BoxMesh::unstructured(3, 3, 5).build().unwrap(), v.degree).unwrap();
        let (a, nodal) = aux(&space);
        let op = Pointwise::<f64, K>::new(&space, Some(v.nq), if nodal { Aux::Nodal(&a) } else { Aux::Cell(&a) }).unwrap();
        // nodal values small against the nodes' spacing (∼ 1 / p²), so
        // that a nonlinear physics' points do not invert
        let size = scale / (v.degree * v.degree) as f64;
        let u: Vec<f64> = random(space.n_cells() * v.n_local(), 9).iter().map(|x| size * x).collect();
        let want = op.points_cpu(&cpu, &u).unwrap();
        let dev = GpuPointwise::new(gpu, &op).unwrap();
        let mut out = gpu.zeros::<f64>(want.len()).unwrap();
        dev.points(gpu, &gpu.upload(&u).unwrap(), &mut out).unwrap();
        let err = rel(&gpu.download(&out).unwrap(), &want);
        assert!(err < 1e-13, "{} p = {}: point data {err:e}", K::NAME, v.degree);
        // the element matrices from the point data: the element kernels' Jacobian
        if !common::element_matrices_testable(v, common::CPU_PRODUCTS) {
            continue;
        }
        let kernels = op.jacobian_cpu(&cpu, &u).unwrap();
        let partial = GpuPartial::new(gpu, v, space.n_cells()).unwrap();
        let mut k = gpu.zeros::<f64>(kernels.len()).unwrap();
        partial.elements(gpu, &out, &mut k).unwrap();
        let err = rel(&gpu.download(&k).unwrap(), &kernels);
        assert!(err < 1e-12, "{} p = {}: element matrices {err:e}", K::NAME, v.degree);
    }
}

#[test]
fn gpu_point_data_equal_the_cpus() {
    let Some(gpu) = common::gpu("gpu_point_data_equal_the_cpus") else { return };
    common::each_hexahedral_physics!(points_match, &gpu);
}
