//! Per-item functions of the sparse formats, shared by the CPU operators
//! and the GPU kernels: one row of CSR or ELLPACK, one cell of the local
//! matrix approach (LMA) or of the matrix-free product.
//!
//! Layouts are the GPU ones of Reguly & Giles §4.2, used on the CPU too so
//! both run the same code:
//! * the element map is transposed, `map[i * ne + e]` (eq. 13), each entry a
//!   row, [`NONE`] for an eliminated DOF, or a row with [`FIXED`] set for a
//!   Dirichlet row kept in the system;
//! * ELLPACK is transposed, `col[k * rows + r]`, padded with the row's own
//!   index and a zero value;
//! * LMA values are transposed in 16-byte packets: entry `k` of cell `e`
//!   (`k = i·nb + j`, or `sym(i, j)` in packed symmetric storage, j ≥ i)
//!   sits at [`lma_slot`]`(k, e)`, so a thread reads its own entries two
//!   (`f64`) or four (`f32`) at a time with one vector load, and a warp
//!   reads 512 consecutive bytes.

use fem_core::Real;

/// Map entry of a DOF that has no row (eliminated).
pub const NONE: u32 = u32::MAX;
/// Flag on a map entry whose row is a fixed (Dirichlet) row.
pub const FIXED: u32 = 1 << 31;

/// The row of a map entry (its flag removed); only for entries ≠ [`NONE`].
#[inline(always)]
pub fn row_of(m: u32) -> usize {
    (m & !FIXED) as usize
}

/// Whether a map entry takes part in products (exists and is not fixed).
#[inline(always)]
pub fn is_free(m: u32) -> bool {
    m & FIXED == 0
}

/// Index of (i, j), j ≥ i, in packed upper-triangular storage of an
/// `nb × nb` matrix.
#[inline(always)]
pub const fn sym_index(i: usize, j: usize, nb: usize) -> usize {
    i * nb - i * (i + 1) / 2 + j
}

/// Elements of `T` in one 16-byte packet, for const generics:
/// `with_lanes!(T, L => body)` evaluates `body` with `const L: usize`.
#[macro_export]
macro_rules! with_lanes {
    ($t:ty, $l:ident => $body:expr) => {
        if <$t as fem_core::Real>::BYTES == 8 {
            const $l: usize = 2;
            $body
        } else {
            const $l: usize = 4;
            $body
        }
    };
}

/// Entries of `T` in a 16-byte packet (`bytes = size_of::<T>()`).
#[inline(always)]
pub const fn lanes(bytes: usize) -> usize {
    16 / bytes
}

/// Slot of entry `k` of cell `e` among `ne` cells in the packed LMA layout
/// with `lanes` entries per packet.
#[inline(always)]
pub const fn lma_slot(k: usize, e: usize, ne: usize, lanes: usize) -> usize {
    (k / lanes * ne + e) * lanes + k % lanes
}

/// Values stored for `ne` cells of `n_entries` entries each (padded to
/// whole packets).
pub const fn lma_len(n_entries: usize, ne: usize, lanes: usize) -> usize {
    n_entries.div_ceil(lanes) * lanes * ne
}

/// Packet `p` of the LMA values: an aligned vector load on the GPU; on the
/// host, where `Vec` only guarantees element alignment, an unaligned read.
#[inline(always)]
unsafe fn load_packet<T: Real, const L: usize>(vals: *const T, p: usize) -> [T; L] {
    #[cfg(target_arch = "nvptx64")]
    {
        (*(vals as *const crate::device::Packet<T, L>).add(p)).0
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        core::ptr::read_unaligned((vals as *const [T; L]).add(p))
    }
}

/// `Σ_k val[k] x[col[k]]` over CSR row positions `lo..hi`, taking every
/// `step`-th entry from `lo + lane` (a group of `step` threads shares a row).
///
/// # Safety
/// Positions and column indices must be in range.
#[inline(always)]
pub unsafe fn csr_row_part<T: Real>(lo: usize, hi: usize, lane: usize, step: usize, col: *const u32, val: *const T, x: *const T) -> T {
    let mut s = T::ZERO;
    let mut k = lo + lane;
    while k < hi {
        s += *val.add(k) * *x.add(*col.add(k) as usize);
        k += step;
    }
    s
}

/// Row `r` of a transposed ELLPACK matrix of `rows` rows and `width` slots.
///
/// # Safety
/// `r < rows`; arrays hold `rows × width` entries.
#[inline(always)]
pub unsafe fn ell_row<T: Real>(r: usize, rows: usize, width: usize, col: *const u32, val: *const T, x: *const T) -> T {
    let mut s = T::ZERO;
    for k in 0..width {
        let p = k * rows + r;
        s += *val.add(p) * *x.add(*col.add(p) as usize);
    }
    s
}

/// The rows of cell `e` and its gathered input `x` (zero for entries
/// without a row).
///
/// # Safety
/// `map` holds `nb × ne` entries whose rows index `x`.
#[inline(always)]
pub unsafe fn gather<T: Real, const NB: usize>(e: usize, ne: usize, map: *const u32, x: *const T) -> ([u32; NB], [T; NB]) {
    let rows: [u32; NB] = core::array::from_fn(|i| *map.add(i * ne + e));
    let xl = core::array::from_fn(|i| if rows[i] == NONE { T::ZERO } else { *x.add(row_of(rows[i])) });
    (rows, xl)
}

/// The dense product of cell `e`'s stored element matrix with its gathered
/// input: `y_loc = K_e x_loc` (`SYM`: packed symmetric storage), reading
/// the matrix one packet of `L` entries at a time (`L` = [`lanes`]).
///
/// # Safety
/// `vals` holds the cell matrices of `ne` cells in the layout above.
#[inline(always)]
pub unsafe fn lma_product<T: Real, const NB: usize, const L: usize, const SYM: bool>(e: usize, ne: usize, vals: *const T, xl: &[T; NB]) -> [T; NB] {
    let mut y = [T::ZERO; NB];
    let mut k = 0;
    let mut packet = [T::ZERO; L];
    for i in 0..NB {
        for j in (if SYM { i } else { 0 })..NB {
            if k % L == 0 {
                packet = load_packet::<T, L>(vals, k / L * ne + e);
            }
            let v = packet[k % L];
            y[i] += v * xl[j];
            if SYM && j > i {
                y[j] += v * xl[i];
            }
            k += 1;
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_packing_is_a_bijection() {
        for nb in [1usize, 4, 9, 27] {
            let mut seen = [false; 27 * 28 / 2];
            let seen = &mut seen[..nb * (nb + 1) / 2];
            for i in 0..nb {
                for j in i..nb {
                    let k = sym_index(i, j, nb);
                    assert!(!seen[k]);
                    seen[k] = true;
                }
            }
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn map_flags() {
        assert_eq!(row_of(7 | FIXED), 7);
        assert!(!is_free(7 | FIXED) && is_free(7));
    }

    #[test]
    fn lma_slots_fill_packets_per_cell() {
        // 3 entries, 2 cells, 2 lanes: packets (k0,k1) of cell 0, of cell 1, then (k2,pad) of each
        assert_eq!([0, 1, 2, 3, 4, 6].map(|x| x), [lma_slot(0, 0, 2, 2), lma_slot(1, 0, 2, 2), lma_slot(0, 1, 2, 2), lma_slot(1, 1, 2, 2), lma_slot(2, 0, 2, 2), lma_slot(2, 1, 2, 2)]);
        assert_eq!(lma_len(3, 2, 2), 8);
        assert_eq!(lanes(8), 2);
    }

    #[test]
    fn lma_product_full_and_symmetric_agree() {
        // two cells, nb = 2, K_0 = [[2, -1], [-1, 3]] and K_1 = [[1, 0.5], [0.5, 4]]
        let ne = 2;
        let k0 = [2.0f64, -1.0, -1.0, 3.0];
        let k1 = [1.0f64, 0.5, 0.5, 4.0];
        let s0 = [2.0f64, -1.0, 3.0];
        let s1 = [1.0f64, 0.5, 4.0];
        let (mut full, mut sym) = ([0.0; 8], [0.0; 8]);
        for k in 0..4 {
            full[lma_slot(k, 0, ne, 2)] = k0[k];
            full[lma_slot(k, 1, ne, 2)] = k1[k];
        }
        for k in 0..3 {
            sym[lma_slot(k, 0, ne, 2)] = s0[k];
            sym[lma_slot(k, 1, ne, 2)] = s1[k];
        }
        let map = [0u32, 2, 1, NONE];
        let x = [1.0f64, 2.0, 3.0];
        unsafe {
            let (_, xl) = gather::<f64, 2>(1, ne, map.as_ptr(), x.as_ptr());
            assert_eq!(xl, [3.0, 0.0]);
            assert_eq!(lma_product::<f64, 2, 2, false>(1, ne, full.as_ptr(), &xl), [3.0, 1.5]);
            assert_eq!(lma_product::<f64, 2, 2, true>(1, ne, sym.as_ptr(), &xl), [3.0, 1.5]);
            let (_, xl) = gather::<f64, 2>(0, ne, map.as_ptr(), x.as_ptr());
            assert_eq!(lma_product::<f64, 2, 2, false>(0, ne, full.as_ptr(), &xl), [0.0, 5.0]);
            assert_eq!(lma_product::<f64, 2, 2, true>(0, ne, sym.as_ptr(), &xl), [0.0, 5.0]);
        }
    }
}
