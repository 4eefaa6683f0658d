//! The pointwise-physics interface: a weak form
//! ∫ φ·f0(u, ∇u, a, ∇a, x) + ∇φ : f1(u, ∇u, a, ∇a, x) = 0
//! given by its integrands at one point, and its linearisation g0..g3.
//!
//! Users implement it through `#[fem_kernel]` (crate `fem-macros`), which
//! writes the impls from plain functions and generates the kernels. The
//! kernels need nothing else: quadrature, bases, geometry and assembly are
//! the library's.

use crate::Real;

/// Everything a pointwise function sees at one quadrature point: the
/// `NC` solution components and their gradients, the `NA` auxiliary fields
/// (coefficients) and theirs, and the physical position.
#[derive(Clone, Copy, Debug)]
pub struct Point<T, const D: usize, const NC: usize, const NA: usize> {
    pub u: [T; NC],
    pub du: [[T; D]; NC],
    pub a: [T; NA],
    pub da: [[T; D]; NA],
    pub x: [T; D],
}

/// A weak form in `D` dimensions with `NC` solution components and `NA`
/// auxiliary fields. Index conventions (c, e: components; d, g:
/// directions): `f1[c][d]`, `g0[c][e]` = ∂f0_c/∂u_e, `g1[c][e][g]` =
/// ∂f0_c/∂(∂_g u_e), `g2[c][e][d]` = ∂f1_{c,d}/∂u_e, `g3[c][e][d][g]` =
/// ∂f1_{c,d}/∂(∂_g u_e).
pub trait Physics<T: Real, const D: usize, const NC: usize, const NA: usize> {
    /// Which terms exist, so kernels skip the work and the shared memory of
    /// absent ones.
    const TERMS: Terms;

    fn f0(p: &Point<T, D, NC, NA>) -> [T; NC];
    fn f1(p: &Point<T, D, NC, NA>) -> [[T; D]; NC];
    fn g0(p: &Point<T, D, NC, NA>) -> [[T; NC]; NC];
    fn g1(p: &Point<T, D, NC, NA>) -> [[[T; D]; NC]; NC];
    fn g2(p: &Point<T, D, NC, NA>) -> [[[T; D]; NC]; NC];
    fn g3(p: &Point<T, D, NC, NA>) -> [[[[T; D]; D]; NC]; NC];
}

/// The terms a physics provides (an absent term is identically zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terms {
    pub f0: bool,
    pub f1: bool,
    pub g: [bool; 4],
}

/// The zero of any array shape a pointwise function returns.
pub trait Zero {
    fn zero() -> Self;
}

impl Zero for f32 {
    #[inline(always)]
    fn zero() -> Self {
        0.0
    }
}

impl Zero for f64 {
    #[inline(always)]
    fn zero() -> Self {
        0.0
    }
}

impl<Z: Zero + Copy, const N: usize> Zero for [Z; N] {
    #[inline(always)]
    fn zero() -> Self {
        [Z::zero(); N]
    }
}
