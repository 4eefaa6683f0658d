//! Per-item functions of algebraic multigrid's set-up, one source for the
//! CPU and the GPU: validation of the operator, strength of connection,
//! the distance-2 maximal independent set whose nodes seed the aggregates
//! (Bell, Dalton & Olson 2012, the parallel aggregation of Cusp and AmgX),
//! the aggregates grown from it, and the rows of the Jacobi step that
//! smooths the tentative prolongator; the node graph of a vector field
//! ([`nodes`]) and the fit of the near-nullspace on an aggregate
//! ([`fit`]).
//!
//! A graph is given as CSR arrays with an optional mask: node `i`'s
//! neighbours are the `col[k]`, `k` in `lo..hi`, whose `strong[k]` is not
//! zero (every one where `strong` is null). The GPU masks the operator's
//! own pattern, the CPU passes its compacted strength graph.

use fem_core::Real;

pub mod fit;
pub mod nodes;

/// State of a node that is out of the set (a neighbour within distance 2
/// is in it, or it has no neighbour at all).
pub const OUT: u64 = 0;
/// State of a node not yet decided.
pub const UNDECIDED: u64 = 1;
/// State of a node in the set: the root of an aggregate.
pub const IN: u64 = 2;

/// The aggregate of a node that joins none (no strong neighbour).
pub const NONE: u32 = u32::MAX;

/// Bits of [`row_defect`].
pub const NOT_FINITE: u32 = 1;
/// The row's diagonal is missing or not positive.
pub const DIAGONAL: u32 = 2;
/// An entry differs from its mirror across the diagonal.
pub const ASYMMETRIC: u32 = 4;
/// A column index is out of range.
pub const OUT_OF_RANGE: u32 = 8;

/// A 32-bit integer hash (Wellons' `lowbias32`): the pseudo-random
/// priority of a node, the same on every backend and every run.
#[inline(always)]
pub fn hash(i: u32) -> u32 {
    let mut x = i;
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// A value in `[-0.5, 0.5)` from [`hash`]: the start of the power
/// iterations that estimate ρ(D⁻¹A).
#[inline(always)]
pub fn hash_unit(i: u32) -> f64 {
    hash(i) as f64 / 4_294_967_296.0 - 0.5
}

/// The key a node competes with: its state first (a node in the set beats
/// any other), then its priority, then its index (no ties).
#[inline(always)]
pub fn key(state: u64, i: u32) -> u64 {
    (state << 62) | ((hash(i) as u64 & 0x3fff_ffff) << 32) | i as u64
}

/// The state a key carries.
#[inline(always)]
pub fn state_of(key: u64) -> u64 {
    key >> 62
}

/// Whether the off-diagonal coupling `a_ij` is strong (Vaněk, Mandel &
/// Brezina's `|a_ij| ≥ θ √(|a_ii a_jj|)`); a zero, which a pattern keeps
/// for rows held fixed, never is. For a vector field the arguments are the
/// norms of the node blocks.
#[inline(always)]
pub fn strong(a_ij: f64, a_ii: f64, a_jj: f64, theta: f64) -> bool {
    a_ij != 0.0 && Real::abs(a_ij) >= theta * Real::sqrt(Real::abs(a_ii) * Real::abs(a_jj))
}

/// Whether `k` is a neighbour's entry of the masked graph.
#[inline(always)]
unsafe fn is_edge(strong: *const u8, k: usize) -> bool {
    strong.is_null() || *strong.add(k) != 0
}

/// Node `i`'s key before the first round: undecided, or out of the set
/// when it has no neighbour.
///
/// # Safety
/// `col[lo..hi]` (and `strong[lo..hi]` when not null) must be readable.
#[inline(always)]
pub unsafe fn initial_key(i: usize, lo: usize, hi: usize, col: *const u32, strong: *const u8) -> u64 {
    let connected = (lo..hi).any(|k| is_edge(strong, k) && *col.add(k) as usize != i);
    key(if connected { UNDECIDED } else { OUT }, i as u32)
}

/// The largest `x` over node `i` and its neighbours: applied twice, the
/// largest key within distance 2.
///
/// # Safety
/// As [`initial_key`], and `x` readable at `i` and every neighbour.
#[inline(always)]
pub unsafe fn neighbourhood_max(i: usize, lo: usize, hi: usize, col: *const u32, strong: *const u8, x: *const u64) -> u64 {
    let mut m = *x.add(i);
    for k in lo..hi {
        if is_edge(strong, k) {
            let v = *x.add(*col.add(k) as usize);
            if v > m {
                m = v;
            }
        }
    }
    m
}

/// A node's key after a round, from its own and the largest within
/// distance 2: it joins the set where it is that largest, leaves where
/// the largest is in the set, and otherwise waits. Every round decides at
/// least the undecided node of largest key, and two nodes of the set are
/// never within distance 2.
#[inline(always)]
pub fn mis_update(own: u64, max2: u64) -> u64 {
    if state_of(own) != UNDECIDED {
        own
    } else if max2 == own {
        key(IN, own as u32)
    } else if state_of(max2) == IN {
        key(OUT, own as u32)
    } else {
        own
    }
}

/// Node `i`'s aggregate where it is a root or a root's neighbour (at most
/// one root is: roots are 3 apart), else [`NONE`]; `id[r]` numbers the
/// roots.
///
/// # Safety
/// As [`neighbourhood_max`], with `id` readable where `keys` is.
#[inline(always)]
pub unsafe fn root_aggregate(i: usize, lo: usize, hi: usize, col: *const u32, strong: *const u8, keys: *const u64, id: *const u32) -> u32 {
    if state_of(*keys.add(i)) == IN {
        return *id.add(i);
    }
    for k in lo..hi {
        let j = *col.add(k) as usize;
        if is_edge(strong, k) && state_of(*keys.add(j)) == IN {
            return *id.add(j);
        }
    }
    NONE
}

/// Node `i`'s aggregate: its own from [`root_aggregate`] (`first`), else
/// that of the neighbour of highest priority that has one. Every node of
/// a neighbour is within distance 2 of a root, so only nodes without
/// neighbours stay [`NONE`].
///
/// # Safety
/// As [`neighbourhood_max`], with `first` readable where `x` is.
#[inline(always)]
pub unsafe fn join_aggregate(i: usize, lo: usize, hi: usize, col: *const u32, strong: *const u8, first: *const u32) -> u32 {
    let own = *first.add(i);
    if own != NONE {
        return own;
    }
    let (mut best, mut agg) = (0u64, NONE);
    for k in lo..hi {
        let j = *col.add(k);
        let a = *first.add(j as usize);
        if is_edge(strong, k) && a != NONE {
            let p = (((hash(j) as u64) << 32) | j as u64) + 1;
            if p > best {
                (best, agg) = (p, a);
            }
        }
    }
    agg
}


/// The entry `(r, c)` of a CSR matrix whose rows are sorted, by binary
/// search (zero where it is not stored).
///
/// # Safety
/// `row_ptr[r..=r + 1]` and the row's `col` and `val` readable.
#[inline(always)]
pub unsafe fn entry(r: usize, c: u32, row_ptr: *const u32, col: *const u32, val: *const f64) -> f64 {
    let (mut lo, mut hi) = (*row_ptr.add(r) as usize, *row_ptr.add(r + 1) as usize);
    while lo < hi {
        let mid = (lo + hi) / 2;
        let m = *col.add(mid);
        if m == c {
            return *val.add(mid);
        }
        if m < c {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    0.0
}

/// What smoothed aggregation cannot take in row `r` of an `n`-row operator
/// with sorted rows and diagonal `diag`, as bits: a value that is not
/// finite, a diagonal that is not positive, a column out of range, an
/// entry that differs from its mirror by more than `1e-10 √(a_rr a_cc)`.
///
/// # Safety
/// The CSR arrays readable, `diag` of length `n`.
#[inline(always)]
pub unsafe fn row_defect(r: usize, n: usize, row_ptr: *const u32, col: *const u32, val: *const f64, diag: *const f64) -> u32 {
    let (lo, hi) = (*row_ptr.add(r) as usize, *row_ptr.add(r + 1) as usize);
    let d = *diag.add(r);
    let mut bits = if d > 0.0 { 0 } else { DIAGONAL };
    for k in lo..hi {
        let (c, v) = (*col.add(k), *val.add(k));
        if !v.is_finite() {
            bits |= NOT_FINITE;
        } else if c as usize >= n {
            bits |= OUT_OF_RANGE;
        } else if d > 0.0 && *diag.add(c as usize) > 0.0 {
            let tol = 1e-10 * Real::sqrt(d * *diag.add(c as usize));
            if Real::abs(v - entry(c as usize, r as u32, row_ptr, col, val)) > tol {
                bits |= ASYMMETRIC;
            }
        }
    }
    bits
}

/// Row `r` of `I − s D⁻¹A` on `A`'s pattern: the Jacobi step that smooths
/// the tentative prolongator (`s = ω / ρ(D⁻¹A)`).
///
/// # Safety
/// The row's `col` and `val` readable and `out` writable.
#[inline(always)]
pub unsafe fn jacobi_step_row(r: usize, row_ptr: *const u32, col: *const u32, val: *const f64, d: f64, s: f64, out: *mut f64) {
    for k in *row_ptr.add(r) as usize..*row_ptr.add(r + 1) as usize {
        let identity = if *col.add(k) as usize == r { 1.0 } else { 0.0 };
        *out.add(k) = identity - s * *val.add(k) / d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_by_state_then_priority() {
        assert!(key(IN, 0) > key(UNDECIDED, 7));
        assert!(key(UNDECIDED, 0) > key(OUT, 7));
        assert_eq!(state_of(key(IN, 5)), IN);
        assert_eq!(key(UNDECIDED, 9) as u32, 9);
        assert_ne!(hash(1), hash(2));
        assert!((-0.5..0.5).contains(&hash_unit(12345)));
    }

    #[test]
    fn a_node_joins_only_as_the_largest_within_distance_two() {
        let own = key(UNDECIDED, 3);
        assert_eq!(state_of(mis_update(own, own)), IN);
        assert_eq!(state_of(mis_update(own, key(IN, 4))), OUT);
        assert_eq!(mis_update(own, key(UNDECIDED, 4).max(own + 1)), own);
        assert_eq!(mis_update(key(OUT, 3), key(OUT, 3)), key(OUT, 3));
    }

    #[test]
    fn strength_ignores_zeros_and_weak_couplings() {
        assert!(!strong(0.0, 1.0, 1.0, 0.0));
        assert!(strong(-0.1, 1.0, 1.0, 0.0));
        assert!(!strong(-0.1, 1.0, 1.0, 0.2));
        assert!(strong(-0.3, 1.0, 1.0, 0.2));
    }

    #[test]
    fn defects_are_found() {
        // [[2, -1], [-1.5, 2]]: asymmetric; then a NaN, a zero diagonal
        let (rp, col) = ([0u32, 2, 4], [0u32, 1, 0, 1]);
        let diag = [2.0, 2.0];
        let check = |val: [f64; 4], diag: [f64; 2]| unsafe { row_defect(0, 2, rp.as_ptr(), col.as_ptr(), val.as_ptr(), diag.as_ptr()) };
        assert_eq!(check([2.0, -1.0, -1.0, 2.0], diag), 0);
        assert_eq!(check([2.0, -1.0, -1.5, 2.0], diag), ASYMMETRIC);
        assert_eq!(check([2.0, f64::NAN, -1.0, 2.0], diag), NOT_FINITE);
        assert_eq!(check([0.0, -1.0, -1.0, 2.0], [0.0, 2.0]), DIAGONAL);
        unsafe { assert_eq!(entry(1, 0, rp.as_ptr(), col.as_ptr(), [2.0, -1.0, -1.5, 2.0].as_ptr()), -1.5) };
    }
}
