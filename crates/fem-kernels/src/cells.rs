//! Per-cell operations of the Poisson operator, shared by the CPU and the
//! GPU: element assembly into the LMA layout and the matrix-free product,
//! which recomputes the element matrix in every application (Reguly &
//! Giles §3.4, §9).
//!
//! `NB` is the number of basis functions per cell, `QD` the length of the
//! local-reuse point data (nq^D × (D(D+1)/2 + 1)); both are constants of
//! each specialisation, so local arrays live in registers where they fit.

use crate::sparse::{is_free, sym_index, FIXED, NONE};
use fem_core::contract::{add_rows, mirror_upper};
use fem_core::element::{Tables, MAX_VERTICES};
use fem_core::poisson::{self, Coefficients};
use fem_core::Real;

/// Vertices of cell `e` from the transposed coordinate array
/// `xv[(k * D + a) * ne + e]`.
///
/// # Safety
/// `xv` holds `2^D × D × ne` values.
#[inline(always)]
pub unsafe fn vertices<T: Real, const D: usize>(e: usize, ne: usize, xv: *const T) -> [[T; D]; MAX_VERTICES] {
    let mut v = [[T::ZERO; D]; MAX_VERTICES];
    for (k, vk) in v.iter_mut().enumerate().take(1 << D) {
        for (a, x) in vk.iter_mut().enumerate() {
            *x = *xv.add((k * D + a) * ne + e);
        }
    }
    v
}

/// Entry `t` of the transposed element-to-row map of `ne` cells of `nb`
/// nodes (`map[i·ne + e]`, node `i` of cell `e`): the node's row from the
/// cells' rows `rows[e·nb + i]` ([`NONE`] where eliminated), flagged
/// [`FIXED`] where `fixed[row]` is nonzero.
///
/// # Safety
/// `rows` holds `nb·ne` entries, `fixed` one per row they name, `t < nb·ne`.
#[inline(always)]
pub unsafe fn map_entry(t: usize, ne: usize, nb: usize, rows: *const u32, fixed: *const u8) -> u32 {
    let r = *rows.add(t % ne * nb + t / ne);
    if r != NONE && *fixed.add(r as usize) != 0 {
        r | FIXED
    } else {
        r
    }
}

/// Entry `t` of the transposed vertex coordinates of `ne` cells in `dim`
/// dimensions (`[(k·dim + a)·ne + e]`, what [`vertices`] reads) from the
/// mesh's vertices `coords[v·3 + a]` and each cell's corners
/// `corners[e·2^dim + k]`.
///
/// # Safety
/// `corners` holds `2^dim·ne` ids of vertices in `coords`, `t < 2^dim·dim·ne`.
#[inline(always)]
pub unsafe fn vertex_entry(t: usize, ne: usize, dim: usize, corners: *const u32, coords: *const f64) -> f64 {
    let (e, ka) = (t % ne, t / ne);
    let v = *corners.add((e << dim) + ka / dim) as usize;
    *coords.add(v * 3 + ka % dim)
}

/// Entry `t` of a physics' cell data gathered from values per node: `per`
/// values (`nodal[node·per + k]`) of each of a cell's picked local nodes
/// `picks` (`[e][i][k]`, `n_picks` a cell), the node of local node `b` of
/// cell `e` read from the gather map of an `nc`-component field on `nb`
/// nodes a cell (`map[(e·nb + b)·nc] / nc`). The vertices' coordinates
/// (picks: the corners) and a nodal field's E-vector (picks: every node)
/// made from what the space holds once per node, where E-vectors hold it
/// once per cell and node.
///
/// # Safety
/// `picks` holds `n_picks` local nodes below `nb`; `map` the gather map
/// of the cells `t` reaches; `nodal` `per` values of every node it names.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn picked_node_entry(t: usize, per: usize, n_picks: usize, picks: *const u32, nb: usize, nc: usize, map: *const u32, nodal: *const f64) -> f64 {
    let (slot, k) = (t / per, t % per);
    let (e, i) = (slot / n_picks, slot % n_picks);
    let node = *map.add((e * nb + *picks.add(i) as usize) * nc) as usize / nc;
    *nodal.add(node * per + k)
}

/// Whether local entry (i, j) enters the matrix: both rows exist and are free.
#[inline(always)]
pub fn couples(rows: &[u32], i: usize, j: usize) -> bool {
    is_free(rows[i]) && is_free(rows[j])
}

/// What [`node_entry`] picks of a cell's E-vector for its node `i`.
pub mod node_entries {
    /// The node's own value (a load vector).
    pub const VALUE: usize = 0;
    /// The diagonal entry (i, i) of a full element matrix.
    pub const DIAGONAL: usize = 1;
    /// The diagonal entry (i, i) of a packed upper triangle.
    pub const PACKED_DIAGONAL: usize = 2;
}

/// Index, among a cell's `nb` node values or `nb²` (or packed `nb(nb+1)/2`)
/// matrix entries, of what `WHAT` ([`node_entries`]) picks for node `i`.
#[inline(always)]
pub const fn node_entry<const WHAT: usize>(i: usize, nb: usize) -> usize {
    match WHAT {
        node_entries::VALUE => i,
        node_entries::DIAGONAL => i * nb + i,
        _ => sym_index(i, i, nb),
    }
}

/// Local assembly strategy: per-point data reused, or recomputed per entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Local reuse: the per-point data are computed once per cell into
    /// scratch, then every entry is a sum over points.
    Reuse,
    /// Redundant compute: every entry recomputes the geometry at every
    /// point, so registers do not grow with the degree.
    Redundant,
}

/// Computes cell `e`'s element matrix and load vector and writes them in the
/// transposed LMA layout (`SYM`: packed upper triangle). Entries that do not
/// couple are written as zero. Returns the smallest Jacobian determinant
/// seen (for the reuse strategy; +∞ otherwise).
///
/// # Safety
/// `vals` holds `ld × NB²` (or `ld × NB(NB+1)/2`) values, `load` `ld × NB`,
/// `ld` (the plane stride, at least the cell count) apart.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn assemble<T: Real, C: Coefficients<T, D>, const D: usize, const NB: usize, const QD: usize, const SYM: bool>(
    e: usize,
    ld: usize,
    tab: &Tables<'_, T>,
    verts: &[[T; D]; MAX_VERTICES],
    coeff: &C,
    rows: &[u32; NB],
    strategy: Strategy,
    vals: *mut T,
    load: *mut T,
) -> T {
    let mut data = [T::ZERO; QD];
    let min_det = match strategy {
        Strategy::Reuse => poisson::point_data(tab, verts, coeff, &mut data),
        Strategy::Redundant => T::from_f64(f64::INFINITY),
    };
    for i in 0..NB {
        let free_i = is_free(rows[i]);
        let l = if !free_i {
            T::ZERO
        } else if strategy == Strategy::Reuse {
            poisson::load_reuse::<T, D>(tab, &data, i)
        } else {
            poisson::load_redundant(tab, verts, coeff, i)
        };
        *load.add(i * ld + e) = l;
        for j in i..NB {
            let k = if !couples(rows, i, j) {
                T::ZERO
            } else if strategy == Strategy::Reuse {
                poisson::stiffness_reuse::<T, D>(tab, &data, i, j)
            } else {
                poisson::stiffness_redundant(tab, verts, coeff, i, j)
            };
            if SYM {
                *vals.add(sym_index(i, j, NB) * ld + e) = k;
            } else {
                *vals.add((i * NB + j) * ld + e) = k;
                *vals.add((j * NB + i) * ld + e) = k;
            }
        }
    }
    min_det
}

/// Points per block of [`element_cpu`]: the block's `G B` rows (8 × D × NB
/// values, 26 KB for 3D Q4) stay in the first-level cache.
const POINT_BLOCK: usize = 8;

/// The cell map at every quadrature point, point fastest, for loops that
/// run across the points: `shape[(v·(D + 1) + m)·nq + q]` is vertex `v`'s
/// shape function (m = 0) or its derivative `m − 1` at
/// point `q`, `weight[q]` the point's weight.
#[derive(Clone, Copy)]
pub struct MapTables<'a, T> {
    /// Shape functions and derivatives, as above.
    pub shape: &'a [T],
    /// Quadrature weight of each point.
    pub weight: &'a [T],
}

/// [`poisson::point_data`] by component, point fastest (`data[m·nq + q]`,
/// the metric's upper triangle then the load), computed across the
/// points: `x` and `J` as axpys of the vertices' coordinates over the
/// points ([`MapTables`]: no shape function recomputed per cell), then the
/// points' inverses and metrics, then the load. Returns the smallest
/// Jacobian determinant. `mac` is `a · b + c` ([`add_rows`]).
#[inline(always)]
pub fn point_data_by_component<T: Real, C: Coefficients<T, D>, const D: usize, const QD: usize>(
    map: MapTables<'_, T>,
    verts: &[[T; D]; MAX_VERTICES],
    coeff: &C,
    data: &mut [T; QD],
    mac: impl Fn(T, T, T) -> T + Copy,
) -> T {
    let nq = QD / poisson::point_data_len(D);
    // J (D² components) then x (D): 2·QD holds them (14 or 8 per point)
    let mut geo = [[T::ZERO; QD]; 2];
    let g = geo.as_flattened_mut();
    for (v, vert) in verts.iter().enumerate().take(1 << D) {
        for (a, &xa) in vert.iter().enumerate() {
            let at = |m: usize| &map.shape[(v * (D + 1) + m) * nq..][..nq];
            for (o, &n) in g[(D * D + a) * nq..][..nq].iter_mut().zip(at(0)) {
                *o = mac(xa, n, *o);
            }
            for b in 0..D {
                for (o, &dn) in g[(a * D + b) * nq..][..nq].iter_mut().zip(at(1 + b)) {
                    *o = mac(xa, dn, *o);
                }
            }
        }
    }
    let point = |q: usize| -> ([T; D], [[T; D]; D]) {
        (core::array::from_fn(|a| g[(D * D + a) * nq + q]), core::array::from_fn(|a| core::array::from_fn(|b| g[(a * D + b) * nq + q])))
    };
    let mut min_det = T::from_f64(f64::MAX);
    let load = poisson::sym_len(D) * nq;
    for (q, &w) in map.weight.iter().enumerate().take(nq) {
        let (x, jac) = point(q);
        let (det, inv) = fem_core::element::det_inv(&jac);
        let s = w * det * coeff.kappa(x);
        for a in 0..D {
            for b in a..D {
                let mut m = T::ZERO;
                for c in 0..D {
                    m += inv[a][c] * inv[b][c];
                }
                data[poisson::sym_index(a, b, D) * nq + q] = s * m;
            }
        }
        data[load + q] = w * det;
        min_det = min_det.min(det);
    }
    // the load's own loop: its library calls keep the one above vectorisable
    for q in 0..nq {
        data[load + q] = data[load + q] * coeff.load(point(q).0);
    }
    min_det
}

/// Cell `e`'s element matrix (row-major, every entry, coupled or not)
/// and load on a CPU core: the point data ([`point_data_by_component`])
/// contracted with the reference gradients `grads[q][a][i]` and basis
/// values `basis[q][i]` (the GPU's [`assemble`] sums entry by entry
/// instead). Each point's `G B` rows are formed by unit-stride axpys, and
/// a block of points at a time is added to the matrix by [`add_rows`],
/// whose tiles stay in registers across the block. `mac` is `a · b + c`
/// ([`add_rows`]). Returns the smallest Jacobian determinant.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn element_cpu<T: Real, C: Coefficients<T, D>, const D: usize, const NB: usize, const QD: usize>(
    map: MapTables<'_, T>,
    grads: &[[[T; NB]; D]],
    basis: &[[T; NB]],
    verts: &[[T; D]; MAX_VERTICES],
    coeff: &C,
    k: &mut [[T; NB]; NB],
    load: &mut [T; NB],
    mac: impl Fn(T, T, T) -> T + Copy,
) -> T {
    let mut data = [T::ZERO; QD];
    let min_det = point_data_by_component(map, verts, coeff, &mut data, mac);
    let nq = QD / poisson::point_data_len(D);
    *k = [[T::ZERO; NB]; NB];
    *load = [T::ZERO; NB];
    let mut c = [[[T::ZERO; NB]; D]; POINT_BLOCK];
    for (b, (gb, vb)) in grads.chunks(POINT_BLOCK).zip(basis.chunks(POINT_BLOCK)).enumerate() {
        for (p, ((gq, vq), cq)) in gb.iter().zip(vb).zip(c.iter_mut()).enumerate() {
            let q = b * POINT_BLOCK + p;
            for (h, ch) in cq.iter_mut().enumerate() {
                // summed in a local row, which stays in vector registers:
                // summed in place, the row's loads and stores kept it scalar
                let mut row = [T::ZERO; NB];
                for (l, gl) in gq.iter().enumerate() {
                    let s = data[poisson::sym_index(h, l, D) * nq + q];
                    for (x, &g) in row.iter_mut().zip(gl) {
                        *x = mac(s, g, *x);
                    }
                }
                *ch = row;
            }
            let f = data[poisson::sym_len(D) * nq + q];
            for (l, &v) in load.iter_mut().zip(vq) {
                *l = mac(f, v, *l);
            }
        }
        add_rows(gb.as_flattened(), c[..gb.len()].as_flattened(), k, mac);
    }
    mirror_upper(k);
    min_det
}

/// `y_loc = K_e x_loc`, `K_e` never formed: the product at the quadrature
/// points ([`poisson::stiffness_product`]) of `x_loc` on the coupling
/// rows. Forming `K_e` from stored point data in each product (189 values
/// a Q1 hexahedron, in thread-local memory) ran at 0.004 of the copy.
#[inline(always)]
pub fn matrix_free_product<T: Real, C: Coefficients<T, D>, const D: usize, const NB: usize>(
    tab: &Tables<'_, T>,
    verts: &[[T; D]; MAX_VERTICES],
    coeff: &C,
    rows: &[u32; NB],
    xl: &[T; NB],
) -> [T; NB] {
    // (i, j) couples where both rows are free: x and y restricted to them
    let x = free_only(rows, *xl);
    free_only(rows, poisson::stiffness_product::<T, C, D, NB>(tab, verts, coeff, &x))
}

/// Cell values `v` with 0 at the nodes whose rows are not free.
#[inline(always)]
fn free_only<T: Real, const NB: usize>(rows: &[u32; NB], mut v: [T; NB]) -> [T; NB] {
    for (vi, &r) in v.iter_mut().zip(rows) {
        if !is_free(r) {
            *vi = T::ZERO;
        }
    }
    v
}

/// The cell's diagonal and load on its free rows (0 elsewhere), the
/// element matrix never formed ([`poisson::diagonal_and_load`]): the
/// set-up of an operator that stores none.
#[inline(always)]
pub fn diagonal_and_load<T: Real, C: Coefficients<T, D>, const D: usize, const NB: usize>(
    tab: &Tables<'_, T>,
    verts: &[[T; D]; MAX_VERTICES],
    coeff: &C,
    rows: &[u32; NB],
) -> ([T; NB], [T; NB]) {
    let (diag, load) = poisson::diagonal_and_load::<T, C, D, NB>(tab, verts, coeff);
    (free_only(rows, diag), free_only(rows, load))
}

/// Runs `$body` with `const D`, `const NB` and `const QD` for a supported
/// (dimension, degree): 2D p = 1..=6, 3D p = 1..=4 (quadrature p + 2 points).
/// Evaluates to `None` for other combinations.
#[macro_export]
macro_rules! with_element {
    ($dim:expr, $p:expr, $d:ident, $nb:ident, $qd:ident => $body:expr) => {
        match ($dim, $p) {
            (2, 1) => { const $d: usize = 2; const $nb: usize = 4; const $qd: usize = 9 * 4; Some($body) }
            (2, 2) => { const $d: usize = 2; const $nb: usize = 9; const $qd: usize = 16 * 4; Some($body) }
            (2, 3) => { const $d: usize = 2; const $nb: usize = 16; const $qd: usize = 25 * 4; Some($body) }
            (2, 4) => { const $d: usize = 2; const $nb: usize = 25; const $qd: usize = 36 * 4; Some($body) }
            (2, 5) => { const $d: usize = 2; const $nb: usize = 36; const $qd: usize = 49 * 4; Some($body) }
            (2, 6) => { const $d: usize = 2; const $nb: usize = 49; const $qd: usize = 64 * 4; Some($body) }
            (3, 1) => { const $d: usize = 3; const $nb: usize = 8; const $qd: usize = 27 * 7; Some($body) }
            (3, 2) => { const $d: usize = 3; const $nb: usize = 27; const $qd: usize = 64 * 7; Some($body) }
            (3, 3) => { const $d: usize = 3; const $nb: usize = 64; const $qd: usize = 125 * 7; Some($body) }
            (3, 4) => { const $d: usize = 3; const $nb: usize = 125; const $qd: usize = 216 * 7; Some($body) }
            _ => None,
        }
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn element_table_matches_the_formulas() {
        for dim in [2usize, 3] {
            for p in 1..=6usize {
                let got = with_element!(dim, p, D, NB, QD => (D, NB, QD));
                if let Some((d, nb, qd)) = got {
                    assert_eq!(d, dim);
                    assert_eq!(nb, (p + 1).pow(dim as u32));
                    assert_eq!(qd, (p + 2).pow(dim as u32) * (dim * (dim + 1) / 2 + 1));
                } else {
                    assert!(dim == 3 && p > 4);
                }
            }
        }
    }
}
