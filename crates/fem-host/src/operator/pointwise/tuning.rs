//! Blocks per batch and batches per chunk (the paper's Table 2) under the
//! tuner: every pair whose block fits the device is timed, and the
//! fastest is kept per physics, variant, precision and mesh size.

use super::{GpuPointwise, Transposition};
use crate::timing::measure;
use crate::tune::{pow2_bucket, search, Candidate, Outcome, SearchOptions, Tuning};
use crate::{Backend, CudaBackend, Result, Scalar};
use fem_kernels::pointwise::Variant;

/// Batches per chunk the search tries.
const BATCHES: [usize; 5] = [1, 2, 4, 8, 16];

/// The signature of a residual evaluation.
pub fn signature(physics: &str, v: &Variant, precision: &str, cells: usize) -> String {
    format!("residual/{physics}/{}/p{}/q{}/{precision}/cells={}", v.shape.name(), v.degree, v.nq, pow2_bucket(cells))
}

/// The user's parameters where given, else the tuning file's, else the
/// default; a user who names either axis takes both out of the tuner's hands.
pub fn resolve(physics: &str, v: &Variant, precision: &str, cells: usize, blocks: Option<usize>, batches: Option<usize>, tuning: &Tuning) -> Transposition {
    let default = Transposition::default_for(v);
    if blocks.is_some() || batches.is_some() {
        return Transposition { blocks: blocks.unwrap_or(default.blocks), batches: batches.unwrap_or(default.batches) };
    }
    tuning.get(&signature(physics, v, precision, cells)).unwrap_or(default)
}

/// Blocks per batch 1, 2, 4, … up to 1024 threads, times `BATCHES`.
pub fn candidates(v: &Variant) -> Vec<Transposition> {
    let mut out = Vec::new();
    let mut blocks = 1;
    while blocks * v.block <= 1024 {
        out.extend(BATCHES.iter().map(|&batches| Transposition { blocks, batches }));
        blocks *= 2;
    }
    let default = Transposition::default_for(v);
    if !out.contains(&default) && default.threads(v) <= 1024 {
        out.push(default);
    }
    out
}

/// Times every candidate on the residual of `u` (an E-vector on the
/// device) and returns the outcome; settings the device refuses (shared
/// memory) are recorded as failed and skipped.
pub fn tune<T: Scalar>(
    gpu: &CudaBackend,
    dev: &GpuPointwise<T>,
    u: &cudarc::driver::CudaSlice<T>,
    repeats: usize,
    progress: impl FnMut(usize, usize, &Transposition),
) -> Result<Outcome<Transposition>> {
    let v = dev.variant;
    let mut out = gpu.zeros::<T>(dev.out_len(false))?;
    let cands: Vec<Candidate<Transposition>> = candidates(&v).into_iter().map(|params| Candidate { params, predicted: None }).collect();
    search(
        Transposition::default_for(&v),
        &cands,
        &SearchOptions { prune: f64::INFINITY },
        |t| Ok(measure(gpu, 2, repeats, || dev.evaluate(gpu, false, *t, u, &mut out))?.median),
        progress,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::Tuning;
    use fem_kernels::physics::Poisson;
    use fem_kernels::pointwise::Kernels;

    /// The residual's default launch of every shipped variant fits the
    /// 227 KB of shared memory a block may have on an H100/H200, but for
    /// cells of 49 or more unknowns: scalar Q6 quadrilaterals, whose
    /// launch shrinks to fewer cells a block, and cells of 64 or more
    /// (scalar Q7 quadrilaterals, scalar Q3 and vector Q2 hexahedra),
    /// which no launch fits and which run one thread per cell; only chunks
    /// of several batches pay for the second input buffer.
    #[test]
    fn default_launches_fit_and_only_multi_batch_chunks_double_the_inputs() {
        use fem_kernels::physics::Elasticity;
        use fem_kernels::pointwise::{pad, row_len, shared_len};
        let variants = <Poisson as Kernels<f64>>::VARIANTS.iter().chain(<Elasticity as Kernels<f64>>::VARIANTS);
        for v in variants {
            let t = Transposition::default_for(v);
            let cells = t.threads(v);
            assert_eq!(t.batches, 1);
            if 8 * shared_len(v, cells, false, t.batches) > 232_448 {
                assert!(v.n_local() >= 49, "{v:?}");
                assert_eq!(Transposition::fitting(v, false, 8, 232_448).is_err(), v.n_local() >= 64, "{v:?}");
            }
            let (d, nv) = (v.dim(), v.shape.vertices());
            // each region rounded up to 4 values (16 bytes of f32)
            let inputs = pad(cells * v.n_local()) + pad(cells * nv * d) + pad(cells * v.aux_per_cell());
            let one = pad(v.nq * row_len(d, v.n_basis(), nv)) + pad(cells * v.nq * v.nc * (1 + d)) + inputs;
            assert!(one >= v.nq * row_len(d, v.n_basis(), nv) + cells * (v.nq * v.nc * (1 + d) + v.n_local() + nv * d + v.aux_per_cell()));
            assert_eq!(shared_len(v, cells, false, 1), one, "{v:?}");
            assert_eq!(shared_len(v, cells, false, 2), one + inputs, "{v:?}");
            assert_eq!(shared_len(v, cells, false, 16), one + inputs, "{v:?}");
        }
    }

    #[test]
    fn explicit_settings_beat_the_file_which_beats_the_default() {
        let v = <Poisson as Kernels<f64>>::VARIANTS[0];
        let dir = std::env::temp_dir().join(format!("fem-residual-tuning-{}", std::process::id()));
        let mut tuning = Tuning::at(Some(dir.join("t.json")), "test-gpu");
        let default = Transposition::default_for(&v);
        assert_eq!(resolve("poisson", &v, "f64", 1000, None, None, &tuning), default);
        let stored = Transposition { blocks: 8, batches: 2 };
        let outcome = Outcome { best: stored, seconds: 1.0, default, default_seconds: 2.0, timed: Vec::new(), pruned: 0 };
        tuning.record(&signature("poisson", &v, "f64", 1000), &outcome);
        assert_eq!(resolve("poisson", &v, "f64", 1000, None, None, &tuning), stored);
        // another mesh size bucket or precision does not see it
        assert_eq!(resolve("poisson", &v, "f32", 1000, None, None, &tuning), default);
        assert_eq!(resolve("poisson", &v, "f64", 100_000, None, None, &tuning), default);
        assert_eq!(resolve("poisson", &v, "f64", 1000, Some(3), None, &tuning), Transposition { blocks: 3, batches: default.batches });
        // every candidate fits 1024 threads and the grid covers Table 2's axes
        let c = candidates(&v);
        assert!(c.iter().all(|t| t.threads(&v) <= 1024));
        assert!(c.contains(&Transposition { blocks: 16, batches: 8 }) && c.contains(&default));
    }
}
