//! Residuals and element matrices of a `#[fem_kernel]` physics on a
//! [`Space`]: the reference table of the chosen variant, the cell
//! E-vectors (vertex coordinates, auxiliary fields), the CPU evaluation on
//! rayon and the GPU evaluation by thread transposition
//! (`fem_kernels::pointwise::gpu`), plus assembly of the results into a
//! global vector and a CSR matrix.

use super::csr::Csr;
use crate::space::{DirichletMode, Layout, Space};
use crate::{CpuBackend, Error, Result, Scalar};
use fem_kernels::pointwise::{row_len, Kernels, Variant};
use rayon::prelude::*;
use std::marker::PhantomData;

#[cfg(test)]
mod contraction;
pub mod diagonal;
pub mod facet;
mod gpu;
pub mod matrix_free;
pub mod nodal;
pub mod partial;
pub mod sum_factorised;
pub mod tuning;

pub use facet::{FacetTerm, GpuFacetTerm};
pub use gpu::{cell_thread_bytes, GpuPointwise, Transposition, THREAD_LOCAL_LIMIT};
pub use nodal::NodalCells;

/// Cells per rayon task on the CPU.
const CPU_CHUNK: usize = 512;

/// An auxiliary field as the user holds it.
#[derive(Clone, Copy, Debug)]
pub enum Aux<'a> {
    /// No auxiliary fields.
    None,
    /// `na` values per node of the space (node-major).
    Nodal(&'a [f64]),
    /// `na` values per cell (P0).
    Cell(&'a [f64]),
}

/// The reference table of `v` (layout of `fem_kernels::pointwise`).
pub fn tabulate(v: &Variant) -> Vec<f64> {
    let (s, d) = (v.shape, v.dim());
    let (mut pts, mut w) = (vec![0.0; v.nq * d], vec![0.0; v.nq]);
    assert!(s.rule(v.nq, &mut pts, &mut w), "variant tables name existing rules");
    let stride = row_len(d, v.n_basis(), s.vertices());
    let mut tab = vec![0.0; v.nq * stride];
    for q in 0..v.nq {
        fill_row(v, &pts[q * d..(q + 1) * d], w[q], &mut tab[q * stride..(q + 1) * stride]);
    }
    tab
}

/// One table row at reference point `xi` with weight `w`: the basis and
/// geometry values and reference gradients there (cell and facet tables
/// share it).
pub(crate) fn fill_row(v: &Variant, xi: &[f64], w: f64, row: &mut [f64]) {
    let (s, d, nb, nv) = (v.shape, v.dim(), v.n_basis(), v.shape.vertices());
    let (mut val, mut grad) = (vec![0.0; nb.max(nv)], vec![0.0; nb.max(nv) * d]);
    row[0] = w;
    for (offset, n, geometry) in [(1, nb, false), (1 + nb * (1 + d), nv, true)] {
        if geometry {
            s.geometry_basis(xi, &mut val, &mut grad);
        } else {
            s.basis(v.degree, xi, &mut val, &mut grad);
        }
        for b in 0..n {
            row[offset + b * (1 + d)] = val[b];
            row[offset + b * (1 + d) + 1..offset + (b + 1) * (1 + d)].copy_from_slice(&grad[b * d..(b + 1) * d]);
        }
    }
}

/// The paper's flop count per cell (Knepley, Rupp & Terrel eq. 7 divided
/// by the cells of a batch).
pub fn paper_flops_per_cell(v: &Variant) -> f64 {
    let (d, nbt, nc, nq) = (v.dim() as f64, v.n_local() as f64, v.nc as f64, v.nq as f64);
    ((2.0 + (2.0 + 2.0 * d) * d) * nbt + 2.0 * d * nc) * nq + (2.0 + 2.0 * d) * d * nq * nbt
}

/// The paper's algorithmic balance (eq. 8) in flop per byte for scalars of
/// `bytes` bytes: per cell, the geometry (d² + 1), coefficients N_bt and
/// (d + 1) N_q values of the paper's layout.
pub fn paper_balance(v: &Variant, bytes: usize) -> f64 {
    let (d, nbt, nq) = (v.dim() as f64, v.n_local() as f64, v.nq as f64);
    paper_flops_per_cell(v) / (bytes as f64 * ((d * d + 1.0) + nbt + (d + 1.0) * nq))
}

/// The CPU code of one variant over a range of cells, as `Kernels` has it.
type CellsFn<T> = fn(&Variant, &[T], usize, &[T], &[T], &[T], T, &mut [T]) -> bool;

/// A physics `K` on a space: the variant, its table and the cell data.
pub struct Pointwise<T, K> {
    /// The generated variant of `K` for the space's shape, degree and rule.
    pub variant: Variant,
    /// Cells of the space.
    pub n_cells: usize,
    /// The variant's reference table ([`tabulate`]): per quadrature point,
    /// the weight and the basis and geometry values and gradients.
    pub tab: Vec<T>,
    /// The sum-factorised residual's and point data's table
    /// ([`sum_factorised::tables`]) of a [`Variant::sum_factorised`] or
    /// [`Variant::matrix_free`] variant; empty otherwise.
    pub sf_tab: Vec<T>,
    /// Vertex coordinates per cell.
    pub x: Vec<T>,
    /// Auxiliary fields per cell.
    pub a: Vec<T>,
    /// The time the forms are evaluated at (`Point::t`): 0 unless a time
    /// integration sets it.
    pub time: T,
    _physics: PhantomData<fn() -> K>,
}

/// The element kernels' table of `v` and its sum-factorised table (empty
/// where `v` has none), in precision `T`.
fn tables_of<T: Scalar>(v: &Variant) -> Result<(Vec<T>, Vec<T>)> {
    let tab = tabulate(v);
    let sf = if v.sum_factorised || v.matrix_free { into_precision(sum_factorised::tables(v, &tab)?) } else { Vec::new() };
    Ok((into_precision(tab), sf))
}

/// `v` in precision `T`: moved as it is in f64 (the cell data of the
/// finest level are hundreds of megabytes), converted otherwise.
fn into_precision<T: Scalar>(v: Vec<f64>) -> Vec<T> {
    let mut v = Some(v);
    match (&mut v as &mut dyn std::any::Any).downcast_mut::<Option<Vec<T>>>() {
        Some(same) => same.take().unwrap_or_default(),
        None => v.map_or_else(Vec::new, |v| v.par_iter().map(|&x| T::from_f64(x)).collect()),
    }
}

/// The largest difference of `a` from `b` relative to `b`'s largest
/// entry: the tests' measure of kernels that agree to rounding.
#[cfg(test)]
pub(crate) fn rel(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1e-300);
    a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs())) / scale
}

/// `v` copied by the host's threads (a nodal field of a large problem).
pub(crate) fn parallel_copy(v: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; v.len()];
    out.par_chunks_mut(1 << 16).zip(v.par_chunks(1 << 16)).for_each(|(o, i)| o.copy_from_slice(i));
    out
}

impl<T: Clone, K> Clone for Pointwise<T, K> {
    fn clone(&self) -> Self {
        Self {
            variant: self.variant,
            n_cells: self.n_cells,
            tab: self.tab.clone(),
            sf_tab: self.sf_tab.clone(),
            x: self.x.clone(),
            a: self.a.clone(),
            time: self.time.clone(),
            _physics: PhantomData,
        }
    }
}

impl<T: Scalar, K: Kernels<T>> Pointwise<T, K> {
    /// Picks the variant of `K` for the space's shape and degree (with
    /// `nq` points, or the first listed) and builds the cell data.
    pub fn new(space: &Space, nq: Option<usize>, aux: Aux<'_>) -> Result<Self> {
        let variant = Self::variant_of(space, nq)?;
        let n_cells = space.n_cells();
        let a = Self::aux_evector(&variant, space, aux)?;
        let (tab, sf_tab) = tables_of(&variant)?;
        Ok(Self { variant, n_cells, tab, sf_tab, x: into_precision(space.cell_coords()), a: into_precision(a), time: T::ZERO, _physics: PhantomData })
    }

    /// The variant of `K` for the space's shape and degree (with `nq`
    /// points, or the first listed).
    fn variant_of(space: &Space, nq: Option<usize>) -> Result<Variant> {
        K::VARIANTS
            .iter()
            .find(|v| v.shape == space.shape && v.degree == space.degree && nq.is_none_or(|n| v.nq == n))
            .ok_or_else(|| {
                let have: Vec<String> = K::VARIANTS.iter().map(|v| format!("{}(p = {}, q = {})", v.shape.name(), v.degree, v.nq)).collect();
                Error::InvalidArgument(format!(
                    "physics `{}` has no {} P{} variant{}: it was generated for {}",
                    K::NAME,
                    space.shape.name(),
                    space.degree,
                    nq.map(|n| format!(" with {n} quadrature points")).unwrap_or_default(),
                    have.join(", ")
                ))
            })
            .copied()
    }

    fn aux_evector(v: &Variant, space: &Space, aux: Aux<'_>) -> Result<Vec<f64>> {
        Self::aux_field(v, space, aux, true)
    }

    /// The auxiliary field `aux` checked against what the variant takes:
    /// a nodal field as an E-vector when `gathered`, else per node as
    /// given; a field per cell as given.
    fn aux_field(v: &Variant, space: &Space, aux: Aux<'_>, gathered: bool) -> Result<Vec<f64>> {
        let na = v.na;
        let check = |len: usize, per: usize, what: &str| {
            if len != per * na {
                return Err(Error::InvalidArgument(format!("physics `{}` needs {na} auxiliary values per {what} ({}), got {len}", K::NAME, per * na)));
            }
            Ok(())
        };
        match (aux, v.aux_nodal) {
            (Aux::None, _) if na == 0 => Ok(Vec::new()),
            (Aux::Nodal(f), true) => {
                check(f.len(), space.n_dofs, "node")?;
                Ok(if gathered { space.gather(na, f) } else { parallel_copy(f) })
            }
            (Aux::Cell(f), false) => {
                check(f.len(), space.n_cells(), "cell")?;
                Ok(f.to_vec())
            }
            _ => Err(Error::InvalidArgument(format!(
                "physics `{}` takes {na} auxiliary field(s) {}",
                K::NAME,
                if v.aux_nodal { "in the solution's space (Aux::Nodal)" } else { "per cell (Aux::Cell)" }
            ))),
        }
    }

    /// Checks an E-vector of the solution.
    fn check_u(&self, u: &[T]) -> Result<()> {
        let want = self.n_cells * self.variant.n_local();
        if u.len() != want {
            return Err(Error::InvalidArgument(format!("solution E-vector has {} values, the space needs {want}", u.len())));
        }
        Ok(())
    }

    /// Element residuals on the CPU (`n_local` per cell) at [`Self::time`].
    pub fn residual_cpu(&self, cpu: &CpuBackend, u: &[T]) -> Result<Vec<T>> {
        self.check_u(u)?;
        Ok(self.over_cells(cpu, self.residual_table(), u, self.variant.n_local(), K::residual_cells))
    }

    /// Element matrices on the CPU (`n_local²` per cell, row-major).
    pub fn jacobian_cpu(&self, cpu: &CpuBackend, u: &[T]) -> Result<Vec<T>> {
        self.check_u(u)?;
        if self.variant.jacobian.is_none() {
            return Err(Error::InvalidArgument(format!("physics `{}` defines no g0..g3", K::NAME)));
        }
        let nl = self.variant.n_local();
        Ok(self.over_cells(cpu, &self.tab, u, nl * nl, K::jacobian_cells))
    }

    /// The table the residual and the point data take: the
    /// sum-factorised one where the variant has it.
    fn residual_table(&self) -> &[T] {
        if self.variant.sum_factorised {
            &self.sf_tab
        } else {
            &self.tab
        }
    }

    /// Runs a generated CPU variant over all cells in rayon tasks of
    /// [`CPU_CHUNK`] cells, `per_cell` outputs each, with table `tab`.
    fn over_cells(&self, cpu: &CpuBackend, tab: &[T], u: &[T], per_cell: usize, cells: CellsFn<T>) -> Vec<T> {
        let mut out = vec![T::ZERO; self.n_cells * per_cell];
        cpu.install(|| {
            out.par_chunks_mut(CPU_CHUNK * per_cell).enumerate().for_each(|(k, o)| {
                // The variant comes from K's own table, so K has its code.
                let ran = cells(&self.variant, tab, k * CPU_CHUNK, u, &self.x, &self.a, self.time, o);
                debug_assert!(ran, "variant missing from its own physics");
            })
        });
        out
    }

    /// Bytes one residual evaluation must move: the E-vectors read and the
    /// element residuals written (the table is negligible).
    pub fn residual_bytes(&self) -> usize {
        let v = &self.variant;
        self.n_cells * T::BYTES * (2 * v.n_local() + v.shape.vertices() * v.dim() + v.aux_per_cell())
    }
}

/// The CSR pattern of an `nc`-component field on `space` (every node a
/// row, no boundary conditions) and the position in it of each
/// element-matrix entry, cell-major like the element kernels' output
/// (`e·nl² + i·nl + j`).
pub fn csr_pattern<T: Scalar>(cpu: &CpuBackend, space: &Space, nc: usize) -> Result<(Csr<T>, Vec<u32>)> {
    let layout = field_layout(space, nc);
    let csr = Csr::<T>::pattern(cpu, &layout)?;
    let pos = cpu.install(|| csr.cell_positions(&layout));
    Ok((csr, pos))
}

/// `out[pos[k]] += v[k]` in order, skipping `pos[k]` = `u32::MAX`: the
/// serial scatter that atomic and SpMV assembly are checked against.
pub fn scatter_add<T: Scalar>(pos: &[u32], v: &[T], out: &mut [T]) {
    for (&p, &x) in pos.iter().zip(v) {
        if p != u32::MAX {
            out[p as usize] += x;
        }
    }
}

/// The global matrix of element matrices `elem` (n_local² per cell) on the
/// `nc`-component field of `space`, every node a row (no boundary
/// conditions applied).
pub fn assemble_csr<T: Scalar>(cpu: &CpuBackend, space: &Space, nc: usize, elem: &[T]) -> Result<Csr<T>> {
    let (mut csr, pos) = csr_pattern(cpu, space, nc)?;
    if elem.len() != pos.len() {
        return Err(Error::InvalidArgument(format!("{} element-matrix values for {} cells of {}²", elem.len(), space.n_cells(), space.nb() * nc)));
    }
    scatter_add(&pos, elem, &mut csr.val);
    Ok(csr)
}

/// Rows of an `nc`-component field: node-major, all free.
pub fn field_layout(space: &Space, nc: usize) -> Layout {
    let rows = space.n_dofs * nc;
    let cell_rows = space.restriction(nc).map;
    Layout {
        mode: DirichletMode::Zero,
        n_rows: rows,
        dofs_per_cell: space.nb() * nc,
        cell_rows,
        fixed: vec![false; rows],
        row_dof: (0..rows as u32).into_par_iter().collect(),
    }
}
