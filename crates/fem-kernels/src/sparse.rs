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
//! * LMA values are transposed, `vals[(i * nb + j) * ne + e]`, or in packed
//!   symmetric storage `vals[sym(i, j) * ne + e]` for j ≥ i.

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
/// input: `y_loc = K_e x_loc` (`SYM`: packed symmetric storage).
///
/// # Safety
/// `vals` holds the cell matrices of `ne` cells in the layout above.
#[inline(always)]
pub unsafe fn lma_product<T: Real, const NB: usize, const SYM: bool>(e: usize, ne: usize, vals: *const T, xl: &[T; NB]) -> [T; NB] {
    let mut y = [T::ZERO; NB];
    if SYM {
        for i in 0..NB {
            for j in i..NB {
                let k = *vals.add(sym_index(i, j, NB) * ne + e);
                y[i] += k * xl[j];
                if j > i {
                    y[j] += k * xl[i];
                }
            }
        }
    } else {
        for i in 0..NB {
            for j in 0..NB {
                y[i] += *vals.add((i * NB + j) * ne + e) * xl[j];
            }
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
    fn lma_product_full_and_symmetric_agree() {
        // two cells, nb = 2, K_e = [[2, -1], [-1, 3]] and [[1, 0.5], [0.5, 4]]
        let ne = 2;
        let full = [2.0f64, 1.0, -1.0, 0.5, -1.0, 0.5, 3.0, 4.0];
        let sym = [2.0f64, 1.0, -1.0, 0.5, 3.0, 4.0];
        let map = [0u32, 2, 1, NONE];
        let x = [1.0f64, 2.0, 3.0];
        unsafe {
            let (_, xl) = gather::<f64, 2>(1, ne, map.as_ptr(), x.as_ptr());
            assert_eq!(xl, [3.0, 0.0]);
            let (_, xl) = gather::<f64, 2>(0, ne, map.as_ptr(), x.as_ptr());
            assert_eq!(lma_product::<f64, 2, false>(0, ne, full.as_ptr(), &xl), [0.0, 5.0]);
            assert_eq!(lma_product::<f64, 2, true>(0, ne, sym.as_ptr(), &xl), [0.0, 5.0]);
        }
    }
}
