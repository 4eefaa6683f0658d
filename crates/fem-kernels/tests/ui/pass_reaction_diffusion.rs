use fem_kernels::fem_kernel;
use fem_kernels::pointwise::Kernels;

#[fem_kernel(components = 1, elements(tri(p = 1, q = 3), hex(p = 2, q = 27)), precision(f64))]
pub mod reaction_diffusion {
    use fem_kernels::fem_core::Real;

    /// u³ + t: the time as the last argument.
    pub fn f0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D], t: T) -> [T; 1] {
        [u[0] * u[0] * u[0] + t]
    }

    pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[T; D]; 1] {
        [du[0]]
    }
}

fn main() {
    use reaction_diffusion::ReactionDiffusion as P;
    let v = <P as Kernels<f64>>::VARIANTS;
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].residual, "fem_residual_reaction_diffusion_tri_p1_q3");
    assert_eq!(v[1].n_local(), 27);
    assert!(v[0].jacobian.is_none());
    // One cell, the reference triangle: u = 1 everywhere at t = 0.5 gives
    // ∫ φ_b · 1.5 = 1.5/6.
    let tab_len = 3 * (1 + (3 + 3) * 3);
    let mut tab = vec![0.0; tab_len];
    let (mut pts, mut w) = ([0.0; 6], [0.0; 3]);
    assert!(v[0].shape.rule(3, &mut pts, &mut w));
    for q in 0..3 {
        let row = &mut tab[q * 19..(q + 1) * 19];
        row[0] = w[q];
        let (mut val, mut grad) = ([0.0; 3], [0.0; 6]);
        v[0].shape.basis(1, &pts[2 * q..2 * q + 2], &mut val, &mut grad);
        for b in 0..3 {
            for (off, _) in [(1, 0), (10, 0)] {
                row[off + 3 * b] = val[b];
                row[off + 3 * b + 1] = grad[2 * b];
                row[off + 3 * b + 2] = grad[2 * b + 1];
            }
        }
    }
    let (u, x) = ([1.0; 3], [0.0, 0.0, 1.0, 0.0, 0.0, 1.0]);
    let mut out = [0.0; 3];
    assert!(<P as Kernels<f64>>::residual_cells(&v[0], &tab, 0, &u, &x, &[], 0.5, &mut out));
    for r in out {
        assert!((r - 1.5 / 6.0f64).abs() < 1e-14, "{r}");
    }
}
