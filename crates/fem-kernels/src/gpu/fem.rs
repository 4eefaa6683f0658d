//! Finite-element kernels: SpMV for every format, element assembly, and
//! the matrix-free product, each a thin loop around the per-item functions
//! of [`crate::sparse`] and [`crate::cells`].
//!
//! Element kernels run one cell per thread. Their scatter is either atomic
//! (`red.add`) or coloured in two levels (Reguly & Giles §4.1): a launch
//! per block colour takes only blocks that share no row (`blocks` lists
//! them), and inside a block the cells' thread colours write one after
//! another with barriers in between (`colour` per cell, `n_colours` per
//! block). Blocks are consecutive runs of `blockDim.x` cells.
//!
//! Reference tables arrive packed in one array: `points[nq]`,
//! `weights[nq]`, `value[np·nq]`, `deriv[np·nq]`. The kernels that compute
//! element matrices take `kappa[e]`, each cell's material factor on κ
//! (1 without material regions).

use crate::cells::{self, couples, Strategy};
use crate::device::*;
use crate::sparse::{csr_row_part, ell_row, gather, is_free, column_blocks, lma_column_block, lma_product, lma_row, lma_row_chunked, lma_rows_batched, input_at, read_once, row_of, LMA_GROUPS, NONE, SYM_WHOLE_NB};
use crate::launch::WARP;
use fem_core::element::{Tables, MAX_VERTICES};
use fem_core::poisson::{self, Scaled, SinePoisson};
use fem_core::{unroll, Real};
use fem_macros::kernel;

/// The reference tables packed by the host.
#[inline(always)]
unsafe fn tables<'a, T>(np: usize, nq: usize, tab: *const T) -> Tables<'a, T> {
    let s = |off: usize, len: usize| core::slice::from_raw_parts(tab.add(off), len);
    Tables { np, nq, points: s(0, nq), weights: s(nq, nq), value: s(2 * nq, np * nq), deriv: s(2 * nq + np * nq, np * nq) }
}

/// Runs `f(cell)` for this thread's cell of a coloured launch, one thread
/// colour at a time with a barrier after each.
#[inline(always)]
unsafe fn colour_loop(ne: usize, blocks: *const u32, colour: *const u8, n_colours: *const u8, mut f: impl FnMut(usize)) {
    let b = *blocks.add(block_idx_x()) as usize;
    let e = b * block_dim_x() + thread_idx_x();
    let nc = *n_colours.add(b);
    let mine = if e < ne { *colour.add(e) } else { u8::MAX };
    for c in 0..nc {
        if mine == c {
            f(e);
        }
        sync_threads();
    }
}

/// Runs `f(e, vertices, rows, coefficients)` for every cell of this
/// thread's grid-stride loop: what each Poisson cell kernel reads first
/// (the cell's vertices, its transposed map entries, κ with its factor).
#[inline(always)]
unsafe fn each_cell<T: Real, const D: usize, const NB: usize>(
    ne: usize,
    verts: *const T,
    kappa: *const T,
    map: *const u32,
    mut f: impl FnMut(usize, &[[T; D]; MAX_VERTICES], &[u32; NB], &Scaled<'_, T, SinePoisson>),
) {
    let mut e = global_idx_x();
    while e < ne {
        let v = cells::vertices::<T, D>(e, ne, verts);
        let rows: [u32; NB] = core::array::from_fn(|i| *map.add(i * ne + e));
        f(e, &v, &rows, &Scaled { factor: *kappa.add(e), inner: &SinePoisson });
        e += grid_size_x();
    }
}

/// Adds `v` to row `m` of `y` atomically if `m` is a free row.
#[inline(always)]
unsafe fn add_atomic<T: Real>(m: u32, v: T, y: *mut T) {
    if is_free(m) {
        atomic_add(y.add(row_of(m)), v);
    }
}

/// Adds a cell's local result to the free rows of `y` atomically.
#[inline(always)]
unsafe fn scatter_atomic<T: Real, const NB: usize>(rows: &[u32; NB], yl: &[T; NB], y: *mut T) {
    unroll::<NB>(|i| add_atomic(rows[i], yl[i], y));
}

/// Adds a cell's local result to the free rows of `y` (no other thread
/// writes them at the same time).
#[inline(always)]
unsafe fn scatter_plain<T: Real, const NB: usize>(rows: &[u32; NB], yl: &[T; NB], y: *mut T) {
    unroll::<NB>(|i| {
        if is_free(rows[i]) {
            *y.add(row_of(rows[i])) += yl[i];
        }
    });
}

/// CSR SpMV with `TPR` threads per row (a power of two up to 32), their
/// partial sums reduced by warp butterflies. Every lane runs the same
/// number of iterations so the shuffles never diverge.
#[kernel(f32, f64; TPR = 1, 2, 4, 8, 16, 32)]
pub unsafe fn csr_spmv<T: Real, const TPR: usize>(n_rows: usize, row_ptr: *const u32, col: *const u32, val: *const T, x: *const T, y: *mut T) {
    let gid = global_idx_x();
    let groups = grid_size_x() / TPR;
    let (lane, group) = (gid % TPR, gid / TPR);
    for it in 0..n_rows.div_ceil(groups) {
        let r = group + it * groups;
        let mut s = if r < n_rows { csr_row_part(*row_ptr.add(r) as usize, *row_ptr.add(r + 1) as usize, lane, TPR, col, val, x) } else { T::ZERO };
        let mut mask = TPR as u32 / 2;
        while mask > 0 {
            s += shfl_xor(s, mask);
            mask /= 2;
        }
        if lane == 0 && r < n_rows {
            *y.add(r) = s;
        }
    }
}

/// Transposed ELLPACK SpMV, one thread per row; slot planes `ld` apart.
#[kernel(f32, f64)]
pub unsafe fn ell_spmv<T: Real>(n_rows: usize, ld: usize, width: usize, col: *const u32, val: *const T, x: *const T, y: *mut T) {
    let mut r = global_idx_x();
    while r < n_rows {
        *y.add(r) = ell_row(r, ld, width, col, val, x);
        r += grid_size_x();
    }
}

/// LMA SpMV: gather, dense product, atomic scatter; one cell per thread.
/// A cell small enough for registers with symmetric storage is applied
/// whole, each stored value serving both triangles; otherwise row by row,
/// each row's sum added as soon as it is complete, so only the gathered
/// input stays live (symmetric storage then reads each off-diagonal value
/// twice). Cells of up to [`SYM_WHOLE_NB`] rows go in batches of rows
/// ([`lma_rows_batched`]) to keep more loads in flight per thread, in 2D
/// with streaming loads ([`read_once`]). Cells of more than
/// [`crate::sparse::COLUMN_BLOCKS_ABOVE`] rows go one column block after
/// another ([`lma_column_block`]). Measured on an H200 (3D Q4, f64, 4M
/// DOFs, fraction of the copy roofline): four blocks of 32 columns 0.72,
/// two of 63 0.51; one thread per (cell, block) instead of per cell 0.31
/// and 0.16. The host runs such cells through [`lma_spmv_shared`] instead
/// (0.875 on an H100) and never launches this path; it stays because the
/// elements axis instantiates this kernel for every cell size, and for
/// 3D Q4 the column blocks are the variant that compiles without spills.
#[kernel(f32, f64; elements; SYM = false, true)]
pub unsafe fn lma_spmv<T: Real, const D: usize, const NB: usize, const SYM: bool>(ne: usize, ld: usize, map: *const u32, vals: *const T, x: *const T, y: *mut T) {
    let blocks = const { column_blocks(NB) };
    if blocks > 1 {
        let mut e = global_idx_x();
        while e < ne {
            for b in 0..blocks {
                lma_column_block::<T, NB, SYM>(e, ne, ld, b, map, vals, x, |m, s| add_atomic(m, s, y));
            }
            e += grid_size_x();
        }
        return;
    }
    let mut e = global_idx_x();
    while e < ne {
        let (rows, xl) = gather::<T, NB>(e, ne, map, x);
        if const { SYM && NB <= SYM_WHOLE_NB } {
            scatter_atomic(&rows, &lma_product::<T, NB, SYM>(e, ld, vals, &xl), y);
        } else if const { NB <= SYM_WHOLE_NB } {
            let tag = |i: usize| *map.add(i * ne + e);
            if const { D == 2 } {
                lma_rows_batched::<T, u32, NB, SYM>(e, ld, vals, &xl, |p| read_once(p), tag, |m, s| add_atomic(m, s, y));
            } else {
                lma_rows_batched::<T, u32, NB, SYM>(e, ld, vals, &xl, |p| *p, tag, |m, s| add_atomic(m, s, y));
            }
        } else {
            for i in 0..NB {
                let m = *map.add(i * ne + e);
                add_atomic(m, lma_row::<T, NB, SYM>(e, ld, vals, i, |j| xl[j]), y);
            }
        }
        e += grid_size_x();
    }
}

/// LMA SpMV for large cells with the gathered input in shared memory: a
/// block of [`LMA_GROUPS`] warps takes 32 cells, lane l of every warp
/// cell l ([`crate::sparse::SHARED_GATHER_ABOVE`] says which cells). The warps first gather the cells' inputs together (each a
/// share of the columns, all map and input loads in flight before any
/// store), then warp g computes rows g, g + G, … of all 32 cells, reading
/// the stored values coalesced across the cells and the inputs from shared
/// memory (`xs[j·32 + l]`, one bank per lane), and adds each row's sum
/// atomically. One thread per cell ([`lma_spmv`]) leaves a 3D Q4 mesh of
/// 4M DOFs with 59 000 threads, too few to keep the memory busy, and
/// cannot hold 125 inputs in registers; here every cell has G threads and
/// no input is gathered twice.
///
/// Shared memory: `32·NB` values. Launch: `blockDim.x = 32·LMA_GROUPS`,
/// one block per 32 cells.
#[kernel(f32, f64; elements; SYM = false, true)]
pub unsafe fn lma_spmv_shared<T: Real, const D: usize, const NB: usize, const SYM: bool>(ne: usize, ld: usize, map: *const u32, vals: *const T, x: *const T, y: *mut T) {
    let w = WARP as usize;
    let (lane, g) = (thread_idx_x() % w, thread_idx_x() / w);
    let e = block_idx_x() * w + lane;
    let xs = dynamic_shared::<T>();
    let live = e < ne;
    // Column j = g + k·G for k < ⌈NB/G⌉: the bound is known per k after
    // unrolling, so only the first ⌈NB/G⌉ slots of the arrays exist.
    let col = |k: usize| g + k * LMA_GROUPS;
    let mut m = [NONE; NB];
    unroll::<NB>(|k| {
        if k * LMA_GROUPS < NB && col(k) < NB && live {
            m[k] = *map.add(col(k) * ne + e);
        }
    });
    let mut v = [T::ZERO; NB];
    unroll::<NB>(|k| {
        if k * LMA_GROUPS < NB {
            v[k] = input_at(m[k], x);
        }
    });
    unroll::<NB>(|k| {
        if k * LMA_GROUPS < NB && col(k) < NB {
            *xs.add(col(k) * w + lane) = v[k];
        }
    });
    sync_threads();
    if !live {
        return;
    }
    let mut i = g;
    while i < NB {
        let mi = *map.add(i * ne + e);
        add_atomic(mi, lma_row_chunked::<T, NB, SYM, 16>(e, ld, vals, i, |j| *xs.add(j * w + lane)), y);
        i += LMA_GROUPS;
    }
}

/// LMA SpMV with two-level colouring instead of atomics.
#[kernel(f32, f64; elements; SYM = false, true)]
pub unsafe fn lma_spmv_colour<T: Real, const NB: usize, const SYM: bool>(
    ne: usize,
    ld: usize,
    blocks: *const u32,
    colour: *const u8,
    n_colours: *const u8,
    map: *const u32,
    vals: *const T,
    x: *const T,
    y: *mut T,
) {
    let e = *blocks.add(block_idx_x()) as usize * block_dim_x() + thread_idx_x();
    let (rows, yl) = if e < ne {
        let (rows, xl) = gather::<T, NB>(e, ne, map, x);
        (rows, lma_product::<T, NB, SYM>(e, ld, vals, &xl))
    } else {
        ([NONE; NB], [T::ZERO; NB])
    };
    colour_loop(ne, blocks, colour, n_colours, |_| scatter_plain(&rows, &yl, y));
}

/// Matrix-free product: the element matrix is recomputed, applied and
/// scattered atomically; one cell per thread.
#[kernel(f32, f64; elements)]
pub unsafe fn mf_spmv<T: Real, const D: usize, const NB: usize, const QD: usize>(
    ne: usize,
    np: usize,
    nq: usize,
    tab: *const T,
    verts: *const T,
    kappa: *const T,
    map: *const u32,
    x: *const T,
    y: *mut T,
) {
    let tab = tables(np, nq, tab);
    let mut e = global_idx_x();
    while e < ne {
        let v = cells::vertices::<T, D>(e, ne, verts);
        let (rows, xl) = gather::<T, NB>(e, ne, map, x);
        let yl = cells::matrix_free_product::<T, _, D, NB>(&tab, &v, &Scaled { factor: *kappa.add(e), inner: &SinePoisson }, &rows, &xl);
        scatter_atomic(&rows, &yl, y);
        e += grid_size_x();
    }
}

/// Matrix-free product with two-level colouring.
#[kernel(f32, f64; elements)]
pub unsafe fn mf_spmv_colour<T: Real, const D: usize, const NB: usize, const QD: usize>(
    ne: usize,
    np: usize,
    nq: usize,
    tab: *const T,
    verts: *const T,
    kappa: *const T,
    blocks: *const u32,
    colour: *const u8,
    n_colours: *const u8,
    map: *const u32,
    x: *const T,
    y: *mut T,
) {
    let tab = tables(np, nq, tab);
    let e = *blocks.add(block_idx_x()) as usize * block_dim_x() + thread_idx_x();
    let (rows, yl) = if e < ne {
        let v = cells::vertices::<T, D>(e, ne, verts);
        let (rows, xl) = gather::<T, NB>(e, ne, map, x);
        (rows, cells::matrix_free_product::<T, _, D, NB>(&tab, &v, &Scaled { factor: *kappa.add(e), inner: &SinePoisson }, &rows, &xl))
    } else {
        ([NONE; NB], [T::ZERO; NB])
    };
    colour_loop(ne, blocks, colour, n_colours, |_| scatter_plain(&rows, &yl, y));
}

/// The diagonal and the load of the matrix-free operator, each cell's
/// ([`cells::diagonal_and_load`]) added atomically into its free rows of
/// `diag` and `load` (which hold the fixed rows' values already): no
/// element matrix is formed or stored.
#[kernel(f32, f64; elements)]
pub unsafe fn mf_diagonal_load<T: Real, const D: usize, const NB: usize, const QD: usize>(
    ne: usize,
    np: usize,
    nq: usize,
    tab: *const T,
    verts: *const T,
    kappa: *const T,
    map: *const u32,
    diag: *mut T,
    load: *mut T,
) {
    let tab = tables(np, nq, tab);
    each_cell::<T, D, NB>(ne, verts, kappa, map, |_, v, rows, coeff| {
        let (d, l) = cells::diagonal_and_load::<T, _, D, NB>(&tab, v, coeff, rows);
        scatter_atomic(rows, &d, diag);
        scatter_atomic(rows, &l, load);
    });
}

/// LMA assembly: element matrix and load of every cell in the transposed
/// layout (`SYM`: packed upper triangle; `REDUNDANT`: geometry recomputed
/// per entry instead of per-point data reused).
#[kernel(f32, f64; elements; SYM = false, true; REDUNDANT = false, true)]
pub unsafe fn assemble_lma<T: Real, const D: usize, const NB: usize, const QD: usize, const SYM: bool, const REDUNDANT: bool>(
    ne: usize,
    ld: usize,
    np: usize,
    nq: usize,
    tab: *const T,
    verts: *const T,
    kappa: *const T,
    map: *const u32,
    vals: *mut T,
    load: *mut T,
) {
    let tab = tables(np, nq, tab);
    let strategy = if REDUNDANT { Strategy::Redundant } else { Strategy::Reuse };
    each_cell::<T, D, NB>(ne, verts, kappa, map, |e, v, rows, coeff| {
        cells::assemble::<T, _, D, NB, QD, SYM>(e, ld, &tab, v, coeff, rows, strategy, vals, load);
    });
}

/// `err[e]` = (∫_e (u_h − u)²)^½ for the sine problem's exact solution u
/// ([`poisson::error_sq`]), u_h having the values of the rows `x` at the
/// cell's free nodes and 0 at fixed and eliminated ones (its boundary
/// condition), by the rule of `tab`: the L2 error is the 2-norm of `err`.
#[kernel(f32, f64; elements)]
pub unsafe fn sine_error<T: Real, const D: usize, const NB: usize, const QD: usize>(ne: usize, np: usize, nq: usize, tab: *const T, verts: *const T, map: *const u32, x: *const T, err: *mut T) {
    let tab = tables(np, nq, tab);
    let mut e = global_idx_x();
    while e < ne {
        let v = cells::vertices::<T, D>(e, ne, verts);
        let uh: [T; NB] = core::array::from_fn(|i| match *map.add(i * ne + e) {
            m if is_free(m) => *x.add(row_of(m)),
            _ => T::ZERO,
        });
        *err.add(e) = poisson::error_sq(&tab, &v, &uh, SinePoisson::solution::<T, D>).sqrt();
        e += grid_size_x();
    }
}

/// Global assembly (CSR or ELLPACK): each element entry is computed and
/// added at its precomputed position `pos[(i·nb + j)·ne + e]` of `val`
/// atomically, the load into `b`.
#[kernel(f32, f64; elements)]
pub unsafe fn assemble_global<T: Real, const D: usize, const NB: usize, const QD: usize>(
    ne: usize,
    np: usize,
    nq: usize,
    tab: *const T,
    verts: *const T,
    kappa: *const T,
    map: *const u32,
    pos: *const u32,
    val: *mut T,
    b: *mut T,
) {
    let tab = tables(np, nq, tab);
    each_cell::<T, D, NB>(ne, verts, kappa, map, |e, v, rows, coeff| {
        let mut data = [T::ZERO; QD];
        poisson::point_data(&tab, v, coeff, &mut data);
        for i in 0..NB {
            if !is_free(rows[i]) {
                continue;
            }
            atomic_add(b.add(row_of(rows[i])), poisson::load_reuse::<T, D>(&tab, &data, i));
            for j in i..NB {
                if couples(rows, i, j) {
                    let k = poisson::stiffness_reuse::<T, D>(&tab, &data, i, j);
                    atomic_add(val.add(*pos.add((i * NB + j) * ne + e) as usize), k);
                    if j > i {
                        atomic_add(val.add(*pos.add((j * NB + i) * ne + e) as usize), k);
                    }
                }
            }
        }
    });
}

/// Global assembly with two-level colouring: each cell computes its element
/// matrix into `scratch` (LMA layout), then writes it colour by colour.
#[kernel(f32, f64; elements)]
pub unsafe fn assemble_global_colour<T: Real, const D: usize, const NB: usize, const QD: usize>(
    ne: usize,
    np: usize,
    nq: usize,
    tab: *const T,
    verts: *const T,
    kappa: *const T,
    blocks: *const u32,
    colour: *const u8,
    n_colours: *const u8,
    map: *const u32,
    pos: *const u32,
    scratch: *mut T,
    load: *mut T,
    val: *mut T,
    b: *mut T,
) {
    let tab = tables(np, nq, tab);
    let e = *blocks.add(block_idx_x()) as usize * block_dim_x() + thread_idx_x();
    let mut rows = [NONE; NB];
    if e < ne {
        let v = cells::vertices::<T, D>(e, ne, verts);
        rows = core::array::from_fn(|i| *map.add(i * ne + e));
        cells::assemble::<T, _, D, NB, QD, false>(e, ne, &tab, &v, &Scaled { factor: *kappa.add(e), inner: &SinePoisson }, &rows, Strategy::Reuse, scratch, load);
    }
    colour_loop(ne, blocks, colour, n_colours, |e| {
        for i in 0..NB {
            if !is_free(rows[i]) {
                continue;
            }
            *b.add(row_of(rows[i])) += *load.add(i * ne + e);
            for j in 0..NB {
                let p = *pos.add((i * NB + j) * ne + e);
                if p != u32::MAX {
                    *val.add(p as usize) += *scratch.add((i * NB + j) * ne + e);
                }
            }
        }
    });
}

/// Appends a cell's coupled row entries to the ends of its rows in a
/// transposed lazy ELLPACK (`len` holds the current row lengths).
#[inline(always)]
unsafe fn append_rows<T: Real, const NB: usize>(
    e: usize,
    ld: usize,
    rows: &[u32; NB],
    n_rows: usize,
    vals: *const T,
    len: *mut u32,
    col: *mut u32,
    val: *mut T,
    atomic: bool,
) {
    for i in 0..NB {
        if !is_free(rows[i]) {
            continue;
        }
        let r = row_of(rows[i]);
        let count = (0..NB).filter(|&j| couples(rows, i, j)).count() as u32;
        let start = if atomic {
            atomic_add_u32(len.add(r), count)
        } else {
            let s = *len.add(r);
            *len.add(r) = s + count;
            s
        } as usize;
        let mut k = start;
        for j in 0..NB {
            if couples(rows, i, j) {
                *col.add(k * n_rows + r) = row_of(rows[j]) as u32;
                *val.add(k * n_rows + r) = *vals.add((i * NB + j) * ld + e);
                k += 1;
            }
        }
    }
}

/// Lazy ELLPACK assembly (Reguly & Giles §7): element matrices (already in
/// `scratch`, LMA layout) appended per row, with atomic row lengths.
#[kernel(f32, f64; elements)]
pub unsafe fn lazy_ell_append<T: Real, const NB: usize>(
    ne: usize,
    ld: usize,
    map: *const u32,
    scratch: *const T,
    n_rows: usize,
    len: *mut u32,
    col: *mut u32,
    val: *mut T,
) {
    let mut e = global_idx_x();
    while e < ne {
        let rows: [u32; NB] = core::array::from_fn(|i| *map.add(i * ne + e));
        append_rows::<T, NB>(e, ld, &rows, n_rows, scratch, len, col, val, true);
        e += grid_size_x();
    }
}

/// Lazy ELLPACK assembly with two-level colouring (plain row lengths).
#[kernel(f32, f64; elements)]
pub unsafe fn lazy_ell_append_colour<T: Real, const NB: usize>(
    ne: usize,
    ld: usize,
    blocks: *const u32,
    colour: *const u8,
    n_colours: *const u8,
    map: *const u32,
    scratch: *const T,
    n_rows: usize,
    len: *mut u32,
    col: *mut u32,
    val: *mut T,
) {
    colour_loop(ne, blocks, colour, n_colours, |e| {
        let rows: [u32; NB] = core::array::from_fn(|i| *map.add(i * ne + e));
        append_rows::<T, NB>(e, ld, &rows, n_rows, scratch, len, col, val, false);
    });
}
