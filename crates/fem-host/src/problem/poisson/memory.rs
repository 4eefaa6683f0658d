//! What a Q_p Poisson solve on a generated box holds on the GPU at its
//! peak, known from the options alone: a problem that cannot fit is
//! refused before its mesh is made, where it would otherwise fail at its
//! first upload after a minute of host work (and 40 GB of host memory at
//! 250M DOFs).
//!
//! The peak is the cells the kernels read (kept for every storage: the
//! transposed map, each cell's vertex coordinates and κ, 233 B a Q1 cell
//! in f64) plus the largest of three moments: the upload, which also
//! holds the rows and corners as sent and the mesh's vertices; the
//! assembly, which holds the storage and its build's transients (the
//! element entries' slots, the pattern, the element matrices of the lazy
//! ELLPACK); and the solve, which holds the storage, CG's vectors and the
//! error's per-cell values. At Q1 matrix-free that is 321 B a cell, at
//! the upload.

use super::{Format, MeshSource, PoissonOptions};
use crate::{CudaBackend, Result};

/// Sizes of the Q_p Laplacian on a box with its boundary rows eliminated:
/// what any numbering and Dirichlet mode stores at the least.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoxSizes {
    /// Rows: the interior nodes.
    pub rows: usize,
    /// Cells.
    pub cells: usize,
    /// Nodes per cell.
    pub nb: usize,
    /// Stored entries: interior couplings.
    pub nnz: usize,
    /// ELLPACK slots: every row padded to the longest.
    pub slots: usize,
    /// Mesh vertices: the cells' corners.
    pub vertices: usize,
}

/// `x^d`, saturating: sizes of absurd requests stay comparable.
fn pow(x: usize, d: usize) -> usize {
    x.checked_pow(d as u32).unwrap_or(usize::MAX)
}

impl BoxSizes {
    /// Q_`degree` on `cells`^`dim` cells. The pattern is a tensor product
    /// of the 1D one: an interior node couples with the interior nodes of
    /// the cells around it (two cells at a vertex, one inside a cell).
    pub fn new(dim: usize, degree: usize, cells: usize) -> Self {
        // nodes 0..=m along an axis (past 2^41, any size saturates)
        let m = cells.saturating_mul(degree).min(1 << 41);
        let couplings = |i: usize| {
            let (lo, hi) = if i % degree == 0 { (i - degree, i + degree) } else { (i / degree * degree, i / degree * degree + degree) };
            hi.min(m - 1) + 1 - lo.max(1)
        };
        // along an axis the pattern repeats from cell to cell: the first
        // and last two cells' nodes, and one interior cell's counted once
        let (mut nnz, mut longest) = (0usize, 0usize);
        let mut add = |i: usize, times: usize| {
            let c = couplings(i);
            nnz = nnz.saturating_add(c.saturating_mul(times));
            longest = longest.max(c);
        };
        if cells <= 5 {
            (1..m).for_each(|i| add(i, 1));
        } else {
            // cells 0, 1 and the last two in full, cell 2 for the cells 2..cells − 2
            (1..2 * degree).for_each(|i| add(i, 1));
            (2 * degree..3 * degree).for_each(|i| add(i, cells - 4));
            (m - 2 * degree..m).for_each(|i| add(i, 1));
        }
        let rows = pow(m.saturating_sub(1), dim);
        Self { rows, cells: pow(cells, dim), nb: pow(degree + 1, dim), nnz: pow(nnz, dim), slots: rows.saturating_mul(pow(longest, dim)), vertices: pow(cells.saturating_add(1), dim) }
    }

    /// Bytes on the device at the solve's peak (see the module's doc)
    /// with the operator in `format` and `value_bytes`-byte values.
    pub fn device_bytes(&self, format: Format, value_bytes: usize, dim: usize, symmetric: bool) -> usize {
        let (s, t) = (self, value_bytes);
        // past every index range (2^40 entries): refused whatever it stores
        if [s.rows, s.nnz, s.slots, s.cells.saturating_mul(s.nb).saturating_mul(s.nb)].iter().any(|&v| v > 1 << 40) {
            return usize::MAX;
        }
        let nv = 1 << dim;
        // map, vertex coordinates and κ per cell, a fixed flag per row
        let cells = s.cells * (4 * s.nb + nv * dim * t + t) + s.rows;
        // rows and corners as sent, and the mesh's vertices in f64
        let upload = s.cells * 4 * (s.nb + nv) + s.vertices * 8 * dim;
        let pattern = s.nnz * 4 + (s.rows + 1) * 4;
        let (entries, load) = (s.cells * s.nb * s.nb, s.cells * s.nb * t);
        // the storage beyond the cells, and its build's transients beside it
        let (stored, build) = match format {
            Format::Csr => (s.nnz * t + pattern, 4 * entries),
            Format::Ell => (s.slots * (t + 4), 4 * entries + pattern),
            Format::LazyEll => (s.slots * (t + 4), entries * t + load),
            Format::Lma => (s.cells * if symmetric { s.nb * (s.nb + 1) / 2 } else { s.nb * s.nb } * t, load),
            Format::MatrixFree => (0, 0),
        };
        // load, solution, CG's warm-up, residual, preconditioned residual,
        // direction, product, the Jacobi and the operator's diagonals
        let solve = 9 * s.rows * t + s.cells * t;
        cells + upload.max(stored + build.max(solve))
    }
}

/// The options' box and its sizes, for generated meshes.
pub fn box_sizes(opts: &PoissonOptions) -> Option<(usize, usize, BoxSizes)> {
    match &opts.mesh {
        MeshSource::Box(b) => Some((b.dim, b.cells, BoxSizes::new(b.dim, opts.degree, b.cells))),
        MeshSource::Given(_) => None,
    }
}

/// What the solve of `opts` holds on the device at the least, with
/// `value_bytes`-byte values; `None` for a given mesh (each allocation
/// checks its own).
pub fn device_bytes_at_least(opts: &PoissonOptions, value_bytes: usize) -> Option<usize> {
    box_sizes(opts).map(|(dim, _, s)| s.device_bytes(opts.format, value_bytes, dim, opts.symmetric))
}

/// Refuses, before anything is made, a solve of `opts` whose operator and
/// CG vectors alone would not fit in the GPU's free memory.
pub fn ensure_fits(gpu: &CudaBackend, opts: &PoissonOptions, value_bytes: usize) -> Result<()> {
    let Some((dim, cells, sizes)) = box_sizes(opts) else { return Ok(()) };
    let needs = sizes.device_bytes(opts.format, value_bytes, dim, opts.symmetric);
    gpu.ensure_problem_fits(&format!("Q{} Poisson on {cells}^{dim} cells stored as {}", opts.degree, opts.format.name()), needs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::BoxMesh;
    use crate::operator::csr::Csr;
    use crate::space::{DirichletMode, Layout, Space};

    /// The sizes are those of the eliminated pattern built from the mesh,
    /// for degrees 1 to 3, boxes of one cell to more than the repeated
    /// middle, in 2D and 3D; a box without interior nodes has no rows.
    #[test]
    fn box_sizes_are_the_built_patterns() {
        let cpu = crate::CpuBackend::new(Some(2)).unwrap();
        for dim in [2, 3] {
            for degree in 1..=3 {
                for cells in [1, 2, 3, 6, 9] {
                    if dim == 3 && cells > 6 {
                        continue;
                    }
                    let mesh = BoxMesh::unstructured(dim, cells, 5).build().unwrap();
                    let space = Space::tensor(&mesh, degree).unwrap();
                    let layout = Layout::new(&space, DirichletMode::Eliminate);
                    let csr = Csr::<f64>::pattern(&cpu, &layout).unwrap();
                    let s = BoxSizes::new(dim, degree, cells);
                    let what = format!("{dim}D Q{degree}, {cells} cells");
                    assert_eq!((s.rows, s.cells, s.nb, s.nnz), (csr.n_rows, space.n_cells(), space.nb(), csr.nnz()), "{what}");
                    assert_eq!(s.slots, csr.n_rows * csr.max_row_len(), "{what}");
                }
            }
        }
    }

    /// Matrix-free needs the least, every format more than its operator's
    /// values plus the cells' coordinates; Q1 matrix-free peaks at the
    /// upload, where the map, the coordinates, κ and the fixed flags
    /// (233 B a cell) meet the rows and corners as sent and the vertices
    /// (88 B a cell); a request past every index range saturates instead
    /// of wrapping round to a small number.
    #[test]
    fn device_bytes_order_the_formats_and_saturate() {
        let s = BoxSizes::new(3, 2, 40);
        let b = |f| s.device_bytes(f, 8, 3, false);
        assert!(Format::ALL.iter().filter(|&&f| f != Format::MatrixFree).all(|&f| b(Format::MatrixFree) < b(f)));
        let coords = s.cells * 8 * 3 * 8;
        assert!(b(Format::Csr) > 8 * s.nnz + coords && b(Format::Ell) >= 8 * s.slots + coords);
        let q1 = BoxSizes::new(3, 1, 200);
        let per_cell = q1.device_bytes(Format::MatrixFree, 8, 3, false) as f64 / q1.cells as f64;
        assert!((321.0..322.0).contains(&per_cell), "{per_cell} B a cell");
        let huge = BoxSizes::new(3, 8, usize::MAX / 4);
        assert!(huge.device_bytes(Format::Ell, 8, 3, false) > 1 << 60);
    }
}
