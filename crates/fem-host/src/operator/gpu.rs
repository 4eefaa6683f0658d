//! The operators on the GPU: data uploaded in the layouts of
//! `fem_kernels::sparse`, assembly and products by the kernels of
//! `fem_kernels::gpu::fem`, scatter by atomics or two-level colouring.
//!
//! Set-up that the paper also does on the CPU: the sparsity pattern and
//! the colourings are built on the host; the formats, the element entries'
//! positions in them ([`super::device_pattern`]), assembly, diagonals and
//! every product on the device.

use super::cell_data::{bytes_of_flags, lazy_row_capacity, material_factors};
use super::colouring::TwoLevel;
use super::device_pattern::DevicePattern;
use super::csr::Csr;
use super::elements::{quadrature_points, LocalVariant};
use super::tables::RefTables;
use super::LinearOperator;
use crate::space::{Layout, Space};
use crate::{Backend, CudaBackend, Error, Result, Scalar};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use fem_kernels::launch::WARP;
use fem_kernels::cells::node_entries;
use fem_kernels::sparse::{LMA_GROUPS, SHARED_GATHER_ABOVE};
use std::sync::Arc;

/// Launches the coloured kernel `$f` once per block colour of the cells
/// `$c` on stream `$s`: its arguments are `$before`, then the colour's
/// blocks, the thread colours and the per-block colour counts, then
/// `$after` (each re-evaluated per launch, so `&mut *y` may appear).
macro_rules! launch_by_colour {
    ($s:expr, $f:expr, $c:expr; [$($before:expr),*]; [$($after:expr),*]) => {
        let colouring = $c.colouring()?;
        for (k, blocks) in colouring.blocks.iter().enumerate() {
            unsafe {
                $s.launch_builder(&$f)
                    $(.arg($before))*
                    .arg(blocks)
                    .arg(&colouring.thread_colour)
                    .arg(&colouring.n_colours)
                    $(.arg($after))*
                    .launch(colouring.grid(k))
            }?;
        }
    };
}

/// Threads per block of the element kernels (and cells per colouring block).
pub const ELEMENT_BLOCK: u32 = 128;

/// How element values are summed into global ones without write races.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scatter {
    /// Every cell adds into its rows with atomic additions, in one launch
    /// (on the CPU: row sums through the transposed map, or a serial scatter).
    #[default]
    Atomic,
    /// Plain writes ordered by the two-level colouring: one launch per
    /// block colour, thread colours in turn between barriers (the Q_p
    /// Poisson kernels).
    Colour,
    /// Every global value the sum of a row of a 0/1 gather matrix, by SpMV
    /// (Wong, Kuhl & Darve's race-free assembly; the pipeline's Newton
    /// solver and cardiac): deterministic, and as fast as the SpMV kernel.
    Spmv,
}

impl Scatter {
    /// The error of a kernel family that has no `self` variant.
    pub fn unavailable(self, what: &str) -> Error {
        let name = match self {
            Self::Atomic => "atomic",
            Self::Colour => "colour",
            Self::Spmv => "spmv",
        };
        Error::InvalidArgument(format!("{what} has no `{name}` scatter"))
    }
}

impl std::str::FromStr for Scatter {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "atomic" => Ok(Self::Atomic),
            "colour" | "color" => Ok(Self::Colour),
            "spmv" => Ok(Self::Spmv),
            _ => Err(format!("unknown scatter `{s}` (atomic, colour, spmv)")),
        }
    }
}

/// Two-level colouring on the device.
pub struct GpuColouring {
    /// Thread colour of every cell within its block ([`TwoLevel::thread_colour`]).
    pub thread_colour: CudaSlice<u8>,
    /// Thread colours used in every block ([`TwoLevel::block_n_colours`]).
    pub n_colours: CudaSlice<u8>,
    /// Block ids of each block colour, one launch each ([`TwoLevel::block_colours`]).
    pub blocks: Vec<CudaSlice<u32>>,
}

impl GpuColouring {
    /// Launch of block colour `k`.
    fn grid(&self, k: usize) -> LaunchConfig {
        LaunchConfig { grid_dim: (self.blocks[k].len() as u32, 1, 1), block_dim: (ELEMENT_BLOCK, 1, 1), shared_mem_bytes: 0 }
    }
}

/// The per-cell input of the element kernels on the device.
pub struct GpuCells<T: Scalar> {
    /// Spatial dimension (2 or 3); selects the kernel.
    pub dim: usize,
    /// Polynomial degree p; selects the kernel.
    pub degree: usize,
    /// Cells.
    pub ne: usize,
    /// Plane stride of the element matrices and loads (LMA layout),
    /// [`plane_stride`] of `ne`.
    pub ld: usize,
    /// Basis functions per cell.
    pub nb: usize,
    /// Rows of the linear system.
    pub n_rows: usize,
    /// Basis nodes per direction, p + 1.
    pub np: usize,
    /// Quadrature points per direction.
    pub nq: usize,
    /// The transposed element-to-row map with fixed flags ([`CellData::map`](super::cell_data::CellData::map)).
    pub map: CudaSlice<u32>,
    /// Transposed cell vertex coordinates ([`CellData::verts`](super::cell_data::CellData::verts)).
    pub verts: CudaSlice<T>,
    /// Each cell's material factor on κ ([`CellData::kappa`](super::cell_data::CellData::kappa)).
    pub kappa: CudaSlice<T>,
    /// The [`RefTables`] packed one after another: points, weights, values
    /// and derivatives.
    pub tab: CudaSlice<T>,
    /// 1 on fixed rows, 0 elsewhere (absent when no row is fixed).
    pub fixed_mask: Option<CudaSlice<T>>,
    /// One byte per row, nonzero on fixed rows (what the map's flags were
    /// made from; the pattern's fixed rows are read from it).
    pub fixed_flags: CudaSlice<u8>,
    /// Two-level colouring of the cells, for [`Scatter::Colour`]: built
    /// only when asked for (a serial host pass, most of the 11.5 s its
    /// upload stage took at 8M cells when it was built for every scatter).
    pub colouring: Option<GpuColouring>,
    /// Fixed (Dirichlet) rows kept in the system ([`CellData::fixed_rows`](super::cell_data::CellData::fixed_rows)).
    pub fixed_rows: Vec<u32>,
}

impl<T: Scalar> GpuCells<T> {
    /// The cells of `layout` on its `space`, with material factors
    /// `kappa` (1 without), the reference tables of their degree and, for
    /// `scatter` by colour, the two-level colouring in blocks of
    /// [`ELEMENT_BLOCK`] cells. The mesh's vertices, the cells' corners and
    /// rows go up as they are; the transposed map and vertex coordinates
    /// the kernels read are made on the device (`cell_inputs`, one source
    /// with [`CellData::new`](super::cell_data::CellData::new)): the host neither builds nor sends the
    /// coordinates per cell (1.5 GB in f64 at 8M hexahedra).
    pub fn upload(gpu: &CudaBackend, space: &Space, layout: &Layout, kappa: Option<&[f64]>, scatter: Scatter) -> Result<Self> {
        let (ne, nb, dim, degree) = (layout.n_cells(), layout.dofs_per_cell, space.dim(), space.degree);
        let kappa = match kappa {
            Some(k) => material_factors::<T>(k, ne)?,
            None => vec![T::ONE; ne],
        };
        let tables = RefTables::<T>::new(degree, quadrature_points(degree));
        let s = gpu.stream();
        let fixed_rows = layout.fixed_rows();
        let fixed_mask = if fixed_rows.is_empty() {
            None
        } else {
            let mut m = vec![T::ZERO; layout.n_rows];
            for &r in &fixed_rows {
                m[r as usize] = T::ONE;
            }
            Some(gpu.upload(&m)?)
        };
        let colouring = match scatter {
            Scatter::Colour => {
                let tl = TwoLevel::new(layout, ELEMENT_BLOCK as usize)?;
                Some(GpuColouring {
                    thread_colour: gpu.htod(&tl.thread_colour)?,
                    n_colours: gpu.htod(&tl.block_n_colours)?,
                    blocks: tl.block_colours.iter().map(|b| gpu.htod(b)).collect::<Result<_>>()?,
                })
            }
            _ => None,
        };
        let nv = 1 << dim;
        let inputs = layout.cell_rows.len() * 4 + layout.n_rows + space.cell_vertices.len() * 4 + space.vertices.len() * 24;
        gpu.ensure_free(inputs + nb * ne * 4 + (nv * dim + 1) * ne * T::BYTES)?;
        let rows = gpu.htod(&layout.cell_rows)?;
        let fixed = gpu.htod(bytes_of_flags(&layout.fixed))?;
        let corners = gpu.htod(&space.cell_vertices)?;
        let coords = gpu.htod(space.vertices.as_flattened())?;
        let mut map = s.alloc_zeros::<u32>(nb * ne)?;
        let mut verts = gpu.zeros::<T>(nv * dim * ne)?;
        let f = gpu.function(&format!("fem_cell_inputs_{}", T::NAME))?;
        unsafe { s.launch_builder(&f).arg(&ne).arg(&nb).arg(&dim).arg(&rows).arg(&fixed).arg(&corners).arg(&coords).arg(&mut map).arg(&mut verts).launch(gpu.per_item(nb.max(nv * dim) * ne)) }?;
        Ok(Self {
            dim,
            degree,
            ne,
            ld: plane_stride(ne),
            nb,
            n_rows: layout.n_rows,
            np: tables.np,
            nq: tables.nq,
            map,
            verts,
            kappa: gpu.upload(&kappa)?,
            tab: gpu.upload(&tables.packed())?,
            fixed_mask,
            fixed_flags: fixed,
            colouring,
            fixed_rows,
        })
    }

    /// ‖u_h − u‖_L2 of the solution rows `x` against the sine problem's
    /// exact solution (u_h = 0 on fixed and eliminated nodes), on the device: each
    /// cell's error by a rule of p + 2 Gauss points per direction (exact
    /// for the integrand's polynomial part, as the host's error rule), their
    /// 2-norm by a reduction. The host's [`crate::space::integrate::l2_error`]
    /// read every cell's nodes and evaluated 27 sines per Q1 cell: 1.3 s at
    /// 8M cells on 16 cores.
    pub fn sine_l2_error(&self, gpu: &CudaBackend, x: &CudaSlice<T>) -> Result<f64> {
        let tables = RefTables::<T>::new(self.degree, self.degree + 2);
        let tab = gpu.upload(&tables.packed())?;
        let mut err = gpu.zeros::<T>(self.ne)?;
        let f = self.kernel(gpu, "sine_error", "")?;
        unsafe { gpu.stream().launch_builder(&f).arg(&self.ne).arg(&tables.np).arg(&tables.nq).arg(&tab).arg(&self.verts).arg(&self.map).arg(x).arg(&mut err).launch(self.cell_grid()) }?;
        Ok(gpu.norm2(&err)?.to_f64())
    }

    /// Compiles and loads the element kernel `fem_<base>_<d>d_p<p><extra>_<precision>`
    /// ahead of a timed region, so its JIT compilation is not timed.
    pub fn preload(&self, gpu: &CudaBackend, base: &str, extra: &str) -> Result<()> {
        self.kernel(gpu, base, extra).map(drop)
    }

    /// `fem_<base>_<d>d_p<p><extra>_<precision>`.
    fn kernel(&self, gpu: &CudaBackend, base: &str, extra: &str) -> Result<cudarc::driver::CudaFunction> {
        gpu.function(&format!("fem_{base}_{}d_p{}{extra}_{}", self.dim, self.degree, T::NAME))
    }

    /// One thread per cell. Cell kernels keep no per-block partials, so
    /// nothing is gained by capping the grid, and a capped grid-stride loop
    /// whose last pass is partly idle loses a large share of the bandwidth.
    fn cell_grid(&self) -> LaunchConfig {
        let blocks = self.ne.div_ceil(ELEMENT_BLOCK as usize).clamp(1, u32::MAX as usize) as u32;
        LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (ELEMENT_BLOCK, 1, 1), shared_mem_bytes: 0 }
    }

    /// One block of `LMA_GROUPS` warps per 32 cells, their gathered
    /// inputs in shared memory (at most 32 KB: 125 rows of f64).
    fn shared_lma_grid(&self) -> LaunchConfig {
        let warp = WARP as usize;
        let blocks = self.ne.div_ceil(warp).clamp(1, u32::MAX as usize) as u32;
        LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: ((warp * LMA_GROUPS) as u32, 1, 1), shared_mem_bytes: (warp * self.nb * T::BYTES) as u32 }
    }

    /// The two-level colouring, or why there is none.
    fn colouring(&self) -> Result<&GpuColouring> {
        self.colouring.as_ref().ok_or_else(|| Error::InvalidArgument("these cells were uploaded for atomic scatter: no colouring to scatter by".into()))
    }

    /// `y ← x` on fixed rows, 0 elsewhere: the start of a product by cells.
    fn init_output(&self, gpu: &CudaBackend, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        match &self.fixed_mask {
            Some(m) => gpu.mul(m, x, y),
            None => Ok(gpu.stream().memset_zeros(y)?),
        }
    }

    /// The diagonal of the element matrices `vals` (full or packed
    /// `sym` layout) summed into rows, 1 on fixed rows, on the device.
    fn diagonal_from(&self, gpu: &CudaBackend, vals: &CudaSlice<T>, sym: bool) -> Result<CudaSlice<T>> {
        let what = if sym { node_entries::PACKED_DIAGONAL } else { node_entries::DIAGONAL };
        self.sum_into_rows(gpu, vals, what, self.fixed_diagonal(gpu)?)
    }

    /// 1 on fixed rows, 0 elsewhere: where a diagonal summed from the
    /// cells starts.
    fn fixed_diagonal(&self, gpu: &CudaBackend) -> Result<CudaSlice<T>> {
        match &self.fixed_mask {
            Some(m) => Ok(gpu.stream().clone_dtod(m)?),
            None => gpu.zeros::<T>(self.n_rows),
        }
    }

    /// `out` plus what `what` ([`node_entries`]) picks of every free
    /// (cell, node) pair of the E-vector `ev`, summed into the node's row.
    fn sum_into_rows(&self, gpu: &CudaBackend, ev: &CudaSlice<T>, what: usize, mut out: CudaSlice<T>) -> Result<CudaSlice<T>> {
        let f = gpu.function(&format!("fem_sum_cells_into_rows_what{what}_{}", T::NAME))?;
        let n = self.nb * self.ne;
        unsafe { gpu.stream().launch_builder(&f).arg(&self.ne).arg(&self.nb).arg(&self.ld).arg(&self.map).arg(ev).arg(&mut out).launch(gpu.per_item(n)) }?;
        Ok(out)
    }
}

/// Element matrices and loads assembled on the GPU (LMA layout).
pub fn assemble_lma<T: Scalar>(gpu: &CudaBackend, c: &GpuCells<T>, sym: bool, variant: LocalVariant) -> Result<(CudaSlice<T>, CudaSlice<T>)> {
    let len = if sym { c.nb * (c.nb + 1) / 2 } else { c.nb * c.nb };
    let mut vals = gpu.zeros::<T>(len * c.ld)?;
    let mut load = gpu.zeros::<T>(c.nb * c.ld)?;
    let extra = format!("_sym{}_redundant{}", sym as u8, (variant == LocalVariant::Redundant) as u8);
    let f = c.kernel(gpu, "assemble_lma", &extra)?;
    unsafe {
        gpu.stream()
            .launch_builder(&f)
            .arg(&c.ne)
            .arg(&c.ld)
            .arg(&c.np)
            .arg(&c.nq)
            .arg(&c.tab)
            .arg(&c.verts).arg(&c.kappa)
            .arg(&c.map)
            .arg(&mut vals)
            .arg(&mut load)
            .launch(c.cell_grid())
    }?;
    Ok((vals, load))
}

/// The load vector from element loads assembled on the GPU (0 on fixed
/// rows), summed there.
pub fn load_vector<T: Scalar>(gpu: &CudaBackend, c: &GpuCells<T>, load: &CudaSlice<T>) -> Result<CudaSlice<T>> {
    c.sum_into_rows(gpu, load, node_entries::VALUE, gpu.zeros::<T>(c.n_rows)?)
}

/// Global assembly into `val` at the element entry positions `pos`
/// (transposed, `u32::MAX` for entries outside the matrix), and of the load
/// into `b`. `val` must hold the unit diagonal of fixed rows already.
pub fn assemble_global<T: Scalar>(gpu: &CudaBackend, c: &GpuCells<T>, pos: &CudaSlice<u32>, val: &mut CudaSlice<T>, b: &mut CudaSlice<T>, scatter: Scatter) -> Result<()> {
    let s = gpu.stream();
    match scatter {
        Scatter::Atomic => {
            let f = c.kernel(gpu, "assemble_global", "")?;
            unsafe {
                s.launch_builder(&f).arg(&c.ne).arg(&c.np).arg(&c.nq).arg(&c.tab).arg(&c.verts).arg(&c.kappa).arg(&c.map).arg(pos).arg(val).arg(b).launch(c.cell_grid())
            }?;
        }
        Scatter::Colour => {
            let mut scratch = gpu.zeros::<T>(c.nb * c.nb * c.ne)?;
            let mut load = gpu.zeros::<T>(c.nb * c.ne)?;
            let f = c.kernel(gpu, "assemble_global_colour", "")?;
            launch_by_colour!(s, f, c; [&c.ne, &c.np, &c.nq, &c.tab, &c.verts, &c.kappa]; [&c.map, pos, &mut scratch, &mut load, &mut *val, &mut *b]);
        }
        Scatter::Spmv => return Err(Scatter::Spmv.unavailable("the Q_p Poisson kernels")),
    }
    Ok(())
}

/// LMA on the GPU.
pub struct GpuLma<T: Scalar> {
    /// The cells the element matrices belong to (shared between operators).
    pub cells: Arc<GpuCells<T>>,
    /// Element matrices in the transposed layout of [`assemble_lma`].
    pub vals: CudaSlice<T>,
    /// Whether `vals` holds packed upper triangles.
    pub symmetric: bool,
    /// How products add into shared rows.
    pub scatter: Scatter,
    /// The diagonal, summed from the element matrices at set-up.
    pub diag: CudaSlice<T>,
}

impl<T: Scalar> GpuLma<T> {
    /// Wraps element matrices `vals` assembled for `cells`, taking the
    /// diagonal once (on the device).
    pub fn new(gpu: &CudaBackend, cells: Arc<GpuCells<T>>, vals: CudaSlice<T>, symmetric: bool, scatter: Scatter) -> Result<Self> {
        let diag = cells.diagonal_from(gpu, &vals, symmetric)?;
        Ok(Self { cells, vals, symmetric, scatter, diag })
    }
}

impl<T: Scalar> LinearOperator<CudaBackend, T> for GpuLma<T> {
    fn rows(&self) -> usize {
        self.cells.n_rows
    }
    fn apply(&self, gpu: &CudaBackend, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        if !crate::error::product_lens("lma spmv", self.cells.n_rows, x.len(), y.len())? {
            return Ok(());
        }
        let c = &self.cells;
        let extra = format!("_sym{}", self.symmetric as u8);
        c.init_output(gpu, x, y)?;
        let s = gpu.stream();
        match self.scatter {
            Scatter::Atomic if c.nb > SHARED_GATHER_ABOVE => {
                let f = c.kernel(gpu, "lma_spmv_shared", &extra)?;
                unsafe { s.launch_builder(&f).arg(&c.ne).arg(&c.ld).arg(&c.map).arg(&self.vals).arg(x).arg(&mut *y).launch(c.shared_lma_grid()) }?;
            }
            Scatter::Atomic => {
                let f = c.kernel(gpu, "lma_spmv", &extra)?;
                unsafe { s.launch_builder(&f).arg(&c.ne).arg(&c.ld).arg(&c.map).arg(&self.vals).arg(x).arg(&mut *y).launch(c.cell_grid()) }?;
            }
            Scatter::Colour => {
                let f = c.kernel(gpu, "lma_spmv_colour", &extra)?;
                launch_by_colour!(s, f, c; [&c.ne, &c.ld]; [&c.map, &self.vals, x, &mut *y]);
            }
            Scatter::Spmv => return Err(Scatter::Spmv.unavailable("the Q_p Poisson kernels")),
        }
        Ok(())
    }
    fn diagonal(&self, gpu: &CudaBackend) -> Result<CudaSlice<T>> {
        Ok(gpu.stream().clone_dtod(&self.diag)?)
    }
    fn name(&self) -> String {
        "lma".into()
    }
}

/// The matrix-free operator on the GPU.
pub struct GpuMatrixFree<T: Scalar> {
    /// The cells whose element matrices every product recomputes.
    pub cells: Arc<GpuCells<T>>,
    /// How products add into shared rows.
    pub scatter: Scatter,
    /// The diagonal (for Jacobi), from one assembly at set-up.
    pub diag: CudaSlice<T>,
}

impl<T: Scalar> GpuMatrixFree<T> {
    /// The operator on `cells` and its load vector: the diagonal (1 on
    /// fixed rows) and the load summed cell by cell into rows, no element
    /// matrix formed, so set-up needs no memory beyond the two vectors.
    pub fn new(gpu: &CudaBackend, cells: Arc<GpuCells<T>>, scatter: Scatter) -> Result<(Self, CudaSlice<T>)> {
        let c = &cells;
        let mut diag = c.fixed_diagonal(gpu)?;
        let mut load = gpu.zeros::<T>(c.n_rows)?;
        let f = c.kernel(gpu, "mf_diagonal_load", "")?;
        unsafe {
            gpu.stream().launch_builder(&f).arg(&c.ne).arg(&c.np).arg(&c.nq).arg(&c.tab).arg(&c.verts).arg(&c.kappa).arg(&c.map).arg(&mut diag).arg(&mut load).launch(c.cell_grid())
        }?;
        Ok((Self { cells, scatter, diag }, load))
    }
}

impl<T: Scalar> LinearOperator<CudaBackend, T> for GpuMatrixFree<T> {
    fn rows(&self) -> usize {
        self.cells.n_rows
    }
    fn apply(&self, gpu: &CudaBackend, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        if !crate::error::product_lens("matrix-free apply", self.cells.n_rows, x.len(), y.len())? {
            return Ok(());
        }
        let c = &self.cells;
        c.init_output(gpu, x, y)?;
        let s = gpu.stream();
        match self.scatter {
            Scatter::Atomic => {
                let f = c.kernel(gpu, "mf_spmv", "")?;
                unsafe {
                    s.launch_builder(&f).arg(&c.ne).arg(&c.np).arg(&c.nq).arg(&c.tab).arg(&c.verts).arg(&c.kappa).arg(&c.map).arg(x).arg(&mut *y).launch(c.cell_grid())
                }?;
            }
            Scatter::Colour => {
                let f = c.kernel(gpu, "mf_spmv_colour", "")?;
                launch_by_colour!(s, f, c; [&c.ne, &c.np, &c.nq, &c.tab, &c.verts, &c.kappa]; [&c.map, x, &mut *y]);
            }
            Scatter::Spmv => return Err(Scatter::Spmv.unavailable("the Q_p Poisson kernels")),
        }
        Ok(())
    }
    fn diagonal(&self, gpu: &CudaBackend) -> Result<CudaSlice<T>> {
        Ok(gpu.stream().clone_dtod(&self.diag)?)
    }
    fn name(&self) -> String {
        "matrix-free".into()
    }
}

/// CSR on the GPU, `tpr` threads per row.
pub struct GpuCsr<T: Scalar> {
    /// Number of rows.
    pub n_rows: usize,
    /// Number of columns (the length of `x`): `n_rows` but for the
    /// transfers of a multigrid hierarchy.
    pub n_cols: usize,
    /// Row offsets, as in [`Csr::row_ptr`].
    pub row_ptr: CudaSlice<u32>,
    /// Column of every entry, ascending within a row.
    pub col: CudaSlice<u32>,
    /// Value of every entry.
    pub val: CudaSlice<T>,
    /// Threads that share one row in the product, one of [`THREADS_PER_ROW`].
    pub threads_per_row: usize,
    /// The diagonal, taken once after assembly ([`GpuCsr::cache_diagonal`]).
    pub diag: Option<CudaSlice<T>>,
}

/// Threads per row the CSR kernel is specialised for.
pub const THREADS_PER_ROW: [usize; 6] = [1, 2, 4, 8, 16, 32];

fn check_threads_per_row(t: usize) -> Result<()> {
    if THREADS_PER_ROW.contains(&t) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!("threads per row must be one of {THREADS_PER_ROW:?}, not {t}")))
    }
}

impl<T: Scalar> GpuCsr<T> {
    /// The matrix on `pattern`, its values zero but the unit diagonal of
    /// the rows where `fixed` is nonzero (ready for [`assemble_global`]),
    /// made on the device.
    pub fn on_pattern(gpu: &CudaBackend, pattern: DevicePattern, fixed: Option<&CudaSlice<T>>, threads_per_row: usize) -> Result<Self> {
        check_threads_per_row(threads_per_row)?;
        let mut val = gpu.zeros::<T>(pattern.nnz)?;
        if let Some(f) = fixed {
            pattern.unit_fixed_rows(gpu, f, 0, &mut val)?;
        }
        let DevicePattern { n_rows, row_ptr, col, .. } = pattern;
        Ok(Self { n_rows, n_cols: n_rows, row_ptr, col, val, threads_per_row, diag: None })
    }

    /// Uploads an assembled CSR matrix.
    pub fn from_csr(gpu: &CudaBackend, csr: &Csr<T>, threads_per_row: usize) -> Result<Self> {
        check_threads_per_row(threads_per_row)?;
        gpu.ensure_free(csr.nnz() * (4 + T::BYTES))?;
        let DevicePattern { n_rows, row_ptr, col, .. } = DevicePattern::upload(gpu, csr)?;
        Ok(Self { n_rows, n_cols: n_rows, row_ptr, col, val: gpu.upload(&csr.val)?, threads_per_row, diag: None })
    }

    fn extract_diagonal(&self, gpu: &CudaBackend) -> Result<CudaSlice<T>> {
        csr_diagonal(gpu, &self.row_ptr, &self.col, &self.val)
    }

    /// Takes the diagonal of the assembled values once, so solvers that ask
    /// for it repeatedly do not read the matrix back each time.
    pub fn cache_diagonal(&mut self, gpu: &CudaBackend) -> Result<()> {
        self.diag = Some(self.extract_diagonal(gpu)?);
        Ok(())
    }

    /// A sensible default: about one thread per nonzero of an average row,
    /// rounded down to a power of two (Reguly & Giles Fig. 6).
    pub fn default_threads_per_row(nnz: usize, rows: usize) -> usize {
        let avg = nnz as f64 / rows.max(1) as f64;
        *THREADS_PER_ROW.iter().rev().find(|&&t| t as f64 <= avg / 2.0).unwrap_or(&1)
    }
}

/// The diagonal of the CSR arrays of a square matrix, on the device.
pub fn csr_diagonal<T: Scalar>(gpu: &CudaBackend, row_ptr: &CudaSlice<u32>, col: &CudaSlice<u32>, val: &CudaSlice<T>) -> Result<CudaSlice<T>> {
    let n = row_ptr.len() - 1;
    let mut d = gpu.zeros::<T>(n)?;
    let f = gpu.function(&format!("fem_csr_diagonal_{}", T::NAME))?;
    unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(row_ptr).arg(col).arg(val).arg(&mut d).launch(gpu.per_item(n)) }?;
    Ok(d)
}

/// `y = A x` for the CSR arrays of `A` (`row_ptr.len() − 1` rows, not
/// none) by the kernel of `threads_per_row` threads a row: [`GpuCsr`]'s
/// product, and that of the device matrices of AMG's set-up.
pub fn csr_spmv<T: Scalar>(gpu: &CudaBackend, threads_per_row: usize, row_ptr: &CudaSlice<u32>, col: &CudaSlice<u32>, val: &CudaSlice<T>, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
    let n_rows = row_ptr.len() - 1;
    let f = gpu.function(&format!("fem_csr_spmv_tpr{threads_per_row}_{}", T::NAME))?;
    unsafe { gpu.stream().launch_builder(&f).arg(&n_rows).arg(row_ptr).arg(col).arg(val).arg(x).arg(y).launch(gpu.per_item(n_rows * threads_per_row)) }?;
    Ok(())
}

impl<T: Scalar> LinearOperator<CudaBackend, T> for GpuCsr<T> {
    fn rows(&self) -> usize {
        self.n_rows
    }
    fn apply(&self, gpu: &CudaBackend, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        crate::error::same_len("csr spmv", x.len(), self.n_cols)?;
        crate::error::same_len("csr spmv", y.len(), self.n_rows)?;
        if self.n_rows == 0 {
            return Ok(());
        }
        csr_spmv(gpu, self.threads_per_row, &self.row_ptr, &self.col, &self.val, x, y)
    }
    fn diagonal(&self, gpu: &CudaBackend) -> Result<CudaSlice<T>> {
        match &self.diag {
            Some(d) => Ok(gpu.stream().clone_dtod(d)?),
            None => self.extract_diagonal(gpu),
        }
    }
    fn name(&self) -> String {
        format!("csr-t{}", self.threads_per_row)
    }
}

/// Transposed ELLPACK on the GPU (also the lazy variant).
pub struct GpuEll<T: Scalar> {
    /// Number of rows.
    pub n_rows: usize,
    /// Slot-plane stride: [`plane_stride`] of `n_rows` for an uploaded
    /// matrix ([`GpuEll::upload`]), `n_rows` for a lazily assembled one.
    pub ld: usize,
    /// Slots per row.
    pub width: usize,
    /// `col[k · ld + r]`: column of slot `k` of row `r`.
    pub col: CudaSlice<u32>,
    /// `val[k · ld + r]`: value of slot `k` of row `r`.
    pub val: CudaSlice<T>,
    /// The diagonal, taken once after assembly ([`GpuEll::cache_diagonal`]).
    pub diag: Option<CudaSlice<T>>,
}

/// Stride of the planes of a transposed layout of `n` cells or rows on
/// the GPU: `n` rounded up to a warp, so each plane starts on a whole
/// 32-byte sector for the 32 consecutive cells or rows a warp reads (with
/// the stride `n` itself, an odd `n` costs every f64 warp access one
/// sector more, every f32 one two).
pub fn plane_stride(n: usize) -> usize {
    n.next_multiple_of(WARP as usize)
}

/// Slot-major arrays of `n` rows re-laid with plane stride `ld ≥ n`, the
/// rows past `n` filled with `fill`.
pub fn restride<V: Copy>(a: &[V], n: usize, ld: usize, fill: V) -> Vec<V> {
    if n == 0 {
        return Vec::new();
    }
    let mut out = vec![fill; a.len() / n * ld];
    for (plane, src) in out.chunks_mut(ld).zip(a.chunks(n)) {
        plane[..n].copy_from_slice(src);
    }
    out
}

/// A lazy ELLPACK ready for assembly: padded arrays (fixed rows holding
/// their unit diagonal) and row lengths on the device.
pub struct LazyEllPrep<T: Scalar> {
    /// Slots per row: the largest row capacity.
    pub width: usize,
    /// Slot-major columns, every slot of row `r` preset to `r`.
    pub col: CudaSlice<u32>,
    /// Slot-major values, zero except the unit diagonal of fixed rows.
    pub val: CudaSlice<T>,
    /// Slots already filled in every row (1 for fixed rows, else 0); the
    /// append kernels advance it.
    pub len: CudaSlice<u32>,
}

impl<T: Scalar> GpuEll<T> {
    /// Uploads a host ELLPACK matrix (its diagonal not yet cached),
    /// re-laid at [`plane_stride`].
    pub fn upload(gpu: &CudaBackend, ell: &super::ell::Ell<T>) -> Result<Self> {
        let (n, w) = (ell.n_rows, ell.width);
        let ld = plane_stride(n);
        Self::check_fits(gpu, ld, w)?;
        Self::upload_planes(gpu, n, w, ld, &restride(&ell.col, n, ld, 0), &restride(&ell.val, n, ld, T::ZERO))
    }

    /// The matrix on `pattern` as ELLPACK planes at the GPU's stride, its
    /// values zero but the unit diagonal of the rows where `fixed` is
    /// nonzero (ready for [`assemble_global`]), made on the device.
    pub fn on_pattern(gpu: &CudaBackend, pattern: &DevicePattern, fixed: Option<&CudaSlice<T>>) -> Result<Self> {
        let (n_rows, width, ld) = (pattern.n_rows, pattern.width, plane_stride(pattern.n_rows));
        Self::check_fits(gpu, ld, width)?;
        let col = pattern.ell_columns(gpu, ld)?;
        let mut val = gpu.zeros::<T>(ld * width)?;
        if let Some(f) = fixed {
            pattern.unit_fixed_rows(gpu, f, ld, &mut val)?;
        }
        Ok(Self { n_rows, ld, width, col, val, diag: None })
    }

    /// Uploads slot planes already laid `ld` apart.
    fn upload_planes(gpu: &CudaBackend, n_rows: usize, width: usize, ld: usize, col: &[u32], val: &[T]) -> Result<Self> {
        Self::check_fits(gpu, ld, width)?;
        if col.len() != ld * width || val.len() != ld * width || ld < n_rows {
            return Err(Error::InvalidArgument(format!("ELLPACK planes of {} columns and {} values are not {width} slots × stride {ld} for {n_rows} rows", col.len(), val.len())));
        }
        Ok(Self { n_rows, ld, width, col: gpu.htod(col)?, val: gpu.upload(val)?, diag: None })
    }

    /// Refuses, before anything is allocated, planes that 32-bit positions
    /// cannot address or the device cannot hold.
    fn check_fits(gpu: &CudaBackend, ld: usize, width: usize) -> Result<()> {
        if ld * width > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!("an ELLPACK of {ld} × {width} slots passes the 32-bit positions; use CSR or LMA")));
        }
        gpu.ensure_free(ld * width * (4 + T::BYTES))
    }

    fn extract_diagonal(&self, gpu: &CudaBackend) -> Result<CudaSlice<T>> {
        let n = self.n_rows;
        let mut d = gpu.zeros::<T>(n)?;
        let f = gpu.function(&format!("fem_ell_diagonal_{}", T::NAME))?;
        unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(&self.ld).arg(&self.width).arg(&self.col).arg(&self.val).arg(&mut d).launch(gpu.per_item(n)) }?;
        Ok(d)
    }

    /// Takes the diagonal of the assembled values once.
    pub fn cache_diagonal(&mut self, gpu: &CudaBackend) -> Result<()> {
        self.diag = Some(self.extract_diagonal(gpu)?);
        Ok(())
    }

    /// Set-up of a lazy ELLPACK: the row capacities (every coupled entry
    /// of every cell touching the row) on the host; on the device the
    /// planes of rows without entries (every slot its own row) and the
    /// unit diagonal of fixed rows.
    pub fn prepare_lazy(gpu: &CudaBackend, c: &GpuCells<T>) -> Result<LazyEllPrep<T>> {
        let (ne, nb, n) = (c.ne, c.nb, c.n_rows);
        let cap = lazy_row_capacity(&gpu.dtoh(&c.map)?, ne, n, &c.fixed_rows);
        let mut len0 = vec![0u32; n];
        for &r in &c.fixed_rows {
            len0[r as usize] = 1;
        }
        let width = cap.iter().copied().max().unwrap_or(0) as usize;
        gpu.ensure_free(width * n * (4 + T::BYTES) + nb * nb * ne * T::BYTES)?;
        let empty = DevicePattern::empty(gpu, n, width)?;
        let col = empty.ell_columns(gpu, n)?;
        let mut val = gpu.zeros::<T>(width * n)?;
        if let Some(f) = &c.fixed_mask {
            empty.unit_fixed_rows(gpu, f, n, &mut val)?;
        }
        Ok(LazyEllPrep { width, col, val, len: gpu.htod(&len0)? })
    }

    /// Lazy ELLPACK assembled on the GPU (Reguly & Giles §7): element
    /// matrices computed into an LMA scratch, then appended per row
    /// atomically or by colour.
    pub fn assemble_lazy(gpu: &CudaBackend, c: &GpuCells<T>, prep: LazyEllPrep<T>, scatter: Scatter) -> Result<Self> {
        let (ne, n, width) = (c.ne, c.n_rows, prep.width);
        let (mut d_col, mut d_val, mut d_len) = (prep.col, prep.val, prep.len);
        let s = gpu.stream();
        let (scratch, _load) = assemble_lma(gpu, c, false, LocalVariant::Reuse)?;
        match scatter {
            Scatter::Atomic => {
                let f = c.kernel(gpu, "lazy_ell_append", "")?;
                unsafe {
                    s.launch_builder(&f).arg(&ne).arg(&c.ld).arg(&c.map).arg(&scratch).arg(&n).arg(&mut d_len).arg(&mut d_col).arg(&mut d_val).launch(c.cell_grid())
                }?;
            }
            Scatter::Colour => {
                let f = c.kernel(gpu, "lazy_ell_append_colour", "")?;
                launch_by_colour!(s, f, c; [&ne, &c.ld]; [&c.map, &scratch, &n, &mut d_len, &mut d_col, &mut d_val]);
            }
            Scatter::Spmv => return Err(Scatter::Spmv.unavailable("the Q_p Poisson kernels")),
        }
        Ok(Self { n_rows: n, ld: n, width, col: d_col, val: d_val, diag: None })
    }
}

impl<T: Scalar> LinearOperator<CudaBackend, T> for GpuEll<T> {
    fn rows(&self) -> usize {
        self.n_rows
    }
    fn apply(&self, gpu: &CudaBackend, x: &CudaSlice<T>, y: &mut CudaSlice<T>) -> Result<()> {
        if !crate::error::product_lens("ell spmv", self.n_rows, x.len(), y.len())? {
            return Ok(());
        }
        let f = gpu.function(&format!("fem_ell_spmv_{}", T::NAME))?;
        let cfg = gpu.grid::<T>(self.n_rows * (16 / T::BYTES), 0);
        unsafe { gpu.stream().launch_builder(&f).arg(&self.n_rows).arg(&self.ld).arg(&self.width).arg(&self.col).arg(&self.val).arg(x).arg(y).launch(cfg) }?;
        Ok(())
    }
    fn diagonal(&self, gpu: &CudaBackend) -> Result<CudaSlice<T>> {
        match &self.diag {
            Some(d) => Ok(gpu.stream().clone_dtod(d)?),
            None => self.extract_diagonal(gpu),
        }
    }
    fn name(&self) -> String {
        "ell".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value lands at `k·ld + r` and the new rows hold the fill.
    #[test]
    fn restride_moves_each_plane() {
        let (n, w, ld) = (5usize, 3usize, 8usize);
        let a: Vec<u32> = (0..(n * w) as u32).map(|v| 100 + v).collect();
        let b = restride(&a, n, ld, 7);
        assert_eq!(b.len(), ld * w);
        for k in 0..w {
            for r in 0..ld {
                let want = if r < n { a[k * n + r] } else { 7 };
                assert_eq!(b[k * ld + r], want, "slot {k} row {r}");
            }
        }
        assert!(restride::<u32>(&[], 0, 32, 0).is_empty());
        assert_eq!(restride(&a, n, n, 0), a);
    }
}
