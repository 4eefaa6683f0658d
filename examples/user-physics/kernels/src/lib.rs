//! A user's physics in its own crate: −Δu + u³ = f, written once as
//! pointwise functions. `#[fem_kernel]` turns them into CPU variants (used
//! by the host crate through this crate as an ordinary dependency) and,
//! when the host's `build.rs` compiles this crate to PTX, into
//! thread-transposition GPU entry points.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx, asm_experimental_arch))]
#![cfg_attr(not(target_arch = "nvptx64"), deny(missing_docs))]

// The device prelude and panic handler of the PTX build come from here.
use fem_kernels as _;

/// Nonlinear reaction–diffusion with the manufactured solution
/// u = Π sin(π xₐ) built into the load: f = Dπ² u + u³. The tangent
/// g0 = 3u², g3 = I is symmetric positive definite, so Newton's linear
/// systems are solved by CG.
#[fem_macros::fem_kernel(
    components = 1,
    elements(tri(p = 1, q = 3), tri(p = 2, q = 6), tet(p = 1, q = 4), tet(p = 2, q = 4)),
    precision(f64)
)]
pub mod reaction {
    use fem_core::Real;

    /// The manufactured solution at x.
    pub fn exact<T: Real, const D: usize>(x: &[T; D]) -> T {
        let pi = T::from_f64(core::f64::consts::PI);
        let mut s = T::ONE;
        for xa in x {
            s *= (pi * *xa).sin();
        }
        s
    }

    /// f0 = u³ − f.
    pub fn f0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], x: &[T; D]) -> [T; 1] {
        let pi = T::from_f64(core::f64::consts::PI);
        let e = exact(x);
        let f = T::from_f64(D as f64) * pi * pi * e + e * e * e;
        [u[0] * u[0] * u[0] - f]
    }

    /// f1 = ∇u.
    pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[T; D]; 1] {
        [du[0]]
    }

    /// g0 = ∂f0/∂u = 3u².
    pub fn g0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[T; 1]; 1] {
        [[T::from_f64(3.0) * u[0] * u[0]]]
    }

    /// g3 = ∂f1/∂∇u = I.
    pub fn g3<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[[[T; D]; D]; 1]; 1] {
        [[core::array::from_fn(|d| core::array::from_fn(|g| if d == g { T::ONE } else { T::ZERO }))]]
    }
}

pub use reaction::Reaction;
