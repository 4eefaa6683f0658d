//! The BP operators under the tuner: the launch (2D thread slices or, for
//! BP3.5 up to N = 7, one thread per node; elements per block; a register
//! budget; for BP3.5's line kernel, the column in registers or shared
//! memory, and at N = 7, 8 the depth of its shared factor ring) is chosen per problem, degree and mesh size by timing every
//! launch that fits the block's limits. There is no model to prune with:
//! the candidates are few and each application is short.
//!
//! The register budget matters because the kernels are fully unrolled:
//! `ptxas` may hold many loads in flight in registers or few, trading
//! latency hiding in a warp against resident warps, and which wins varies
//! with the degree and the build (on an H100, 20 of the 45 tuned BP1,
//! BP3.0 and BP3.5 launches at 1e7 DOFs carry a budget;
//! `benches/gpu/results/bp`).

use super::gpu::{default_elements_per_block, default_ring, has_ring, kernel_for, recomputes_at, Column, GpuTensor, MAX_DEGREE_3D, RING_AHEAD};
use super::Problem;
use fem_kernels::tensor::BpKernel;
use crate::timing::{batch_for, measure_batched, warm_up};
use crate::tune::{pow2_exponent, search, Candidate, Outcome, SearchOptions, Tuning};
use crate::{Backend, CudaBackend, Result};
use cudarc::driver::CudaSlice;
use serde::{Deserialize, Serialize};

/// How a BP operator is launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BpLaunch {
    /// One thread per node (BP3.5 up to N = 7) instead of 2D thread slices.
    pub threads_3d: bool,
    /// Elements per thread block (`blockDim.y`).
    pub elements_per_block: usize,
    /// Registers budgeted for at least this many resident warps per SM
    /// (`.minnctapersm`); 0 leaves the count to the compiler.
    #[serde(default)]
    pub min_warps: usize,
    /// Where BP3.5's line kernel keeps a thread's column; `None`: where
    /// more warps reside (`GpuTensor::with_launch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<Column>,
    /// BP3.5's line kernel with the geometric factors copied into a shared
    /// ring this many slices ahead (`gpu::RING_DEGREES`); 0: through
    /// registers.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ring: usize,
    /// The kernel recomputing the geometric factors at each point from the
    /// corners of trilinear elements instead of reading them
    /// (`gpu::uses_corners`: BP1's, BP3.0's and BP3.5's line kernel up to
    /// N = 8; a ring is then dropped). On curved elements the stored
    /// factors are read.
    #[serde(default, skip_serializing_if = "is_false")]
    pub recompute: bool,
}

fn is_zero(v: &usize) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

/// Warm-up of each candidate before it is timed, in batches of at least
/// a millisecond as `fem bp` times the winner (a candidate compiled a
/// moment ago runs for the first time here).
const CANDIDATE_WARMUP_SECONDS: f64 = 0.01;

/// Register budgets the tuner tries, in resident warps per SM.
pub const MIN_WARPS: [usize; 3] = [0, 16, 24];

impl BpLaunch {
    /// The launch without tuning: 2D slices, enough elements to fill 256 threads.
    pub fn default_for(problem: Problem, degree: usize) -> Self {
        Self::builtin(problem, degree, false)
    }

    /// The built-in launch of the variant: its ring ([`default_ring`]),
    /// enough elements to fill 256 threads, no register budget, the column
    /// where more warps reside.
    pub fn builtin(problem: Problem, degree: usize, threads_3d: bool) -> Self {
        Self::builtin_with(problem, degree, threads_3d, None)
    }

    /// [`Self::builtin`] with the line kernel's column named.
    fn builtin_with(problem: Problem, degree: usize, threads_3d: bool, column: Option<Column>) -> Self {
        let kernel = kernel_for(problem, degree, threads_3d);
        let ring = default_ring(kernel, degree, column);
        Self { threads_3d, elements_per_block: default_elements_per_block(kernel, degree, ring), min_warps: 0, column, ring, recompute: false }
    }
}

/// The signature of a BP application.
pub fn signature(problem: Problem, degree: usize, elements: usize, assembled: bool) -> String {
    signature_at(problem, degree, pow2_exponent(elements), assembled)
}

/// The signature for meshes of about 2^`bucket` elements.
fn signature_at(problem: Problem, degree: usize, bucket: u32, assembled: bool) -> String {
    let on = if assembled { "assembled" } else { "elements" };
    format!("bp/{}/n{degree}/f64/elements=2^{bucket}/{on}", problem.name())
}

/// Doublings of the element count across which a launch tuned for one
/// mesh stands in for an untuned size: the kernel, block shape and
/// register budget that win depend on the degree far more than on the
/// element count (H100: the launches tuned at 1e7 DOFs, on 4096 elements
/// of N = 6..8, against the built-in ones; `benches/gpu/results/bp`).
pub const NEAREST_BUCKETS: u32 = 3;

/// The launch tuned for this signature, else for the nearest size within
/// [`NEAREST_BUCKETS`] doublings (the larger mesh on a tie), with the
/// signature it was stored under.
pub fn tuned_launch(problem: Problem, degree: usize, elements: usize, assembled: bool, tuning: &Tuning) -> Option<(BpLaunch, String)> {
    let k = pow2_exponent(elements);
    (0..=NEAREST_BUCKETS)
        .flat_map(|d| [Some(k + d), k.checked_sub(d)])
        .flatten()
        .map(|b| signature_at(problem, degree, b, assembled))
        .find_map(|key| tuning.get(&key).map(|l| (l, key)))
}

/// The launch of a BP application: the user's, else the tuning file's
/// (see [`tuned_launch`]), else the default. A user who names the variant, the block shape, the
/// register budget or the column takes the launch out of the tuner's hands;
/// where the factors come from, if named, overrides the launch's choice.
pub fn resolve(problem: Problem, degree: usize, elements: usize, assembled: bool, user: &UserLaunch, tuning: &Tuning) -> BpLaunch {
    let UserLaunch { threads_3d, elements_per_block, min_warps, column, ring, recompute } = *user;
    let launch = if user.names_any() {
        let builtin = BpLaunch::builtin_with(problem, degree, threads_3d, column);
        let ring = ring.unwrap_or(builtin.ring);
        let epb = elements_per_block.unwrap_or_else(|| default_elements_per_block(kernel_for(problem, degree, threads_3d), degree, ring));
        BpLaunch { threads_3d, elements_per_block: epb, min_warps: min_warps.unwrap_or(0), column, ring, recompute: false }
    } else {
        tuned_launch(problem, degree, elements, assembled, tuning).map_or_else(|| BpLaunch::default_for(problem, degree), |(l, _)| l)
    };
    BpLaunch { recompute: recompute.unwrap_or(launch.recompute), ..launch }
}

/// The parts of a launch a user named (the rest from the tuning file or
/// the defaults).
#[derive(Clone, Copy, Debug, Default)]
pub struct UserLaunch {
    /// One thread per node (BP3.5 up to N = 7).
    pub threads_3d: bool,
    /// Elements per thread block.
    pub elements_per_block: Option<usize>,
    /// Register budget in resident warps per SM.
    pub min_warps: Option<usize>,
    /// Column of BP3.5's line kernel.
    pub column: Option<Column>,
    /// Depth of BP3.5's line kernel's factor ring (0: none).
    pub ring: Option<usize>,
    /// Whether BP3.5's line kernel recomputes the geometric factors
    /// ([`BpLaunch::recompute`]), where the user said.
    pub recompute: Option<bool>,
}

impl UserLaunch {
    /// Whether the user named any part of the launch (and so all of it
    /// is out of the tuner's hands).
    pub fn names_any(&self) -> bool {
        self.threads_3d || self.elements_per_block.is_some() || self.min_warps.is_some() || self.column.is_some() || self.ring.is_some()
    }
}

/// Every launch worth trying: 1, 2, 3, 4, 6, 8, ... elements per block
/// (up to 1024 threads) for each variant the problem has (each column of
/// the line kernel, with the column in shared memory each ring depth
/// where it has a ring), and where the elements are trilinear (`corners`)
/// each of these recomputing the factors where the kernel can
/// ([`recomputes_at`]; no ring), each with every register budget of
/// [`MIN_WARPS`].
pub fn candidates(problem: Problem, degree: usize, corners: bool) -> Vec<BpLaunch> {
    let variants: &[bool] = if problem == Problem::Bp35 && degree <= MAX_DEGREE_3D { &[false, true] } else { &[false] };
    let mut out = Vec::new();
    for &threads_3d in variants {
        let k = kernel_for(problem, degree, threads_3d);
        let columns = if k == BpKernel::CollocatedLines { vec![Some(Column::Registers), Some(Column::Shared)] } else { vec![None] };
        let mut layouts: Vec<_> = columns.iter().map(|&c| (c, 0, false)).collect();
        if has_ring(k, degree) {
            layouts.extend(RING_AHEAD.iter().map(|&a| (Some(Column::Shared), a, false)));
        }
        if corners && recomputes_at(k, degree) {
            layouts.extend(columns.iter().map(|&c| (c, 0, true)));
        }
        let per = k.threads(degree + 1, fem_core::tensor::gl_points(degree));
        for &(column, ring, recompute) in &layouts {
            let mut epb = 1;
            while epb * per <= 1024 {
                out.extend(MIN_WARPS.iter().map(|&min_warps| BpLaunch { threads_3d, elements_per_block: epb, min_warps, column, ring, recompute }));
                epb = if epb < 4 { epb + 1 } else { epb + epb / 2 };
            }
        }
    }
    out
}

/// Times every launch of `t`'s operator on E-vectors (or through the
/// element map when `assembled`) and leaves `t` on the fastest.
pub fn tune(gpu: &CudaBackend, t: &mut GpuTensor, assembled: bool, repeats: usize, so: &SearchOptions, progress: impl FnMut(usize, usize, &BpLaunch)) -> Result<Outcome<BpLaunch>> {
    let op = t.op;
    let n = if assembled { op.restriction.rows() } else { op.element_dofs() };
    let x = gpu.upload(&crate::sparse::bench::test_vector::<f64>(n, 7))?;
    let mut y: CudaSlice<f64> = gpu.zeros(n)?;
    let cands: Vec<Candidate<BpLaunch>> = candidates(op.problem, op.degree, op.corners.is_some()).into_iter().map(|params| Candidate { params, predicted: None }).collect();
    let default = BpLaunch::default_for(op.problem, op.degree);
    let outcome = search(
        default,
        &cands,
        so,
        |l| {
            t.set_launch(*l)?;
            let apply = |y: &mut CudaSlice<f64>| if assembled { crate::operator::LinearOperator::apply(&*t, gpu, &x, y) } else { t.apply_elements(&x, y) };
            let batch = batch_for(warm_up(gpu, CANDIDATE_WARMUP_SECONDS, || apply(&mut y))?);
            Ok(measure_batched(gpu, 2, repeats, batch, || apply(&mut y))?.median)
        },
        progress,
    )?;
    t.set_launch(outcome.best)?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::tensor::gpu::{MAX_DEGREE_LINES, MAX_DEGREE_RECOMPUTE, RING_DEGREES};

    #[test]
    fn the_line_kernel_is_tried_with_both_columns_and_no_other_kernel_is() {
        for degree in 1..=15 {
            for problem in [Problem::Bp1, Problem::Bp35, Problem::Bp30] {
                let c = candidates(problem, degree, false);
                // on trilinear elements, up to N = 8 each launch but the 3D
                // threads' and the rings' also recomputing the factors
                let with = candidates(problem, degree, true);
                let recomputing = with.iter().filter(|l| l.recompute).count();
                let plain = |c: &[BpLaunch]| c.iter().filter(|l| !l.threads_3d && l.ring == 0 && !l.recompute).count();
                let want = if degree <= MAX_DEGREE_RECOMPUTE && !(problem == Problem::Bp35 && degree > MAX_DEGREE_LINES) { plain(&c) } else { 0 };
                assert_eq!(recomputing, want, "{problem:?} N={degree}: every launch of BP1, BP3.0 and BP3.5's lines recomputing, every block and budget");
                assert!(with.iter().all(|l| !l.recompute || !l.threads_3d), "{problem:?} N={degree}");
                assert_eq!(with.len(), c.len() + recomputing, "{problem:?} N={degree}");
                assert!(with.iter().all(|l| !l.recompute || (l.ring == 0 && l.column.is_some() == (problem == Problem::Bp35))), "{problem:?} N={degree}: recomputing launches have no ring, BP3.5's a column");
                let lines: Vec<_> = c.iter().filter(|l| !l.threads_3d && problem == Problem::Bp35 && degree <= MAX_DEGREE_LINES).collect();
                let shared = c.iter().filter(|l| l.column == Some(Column::Shared) && l.ring == 0).count();
                let registers = c.iter().filter(|l| l.column == Some(Column::Registers)).count();
                let rings = c.iter().filter(|l| l.ring > 0).count();
                assert_eq!(shared + registers + rings, lines.len(), "{problem:?} N={degree}: a column on every line launch and no other");
                assert_eq!(shared, registers, "{problem:?} N={degree}: each line launch with both columns");
                assert!(c.iter().all(|l| l.ring == 0 || l.column == Some(Column::Shared)), "{problem:?} N={degree}: the ring keeps its column in shared memory");
                let ringed = problem == Problem::Bp35 && RING_DEGREES.contains(&degree);
                assert_eq!(rings, if ringed { RING_AHEAD.len() * shared } else { 0 }, "{problem:?} N={degree}: every ring depth beside the shared column");
            }
        }
        assert!(candidates(Problem::Bp35, MAX_DEGREE_LINES, false).iter().any(|l| l.column == Some(Column::Shared)));
    }

    /// Named factors override the launch's, tuned or built in, without
    /// taking the rest of it from the tuner.
    #[test]
    fn named_factors_override_the_launch() {
        let tuning = Tuning::at(None, "test device");
        let builtin = resolve(Problem::Bp35, 4, 1000, true, &UserLaunch::default(), &tuning);
        assert!(!builtin.recompute, "the built-in launch reads the stored factors");
        let user = UserLaunch { recompute: Some(true), ..Default::default() };
        assert!(!user.names_any());
        assert_eq!(resolve(Problem::Bp35, 4, 1000, true, &user, &tuning), BpLaunch { recompute: true, ..builtin });
        let json = serde_json::to_string(&BpLaunch { recompute: true, ..builtin }).unwrap();
        assert!(json.contains("\"recompute\":true"), "{json}");
        assert!(!serde_json::to_string(&builtin).unwrap().contains("recompute"), "stored factors are the default of older tuning files");
    }

    #[test]
    fn a_named_column_takes_the_launch_from_the_tuner() {
        let tuning = Tuning::at(None, "test device");
        let user = UserLaunch { column: Some(Column::Shared), ..Default::default() };
        let l = resolve(Problem::Bp35, 8, 1000, false, &user, &tuning);
        assert_eq!((l.column, l.ring), (Some(Column::Shared), 2), "N = 8 keeps its built-in ring");
        assert_eq!(l.elements_per_block, default_elements_per_block(BpKernel::CollocatedLines, 8, 2));
        assert_eq!(resolve(Problem::Bp35, 8, 1000, false, &UserLaunch::default(), &tuning).column, None);
        // a column in registers has no ring, and fits more elements per block
        let user = UserLaunch { column: Some(Column::Registers), ..Default::default() };
        let l = resolve(Problem::Bp35, 8, 1000, false, &user, &tuning);
        assert_eq!((l.ring, l.elements_per_block), (0, default_elements_per_block(BpKernel::CollocatedLines, 8, 0)));
        assert!(default_elements_per_block(BpKernel::CollocatedLines, 8, 2) < l.elements_per_block, "the ring's shared memory leaves room for fewer elements");
        let user = UserLaunch { ring: Some(0), ..Default::default() };
        assert_eq!(resolve(Problem::Bp35, 8, 1000, false, &user, &tuning).ring, 0, "a ring of 0 named turns it off");
    }

    #[test]
    fn a_launch_tuned_for_a_nearby_size_stands_in() {
        let mut tuning = Tuning::at(None, "test device");
        let (p, n) = (Problem::Bp30, 7);
        let near = BpLaunch { threads_3d: false, elements_per_block: 5, min_warps: 16, column: None, ring: 0, recompute: false };
        let far = BpLaunch { elements_per_block: 7, ..near };
        tuning.file.insert(&signature(p, n, 1 << 14, false), &near, 1e-4, 2e-4, 3, 0);
        tuning.file.insert(&signature(p, n, 1 << 2, false), &far, 1e-4, 2e-4, 3, 0);
        let at = |e: usize, tuning: &Tuning| resolve(p, n, e, false, &UserLaunch::default(), tuning);
        assert_eq!(at(1 << 14, &tuning), near);
        assert_eq!(at(4096, &tuning), near, "two doublings away");
        assert_eq!(at(1 << 17, &tuning), near, "three doublings away");
        assert_eq!(at(1 << 18, &tuning), BpLaunch::default_for(p, n), "four doublings away");
        assert_eq!(at(1 << 8, &tuning), BpLaunch::default_for(p, n), "the nearest is six doublings away on both sides");
        assert_eq!(at(1 << 5, &tuning), far);
        assert_eq!(resolve(p, n, 4096, true, &UserLaunch::default(), &tuning), BpLaunch::default_for(p, n), "elements and assembled are tuned apart");
        assert_eq!(resolve(p, 6, 4096, false, &UserLaunch::default(), &tuning), BpLaunch::default_for(p, 6), "degrees are tuned apart");
        // a tie goes to the larger mesh, and the exact size wins over both
        let small = BpLaunch { elements_per_block: 2, ..near };
        tuning.file.insert(&signature(p, n, 1 << 10, false), &small, 1e-4, 2e-4, 3, 0);
        assert_eq!(tuned_launch(p, n, 1 << 12, false, &tuning), Some((near, signature(p, n, 1 << 14, false))));
        tuning.file.insert(&signature(p, n, 1 << 12, false), &small, 1e-4, 2e-4, 3, 0);
        assert_eq!(at(1 << 12, &tuning), small);
    }

    #[test]
    fn launches_without_a_column_read_as_before() {
        let l: BpLaunch = serde_json::from_str(r#"{"threads_3d":false,"elements_per_block":3,"min_warps":16}"#).unwrap();
        assert_eq!(l.column, None);
        assert_eq!(l.ring, 0, "launches stored before the ring have none");
        let s = serde_json::to_string(&BpLaunch { column: Some(Column::Registers), ..l }).unwrap();
        assert!(s.contains(r#""column":"registers""#), "{s}");
        assert!(!s.contains("ring"), "no ring, nothing written: {s}");
        let s = serde_json::to_string(&BpLaunch { column: Some(Column::Shared), ring: 3, ..l }).unwrap();
        assert_eq!(serde_json::from_str::<BpLaunch>(&s).unwrap().ring, 3);
    }
}
