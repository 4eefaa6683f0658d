//! The matrix-free action of a pointwise physics' Jacobian on hexahedra
//! with (p + 1)³ Gauss points, degree 1 and up: `y = J(u) x` with nothing
//! stored between products but the state `u`. Per cell the state and the
//! direction go to the points by the sum-factorised contractions of
//! [`super::sum_factorised`], the linearised fluxes are evaluated there
//! from the physics' g0..g3 ([`action_at`]) and integrated back.
//!
//! Partial assembly stores those g0..g3, pulled back, at every point
//! (NC²·blocks values: 9 a point for the Laplacian, 81 for elasticity) and
//! reads them at every product; here each product recomputes them from
//! the state, the vertices and the auxiliary fields, which a hexahedron
//! holds in NC + NA values a node and 24 a cell. The product does more
//! arithmetic and reads fewer bytes, and the tangent takes no memory
//! beyond the state: the level for problems whose point data would not
//! fit, and for physics whose g0..g3 cost little beside the contractions.

use super::sum_factorised::{each_point, integrate, interpolate};
#[cfg(target_arch = "nvptx64")]
use super::sum_factorised::{action_fields, at_points};
use super::{physical, pull};
#[cfg(target_arch = "nvptx64")]
use crate::device::lines::{at, element_work, field, from_points};
#[cfg(target_arch = "nvptx64")]
use crate::device::*;
use super::partial::{gets_derivatives, gives_derivatives};
use fem_core::physics::{Physics, Point};
#[cfg(target_arch = "nvptx64")]
use fem_core::unroll;
use fem_core::Real;

/// A map entry that is neither read nor written (a held row or column).
#[cfg(target_arch = "nvptx64")]
const NONE: u32 = u32::MAX;

/// The linearised fluxes at one point, handed to `put(c, h, value)` as
/// [`super::residual_at`] hands the residual's: with `v` the direction's
/// values and `dv` its physical gradients there, `f0'_c = Σ_e g0_ce v_e +
/// g1_ce·∇v_e` and `f1'_c = Σ_e g2_ce v_e + g3_ce ∇v_e`, pulled back to
/// reference derivatives and scaled by |J|·w.
#[inline(always)]
pub fn action_at<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize>(
    p: &Point<T, D, NC, NA>,
    wdet: T,
    inv: &[[T; D]; D],
    (v, dv): (&[T; NC], &[[T; D]; NC]),
    mut put: impl FnMut(usize, usize, T),
) {
    let t = P::TERMS.g;
    let mut f0 = [T::ZERO; NC];
    let mut f1 = [[T::ZERO; D]; NC];
    if t[0] {
        let g0 = P::g0(p);
        for c in 0..NC {
            for e in 0..NC {
                f0[c] = g0[c][e].mad(v[e], f0[c]);
            }
        }
    }
    if t[1] {
        let g1 = P::g1(p);
        for c in 0..NC {
            for e in 0..NC {
                for k in 0..D {
                    f0[c] = g1[c][e][k].mad(dv[e][k], f0[c]);
                }
            }
        }
    }
    if t[2] {
        let g2 = P::g2(p);
        for c in 0..NC {
            for e in 0..NC {
                for d in 0..D {
                    f1[c][d] = g2[c][e][d].mad(v[e], f1[c][d]);
                }
            }
        }
    }
    if t[3] {
        let g3 = P::g3(p);
        for c in 0..NC {
            for e in 0..NC {
                for d in 0..D {
                    for k in 0..D {
                        f1[c][d] = g3[c][e][d][k].mad(dv[e][k], f1[c][d]);
                    }
                }
            }
        }
    }
    for c in 0..NC {
        if t[0] || t[1] {
            put(c, 0, f0[c] * wdet);
        }
        if t[2] || t[3] {
            for e in 0..D {
                put(c, 1 + e, pull(&f1[c], inv, e) * wdet);
            }
        }
    }
}

/// `out = J_cell(u) dir` of one hexahedron on the CPU, E-vectors of the
/// cell (`[n·NC + c]`), `tab` the sum-factorised table
/// ([`super::sum_factorised`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn cell_action<T: Real, P: Physics<T, 3, NC, NA>, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool, const N1: usize>(
    tab: &[T],
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    dir: &[T],
    out: &mut [T],
) {
    let (b, d) = (&tab[..N1 * N1], &tab[N1 * N1..2 * N1 * N1]);
    let mut dq = [[[T::ZERO; NQ]; 4]; NC];
    for (c, o) in dq.iter_mut().enumerate() {
        interpolate::<T, N1, NQ>(b, d, &core::array::from_fn(|n| dir[n * NC + c]), o, gets_derivatives(P::TERMS));
    }
    let mut fq = [[[T::ZERO; NQ]; 4]; NC];
    each_point::<T, NC, NA, NQ, AUXN, N1>(tab, (u, P::TERMS.g_reads_state), x, a, time, |q, p, wdet, inv| {
        let v: [T; NC] = core::array::from_fn(|c| dq[c][0][q]);
        let dref: [[T; 3]; NC] = core::array::from_fn(|c| core::array::from_fn(|h| dq[c][1 + h][q]));
        action_at::<T, P, 3, NC, NA>(p, wdet, inv, (&v, &physical(&dref, inv)), |c, h, f| fq[c][h][q] = f);
    });
    let mut r = [T::ZERO; NQ];
    for (c, fc) in fq.iter().enumerate() {
        integrate::<T, N1, NQ>(b, d, fc, &mut r, gives_derivatives(P::TERMS));
        for (n, v) in r.iter().enumerate() {
            out[n * NC + c] = *v;
        }
    }
}

/// `y += (I − F) J(u) (I − F) x` over `n_cells` hexahedra on L-vectors,
/// F the held entries (`map` = `u32::MAX`), `map` taking E-vector entries
/// (`(cell·NB + node)·NC + c`) to rows of `x` and `y`; `u`, `x`, `a` the
/// state's and the cells' E-vectors as the residual takes them. Launched
/// as [`super::sum_factorised::residual`], with the shared memory of
/// [`super::partial::shared_len`]`(N1, `[`action_fields`]`, epb)`: the
/// direction's components are interpolated beside the state's, whose
/// are left out where the Jacobian does not read them.
///
/// # Safety
/// Every pointer covers `n_cells` cells of its layout, `xin` and `y` every
/// row `map` names.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn action<T: Real, P: Physics<T, 3, NC, NA>, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQ: usize, const AUXN: bool, const N1: usize>(
    n_cells: usize,
    tab: *const T,
    map: *const u32,
    u: *const T,
    x: *const T,
    a: *const T,
    xin: *const T,
    y: *mut T,
    time: T,
) {
    let state = P::TERMS.g_reads_state;
    // the direction's first work field
    let nf = action_fields(NC, NA, AUXN, state) - NC;
    let (w, [b, d]) = element_work::<T, N1>(tab, nf + NC);
    let load = |e: usize, node: usize, c: usize| {
        let r = *map.add((e * NB + node) * NC + c);
        if r == NONE {
            T::ZERO
        } else {
            *xin.add(r as usize)
        }
    };
    let live = at_points::<T, NC, NA, NB, NV, NQ, AUXN, N1>(n_cells, (w, b, d), tab, u, x, a, time, state, (NC, load, gets_derivatives(P::TERMS)), |n, _, _, p, wdet, inv| {
        let v: [T; NC] = core::array::from_fn(|c| *field::<T, N1>(w, nf + c, 0).add(n));
        let dref: [[T; 3]; NC] = core::array::from_fn(|c| core::array::from_fn(|h| *field::<T, N1>(w, nf + c, 1 + h).add(n)));
        let mut f = [[T::ZERO; 4]; NC];
        action_at::<T, P, 3, NC, NA>(p, wdet, inv, (&v, &physical(&dref, inv)), |c, h, val| f[c][h] = val);
        for (c, fc) in f.iter().enumerate() {
            unroll::<4>(|h| *field::<T, N1>(w, nf + c, h).add(n) = fc[h]);
        }
    });
    let t = thread_idx_x();
    let (i, j) = (t % N1, t / N1);
    let e = block_idx_x() * block_dim_y() + thread_idx_y();
    for c in 0..NC {
        from_points::<T, N1>(w, nf + c, b, d, gives_derivatives(P::TERMS));
        if live {
            unroll::<N1>(|k| {
                let r = *map.add((e * NB + (k * N1 + j) * N1 + i) * NC + c);
                if r != NONE {
                    atomic_add(y.add(r as usize), *field::<T, N1>(w, nf + c, 0).add(at::<N1>(k, j, i)));
                }
            });
        }
    }
}
