//! The CPU's element matrices (a contraction per quadrature point, rows and
//! columns of absent terms skipped) against the GPU fallback's entry-by-entry
//! sums, for a physics with every term and with each alone, non-symmetric
//! and with two components.

use super::tabulate;
use crate::mesh::BoxMesh;
use crate::space::Space;
use fem_core::physics::{Physics, Point, Terms};
use fem_core::shape::Shape;
use fem_kernels::pointwise::{cell_jacobian, cell_jacobian_cpu, Variant};

/// A two-component physics whose terms are those set in `MASK` (bit k: gk),
/// each a non-symmetric function of u and x.
struct Mixed<const MASK: u8>;

impl<const D: usize, const MASK: u8> Physics<f64, D, 2, 0> for Mixed<MASK> {
    const TERMS: Terms = Terms { f0: true, f1: true, g: [MASK & 1 != 0, MASK & 2 != 0, MASK & 4 != 0, MASK & 8 != 0], bf0: false, bg: [false, false], g_reads_state: true };
    fn f0(p: &Point<f64, D, 2, 0>) -> [f64; 2] {
        p.u
    }
    fn f1(p: &Point<f64, D, 2, 0>) -> [[f64; D]; 2] {
        p.du
    }
    fn g0(p: &Point<f64, D, 2, 0>) -> [[f64; 2]; 2] {
        std::array::from_fn(|c| std::array::from_fn(|e| 1.0 + p.u[c] * p.x[0] + c as f64 - 2.0 * e as f64))
    }
    fn g1(p: &Point<f64, D, 2, 0>) -> [[[f64; D]; 2]; 2] {
        std::array::from_fn(|c| std::array::from_fn(|e| std::array::from_fn(|g| 0.3 * (c + 1) as f64 - 0.2 * (g * e) as f64 + p.x[g])))
    }
    fn g2(p: &Point<f64, D, 2, 0>) -> [[[f64; D]; 2]; 2] {
        std::array::from_fn(|c| std::array::from_fn(|e| std::array::from_fn(|d| d as f64 - 0.5 + 0.1 * (c * e) as f64 * p.u[e])))
    }
    fn g3(p: &Point<f64, D, 2, 0>) -> [[[[f64; D]; D]; 2]; 2] {
        std::array::from_fn(|c| std::array::from_fn(|e| std::array::from_fn(|d| std::array::from_fn(|g| (d == g) as u8 as f64 * (2 + c) as f64 + 0.25 * (d + 2 * g) as f64 - 0.1 * e as f64 + p.x[0] * p.x[d]))))
    }
}

fn variant(shape: Shape, degree: usize, nq: usize, mask: u8) -> Variant {
    let terms = Terms { f0: true, f1: true, g: [mask & 1 != 0, mask & 2 != 0, mask & 4 != 0, mask & 8 != 0], bf0: false, bg: [false, false], g_reads_state: true };
    Variant { shape, degree, nq, nc: 2, na: 0, aux_nodal: false, terms, block: 1, residual: "", jacobian: None, precisions: &[], nqf: 0, facet_residual: None, facet_jacobian: None, points: None, sum_factorised: false, matrix_free: false }
}

/// Both orders on every cell of a perturbed mesh, u random.
fn check<P: Physics<f64, D, 2, 0>, const D: usize, const NB: usize, const NV: usize, const NQ: usize>(shape: Shape, degree: usize, mask: u8) {
    let space = Space::tensor(&BoxMesh::unstructured(D, 2, 3).build().unwrap(), degree).unwrap();
    let (tab, x) = (tabulate(&variant(shape, degree, NQ, mask)), space.cell_coords());
    let n = NB * 2;
    for c in 0..space.n_cells() {
        let u: Vec<f64> = (0..n).map(|i| ((i * 37 + c * 11) % 17) as f64 / 17.0 - 0.4).collect();
        let xc = &x[c * NV * D..(c + 1) * NV * D];
        let (mut got, mut want) = (vec![0.0; n * n], vec![0.0; n * n]);
        cell_jacobian_cpu::<f64, P, D, 2, 0, NB, NV, NQ, false>(&tab, &u, xc, &[], 0.0, &mut got);
        cell_jacobian::<f64, P, D, 2, 0, NB, NV, NQ, false>(&tab, &u, xc, &[], 0.0, &mut want);
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(scale > 0.0);
        for (k, (a, b)) in got.iter().zip(&want).enumerate() {
            assert!((a - b).abs() <= 1e-13 * scale, "{shape:?} Q{degree}, terms {mask:#06b}, cell {c}, entry {k}: {a} != {b}");
        }
    }
}

#[test]
fn the_cpu_contraction_equals_the_sums_entry_by_entry() {
    macro_rules! each_mask {
        ($($m:literal)*) => {$(
            check::<Mixed<$m>, 2, 9, 4, 16>(Shape::Quadrilateral, 2, $m);
            check::<Mixed<$m>, 3, 8, 8, 8>(Shape::Hexahedron, 1, $m);
        )*};
    }
    each_mask!(1 2 4 8 9 15);
}
