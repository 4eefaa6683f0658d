//! The operator's diagonal without forming any matrix: each term of
//! `Σ_q G_ab(q) ∂_aφ_n(q) ∂_bφ_n(q)` is a tensor product of 1D factors,
//! so the diagonal of every element is seven sum-factorised contractions
//! of the geometric factors with element-wise products of the 1D value
//! and derivative matrices.

use super::basis::{contract3, identity, transpose};
use super::cpu::CpuTables;
use super::geometry::Points;
use super::Problem;
use fem_core::tensor::{G00, G01, G02, G11, G12, G22, GWJ, NGEO};
use rayon::prelude::*;

/// Element diagonals, as an E-vector.
pub fn element_diagonals(problem: Problem, t: &CpuTables, factors: &[f64], lambda: f64, elements: usize) -> Vec<f64> {
    let b = &t.basis;
    let nq = b.nq;
    let np = nq * nq * nq;
    let q = problem.points().per_direction(b);
    let p = q * q * q;
    let eye = identity(nq);
    let (value, deriv): (&[f64], &[f64]) = match problem.points() {
        Points::Gll => (&eye, &b.diff),
        Points::Gl => (&b.interp, &b.interp_diff),
    };
    // transposes (nq × q) of the element-wise products
    let prod = |x: &[f64], y: &[f64]| transpose(&x.iter().zip(y).map(|(a, b)| a * b).collect::<Vec<_>>(), q, nq);
    let (aa, ab, bb) = (prod(value, value), prod(value, deriv), prod(deriv, deriv));
    // (factor, weight, matrices along x, y, z)
    let terms: Vec<(usize, f64, [&[f64]; 3])> = match problem {
        Problem::Bp1 => vec![(GWJ, 1.0, [&aa, &aa, &aa])],
        _ => vec![
            (G00, 1.0, [&bb, &aa, &aa]),
            (G11, 1.0, [&aa, &bb, &aa]),
            (G22, 1.0, [&aa, &aa, &bb]),
            (G01, 2.0, [&ab, &ab, &aa]),
            (G02, 2.0, [&ab, &aa, &ab]),
            (G12, 2.0, [&aa, &ab, &ab]),
            (GWJ, lambda, [&aa, &aa, &aa]),
        ],
    };
    let mut diag = vec![0.0; elements * np];
    diag.par_chunks_mut(np).enumerate().for_each_init(
        || (Vec::new(), vec![0.0; np]),
        |(scratch, tmp), (e, out)| {
            let g = &factors[e * NGEO * p..][..NGEO * p];
            for (f, weight, m) in &terms {
                contract3((m[0], nq), (m[1], nq), (m[2], nq), [q; 3], &g[f * p..][..p], tmp, scratch);
                out.iter_mut().zip(tmp.iter()).for_each(|(o, v)| *o += weight * v);
            }
        },
    );
    diag
}
