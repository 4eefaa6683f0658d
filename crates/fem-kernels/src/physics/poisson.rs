//! −∇·(κ∇u) = f: f1 = κ∇u, f0 = −f, with κ and f auxiliary fields in the
//! solution's space (`a[0]` = κ, `a[1]` = f), so a variable coefficient
//! and load are data, not code. Linear in u: the Jacobian is g3 = κI.

use fem_macros::fem_kernel;

/// The scalar Poisson problem with nodal κ and f; P1/P2 simplices and
/// Q1–Q8 tensor cells in `f32` and `f64`.
#[fem_kernel(
    components = 1,
    aux = 2,
    aux_space = nodal,
    elements(
        tri(p = 1, q = 1), tri(p = 2, q = 3), tri(p = 2, q = 6),
        tet(p = 1, q = 1), tet(p = 2, q = 4),
        quad(p = 1, q = 4), quad(p = 2, q = 9), quad(p = 3, q = 16),
        quad(p = 4, q = 25), quad(p = 5, q = 36), quad(p = 6, q = 49), quad(p = 7, q = 64), quad(p = 8, q = 81),
        hex(p = 1, q = 8), hex(p = 2, q = 27), hex(p = 3, q = 64),
        hex(p = 4, q = 125), hex(p = 5, q = 216), hex(p = 6, q = 343), hex(p = 7, q = 512), hex(p = 8, q = 729)
    ),
    precision(f32, f64),
    gpu_cfg(feature = "entry-points")
)]
pub mod poisson {
    use fem_core::Real;

    /// f0 = −f, the load `a[1]`.
    pub fn f0<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D]) -> [T; 1] {
        [-a[1]]
    }

    /// f1 = κ∇u with κ = `a[0]`.
    pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D]) -> [[T; D]; 1] {
        [core::array::from_fn(|k| a[0] * du[0][k])]
    }

    /// g3 = κI: the problem is linear, so the tangent does not depend on u.
    pub fn g3<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D]) -> [[[[T; D]; D]; 1]; 1] {
        [[core::array::from_fn(|d| core::array::from_fn(|g| if d == g { a[0] } else { T::ZERO }))]]
    }
}

pub use poisson::Poisson;
