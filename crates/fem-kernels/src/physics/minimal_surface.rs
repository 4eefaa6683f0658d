//! The minimal surface equation −∇·(∇u / √(1 + |∇u|²)) = 0: the graph of u
//! has zero mean curvature (deal.II's step-15, the classic nonlinear
//! elliptic test). f1 = ∇u/q with q = √(1 + |∇u|²), no f0; the tangent
//! g3 = (I − ∇u ∇uᵀ / q²) / q is symmetric positive definite, so Newton's
//! linear systems are solved by CG. Scherk's surface u = ln(cos y / cos x)
//! on |x|, |y| < π/2 is an exact solution for Dirichlet data taken from it.

use fem_macros::fem_kernel;

/// Minimal surfaces on P1/P2 triangles and tetrahedra in `f64`.
#[fem_kernel(
    components = 1,
    elements(tri(p = 1, q = 3), tri(p = 2, q = 6), tet(p = 1, q = 4), tet(p = 2, q = 4)),
    precision(f64),
    gpu_cfg(feature = "entry-points")
)]
pub mod minimal_surface {
    use fem_core::Real;

    /// q = √(1 + |∇u|²), the area element of the graph.
    pub fn area<T: Real, const D: usize>(du: &[T; D]) -> T {
        let mut s = T::ONE;
        for g in du {
            s += *g * *g;
        }
        s.sqrt()
    }

    /// f0 = 0: no load.
    pub fn f0<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [T; 1] {
        [T::ZERO]
    }

    /// f1 = ∇u / q.
    pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[T; D]; 1] {
        let q = area(&du[0]);
        [core::array::from_fn(|k| du[0][k] / q)]
    }

    /// g3 = ∂f1/∂∇u = (I − ∇u ∇uᵀ / q²) / q.
    pub fn g3<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[[[T; D]; D]; 1]; 1] {
        let q = area(&du[0]);
        let q3 = q * q * q;
        [[core::array::from_fn(|d| core::array::from_fn(|g| if d == g { T::ONE / q - du[0][d] * du[0][g] / q3 } else { -du[0][d] * du[0][g] / q3 }))]]
    }
}

pub use minimal_surface::MinimalSurface;
