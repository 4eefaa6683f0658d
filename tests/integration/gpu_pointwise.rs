//! Thread-transposition kernels on the GPU against the CPU variants of the
//! same physics: every generated variant of Poisson and elasticity, f32
//! and f64, residuals and element matrices, with cell counts that leave a
//! partial last batch and several blocks-per-batch / batches-per-chunk
//! settings. Skipped without a device.

use crate::common;
use common::gpu;

use fem::host::operator::pointwise::{cell_thread_bytes, Aux, GpuPointwise, Pointwise, Transposition, THREAD_LOCAL_LIMIT};
use fem::host::rng::SplitMix64;
use fem::host::space::Space;
use fem::host::{Backend, CpuBackend, CudaBackend, Scalar};
use fem::kernels::physics::{Elasticity, NeoHookean, Poisson};
use fem::kernels::pointwise::{Kernels, Variant};

fn space_for(v: &Variant) -> Space {
    // 2·7² = 98 triangles, 6·4³ = 384 tetrahedra, 7² and 4³ tensor cells:
    // multiples of no cell block, and more cells than one batch of the
    // multi-batch settings below, so their second buffer is filled.
    common::pointwise_space(v, if v.dim() == 2 { 7 } else { 4 })
}

fn rel(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1e-300);
    a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs())) / scale
}

fn check<T: Scalar, K: Kernels<T>>(g: &CudaBackend, v: &Variant, aux: impl Fn(&Space) -> (Vec<f64>, bool), tol: f64, scale: f64) {
    let cpu = CpuBackend::new(None).unwrap();
    let space = space_for(v);
    let (a, nodal) = aux(&space);
    let aux = if nodal { Aux::Nodal(&a) } else { Aux::Cell(&a) };
    let op = Pointwise::<T, K>::new(&space, Some(v.nq), aux).unwrap();
    let mut r = SplitMix64::new(17);
    let u: Vec<T> = (0..space.n_cells() * v.n_local()).map(|_| T::from_f64(scale * (2.0 * r.next_f64() - 1.0))).collect();
    let dev = GpuPointwise::new(g, &op).unwrap();
    let want = op.residual_cpu(&cpu, &u).unwrap().iter().map(|x| x.to_f64()).collect::<Vec<_>>();
    // element matrices where a test can afford them; past what a GPU
    // thread may hold, refused before any launch or check of the buffers
    let matrices = common::element_matrices_testable(v, common::GPU_PRODUCTS);
    if cell_thread_bytes(v, true, T::BYTES) > THREAD_LOCAL_LIMIT {
        let none = g.zeros::<T>(1).unwrap();
        let e = dev.evaluate_cells(g, true, &none, &mut g.zeros::<T>(1).unwrap()).unwrap_err().to_string();
        assert!(e.contains("partial assembly"), "{e}");
    }
    let jwant = if matrices { op.jacobian_cpu(&cpu, &u).unwrap().iter().map(|x| x.to_f64()).collect::<Vec<_>>() } else { Vec::new() };
    // the one-thread-per-cell residuals and element matrices, the
    // fallback for large variants
    for (jacobian, want) in [(false, &want), (true, &jwant)].into_iter().take(if matrices { 2 } else { 1 }) {
        let mut out = g.zeros::<T>(dev.out_len(jacobian)).unwrap();
        dev.evaluate_cells(g, jacobian, &g.upload(&u).unwrap(), &mut out).unwrap();
        let cells: Vec<f64> = g.download(&out).unwrap().iter().map(|x| x.to_f64()).collect();
        let err = rel(&cells, want);
        assert!(err < tol, "{} {} p{} {}: one-cell-per-thread error {err:e} (Jacobian: {jacobian})", K::NAME, v.shape.name(), v.degree, T::NAME);
    }
    let default = Transposition::default_for(v);
    // The launch the solvers take; `None` where no block fits shared
    // memory (Q3 and vector Q2 hexahedra), which run one thread per cell,
    // checked above.
    let fitted = Transposition::fitting(v, false, T::BYTES, g.props().shared_mem_per_block_optin as usize).ok();
    // Chunks of 2, 3 and 4 batches prefetch into alternating buffers, the
    // first one refilled from the third batch on; the last chunk is partial.
    for t in [
        default,
        fitted.unwrap_or(default),
        Transposition { blocks: 1, batches: 1 },
        Transposition { blocks: 3, batches: 2 },
        Transposition { blocks: 2, batches: 3 },
        Transposition { blocks: 1, batches: 4 },
    ] {
        if t.threads(v) > 1024 {
            continue;
        }
        let what = format!("{} {} p{} q{} {} {t:?}", K::NAME, v.shape.name(), v.degree, v.nq, T::NAME);
        let got: Vec<f64> = match dev.evaluate_host(g, false, t, &u) {
            Ok(r) => r.iter().map(|x| x.to_f64()).collect(),
            // Several blocks, or two input buffers, of the largest
            // variants may not fit a block's shared memory: the refusal
            // must say so, and the fitted launch must always run.
            Err(e) if Some(t) != fitted && e.to_string().contains("shared memory") => continue,
            Err(e) => panic!("{what}: {e}"),
        };
        let err = rel(&got, &want);
        assert!(err < tol, "{what}: residual error {err:e}");
        if !matrices {
            continue;
        }
        match dev.evaluate_host(g, true, t, &u) {
            Ok(j) => {
                let j: Vec<f64> = j.iter().map(|x| x.to_f64()).collect();
                let err = rel(&j, &jwant);
                assert!(err < tol, "{what}: Jacobian error {err:e}");
            }
            // Large element matrices may not fit a block's shared memory
            // at this setting: the refusal must say so.
            Err(e) => assert!(e.to_string().contains("shared memory") || e.to_string().contains("threads"), "{what}: {e}"),
        }
    }
}

fn poisson_aux(space: &Space) -> (Vec<f64>, bool) {
    (space.interpolate(2, |x, o| {
        o[0] = 1.0 + x[0] * x[1];
        o[1] = x[0] - x[2];
    }), true)
}

fn lame(space: &Space) -> (Vec<f64>, bool) {
    ((0..space.n_cells()).flat_map(|c| [1.0 + (c % 5) as f64 * 0.1, 0.7]).collect(), false)
}

#[test]
fn residuals_and_element_matrices_match_the_cpu() {
    let Some(g) = gpu("residuals_and_element_matrices_match_the_cpu") else { return };
    for v in <Poisson as Kernels<f64>>::VARIANTS {
        check::<f64, Poisson>(&g, v, poisson_aux, 1e-13, 1.0);
        check::<f32, Poisson>(&g, v, poisson_aux, 1e-5, 1.0);
    }
    for v in <Elasticity as Kernels<f64>>::VARIANTS {
        check::<f64, Elasticity>(&g, v, lame, 1e-13, 1.0);
        check::<f32, Elasticity>(&g, v, lame, 1e-5, 1.0);
    }
    // displacements small enough that no point comes near inverting (the
    // nodes' spacing falls as 1/p): F⁻ᵀ amplifies the rounding of the
    // point values, which the GPU's sum factorisation sums in another
    // order than the CPU's (2.3e-12 at Q2 with displacements of 0.05)
    for v in <NeoHookean as Kernels<f64>>::VARIANTS {
        check::<f64, NeoHookean>(&g, v, lame, if v.sum_factorised { 1e-11 } else { 1e-12 }, 0.05 / (v.degree * v.degree) as f64);
    }
}

#[test]
fn launch_limits_are_checked_before_launching() {
    let Some(g) = gpu("launch_limits_are_checked_before_launching") else { return };
    let v = &<Poisson as Kernels<f64>>::VARIANTS[0];
    let space = space_for(v);
    let (a, _) = poisson_aux(&space);
    let op = Pointwise::<f64, Poisson>::new(&space, Some(v.nq), Aux::Nodal(&a)).unwrap();
    let dev = GpuPointwise::new(&g, &op).unwrap();
    let u = vec![0.0; space.n_cells() * v.n_local()];
    let err = dev.evaluate_host(&g, false, Transposition { blocks: 1000, batches: 1 }, &u).unwrap_err().to_string();
    assert!(err.contains("threads per block"), "{err}");
    assert!(dev.evaluate_host(&g, false, Transposition { blocks: 0, batches: 1 }, &u).is_err());
}

/// The cell data the GPU makes from the nodes (`GpuPointwise::from_nodes`)
/// is the host's E-vectors bit for bit: vertex coordinates and a nodal
/// field for every Poisson variant, and elasticity's vertex coordinates
/// through its vector field's gather map with its field per cell as given.
#[test]
fn cell_data_made_from_the_nodes_is_the_hosts() {
    let Some(g) = gpu("cell_data_made_from_the_nodes_is_the_hosts") else { return };
    fn same<K: Kernels<f64>>(g: &CudaBackend, v: &Variant, aux: fn(&Space) -> (Vec<f64>, bool)) {
        let space = space_for(v);
        let (values, nodal) = aux(&space);
        let kind = if nodal { Aux::Nodal(&values) } else { Aux::Cell(&values) };
        let host = Pointwise::<f64, K>::new(&space, Some(v.nq), kind).unwrap();
        let (physics, cells) = Pointwise::<f64, K>::on_nodes(&space, Some(v.nq), kind).unwrap();
        let cells = cells.unwrap_or_else(|| panic!("{v:?}: corners at the vertices"));
        let map = g.htod(&space.restriction(v.nc).map).unwrap();
        let device = GpuPointwise::from_nodes(g, &physics, &cells, &map).unwrap();
        let (_, x, a) = device.inputs();
        assert_eq!(g.dtoh(x).unwrap(), host.x, "{v:?}: vertex coordinates");
        assert_eq!(g.dtoh(a).unwrap(), host.a, "{v:?}: auxiliary field");
        let short = g.htod(&space.restriction(v.nc).map[1..]).unwrap();
        assert!(GpuPointwise::from_nodes(g, &physics, &cells, &short).is_err(), "{v:?}: a short map");
    }
    for v in <Poisson as Kernels<f64>>::VARIANTS {
        same::<Poisson>(&g, v, poisson_aux);
    }
    for v in <Elasticity as Kernels<f64>>::VARIANTS {
        same::<Elasticity>(&g, v, lame);
    }
}
