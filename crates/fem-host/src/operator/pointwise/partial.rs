//! Partial assembly of a `#[fem_kernel]` physics' Jacobian on
//! quadrilaterals and hexahedra (`fem_kernels::pointwise::partial`): the
//! point data from the physics' generated code, and the product and
//! diagonal by sum factorisation, on the CPU (any tensor variant) and on
//! the GPU (quadrilaterals and hexahedra with as many Gauss points per
//! direction as nodes, scalar fields or d components, degrees 1 to 8;
//! `fem_kernels`' `partial` on an `n1 × n1` slab of threads a hexahedron,
//! `partial_quad` on a line of `n1` a quadrilateral).
//!
//! A product reads the point data, NC²·blocks values per point (9 for the
//! Laplacian, 81 for elasticity at (p + 1)³ points per hexahedron), where
//! element matrices read (NC·(p + 1)³)² per cell: from Q2 on the point data
//! are the fewer bytes, and from Q3 fewer than the assembled matrix's.

use super::gpu::GpuPointwise;
use super::Pointwise;
use crate::operator::tensor::basis::{apply_axis, matmul, transpose};
use crate::{Backend, CpuBackend, CudaBackend, Error, Result};
use cudarc::driver::{CudaFunction, CudaSlice, CudaView, CudaViewMut, LaunchConfig, PushKernelArg};
use fem_core::physics::Terms;
use fem_core::quadrature::{gauss_legendre, gauss_lobatto};
use fem_core::tensor::{differentiation_matrix, interpolation_matrix};
use super::diagonal::DiagonalTables;
use fem_kernels::pointwise::partial::{apply_point, diagonal_per_element, element_entry, point_len, shared_len, shared_len_quad, specialisation, terms_mask};
use fem_kernels::pointwise::{Kernels, Variant};
use rayon::prelude::*;

/// Cells per rayon task.
const CHUNK: usize = 256;

/// Highest degree of the GPU product's kernels (`fem_partial_n{p}_nc{c}_terms{t}`).
pub const GPU_MAX_DEGREE: usize = 8;

/// The 1D matrices of a tensor variant: GLL nodes to Gauss points.
#[derive(Clone, Debug)]
pub struct Tables1d {
    /// Nodes per direction (p + 1).
    pub n1: usize,
    /// Gauss points per direction (the variant's rule is their product).
    pub q1: usize,
    /// B: nodes → point values, `q1 × n1`.
    pub b: Vec<f64>,
    /// D: point values → point derivatives, `q1 × q1`.
    pub d: Vec<f64>,
    /// D·B: nodes → point derivatives, `q1 × n1`.
    pub bd: Vec<f64>,
    /// The Gauss points on \[−1, 1\] and their weights.
    pub rule: (Vec<f64>, Vec<f64>),
}

impl Tables1d {
    /// The matrices of `v`; an error on simplices, where there is no
    /// tensor structure to factor.
    pub fn new(v: &Variant) -> Result<Self> {
        let (n1, q1) = (v.degree + 1, points_per_direction(v)?);
        let (mut nodes, mut w) = (vec![0.0; n1], vec![0.0; n1]);
        gauss_lobatto(&mut nodes, &mut w);
        let (mut points, mut wq) = (vec![0.0; q1], vec![0.0; q1]);
        gauss_legendre(&mut points, &mut wq);
        let (mut b, mut d) = (vec![0.0; q1 * n1], vec![0.0; q1 * q1]);
        interpolation_matrix(&nodes, &points, &mut b);
        differentiation_matrix(&points, &mut d);
        let bd = matmul(&d, &b, q1, q1, n1);
        Ok(Self { n1, q1, b, d, bd, rule: (points, wq) })
    }
}

/// Gauss points per direction of `v`'s rule; an error on simplices,
/// where there is no tensor structure to factor.
fn points_per_direction(v: &Variant) -> Result<usize> {
    if v.shape.is_simplex() {
        return Err(Error::InvalidArgument(format!("partial assembly needs quadrilaterals or hexahedra, not {}", v.shape.name())));
    }
    (1..=fem_core::shape::MAX_RULE_1D).find(|q| q.pow(v.dim() as u32) == v.nq).ok_or_else(|| Error::InvalidArgument(format!("{} points are not a tensor rule", v.nq)))
}

impl<K: Kernels<f64>> Pointwise<f64, K> {
    /// The Jacobian's point data at the solution E-vector `u` on the CPU
    /// ([`fem_kernels::pointwise::partial::cell_points`] per cell).
    pub fn points_cpu(&self, cpu: &CpuBackend, u: &[f64]) -> Result<Vec<f64>> {
        self.check_u(u)?;
        let v = &self.variant;
        if v.points.is_none() {
            return Err(Error::InvalidArgument(format!("physics `{}` has no partial assembly on {} (it needs a Jacobian and a tensor cell)", K::NAME, v.shape.name())));
        }
        Ok(self.over_cells(cpu, self.residual_table(), u, points_per_cell(v), K::points_cells))
    }
}

/// Point values per cell of `v`.
pub fn points_per_cell(v: &Variant) -> usize {
    point_len(v.dim(), v.nc, v.terms) * v.nq
}

/// Runs `f::<D, NC>` for the variant's dimension and components.
macro_rules! by_shape {
    ($v:expr, $f:ident ( $($arg:expr),* )) => {
        match ($v.dim(), $v.nc) {
            (2, 1) => $f::<2, 1>($($arg),*),
            (2, 2) => $f::<2, 2>($($arg),*),
            (3, 1) => $f::<3, 1>($($arg),*),
            (3, 3) => $f::<3, 3>($($arg),*),
            (d, nc) => return Err(Error::InvalidArgument(format!("partial assembly takes 1 or {d} components in {d} dimensions, not {nc}"))),
        }
    };
}

/// `ye = A_e xe` for every cell, E-vectors in and out, on the CPU: the
/// reference the GPU product is checked against.
pub fn apply_cpu(cpu: &CpuBackend, t: &Tables1d, v: &Variant, g: &[f64], xe: &[f64], ye: &mut [f64]) -> Result<()> {
    crate::error::same_len("partial product's E-vectors", xe.len(), ye.len())?;
    apply_cpu_with(cpu, t, v, g, &|k| xe[k], ye)
}

/// [`apply_cpu`] with the cells' input values read where they are used,
/// `x_of(k)` for E-vector entry `k` (the gather from an L-vector, fused
/// into the cells' loop rather than made an E-vector first).
pub fn apply_cpu_with(cpu: &CpuBackend, t: &Tables1d, v: &Variant, g: &[f64], x_of: &(impl Fn(usize) -> f64 + Sync), ye: &mut [f64]) -> Result<()> {
    let (nl, per) = (v.n_local(), points_per_cell(v));
    if ye.len() % nl.max(1) != 0 || g.len() != ye.len() / nl.max(1) * per {
        return Err(Error::InvalidArgument(format!("partial product: an E-vector of {} values and {} point values do not match", ye.len(), g.len())));
    }
    let transposed = (transpose(&t.b, t.q1, t.n1), transpose(&t.d, t.q1, t.q1));
    cpu.install(|| {
        ye.par_chunks_mut(CHUNK * nl).zip(g.par_chunks(CHUNK * per)).enumerate().try_for_each(|(c, (y, g))| -> Result<()> {
            let first = c * CHUNK * nl;
            by_shape!(v, apply_cells(t, &transposed, v.terms, g, |k| x_of(first + k), y));
            Ok(())
        })
    })
}

/// The per-direction dimensions of a cell's node or point array.
fn dims(n: usize, d: usize) -> [usize; 3] {
    [n, n, if d == 3 { n } else { 1 }]
}

/// `a` (`rows` × `n`) along every axis of `input` (`n` per direction),
/// into `out`; `tmp` holds the intermediate array.
fn along_all(a: &[f64], rows: usize, n: usize, d: usize, input: &[f64], out: &mut Vec<f64>, tmp: &mut Vec<f64>) {
    let mut extent = dims(n, d);
    let size = |e: [usize; 3], axis: usize| e.iter().enumerate().map(|(i, &v)| if i == axis { rows } else { v }).product::<usize>();
    // the last axis writes `out`: an odd count of axes starts there
    let (mut src, mut dst): (&mut Vec<f64>, &mut Vec<f64>) = if d % 2 == 1 { (tmp, out) } else { (out, tmp) };
    for axis in 0..d {
        dst.resize(size(extent, axis), 0.0);
        let from: &[f64] = if axis == 0 { input } else { src };
        apply_axis(a, rows, axis, extent, from, dst);
        extent[axis] = rows;
        std::mem::swap(&mut src, &mut dst);
    }
}

/// The work arrays of one chunk's cells, reused from cell to cell.
#[derive(Default)]
struct Work {
    nodes: Vec<f64>,
    points: Vec<f64>,
    der: Vec<f64>,
    tmp: Vec<f64>,
}

/// The cells of one chunk (input entry `k` of the chunk at `x_of(k)`):
/// interpolate and differentiate each component, apply the point data,
/// integrate back. `transposed` holds Bᵀ and Dᵀ.
fn apply_cells<const D: usize, const NC: usize>(t: &Tables1d, transposed: &(Vec<f64>, Vec<f64>), terms: Terms, g: &[f64], x_of: impl Fn(usize) -> f64, ye: &mut [f64]) {
    let (n1, q1) = (t.n1, t.q1);
    let (nb, nq) = (n1.pow(D as u32), q1.pow(D as u32));
    let (per, nl) = (point_len(D, NC, terms) * nq, nb * NC);
    let (bt, dt) = transposed;
    let mut w = Work { nodes: vec![0.0; nb.max(nq)], ..Default::default() };
    let mut u = vec![[[0.0; 4]; NC]; nq];
    let mut v = vec![[[0.0; 4]; NC]; nq];
    let pdims = dims(q1, D);
    for (cell, (y, gc)) in ye.chunks_exact_mut(nl).zip(g.chunks_exact(per)).enumerate() {
        for e in 0..NC {
            w.nodes.resize(nb, 0.0);
            w.nodes.iter_mut().enumerate().for_each(|(n, x)| *x = x_of(cell * nl + n * NC + e));
            along_all(&t.b, q1, n1, D, &w.nodes, &mut w.points, &mut w.tmp);
            w.der.resize(nq, 0.0);
            for (q, uq) in u.iter_mut().enumerate() {
                uq[e][0] = w.points[q];
            }
            for a in 0..D {
                apply_axis(&t.d, q1, a, pdims, &w.points, &mut w.der);
                for (q, uq) in u.iter_mut().enumerate() {
                    uq[e][1 + a] = w.der[q];
                }
            }
        }
        for (q, (vq, uq)) in v.iter_mut().zip(&u).enumerate() {
            *vq = apply_point::<f64, D, NC>(terms, |j| gc[j * nq + q], uq);
        }
        for c in 0..NC {
            // Σ_a Dᵀ_a (∂_a part) + the value part, at the points
            w.nodes.resize(nq, 0.0);
            w.nodes.iter_mut().zip(&v).for_each(|(s, vq)| *s = vq[c][0]);
            for a in 0..D {
                w.points.resize(nq, 0.0);
                w.points.iter_mut().zip(&v).for_each(|(s, vq)| *s = vq[c][1 + a]);
                apply_axis(dt, q1, a, pdims, &w.points, &mut w.der);
                w.nodes.iter_mut().zip(&w.der).for_each(|(s, b)| *s += b);
            }
            let acc = std::mem::take(&mut w.nodes);
            along_all(bt, n1, q1, D, &acc, &mut w.points, &mut w.tmp);
            w.nodes = acc;
            for (n, &rv) in w.points.iter().enumerate() {
                y[n * NC + c] = rv;
            }
        }
    }
}

/// The element matrices from the point data `g` on the CPU, as the
/// element kernels store them (`[cell][row·nl + col]`, row and col =
/// node·NC + component): the reference of the GPU's
/// [`GpuPartial::elements`].
pub fn elements_cpu(cpu: &CpuBackend, t: &Tables1d, v: &Variant, g: &[f64]) -> Result<Vec<f64>> {
    let (nl, per) = (v.n_local(), points_per_cell(v));
    let cells = g.len() / per.max(1);
    let mut out = vec![0.0; cells * nl * nl];
    cpu.install(|| {
        out.par_chunks_mut(nl * nl).zip(g.par_chunks(per)).try_for_each(|(o, gc)| -> Result<()> {
            by_shape!(v, elements_cell(t, v.terms, gc, o));
            Ok(())
        })
    })?;
    Ok(out)
}

fn elements_cell<const D: usize, const NC: usize>(t: &Tables1d, terms: Terms, g: &[f64], out: &mut [f64]) {
    let (nq, nl) = (t.q1.pow(D as u32), t.n1.pow(D as u32) * NC);
    for (i, o) in out.iter_mut().enumerate() {
        let (row, col) = (i / nl, i % nl);
        *o = element_entry::<f64, D, NC>(terms, t.n1, t.q1, |q, n| t.b[q * t.n1 + n], |q, n| t.bd[q * t.n1 + n], (row / NC, row % NC), (col / NC, col % NC), |j, q| g[j * nq + q]);
    }
}

/// The launch of a kernel that gives each hexahedron an `n1 × n1` slab of
/// threads (each quadrilateral a line of `n1`) and its fields' work
/// arrays in shared memory ([`shared_len`], [`shared_len_quad`]): the
/// partial product and the sum-factorised residual and point data.
/// Elements are added to a block up to 256 threads while the block fits
/// the default 48 KB (several blocks per SM); a single element may opt
/// into more.
#[derive(Clone, Copy, Debug)]
pub struct Slabs {
    /// Threads of an element: `n1²` on hexahedra, `n1` on
    /// quadrilaterals.
    threads: usize,
    /// Elements per thread block.
    epb: usize,
    /// Shared memory per block in bytes.
    shared: usize,
}

impl Slabs {
    /// The launch on hexahedra of degree `n1 − 1` with `fields` fields of
    /// `bytes`-byte values; an error where one element does not fit a
    /// block's shared memory.
    pub fn fit(gpu: &CudaBackend, n1: usize, fields: usize, bytes: usize) -> Result<Self> {
        Self::fit_with(gpu, n1, n1 * n1, fields, |epb| bytes * shared_len(n1, fields, epb))
    }

    /// [`Self::fit`] on quadrilaterals.
    pub fn fit_quad(gpu: &CudaBackend, n1: usize, fields: usize, bytes: usize) -> Result<Self> {
        Self::fit_with(gpu, n1, n1, fields, |epb| bytes * shared_len_quad(n1, fields, epb))
    }

    /// The launch of `threads` threads an element needing `need(epb)`
    /// bytes for `epb` elements.
    fn fit_with(gpu: &CudaBackend, n1: usize, threads: usize, fields: usize, need: impl Fn(usize) -> usize) -> Result<Self> {
        let limit = gpu.props().shared_mem_per_block_optin as usize;
        let mut epb = (256 / threads).max(1);
        while epb > 1 && need(epb) > limit.min(48 * 1024) {
            epb -= 1;
        }
        if need(epb) > limit {
            return Err(Error::InvalidArgument(format!("one element of degree {} with {fields} fields needs {} bytes of shared memory (at most {limit})", n1 - 1, need(1))));
        }
        Ok(Self { threads, epb, shared: need(epb) })
    }

    /// The launch of `f` over `cells` elements, `f` allowed the shared
    /// memory beyond the default where it needs it.
    pub fn config(&self, gpu: &CudaBackend, f: &CudaFunction, cells: usize) -> Result<LaunchConfig> {
        if self.shared > gpu.props().shared_mem_per_block as usize {
            f.set_attribute(cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.shared as i32)?;
        }
        let grid = cells.div_ceil(self.epb).max(1);
        if grid > i32::MAX as usize {
            return Err(Error::InvalidArgument(format!("{grid} thread blocks exceed the grid limit")));
        }
        Ok(LaunchConfig { grid_dim: (grid as u32, 1, 1), block_dim: (self.threads as u32, self.epb as u32, 1), shared_mem_bytes: self.shared as u32 })
    }
}

/// The GPU product and diagonal of one variant's partial assembly.
pub struct GpuPartial {
    /// `[B | D]` for the product, `[B | B']` for the element matrices,
    /// the four matrices of [`DiagonalTables`] for the diagonal.
    tabs: [CudaSlice<f64>; 3],
    n1: usize,
    q1: usize,
    nc: usize,
    /// Dimension: 3 (hexahedra) or 2 (quadrilaterals).
    dim: usize,
    mask: u32,
    /// The product's launch.
    slabs: Slabs,
    cells: usize,
    /// Point data values a cell.
    per_cell: usize,
}

impl GpuPartial {
    /// Whether the GPU kernels take `v`, and why not.
    pub fn supports(v: &Variant) -> Result<()> {
        let d = v.dim();
        if v.shape.is_simplex() || !(v.nc == 1 || v.nc == d) || points_per_direction(v)? != v.degree + 1 || v.degree > GPU_MAX_DEGREE {
            return Err(Error::InvalidArgument(format!(
                "partial assembly on the GPU takes quadrilaterals and hexahedra of degree 1 to {GPU_MAX_DEGREE} with (p + 1)^d points and 1 or d components, not {}(p = {}, q = {}) with {}",
                v.shape.name(),
                v.degree,
                v.nq,
                v.nc
            )));
        }
        Ok(())
    }

    /// Uploads the tables of `v` for `cells` cells; an error where the
    /// kernels do not take it or one element's arrays exceed shared memory.
    pub fn new(gpu: &CudaBackend, v: &Variant, cells: usize) -> Result<Self> {
        Self::supports(v)?;
        let t = Tables1d::new(v)?;
        let n1 = t.n1;
        let slabs = if v.dim() == 3 { Slabs::fit(gpu, n1, v.nc, 8)? } else { Slabs::fit_quad(gpu, n1, v.nc, 8)? };
        let apply: Vec<f64> = t.b.iter().chain(&t.d).copied().collect();
        let elements: Vec<f64> = t.b.iter().chain(&t.bd).copied().collect();
        let diagonal = DiagonalTables::new(&t).packed();
        Ok(Self { tabs: [gpu.upload(&apply)?, gpu.upload(&elements)?, gpu.upload(&diagonal)?], n1, q1: t.q1, nc: v.nc, dim: v.dim(), mask: terms_mask(v.terms), slabs, cells, per_cell: points_per_cell(v) })
    }

    /// `y += (I − F) A (I − F) x` with point data `g`, `map` the
    /// E-vector's rows ([`crate::space::restriction::SKIP`] where held).
    pub fn apply(&self, gpu: &CudaBackend, g: &CudaSlice<f64>, map: &CudaSlice<u32>, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        let name = match self.dim {
            3 => format!("fem_partial_n{}_nc{}_terms{}_f64", self.n1 - 1, self.nc, specialisation(self.mask)),
            _ => format!("fem_partial_quad_n{}_nc{}_f64", self.n1 - 1, self.nc),
        };
        let f = gpu.function(&name)?;
        let cfg = self.slabs.config(gpu, &f, self.cells)?;
        let ne = self.cells;
        unsafe { gpu.stream().launch_builder(&f).arg(&ne).arg(&self.mask).arg(&self.tabs[0]).arg(g).arg(map).arg(x).arg(y).launch(cfg) }?;
        Ok(())
    }

    /// `d += diag((I − F) A (I − F))` with point data `g`.
    pub fn add_diagonal(&self, gpu: &CudaBackend, g: &CudaSlice<f64>, map: &CudaSlice<u32>, d: &mut CudaSlice<f64>) -> Result<()> {
        self.add_diagonal_of(gpu, self.cells, &g.as_view(), &map.as_view(), d)
    }

    /// [`Self::add_diagonal`] of `cells` cells whose point data are `g`
    /// and map entries `map` (a range of the cells, the rest of `d`
    /// untouched).
    pub(crate) fn add_diagonal_of(&self, gpu: &CudaBackend, cells: usize, g: &CudaView<f64>, map: &CudaView<u32>, d: &mut CudaSlice<f64>) -> Result<()> {
        let quad = if self.dim == 2 { "_quad" } else { "" };
        let f = gpu.function(&format!("fem_partial_diagonal{quad}_n{}_nc{}_f64", self.n1 - 1, self.nc))?;
        let items = cells * self.n1.pow(self.dim as u32) * self.nc;
        if g.len() < cells * self.per_cell || map.len() < items {
            return Err(Error::InvalidArgument(format!("point data of {} values and a map of {} for {cells} cells", g.len(), map.len())));
        }
        // the product's slabs: its four arrays an element and two matrices
        // hold at least the diagonal's two arrays an element and four matrices
        // (the quadrilaterals' reads none)
        debug_assert!(self.dim == 2 || 4 * self.n1 * self.n1 + self.slabs.epb * diagonal_per_element(self.n1) <= self.slabs.shared / 8);
        let cfg = self.slabs.config(gpu, &f, cells)?;
        unsafe { gpu.stream().launch_builder(&f).arg(&cells).arg(&self.mask).arg(&self.tabs[2]).arg(g).arg(map).arg(d).launch(cfg) }?;
        Ok(())
    }

    /// `out ←` the element matrices from the point data `g`, as the
    /// element kernels store them: at Q2 and above far faster than those,
    /// whose thread per element holds a whole element matrix.
    pub fn elements(&self, gpu: &CudaBackend, g: &CudaSlice<f64>, out: &mut CudaSlice<f64>) -> Result<()> {
        if self.dim != 3 {
            return Err(Error::InvalidArgument("the element matrices from the point data are built on hexahedra only".into()));
        }
        let f = gpu.function(&format!("fem_partial_elements_nc{}_f64", self.nc))?;
        let (ne, n1, q1) = (self.cells, self.n1, self.q1);
        let nl = n1.pow(3) * self.nc;
        let items = ne * nl * nl;
        if out.len() < items {
            return Err(Error::InvalidArgument(format!("{} values for the element matrices of {ne} cells of {nl} unknowns", out.len())));
        }
        unsafe { gpu.stream().launch_builder(&f).arg(&ne).arg(&n1).arg(&q1).arg(&self.mask).arg(&self.tabs[1]).arg(g).arg(out).launch(gpu.grid::<f64>(items, 0)) }?;
        Ok(())
    }

    /// Whether [`Self::elements`] replaces the element kernels' Jacobian:
    /// hexahedra from Q2, where those hold an element matrix of 27² values
    /// or more in each thread (its kernel takes hexahedra only).
    pub fn builds_elements(&self) -> bool {
        self.n1 >= 3 && self.dim == 3
    }

    /// Point data values of all the cells.
    pub fn point_values(&self) -> usize {
        self.cells * self.per_cell
    }
}

impl GpuPointwise<f64> {
    /// The Jacobian's point data at the solution E-vector `u` on the
    /// device: sum-factorised on hexahedra from Q2, elsewhere one thread
    /// per (cell, point).
    pub fn points(&self, gpu: &CudaBackend, u: &CudaSlice<f64>, out: &mut CudaSlice<f64>) -> Result<()> {
        let v = &self.variant;
        if u.len() < self.n_cells * v.n_local() || out.len() < self.n_cells * points_per_cell(v) {
            return Err(Error::InvalidArgument(format!("E-vector of {} and point data of {} values do not fit {} cells", u.len(), out.len(), self.n_cells)));
        }
        self.points_of(gpu, 0..self.n_cells, u, &mut out.as_view_mut())
    }

    /// The point data of cells `cells` (a range of them) into `out`,
    /// which holds theirs only; `u` is the whole solution E-vector.
    pub(crate) fn points_of(&self, gpu: &CudaBackend, cells: std::ops::Range<usize>, u: &CudaSlice<f64>, out: &mut CudaViewMut<f64>) -> Result<()> {
        let v = &self.variant;
        let entry = v.points.ok_or_else(|| Error::InvalidArgument(format!("this physics has no partial assembly on {}", v.shape.name())))?;
        if cells.end > self.n_cells || out.len() < cells.len() * points_per_cell(v) {
            return Err(Error::InvalidArgument(format!("point data of {} values for cells {cells:?} of {}", out.len(), self.n_cells)));
        }
        let (tab, x, a) = self.inputs();
        let (first, n, per_a) = (cells.start, cells.len(), v.aux_per_cell());
        let (u, x) = (u.slice(first * v.n_local()..), x.slice(first * v.shape.vertices() * v.dim()..));
        let a = if per_a == 0 { a.as_view() } else { a.slice(first * per_a..) };
        if let Some(sf) = self.sum_factorised() {
            return sf.launch(gpu, &format!("{entry}_sf"), n, &u, &x, &a, out, self.time);
        }
        let f = gpu.function(&format!("{entry}_f64"))?;
        let batches = 1usize;
        let cfg = gpu.grid::<f64>(n * v.nq, 0);
        unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(&batches).arg(tab).arg(&u).arg(&x).arg(&a).arg(out).arg(&self.time).launch(cfg) }?;
        Ok(())
    }
}
