//! Linear elasticity: f1 = σ(ε(u)) = λ tr(ε) I + 2μ ε with ε the symmetric
//! gradient, the Lamé parameters per cell (P0 auxiliary fields `a[0]` = λ,
//! `a[1]` = μ) so materials can change from cell to cell. The Jacobian is
//! `g3[c][e][d][g] = λ δ_cd δ_eg + μ (δ_ce δ_dg + δ_cg δ_de)`.

use fem_macros::fem_kernel;

/// Isotropic linear elasticity, `D` displacement components, with cellwise
/// Lamé parameters; P1/P2 simplices, Q1–Q3 quadrilaterals and Q1–Q8
/// hexahedra in `f32` and `f64`.
#[fem_kernel(
    components = dim,
    aux = 2,
    aux_space = cell,
    elements(
        tri(p = 1, q = 1), tri(p = 2, q = 3),
        tet(p = 1, q = 1), tet(p = 2, q = 4),
        quad(p = 1, q = 4), quad(p = 2, q = 9), quad(p = 3, q = 16),
        hex(p = 1, q = 8), hex(p = 2, q = 27), hex(p = 3, q = 64), hex(p = 4, q = 125), hex(p = 5, q = 216),
        hex(p = 6, q = 343), hex(p = 7, q = 512), hex(p = 8, q = 729)
    ),
    precision(f32, f64),
    gpu_cfg(feature = "entry-points")
)]
pub mod elasticity {
    use fem_core::Real;

    /// The stress σ = λ tr(ε) I + 2μ ε, `f1[c][d]` = σ_cd.
    pub fn f1<T: Real, const D: usize>(_u: &[T; D], du: &[[T; D]; D], a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D]) -> [[T; D]; D] {
        let (lambda, mu) = (a[0], a[1]);
        let mut trace = T::ZERO;
        for k in 0..D {
            trace += du[k][k];
        }
        core::array::from_fn(|c| {
            core::array::from_fn(|d| {
                let strain = (du[c][d] + du[d][c]) * T::from_f64(0.5);
                let diag = if c == d { lambda * trace } else { T::ZERO };
                diag + (mu + mu) * strain
            })
        })
    }

    /// The elasticity tensor ∂σ_cd/∂(∂_g u_e) = λ δ_cd δ_eg + μ (δ_ce δ_dg + δ_cg δ_de).
    pub fn g3<T: Real, const D: usize>(_u: &[T; D], _du: &[[T; D]; D], a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D]) -> [[[[T; D]; D]; D]; D] {
        let (lambda, mu) = (a[0], a[1]);
        let delta = |i: usize, j: usize| if i == j { T::ONE } else { T::ZERO };
        core::array::from_fn(|c| {
            core::array::from_fn(|e| {
                core::array::from_fn(|d| core::array::from_fn(|g| lambda * delta(c, d) * delta(e, g) + mu * (delta(c, e) * delta(d, g) + delta(c, g) * delta(d, e))))
            })
        })
    }
}

pub use elasticity::Elasticity;
