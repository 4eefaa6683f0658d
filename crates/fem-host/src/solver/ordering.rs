//! Orderings of the degrees of freedom on every multigrid level (Turek et
//! al., as used by Geveler et al. §4): two-level (2LV: the DOFs a level
//! inherits from the coarser one first), hierarchical (Hie: 2LV applied
//! recursively, so the coarsest DOFs lead on every level), Cuthill–McKee
//! (CM, on the matrix graph), coordinate-based (XYZ: sorted by z, y, x),
//! and pseudo-random (Stoch). Each gives `perm[new] = old` per level.

use crate::operator::csr::Csr;
use crate::rng::SplitMix64;
use crate::counters::{atomic, filled};
use crate::Scalar;
use rayon::prelude::*;
use std::sync::atomic::Ordering::Relaxed;
use serde::Serialize;
use std::collections::VecDeque;

/// How the rows of every multigrid level are renumbered (parsed from
/// `original`, `2lv`, `hie`, `cm`, `xyz` or `stoch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ordering {
    /// The numbering the spaces produce (cells in mesh order).
    Original,
    /// 2LV: rows inherited from the next coarser level first, in that level's
    /// original order, then the new rows.
    TwoLevel,
    /// Hie: rows inherited from the coarser level first, in that level's
    /// (recursively) hierarchical order, so the coarsest rows lead.
    Hierarchical,
    /// CM: Cuthill–McKee on the matrix graph of each level.
    #[serde(rename = "cuthill-mckee")]
    CuthillMcKee,
    /// XYZ: rows sorted by the z, then y, then x coordinate of their node.
    Xyz,
    /// Stoch: a pseudo-random permutation per level, from a seed.
    Random,
}

impl std::str::FromStr for Ordering {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "original" => Ok(Self::Original),
            "2lv" | "two-level" => Ok(Self::TwoLevel),
            "hie" | "hierarchical" => Ok(Self::Hierarchical),
            "cm" | "cuthill-mckee" => Ok(Self::CuthillMcKee),
            "xyz" => Ok(Self::Xyz),
            "stoch" | "random" => Ok(Self::Random),
            _ => Err(format!("unknown ordering `{s}` (original, 2lv, hie, cm, xyz, stoch)")),
        }
    }
}

/// The coarse row a fine row coincides with: a prolongation row whose
/// only entry is one.
fn inherited<T: Scalar>(p: &Csr<T>, row: usize) -> Option<u32> {
    let (lo, hi) = (p.row_ptr[row] as usize, p.row_ptr[row + 1] as usize);
    (hi == lo + 1 && (p.val[lo].to_f64() - 1.0).abs() < 1e-12).then(|| p.col[lo])
}

/// Inherited rows in the order of their coarse rows (`coarse_rank[c]` =
/// position of coarse row `c`), then the new rows in their own order.
fn inherit_first<T: Scalar>(p: &Csr<T>, coarse_rank: &[u32]) -> Vec<u32> {
    let mut old: Vec<(u32, u32)> = Vec::new();
    let mut new = Vec::new();
    for r in 0..p.n_rows {
        match inherited(p, r) {
            Some(c) => old.push((coarse_rank[c as usize], r as u32)),
            None => new.push(r as u32),
        }
    }
    old.sort_unstable();
    old.into_iter().map(|(_, r)| r).chain(new).collect()
}

/// Cuthill–McKee from a row of least degree in each component, neighbours
/// by increasing degree.
pub fn cuthill_mckee<T: Scalar>(a: &Csr<T>) -> Vec<u32> {
    let n = a.n_rows;
    let degree = |r: usize| (a.row_ptr[r + 1] - a.row_ptr[r]) as usize;
    let mut seen = vec![false; n];
    let mut by_degree: Vec<u32> = (0..n as u32).collect();
    by_degree.sort_by_key(|&r| degree(r as usize));
    let mut out = Vec::with_capacity(n);
    let mut queue = VecDeque::new();
    for &start in &by_degree {
        if seen[start as usize] {
            continue;
        }
        seen[start as usize] = true;
        queue.push_back(start);
        while let Some(r) = queue.pop_front() {
            out.push(r);
            let mut next: Vec<u32> = a.col[a.row_ptr[r as usize] as usize..a.row_ptr[r as usize + 1] as usize].iter().copied().filter(|&c| !seen[c as usize]).collect();
            next.sort_by_key(|&c| degree(c as usize));
            for c in next {
                seen[c as usize] = true;
                queue.push_back(c);
            }
        }
    }
    out
}

/// Rows sorted by (z, y, x) of their positions.
fn xyz(coords: &[[f64; 3]]) -> Vec<u32> {
    // the keys beside their rows (no lookup per comparison), as integers
    // in the order of the values (compared as integers, the tuples sort
    // in half the time of three float comparisons), sorted in parallel;
    // the row breaks ties as a stable sort would
    let mut keyed: Vec<([u64; 3], u32)> = coords.par_iter().enumerate().map(|(r, x)| ([ordered(x[2]), ordered(x[1]), ordered(x[0])], r as u32)).collect();
    keyed.par_sort_unstable();
    keyed.into_par_iter().map(|(_, r)| r).collect()
}

/// `x` as an integer of the same order among finite values: the sign bit
/// flipped for positive values, every bit for negative ones; + 0.0 turns
/// −0 into +0, which compare equal.
fn ordered(x: f64) -> u64 {
    let b = (x + 0.0).to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

/// `inv[p[k]] = k`, of a permutation `p`.
pub fn invert(p: &[u32]) -> Vec<u32> {
    inverse(p).expect("a permutation")
}

/// `inv[p[k]] = k` in parallel; `None` unless `p` is a permutation of
/// `0..p.len()` (every entry in range, none twice).
pub fn inverse(p: &[u32]) -> Option<Vec<u32>> {
    let n = p.len();
    let mut inv = filled(n, u32::MAX);
    let at = atomic(&mut inv);
    let bijective = p.par_iter().enumerate().all(|(k, &o)| (o as usize) < n && at[o as usize].swap(k as u32, Relaxed) == u32::MAX);
    bijective.then_some(inv)
}

/// `perm[new] = old` for every level of a hierarchy, coarsest first:
/// `a[l]`, level `l`'s matrix (or its graph), `p[l]` the prolongation from
/// level `l` to `l + 1`, `coords[l]` the positions of level `l`'s rows.
/// Every ordering reads the levels' sizes (`a[l].n_rows`); only
/// Cuthill–McKee reads `a`'s entries, only 2LV and Hie read `p`, only XYZ
/// reads `coords`.
pub fn permutations<T: Scalar>(a: &[Csr<T>], p: &[Csr<T>], coords: &[&[[f64; 3]]], ordering: Ordering, seed: u64) -> Vec<Vec<u32>> {
    let levels = a.len();
    let identity = |n: usize| (0..n as u32).collect::<Vec<u32>>();
    match ordering {
        Ordering::Original => a.iter().map(|a| identity(a.n_rows)).collect(),
        Ordering::CuthillMcKee => a.iter().map(cuthill_mckee).collect(),
        Ordering::Xyz => coords.iter().map(|c| xyz(c)).collect(),
        Ordering::Random => {
            let mut rng = SplitMix64::new(seed);
            a.iter().map(|a| rng.permutation(a.n_rows)).collect()
        }
        Ordering::TwoLevel => {
            let mut out = vec![identity(a[0].n_rows)];
            for l in 1..levels {
                out.push(inherit_first(&p[l - 1], &identity(a[l - 1].n_rows)));
            }
            out
        }
        Ordering::Hierarchical => {
            let mut out = vec![identity(a[0].n_rows)];
            for l in 1..levels {
                let rank = invert(&out[l - 1]);
                out.push(inherit_first(&p[l - 1], &rank));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// XYZ is the stable sort by (z, y, x): ties keep their rows' order,
    /// −0 ties with +0, and values of either sign and any magnitude keep
    /// their order.
    #[test]
    fn xyz_is_the_stable_sort_by_z_y_x() {
        let mut rng = SplitMix64::new(3);
        let pick = [-1e300, -2.5, -1.0, -1e-300, -0.0, 0.0, 1e-300, 0.5, 2.0, 1e300];
        let coords: Vec<[f64; 3]> = (0..5000).map(|_| std::array::from_fn(|_| pick[rng.next_u64() as usize % pick.len()])).collect();
        // every axis varying; z fixed (a 2D mesh, z of either sign of
        // zero); z and y fixed; every row at one point; one row; none
        let flat = |fixed: usize| -> Vec<[f64; 3]> { coords.iter().enumerate().map(|(r, x)| std::array::from_fn(|a| if a >= 3 - fixed { [0.0, -0.0][r % 2] } else { x[a] })).collect() };
        for coords in [coords.clone(), flat(1), flat(2), flat(3), coords[..1].to_vec(), Vec::new()] {
            let mut want: Vec<u32> = (0..coords.len() as u32).collect();
            want.sort_by(|&a, &b| {
                let (x, y) = (coords[a as usize], coords[b as usize]);
                [x[2], x[1], x[0]].partial_cmp(&[y[2], y[1], y[0]]).unwrap()
            });
            assert_eq!(xyz(&coords), want);
        }
    }

    #[test]
    fn inverse_takes_permutations_only() {
        assert_eq!(inverse(&[2, 0, 1]), Some(vec![1, 2, 0]));
        assert_eq!(inverse(&[]), Some(vec![]));
        assert_eq!(inverse(&[0, 0, 1]), None, "a repeated entry");
        assert_eq!(inverse(&[0, 3, 1]), None, "an entry out of range");
    }
}
