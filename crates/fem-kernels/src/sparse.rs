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
//! * LMA values are transposed, `vals[(i * nb + j) * ld + e]`, or in packed
//!   symmetric storage `vals[sym(i, j) * ld + e]` for j ≥ i, where the
//!   plane stride `ld` is `ne` on the CPU and `ne` rounded up to 32 on the
//!   GPU: a warp's 32 consecutive cells then read whole 32-byte sectors of
//!   every plane (with `ld = ne` odd, each f64 warp access straddles one
//!   sector more, an f32 one two).

use fem_core::{unroll, Real};

/// Map entry of a DOF that has no row (eliminated).
pub const NONE: u32 = u32::MAX;
/// Flag on a map entry whose row is a fixed (Dirichlet) row.
pub const FIXED: u32 = 1 << 31;

/// The row of a map entry (its flag removed); only for entries ≠ [`NONE`].
#[inline(always)]
pub fn row_of(m: u32) -> usize {
    (m & !FIXED) as usize
}

/// Whether a map entry takes part in products: it exists and is not
/// fixed ([`NONE`] carries the [`FIXED`] bit, so one test says both).
#[inline(always)]
pub fn is_free(m: u32) -> bool {
    m & FIXED == 0
}
const _: () = assert!(NONE & FIXED != 0, "is_free(NONE) must be false");

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
        s = (*val.add(k)).mad(*x.add(*col.add(k) as usize), s);
        k += step;
    }
    s
}

/// Slots of an ELLPACK row whose loads [`ell_row`] issues together.
pub const ELL_CHUNK: usize = 8;

/// Row `r` of a transposed ELLPACK matrix of `rows` rows and `width` slots.
/// The slots go in chunks of [`ELL_CHUNK`]: all their columns and values
/// are loaded, then all their inputs, so a GPU thread waits two memory
/// latencies per chunk (the inputs depend on the columns).
///
/// # Safety
/// `r < rows`; arrays hold `rows × width` entries.
#[inline(always)]
pub unsafe fn ell_row<T: Real>(r: usize, rows: usize, width: usize, col: *const u32, val: *const T, x: *const T) -> T {
    let mut s = T::ZERO;
    let mut k = 0;
    while k + ELL_CHUNK <= width {
        let (mut c, mut v, mut xs) = ([0u32; ELL_CHUNK], [T::ZERO; ELL_CHUNK], [T::ZERO; ELL_CHUNK]);
        unroll::<ELL_CHUNK>(|q| {
            let p = (k + q) * rows + r;
            (c[q], v[q]) = (*col.add(p), *val.add(p));
        });
        unroll::<ELL_CHUNK>(|q| xs[q] = *x.add(c[q] as usize));
        unroll::<ELL_CHUNK>(|q| s = v[q].mad(xs[q], s));
        k += ELL_CHUNK;
    }
    while k < width {
        let p = k * rows + r;
        s = (*val.add(p)).mad(*x.add(*col.add(p) as usize), s);
        k += 1;
    }
    s
}

/// Cells with at most this many basis functions (2D p ≤ 4, 3D p ≤ 2) keep
/// their local input and output in registers in [`lma_product`]; larger
/// ones go row by row ([`lma_rows`]), since their gathered input alone
/// fills the register file.
pub const REGISTER_NB: usize = 32;

/// Largest cell whose symmetric storage the atomic LMA product applies
/// whole (each stored value used for both triangles, input and output in
/// registers). Above it the two arrays cost more occupancy than reading
/// the off-diagonal values twice row by row does bandwidth (measured on an
/// H200: at 25 basis functions the row-by-row product is twice as fast).
pub const SYM_WHOLE_NB: usize = 16;

/// The rows of cell `e` and its gathered input `x` (zero for entries
/// without a row). All map entries are loaded before any input, and the
/// inputs without branches, so a GPU thread waits for two memory latencies
/// rather than two per basis function.
///
/// # Safety
/// `map` holds `nb × ne` entries whose rows index `x`, and `x` is not
/// empty.
#[inline(always)]
pub unsafe fn gather<T: Real, const NB: usize>(e: usize, ne: usize, map: *const u32, x: *const T) -> ([u32; NB], [T; NB]) {
    let mut rows = [NONE; NB];
    let mut xl = [T::ZERO; NB];
    unroll::<NB>(|i| rows[i] = *map.add(i * ne + e));
    unroll::<NB>(|i| xl[i] = input_at(rows[i], x));
    (rows, xl)
}

/// The input of map entry `m`: `x` at its row, zero if it has none (read
/// from row 0 and discarded, to keep the load unconditional).
///
/// # Safety
/// A row of `m` indexes `x`, and `x` is not empty.
#[inline(always)]
pub unsafe fn input_at<T: Real>(m: u32, x: *const T) -> T {
    let v = kept(*x.add(if m == NONE { 0 } else { row_of(m) }));
    if m == NONE {
        T::ZERO
    } else {
        v
    }
}

/// `v`, marked as used on the GPU, so everything it depends on is computed
/// unconditionally. Without the mark the optimiser moves work whose result
/// one branch discards into the other branch: a gather's input loads each
/// behind a branch on its map entry, each waiting a full memory latency.
#[inline(always)]
fn kept<T: Real>(v: T) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        let mut bits = v.to_bits_u64();
        // SAFETY: a register move; no memory or stack access.
        unsafe { core::arch::asm!("mov.b64 {b}, {b};", b = inout(reg64) bits, options(nomem, nostack)) };
        T::from_bits_u64(bits)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    v
}

/// `*p` for data read once (stored matrix values): on the GPU a
/// cache-streaming load (`ld.global.cs`), first in line for eviction, so
/// the stream of values does not push the gathered input out of the
/// caches. Not marked pure: the optimiser would then sink the loads behind
/// the branch that consumes their sum, one latency per row.
///
/// Measured on an H200 (LMA, f64, 4M DOFs, fraction of the copy roofline)
/// it pays on quadrilaterals, Q1 0.80 → 0.82, Q2 with aligned numbering
/// 0.80 → 0.90, and costs on hexahedra, Q1 0.93 → 0.80 (the same with
/// `ld.global.cg`), so the 3D products read their values plainly.
///
/// # Safety
/// `p` is valid for reads.
#[inline(always)]
pub unsafe fn read_once<T: Real>(p: *const T) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        if T::BYTES == 8 {
            let v: u64;
            core::arch::asm!("ld.global.cs.b64 {v}, [{p}];", v = out(reg64) v, p = in(reg64) p, options(readonly, nostack));
            T::from_bits_u64(v)
        } else {
            let v: u32;
            core::arch::asm!("ld.global.cs.b32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) p, options(readonly, nostack));
            T::from_bits_u64(v as u64)
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    *p
}

/// Entry (i, j) of cell `e`'s stored matrix (`SYM`: packed upper triangle,
/// so (i, j) and (j, i) share one value).
#[inline(always)]
unsafe fn lma_entry<T: Real, const NB: usize, const SYM: bool>(e: usize, ld: usize, vals: *const T, i: usize, j: usize, load: impl Fn(*const T) -> T) -> T {
    let k = match (SYM, j >= i) {
        (false, _) => i * NB + j,
        (true, true) => sym_index(i, j, NB),
        (true, false) => sym_index(j, i, NB),
    };
    load(vals.add(k * ld + e))
}

/// Row `i` of cell `e`'s product, `Σ_j K_ij x(j)`, the columns written out.
///
/// # Safety
/// As [`lma_product`].
#[inline(always)]
pub unsafe fn lma_row<T: Real, const NB: usize, const SYM: bool>(e: usize, ld: usize, vals: *const T, i: usize, x: impl Fn(usize) -> T) -> T {
    lma_row_by::<T, NB, SYM>(e, ld, vals, i, x, |p| *p)
}

/// As [`lma_row`], the stored values read by `load` (say, [`read_once`]).
///
/// # Safety
/// As [`lma_product`]; `load` reads its pointer.
#[inline(always)]
pub unsafe fn lma_row_by<T: Real, const NB: usize, const SYM: bool>(e: usize, ld: usize, vals: *const T, i: usize, x: impl Fn(usize) -> T, load: impl Fn(*const T) -> T) -> T {
    let mut s = T::ZERO;
    unroll::<NB>(|j| s = lma_entry::<T, NB, SYM>(e, ld, vals, i, j, &load).mad(x(j), s));
    s
}

/// As [`lma_row`], loading `CH` columns at a time: on the GPU the
/// compiler may not start a chunk's loads before the previous chunk is
/// summed, so a 125-column row needs registers for `CH` values rather
/// than for all of them. The sum runs over j = 0.. in order, as in
/// [`lma_row`].
///
/// # Safety
/// As [`lma_product`].
#[inline(always)]
pub unsafe fn lma_row_chunked<T: Real, const NB: usize, const SYM: bool, const CH: usize>(e: usize, ld: usize, vals: *const T, i: usize, x: impl Fn(usize) -> T) -> T {
    let mut s = T::ZERO;
    let mut c0 = 0;
    while c0 < NB {
        let (mut a, mut b) = ([T::ZERO; CH], [T::ZERO; CH]);
        unroll::<CH>(|k| {
            if c0 + k < NB {
                a[k] = lma_entry::<T, NB, SYM>(e, ld, vals, i, c0 + k, |p| *p);
                b[k] = x(c0 + k);
            }
        });
        unroll::<CH>(|k| {
            if c0 + k < NB {
                s = a[k].mad(b[k], s);
            }
        });
        // An empty block the optimiser must assume reads and writes
        // memory: no load of the next chunk moves above it.
        #[cfg(target_arch = "nvptx64")]
        core::arch::asm!("", options(nostack));
        c0 += CH;
    }
    s
}

/// `row(i, (K_e x_loc)_i)` for every row `i` of cell `e`, in order: only the
/// gathered input and one sum live in registers. With `SYM` every
/// off-diagonal value is read twice, once for each triangle.
///
/// # Safety
/// As [`lma_product`].
#[inline(always)]
pub unsafe fn lma_rows<T: Real, const NB: usize, const SYM: bool>(e: usize, ld: usize, vals: *const T, xl: &[T; NB], mut row: impl FnMut(usize, T)) {
    for i in 0..NB {
        row(i, lma_row::<T, NB, SYM>(e, ld, vals, i, |j| xl[j]));
    }
}

/// Bytes of stored values one thread of [`lma_rows_batched`] requests
/// together. Measured on an H200 (2D Q3, f64, 4M DOFs, fraction of the
/// copy roofline): one row at a time 0.74, 256 bytes 0.77, 512 bytes 0.79,
/// the whole cell at once 0.23 (its registers cut occupancy to a sliver).
pub const BATCH_BYTES: usize = 512;

/// Rows of an `nb`-row cell of `bytes`-byte values that [`lma_rows_batched`]
/// loads together: the most that divide `nb` and fit [`BATCH_BYTES`], at
/// least one. Whole divisors keep every batch free of predicated loads.
pub const fn batch_rows(nb: usize, bytes: usize) -> usize {
    let mut r = nb;
    while r > 1 && (nb % r != 0 || r * nb * bytes > BATCH_BYTES) {
        r -= 1;
    }
    r
}

/// As [`lma_rows`], in batches of [`batch_rows`] rows: the loads of a
/// batch are issued together and its sums handed on only after all of
/// them, so a thread waits one memory latency per batch rather than one
/// per row. Values are read by `load` (plainly, or [`read_once`]);
/// `tag(i)` (say, row `i`'s map entry) is read with the batch's
/// values and passed to `row(tag, sum)`: batches are a loop, so the row
/// index is known only at run time, and indexing a register array with it
/// would move the array to local memory.
///
/// # Safety
/// As [`lma_product`].
#[inline(always)]
pub unsafe fn lma_rows_batched<T: Real, M: Copy + Default, const NB: usize, const SYM: bool>(
    e: usize,
    ld: usize,
    vals: *const T,
    xl: &[T; NB],
    load: impl Fn(*const T) -> T,
    tag: impl Fn(usize) -> M,
    mut row: impl FnMut(M, T),
) {
    let r = const { batch_rows(NB, T::BYTES) };
    let mut i0 = 0;
    while i0 < NB {
        let (mut s, mut m) = ([T::ZERO; NB], [M::default(); NB]);
        unroll::<NB>(|k| {
            if k < r {
                m[k] = tag(i0 + k);
                s[k] = lma_row_by::<T, NB, SYM>(e, ld, vals, i0 + k, |j| xl[j], &load);
            }
        });
        unroll::<NB>(|k| {
            if k < r {
                row(m[k], s[k]);
            }
        });
        i0 += r;
    }
}

/// Cells of more rows than this (3D Q4: 125) go by column blocks
/// ([`lma_column_block`]): their gathered input alone would exceed the
/// registers.
pub const COLUMN_BLOCKS_ABOVE: usize = 64;

/// Cells of more rows than this (3D Q2 and up, 2D Q5 and up) go through
/// the shared-memory product (`lma_spmv_shared`, [`LMA_GROUPS`] warps per
/// 32 cells) when scattered atomically: one thread per cell holds 27 or 64
/// gathered inputs in registers and leaves too few threads in flight (H100,
/// 4M DOFs, f32 3D Q2 / Q3: 0.80 / 0.52 of the copy per thread, 0.89 /
/// 0.84 shared; f64 0.91 / 0.87 and 0.93 / 0.86).
pub const SHARED_GATHER_ABOVE: usize = 26;

/// Warps per block of the shared-memory LMA product: the threads that
/// share a block's 32 cells, each warp a share of the rows.
pub const LMA_GROUPS: usize = 8;

/// Most columns of one column block.
pub const GATHER_COLUMNS: usize = 32;

/// Column blocks of an `nb`-row cell: 1 up to [`COLUMN_BLOCKS_ABOVE`] rows.
pub const fn column_blocks(nb: usize) -> usize {
    if nb <= COLUMN_BLOCKS_ABOVE {
        1
    } else {
        nb.div_ceil(GATHER_COLUMNS)
    }
}

/// Columns per block: the cell split into [`column_blocks`] equal blocks,
/// the last one possibly shorter.
pub const fn block_columns(nb: usize) -> usize {
    nb.div_ceil(column_blocks(nb))
}

/// `row(m_i, Σ_{j ∈ J} K_ij x_j)` for column block `b` (columns J =
/// b·c .. (b+1)·c, c = [`block_columns`]) of cell `e` and every row i,
/// `m_i` its map entry: each row receives one partial sum per block, to be
/// added atomically. Only that block's inputs are gathered.
///
/// # Safety
/// As [`lma_product`], with `map` and `x` as for [`gather`]; `b <
/// column_blocks(NB)`.
#[inline(always)]
pub unsafe fn lma_column_block<T: Real, const NB: usize, const SYM: bool>(e: usize, ne: usize, ld: usize, b: usize, map: *const u32, vals: *const T, x: *const T, mut row: impl FnMut(u32, T)) {
    let cb = const {
        assert!(block_columns(NB) <= COLUMN_BLOCKS_ABOVE, "a column block must fit the gather arrays");
        block_columns(NB)
    };
    let c0 = b * cb;
    let mut m = [NONE; COLUMN_BLOCKS_ABOVE];
    unroll::<COLUMN_BLOCKS_ABOVE>(|k| {
        if k < cb && c0 + k < NB {
            m[k] = *map.add((c0 + k) * ne + e);
        }
    });
    let mut xb = [T::ZERO; COLUMN_BLOCKS_ABOVE];
    unroll::<COLUMN_BLOCKS_ABOVE>(|k| {
        if k < cb {
            xb[k] = input_at(m[k], x);
        }
    });
    for i in 0..NB {
        let mut s = T::ZERO;
        unroll::<COLUMN_BLOCKS_ABOVE>(|k| {
            if k < cb && c0 + k < NB {
                s = lma_entry::<T, NB, SYM>(e, ld, vals, i, c0 + k, |p| *p).mad(xb[k], s);
            }
        });
        row(*map.add(i * ne + e), s);
    }
}

/// `xl[i]` for an index `i` known only at run time, without indexing the
/// array (which would move it to local memory): one select per entry.
#[inline(always)]
fn pick<T: Real, const NB: usize>(xl: &[T; NB], i: usize) -> T {
    let mut v = T::ZERO;
    unroll::<NB>(|k| v = if k == i { xl[k] } else { v });
    v
}

/// `y[i] += s` for a run-time `i`, as [`pick`].
#[inline(always)]
fn add_at<T: Real, const NB: usize>(y: &mut [T; NB], i: usize, s: T) {
    unroll::<NB>(|k| y[k] += if k == i { s } else { T::ZERO });
}

/// The dense product of cell `e`'s stored element matrix with its gathered
/// input: `y_loc = K_e x_loc`.
///
/// Rows go one at a time (a loop, not unrolled) with the columns of a row
/// written out, so the loads in flight are one row's and the registers
/// hold `x_loc`, `y_loc` and that row. With `SYM` each stored value of row
/// `i` of the upper triangle serves twice, `y_i += K_ij x_j` and
/// `y_j += K_ij x_i`; the row's lower part, already applied by the
/// earlier rows, is masked out rather than branched around (its loads hit
/// the cached diagonal), keeping the row straight-line code.
///
/// # Safety
/// `vals` holds the cell matrices in the layout above, planes `ld` apart.
#[inline(always)]
pub unsafe fn lma_product<T: Real, const NB: usize, const SYM: bool>(e: usize, ld: usize, vals: *const T, xl: &[T; NB]) -> [T; NB] {
    let mut y = [T::ZERO; NB];
    if const { NB > REGISTER_NB } {
        lma_rows::<T, NB, SYM>(e, ld, vals, xl, |i, s| y[i] = s);
        return y;
    }
    for i in 0..NB {
        let s = if SYM {
            let (xi, row) = (pick(xl, i), sym_index(i, 0, NB));
            let mut s = T::ZERO;
            unroll::<NB>(|j| {
                let k = *vals.add((row + j.max(i)) * ld + e);
                s = if j >= i { k } else { T::ZERO }.mad(xl[j], s);
                y[j] = if j > i { k } else { T::ZERO }.mad(xi, y[j]);
            });
            s
        } else {
            lma_row::<T, NB, false>(e, ld, vals, i, |j| xl[j])
        };
        add_at(&mut y, i, s);
    }
    y
}

/// The position of entry (c, r) in the CSR pattern `(row_ptr, col)`
/// (ascending columns): the mirror of entry (r, c), where a transpose on
/// the same pattern takes its value from; [`NONE`] where the pattern has
/// no such entry (it is not symmetric there).
///
/// # Safety
/// `row_ptr` valid for rows `c` and `c + 1`, `col` for row `c`'s entries.
#[inline(always)]
pub unsafe fn mirror_slot(row_ptr: *const u32, col: *const u32, r: u32, c: usize) -> u32 {
    let (lo, hi) = (*row_ptr.add(c) as usize, *row_ptr.add(c + 1) as usize);
    match core::slice::from_raw_parts(col.add(lo), hi - lo).binary_search(&r) {
        Ok(k) => (lo + k) as u32,
        Err(_) => NONE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::{vec, vec::Vec};

    /// Each entry's mirror in the pattern, and none where the pattern
    /// lacks it: rows [0, 1], [0, 1, 2], [2], whose (1, 2) has no (2, 1).
    #[test]
    fn mirrors_are_found_where_they_are() {
        let (row_ptr, col) = ([0u32, 2, 5, 6], [0u32, 1, 0, 1, 2, 2]);
        let entries = [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (2, 2)];
        let got: Vec<u32> = entries.iter().map(|&(r, c)| unsafe { mirror_slot(row_ptr.as_ptr(), col.as_ptr(), r, c) }).collect();
        assert_eq!(got, [0, 2, 1, 3, NONE, 5]);
    }

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
    fn ell_rows_in_chunks_are_the_plain_sums() {
        // 3 rows, widths around the chunk size; row r's slot k has column
        // (r + 2k) mod 5 and value k + 1 − r.
        let rows = 3;
        let x = [0.5f64, -1.0, 2.0, 3.5, -0.25];
        for width in [0, 1, ELL_CHUNK - 1, ELL_CHUNK, ELL_CHUNK + 1, 2 * ELL_CHUNK + 3] {
            let (mut col, mut val) = (vec![0u32; rows * width], vec![0.0f64; rows * width]);
            for r in 0..rows {
                for k in 0..width {
                    (col[k * rows + r], val[k * rows + r]) = (((r + 2 * k) % 5) as u32, (k + 1) as f64 - r as f64);
                }
            }
            for r in 0..rows {
                let want: f64 = (0..width).map(|k| ((k + 1) as f64 - r as f64) * x[(r + 2 * k) % 5]).sum();
                let got = unsafe { ell_row(r, rows, width, col.as_ptr(), val.as_ptr(), x.as_ptr()) };
                assert!((got - want).abs() <= 1e-12 * want.abs().max(1.0), "width {width}, row {r}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn map_flags() {
        assert_eq!(row_of(7 | FIXED), 7);
        assert!(!is_free(7 | FIXED) && is_free(7));
    }

    /// `K_e x` of cell 1 of 3 for a pseudo-random symmetric matrix, by
    /// every path, against the plain dense product.
    fn check_cell<const NB: usize>() {
        const NE: usize = 3;
        let val = |i: usize, j: usize| ((i.min(j) * 7 + i.max(j) * 13) % 11) as f64 - 5.0;
        let mut full = [0.0f64; 64 * 64 * NE];
        let mut sym = [0.0f64; 64 * 65 / 2 * NE];
        let x: [f64; NB] = core::array::from_fn(|i| (i % 5) as f64 + 0.5);
        let mut want = [0.0f64; NB];
        for i in 0..NB {
            for j in 0..NB {
                full[(i * NB + j) * NE + 1] = val(i, j);
                if j >= i {
                    sym[sym_index(i, j, NB) * NE + 1] = val(i, j);
                }
                want[i] += val(i, j) * x[j];
            }
        }
        unsafe {
            assert_eq!(lma_product::<f64, NB, false>(1, NE, full.as_ptr(), &x), want);
            assert_eq!(lma_product::<f64, NB, true>(1, NE, sym.as_ptr(), &x), want);
            let mut rows = [0.0; NB];
            lma_rows::<f64, NB, true>(1, NE, sym.as_ptr(), &x, |i, s| rows[i] = s);
            assert_eq!(rows, want);
            check_batches::<NB>(full.as_ptr(), sym.as_ptr(), &x, &want);
        }
    }

    /// Every row of cell 1 by `CH`-column chunks equals the unchunked row to
    /// the last bit (same order of sums), with planes `ld` = 32 apart for
    /// 3 cells (the GPU's padded stride) and the last chunk partial.
    fn check_chunked_rows<const NB: usize, const CH: usize>() {
        const LD: usize = 32;
        let val = |i: usize, j: usize| ((i.min(j) * 7 + i.max(j) * 13) % 11) as f64 / 3.0 - 1.7;
        let (mut full, mut sym) = (vec![f64::NAN; NB * NB * LD], vec![f64::NAN; NB * (NB + 1) / 2 * LD]);
        for i in 0..NB {
            for j in 0..NB {
                full[(i * NB + j) * LD + 1] = val(i, j);
                if j >= i {
                    sym[sym_index(i, j, NB) * LD + 1] = val(i, j);
                }
            }
        }
        let x = |j: usize| (j % 7) as f64 * 0.3 - 0.9;
        for i in 0..NB {
            unsafe {
                let (a, b) = (lma_row_chunked::<f64, NB, false, CH>(1, LD, full.as_ptr(), i, x), lma_row::<f64, NB, false>(1, LD, full.as_ptr(), i, x));
                assert_eq!(a.to_bits(), b.to_bits(), "nb {NB}, row {i}");
                let (a, b) = (lma_row_chunked::<f64, NB, true, CH>(1, LD, sym.as_ptr(), i, x), lma_row::<f64, NB, true>(1, LD, sym.as_ptr(), i, x));
                assert_eq!(a.to_bits(), b.to_bits(), "nb {NB} symmetric, row {i}");
                assert!(a.is_finite(), "nb {NB}: read outside cell 1");
            }
        }
    }

    #[test]
    fn lma_rows_in_chunks_are_the_plain_rows() {
        check_chunked_rows::<125, 16>();
        check_chunked_rows::<27, 16>();
        check_chunked_rows::<16, 16>();
        check_chunked_rows::<8, 16>();
    }

    /// Cell 1 of 3 of an `NB`-row cell by column blocks, every row
    /// receiving one sum per block, against the dense product; the
    /// map sends DOF i to row NB − 1 − i and leaves the last DOF without a
    /// row.
    fn check_column_blocks<const NB: usize>() {
        const NE: usize = 3;
        let val = |i: usize, j: usize| ((i.min(j) * 7 + i.max(j) * 13) % 11) as f64 - 5.0;
        let mut map = vec![0u32; NB * NE];
        for i in 0..NB {
            map[i * NE + 1] = if i == NB - 1 { NONE } else { (NB - 2 - i) as u32 };
        }
        let x: Vec<f64> = (0..NB).map(|r| (r % 5) as f64 + 0.5).collect();
        let xl = |j: usize| if j == NB - 1 { 0.0 } else { x[NB - 2 - j] };
        let (mut full, mut sym) = (vec![0.0; NB * NB * NE], vec![0.0; NB * (NB + 1) / 2 * NE]);
        let mut want = vec![0.0; NB];
        for i in 0..NB {
            for j in 0..NB {
                full[(i * NB + j) * NE + 1] = val(i, j);
                if j >= i {
                    sym[sym_index(i, j, NB) * NE + 1] = val(i, j);
                }
                want[i] += val(i, j) * xl(j);
            }
        }
        let blocks = column_blocks(NB);
        for (vals, is_sym) in [(&full, false), (&sym, true)] {
            let (mut got, mut calls) = (vec![0.0; NB], vec![0usize; NB]);
            let mut add = |m: u32, s: f64| {
                let i = if m == NONE { NB - 1 } else { NB - 2 - m as usize };
                got[i] += s;
                calls[i] += 1;
            };
            for b in 0..blocks {
                unsafe {
                    if is_sym {
                        lma_column_block::<f64, NB, true>(1, NE, NE, b, map.as_ptr(), vals.as_ptr(), x.as_ptr(), &mut add);
                    } else {
                        lma_column_block::<f64, NB, false>(1, NE, NE, b, map.as_ptr(), vals.as_ptr(), x.as_ptr(), &mut add);
                    }
                }
            }
            assert!(calls.iter().all(|&c| c == blocks), "nb {NB}: every row once per block");
            for i in 0..NB {
                assert!((got[i] - want[i]).abs() <= 1e-12 * want[i].abs().max(1.0), "nb {NB}, symmetric {is_sym}, row {i}: {} vs {}", got[i], want[i]);
            }
        }
    }

    #[test]
    fn column_blocks_are_the_dense_product() {
        assert_eq!([64, 65, 125, 216].map(column_blocks), [1, 3, 4, 7]);
        assert_eq!([64, 65, 125, 216].map(block_columns), [64, 22, 32, 31]);
        check_column_blocks::<9>();
        check_column_blocks::<64>();
        check_column_blocks::<65>();
        check_column_blocks::<125>();
        check_column_blocks::<216>();
    }

    /// The batched rows give every row once, in order, with the dense sums.
    unsafe fn check_batches<const NB: usize>(full: *const f64, sym: *const f64, x: &[f64; NB], want: &[f64; NB]) {
        for (vals, is_sym) in [(full, false), (sym, true)] {
            let (mut got, mut n) = ([(usize::MAX, 0.0); NB], 0);
            let mut push = |i: usize, s: f64| {
                got[n] = (i, s);
                n += 1;
            };
            if is_sym {
                lma_rows_batched::<f64, usize, NB, true>(1, 3, vals, x, |p| read_once(p), |i| i, &mut push);
            } else {
                lma_rows_batched::<f64, usize, NB, false>(1, 3, vals, x, |p| *p, |i| i, &mut push);
            }
            assert_eq!(n, NB, "nb {NB}, symmetric {is_sym}");
            for (i, &(row, s)) in got.iter().enumerate() {
                assert_eq!((row, s), (i, want[i]), "nb {NB}, symmetric {is_sym}");
            }
        }
    }

    #[test]
    fn batches_divide_the_cell_and_fit_the_budget() {
        for nb in 1..=64 {
            for bytes in [4, 8] {
                let r = batch_rows(nb, bytes);
                assert!(r >= 1 && nb % r == 0, "nb {nb}");
                assert!(r == 1 || r * nb * bytes <= BATCH_BYTES, "nb {nb}");
                assert!((r + 1..=nb).all(|q| nb % q != 0 || q * nb * bytes > BATCH_BYTES), "nb {nb}: a larger batch fits");
            }
        }
        assert_eq!((batch_rows(9, 8), batch_rows(16, 8), batch_rows(8, 8), batch_rows(9, 4), batch_rows(25, 8)), (3, 4, 8, 9, 1));
    }

    #[test]
    fn every_product_path_is_the_dense_product() {
        check_cell::<4>();
        check_cell::<9>();
        check_cell::<16>();
        check_cell::<REGISTER_NB>();
        check_cell::<{ REGISTER_NB + 1 }>();
        check_cell::<64>();
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
            let mut rows = [0.0; 2];
            lma_rows::<f64, 2, true>(0, ne, sym.as_ptr(), &xl, |i, s| rows[i] = s);
            assert_eq!(rows, [0.0, 5.0]);
        }
    }
}

/// Rows a thread of the device's ELL-WARP row sort counts and places
/// in order (`gpu::warp`).
pub const WARP_SORT_CHUNK: usize = 256;

/// Lanes of an ELL-WARP slice: one warp.
pub const SLICE_LANES: usize = 32;

/// One ELL-WARP slice (Wong, Kuhl & Darve §5): the rows of one warp,
/// `rows_per_slice = 32 >> shift` consecutive rows of the sorted order
/// from `row`, each row over `1 << shift` lanes, `width` slots per lane.
/// Slot `k` of lane `l` is at `offset + k · 32 + l` (column-major inside
/// the warp, so every load of the warp is one coalesced transaction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(16))]
pub struct Slice {
    /// Position of the slice's first slot in the column and value arrays;
    /// the slice occupies `width · 32` slots from there.
    pub offset: u32,
    /// Slots per lane: the longest row's length over `1 << shift`, rounded up.
    pub width: u32,
    /// First row of the slice, in the sorted (permuted) order.
    pub row: u32,
    /// log₂ of the lanes per row: 0 gives one row per lane, 5 one row per warp.
    pub shift: u32,
}

/// The slots of lane `lane` of ELL-WARP slice `s` in the original
/// numbering (K1, K2), at `out_col` and `out_src` from the slice's first
/// slot: slot `k · 32 + lane` holds entry `k · 2^shift + lane mod 2^shift`
/// of sorted row `s.row + lane / 2^shift` (CSR row `perm` of it), its
/// column and CSR position; on padding `pad` (where `NONE`: the row's
/// first column, 0 for an empty row or a lane past the `n` rows) and
/// `NONE`. The host's build and the device's write slots through it.
///
/// # Safety
/// `perm[..n]`, the rows' offsets and columns readable, the slice's
/// `width · 32` slots writable.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn warp_lane_slots(s: Slice, lane: usize, n: usize, perm: *const u32, row_ptr: *const u32, col: *const u32, pad: u32, out_col: *mut u32, out_src: *mut u32) {
    let shift = s.shift as usize;
    let (sr, part) = (s.row as usize + (lane >> shift), lane & ((1 << shift) - 1));
    let (lo, hi) = if sr < n {
        let r = *perm.add(sr) as usize;
        (*row_ptr.add(r) as usize, *row_ptr.add(r + 1) as usize)
    } else {
        (0, 0)
    };
    let fill = if pad != NONE {
        pad
    } else if lo < hi {
        *col.add(lo)
    } else {
        0
    };
    for k in 0..s.width as usize {
        let (j, slot) = (lo + (k << shift) + part, k * SLICE_LANES + lane);
        let inside = j < hi;
        *out_col.add(slot) = if inside { *col.add(j) } else { fill };
        *out_src.add(slot) = if inside { j as u32 } else { NONE };
    }
}

/// Row `r`'s diagonal: the sum of its entries at `slots` stored in
/// column `r` (zero where none is). A sum, not the first match, so the
/// padding slots of an ELLPACK row, which point at the row itself with a
/// zero value, count for nothing.
///
/// # Safety
/// `col` and `val` readable at every slot.
#[inline(always)]
pub unsafe fn row_diagonal<T: Real>(r: usize, slots: impl Iterator<Item = usize>, col: *const u32, val: *const T) -> T {
    slots.filter(|&k| *col.add(k) as usize == r).fold(T::ZERO, |d, k| d + *val.add(k))
}

/// Partial sum of lane `lane` of a slice: `Σ_k val · x[col]` over its
/// slots, or `Σ_k x[col]` when `UNIT` (a pattern matrix of ones: assembly
/// by SpMV sums gathered element entries without reading any values).
///
/// # Safety
/// The slice's slots and their columns must be in range.
#[inline(always)]
pub unsafe fn slice_lane_part<T: Real, const UNIT: bool>(
    s: Slice,
    lane: usize,
    col: *const u32,
    val: *const T,
    x: *const T,
) -> T {
    let mut acc = T::ZERO;
    let mut p = s.offset as usize + lane;
    for _ in 0..s.width {
        let xv = *x.add(*col.add(p) as usize);
        acc = if UNIT { acc + xv } else { (*val.add(p)).mad(xv, acc) };
        p += SLICE_LANES;
    }
    acc
}

/// Partial sum of thread `t` of the `tpr` threads of row `r` in ELLR-T
/// storage (Vázquez et al.; Geveler et al. §3.1): slot group `k` of row `r`
/// holds its entries `k · tpr .. (k + 1) · tpr` at `(k · rows + r) · tpr`,
/// so a warp reads `32 / tpr` rows' groups as one contiguous run; the row
/// length `len` stops each row after its own groups.
///
/// # Safety
/// `r < rows` and the row's groups and columns must be in range.
#[inline(always)]
pub unsafe fn ellt_part<T: Real>(
    r: usize,
    t: usize,
    tpr: usize,
    rows: usize,
    len: usize,
    col: *const u32,
    val: *const T,
    x: *const T,
) -> T {
    let mut acc = T::ZERO;
    for k in 0..len.div_ceil(tpr) {
        let p = (k * rows + r) * tpr + t;
        acc = (*val.add(p)).mad(*x.add(*col.add(p) as usize), acc);
    }
    acc
}

/// Entries of an element row that one thread of [`element_row_part`]
/// loads together.
pub const ELEMENT_CHUNK: usize = 4;

/// Entries `lane, lane + step, …` of row `row` of element matrices of
/// any size times the global `x`: the product of the local matrix
/// approach for a `#[fem_kernel]` physics, whose element sizes (nodes ×
/// components) are known at run time only. Element `e`'s matrix is `nl` ×
/// `nl`, row-major, after those of the elements before it, so row `row`
/// (`e·nl + i`) starts at `row·nl`; column `j` reads `x[map[e·nl + j]]`
/// and is skipped where the map holds [`NONE`] (a fixed column). A group
/// of `step` threads shares a row. The entries go in chunks of
/// [`ELEMENT_CHUNK`]: all their map entries and values are loaded, then
/// all their inputs, so a GPU thread waits two memory latencies per chunk
/// instead of two per entry.
///
/// # Safety
/// `k` holds `nl` entries from `row·nl`, `map` `nl` from `e·nl`; map
/// entries other than [`NONE`] index `x`.
#[inline(always)]
pub unsafe fn element_row_part<T: Real>(row: usize, nl: usize, lane: usize, step: usize, k: *const T, map: *const u32, x: *const T) -> T {
    let (first, start) = (row / nl * nl, row * nl);
    let mut s = T::ZERO;
    let mut j = lane;
    while j < nl {
        let (mut m, mut v) = ([NONE; ELEMENT_CHUNK], [T::ZERO; ELEMENT_CHUNK]);
        unroll::<ELEMENT_CHUNK>(|q| {
            let c = j + q * step;
            if c < nl {
                (m[q], v[q]) = (*map.add(first + c), *k.add(start + c));
            }
        });
        unroll::<ELEMENT_CHUNK>(|q| {
            if m[q] != NONE {
                s = v[q].mad(*x.add(m[q] as usize), s);
            }
        });
        j += ELEMENT_CHUNK * step;
    }
    s
}

/// The diagonal entry of row `row` of element matrices laid out as in
/// [`element_row_part`].
///
/// # Safety
/// `k` holds entry `row·nl + row mod nl`.
#[inline(always)]
pub unsafe fn element_diagonal<T: Real>(row: usize, nl: usize, k: *const T) -> T {
    *k.add(row * nl + row % nl)
}

/// `src[i]`'s value of `from`, zero where `src[i]` is [`NONE`]: a format's
/// values refilled from new CSR values through the slot → CSR position map
/// its construction recorded (the reordering of Wong et al. §6).
///
/// # Safety
/// Positions other than [`NONE`] must index `from`.
#[inline(always)]
pub unsafe fn gathered<T: Real>(i: usize, src: *const u32, from: *const T) -> T {
    let s = *src.add(i);
    if s == NONE {
        T::ZERO
    } else {
        *from.add(s as usize)
    }
}

/// One row of a coloured symmetric Gauss–Seidel (SSOR with ω = 1) sweep
/// (Reguly & Giles, Algorithm 3): the sum of `a_ij v_j` over the row's
/// entries whose column has a colour below `c` (`FORWARD`) or above it
/// (backward), and the row's diagonal. `entries` yields the row's storage
/// positions (CSR positions, or ELLPACK slots whose padding has value zero).
///
/// # Safety
/// Positions, columns and colours must be in range.
#[inline(always)]
pub unsafe fn coloured_row<T: Real, const FORWARD: bool>(i: usize, entries: impl Iterator<Item = usize>, col: *const u32, val: *const T, colour: *const u8, c: u8, v: *const T) -> (T, T) {
    let (mut sum, mut diag) = (T::ZERO, T::ZERO);
    for p in entries {
        let j = *col.add(p) as usize;
        let a = *val.add(p);
        if j == i {
            diag += a;
        } else {
            let cj = *colour.add(j);
            if (FORWARD && cj < c) || (!FORWARD && cj > c) {
                sum += a * *v.add(j);
            }
        }
    }
    (sum, diag)
}

/// The new value of row `i` in a coloured sweep: forward
/// `(rhs_i − Σ_{colour < c} a_ij v_j) / a_ii`, backward
/// `rhs_i − Σ_{colour > c} a_ij v_j / a_ii`.
#[inline(always)]
pub fn swept<T: Real, const FORWARD: bool>(rhs: T, (sum, diag): (T, T)) -> T {
    if FORWARD {
        (rhs - sum) / diag
    } else {
        rhs - sum / diag
    }
}
