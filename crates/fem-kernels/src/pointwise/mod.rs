//! Residuals and element matrices of a pointwise physics
//! ([`fem_core::physics::Physics`]) on any reference cell of
//! [`fem_core::shape`], split the way Knepley, Rupp & Terrel's thread
//! transposition needs it:
//!
//! * the **quadrature phase** ([`residual_point`], [`jacobian_point`])
//!   evaluates the fields at one quadrature point of one cell, calls the
//!   physics and returns its values already multiplied by the weight and
//!   |J| and pulled back to reference derivatives, so
//! * the **basis phase** ([`residual_basis`], [`jacobian_entry`]) is a
//!   plain contraction with the reference tabulation, needing no geometry.
//!
//! The CPU runs both phases per cell ([`cell_residual`]); the GPU
//! (`gpu`) runs them over cell batches with a barrier between. Both call
//! the functions here, so they compute the same sums in the same order.
//!
//! Table layout (built by the host, one row per quadrature point):
//! `[w, Φ₀₀ … Φ_{NB−1,D}, Ψ₀₀ … Ψ_{NV−1,D}]` with `Φ_{b,0}` the basis value
//! and `Φ_{b,1+e}` its reference derivative ∂/∂ξ_e; Ψ likewise for the
//! geometry (vertex) basis. Cell data are E-vectors: `u[b·NC + c]`,
//! vertex coordinates `x[v·D + a]`, auxiliary fields `a[b·NA + k]` (in the
//! solution's space) or `a[k]` (P0).

pub mod facet;
pub mod matrix_free;
pub mod partial;
pub mod sum_factorised;
#[cfg(target_arch = "nvptx64")]
pub mod gpu;

use fem_core::element::det_inv;
use fem_core::physics::{Physics, Point, Terms};
use fem_core::shape::Shape;
use fem_core::Real;

/// Reads `s[i]`; unchecked in kernels (the launch sizes were validated by
/// the host), checked on the host where tests exercise every index.
#[inline(always)]
pub fn at<T: Copy>(s: &[T], i: usize) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        unsafe { *s.get_unchecked(i) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        s[i]
    }
}

/// Length of one table row.
pub const fn row_len(d: usize, nb: usize, nv: usize) -> usize {
    1 + (nb + nv) * (1 + d)
}

/// Auxiliary values per cell.
pub const fn aux_len(nb: usize, na: usize, nodal: bool) -> usize {
    if nodal {
        nb * na
    } else {
        na
    }
}

/// Values per quadrature point the residual's quadrature phase hands to
/// the basis phase: `F[c][h]`, h = 0 the f0 term, 1 + e the f1 term.
pub const fn residual_point_len(d: usize, nc: usize) -> usize {
    nc * (1 + d)
}

/// Values per quadrature point of the Jacobian: `G[c][e][h][k]`, h (k) = 0
/// the test (trial) value, 1 + e its reference derivative.
pub const fn jacobian_point_len(d: usize, nc: usize) -> usize {
    nc * nc * (1 + d) * (1 + d)
}

/// Shared-memory elements of a thread-transposition launch of `v` with
/// `cells` threads (= cells per batch) and `batches` batches per chunk:
/// table, the quadrature phase's values, and the batch's E-vectors, twice
/// when a chunk has a next batch to fetch while it computes.
pub const fn shared_len(v: &Variant, cells: usize, jacobian: bool, batches: usize) -> usize {
    let (d, nb, nv) = (v.dim(), v.n_basis(), v.shape.vertices());
    let point = if jacobian { jacobian_point_len(d, v.nc) } else { residual_point_len(d, v.nc) };
    let l = Layout::new(d, nb, nv, v.nq, cells, point, [v.n_local(), nv * d, v.aux_per_cell()]);
    l.inputs + if batches > 1 { 2 } else { 1 } * l.input_len
}

/// Rounds `n` elements up to whole 16-byte copies of either precision
/// (4 values), so a region that starts aligned keeps the next aligned.
pub const fn pad(n: usize) -> usize {
    (n + 3) & !3
}

/// Where a thread-transposition block keeps what in its shared memory
/// (offsets in elements): the table, the point values, then one or two
/// input buffers holding the batch's coefficients, vertices and aux
/// fields. Every region starts on 16 bytes, so `cp.async` can move the
/// inputs 16 bytes at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Table elements (`N_q` rows).
    pub tab_len: usize,
    /// Offset of the point values.
    pub pts: usize,
    /// Offset of the first input buffer.
    pub inputs: usize,
    /// Offsets of coefficients, vertices and aux within an input buffer.
    pub off: [usize; 3],
    /// Elements of one input buffer.
    pub input_len: usize,
}

impl Layout {
    /// The layout for `cells` cells per batch with `point` values per
    /// (cell, point) and `sizes` input values per cell.
    pub const fn new(d: usize, nb: usize, nv: usize, nq: usize, cells: usize, point: usize, sizes: [usize; 3]) -> Self {
        let tab_len = nq * row_len(d, nb, nv);
        let pts = pad(tab_len);
        let off = [0, pad(cells * sizes[0]), pad(cells * sizes[0]) + pad(cells * sizes[1])];
        Layout { tab_len, pts, inputs: pts + pad(cells * nq * point), off, input_len: off[2] + pad(cells * sizes[2]) }
    }
}

/// One generated kernel variant, as the `#[fem_kernel]` attribute named
/// it; the host finds PTX entries and CPU code through this table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// Reference cell.
    pub shape: Shape,
    /// Polynomial degree p of the basis (P_p on simplices, Q_p on tensor cells).
    pub degree: usize,
    /// Quadrature points (a rule of [`Shape::rule`]).
    pub nq: usize,
    /// Solution components per node (`NC`).
    pub nc: usize,
    /// Auxiliary fields (`NA`).
    pub na: usize,
    /// Whether the auxiliary fields are nodal (`na` values per basis node,
    /// interpolated) rather than one value each per cell (P0).
    pub aux_nodal: bool,
    /// Which of f0, f1, g0..g3 the physics defines.
    pub terms: Terms,
    /// Cells per cell block: LCM(N_q, N_b·N_comp).
    pub block: usize,
    /// PTX entry of the residual without the precision suffix.
    pub residual: &'static str,
    /// PTX entry of the element matrices, if the physics has g0..g3.
    pub jacobian: Option<&'static str>,
    /// Precisions with PTX entries.
    pub precisions: &'static [&'static str],
    /// Points of the facet rule of boundary terms
    /// ([`Shape::facet_rule_size`]).
    pub nqf: usize,
    /// PTX entry of the boundary residual, if the physics has bf0.
    pub facet_residual: Option<&'static str>,
    /// PTX entry of the boundary element matrices, if it has bg0 or bg1.
    pub facet_jacobian: Option<&'static str>,
    /// PTX entry of the Jacobian's point data for partial assembly
    /// ([`partial`]), on tensor cells of a physics with g0..g3.
    pub points: Option<&'static str>,
    /// Whether the GPU's residual and point data are sum-factorised
    /// (`sum_factorised`, entries `{residual}_sf` and `{points}_sf`):
    /// hexahedra from Q2 with (p + 1)³ Gauss points, which have no
    /// one-thread-per-cell residual (`_cell`) and no per-point point data.
    pub sum_factorised: bool,
    /// Whether the Jacobian has a matrix-free action ([`matrix_free`],
    /// entry `{points}_mf`): hexahedra of a physics with g0..g3 and
    /// (p + 1)³ Gauss points, degree 1 and up. Its CPU code and the GPU
    /// entry take the sum-factorised table.
    pub matrix_free: bool,
}

impl Variant {
    /// Spatial dimension of the shape.
    pub const fn dim(&self) -> usize {
        self.shape.dim()
    }
    /// Scalar basis functions per cell.
    pub const fn n_basis(&self) -> usize {
        self.shape.n_basis(self.degree)
    }
    /// Basis functions times components: the E-vector length per cell.
    pub const fn n_local(&self) -> usize {
        self.n_basis() * self.nc
    }
    /// Auxiliary values stored per cell: `n_basis · na` when nodal, else `na`.
    pub const fn aux_per_cell(&self) -> usize {
        aux_len(self.n_basis(), self.na, self.aux_nodal)
    }
}

/// What `#[fem_kernel]` implements for a physics type: its variants and
/// the CPU code of each.
pub trait Kernels<T: Real> {
    /// Name used in entry points (`fem_residual_<NAME>_...`).
    const NAME: &'static str;
    /// Every (shape, degree, rule) the attribute generated code for.
    const VARIANTS: &'static [Variant];

    /// Element residuals of cells `first..first + out.len() / n_local` on
    /// the CPU at time `t`; `false` if `v` is not one of [`Self::VARIANTS`].
    /// `tab` is the element kernels' table, or for a
    /// [`Variant::sum_factorised`] one the table of [`sum_factorised`]
    /// (as for [`Self::points_cells`]).
    #[allow(clippy::too_many_arguments)]
    fn residual_cells(v: &Variant, tab: &[T], first: usize, u: &[T], x: &[T], a: &[T], t: T, out: &mut [T]) -> bool;

    /// Element matrices (row-major, n_local² per cell) likewise; `false`
    /// if `v` is not a variant or the physics has no Jacobian.
    #[allow(clippy::too_many_arguments)]
    fn jacobian_cells(v: &Variant, tab: &[T], first: usize, u: &[T], x: &[T], a: &[T], t: T, out: &mut [T]) -> bool;

    /// Boundary residuals ([`facet::facet_residual`]) of facets
    /// `first..first + out.len() / n_local`, `local` their local numbers
    /// and `u`, `x`, `a` their cells' E-vectors, from the facet table
    /// `tab`; `false` if `v` is not a variant or the physics has no bf0.
    #[allow(clippy::too_many_arguments)]
    fn facet_residuals(v: &Variant, tab: &[T], first: usize, local: &[u32], u: &[T], x: &[T], a: &[T], t: T, out: &mut [T]) -> bool;

    /// Boundary element matrices likewise (n_local² per facet); `false`
    /// without bg0 and bg1.
    #[allow(clippy::too_many_arguments)]
    fn facet_jacobians(v: &Variant, tab: &[T], first: usize, local: &[u32], u: &[T], x: &[T], a: &[T], t: T, out: &mut [T]) -> bool;

    /// The boundary linearisation's point data likewise
    /// ([`facet::facet_points`], [`facet::facet_point_len`] per facet);
    /// `false` without bg0 and bg1. The GPU entry is
    /// [`Variant::facet_jacobian`]'s with `points` for `jacobian`.
    #[allow(clippy::too_many_arguments)]
    fn facet_points(v: &Variant, tab: &[T], first: usize, local: &[u32], u: &[T], x: &[T], a: &[T], t: T, out: &mut [T]) -> bool;

    /// The Jacobian's point data ([`partial::cell_points`],
    /// [`partial::point_len`] · N_q per cell) of cells `first..`; `false`
    /// if `v` is not a variant on a tensor cell or the physics has no
    /// Jacobian.
    #[allow(clippy::too_many_arguments)]
    fn points_cells(v: &Variant, tab: &[T], first: usize, u: &[T], x: &[T], a: &[T], t: T, out: &mut [T]) -> bool;

    /// The Jacobian's action ([`matrix_free::cell_action`]) on the
    /// direction E-vector `dir` of cells `first..first + out.len() /
    /// n_local` (`dir` and `out` hold those cells only; `u`, `x`, `a` all
    /// cells), from the sum-factorised table; `false` if `v` is not a
    /// [`Variant::matrix_free`] variant.
    #[allow(clippy::too_many_arguments)]
    fn action_cells(v: &Variant, tab: &[T], first: usize, u: &[T], x: &[T], a: &[T], t: T, dir: &[T], out: &mut [T]) -> bool;
}

/// Position, |J|·w and J⁻¹ (`inv[e][a]` = ∂ξ_e/∂x_a) at the point of `row`.
#[inline(always)]
pub fn geometry<T: Real, const D: usize, const NB: usize, const NV: usize>(row: &[T], x: &[T]) -> ([T; D], T, [[T; D]; D]) {
    let o = 1 + NB * (1 + D);
    let (w, psi) = (at(row, 0), |i: usize| at(row, o + i));
    let mut pos = [T::ZERO; D];
    let mut jac = [[T::ZERO; D]; D];
    for v in 0..NV {
        let value = psi(v * (1 + D));
        for a in 0..D {
            let xv = at(x, v * D + a);
            pos[a] = xv.mad(value, pos[a]);
            for e in 0..D {
                jac[a][e] = xv.mad(psi(v * (1 + D) + 1 + e), jac[a][e]);
            }
        }
    }
    let (det, inv) = det_inv(&jac);
    (pos, w * det, inv)
}

/// Value and physical gradient of `n` interleaved fields at the point of
/// `row`: `coef(b·n + c)` is field c's coefficient of basis function b.
#[inline(always)]
fn fields<T: Real, const D: usize, const N: usize, const NB: usize>(
    row: &[T],
    inv: &[[T; D]; D],
    coef: impl Fn(usize) -> T,
) -> ([T; N], [[T; D]; N]) {
    let mut v = [T::ZERO; N];
    let mut dref = [[T::ZERO; D]; N];
    for b in 0..NB {
        let o = 1 + b * (1 + D);
        let phi = at(row, o);
        for c in 0..N {
            let k = coef(b * N + c);
            v[c] = k.mad(phi, v[c]);
            for e in 0..D {
                dref[c][e] = k.mad(at(row, o + 1 + e), dref[c][e]);
            }
        }
    }
    (v, physical(&dref, inv))
}

/// Physical gradients of `N` fields from their reference derivatives.
#[inline(always)]
pub fn physical<T: Real, const D: usize, const N: usize>(dref: &[[T; D]; N], inv: &[[T; D]; D]) -> [[T; D]; N] {
    let mut grad = [[T::ZERO; D]; N];
    for c in 0..N {
        for a in 0..D {
            for e in 0..D {
                grad[c][a] = dref[c][e].mad(inv[e][a], grad[c][a]);
            }
        }
    }
    grad
}

/// The pointwise arguments at the point of `row`, with |J|·w and J⁻¹.
#[inline(always)]
pub fn point<T: Real, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const AUXN: bool>(
    row: &[T],
    u: impl Fn(usize) -> T,
    x: &[T],
    aux: impl Fn(usize) -> T,
    t: T,
) -> (Point<T, D, NC, NA>, T, [[T; D]; D]) {
    let (pos, wdet, inv) = geometry::<T, D, NB, NV>(row, x);
    let (uv, du) = fields::<T, D, NC, NB>(row, &inv, u);
    let (a, da) = if AUXN {
        fields::<T, D, NA, NB>(row, &inv, aux)
    } else {
        (core::array::from_fn(&aux), [[T::ZERO; D]; NA])
    };
    (Point { u: uv, du, a, da, x: pos, t }, wdet, inv)
}

/// Pulls a physical direction index back: Σ_a v[a]·inv[e][a].
#[inline(always)]
pub(crate) fn pull<T: Real, const D: usize>(v: &[T; D], inv: &[[T; D]; D], e: usize) -> T {
    let mut s = T::ZERO;
    for a in 0..D {
        s = v[a].mad(inv[e][a], s);
    }
    s
}

/// Quadrature phase of the residual: `F[c][0]` = w|J| f0_c and
/// `F[c][1 + e]` = w|J| Σ_a f1_{c,a} ∂ξ_e/∂x_a, handed to `put(c, h, F)`.
#[inline(always)]
pub fn residual_point<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const AUXN: bool>(
    row: &[T],
    u: impl Fn(usize) -> T,
    x: &[T],
    aux: impl Fn(usize) -> T,
    time: T,
    put: impl FnMut(usize, usize, T),
) {
    let (p, wdet, inv) = point::<T, D, NC, NA, NB, NV, AUXN>(row, u, x, aux, time);
    residual_at::<T, P, D, NC, NA>(&p, wdet, &inv, put);
}

/// [`residual_point`] of the pointwise arguments `p` already evaluated,
/// with the point's |J|·w and J⁻¹.
#[inline(always)]
pub fn residual_at<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize>(
    p: &Point<T, D, NC, NA>,
    wdet: T,
    inv: &[[T; D]; D],
    mut put: impl FnMut(usize, usize, T),
) {
    if P::TERMS.f0 {
        let f0 = P::f0(p);
        for c in 0..NC {
            put(c, 0, f0[c] * wdet);
        }
    }
    if P::TERMS.f1 {
        let f1 = P::f1(p);
        for c in 0..NC {
            for e in 0..D {
                put(c, 1 + e, pull(&f1[c], inv, e) * wdet);
            }
        }
    }
}

/// Basis phase of the residual for local function `bc` = b·NC + c:
/// `Σ_q Σ_h Φ_q[b][h]·F_q[c][h]`, with `f(q, c, h)` the quadrature phase's
/// values and `tab` the whole table.
#[inline(always)]
pub fn residual_basis<T: Real, const D: usize, const NC: usize, const NB: usize, const NV: usize, const NQ: usize>(
    tab: &[T],
    terms: Terms,
    bc: usize,
    f: impl Fn(usize, usize, usize) -> T,
) -> T {
    let c = bc % NC;
    BasisRow::<T, NQ>::new::<D, NC, NB, NV>(tab, terms, bc).apply(|q, h| f(q, c, h))
}

/// The table values one local function's residual contracts with:
/// `Φ_q[b][h]` for every point q and term h (value, then reference
/// derivatives). A GPU thread of the basis phase keeps the same local
/// function for every cell of its batch (the batch size is a multiple of
/// N_b·N_comp), so it reads these once instead of once per cell.
#[derive(Clone, Copy)]
pub struct BasisRow<T, const NQ: usize> {
    phi: [[T; 4]; NQ],
    first: usize,
    last: usize,
}

impl<T: Real, const NQ: usize> BasisRow<T, NQ> {
    /// The row of local function `bc` = b·NC + c; only the terms the
    /// physics defines (`terms`) are read and summed.
    #[inline(always)]
    pub fn new<const D: usize, const NC: usize, const NB: usize, const NV: usize>(tab: &[T], terms: Terms, bc: usize) -> Self {
        let b = bc / NC;
        let (first, last) = (if terms.f0 { 0 } else { 1 }, if terms.f1 { D + 1 } else { 1 });
        let mut phi = [[T::ZERO; 4]; NQ];
        for (q, row) in phi.iter_mut().enumerate() {
            let o = q * row_len(D, NB, NV) + 1 + b * (1 + D);
            for h in first..last {
                row[h] = at(tab, o + h);
            }
        }
        Self { phi, first, last }
    }

    /// `Σ_q Σ_h Φ_q[h]·f(q, h)`, summed in the same order on every backend.
    #[inline(always)]
    pub fn apply(&self, f: impl Fn(usize, usize) -> T) -> T {
        let mut r = T::ZERO;
        for q in 0..NQ {
            for h in self.first..self.last {
                r = self.phi[q][h].mad(f(q, h), r);
            }
        }
        r
    }
}

/// Quadrature phase of the element matrix: `G[c][e][h][k]` (see
/// [`jacobian_point_len`]) pulled back and scaled by w|J|, handed to
/// `put(index, G)` with index ((c·NC + e)(1 + D) + h)(1 + D) + k.
#[inline(always)]
pub fn jacobian_point<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const AUXN: bool>(
    row: &[T],
    u: impl Fn(usize) -> T,
    x: &[T],
    aux: impl Fn(usize) -> T,
    time: T,
    put: impl FnMut(usize, T),
) {
    let (p, wdet, inv) = point::<T, D, NC, NA, NB, NV, AUXN>(row, u, x, aux, time);
    jacobian_at::<T, P, D, NC, NA>(&p, wdet, &inv, put);
}

/// [`jacobian_point`] of the pointwise arguments `p` already evaluated,
/// with the point's |J|·w and J⁻¹.
#[inline(always)]
pub fn jacobian_at<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize>(
    p: &Point<T, D, NC, NA>,
    wdet: T,
    inv: &[[T; D]; D],
    mut put: impl FnMut(usize, T),
) {
    let t = P::TERMS.g;
    let (g0, g1, g2, g3) = (
        if t[0] { P::g0(p) } else { [[T::ZERO; NC]; NC] },
        if t[1] { P::g1(p) } else { [[[T::ZERO; D]; NC]; NC] },
        if t[2] { P::g2(p) } else { [[[T::ZERO; D]; NC]; NC] },
        if t[3] { P::g3(p) } else { [[[[T::ZERO; D]; D]; NC]; NC] },
    );
    let idx = |c: usize, e: usize, h: usize, k: usize| ((c * NC + e) * (1 + D) + h) * (1 + D) + k;
    for c in 0..NC {
        for e in 0..NC {
            put(idx(c, e, 0, 0), g0[c][e] * wdet);
            for k in 0..D {
                put(idx(c, e, 0, 1 + k), pull(&g1[c][e], inv, k) * wdet);
                put(idx(c, e, 1 + k, 0), pull(&g2[c][e], inv, k) * wdet);
            }
            for h in 0..D {
                // Σ_d inv[h][d] (Σ_g g3[d][g] inv[k][g])
                let right: [[T; D]; D] = core::array::from_fn(|d| core::array::from_fn(|k| pull(&g3[c][e][d], inv, k)));
                for k in 0..D {
                    let mut s = T::ZERO;
                    for d in 0..D {
                        s = inv[h][d].mad(right[d][k], s);
                    }
                    put(idx(c, e, 1 + h, 1 + k), s * wdet);
                }
            }
        }
    }
}

/// (c, e, h, k) of flat index ((c·NC + e)(1 + D) + h)(1 + D) + k of the
/// Jacobian's point values (see [`jacobian_point_len`]).
#[inline(always)]
fn jacobian_index<const D: usize, const NC: usize>(i: usize) -> [usize; 4] {
    let (ce, hk) = (i / ((1 + D) * (1 + D)), i % ((1 + D) * (1 + D)));
    [ce / NC, ce % NC, hk / (1 + D), hk % (1 + D)]
}

/// Basis phase of the element matrix: entry (i, j) of local functions
/// i = b·NC + c (test) and j = b'·NC + e (trial).
#[inline(always)]
pub fn jacobian_entry<T: Real, const D: usize, const NC: usize, const NB: usize, const NV: usize, const NQ: usize>(
    tab: &[T],
    i: usize,
    j: usize,
    g: impl Fn(usize, usize) -> T,
) -> T {
    let (b, c, bj, e) = (i / NC, i % NC, j / NC, j % NC);
    let mut r = T::ZERO;
    for q in 0..NQ {
        let o = q * row_len(D, NB, NV) + 1;
        for h in 0..=D {
            let mut s = T::ZERO;
            for k in 0..=D {
                s = at(tab, o + bj * (1 + D) + k).mad(g(q, ((c * NC + e) * (1 + D) + h) * (1 + D) + k), s);
            }
            r = at(tab, o + b * (1 + D) + h).mad(s, r);
        }
    }
    r
}

/// The residual of one cell on the CPU: both phases in sequence, `out`
/// the cell's NB·NC entries.
#[inline(always)]
pub fn cell_residual<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    tab: &[T],
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    out: &mut [T],
) {
    let stride = row_len(D, NB, NV);
    let mut f = [[[T::ZERO; 4]; NC]; NQ];
    for (q, fq) in f.iter_mut().enumerate() {
        residual_point::<T, P, D, NC, NA, NB, NV, AUXN>(&tab[q * stride..(q + 1) * stride], |i| u[i], x, |i| a[i], time, |c, h, v| fq[c][h] = v);
    }
    for (bc, o) in out.iter_mut().enumerate().take(NB * NC) {
        *o = residual_basis::<T, D, NC, NB, NV, NQ>(tab, P::TERMS, bc, |q, c, h| f[q][c][h]);
    }
}

/// The element matrix of one cell, row-major in `out`, entry by entry:
/// the order of the GPU's one-thread-per-cell fallback
/// ([`gpu::jacobian_cells`]), whose thread holds no contraction's rows; a
/// CPU core runs [`cell_jacobian_cpu`].
#[inline(always)]
pub fn cell_jacobian<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    tab: &[T],
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    out: &mut [T],
) {
    let stride = row_len(D, NB, NV);
    let mut g = [[[[[T::ZERO; 4]; 4]; NC]; NC]; NQ];
    for (q, gq) in g.iter_mut().enumerate() {
        jacobian_point::<T, P, D, NC, NA, NB, NV, AUXN>(&tab[q * stride..(q + 1) * stride], |i| u[i], x, |i| a[i], time, |k, v| {
            let [c, e, h, kk] = jacobian_index::<D, NC>(k);
            gq[c][e][h][kk] = v;
        });
    }
    let n = NB * NC;
    for i in 0..n {
        for j in 0..n {
            out[i * n + j] = jacobian_entry::<T, D, NC, NB, NV, NQ>(tab, i, j, |q, k| {
                let [c, e, h, kk] = jacobian_index::<D, NC>(k);
                g[q][c][e][h][kk]
            });
        }
    }
}

/// The element matrix of one cell on a CPU core, row-major in `out`: the
/// physics' point values at each quadrature point contracted with the
/// basis rows by [`contract::add_point`] (unit-stride axpys over the trial
/// functions, which vectorise). Rows and columns of the point values that
/// the physics' terms leave zero (the value rows of a pure g3 physics) are
/// skipped. Equals [`cell_jacobian`], the GPU fallback's entry-by-entry
/// order, up to rounding. A scalar matrix is summed in `out` itself; the
/// blocks of a vector field's are kept apart on the stack, where they
/// stay unit-stride, while they fit [`STACK_MATRIX_BYTES`] (vector Q3
/// hexahedra: 295 KB), and are summed in `out` with stride `NC` beyond
/// (a worker thread's stack is 2 MB; vector Q4 hexahedra need 1.1 MB,
/// scalar Q8 4.3 MB).
///
/// [`contract::add_point`]: fem_core::contract::add_point
#[inline(always)]
pub fn cell_jacobian_cpu<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    tab: &[T],
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    out: &mut [T],
) {
    if NC > 1 && NC * NC * NB * NB * core::mem::size_of::<T>() <= STACK_MATRIX_BYTES {
        jacobian_blocks_on_stack::<T, P, D, NC, NA, NB, NV, NQ, AUXN>(tab, u, x, a, time, out);
    } else {
        let n = NB * NC;
        out[..n * n].fill(T::ZERO);
        jacobian_points::<T, P, D, NC, NA, NB, NV, NQ, AUXN>(tab, u, x, a, time, true, out);
    }
}

/// The largest vector element matrix [`cell_jacobian_cpu`] sums on the
/// stack, in bytes.
pub const STACK_MATRIX_BYTES: usize = 512 << 10;

/// [`cell_jacobian_cpu`] for a vector matrix small enough for the stack:
/// its component blocks summed apart, then interleaved into `out`.
#[inline(never)]
fn jacobian_blocks_on_stack<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    tab: &[T],
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    out: &mut [T],
) {
    let mut k = [[[[T::ZERO; NB]; NB]; NC]; NC];
    jacobian_points::<T, P, D, NC, NA, NB, NV, NQ, AUXN>(tab, u, x, a, time, false, k.as_flattened_mut().as_flattened_mut().as_flattened_mut());
    let n = NB * NC;
    for (c, kc) in k.iter().enumerate() {
        for (e, kce) in kc.iter().enumerate() {
            for (b, kb) in kce.iter().enumerate() {
                for (bj, &v) in kb.iter().enumerate() {
                    out[(b * NC + c) * n + bj * NC + e] = v;
                }
            }
        }
    }
}

/// The sum over the points of [`cell_jacobian_cpu`] into `k`: the
/// interleaved element matrix (`interleaved`, each component block with
/// column stride `NC`), or its `NC × NC` blocks one after the other, each
/// row-major with unit stride.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn jacobian_points<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool>(
    tab: &[T],
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    interleaved: bool,
    k: &mut [T],
) {
    let (stride, t) = (row_len(D, NB, NV), P::TERMS.g);
    // test rows: the value with g0 or g1, the derivatives with g2 or g3;
    // trial columns: the value with g0 or g2, the derivatives with g1 or g3
    let rows = if t[0] || t[1] { 0 } else { 1 }..if t[2] || t[3] { D + 1 } else { 1 };
    let cols = if t[0] || t[2] { 0 } else { 1 }..if t[1] || t[3] { D + 1 } else { 1 };
    let mut scratch = [[T::ZERO; NB]; 4];
    let n = NB * NC;
    for q in 0..NQ {
        let row = &tab[q * stride..(q + 1) * stride];
        let mut g = [[[[T::ZERO; 4]; 4]; NC]; NC];
        jacobian_point::<T, P, D, NC, NA, NB, NV, AUXN>(row, |i| u[i], x, |i| a[i], time, |kk, v| {
            let [c, e, h, l] = jacobian_index::<D, NC>(kk);
            g[c][e][h][l] = v;
        });
        let basis = |h: usize, b: usize| at(row, 1 + b * (1 + D) + h);
        for c in 0..NC {
            for e in 0..NC {
                let gce = |h: usize, l: usize| g[c][e][h][l];
                if NC == 1 || !interleaved {
                    let block = &mut k[(c * NC + e) * NB * NB..];
                    fem_core::contract::add_point::<T, NB, 4, 1>(basis, gce, rows.clone(), cols.clone(), &mut scratch, block, NB);
                } else {
                    fem_core::contract::add_point::<T, NB, 4, NC>(basis, gce, rows.clone(), cols.clone(), &mut scratch, &mut k[c * n + e..], n * NC);
                }
            }
        }
    }
}

/// Runs `cell` over the cells of `out` (n_local values each) starting at
/// cell `first`, handing each its slices of the E-vectors.
#[inline(always)]
pub fn for_cells<T: Real>(
    first: usize,
    sizes: [usize; 4],
    u: &[T],
    x: &[T],
    a: &[T],
    out: &mut [T],
    mut cell: impl FnMut(&[T], &[T], &[T], &mut [T]),
) {
    let [nu, nx, na, no] = sizes;
    for (k, o) in out.chunks_exact_mut(no).enumerate() {
        let e = first + k;
        cell(&u[e * nu..(e + 1) * nu], &x[e * nx..(e + 1) * nx], &a[e * na..(e + 1) * na], o);
    }
}

/// Least common multiple, for the cell-block size.
pub const fn lcm(a: usize, b: usize) -> usize {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        let t = x % y;
        x = y;
        y = t;
    }
    a / x * b
}
