//! The matrix-free action of the generated physics' Jacobians on the GPU
//! against the CPU's, at every hexahedral degree each physics has (1 to
//! 8), scalar and three-component, on L-vectors with some rows held
//! (skipped by the map), on a distorted mesh whose 27 cells leave a
//! partial last block; and its diagonal, made from point data a few
//! cells at a time, against the CPU's. Skipped without a device.

use crate::common;

use fem::host::mesh::BoxMesh;
use fem::host::operator::pointwise::partial::GpuPartial;
use fem::host::operator::pointwise::{Aux, GpuPointwise, Pointwise};
use fem::host::space::restriction::SKIP;
use fem::host::space::Space;
use fem::host::{Backend, CpuBackend, CudaBackend};
use fem::kernels::fem_core::shape::Shape;
use fem::kernels::pointwise::Kernels;

use common::{random_values as random, rel_finite as rel};

/// `out[map[k]] += e[k]` where the map names a row.
fn scatter(map: &[u32], e: &[f64], rows: usize) -> Vec<f64> {
    let mut out = vec![0.0; rows];
    for (&r, v) in map.iter().zip(e).filter(|(&r, _)| r != SKIP) {
        out[r as usize] += v;
    }
    out
}

/// Every matrix-free variant of `K`: the GPU's action and diagonal
/// against the CPU's at a random state of size `scale / p²`.
fn action_matches<K: Kernels<f64>>(gpu: &CudaBackend, aux: impl Fn(&Space) -> (Vec<f64>, bool), scale: f64) {
    let cpu = CpuBackend::new(None).unwrap();
    let mut checked = 0;
    for v in K::VARIANTS.iter().filter(|v| v.matrix_free) {
        assert_eq!(v.shape, Shape::Hexahedron);
        let space = Space::tensor(&BoxMesh::unstructured(3, 3, 5).build().unwrap(), v.degree).unwrap();
        let (a, nodal) = aux(&space);
        let op = Pointwise::<f64, K>::new(&space, Some(v.nq), if nodal { Aux::Nodal(&a) } else { Aux::Cell(&a) }).unwrap();
        let (nc, cells, nl) = (v.nc, space.n_cells(), v.n_local());
        let rows = space.n_dofs * nc;
        let mut map = space.restriction(nc).map;
        // rows divisible by 7 held
        map.iter_mut().filter(|r| **r % 7 == 0).for_each(|r| *r = SKIP);
        let size = scale / (v.degree * v.degree) as f64;
        let u: Vec<f64> = random(cells * nl, 9).iter().map(|x| size * x).collect();
        let x = random(rows, 4);
        let mut ye = vec![0.0; cells * nl];
        op.action_cpu(&cpu, &u, &|k| if map[k] == SKIP { 0.0 } else { x[map[k] as usize] }, &mut ye).unwrap();
        let want = scatter(&map, &ye, rows);
        let dwant = scatter(&map, &op.free_diagonal_cpu(&cpu, &u).unwrap(), rows);
        let dev = GpuPointwise::new(gpu, &op).unwrap();
        let partial = GpuPartial::new(gpu, v, cells).unwrap();
        let (ud, md, xd) = (gpu.upload(&u).unwrap(), gpu.stream().clone_htod(&map).unwrap(), gpu.upload(&x).unwrap());
        let (mut y, mut d) = (gpu.zeros::<f64>(rows).unwrap(), gpu.zeros::<f64>(rows).unwrap());
        dev.action(gpu, &ud, &md, &xd, &mut y).unwrap();
        let what = format!("{} p = {}", K::NAME, v.degree);
        let err = rel(&gpu.download(&y).unwrap(), &want);
        assert!(err < 1e-12, "{what}: action {err:e}");
        // five cells a chunk: six chunks, the last of two cells
        let per = fem::host::operator::pointwise::partial::points_per_cell(v);
        dev.add_free_diagonal_by(gpu, &partial, &ud, &md, &mut d, 5 * per).unwrap();
        let err = rel(&gpu.download(&d).unwrap(), &dwant);
        assert!(err < 1e-12, "{what}: diagonal {err:e}");
        checked += 1;
    }
    assert!(checked > 0, "{}", K::NAME);
}

#[test]
fn gpu_matrix_free_action_and_diagonal_equal_the_cpus() {
    let Some(gpu) = common::gpu("gpu_matrix_free_action_and_diagonal_equal_the_cpus") else { return };
    common::each_hexahedral_physics!(action_matches, &gpu);
}
