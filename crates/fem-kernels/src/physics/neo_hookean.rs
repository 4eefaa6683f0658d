//! Compressible neo-Hookean hyperelasticity in the reference configuration:
//! W(F) = μ/2 (tr FᵀF − d) − μ ln J + λ/2 (ln J)², F = I + ∇u, J = det F.
//! f1 is the first Piola–Kirchhoff stress P = μ (F − F⁻ᵀ) + λ ln J F⁻ᵀ and
//! the tangent its derivative
//! `g3[c][e][d][g] = ∂P_cd/∂F_eg = μ δ_ce δ_dg + (μ − λ ln J) F⁻¹_de F⁻¹_gc + λ F⁻¹_dc F⁻¹_ge`,
//! which at F = I is linear elasticity's tensor. The Lamé parameters are
//! per cell (P0 auxiliary fields `a[0]` = λ, `a[1]` = μ); loads (body
//! forces, dead tractions) come as load vectors, so f0 is zero.

use fem_macros::fem_kernel;

/// Neo-Hookean hyperelasticity, `D` displacement components, with cellwise
/// Lamé parameters; P1/P2 simplices, Q1 quadrilaterals and Q1–Q8
/// hexahedra in `f64`.
#[fem_kernel(
    components = dim,
    aux = 2,
    aux_space = cell,
    elements(tri(p = 1, q = 1), tri(p = 2, q = 3), tet(p = 1, q = 1), tet(p = 2, q = 4), quad(p = 1, q = 4), hex(p = 1, q = 8), hex(p = 2, q = 27), hex(p = 3, q = 64),
        hex(p = 4, q = 125), hex(p = 5, q = 216), hex(p = 6, q = 343), hex(p = 7, q = 512), hex(p = 8, q = 729)),
    precision(f64),
    gpu_cfg(feature = "entry-points")
)]
pub mod neo_hookean {
    use fem_core::unroll::array;
    use fem_core::Real;

    /// F = I + ∇u, its inverse and ln J. A non-positive J (an inverted
    /// point) gives ln J = NaN, which Newton's line search rejects.
    pub fn kinematics<T: Real, const D: usize>(du: &[[T; D]; D]) -> ([[T; D]; D], T) {
        let f: [[T; D]; D] = core::array::from_fn(|i| core::array::from_fn(|j| if i == j { T::ONE + du[i][j] } else { du[i][j] }));
        let (det, inv) = fem_core::element::det_inv(&f);
        let ln_j = if det > T::ZERO { det.ln() } else { T::from_f64(f64::NAN) };
        (inv, ln_j)
    }

    /// P = μ (F − F⁻ᵀ) + λ ln J F⁻ᵀ, `f1[c][d]` = P_cd.
    pub fn f1<T: Real, const D: usize>(_u: &[T; D], du: &[[T; D]; D], a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D]) -> [[T; D]; D] {
        let (lambda, mu) = (a[0], a[1]);
        let (inv, ln_j) = kinematics(du);
        core::array::from_fn(|c| core::array::from_fn(|d| mu * du[c][d] + (lambda * ln_j - mu) * inv[d][c] + if c == d { mu } else { T::ZERO }))
    }

    /// g3 = ∂P/∂F, its outer levels written out ([`fem_core::unroll::array`]):
    /// built by `from_fn`, the 81 values went to local memory on the GPU.
    pub fn g3<T: Real, const D: usize>(_u: &[T; D], du: &[[T; D]; D], a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D]) -> [[[[T; D]; D]; D]; D] {
        let (lambda, mu) = (a[0], a[1]);
        let (inv, ln_j) = kinematics(du);
        let soft = mu - lambda * ln_j;
        array(|c| array(|e| array(|d| array(|g| (if c == e && d == g { mu } else { T::ZERO }) + soft * inv[d][e] * inv[g][c] + lambda * inv[d][c] * inv[g][e]))))
    }
}

pub use neo_hookean::NeoHookean;
