//! ρu = f: f0 = ρu − f, with ρ and f auxiliary fields in the solution's
//! space (`a[0]` = ρ, `a[1]` = f), the weighted L² projection of f. Its
//! Jacobian g0 = ρ is the mass matrix, the operator of the CEED benchmark
//! BP1 and the time derivative's term in every implicit time step.

use fem_macros::fem_kernel;

/// The weighted mass matrix with nodal ρ and f; P1/P2 simplices and
/// Q1–Q8 tensor cells in `f32` and `f64`, each with a rule exact for the
/// product of two shape functions on affine cells.
#[fem_kernel(
    components = 1,
    aux = 2,
    aux_space = nodal,
    elements(
        tri(p = 1, q = 3), tri(p = 2, q = 6),
        tet(p = 1, q = 4), tet(p = 2, q = 64),
        quad(p = 1, q = 4), quad(p = 2, q = 9), quad(p = 3, q = 16),
        quad(p = 4, q = 25), quad(p = 5, q = 36), quad(p = 6, q = 49), quad(p = 7, q = 64), quad(p = 8, q = 81),
        hex(p = 1, q = 8), hex(p = 2, q = 27), hex(p = 3, q = 64),
        hex(p = 4, q = 125), hex(p = 5, q = 216), hex(p = 6, q = 343), hex(p = 7, q = 512), hex(p = 8, q = 729)
    ),
    precision(f32, f64),
    gpu_cfg(feature = "entry-points")
)]
pub mod mass {
    use fem_core::Real;

    /// f0 = ρu − f.
    pub fn f0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D]) -> [T; 1] {
        [a[0] * u[0] - a[1]]
    }

    /// g0 = ρ: linear in u.
    pub fn g0<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 2], _da: &[[T; D]; 2], _x: &[T; D]) -> [[T; 1]; 1] {
        [[a[0]]]
    }
}

pub use mass::Mass;
