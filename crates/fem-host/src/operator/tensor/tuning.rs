//! The BP operators under the tuner: the launch (2D thread slices or, for
//! BP3.5 up to N = 7, one thread per node; elements per block; a register
//! budget) is chosen per problem, degree and mesh size by timing every
//! launch that fits the block's limits. There is no model to prune with:
//! the candidates are few and each application is short.
//!
//! The register budget matters because the kernels are fully unrolled:
//! `ptxas` may hold many loads in flight in registers or few, trading
//! latency hiding in a warp against resident warps, and which wins varies
//! with the degree and the build (on an H100, 20 of the 45 tuned BP1,
//! BP3.0 and BP3.5 launches at 1e7 DOFs carry a budget;
//! `benches/gpu/results/bp`).

use super::gpu::{default_elements_per_block, kernel_for, GpuTensor, MAX_DEGREE_3D};
use super::Problem;
use crate::timing::measure;
use crate::tune::{pow2_bucket, search, Candidate, Outcome, SearchOptions, Tuning};
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
}

/// Register budgets the tuner tries, in resident warps per SM.
pub const MIN_WARPS: [usize; 3] = [0, 16, 24];

impl BpLaunch {
    /// The launch without tuning: 2D slices, enough elements to fill 256 threads.
    pub fn default_for(problem: Problem, degree: usize) -> Self {
        Self { threads_3d: false, elements_per_block: default_elements_per_block(kernel_for(problem, degree, false), degree), min_warps: 0 }
    }
}

/// The signature of a BP application.
pub fn signature(problem: Problem, degree: usize, elements: usize, assembled: bool) -> String {
    let on = if assembled { "assembled" } else { "elements" };
    format!("bp/{}/n{degree}/f64/elements={}/{on}", problem.name(), pow2_bucket(elements))
}

/// The launch of a BP application: the user's, else the tuning file's,
/// else the default. A user who names the variant, the block shape or the
/// register budget takes the launch out of the tuner's hands.
#[allow(clippy::too_many_arguments)]
pub fn resolve(problem: Problem, degree: usize, elements: usize, assembled: bool, threads_3d: bool, elements_per_block: Option<usize>, min_warps: Option<usize>, tuning: &Tuning) -> BpLaunch {
    if threads_3d || elements_per_block.is_some() || min_warps.is_some() {
        let default = default_elements_per_block(kernel_for(problem, degree, threads_3d), degree);
        return BpLaunch { threads_3d, elements_per_block: elements_per_block.unwrap_or(default), min_warps: min_warps.unwrap_or(0) };
    }
    tuning.get(&signature(problem, degree, elements, assembled)).unwrap_or_else(|| BpLaunch::default_for(problem, degree))
}

/// Every launch worth trying: 1, 2, 3, 4, 6, 8, ... elements per block
/// (up to 1024 threads) for each variant the problem has, each with every
/// register budget of [`MIN_WARPS`].
pub fn candidates(problem: Problem, degree: usize) -> Vec<BpLaunch> {
    let variants: &[bool] = if problem == Problem::Bp35 && degree <= MAX_DEGREE_3D { &[false, true] } else { &[false] };
    let mut out = Vec::new();
    for &threads_3d in variants {
        let k = kernel_for(problem, degree, threads_3d);
        let per = k.threads(degree + 1, fem_core::tensor::gl_points(degree));
        let mut epb = 1;
        while epb * per <= 1024 {
            out.extend(MIN_WARPS.iter().map(|&min_warps| BpLaunch { threads_3d, elements_per_block: epb, min_warps }));
            epb = if epb < 4 { epb + 1 } else { epb + epb / 2 };
        }
    }
    out
}

/// Times every launch of `t`'s operator on E-vectors (or through the
/// element map when `assembled`) and leaves `t` on the fastest.
pub fn tune(gpu: &CudaBackend, t: &mut GpuTensor, assembled: bool, repeats: usize, so: &SearchOptions, progress: impl FnMut(usize, usize, &BpLaunch)) -> Result<Outcome<BpLaunch>> {
    let op = t.op;
    let n = if assembled { op.restriction.nodes() } else { op.element_dofs() };
    let x = gpu.upload(&crate::sparse::bench::test_vector::<f64>(n, 7))?;
    let mut y: CudaSlice<f64> = gpu.zeros(n)?;
    let cands: Vec<Candidate<BpLaunch>> = candidates(op.problem, op.degree).into_iter().map(|params| Candidate { params, predicted: None }).collect();
    let default = BpLaunch::default_for(op.problem, op.degree);
    let outcome = search(
        default,
        &cands,
        so,
        |l| {
            t.set_launch(l.threads_3d, l.elements_per_block, l.min_warps)?;
            let apply = |y: &mut CudaSlice<f64>| if assembled { crate::operator::LinearOperator::apply(&*t, gpu, &x, y) } else { t.apply_elements(&x, y) };
            Ok(measure(gpu, 2, repeats, || apply(&mut y))?.median)
        },
        progress,
    )?;
    t.set_launch(outcome.best.threads_3d, outcome.best.elements_per_block, outcome.best.min_warps)?;
    Ok(outcome)
}
