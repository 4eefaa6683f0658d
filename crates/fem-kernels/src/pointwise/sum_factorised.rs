//! Residuals and partial assembly's point data of a pointwise physics on
//! hexahedra by sum factorisation: the Q2-and-above variants with as many
//! Gauss points per direction as nodes (`N1`), on the CPU and the GPU.
//!
//! The element kernels tabulate every basis function at every point,
//! O(p⁶) work and table a cell; on the GPU their thread-transposition
//! blocks no longer fit shared memory past Q2, which left one thread per
//! cell (Q8: 1782 threads on an H100 took a second per residual). Here the
//! solution's components and the nodal auxiliary fields go to their values
//! and reference derivatives at the points by 1D contractions (O(p⁴) a
//! cell), the physics is evaluated at each point by the functions the
//! element kernels call ([`super::residual_at`],
//! [`super::partial::stored_at`]), and the
//! residual's fluxes are integrated back by the transposed contractions.
//! The CPU contracts whole arrays along each axis ([`cell_residual`],
//! [`cell_points`]); on the GPU one element takes an `N1 × N1` slab of
//! threads and shares the partial product's line contractions
//! ([`crate::device::lines`]).
//!
//! `tab` is `[B | D | points | weights]` ([`table_len`]): the 1D
//! matrices of the partial product (B: nodes to points, D:
//! differentiation at the points), then the 1D Gauss rule on \[−1, 1\].
//! The cells are trilinear (the geometry basis of hexahedra is Q1), so a
//! point's Jacobian comes from the cell's 24 corner values and the rule
//! along the thread's z-line ([`TrilinearLine`]: five 3-vectors a line),
//! in place of a table row of the vertex basis at every point, which cost
//! 33 reads and 96 multiply-adds a point.

#[cfg(target_arch = "nvptx64")]
use super::partial::point_len;
use super::partial::stored_at;
use super::{at as get, physical, residual_at};
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
#[cfg(target_arch = "nvptx64")]
use crate::device::lines::{at, element_work, field, from_points, to_points};
use fem_core::element::det_inv;
use fem_core::physics::{Physics, Point};
use fem_core::tensor::TrilinearLine;
#[cfg(target_arch = "nvptx64")]
use fem_core::unroll;
use fem_core::Real;

/// Values of the table of a variant with `n1` points per direction.
pub const fn table_len(n1: usize) -> usize {
    2 * n1 * n1 + 2 * n1
}

/// Fields a sum-factorised element holds: the solution's components and
/// the nodal auxiliary fields (cell-wise ones are read where used).
pub const fn fields(nc: usize, na: usize, nodal: bool) -> usize {
    nc + if nodal { na } else { 0 }
}

/// Fields the matrix-free action's element holds: the state's only where
/// the Jacobian reads it ([`fem_core::physics::Terms::g_reads_state`]),
/// the nodal auxiliary fields, then the direction's components.
pub const fn action_fields(nc: usize, na: usize, nodal: bool, reads_state: bool) -> usize {
    fields(nc, na, nodal) - if reads_state { 0 } else { nc } + nc
}

/// The 1D rule in `tab`: point `a` and its weight.
#[inline(always)]
fn rule<T: Real, const N1: usize>(tab: &[T], a: usize) -> (T, T) {
    (get(tab, 2 * N1 * N1 + a), get(tab, 2 * N1 * N1 + N1 + a))
}

/// The position, |J|·w and J⁻¹ at reference height `zeta` on `line`
/// with quadrature weight `w`.
#[inline(always)]
fn on_line<T: Real>(line: &TrilinearLine<T>, zeta: T, w: T) -> ([T; 3], T, [[T; 3]; 3]) {
    let (det, inv) = det_inv(&line.jacobian(zeta));
    (line.position(zeta), w * det, inv)
}

/// The cell's corners `x[v·3 + c]` (tensor order, as the geometry basis).
#[inline(always)]
fn corners<T: Real>(x: impl Fn(usize) -> T) -> [[T; 3]; 8] {
    core::array::from_fn(|v| core::array::from_fn(|c| x(v * 3 + c)))
}

/// The pointwise arguments, |J|·w and J⁻¹ at a point of a cell, from
/// its position, |J|·w and J⁻¹ (`geo`, [`on_line`]), the fields' values
/// and reference derivatives there (`field(m, h)`, m over the components,
/// then the nodal auxiliary fields) and the cell's cell-wise auxiliary
/// values `a`.
#[inline(always)]
fn point_at<T: Real, const NC: usize, const NA: usize, const AUXN: bool>(
    (pos, wdet, inv): ([T; 3], T, [[T; 3]; 3]),
    field: impl Fn(usize, usize) -> T,
    a: &[T],
    time: T,
) -> (Point<T, 3, NC, NA>, T, [[T; 3]; 3]) {
    let dref = |m: usize| -> [T; 3] { core::array::from_fn(|h| field(m, 1 + h)) };
    let (av, adref): ([T; NA], [[T; 3]; NA]) = if AUXN {
        (core::array::from_fn(|m| field(NC + m, 0)), core::array::from_fn(|m| dref(NC + m)))
    } else {
        (core::array::from_fn(|m| get(a, m)), [[T::ZERO; 3]; NA])
    };
    let udref: [[T; 3]; NC] = core::array::from_fn(dref);
    let p = Point { u: core::array::from_fn(|m| field(m, 0)), du: physical(&udref, &inv), a: av, da: physical(&adref, &inv), x: pos, t: time };
    (p, wdet, inv)
}

/// `dst = M src` along the axis of `stride` (1, N1 or N1², x fastest) of
/// an N1³ array, M the row-major `N1 × N1` matrix `m`, or its transpose
/// when `transposed`.
#[inline(always)]
fn along<T: Real, const N1: usize, const NQ: usize>(m: &[T], stride: usize, transposed: bool, src: &[T; NQ], dst: &mut [T; NQ]) {
    for (p, o) in dst.iter_mut().enumerate() {
        let c = p / stride % N1;
        let base = p - c * stride;
        let mut s = T::ZERO;
        for k in 0..N1 {
            let e = if transposed { get(m, k * N1 + c) } else { get(m, c * N1 + k) };
            s = e.mad(src[base + k * stride], s);
        }
        *o = s;
    }
}

/// Node values `v` to the value and three reference derivatives at the
/// points (B along x, y and z, then the collocation derivative D, left
/// out unless `derivatives`: the GPU's [`crate::device::lines`] rule).
#[inline(always)]
pub(crate) fn interpolate<T: Real, const N1: usize, const NQ: usize>(b: &[T], d: &[T], v: &[T; NQ], out: &mut [[T; NQ]; 4], derivatives: bool) {
    let mut t = [T::ZERO; NQ];
    along::<T, N1, NQ>(b, 1, false, v, &mut out[1]);
    along::<T, N1, NQ>(b, N1, false, &out[1], &mut t);
    along::<T, N1, NQ>(b, N1 * N1, false, &t, &mut out[0]);
    if !derivatives {
        out[1] = [T::ZERO; NQ];
        return;
    }
    let [u, rest @ ..] = out;
    for (a, o) in rest.iter_mut().enumerate() {
        along::<T, N1, NQ>(d, [1, N1, N1 * N1][a], false, u, o);
    }
}

/// The transpose of [`interpolate`]: point values and reference
/// derivatives `f` (the values alone unless `derivatives`) integrated
/// against the basis into node values.
#[inline(always)]
pub(crate) fn integrate<T: Real, const N1: usize, const NQ: usize>(b: &[T], d: &[T], f: &[[T; NQ]; 4], out: &mut [T; NQ], derivatives: bool) {
    let (mut acc, mut t) = (f[0], [T::ZERO; NQ]);
    for a in 0..3 * derivatives as usize {
        along::<T, N1, NQ>(d, [1, N1, N1 * N1][a], true, &f[1 + a], &mut t);
        acc.iter_mut().zip(&t).for_each(|(s, v)| *s += *v);
    }
    along::<T, N1, NQ>(b, N1 * N1, true, &acc, &mut t);
    along::<T, N1, NQ>(b, N1, true, &t, &mut acc);
    along::<T, N1, NQ>(b, 1, true, &acc, out);
}

/// Interpolates the element's fields to the points on the CPU (the
/// solution's components `u[n·NC + c]` when `state`, else zeros, then
/// the nodal auxiliary fields `a[n·NA + k]` when `AUXN`) and evaluates
/// `f(q, point, |J|·w, J⁻¹)` at every point `q`, z-line by z-line: each
/// line's geometry is built once, as the GPU's thread builds its own.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn each_point<T: Real, const NC: usize, const NA: usize, const NQ: usize, const AUXN: bool, const N1: usize>(
    tab: &[T],
    (u, state): (&[T], bool),
    x: &[T],
    a: &[T],
    time: T,
    mut f: impl FnMut(usize, &Point<T, 3, NC, NA>, T, &[[T; 3]; 3]),
) {
    let (b, d) = (&tab[..N1 * N1], &tab[N1 * N1..2 * N1 * N1]);
    let mut uq = [[[T::ZERO; NQ]; 4]; NC];
    if state {
        for (c, o) in uq.iter_mut().enumerate() {
            interpolate::<T, N1, NQ>(b, d, &core::array::from_fn(|n| u[n * NC + c]), o, true);
        }
    }
    let mut aq = [[[T::ZERO; NQ]; 4]; NA];
    if AUXN {
        for (k, o) in aq.iter_mut().enumerate() {
            interpolate::<T, N1, NQ>(b, d, &core::array::from_fn(|n| a[n * NA + k]), o, true);
        }
    }
    let xs = corners(|m| get(x, m));
    for (i, j) in (0..N1 * N1).map(|l| (l % N1, l / N1)) {
        let ((xi, wi), (eta, wj)) = (rule::<T, N1>(tab, i), rule::<T, N1>(tab, j));
        let line = TrilinearLine::new(&xs, xi, eta);
        for k in 0..N1 {
            let (q, (zeta, wk)) = ((k * N1 + j) * N1 + i, rule::<T, N1>(tab, k));
            let field = |m: usize, h: usize| if m < NC { uq[m][h][q] } else { aq[m - NC][h][q] };
            let (p, wdet, inv) = point_at::<T, NC, NA, AUXN>(on_line(&line, zeta, wi * wj * wk), field, a, time);
            f(q, &p, wdet, &inv);
        }
    }
}

/// The residual of one hexahedron on the CPU, `out[n·NC + c]` as
/// [`super::cell_residual`] writes it, from the table above.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn cell_residual<T: Real, P: Physics<T, 3, NC, NA>, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool, const N1: usize>(
    tab: &[T],
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    out: &mut [T],
) {
    // the fluxes at the points, zero where the physics has no such term
    let mut fq = [[[T::ZERO; NQ]; 4]; NC];
    each_point::<T, NC, NA, NQ, AUXN, N1>(tab, (u, true), x, a, time, |q, p, wdet, inv| {
        residual_at::<T, P, 3, NC, NA>(p, wdet, inv, |c, h, v| fq[c][h][q] = v);
    });
    let (b, d) = (&tab[..N1 * N1], &tab[N1 * N1..2 * N1 * N1]);
    let mut r = [T::ZERO; NQ];
    for (c, fc) in fq.iter().enumerate() {
        integrate::<T, N1, NQ>(b, d, fc, &mut r, P::TERMS.f1);
        for (n, v) in r.iter().enumerate() {
            out[n * NC + c] = *v;
        }
    }
}

/// Partial assembly's point data of one hexahedron on the CPU,
/// `out[j·NQ + q]` as [`super::partial::cell_points`] writes them.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn cell_points<T: Real, P: Physics<T, 3, NC, NA>, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool, const N1: usize>(
    tab: &[T],
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    out: &mut [T],
) {
    each_point::<T, NC, NA, NQ, AUXN, N1>(tab, (u, P::TERMS.g_reads_state), x, a, time, |q, p, wdet, inv| {
        stored_at::<T, P, 3, NC, NA>(p, wdet, inv, |j, v| out[j * NQ + q] = v);
    });
}

/// Loads the element's solution (when `state`; zeros at the points
/// otherwise, and no work arrays) and nodal auxiliary fields into their
/// work arrays `w` (from [`element_work`], whose 1D matrices are `b` and
/// `d`), then `extra` more fields after them (`load(e, node, m)` the
/// value of extra field m at the element's node, in the work fields
/// after the others; with their derivatives only if `extra_derivatives`),
/// interpolates them all to the points and
/// evaluates `f(n, e, q, point, |J|·w, J⁻¹)` at each point of the
/// thread's z-column (`n` the work-array offset, `e` the element, `q` the
/// point's index in the variant's rule); whether the thread's element
/// exists, with a barrier passed. The geometry of the column comes from
/// the cell's corners once ([`TrilinearLine`]), each point's from its
/// height on it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn at_points<T: Real, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool, const N1: usize>(
    n_cells: usize,
    (w, b, d): (*mut T, impl Fn(usize, usize) -> T + Copy, impl Fn(usize, usize) -> T + Copy),
    tab: *const T,
    u: *const T,
    x: *const T,
    a: *const T,
    time: T,
    state: bool,
    (extra, load, extra_derivatives): (usize, impl Fn(usize, usize, usize) -> T, bool),
    mut f: impl FnMut(usize, usize, usize, &Point<T, 3, NC, NA>, T, &[[T; 3]; 3]),
) -> bool {
    // work field of field m (components, nodal auxiliary fields, extra)
    let s0 = if state { 0 } else { NC };
    let nw = fields(NC, NA, AUXN) - s0 + extra;
    let t = thread_idx_x();
    let (i, j) = (t % N1, t / N1);
    let e = block_idx_x() * block_dim_y() + thread_idx_y();
    let live = e < n_cells;
    if live {
        for k in 0..N1 {
            let (n, node) = (at::<N1>(k, j, i), (k * N1 + j) * N1 + i);
            if state {
                for c in 0..NC {
                    *field::<T, N1>(w, c, 0).add(n) = *u.add((e * NB + node) * NC + c);
                }
            }
            if AUXN {
                for m in 0..NA {
                    *field::<T, N1>(w, NC - s0 + m, 0).add(n) = *a.add((e * NB + node) * NA + m);
                }
            }
            for m in 0..extra {
                *field::<T, N1>(w, nw - extra + m, 0).add(n) = load(e, node, m);
            }
        }
    }
    barrier();
    for m in 0..nw {
        to_points::<T, N1>(w, m, b, d, m < nw - extra || extra_derivatives);
    }
    barrier();
    if live {
        let tab = core::slice::from_raw_parts(tab, table_len(N1));
        let xs = corners(|m| *x.add(e * NV * 3 + m));
        let ((xi, wi), (eta, wj)) = (rule::<T, N1>(tab, i), rule::<T, N1>(tab, j));
        let line = TrilinearLine::new(&xs, xi, eta);
        let ac = if AUXN { &[][..] } else { core::slice::from_raw_parts(a.add(e * NA), NA) };
        for k in 0..N1 {
            let (n, q) = (at::<N1>(k, j, i), (k * N1 + j) * N1 + i);
            let (zeta, wk) = rule::<T, N1>(tab, k);
            let field = |m: usize, h: usize| if m < s0 { T::ZERO } else { *field::<T, N1>(w, m - s0, h).add(n) };
            let (p, wdet, inv) = point_at::<T, NC, NA, AUXN>(on_line(&line, zeta, wi * wj * wk), field, ac, time);
            f(n, e, q, &p, wdet, &inv);
        }
    }
    barrier();
    live
}

/// Element residuals of `n_cells` hexahedra, `out[cell·NB·NC + b·NC + c]`
/// as [`super::cell_residual`] writes them; launched with `N1 × N1 ×
/// epb` threads and the shared memory of
/// [`super::partial::shared_len`]`(N1, fields, epb)`.
///
/// # Safety
/// Every pointer covers `n_cells` cells of its E-vector layout and `tab`
/// the layout above.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn residual<T: Real, P: Physics<T, 3, NC, NA>, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool, const N1: usize>(
    n_cells: usize,
    _batches: usize,
    tab: *const T,
    u: *const T,
    x: *const T,
    a: *const T,
    out: *mut T,
    time: T,
) {
    let (w, [b, d]) = element_work::<T, N1>(tab, fields(NC, NA, AUXN));
    let live = at_points::<T, NC, NA, NB, NV, NQ, AUXN, N1>(n_cells, (w, b, d), tab, u, x, a, time, true, (0, |_, _, _| T::ZERO, false), |n, _, _, p, wdet, inv| {
        let mut v = [[T::ZERO; 4]; NC];
        residual_at::<T, P, 3, NC, NA>(p, wdet, inv, |c, h, f| v[c][h] = f);
        for (c, vc) in v.iter().enumerate() {
            unroll::<4>(|h| *field::<T, N1>(w, c, h).add(n) = vc[h]);
        }
    });
    let t = thread_idx_x();
    let (i, j) = (t % N1, t / N1);
    let e = block_idx_x() * block_dim_y() + thread_idx_y();
    for c in 0..NC {
        from_points::<T, N1>(w, c, b, d, P::TERMS.f1);
        if live {
            unroll::<N1>(|k| *out.add((e * NB + (k * N1 + j) * N1 + i) * NC + c) = *field::<T, N1>(w, c, 0).add(at::<N1>(k, j, i)));
        }
    }
}

/// Partial assembly's point data ([`super::partial::point_values`]) of
/// `n_cells` hexahedra, `out[cell][j][q]` (point fastest); launched as
/// [`residual`].
///
/// # Safety
/// As [`residual`], with `out` covering the point data of every cell.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn points<T: Real, P: Physics<T, 3, NC, NA>, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool, const N1: usize>(
    n_cells: usize,
    _batches: usize,
    tab: *const T,
    u: *const T,
    x: *const T,
    a: *const T,
    out: *mut T,
    time: T,
) {
    let len = point_len(3, NC, P::TERMS);
    let (w, [b, d]) = element_work::<T, N1>(tab, fields(NC, NA, AUXN));
    at_points::<T, NC, NA, NB, NV, NQ, AUXN, N1>(n_cells, (w, b, d), tab, u, x, a, time, P::TERMS.g_reads_state, (0, |_, _, _| T::ZERO, false), |_, e, q, p, wdet, inv| {
        let o = out.add(e * len * NQ + q);
        stored_at::<T, P, 3, NC, NA>(p, wdet, inv, |jj, v| *o.add(jj * NQ) = v);
    });
}
