//! The pointwise-physics interface: a weak form
//! ∫ φ·f0(u, ∇u, a, ∇a, x) + ∇φ : f1(u, ∇u, a, ∇a, x) = 0
//! given by its integrands at one point, and its linearisation g0..g3.
//!
//! A boundary term ∫_Γ φ·bf0(u, ∇u, a, ∇a, x, n) on chosen boundary facets
//! (n the outward unit normal) carries Neumann and Robin conditions, with
//! its linearisation bg0, bg1.
//!
//! Users implement it through `#[fem_kernel]` (crate `fem-macros`), which
//! writes the impls from plain functions and generates the kernels. The
//! kernels need nothing else: quadrature, bases, geometry and assembly are
//! the library's.

use crate::Real;

/// Everything a pointwise function sees at one quadrature point: the
/// `NC` solution components and their gradients, the `NA` auxiliary fields
/// (coefficients) and theirs, the physical position and the time.
#[derive(Clone, Copy, Debug)]
pub struct Point<T, const D: usize, const NC: usize, const NA: usize> {
    /// Solution components u_c at the point.
    pub u: [T; NC],
    /// Physical gradients: `du[c][d]` = ∂u_c/∂x_d.
    pub du: [[T; D]; NC],
    /// Auxiliary fields (coefficients) a_k at the point.
    pub a: [T; NA],
    /// Physical gradients of the auxiliary fields: `da[k][d]` = ∂a_k/∂x_d.
    pub da: [[T; D]; NA],
    /// Physical coordinates of the quadrature point.
    pub x: [T; D],
    /// The time the form is evaluated at: the step's time in a time
    /// integration, 0 in a stationary solve.
    pub t: T,
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

    /// The integrand tested against φ: `f0[c]`.
    fn f0(p: &Point<T, D, NC, NA>) -> [T; NC];
    /// The integrand tested against ∇φ: `f1[c][d]`.
    fn f1(p: &Point<T, D, NC, NA>) -> [[T; D]; NC];
    /// ∂f0/∂u: `g0[c][e]` = ∂f0_c/∂u_e.
    fn g0(p: &Point<T, D, NC, NA>) -> [[T; NC]; NC];
    /// ∂f0/∂∇u: `g1[c][e][g]` = ∂f0_c/∂(∂_g u_e).
    fn g1(p: &Point<T, D, NC, NA>) -> [[[T; D]; NC]; NC];
    /// ∂f1/∂u: `g2[c][e][d]` = ∂f1_{c,d}/∂u_e.
    fn g2(p: &Point<T, D, NC, NA>) -> [[[T; D]; NC]; NC];
    /// ∂f1/∂∇u: `g3[c][e][d][g]` = ∂f1_{c,d}/∂(∂_g u_e).
    fn g3(p: &Point<T, D, NC, NA>) -> [[[[T; D]; D]; NC]; NC];
    /// The boundary integrand tested against φ at outward unit normal `n`:
    /// `bf0[c]`; zero where the physics has none.
    fn bf0(_p: &Point<T, D, NC, NA>, _n: &[T; D]) -> [T; NC] {
        [T::ZERO; NC]
    }
    /// ∂bf0/∂u: `bg0[c][e]` = ∂bf0_c/∂u_e.
    fn bg0(_p: &Point<T, D, NC, NA>, _n: &[T; D]) -> [[T; NC]; NC] {
        [[T::ZERO; NC]; NC]
    }
    /// ∂bf0/∂∇u: `bg1[c][e][g]` = ∂bf0_c/∂(∂_g u_e).
    fn bg1(_p: &Point<T, D, NC, NA>, _n: &[T; D]) -> [[[T; D]; NC]; NC] {
        [[[T::ZERO; D]; NC]; NC]
    }
}

/// The terms a physics provides (an absent term is identically zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terms {
    /// Whether `f0` is present in the residual.
    pub f0: bool,
    /// Whether `f1` is present in the residual.
    pub f1: bool,
    /// Whether `g0`, `g1`, `g2`, `g3` (in that order) are present in the
    /// Jacobian.
    pub g: [bool; 4],
    /// Whether the boundary term `bf0` is present.
    pub bf0: bool,
    /// Whether `bg0`, `bg1` are present in the boundary term's Jacobian.
    pub bg: [bool; 2],
    /// Whether g0..g3 may read the state (`u` or `∇u`): a matrix-free
    /// Jacobian action interpolates the state only then. `#[fem_kernel]`
    /// sets it from the functions' bodies; `true` is always safe.
    pub g_reads_state: bool,
}

/// The zero of any array shape a pointwise function returns.
pub trait Zero {
    /// The value with every entry 0.
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
