//! Compressed sparse row storage of the assembled stiffness matrix.
//!
//! The pattern comes from the element map: row r couples to every row of
//! every cell that touches r (Reguly & Giles §6). Values are summed from
//! the element matrices through a precomputed position of every element
//! entry in the CSR arrays (the "indexing data" of global assembly).

use super::cell_data::CellData;
use crate::sparse::SharedOut;
use super::colouring::block_colours;
use super::elements::{each_cell, ElementMatrices};
use super::LinearOperator;
use crate::space::dirichlet::NONE;
use crate::space::Layout;
use crate::{CpuBackend, Error, Result, Scalar};
use fem_core::poisson::Coefficients;
use fem_kernels::sparse::csr_row_part;
use rayon::prelude::*;

/// A sparse matrix in CSR form with `u32` indices (also used for
/// rectangular transfer matrices and matrices read from files).
#[derive(Clone, Debug)]
pub struct Csr<T> {
    /// Number of rows.
    pub n_rows: usize,
    /// Row `r`'s entries are `row_ptr[r]..row_ptr[r + 1]` (`n_rows + 1` offsets).
    pub row_ptr: Vec<u32>,
    /// Column of every entry, ascending within a row.
    pub col: Vec<u32>,
    /// Value of every entry, aligned with `col`.
    pub val: Vec<T>,
}

impl<T: Scalar> Csr<T> {
    /// The sparsity pattern of `layout`'s operator, values zero. Fixed rows
    /// hold their diagonal only.
    pub fn pattern(cpu: &CpuBackend, layout: &Layout) -> Result<Self> {
        Self::cells_pattern(cpu, layout.n_rows, layout.dofs_per_cell, &layout.cell_rows, &layout.fixed)
    }

    /// The sparsity pattern of the `n_rows` rows of the cells whose rows
    /// are `cell_rows` (`[c·nb + i]`, [`NONE`] where eliminated), values
    /// zero; rows where `fixed` is true (none when it is empty) hold their
    /// diagonal only.
    pub fn cells_pattern(cpu: &CpuBackend, n_rows: usize, nb: usize, cell_rows: &[u32], fixed: &[bool]) -> Result<Self> {
        let is_fixed = |r: usize| !fixed.is_empty() && fixed[r];
        let around = crate::mesh::adjacency::VertexCells::of_ids(cell_rows.len() / nb.max(1), n_rows, |c| &cell_rows[c * nb..(c + 1) * nb]);
        let (offsets, touching) = (around.start, around.cells);
        // rows in blocks, each block's columns in one vector: a vector per
        // row from many threads costs more than the sorting. A row's
        // columns are kept once by a mark per column (the row's own
        // index, in a thread's array over all rows) and sorted after: the
        // device's insertion into a sorted list (`row_columns`), which
        // needs no such array, took a search and a shift per candidate,
        // 216 of them for 125 columns in a 3D Q2 row. Tasks are at least
        // a thread's half share of the blocks: each fills an array of all
        // rows, and at millions of rows one a task costs more than the
        // pattern (a fresh array is memory the system must fault in).
        let n_blocks = n_rows.div_ceil(PATTERN_BLOCK);
        let blocks: Vec<(Vec<u32>, Vec<u32>)> = cpu.install(|| {
            (0..n_blocks)
                .into_par_iter()
                .with_min_len(n_blocks.div_ceil(2 * rayon::current_num_threads()))
                .map_init(
                    || vec![u32::MAX; n_rows],
                    |seen, b| {
                        let (mut len, mut col) = (Vec::new(), Vec::new());
                        for r in b * PATTERN_BLOCK..((b + 1) * PATTERN_BLOCK).min(n_rows) {
                            let start = col.len();
                            if is_fixed(r) {
                                col.push(r as u32);
                            } else {
                                for &c in &touching[offsets[r]..offsets[r + 1]] {
                                    for &j in &cell_rows[c as usize * nb..(c as usize + 1) * nb] {
                                        if j != NONE && !is_fixed(j as usize) && seen[j as usize] != r as u32 {
                                            seen[j as usize] = r as u32;
                                            col.push(j);
                                        }
                                    }
                                }
                                col[start..].sort_unstable();
                            }
                            len.push((col.len() - start) as u32);
                        }
                        (len, col)
                    },
                )
                .collect()
        });
        let lens: Vec<u32> = blocks.iter().flat_map(|b| b.0.iter().copied()).collect();
        let row_ptr = row_offsets(&lens)?;
        let nnz = *row_ptr.last().expect("one offset") as usize;
        // the blocks' columns copied where they stay, in parallel: a serial
        // join of a pattern of 10⁸ entries took as long as building it
        let mut col = vec![0u32; nnz];
        cpu.install(|| row_blocks(&row_ptr, PATTERN_BLOCK, &mut col).into_par_iter().zip(blocks).for_each(|(to, (_, from))| to.copy_from_slice(&from)));
        Ok(Self { n_rows, row_ptr, col, val: vec![T::ZERO; nnz] })
    }

    /// The `n_rows` rows of `len(r)` entries each, written by `fill(r,
    /// columns, values)` (columns ascending), rows in parallel on the
    /// calling thread's pool: entries are written where they stay, with
    /// no vector per row.
    pub fn from_row_fn(n_rows: usize, len: impl Fn(usize) -> usize + Sync, fill: impl Fn(usize, &mut [u32], &mut [T]) + Sync) -> Result<Self> {
        let lens: Vec<u32> = (0..n_rows).into_par_iter().map(|r| len(r) as u32).collect();
        let row_ptr = row_offsets(&lens)?;
        let nnz = *row_ptr.last().expect("one offset") as usize;
        let (mut col, mut val) = (vec![0u32; nnz], vec![T::ZERO; nnz]);
        let blocks = row_blocks(&row_ptr, FILL_BLOCK, &mut col).into_par_iter().zip(row_blocks(&row_ptr, FILL_BLOCK, &mut val));
        blocks.enumerate().for_each(|(b, (mut c, mut v))| {
            for r in b * FILL_BLOCK..((b + 1) * FILL_BLOCK).min(n_rows) {
                let l = lens[r] as usize;
                let (cr, rest_c) = std::mem::take(&mut c).split_at_mut(l);
                let (vr, rest_v) = std::mem::take(&mut v).split_at_mut(l);
                fill(r, cr, vr);
                (c, v) = (rest_c, rest_v);
            }
        });
        Ok(Self { n_rows, row_ptr, col, val })
    }

    /// Keeps only the entries `keep(row, column)` holds, in place and in
    /// order: blocks of rows compact their entries in parallel, each to
    /// the start of its own span, and the blocks then move down in order
    /// (a move of contiguous memory). A copy of a large matrix filtered
    /// into new arrays would hold it twice.
    pub fn retain(&mut self, keep: impl Fn(usize, u32) -> bool + Sync) {
        let n = self.n_rows;
        let blocks = n.div_ceil(FILL_BLOCK);
        let starts: Vec<usize> = (0..=blocks).map(|b| self.row_ptr[(b * FILL_BLOCK).min(n)] as usize).collect();
        let lens = starts.windows(2).map(|w| w[1] - w[0]);
        let (cols, vals) = (cut(&mut self.col, lens.clone()), cut(&mut self.val, lens));
        let ends = cut(&mut self.row_ptr[1..], (0..blocks).map(|b| ((b + 1) * FILL_BLOCK).min(n) - b * FILL_BLOCK));
        // each block's row ends, counted from its own start; its kept count
        let kept: Vec<usize> = cols
            .into_par_iter()
            .zip(vals)
            .zip(ends)
            .enumerate()
            .map(|(b, ((col, val), ends))| {
                let (mut w, mut from) = (0, 0);
                for (i, end) in ends.iter_mut().enumerate() {
                    let to = *end as usize - starts[b];
                    for k in from..to {
                        if keep(b * FILL_BLOCK + i, col[k]) {
                            (col[w], val[w]) = (col[k], val[k]);
                            w += 1;
                        }
                    }
                    (from, *end) = (to, w as u32);
                }
                w
            })
            .collect();
        let mut at = 0;
        let mut bases = Vec::with_capacity(blocks);
        for (b, &k) in kept.iter().enumerate() {
            if at != starts[b] {
                self.col.copy_within(starts[b]..starts[b] + k, at);
                self.val.copy_within(starts[b]..starts[b] + k, at);
            }
            bases.push(at as u32);
            at += k;
        }
        cut(&mut self.row_ptr[1..], (0..blocks).map(|b| ((b + 1) * FILL_BLOCK).min(n) - b * FILL_BLOCK))
            .into_par_iter()
            .zip(bases)
            .for_each(|(ends, base)| ends.iter_mut().for_each(|e| *e += base));
        self.col.truncate(at);
        self.val.truncate(at);
    }

    /// Its pattern alone (no values), as a matrix of any precision: what
    /// the approximate inverses and a coarsest level's dense inverse are
    /// rebuilt on from values that change.
    pub fn pattern_only<U: Scalar>(&self) -> Csr<U> {
        self.with_values(Vec::new())
    }

    /// This pattern with the values `val` (a copy of its rows and columns).
    pub fn with_values<U: Scalar>(&self, val: Vec<U>) -> Csr<U> {
        Csr { n_rows: self.n_rows, row_ptr: self.row_ptr.par_iter().copied().collect(), col: self.col.par_iter().copied().collect(), val }
    }

    /// The same matrix in precision `U` (values rounded to nearest when
    /// narrowing).
    pub fn converted<U: Scalar>(&self) -> Csr<U> {
        let col = self.col.par_iter().copied().collect();
        let val = self.val.par_iter().map(|v| U::from_f64(v.to_f64())).collect();
        Csr { n_rows: self.n_rows, row_ptr: self.row_ptr.clone(), col, val }
    }

    /// The matrix in precision `U`: itself, borrowed, where `U` is `T`
    /// (no copy of a large pattern), else [`Csr::converted`].
    pub fn in_precision<U: Scalar>(&self) -> std::borrow::Cow<'_, Csr<U>> {
        match (self as &dyn std::any::Any).downcast_ref::<Csr<U>>() {
            Some(same) => std::borrow::Cow::Borrowed(same),
            None => std::borrow::Cow::Owned(self.converted()),
        }
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.col.len()
    }

    /// Entries stored in row `r`.
    pub fn row_len(&self, r: usize) -> usize {
        (self.row_ptr[r + 1] - self.row_ptr[r]) as usize
    }

    /// Entries of the longest row (0 without rows): the width of its
    /// ELLPACK form.
    pub fn max_row_len(&self) -> usize {
        (0..self.n_rows).map(|r| self.row_len(r)).max().unwrap_or(0)
    }

    /// Position in `col`/`val` of entry (r, c), if stored.
    pub fn position(&self, r: usize, c: u32) -> Option<usize> {
        let (lo, hi) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
        self.col[lo..hi].binary_search(&c).ok().map(|k| lo + k)
    }

    /// For every element entry, in the transposed layout
    /// `pos[(i·nb + j)·ne + e]`, its position in `val`, or `u32::MAX` where
    /// the entry does not enter the matrix: the indexing data of global
    /// assembly (Reguly & Giles eq. 16).
    pub fn element_positions(&self, layout: &Layout) -> Vec<u32> {
        let (nb, ne) = (layout.dofs_per_cell, layout.n_cells());
        let mut pos = vec![u32::MAX; ne * nb * nb];
        if ne == 0 {
            return pos;
        }
        // In parallel over the element row i: its nb planes are one
        // contiguous block, and each cell's row ri is searched for all j.
        pos.par_chunks_mut(nb * ne).enumerate().for_each(|(i, planes)| {
            for c in 0..ne {
                let ri = layout.cell_rows[c * nb + i];
                for j in (0..nb).filter(|&j| layout.couples(c, i, j)) {
                    let rj = layout.cell_rows[c * nb + j];
                    planes[j * ne + c] = self.position(ri as usize, rj).expect("pattern holds every coupling") as u32;
                }
            }
        });
        pos
    }

    /// The position in `val` of every entry of every element matrix, cell
    /// by cell (`(e·nb + i)·nb + j`; `u32::MAX` where the entry does not
    /// enter), cells in parallel ([`cell_entries`]).
    pub fn cell_positions(&self, layout: &Layout) -> Vec<u32> {
        let nb = layout.dofs_per_cell;
        // zeroed pages, set by the threads that fill them
        let mut pos = vec![0u32; layout.n_cells() * nb * nb];
        if nb == 0 {
            return pos;
        }
        pos.par_chunks_mut(nb * nb).enumerate().for_each_init(Vec::new, |order: &mut Vec<usize>, (c, out)| {
            out.fill(u32::MAX);
            cell_entries(&self.row_ptr, &self.col, layout, c, order, |i, j, k| out[i * nb + j] = k as u32);
        });
        pos
    }

    /// The global matrix and load of `cd` on the rows of `layout`, summed
    /// cell by cell as each cell's element matrix is computed: the cells of
    /// one colour in parallel, adding into their rows without atomics, and
    /// no element matrix or position stored (a scatter from stored element
    /// matrices keeps 12 bytes per entry of every cell and sums on one
    /// thread). Unit diagonal and zero load on fixed rows.
    pub fn assemble_cells<C: Coefficients<T, 2> + Coefficients<T, 3> + Sync>(cpu: &CpuBackend, layout: &Layout, cd: &CellData<T>, coeff: &C) -> Result<(Self, Vec<T>)> {
        let mut m = Self::pattern(cpu, layout)?;
        let (block, groups) = cell_blocks(cpu, layout);
        let nb = layout.dofs_per_cell;
        let mut load = vec![T::ZERO; layout.n_rows];
        let (val, b) = (SharedOut(m.val.as_mut_ptr()), SharedOut(load.as_mut_ptr()));
        let (row_ptr, col) = (&m.row_ptr, &m.col);
        each_cell(cpu, cd, coeff, &groups, block, Vec::new, |order, e, k, l| {
            let (val, b) = (val, b);
            // SAFETY: blocks of one colour share no row, the cells of a
            // block run on one core, and each cell writes only entries and
            // loads of its own rows.
            cell_entries(row_ptr, col, layout, e, order, |i, j, p| unsafe { *val.0.add(p) += k[i * nb + j] });
            for (i, &r) in layout.cell_rows[e * nb..(e + 1) * nb].iter().enumerate() {
                if r != NONE && !layout.fixed[r as usize] {
                    unsafe { *b.0.add(r as usize) += l[i] };
                }
            }
        })?;
        m.unit_fixed_diagonal(layout);
        Ok((m, load))
    }

    /// 1 on the diagonal of every fixed row.
    fn unit_fixed_diagonal(&mut self, layout: &Layout) {
        for r in (0..layout.n_rows).filter(|&r| layout.fixed[r]) {
            let p = self.position(r, r as u32).expect("fixed rows keep their diagonal");
            self.val[p] = T::ONE;
        }
    }

    /// Assembles the global matrix from element matrices (sum of the
    /// entries at each position; unit diagonal on fixed rows).
    pub fn assemble(cpu: &CpuBackend, layout: &Layout, elems: &ElementMatrices<T>) -> Result<Self> {
        let mut m = Self::pattern(cpu, layout)?;
        let pos = m.element_positions(layout);
        let (nb, ne) = (elems.nb, elems.ne);
        for (k, &p) in pos.iter().enumerate() {
            if p != u32::MAX {
                let (ij, e) = (k / ne, k % ne);
                m.val[p as usize] += elems.get(e, ij / nb, ij % nb);
            }
        }
        m.unit_fixed_diagonal(layout);
        Ok(m)
    }

    /// `y = A x` on the CPU, rows in parallel (one lane per row).
    pub fn spmv(&self, cpu: &CpuBackend, x: &[T], y: &mut [T]) {
        cpu.install(|| {
            y.par_iter_mut().enumerate().for_each(|(r, yr)| {
                let (lo, hi) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
                // SAFETY: positions come from row_ptr, columns are rows of x.
                *yr = unsafe { csr_row_part(lo, hi, 0, 1, self.col.as_ptr(), self.val.as_ptr(), x.as_ptr()) };
            })
        });
    }

    /// The diagonal, zero where `(r, r)` is not stored.
    pub fn diag(&self) -> Vec<T> {
        (0..self.n_rows).into_par_iter().map(|r| self.position(r, r as u32).map_or(T::ZERO, |p| self.val[p])).collect()
    }
}

impl<T: Scalar> LinearOperator<CpuBackend, T> for Csr<T> {
    fn rows(&self) -> usize {
        self.n_rows
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        if !crate::error::product_lens("csr spmv", self.n_rows, x.len(), y.len())? {
            return Ok(());
        }
        self.spmv(cpu, x, y);
        Ok(())
    }
    fn diagonal(&self, _cpu: &CpuBackend) -> Result<Vec<T>> {
        Ok(self.diag())
    }
    fn name(&self) -> String {
        "csr".into()
    }
}

/// Cells per block of [`cell_blocks`]: at most this many, so that a
/// block's rows stay in a core's caches.
const MAX_BLOCK: usize = 4096;

/// The cells of `layout` as [`Csr::assemble_cells`] visits them: blocks of
/// consecutive cells, about 16 per thread and at most [`MAX_BLOCK`] cells,
/// grouped by block colour ([`block_colours`]), each group its blocks'
/// cells in order (the short last block, if any, ends its group). Returns
/// the block size and the groups.
fn cell_blocks(cpu: &CpuBackend, layout: &Layout) -> (usize, Vec<Vec<u32>>) {
    let ne = layout.n_cells();
    let block = (ne / (16 * cpu.threads()).max(1)).clamp(64, MAX_BLOCK);
    let groups = block_colours(layout, block)
        .iter()
        .map(|blocks| blocks.iter().flat_map(|&b| (b as usize * block..((b as usize + 1) * block).min(ne)).map(|c| c as u32)).collect())
        .collect();
    (block, groups)
}

/// Calls `f(i, j, k)` with the position `k` in the pattern `row_ptr`,
/// `col` of every coupled entry (i, j) of cell `c`: the cell's columns are
/// sorted once (into `order`) and merged with each of its rows, with no
/// search per entry.
fn cell_entries(row_ptr: &[u32], col: &[u32], layout: &Layout, c: usize, order: &mut Vec<usize>, mut f: impl FnMut(usize, usize, usize)) {
    let nb = layout.dofs_per_cell;
    let rows = &layout.cell_rows[c * nb..(c + 1) * nb];
    order.clear();
    order.extend((0..nb).filter(|&j| rows[j] != NONE));
    order.sort_unstable_by_key(|&j| rows[j]);
    for i in 0..nb {
        if rows[i] == NONE {
            continue;
        }
        let r = rows[i] as usize;
        let (mut k, hi) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
        for &j in order.iter().filter(|&&j| layout.couples(c, i, j)) {
            while k < hi && col[k] < rows[j] {
                k += 1;
            }
            debug_assert!(k < hi && col[k] == rows[j], "pattern holds every coupling");
            f(i, j, k);
        }
    }
}

/// Rows per task of [`Csr::pattern`].
const PATTERN_BLOCK: usize = 4096;

/// Rows per task of [`Csr::from_row_fn`].
const FILL_BLOCK: usize = 1024;

/// Offsets of rows of lengths `lens` (`lens.len() + 1`, from 0); an error
/// past the u32 index range.
fn row_offsets(lens: &[u32]) -> Result<Vec<u32>> {
    let mut row_ptr = Vec::with_capacity(lens.len() + 1);
    let mut at = 0u64;
    row_ptr.push(0u32);
    for &l in lens {
        at += l as u64;
        if at > u32::MAX as u64 {
            return Err(Error::InvalidArgument(format!("more than {} nonzeros exceed the u32 index range of CSR", u32::MAX)));
        }
        row_ptr.push(at as u32);
    }
    Ok(row_ptr)
}

/// `x` (entries of rows `row_ptr`) cut into the entries of consecutive
/// blocks of `block` rows.
fn row_blocks<'a, X>(row_ptr: &[u32], block: usize, x: &'a mut [X]) -> Vec<&'a mut [X]> {
    let n_rows = row_ptr.len() - 1;
    cut(x, (0..n_rows.div_ceil(block)).map(|b| (row_ptr[((b + 1) * block).min(n_rows)] - row_ptr[b * block]) as usize))
}

/// `x` cut into consecutive parts of lengths `lens` (which must fit): the
/// disjoint outputs of work done in parallel.
pub(crate) fn cut<X>(mut x: &mut [X], lens: impl IntoIterator<Item = usize>) -> Vec<&mut [X]> {
    lens.into_iter()
        .map(|len| {
            let (head, rest) = std::mem::take(&mut x).split_at_mut(len);
            x = rest;
            head
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries kept in place are those a filter of every row keeps, in
    /// order: empty rows, a long row, sizes not a multiple of the block,
    /// nothing or everything kept.
    #[test]
    fn retained_entries_are_those_a_filter_keeps() {
        for n in [0, 1, 1023, 1025, 2500] {
            let m = Csr::<f64>::from_row_fn(n, |r| if r == n / 2 { 3000 } else { r % 5 }, |r, col, val| {
                for (k, (c, v)) in col.iter_mut().zip(val).enumerate() {
                    (*c, *v) = ((r + 7 * k) as u32, (r * 10_000 + k) as f64);
                }
            })
            .unwrap();
            let filters: [&(dyn Fn(usize, u32) -> bool + Sync); 3] = [&|r, c| r % 3 != 1 && c % 4 != 2, &|_, _| false, &|_, _| true];
            for keep in filters {
                let mut got = m.clone();
                got.retain(keep);
                let mut want = Csr { n_rows: n, row_ptr: vec![0], col: Vec::new(), val: Vec::new() };
                for r in 0..n {
                    for k in m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize {
                        if keep(r, m.col[k]) {
                            want.col.push(m.col[k]);
                            want.val.push(m.val[k]);
                        }
                    }
                    want.row_ptr.push(want.col.len() as u32);
                }
                assert!(got.n_rows == n && got.row_ptr == want.row_ptr && got.col == want.col && got.val == want.val, "{n} rows");
            }
        }
    }

    /// Rows written in place equal rows built one by one: empty rows, one
    /// long row, a count not a multiple of the block, and no rows at all.
    #[test]
    fn rows_written_in_place_equal_rows_built_one_by_one() {
        for n in [0, 1, 1023, 1024, 2500] {
            let len = |r: usize| if r == n / 2 { 3000 } else { r % 5 };
            let m = Csr::<f64>::from_row_fn(n, len, |r, col, val| {
                for (k, (c, v)) in col.iter_mut().zip(val).enumerate() {
                    (*c, *v) = ((r + 7 * k) as u32, (r * 10_000 + k) as f64);
                }
            })
            .unwrap();
            let (mut row_ptr, mut col, mut val) = (vec![0u32], Vec::new(), Vec::new());
            for r in 0..n {
                for k in 0..len(r) {
                    col.push((r + 7 * k) as u32);
                    val.push((r * 10_000 + k) as f64);
                }
                row_ptr.push(col.len() as u32);
            }
            assert_eq!((m.n_rows, &m.row_ptr, &m.col, &m.val), (n, &row_ptr, &col, &val), "{n} rows");
        }
    }
    use crate::mesh::simplex::SimplexBox;
    use crate::operator::pointwise::field_layout;
    use crate::space::Space;

    /// The pattern is, row by row, the set of rows coupled to it through
    /// a cell (a fixed row: its diagonal), on a P2 vector field with rows
    /// held fixed and on a 3D Q2 box of several blocks of rows shuffled,
    /// on 1 and 3 threads.
    #[test]
    fn pattern_is_the_set_of_coupled_rows() {
        use crate::mesh::BoxMesh;
        use std::collections::BTreeSet;
        let space = Space::simplex(&SimplexBox::unstructured(2, 3, 2).build().unwrap(), 2).unwrap();
        let mut vector = field_layout(&space, 2);
        for r in (0..vector.n_rows).step_by(7) {
            vector.fixed[r] = true;
        }
        let hex = Space::tensor(&BoxMesh::unstructured(3, 11, 4).build().unwrap(), 2).unwrap();
        let hex = Layout::new(&hex, crate::space::DirichletMode::Zero);
        assert!(hex.n_rows > 2 * PATTERN_BLOCK);
        for layout in [vector, hex] {
            let nb = layout.dofs_per_cell;
            let mut want = vec![BTreeSet::new(); layout.n_rows];
            for c in 0..layout.n_cells() {
                for i in 0..nb {
                    for j in (0..nb).filter(|&j| layout.couples(c, i, j)) {
                        want[layout.cell_rows[c * nb + i] as usize].insert(layout.cell_rows[c * nb + j]);
                    }
                }
            }
            for (r, w) in want.iter_mut().enumerate().filter(|(r, _)| layout.fixed[*r]) {
                w.insert(r as u32);
            }
            for threads in [1, 3] {
                let m = Csr::<f64>::pattern(&CpuBackend::new(Some(threads)).unwrap(), &layout).unwrap();
                for (r, w) in want.iter().enumerate() {
                    let got = &m.col[m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize];
                    assert_eq!(got, w.iter().copied().collect::<Vec<_>>(), "row {r} of {}, {threads} threads", layout.n_rows);
                }
                assert_eq!(m.nnz(), want.iter().map(BTreeSet::len).sum::<usize>());
            }
        }
    }

    /// The merge finds the positions the search by entry finds, on a P2
    /// vector field with rows held fixed (entries that do not enter).
    #[test]
    fn cell_positions_are_element_positions_cell_by_cell() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let space = Space::simplex(&SimplexBox::unstructured(2, 3, 2).build().unwrap(), 2).unwrap();
        let mut layout = field_layout(&space, 2);
        for r in (0..layout.n_rows).step_by(7) {
            layout.fixed[r] = true;
        }
        let csr = Csr::<f64>::pattern(&cpu, &layout).unwrap();
        let (nb, ne) = (layout.dofs_per_cell, layout.n_cells());
        let lma = csr.element_positions(&layout);
        let by_cell = csr.cell_positions(&layout);
        assert_eq!(by_cell.len(), lma.len());
        for k in 0..by_cell.len() {
            let (e, ij) = (k / (nb * nb), k % (nb * nb));
            assert_eq!(by_cell[k], lma[ij * ne + e], "cell {e}, entry {ij}");
        }
        assert!(by_cell.iter().any(|&p| p == u32::MAX) && by_cell.iter().any(|&p| p != u32::MAX));
    }

    /// Element matrices and loads entry by entry, with the GPU's per-entry
    /// kernel, serially: the reference of the CPU's contraction.
    fn entry_by_entry(cd: &CellData<f64>, symmetric: bool) -> ElementMatrices<f64> {
        use fem_core::poisson::{Scaled, SinePoisson};
        use fem_kernels::cells;
        let (ne, nb) = (cd.ne, cd.nb);
        let len = if symmetric { nb * (nb + 1) / 2 } else { nb * nb };
        let (mut vals, mut load) = (vec![0.0; len * ne], vec![0.0; nb * ne]);
        let tables = crate::operator::tables::RefTables::<f64>::new(cd.degree, crate::operator::elements::quadrature_points(cd.degree));
        let tab = tables.view();
        fem_kernels::with_element!(cd.dim, cd.degree, D, NB, QD => for e in 0..ne {
            // SAFETY: the arrays hold ne cells; each writes its own entries.
            unsafe {
                let verts = cells::vertices::<f64, D>(e, ne, cd.verts.as_ptr());
                let rows: [u32; NB] = core::array::from_fn(|i| cd.map[i * ne + e]);
                let coeff = &Scaled { factor: cd.kappa[e], inner: &SinePoisson };
                if symmetric {
                    cells::assemble::<f64, _, D, NB, QD, true>(e, ne, &tab, &verts, coeff, &rows, cells::Strategy::Redundant, vals.as_mut_ptr(), load.as_mut_ptr());
                } else {
                    cells::assemble::<f64, _, D, NB, QD, false>(e, ne, &tab, &verts, coeff, &rows, cells::Strategy::Redundant, vals.as_mut_ptr(), load.as_mut_ptr());
                }
            }
        })
        .unwrap();
        ElementMatrices { nb, ne, symmetric, vals, load }
    }

    fn close(a: &[f64], b: &[f64], what: &str) {
        let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert_eq!(a.len(), b.len(), "{what}: lengths");
        for (k, (x, y)) in a.iter().zip(b).enumerate() {
            assert!((x - y).abs() <= 1e-12 * scale, "{what}: entry {k}: {x} != {y}");
        }
    }

    /// The matrix and load summed as each cell's element matrix is computed
    /// (contraction, cells coloured and in parallel) equal the serial
    /// scatter of element matrices computed entry by entry by the GPU's
    /// kernel, and so do the stored element matrices (both layouts): degree
    /// 1 and the highest in 2D and 3D, structured and unstructured cells,
    /// material factors per cell, eliminated and kept (unit-diagonal) rows.
    #[test]
    fn cells_summed_as_computed_equal_the_scatter_of_entry_by_entry_matrices() {
        use crate::mesh::BoxMesh;
        use crate::operator::elements::{assemble_with, load_vector};
        use crate::space::DirichletMode;
        use fem_core::poisson::SinePoisson;
        let cpu = CpuBackend::new(Some(3)).unwrap();
        for (dim, p, cells) in [(2, 1, 7), (2, 1, 40), (2, 6, 3), (3, 1, 5), (3, 1, 12), (3, 2, 3), (3, 4, 2)] {
            for unstructured in [false, true] {
                let mesh = if unstructured { BoxMesh::unstructured(dim, cells, 5) } else { BoxMesh::structured(dim, cells) }.build().unwrap();
                let space = Space::tensor(&mesh, p).unwrap();
                for mode in [DirichletMode::Eliminate, DirichletMode::Zero] {
                    let what = format!("{dim}D Q{p}, unstructured {unstructured}, {mode:?}");
                    let layout = Layout::new(&space, mode);
                    let mut cd = CellData::<f64>::new(&space, &layout);
                    cd.kappa.iter_mut().enumerate().for_each(|(e, k)| *k = 1.0 + (e % 3) as f64 * 10.0);
                    let (m, b) = Csr::assemble_cells(&cpu, &layout, &cd, &SinePoisson).unwrap();
                    let reference = entry_by_entry(&cd, false);
                    let want = Csr::assemble(&cpu, &layout, &reference).unwrap();
                    assert_eq!((&m.row_ptr, &m.col), (&want.row_ptr, &want.col), "{what}: pattern");
                    close(&m.val, &want.val, &what);
                    close(&b, &load_vector(&cd, &reference), &format!("{what}: load"));
                    assert!(m.val.iter().any(|&v| v < 0.0) && b.iter().any(|&v| v != 0.0), "{what}: not trivial");
                    // symmetric to the last bit, as a symmetric form's matrix should be
                    for r in 0..m.n_rows {
                        for k in m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize {
                            let t = m.position(m.col[k] as usize, r as u32).expect("symmetric pattern");
                            assert!(m.val[k] == m.val[t], "{what}: ({r}, {}) {} != {}", m.col[k], m.val[k], m.val[t]);
                        }
                    }
                    for symmetric in [false, true] {
                        let got = assemble_with(&cpu, &cd, symmetric, &SinePoisson).unwrap();
                        let want = entry_by_entry(&cd, symmetric);
                        close(&got.vals, &want.vals, &format!("{what}: element matrices, symmetric {symmetric}"));
                        close(&got.load, &want.load, &format!("{what}: element loads"));
                    }
                }
            }
        }
    }

    /// A cell turned inside out is named, and nothing is returned.
    #[test]
    fn an_inverted_cell_is_an_error() {
        use crate::mesh::BoxMesh;
        use fem_core::poisson::SinePoisson;
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let space = Space::tensor(&BoxMesh::structured(2, 3).build().unwrap(), 2).unwrap();
        let layout = Layout::new(&space, crate::space::DirichletMode::Eliminate);
        let mut cd = CellData::<f64>::new(&space, &layout);
        // swap x and y of cell 4's vertices: the map's orientation flips
        let ne = cd.ne;
        for k in 0..4 {
            cd.verts.swap(k * 2 * ne + 4, (k * 2 + 1) * ne + 4);
        }
        let err = Csr::assemble_cells(&cpu, &layout, &cd, &SinePoisson).unwrap_err().to_string();
        assert!(err.contains("cell 4") && err.contains("non-positive Jacobian"), "{err}");
    }
}
