//! The diagonal of a tangent stored by its quadrature points (partial
//! assembly's point data, or the matrix-free tangent's, made for the
//! purpose) on the CPU, by sum factorisation: Jacobi's set-up at every
//! Newton update.
//!
//! Entry (n, c) of a cell is Σ_q Σ_(h,k) G_cc,hk(q) φ_h(q, n) φ_k(q, n),
//! with φ_0 the basis value and φ_a its reference derivative along axis
//! a − 1. Each φ is a product of 1D factors, B or B' per axis, so each
//! block's term is the point data contracted along every axis with one of
//! four 1D matrices, M(n, q) = f(q, n)·g(q, n) for f, g ∈ {B, B'}:
//! O(p⁴) a block and a cell where the entry-by-entry sum
//! ([`fem_kernels::pointwise::partial::diagonal_entry`], which the tests
//! compare with) is O(p⁶), 5.6 s of an elasticity Q8 update on 2 cores.
//! The GPU's `partial_diagonal` runs the same contractions on the product's
//! slabs of threads, from [`DiagonalTables::packed`].

use super::partial::{points_per_cell, Tables1d};
use crate::operator::tensor::basis::contract3;
use crate::{CpuBackend, Result};
use fem_kernels::pointwise::partial::{blocks, present};
use fem_kernels::pointwise::Variant;
use rayon::prelude::*;

/// The four 1D matrices of the diagonal, `nodes × points` each:
/// `[B·B, B·B', B'·B, B'·B']` entry by entry, index 2·(the row's factor is
/// a derivative) + (the column's is).
pub struct DiagonalTables {
    m: [Vec<f64>; 4],
    n1: usize,
    q1: usize,
}

impl DiagonalTables {
    /// The matrices of `t`.
    pub fn new(t: &Tables1d) -> Self {
        let (n1, q1) = (t.n1, t.q1);
        let m = core::array::from_fn(|i| {
            let (f, g) = ([&t.b, &t.bd][i / 2], [&t.b, &t.bd][i % 2]);
            (0..n1 * q1).map(|k| (k / q1, k % q1)).map(|(n, q)| f[q * n1 + n] * g[q * n1 + n]).collect()
        });
        Self { m, n1, q1 }
    }

    /// The four matrices one after another, as the GPU's diagonal takes
    /// them.
    pub fn packed(&self) -> Vec<f64> {
        self.m.concat()
    }

    /// The diagonal of one cell of `v` from its point data `g`
    /// (`[j][q]`), into its E-vector `out`; `work` is reused scratch.
    fn cell(&self, v: &Variant, g: &[f64], out: &mut [f64], work: &mut Work) {
        let (d, nc, (n1, q1)) = (v.dim(), v.nc, (self.n1, self.q1));
        let (nb, nq) = (n1.pow(d as u32), q1.pow(d as u32));
        let nblk = blocks(d, v.terms);
        let dims = [q1, q1, if d == 3 { q1 } else { 1 }];
        work.acc.resize(nb, 0.0);
        work.term.resize(nb, 0.0);
        for c in 0..nc {
            work.acc.fill(0.0);
            let mut b = (c * nc + c) * nblk;
            for h in 0..=d {
                for k in 0..=d {
                    if !present(v.terms, h, k) {
                        continue;
                    }
                    let m = |a: usize| -> (&[f64], usize) {
                        if a >= d {
                            return (&[1.0], 1);
                        }
                        (&self.m[2 * (h == a + 1) as usize + (k == a + 1) as usize], n1)
                    };
                    contract3(m(0), m(1), m(2), dims, &g[b * nq..(b + 1) * nq], &mut work.term, &mut work.scratch);
                    work.acc.iter_mut().zip(&work.term).for_each(|(s, t)| *s += t);
                    b += 1;
                }
            }
            for (n, &s) in work.acc.iter().enumerate() {
                out[n * nc + c] = s;
            }
        }
    }
}

/// Scratch of one thread's cells.
#[derive(Default)]
struct Work {
    acc: Vec<f64>,
    term: Vec<f64>,
    scratch: Vec<f64>,
}

/// The diagonal of every cell's matrix of point data `g` as an E-vector,
/// on the CPU.
pub fn diagonal_cpu(cpu: &CpuBackend, t: &Tables1d, v: &Variant, g: &[f64]) -> Result<Vec<f64>> {
    let (nl, per) = (v.n_local(), points_per_cell(v));
    let mut out = vec![0.0; g.len() / per.max(1) * nl];
    let tables = DiagonalTables::new(t);
    cpu.install(|| out.par_chunks_mut(nl).zip(g.par_chunks(per)).for_each_init(Work::default, |w, (o, gc)| tables.cell(v, gc, o, w)));
    Ok(out)
}

/// The diagonal of each cell's matrix of point data `g` into `out` (an
/// E-vector of those cells), on the calling thread.
pub(crate) fn diagonal_cells(t: &Tables1d, v: &Variant, g: &[f64], out: &mut [f64]) -> Result<()> {
    let (nl, per, tables) = (v.n_local(), points_per_cell(v), DiagonalTables::new(t));
    let mut w = Work::default();
    for (o, gc) in out.chunks_exact_mut(nl).zip(g.chunks_exact(per)) {
        tables.cell(v, gc, o, &mut w);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::pointwise::rel;
    use crate::rng::SplitMix64;
    use fem_core::physics::Terms;
    use fem_core::shape::Shape;
    use fem_kernels::pointwise::partial::diagonal_entry;

    /// A tensor variant of degree `p` with `q1` Gauss points a direction.
    fn variant(shape: Shape, p: usize, q1: usize, nc: usize, g: [bool; 4]) -> Variant {
        let terms = Terms { f0: true, f1: true, g, bf0: false, bg: [false; 2], g_reads_state: true };
        let nq = q1.pow(shape.dim() as u32);
        Variant { shape, degree: p, nq, nc, na: 0, aux_nodal: false, terms, block: 1, residual: "", jacobian: None, precisions: &[], nqf: 0, facet_residual: None, facet_jacobian: None, points: None, sum_factorised: false, matrix_free: false }
    }

    /// The entry-by-entry sum of every (node, component).
    fn by_entries<const D: usize, const NC: usize>(t: &Tables1d, v: &Variant, g: &[f64]) -> Vec<f64> {
        let (nl, per, nq) = (v.n_local(), points_per_cell(v), v.nq);
        g.chunks(per)
            .flat_map(|gc| (0..nl).map(move |i| diagonal_entry::<f64, D, NC>(v.terms, t.n1, t.q1, |q, n| t.b[q * t.n1 + n], |q, n| t.bd[q * t.n1 + n], i / NC, i % NC, |j, q| gc[j * nq + q])))
            .collect()
    }

    /// The sum-factorised diagonal equals the entry-by-entry one on random
    /// point data: quadrilaterals and hexahedra, scalar and vector, every
    /// term or some, as many points a direction as nodes or more, degree 1
    /// and 8.
    #[test]
    fn sum_factorised_diagonal_equals_the_entries() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let mut r = SplitMix64::new(5);
        let masks = [[false, false, false, true], [true; 4], [true, true, false, true], [false, true, true, false]];
        let mut checked = 0;
        for (shape, nc) in [(Shape::Quadrilateral, 1), (Shape::Quadrilateral, 2), (Shape::Hexahedron, 1), (Shape::Hexahedron, 3)] {
            for (p, q1) in [(1, 2), (2, 3), (2, 4), (8, 9)] {
                for g in masks {
                    let v = variant(shape, p, q1, nc, g);
                    let t = Tables1d::new(&v).unwrap();
                    let data: Vec<f64> = (0..3 * points_per_cell(&v)).map(|_| 2.0 * r.next_f64() - 1.0).collect();
                    let got = diagonal_cpu(&cpu, &t, &v, &data).unwrap();
                    let want = match (shape.dim(), nc) {
                        (2, 1) => by_entries::<2, 1>(&t, &v, &data),
                        (2, 2) => by_entries::<2, 2>(&t, &v, &data),
                        (3, 1) => by_entries::<3, 1>(&t, &v, &data),
                        _ => by_entries::<3, 3>(&t, &v, &data),
                    };
                    let err = rel(&got, &want);
                    assert!(err < 1e-13, "{} p = {p}, q1 = {q1}, {nc} components, terms {g:?}: {err:e}", shape.name());
                    let mut each = vec![0.0; got.len()];
                    diagonal_cells(&t, &v, &data, &mut each).unwrap();
                    assert_eq!(each, got);
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 64);
    }
}
