//! Smoothed-aggregation algebraic multigrid (Vaněk, Mandel & Brezina
//! 1996; pyamg's `smoothed_aggregation_solver` is the reference for its
//! behaviour): a hierarchy built from an assembled symmetric operator
//! alone, for any physics and any mesh. Each level aggregates its nodes
//! by strength of connection ([`strength`], [`aggregate`]), fits the
//! near-nullspace on every aggregate into a tentative prolongator
//! ([`tentative`]: constants for a scalar field, rigid-body modes for
//! elasticity), smooths it by one damped Jacobi step
//! `P = (I − ω/ρ D⁻¹A) T`, and takes the Galerkin product `Pᵀ A P` as the
//! next operator ([`product`]), until at most
//! [`AmgOptions::max_coarse`] nodes are left. The cycles then run as
//! [`Multigrid`]'s do, on either backend.

pub mod aggregate;
pub mod device;
pub mod low_order;
pub mod mis;
pub mod product;
pub mod strength;
pub mod tentative;

pub use low_order::LowOrder;
pub use tentative::Nullspace;

use super::multigrid::{Cycle, MgOptions, Multigrid, Smoother};
use crate::operator::csr::Csr;
use crate::solver::transfer::transpose;
use crate::solver::PrecondOps;
use crate::sparse::spgemm::DeviceCsr;
use crate::{CpuBackend, CudaBackend, Error, Result, Scalar};
use cudarc::driver::CudaSlice;
use serde::Serialize;
use std::time::Instant;

/// How the hierarchy is built and cycled.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AmgOptions {
    /// How nodes are aggregated.
    pub aggregation: Aggregation,
    /// Strength threshold θ: nodes couple strongly where
    /// `|a_ij| ≥ θ √(|a_ii a_jj|)` (pyamg's default 0: every coupling).
    pub strength: f64,
    /// The prolongator smoothing's damping ω, over ρ(D⁻¹A) (pyamg: 4/3).
    pub prolongation_omega: f64,
    /// Coarsening stops at this many nodes or fewer (rows over the
    /// level's unknowns per node, as pyamg counts them).
    pub max_coarse: usize,
    /// Levels at most, the finest included.
    pub max_levels: usize,
    /// Smoother, cycle and coarse solve of the cycles.
    pub cycle: MgOptions,
    /// Keep the hierarchy of the first operator for every later one (time
    /// steps whose operators differ little: the set-up is paid once, the
    /// preconditioner stays close); otherwise it is rebuilt whenever the
    /// operator's values change.
    pub keep: bool,
    /// Set the hierarchy up on the host even where the GPU could: the
    /// GPU's set-up holds the operator, its products and their transposes
    /// in device memory at once.
    pub host_setup: bool,
}

impl Default for AmgOptions {
    /// θ = 0, ω = 4/3, coarsening to at most 300 nodes solved exactly (a
    /// dense inverse applied as one product), W(1, 1)-cycles smoothed by
    /// Chebyshev of degree 2 on D⁻¹A: a preconditioner for CG. With
    /// standard aggregation, on P1
    /// Poisson on unstructured tetrahedra (5k, 36k, 275k rows; Chebyshev
    /// then on `[0.33ρ, 1.1ρ]`) CG took 14, 17 and 20 iterations to 10⁻⁸
    /// where V-cycles took 14, 18 and 23; θ = 0.1 took 12, 14 and 16 at
    /// operator complexity 1.77 against 1.14 and 2.5 times the set-up.
    fn default() -> Self {
        Self {
            aggregation: Aggregation::Parallel,
            strength: 0.0,
            prolongation_omega: 4.0 / 3.0,
            max_coarse: 300,
            max_levels: 20,
            cycle: MgOptions { smoother: Smoother::Chebyshev(2), cycle: Cycle::W, pre: 1, post: 1, omega: 1.0, coarse_rtol: 1e-3, dense_coarse: DENSE_COARSE },
            keep: false,
            host_setup: false,
        }
    }
}

/// How the nodes of a level are grouped into aggregates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Aggregation {
    /// Around a distance-2 maximal independent set found in parallel
    /// rounds ([`mis`]): the same aggregates on the CPU and the GPU, where
    /// the whole set-up then runs.
    Parallel,
    /// pyamg's `standard_aggregation` ([`aggregate`]), sequential: on the
    /// host only.
    Standard,
}

/// Rows up to which the coarsest level is inverted densely: 300 nodes of
/// 3D elasticity's six rigid-body modes.
pub const DENSE_COARSE: usize = 1800;

/// One level of a built hierarchy.
#[derive(Clone, Debug, Serialize)]
pub struct LevelStats {
    /// Rows of its operator.
    pub rows: usize,
    /// Stored entries of its operator.
    pub nonzeros: usize,
}

/// Host seconds of each stage of the set-up.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SetupSeconds {
    /// Strength of connection.
    pub strength: f64,
    /// Aggregation.
    pub aggregation: f64,
    /// Tentative prolongators.
    pub tentative: f64,
    /// Their Jacobi smoothing.
    pub smoothing: f64,
    /// Galerkin products.
    pub galerkin: f64,
    /// Levels stored on the backend, smoother bounds, coarse inverse.
    pub upload: f64,
}

/// What a built hierarchy is like, as the reports give it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AmgStats {
    /// Finest first.
    pub levels: Vec<LevelStats>,
    /// Nonzeros of all levels over the finest's.
    pub operator_complexity: f64,
    /// Rows of all levels over the finest's.
    pub grid_complexity: f64,
    /// Where the set-up's time went.
    pub seconds: SetupSeconds,
}

/// The matrices of a hierarchy below the operator it was built from,
/// coarsest first, as [`Multigrid::from_hierarchy`] takes them with that
/// operator after them.
pub struct Hierarchy {
    /// The coarser operators.
    pub a: Vec<Csr<f64>>,
    /// `p[l]` prolongs level `l` to `l + 1` (the last to the operator's).
    pub p: Vec<Csr<f64>>,
    /// ρ(D⁻¹A) of every level above the coarsest, the operator's last.
    pub rho: Vec<f64>,
    /// Sizes, complexities and set-up times.
    pub stats: AmgStats,
}

/// The hierarchy of `a` (`block` rows a node) with near-nullspace `b`.
/// An error where `a` is not square and symmetric, has a diagonal entry
/// that is not positive, or a value that is not finite: smoothed
/// aggregation assumes a symmetric positive definite operator.
pub fn hierarchy(cpu: &CpuBackend, a: &Csr<f64>, block: usize, b: &Nullspace, o: &AmgOptions) -> Result<Hierarchy> {
    check(cpu, a, block)?;
    if b.rows() != a.n_rows || b.k == 0 {
        return Err(Error::InvalidArgument(format!("AMG: near-nullspace of {} rows and {} vectors for an operator of {} rows", b.rows(), b.k, a.n_rows)));
    }
    let mut stats = AmgStats::default();
    let (mut levels, mut prolongations, mut rho): (Vec<Csr<f64>>, Vec<Csr<f64>>, Vec<f64>) = (Vec::new(), Vec::new(), Vec::new());
    let (mut b, mut block) = (b.clone(), block);
    while levels.len() + 1 < o.max_levels.max(1) {
        let fine = levels.last().unwrap_or(a);
        if fine.n_rows / block <= o.max_coarse {
            break;
        }
        let s = &mut stats.seconds;
        let (agg, n_agg) = aggregates(cpu, fine, block, o, s)?;
        if n_agg == 0 || n_agg * b.k >= fine.n_rows {
            break; // nothing coarser to gain
        }
        let t = Instant::now();
        let (tp, coarse_b) = tentative::tentative(cpu, &agg, n_agg, block, &b)?;
        s.tentative += lap(t);
        let t = Instant::now();
        let r = spectral_radius(cpu, fine);
        let p = smooth_prolongator(cpu, fine, &tp, o.prolongation_omega, r)?;
        s.smoothing += lap(t);
        let t = Instant::now();
        let coarse = galerkin(cpu, fine, &p, n_agg * b.k)?;
        s.galerkin += lap(t);
        levels.push(coarse);
        prolongations.push(p);
        rho.push(r);
        (b, block) = (coarse_b, b.k);
    }
    if levels.is_empty() && a.n_rows > o.cycle.dense_coarse {
        return Err(Error::InvalidArgument(format!("AMG found no coarser level for {} rows at strength threshold {} (lower it)", a.n_rows, o.strength)));
    }
    let all = || std::iter::once(a).chain(&levels);
    let (n0, z0) = (a.n_rows.max(1) as f64, a.nnz().max(1) as f64);
    stats.levels = all().map(|m| LevelStats { rows: m.n_rows, nonzeros: m.nnz() }).collect();
    stats.grid_complexity = all().map(|m| m.n_rows as f64).sum::<f64>() / n0;
    stats.operator_complexity = all().map(|m| m.nnz() as f64).sum::<f64>() / z0;
    for list in [&mut levels, &mut prolongations] {
        list.reverse();
    }
    rho.reverse();
    Ok(Hierarchy { a: levels, p: prolongations, rho, stats })
}

/// Each node's aggregate of `a` (`block` rows a node) and their number, by
/// strength of connection and the aggregation `o` asks for, the seconds
/// of both added to `s`.
pub(crate) fn aggregates(cpu: &CpuBackend, a: &Csr<f64>, block: usize, o: &AmgOptions, s: &mut SetupSeconds) -> Result<(Vec<u32>, usize)> {
    let t = Instant::now();
    let g = strength::strength(cpu, a, block, o.strength)?;
    s.strength += lap(t);
    let t = Instant::now();
    let aggregated = match o.aggregation {
        Aggregation::Parallel => mis::aggregate(cpu, &g),
        Aggregation::Standard => aggregate::aggregate(&g),
    };
    s.aggregation += lap(t);
    Ok(aggregated)
}

pub(crate) fn lap(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// Refuses what smoothed aggregation cannot precondition, row by row as
/// the GPU set-up does ([`fem_kernels::amg::row_defect`]; rows sorted).
pub(crate) fn check(cpu: &CpuBackend, a: &Csr<f64>, block: usize) -> Result<()> {
    if block == 0 || a.n_rows % block != 0 {
        return Err(Error::InvalidArgument(format!("AMG: {} rows are not nodes of {block} unknowns", a.n_rows)));
    }
    let d = a.diag();
    // one pass over the rows: the first row with each defect
    let first = cpu.install(|| {
        use rayon::prelude::*;
        let row = |r: usize| {
            let bits = unsafe { fem_kernels::amg::row_defect(r, a.n_rows, a.row_ptr.as_ptr(), a.col.as_ptr(), a.val.as_ptr(), d.as_ptr()) };
            DEFECTS.map(|bit| (bits & bit != 0).then_some(r))
        };
        let earlier = |x: [Option<usize>; 4], y: [Option<usize>; 4]| std::array::from_fn(|i| match (x[i], y[i]) {
            (Some(p), Some(q)) => Some(p.min(q)),
            (p, q) => p.or(q),
        });
        (0..a.n_rows).into_par_iter().map(row).reduce(|| [None; 4], earlier)
    });
    let bad_value = |r: usize| a.val[a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize].iter().find(|v| !v.is_finite()).copied();
    defects(a.n_rows, first, bad_value, |r| d[r])
}

/// The defect bits of [`fem_kernels::amg::row_defect`], in the order
/// [`defects`] reports them.
pub(crate) const DEFECTS: [u32; 4] = [fem_kernels::amg::NOT_FINITE, fem_kernels::amg::DIAGONAL, fem_kernels::amg::OUT_OF_RANGE, fem_kernels::amg::ASYMMETRIC];

/// The error for the first row with each of [`DEFECTS`], if any, of an
/// operator of `n` rows; `bad_value(r)` is a value of row `r` that is not
/// finite, `diag(r)` its diagonal.
pub(crate) fn defects(n: usize, first: [Option<usize>; 4], bad_value: impl Fn(usize) -> Option<f64>, diag: impl Fn(usize) -> f64) -> Result<()> {
    let msg = match first {
        [Some(r), ..] => format!("AMG: the operator holds the value {} in row {r}", bad_value(r).unwrap_or(f64::NAN)),
        [_, Some(r), ..] => format!("AMG needs a symmetric positive definite operator; row {r} has the diagonal {}", diag(r)),
        [_, _, Some(r), _] => format!("AMG needs a square operator; row {r} has a column past {n}"),
        [_, _, _, Some(r)] => format!("AMG needs a symmetric operator; row {r} differs from its column (precondition a non-symmetric one by Jacobi, SPAI(1) or multigrid with GMRES or BiCGStab)"),
        _ => return Ok(()),
    };
    Err(Error::InvalidArgument(msg))
}

/// ρ(D⁻¹A) of `a` on the host ([`super::chebyshev::spectral_radius`]
/// from the start the GPU set-up takes too).
pub fn spectral_radius(cpu: &CpuBackend, a: &Csr<f64>) -> f64 {
    let scale: Vec<f64> = a.diag().iter().map(|d| if *d > 0.0 { 1.0 / d.sqrt() } else { 0.0 }).collect();
    // lengths agree by construction: the host's vector operations cannot fail
    super::chebyshev::spectral_radius(cpu, a, &scale, &power_start(a.n_rows)).unwrap_or(f64::NAN)
}

/// The pseudo-random start of the power iterations, the same on every
/// backend.
pub fn power_start(n: usize) -> Vec<f64> {
    (0..n as u32).map(fem_kernels::amg::hash_unit).collect()
}

/// `P = T − (ω/ρ) D⁻¹ A T`, `rho` = ρ(D⁻¹A), each row at once from the
/// rows of `T` that `A`'s row couples (no `A T` kept).
fn smooth_prolongator(cpu: &CpuBackend, a: &Csr<f64>, t: &Csr<f64>, omega: f64, rho: f64) -> Result<Csr<f64>> {
    let d = a.diag();
    product::build(cpu, a.n_rows, |r, terms| {
        let scale = omega / rho / d[r];
        product::push_row(t, r, 1.0, terms);
        for k in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
            product::push_row(t, a.col[k] as usize, -scale * a.val[k], terms);
        }
    })
}

/// `Pᵀ A P` with `n_coarse` rows; a row left empty (a prolongator column
/// of zeros: a dependent near-nullspace vector) gets a unit diagonal, so
/// that the coarse operator stays invertible and that unknown stays zero.
pub(crate) fn galerkin(cpu: &CpuBackend, a: &Csr<f64>, p: &Csr<f64>, n_coarse: usize) -> Result<Csr<f64>> {
    let ap = product::multiply(cpu, a, p)?;
    let pt = transpose(p, n_coarse);
    product::build(cpu, n_coarse, |c, terms| {
        for k in pt.row_ptr[c] as usize..pt.row_ptr[c + 1] as usize {
            product::push_row(&ap, pt.col[k] as usize, pt.val[k], terms);
        }
        if terms.is_empty() {
            terms.push((c as u32, 1.0));
        }
    })
}

/// An operator's pattern kept between AMG set-ups from its changing
/// values, and its copy on the device once the GPU has set up from it.
pub struct Pattern {
    host: Csr<f64>,
    /// Unknowns per node.
    pub block: usize,
    /// The operator (values of the last build) and the low-order level's
    /// prolongation on the device, uploaded once.
    device: Option<(DeviceCsr, Option<DeviceCsr>)>,
    /// The low-order level of a high-order space (p-multigrid).
    pub low_order: Option<Box<LowOrder>>,
}

impl Pattern {
    /// The pattern of `a` (its values are not kept), `block` rows a node.
    pub fn new(a: &Csr<f64>, block: usize) -> Self {
        Self { host: a.pattern_only(), block, device: None, low_order: None }
    }

    /// An error unless `len` values fill this pattern.
    fn check_len(&self, len: usize) -> Result<()> {
        if len != self.host.col.len() {
            return Err(Error::InvalidArgument(format!("AMG: {len} values for a pattern of {} entries", self.host.col.len())));
        }
        Ok(())
    }

    /// The hierarchy of this pattern's operator with values `val` built
    /// on the host (through its low-order level where it has one) as a
    /// multigrid on `bk`; the pattern lends the operator its indices (no
    /// copy).
    pub fn build_on_host<B: PrecondOps + 'static, T: Scalar>(&mut self, bk: &B, cpu: &CpuBackend, val: Vec<f64>, b: &Nullspace, o: &AmgOptions) -> Result<(Multigrid<B, T>, AmgStats)> {
        self.check_len(val.len())?;
        self.host.val = val;
        let (a, block) = (&self.host, self.block);
        let built = match &self.low_order {
            Some(l) => low_order::build(bk, cpu, a, block, l, o),
            None => build(bk, cpu, a, block, b, o),
        };
        self.host.val = Vec::new();
        built
    }

    /// Whether the whole set-up of this pattern's operators can run on the
    /// GPU ([`device`]): at most [`fem_kernels::amg::nodes::MAX_BLOCK`]
    /// unknowns a node and near-nullspace vectors, aggregated in
    /// parallel, smoothed by Jacobi or Chebyshev (the others are set up
    /// from host matrices).
    pub fn on_gpu(&self, b: &Nullspace, o: &AmgOptions) -> bool {
        gpu_sets_up(self.block, self.low_order.as_ref().map_or(b.k, |l| l.nullspace.k), o)
    }

    /// The hierarchy of this pattern's operator with values `val` (on the
    /// device) built on the GPU, through its low-order level where it has
    /// one; the pattern and that level's prolongation go up once.
    pub fn build_on_gpu<T: Scalar>(&mut self, gpu: &CudaBackend, val: &CudaSlice<T>, b: &Nullspace, o: &AmgOptions) -> Result<(Multigrid<CudaBackend, T>, AmgStats)> {
        self.check_len(val.len())?;
        if self.device.is_none() {
            self.device = Some((DeviceCsr::upload(gpu, &self.host, self.host.n_rows)?, None));
        }
        let (a, p) = self.device.as_mut().expect("uploaded above");
        crate::Backend::convert(gpu, val, &mut a.val)?;
        match &self.low_order {
            Some(l) => {
                if p.is_none() {
                    *p = Some(DeviceCsr::upload(gpu, &l.p, l.n_coarse)?);
                }
                device::build(gpu, a, self.block, &l.nullspace, p.as_ref(), o)
            }
            None => device::build(gpu, a, self.block, b, None, o),
        }
    }
}

/// Whether the GPU sets up the hierarchy of an operator of `block`
/// unknowns a node and `k` near-nullspace vectors ([`device`], and its
/// partitioned form across ranks): at most
/// [`fem_kernels::amg::nodes::MAX_BLOCK`] of each, aggregated in
/// parallel, smoothed by Jacobi or Chebyshev (the others are set up from
/// host matrices), unless the options ask for the host.
pub fn gpu_sets_up(block: usize, k: usize, o: &AmgOptions) -> bool {
    use fem_kernels::amg::nodes::MAX_BLOCK;
    !o.host_setup && block <= MAX_BLOCK && (1..=MAX_BLOCK).contains(&k) && o.aggregation == Aggregation::Parallel && matches!(o.cycle.smoother, Smoother::Jacobi | Smoother::Chebyshev(_))
}

/// The hierarchy of `a` as a multigrid preconditioner on backend `bk` in
/// precision `T`, with its statistics (upload seconds included).
pub fn build<B: PrecondOps + 'static, T: Scalar>(bk: &B, cpu: &CpuBackend, a: &Csr<f64>, block: usize, b: &Nullspace, o: &AmgOptions) -> Result<(Multigrid<B, T>, AmgStats)> {
    upload(bk, cpu, a, hierarchy(cpu, a, block, b, o)?, o)
}

/// The multigrid of `a` over the levels `h` below it on backend `bk`.
pub(crate) fn upload<B: PrecondOps + 'static, T: Scalar>(bk: &B, cpu: &CpuBackend, a: &Csr<f64>, h: Hierarchy, o: &AmgOptions) -> Result<(Multigrid<B, T>, AmgStats)> {
    let t = Instant::now();
    // the operator itself goes up as it is where T is f64
    let at: Vec<std::borrow::Cow<Csr<T>>> = h.a.iter().chain(std::iter::once(a)).map(|m| m.in_precision::<T>()).collect();
    let pt: Vec<std::borrow::Cow<Csr<T>>> = h.p.iter().map(|m| m.in_precision::<T>()).collect();
    let mut mg = Multigrid::from_hierarchy(bk, cpu, &at, &pt, &h.rho, o.cycle)?;
    mg.invert_coarsest(bk, &at[0])?;
    let mut stats = h.stats;
    stats.seconds.upload = lap(t);
    Ok((mg, stats))
}
