//! Boundary terms of a pointwise physics: ∫_Γ φ·bf0(u, ∇u, a, ∇a, x, n)
//! over chosen boundary facets, and its element matrices from bg0 and
//! bg1, evaluated from the facet's cell (so ∇u is the cell's gradient
//! there) and added into the cell's rows: boundary terms share the cells'
//! gather, scatter and matrix pattern.
//!
//! One thread (on the CPU, one loop iteration) per facet: boundary facets
//! are a thin set, O(n^((d−1)/d)) of the cells, so their work does not
//! call for thread transposition. The CPU and the GPU run the same
//! per-facet functions ([`facet_residual`], [`facet_jacobian`]).
//!
//! Table layout (built by the host): per local facet l of the reference
//! cell, `NQF` rows of the cell table's layout ([`row_len`]) at the facet
//! rule's points mapped into the cell, whose weight already holds the
//! facet map's measure; then the reference outward unit normals, D values
//! per local facet. By Nanson's formula the physical normal is J⁻ᵀn̂
//! normalised and the surface element |det J|·|J⁻ᵀn̂| times the
//! reference one. Facet data are E-vectors of the facets' cells and the
//! local facet number of each.

use super::{at, point, pull, row_len};
use fem_core::physics::{Physics, Point};
use fem_core::{unroll, Real};

/// Length of the facet table of a variant with `nf` local facets and
/// `nqf` points per facet.
pub const fn facet_table_len(d: usize, nb: usize, nv: usize, nf: usize, nqf: usize) -> usize {
    nf * nqf * row_len(d, nb, nv) + nf * d
}

/// The pointwise arguments at facet point `q` of local facet `local`, the
/// outward unit normal, w·dS and J⁻¹.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub fn facet_point<T: Real, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQF: usize, const NF: usize, const AUXN: bool>(
    tab: &[T],
    local: usize,
    q: usize,
    u: impl Fn(usize) -> T,
    x: &[T],
    aux: impl Fn(usize) -> T,
    time: T,
) -> (Point<T, D, NC, NA>, [T; D], T, [[T; D]; D]) {
    let stride = row_len(D, NB, NV);
    let row = &tab[(local * NQF + q) * stride..][..stride];
    let normals = NF * NQF * stride + local * D;
    let (p, wdet, inv) = point::<T, D, NC, NA, NB, NV, AUXN>(row, u, x, aux, time);
    let mut m = [T::ZERO; D];
    for (a, ma) in m.iter_mut().enumerate() {
        for e in 0..D {
            *ma = inv[e][a].mad(at(tab, normals + e), *ma);
        }
    }
    let mut len = T::ZERO;
    for v in &m {
        len = v.mad(*v, len);
    }
    let len = len.sqrt();
    let n = core::array::from_fn(|a| m[a] / len);
    (p, n, wdet.abs() * len, inv)
}

/// Calls `each(row, point, n, w·dS, J⁻¹)` at every facet point of local
/// facet `local`, `row` the offset of the point's basis values in `tab`.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn points<T: Real, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQF: usize, const NF: usize, const AUXN: bool>(
    tab: &[T],
    local: usize,
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    mut each: impl FnMut(usize, &Point<T, D, NC, NA>, &[T; D], T, &[[T; D]; D]),
) {
    for q in 0..NQF {
        let (p, n, ws, inv) = facet_point::<T, D, NC, NA, NB, NV, NQF, NF, AUXN>(tab, local, q, |i| u[i], x, |i| a[i], time);
        each((local * NQF + q) * row_len(D, NB, NV) + 1, &p, &n, ws, &inv);
    }
}

/// The boundary residual of one facet: `out[b·NC + c]` = Σ_q w dS φ_b bf0_c.
#[inline(always)]
pub fn facet_residual<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQF: usize, const NF: usize, const AUXN: bool>(
    tab: &[T],
    local: usize,
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    out: &mut [T],
) {
    out[..NB * NC].fill(T::ZERO);
    points::<T, D, NC, NA, NB, NV, NQF, NF, AUXN>(tab, local, u, x, a, time, |row, p, n, ws, _| {
        let f = P::bf0(p, n);
        for b in 0..NB {
            let phi = at(tab, row + b * (1 + D)) * ws;
            for c in 0..NC {
                out[b * NC + c] = phi.mad(f[c], out[b * NC + c]);
            }
        }
    });
}

/// bg0 and bg1 at one facet point, bg1 pulled back to reference
/// derivatives, both times w dS: `h[c][e][k]`, k = 0 bg0's, 1..=D bg1's
/// (the slots past D zero). The element matrices and the point data are
/// both made of these.
#[inline(always)]
fn linearised<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize>(p: &Point<T, D, NC, NA>, nrm: &[T; D], ws: T, inv: &[[T; D]; D]) -> [[[T; 4]; NC]; NC] {
    let t = P::TERMS.bg;
    let g0 = if t[0] { P::bg0(p, nrm) } else { [[T::ZERO; NC]; NC] };
    let g1 = if t[1] { P::bg1(p, nrm) } else { [[[T::ZERO; D]; NC]; NC] };
    core::array::from_fn(|c| core::array::from_fn(|e| core::array::from_fn(|k| if k == 0 { g0[c][e] * ws } else if k <= D { pull(&g1[c][e], inv, k - 1) * ws } else { T::ZERO })))
}

/// The boundary element matrix of one facet, row-major n² (n = NB·NC):
/// entry (b·NC + c, b'·NC + e) = Σ_q w dS φ_b (bg0[c][e] φ_b' + bg1[c][e]·∇φ_b').
#[inline(always)]
pub fn facet_jacobian<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQF: usize, const NF: usize, const AUXN: bool>(
    tab: &[T],
    local: usize,
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    out: &mut [T],
) {
    let n = NB * NC;
    out[..n * n].fill(T::ZERO);
    points::<T, D, NC, NA, NB, NV, NQF, NF, AUXN>(tab, local, u, x, a, time, |row, p, nrm, ws, inv| {
        let h = linearised::<T, P, D, NC, NA>(p, nrm, ws, inv);
        for b in 0..NB {
            let phi = at(tab, row + b * (1 + D));
            for bj in 0..NB {
                for c in 0..NC {
                    for e in 0..NC {
                        let mut s = T::ZERO;
                        for k in 0..=D {
                            s = at(tab, row + bj * (1 + D) + k).mad(h[c][e][k], s);
                        }
                        let i = (b * NC + c) * n + bj * NC + e;
                        out[i] = phi.mad(s, out[i]);
                    }
                }
            }
        }
    });
}

/// Values of one facet's point data ([`facet_points`]): the NC × NC
/// blocks of bg0 and bg1 (D + 1 values each) at each of its `nqf` points.
pub const fn facet_point_len(d: usize, nc: usize, nqf: usize) -> usize {
    nqf * nc * nc * (d + 1)
}

/// The boundary term's linearisation kept by its points, as partial
/// assembly keeps the cells': `out[((q·NC + c)·NC + e)·(D + 1) + k]` =
/// `h[c][e][k]` of [`linearised`] at facet point q. Its products
/// ([`FacetShape::action`], [`FacetShape::test`], [`FacetShape::diagonal`])
/// read these and the facet table, not the physics: they run at run-time
/// sizes, one kernel for every physics.
#[inline(always)]
pub fn facet_points<T: Real, P: Physics<T, D, NC, NA>, const D: usize, const NC: usize, const NA: usize, const NB: usize, const NV: usize, const NQF: usize, const NF: usize, const AUXN: bool>(
    tab: &[T],
    local: usize,
    u: &[T],
    x: &[T],
    a: &[T],
    time: T,
    out: &mut [T],
) {
    let mut q = 0;
    points::<T, D, NC, NA, NB, NV, NQF, NF, AUXN>(tab, local, u, x, a, time, |_, p, nrm, ws, inv| {
        let h = linearised::<T, P, D, NC, NA>(p, nrm, ws, inv);
        for (c, hc) in h.iter().enumerate() {
            for (e, hce) in hc.iter().enumerate() {
                out[((q * NC + c) * NC + e) * (D + 1)..][..=D].copy_from_slice(&hce[..=D]);
            }
        }
        q += 1;
    });
}

/// The sizes a facet's point data and the facet table have, read at run
/// time by the products of [`facet_points`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FacetShape {
    /// Dimension of the cells.
    pub d: usize,
    /// Basis functions of a cell.
    pub nb: usize,
    /// Field components.
    pub nc: usize,
    /// Points of a facet.
    pub nqf: usize,
    /// Vertices of a cell (the table's rows hold their basis too).
    pub nv: usize,
}

impl FacetShape {
    /// Values of a facet's E-vector: its cell's.
    pub const fn n_local(&self) -> usize {
        self.nb * self.nc
    }

    /// Values of a facet's point data.
    pub const fn point_len(&self) -> usize {
        facet_point_len(self.d, self.nc, self.nqf)
    }

    /// Offset in the facet table of the basis values at point `q` of
    /// local facet `local` (as [`points`] hands them).
    fn row(&self, local: usize, q: usize) -> usize {
        (local * self.nqf + q) * row_len(self.d, self.nb, self.nv) + 1
    }

    /// Component `c` of the point data applied at point `q` of a facet
    /// (local number `local`, point data `h`) to its E-vector entries
    /// `x(b·nc + e)`: Σ_{e,k} h[q][c][e][k] ∂_k x_e(q), k = 0 the value.
    #[inline(always)]
    pub fn action<T: Real>(&self, tab: &[T], local: usize, q: usize, c: usize, h: &[T], x: impl Fn(usize) -> T) -> T {
        let (row, d, nc) = (self.row(local, q), self.d, self.nc);
        let mut s = T::ZERO;
        for e in 0..nc {
            // unrolled to the largest d, so that v stays in registers
            let mut v = [T::ZERO; 4];
            for b in 0..self.nb {
                let xb = x(b * nc + e);
                unroll::<4>(|k| {
                    if k <= d {
                        v[k] = at(tab, row + b * (1 + d) + k).mad(xb, v[k]);
                    }
                });
            }
            let hce = ((q * nc + c) * nc + e) * (d + 1);
            unroll::<4>(|k| {
                if k <= d {
                    s = at(h, hce + k).mad(v[k], s);
                }
            });
        }
        s
    }

    /// Entry `i` = b·nc + c of a facet's product: Σ_q φ_b(q) t[q·nc + c],
    /// `t` its [`Self::action`]s.
    #[inline(always)]
    pub fn test<T: Real>(&self, tab: &[T], local: usize, i: usize, t: &[T]) -> T {
        let (b, c, nc) = (i / self.nc, i % self.nc, self.nc);
        let mut s = T::ZERO;
        for q in 0..self.nqf {
            s = at(tab, self.row(local, q) + b * (1 + self.d)).mad(at(t, q * nc + c), s);
        }
        s
    }

    /// Diagonal entry `i` = b·nc + c of a facet's element matrix from its
    /// point data `h`: Σ_q φ_b(q) Σ_k h[q][c][c][k] ∂_k φ_b(q).
    #[inline(always)]
    pub fn diagonal<T: Real>(&self, tab: &[T], local: usize, i: usize, h: &[T]) -> T {
        let (b, c, d, nc) = (i / self.nc, i % self.nc, self.d, self.nc);
        let mut s = T::ZERO;
        for q in 0..self.nqf {
            let at_b = self.row(local, q) + b * (1 + d);
            let hcc = ((q * nc + c) * nc + c) * (d + 1);
            let mut r = T::ZERO;
            for k in 0..=d {
                r = at(h, hcc + k).mad(at(tab, at_b + k), r);
            }
            s = at(tab, at_b).mad(r, s);
        }
        s
    }
}

/// Runs `facet` over the facets of `out` (`no` values each) starting at
/// facet `first`, handing each its local number and E-vector slices.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn for_facets<T: Real>(
    first: usize,
    sizes: [usize; 4],
    local: &[u32],
    u: &[T],
    x: &[T],
    a: &[T],
    out: &mut [T],
    mut facet: impl FnMut(usize, &[T], &[T], &[T], &mut [T]),
) {
    let [nu, nx, na, no] = sizes;
    for (k, o) in out.chunks_exact_mut(no).enumerate() {
        let e = first + k;
        facet(local[e] as usize, &u[e * nu..(e + 1) * nu], &x[e * nx..(e + 1) * nx], &a[e * na..(e + 1) * na], o);
    }
}

/// The GPU loop: one thread per facet over a 1D grid of any size.
///
/// # Safety
/// `tab` holds the facet table, `local` `n` local numbers, `u`, `x`, `a`
/// the facets' E-vectors (`sizes[0..3]` values each) and `out`
/// `sizes[3]` values per facet.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn on_gpu<T: Real>(
    n: usize,
    tab_len: usize,
    sizes: [usize; 4],
    tab: *const T,
    local: *const u32,
    u: *const T,
    x: *const T,
    a: *const T,
    out: *mut T,
    facet: impl Fn(&[T], usize, &[T], &[T], &[T], &mut [T]),
) {
    let [nu, nx, na, no] = sizes;
    let tab = core::slice::from_raw_parts(tab, tab_len);
    let mut f = crate::device::global_idx_x();
    while f < n {
        facet(
            tab,
            *local.add(f) as usize,
            core::slice::from_raw_parts(u.add(f * nu), nu),
            core::slice::from_raw_parts(x.add(f * nx), nx),
            core::slice::from_raw_parts(a.add(f * na), na),
            core::slice::from_raw_parts_mut(out.add(f * no), no),
        );
        f += crate::device::grid_size_x();
    }
}
