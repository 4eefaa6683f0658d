//! Steady heat conduction with a cooling boundary: −Δu = f in Ω, and on
//! the boundary facets a solve names, ∂u/∂n + u + u|u|³ = g (convection
//! plus Stefan–Boltzmann radiation, constants folded into g), Dirichlet
//! values elsewhere. The boundary condition is the boundary term
//! bf0 = u + u|u|³ − g of the weak form, with bg0 = 1 + 4|u|³: nonlinear,
//! so Newton's tangent needs the boundary's linearisation, and monotone,
//! so the problem is well posed and the tangent symmetric positive
//! definite (CG). f = `a[0]` and g = `a[1]` are nodal fields.

use fem_macros::fem_kernel;

/// Conduction with radiative cooling on P1/P2 simplices and Q1/Q2 tensor
/// cells in `f64`.
#[fem_kernel(
    components = 1,
    aux = 2,
    aux_space = nodal,
    elements(
        tri(p = 1, q = 3), tri(p = 2, q = 6),
        tet(p = 1, q = 4), tet(p = 2, q = 4),
        quad(p = 1, q = 4), quad(p = 2, q = 9),
        hex(p = 1, q = 8), hex(p = 2, q = 27)
    ),
    precision(f64),
    gpu_cfg(feature = "entry-points")
)]
pub mod radiation {
    use fem_core::Real;

    /// f0 = −f, the source `a[0]`.
    pub fn f0<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D]) -> [T; 1] {
        [-a[0]]
    }

    /// f1 = ∇u.
    pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D]) -> [[T; D]; 1] {
        [du[0]]
    }

    /// g3 = I.
    pub fn g3<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D]) -> [[[[T; D]; D]; 1]; 1] {
        [[core::array::from_fn(|d| core::array::from_fn(|g| if d == g { T::ONE } else { T::ZERO }))]]
    }

    /// bf0 = u + u|u|³ − g, with g = `a[1]`.
    pub fn bf0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D], _n: &[T; D]) -> [T; 1] {
        let v = u[0];
        [v + v * v * v * v.abs() - a[1]]
    }

    /// bg0 = 1 + 4|u|³.
    pub fn bg0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D], _n: &[T; D]) -> [[T; 1]; 1] {
        let v = u[0].abs();
        [[T::ONE + T::from_f64(4.0) * v * v * v]]
    }
}

pub use radiation::Radiation;
