//! The scalars of the conjugate gradient method, kept where its vectors
//! are.
//!
//! CG needs three reductions per iteration, and each one read back to the
//! host stalls the GPU for a round trip: at 10⁴–10⁶ rows that round trip,
//! not the arithmetic, sets the time of an iteration. So the scalars live
//! in a small `f64` array beside the vectors (slots below), every kernel
//! reads them there, and the host looks at them only every few iterations
//! to see whether the solve has stopped. Once stopped, iterations leave
//! the iterate, the residual and the history as they are, so running a
//! few past the stop changes nothing.
//!
//! [`step_length`] and [`advance`] are the single source of that logic:
//! the CPU backend calls them on a host array, the GPU kernels
//! `cg_update` and `cg_advance` on the device array.

use fem_core::Real;

/// `r·z` of the current residual: the numerator of α and the old value in β.
pub const RZ: usize = 0;
/// `p·Ap` of this iteration's direction.
pub const PQ: usize = 1;
/// `r·r` of the updated residual.
pub const RR: usize = 2;
/// `r·z` of the updated residual and preconditioned residual.
pub const RZN: usize = 3;
/// β of the next direction `p ← z + βp`.
pub const BETA: usize = 4;
/// Where the solve stands: [`RUNNING`], [`CONVERGED`], [`LIMIT`],
/// [`INDEFINITE`] or [`DIVERGED`].
pub const STATUS: usize = 5;
/// Iterations done.
pub const COUNT: usize = 6;
/// `‖b‖` (one for a zero `b`): relative residuals divide by it.
pub const SCALE: usize = 7;
/// The relative residual to stop at.
pub const RTOL: usize = 8;
/// The iteration limit.
pub const MAX: usize = 9;
/// Entries of the history array: later iterations are not recorded.
pub const CAPACITY: usize = 10;
/// The relative residual of the last iteration counted (`RR` may hold
/// sums of iterations run past the stop).
pub const RES: usize = 11;
/// Length of the scalar array.
pub const SLOTS: usize = 12;

/// Iterating.
pub const RUNNING: f64 = 0.0;
/// Stopped at the relative residual asked for.
pub const CONVERGED: f64 = 1.0;
/// Stopped at the iteration limit.
pub const LIMIT: f64 = 2.0;
/// Stopped because `p·Ap ≤ 0` (or NaN): the operator or the
/// preconditioner is not positive definite.
pub const INDEFINITE: f64 = 3.0;
/// Stopped because the residual stopped being a number.
pub const DIVERGED: f64 = 4.0;

/// The step α = (r·z)/(p·Ap) of this iteration, or `None` when the
/// iterate must not move: the solve has stopped, or `p·Ap` is not
/// positive (which [`advance`] then reports).
#[inline(always)]
pub fn step_length(status: f64, rz: f64, pq: f64) -> Option<f64> {
    if status == RUNNING && pq > 0.0 {
        Some(rz / pq)
    } else {
        None
    }
}

/// Closes an iteration once `RR`, `RZN` and `PQ` hold its sums: counts
/// it, forms β and shifts `RZ`, and decides whether to stop. Returns the
/// history entry (iteration, relative residual) to record, if any.
#[inline(always)]
pub fn advance(s: &mut [f64; SLOTS]) -> Option<(usize, f64)> {
    if s[STATUS] != RUNNING {
        return None;
    }
    if !(s[PQ] > 0.0) {
        s[STATUS] = INDEFINITE;
        return None;
    }
    let count = s[COUNT] + 1.0;
    s[COUNT] = count;
    let res = Real::sqrt(s[RR]) / s[SCALE];
    s[RES] = res;
    s[BETA] = s[RZN] / s[RZ];
    s[RZ] = s[RZN];
    s[STATUS] = if !res.is_finite() {
        DIVERGED
    } else if res <= s[RTOL] {
        CONVERGED
    } else if count >= s[MAX] {
        LIMIT
    } else {
        RUNNING
    };
    let k = count as usize;
    if k < s[CAPACITY] as usize {
        Some((k, res))
    } else {
        None
    }
}

/// One row of CG's update: `[x + αp, r − αq]`, rounded as
/// [`crate::blas::axpy`] rounds.
#[inline(always)]
pub fn update<T: Real>(alpha: T, p: T, q: T, x: T, r: T) -> [T; 2] {
    [crate::blas::axpy(alpha, p, x), crate::blas::axpy(-alpha, q, r)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(rz: f64, rtol: f64, max: f64) -> [f64; SLOTS] {
        let mut s = [0.0; SLOTS];
        s[RZ] = rz;
        s[SCALE] = 2.0;
        s[RTOL] = rtol;
        s[MAX] = max;
        s[CAPACITY] = 4.0;
        s
    }

    #[test]
    fn an_iteration_counts_shifts_and_stops() {
        let mut s = start(4.0, 0.1, 10.0);
        s[PQ] = 2.0;
        assert_eq!(step_length(s[STATUS], s[RZ], s[PQ]), Some(2.0));
        s[RR] = 1.0;
        s[RZN] = 1.0;
        assert_eq!(advance(&mut s), Some((1, 0.5)));
        assert_eq!((s[BETA], s[RZ], s[STATUS]), (0.25, 1.0, RUNNING));
        s[RR] = 0.01;
        assert_eq!(advance(&mut s), Some((2, 0.05)));
        assert_eq!((s[STATUS], s[RES]), (CONVERGED, 0.05));
        s[RR] = 7.0;
        // stopped: nothing moves and nothing is counted
        assert_eq!(step_length(s[STATUS], s[RZ], s[PQ]), None);
        assert_eq!(advance(&mut s), None);
        assert_eq!((s[COUNT], s[RES]), (2.0, 0.05));
    }

    #[test]
    fn the_limit_the_capacity_and_breakdowns_stop_it() {
        let mut s = start(1.0, 1e-9, 5.0);
        s[PQ] = 1.0;
        s[RR] = 1.0;
        s[RZN] = 1.0;
        let recorded = (0..6).filter_map(|_| advance(&mut s)).count();
        assert_eq!(recorded, 3, "only entries below the capacity are recorded");
        assert_eq!((s[COUNT], s[STATUS]), (5.0, LIMIT));
        let mut s = start(1.0, 1e-9, 5.0);
        s[PQ] = -1.0;
        assert_eq!(step_length(s[STATUS], s[RZ], s[PQ]), None);
        assert_eq!(advance(&mut s), None);
        assert_eq!(s[STATUS], INDEFINITE);
        let mut s = start(1.0, 1e-9, 5.0);
        s[PQ] = 1.0;
        s[RR] = f64::NAN;
        assert!(advance(&mut s).is_some());
        assert_eq!(s[STATUS], DIVERGED);
    }
}
