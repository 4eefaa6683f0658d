//! `fem bp --physics NAME --level {partial,none}`: the Jacobian of a
//! shipped `#[fem_kernel]` physics (mass, Poisson, elasticity,
//! neo-Hookean) on Q_N hexahedra of the unit cube, or quadrilaterals of
//! the unit square, applied on L-vectors
//! exactly as Newton's Krylov method applies it ([`Workspace::tangent_at`]):
//! the fixed rows' pass, the gather, the cells' work and the atomic
//! scatter. The CEED problems' tuned kernels (`--problem`) stay beside it
//! as the specialisations of the mass and the constant-coefficient
//! Poisson operator; this is the operator every other physics gets.

use super::{max_rel_error, timed, Size};
use crate::mesh_solve::{with_physics, Physics};
use fem_host::mesh::spectral::Deformation;
use fem_host::mesh::BoxMesh;
use fem_host::operator::pointwise::partial::points_per_cell;
use fem_host::operator::pointwise::Aux;
use fem_host::operator::LinearOperator;
use fem_host::problem::nonlinear::{Assembly, NewtonOps, NewtonOptions, Setup, Workspace};
use fem_host::roofline::{best_copy_bandwidth_cycled, copy_bandwidth, CopyBandwidth};
use fem_host::space::constraints::Constraints;
use fem_host::space::Space;
use fem_host::sparse::bench::test_vector;
use fem_host::timing::measure;
use fem_host::{AnyBackend, CpuBackend, Error, Result};
use fem_kernels::pointwise::{Kernels, Variant};
use serde::Serialize;

/// What to run.
#[derive(Clone, Debug)]
pub struct PhysicsOptions {
    /// The shipped physics whose Jacobian is applied.
    pub physics: Physics,
    /// How the Jacobian is stored: `Partial` (point data) or `MatrixFree`
    /// (recomputed at the points), or for comparison element matrices or
    /// an assembled format.
    pub level: Assembly,
    /// Polynomial degree N of the cells (1..=8).
    pub degree: usize,
    /// 3: hexahedra of the unit cube; 2: quadrilaterals of the unit square.
    pub dim: usize,
    /// Mesh size, as for the CEED problems (a cube, or square, of cells).
    pub size: Size,
    /// Affine cells or interior vertices moved (trilinear cells).
    pub deformation: Deformation,
    /// Timed applications; the median is reported.
    pub repeats: usize,
    /// Also time the CPU backend on the same operator.
    pub cpu_time: bool,
}

/// One run's figures, as printed and written to JSON.
#[derive(Clone, Debug, Serialize)]
pub struct PhysicsReport {
    /// The physics.
    pub physics: Physics,
    /// The storage asked for (`partial`, `none`, …).
    pub level: String,
    /// The operator as the solver names it.
    pub operator: String,
    /// Polynomial degree N.
    pub degree: usize,
    /// 3 (hexahedra) or 2 (quadrilaterals).
    pub dim: usize,
    /// Cells in the mesh.
    pub elements: usize,
    /// Rows of the L-vector the operator acts on (nodes × components).
    pub l_dofs: usize,
    /// Entries of the E-vector: elements × (N + 1)^dim × components.
    pub e_dofs: usize,
    /// The backend that ran it.
    pub backend: String,
    /// Seconds to upload the physics and store the tangent's structure
    /// (the workspace), before the linearisation.
    pub setup_seconds: f64,
    /// Median wall time of one application on L-vectors, in seconds.
    pub seconds_per_apply: f64,
    /// L-DOFs per second, in 10⁹.
    pub gdofs_per_second: f64,
    /// E-DOFs per second at the same time, in 10⁹ (the element-local
    /// figure, for comparison with E-vector benchmarks).
    pub e_gdofs_per_second: f64,
    /// The model's bytes per application ([`bytes_moved`]).
    pub bytes_moved: usize,
    /// `bytes_moved` over the time, in GB/s.
    pub gbytes_per_second: f64,
    /// Copy of the same bytes in the same run, in GB/s.
    pub copy_gbytes_per_second: f64,
    /// Which copy set the roofline (`memcpy` or `kernel`).
    pub copy_method: &'static str,
    /// `gbytes_per_second` over `copy_gbytes_per_second`.
    pub roofline_fraction: f64,
    /// max |y − y_cpu| / max |y_cpu| against the CPU backend's product
    /// of the same level (0 on the CPU backend).
    pub max_rel_error_vs_cpu: f64,
    /// The CPU backend's seconds per application, when asked for.
    pub cpu_seconds_per_apply: Option<f64>,
    /// `cpu_seconds_per_apply / seconds_per_apply`, when the CPU was timed.
    pub speedup_vs_cpu: Option<f64>,
}

/// The state the Jacobian is taken at: every component
/// 0.05 (1 + c) sin πx sin πy (sin πz in 3D), a deformation small enough
/// that no neo-Hookean point inverts (the linear physics do not depend
/// on it).
fn state(space: &Space, nc: usize) -> Vec<f64> {
    use std::f64::consts::PI;
    let d = space.shape.dim();
    (0..space.n_dofs * nc).map(|r| {
        let x = space.dof_coords[r / nc];
        0.05 * (1 + r % nc) as f64 * x[..d].iter().map(|v| (PI * v).sin()).product::<f64>()
    }).collect()
}

/// The bytes one application must move at least: the E-vector's map,
/// the level's data (point data; or the state's E-vector where the
/// Jacobian reads the state, the cells' vertices and auxiliary fields;
/// or element matrices), and per row the
/// fixed rows' pass (mask and x read, y written), the gather of x and the
/// atomic update of y.
pub fn bytes_moved(v: &Variant, level: Assembly, cells: usize, rows: usize, sparse: Option<usize>) -> Result<usize> {
    let e = cells * v.n_local();
    let nb = v.n_local() / v.nc;
    let cell_bytes = match level {
        Assembly::Partial => 8 * cells * points_per_cell(v),
        Assembly::MatrixFree => 8 * e * v.terms.g_reads_state as usize + 8 * cells * (v.shape.vertices() * v.dim() + if v.aux_nodal { nb * v.na } else { v.na }),
        Assembly::Lma => 8 * e * v.n_local(),
        _ => return sparse.map(|bytes| bytes + 16 * rows).ok_or_else(|| Error::InvalidArgument(format!("no byte model for the {level} tangent"))),
    };
    Ok(4 * e + cell_bytes + 48 * rows)
}

/// A measured product: its result, time, set-up and name.
struct Measured {
    y: Vec<f64>,
    seconds: f64,
    setup_seconds: f64,
    name: String,
    bytes: usize,
    /// Entries of the E-vector.
    e_dofs: usize,
}

/// Times `apply` on a backend and the copy of `bytes` beside it.
type Timer<'a> = dyn FnMut(usize, &mut dyn FnMut() -> Result<()>) -> Result<(f64, CopyBandwidth)> + 'a;

/// The tangent of `K` at [`state`] stored as `level` on `b`, applied to
/// `x` (once for the result, then timed by `time` unless `None`).
fn product<B: NewtonOps, K: Kernels<f64> + 'static>(b: &B, cpu: &CpuBackend, space: &Space, level: Assembly, x: &[f64], time: Option<&mut Timer>) -> Result<(Measured, Option<CopyBandwidth>)> {
    let v = <K as Kernels<f64>>::VARIANTS.iter().find(|v| v.shape == space.shape && v.degree == space.degree).ok_or_else(|| Error::InvalidArgument(format!("{} has no Q{} {:?} cells", K::NAME, space.degree, space.shape)))?;
    let aux: Vec<f64> = if v.aux_nodal {
        (0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect()
    } else {
        // E = 1, ν = 0.3
        (0..space.n_cells()).flat_map(|_| [0.3 / (1.3 * 0.4), 1.0 / 2.6]).collect()
    };
    let aux = if v.aux_nodal { Aux::Nodal(&aux) } else { Aux::Cell(&aux) };
    let o = NewtonOptions { assembly: level, ..NewtonOptions::default() };
    let none = Constraints::none(space, v.nc);
    let setup = Setup::<K>::for_newton_on(b, cpu, space, aux, &none, None, &o, true)?;
    let mut w = Workspace::new(b, &setup, &o)?;
    let setup_seconds = w.setup_seconds;
    let sparse = setup.has_pattern().then(|| fem_host::problem::nonlinear::assembly::product_bytes(&setup).1);
    let bytes = bytes_moved(v, level, space.n_cells(), setup.n_rows(), sparse)?;
    drop(setup);
    let u = b.upload(&state(space, v.nc))?;
    let t = w.tangent_at(b, &u)?;
    let (xd, mut yd) = (b.upload(x)?, b.zeros::<f64>(x.len())?);
    t.apply(b, &xd, &mut yd)?;
    let y = b.download(&yd)?;
    let (seconds, copy) = match time {
        Some(time) => {
            let (s, c) = time(bytes, &mut || t.apply(b, &xd, &mut yd))?;
            (s, Some(c))
        }
        None => (0.0, None),
    };
    Ok((Measured { y, seconds, setup_seconds, name: t.name(), bytes, e_dofs: space.n_cells() * v.n_local() }, copy))
}

/// The cube (or square, in `dim` 2) of cells per direction of `size` at
/// degree `p`: the nearest to a number of elements, or the smallest with
/// at least this many element-local nodes.
fn cells_per_side(size: Size, p: usize, dim: usize) -> usize {
    let root = |v: f64| v.powf(1.0 / dim as f64);
    match size {
        Size::Elements(e) => (root(e as f64).round() as usize).max(1),
        Size::Dofs(d) => (root(d as f64) / (p + 1) as f64).ceil().max(1.0) as usize,
    }
}

/// The space of the run: Q_N on a cube of hexahedra (a square of
/// quadrilaterals), structured or with its interior vertices moved.
fn space_of(o: &PhysicsOptions) -> Result<Space> {
    if !(1..=8).contains(&o.degree) {
        return Err(Error::InvalidArgument(format!("the physics have cells of degree 1 to 8, not {}", o.degree)));
    }
    if !(2..=3).contains(&o.dim) {
        return Err(Error::InvalidArgument(format!("the physics run on quadrilaterals (dim 2) or hexahedra (dim 3), not dim {}", o.dim)));
    }
    let perturb = match o.deformation {
        Deformation::None => 0.0,
        Deformation::Trilinear { amplitude, .. } => amplitude,
        Deformation::Curved { .. } => return Err(Error::InvalidArgument("the physics map their cells trilinearly from the vertices: use --deform trilinear or none".into())),
    };
    let mesh = BoxMesh { perturb, ..BoxMesh::structured(o.dim, cells_per_side(o.size, o.degree, o.dim)) }.build()?;
    Space::tensor(&mesh, o.degree)
}

/// Runs `o` on `backend`: the product's time and rates, its error against
/// the CPU backend's product of the same level, and the CPU's time when
/// asked for.
pub fn run(o: &PhysicsOptions, backend: &AnyBackend, progress: &dyn Fn(&str)) -> Result<PhysicsReport> {
    if o.level == Assembly::Auto {
        return Err(Error::InvalidArgument("name the level to measure (partial, none, lma or a sparse format), not auto".into()));
    }
    if o.physics == Physics::Radiation {
        return Err(Error::InvalidArgument("radiation's Jacobian in the cells is Poisson's (its own term is on the boundary): choose poisson".into()));
    }
    progress("mesh and space");
    let space = space_of(o)?;
    let nc = if o.physics.is_vector() { o.dim } else { 1 };
    let x = test_vector(space.n_dofs * nc, 7);
    let repeats = o.repeats.max(1);
    let cpu = CpuBackend::new(None)?;
    let mut cpu_timer = |bytes: usize, apply: &mut dyn FnMut() -> Result<()>| -> Result<(f64, CopyBandwidth)> {
        let s = measure(&cpu, 1, repeats.clamp(1, 5), apply)?.median;
        Ok((s, copy_bandwidth(&cpu, bytes / 2, repeats.clamp(3, 20))?))
    };
    let (run, copy, reference) = match backend {
        AnyBackend::Cuda(gpu) => {
            progress("GPU product");
            let mut gpu_timer = |bytes: usize, apply: &mut dyn FnMut() -> Result<()>| -> Result<(f64, CopyBandwidth)> {
                let (s, batch) = timed(gpu, repeats, apply)?;
                Ok((s, best_copy_bandwidth_cycled(gpu, bytes / 2, repeats.clamp(3, 20), batch, 1)?))
            };
            let (m, copy) = with_physics!(o.physics, K => product::<_, K>(gpu, &cpu, &space, o.level, &x, Some(&mut gpu_timer)))?;
            progress(if o.cpu_time { "CPU product, timed" } else { "CPU reference" });
            let timer = o.cpu_time.then_some(&mut cpu_timer as &mut Timer);
            let (r, _) = with_physics!(o.physics, K => product::<_, K>(&cpu, &cpu, &space, o.level, &x, timer))?;
            (m, copy, Some(r))
        }
        AnyBackend::Cpu(c) => {
            progress("CPU product");
            let (m, copy) = with_physics!(o.physics, K => product::<_, K>(c, c, &space, o.level, &x, Some(&mut cpu_timer)))?;
            (m, copy, None)
        }
    };
    let copy = copy.ok_or_else(|| Error::InvalidArgument("the product was not timed".into()))?;
    let err = reference.as_ref().map_or(0.0, |r| max_rel_error(&run.y, &r.y));
    let cpu_seconds = reference.filter(|_| o.cpu_time).map(|r| r.seconds);
    let (rows, cells) = (x.len(), space.n_cells());
    let bytes = run.bytes;
    let s = run.seconds;
    Ok(PhysicsReport {
        physics: o.physics,
        level: o.level.to_string(),
        operator: run.name,
        degree: o.degree,
        dim: o.dim,
        elements: cells,
        l_dofs: rows,
        e_dofs: run.e_dofs,
        backend: backend.name(),
        setup_seconds: run.setup_seconds,
        seconds_per_apply: s,
        gdofs_per_second: rows as f64 / s / 1e9,
        e_gdofs_per_second: run.e_dofs as f64 / s / 1e9,
        bytes_moved: bytes,
        gbytes_per_second: bytes as f64 / s / 1e9,
        copy_gbytes_per_second: copy.bytes_per_second / 1e9,
        copy_method: copy.method,
        roofline_fraction: bytes as f64 / s / copy.bytes_per_second,
        max_rel_error_vs_cpu: err,
        cpu_seconds_per_apply: cpu_seconds,
        speedup_vs_cpu: cpu_seconds.map(|c| c / s),
    })
}
