//! Assembly by SpMV (Wong, Kuhl & Darve §4): the global matrix values are
//! the row sums of a matrix `E` whose row for CSR position `p` lists the
//! element entries that add into `p`, so assembly is a race-free SpMV
//! `K_flat = E · v` over the element values `v` (the LMA array), and the
//! load vector likewise from the element loads. `E` holds ones only, so
//! the ELL-WARP kernel runs in its pattern form (`UNIT`): it gathers and
//! sums element values and reads no matrix values. This is the paper's
//! `K_elem · 1` with the element values read through the column indices
//! instead of being stored in `E` itself, so the element kernels keep
//! writing the LMA layout. Padding slots of `E` read one zero appended
//! to the element values ([`with_zero`]).

use super::warp::EllWarp;
use crate::operator::cell_data::CellData;
use crate::operator::csr::Csr;
use crate::space::Layout;
use crate::{CpuBackend, Result, Scalar};
use fem_kernels::sparse::{is_free, row_of, NONE};

/// The pattern matrix with `rows` rows whose row `pos[k]` holds column `k`
/// (entries with `pos[k] = NONE` go nowhere), values one.
pub fn gather_matrix<T: Scalar>(pos: &[u32], rows: usize) -> Csr<T> {
    const { assert!(NONE == crate::space::restriction::SKIP) };
    let (row_ptr, col) = crate::space::restriction::transpose_map(pos, rows);
    let nnz = col.len();
    Csr {
        n_rows: rows,
        row_ptr,
        col,
        val: vec![T::ONE; nnz],
    }
}

/// `v` with the zero that padding slots of a pattern matrix read.
pub fn with_zero<T: Scalar>(v: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len() + 1);
    out.extend_from_slice(v);
    out.push(T::ZERO);
    out
}

/// The two assembly matrices of a layout, in ELL-WARP form.
pub struct AssemblyBySpmv<T> {
    /// CSR position ← element matrix entries (`(i·nb + j)·ne + e`).
    pub matrix: EllWarp<T>,
    /// Row ← element load entries (`i·ne + e`).
    pub load: EllWarp<T>,
    /// CSR positions of fixed rows' diagonals (set to one afterwards).
    pub fixed_diagonal: Vec<u32>,
    /// Where each element matrix entry adds (CSR position or `NONE`): the
    /// scatter the SpMV replaces.
    pub entry_pos: Vec<u32>,
    /// Where each element load entry adds (row or `NONE`).
    pub load_pos: Vec<u32>,
}

/// The row each element load entry `i·ne + e` adds into, `NONE` for
/// eliminated or fixed rows.
fn load_positions<T>(cd: &CellData<T>) -> Vec<u32> {
    cd.map.iter().map(|&m| if is_free(m) { row_of(m) as u32 } else { NONE }).collect()
}

impl<T: Scalar> AssemblyBySpmv<T> {
    /// For the CSR pattern `csr` of `layout`; `threshold` picks K2 over K1.
    pub fn new(
        cpu: &CpuBackend,
        csr: &Csr<T>,
        layout: &Layout,
        cd: &CellData<T>,
        threshold: Option<usize>,
    ) -> Result<Self> {
        let pos = csr.element_positions(layout);
        let e = gather_matrix::<T>(&pos, csr.nnz());
        let load_pos = load_positions(cd);
        let l = gather_matrix::<T>(&load_pos, cd.n_rows);
        let fixed_diagonal = cd
            .fixed_rows
            .iter()
            .map(|&r| {
                csr.position(r as usize, r)
                    .expect("fixed rows keep their diagonal") as u32
            })
            .collect();
        Ok(Self {
            matrix: EllWarp::pattern(cpu, &e, pos.len(), threshold)?,
            load: EllWarp::pattern(cpu, &l, load_pos.len(), threshold)?,
            fixed_diagonal,
            entry_pos: pos,
            load_pos,
        })
    }

    /// Global matrix values and load vector from element matrices (full,
    /// unsymmetric storage) and loads, each with its zero appended
    /// ([`with_zero`]), on the CPU.
    pub fn assemble(&self, cpu: &CpuBackend, vals: &[T], load: &[T]) -> (Vec<T>, Vec<T>) {
        let mut k = vec![T::ZERO; self.matrix.n_rows];
        let mut b = vec![T::ZERO; self.load.n_rows];
        self.matrix.spmv_with::<true>(cpu, vals, &mut k);
        self.load.spmv_with::<true>(cpu, load, &mut b);
        for &p in &self.fixed_diagonal {
            k[p as usize] = T::ONE;
        }
        (k, b)
    }
}

/// Assembly by SpMV against atomic scatter on the GPU, both from the same
/// element matrices on the device.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AssemblyReport {
    /// Spatial dimension of the structured box mesh (2 or 3).
    pub dim: usize,
    /// Polynomial degree p of the Q_p elements.
    pub degree: usize,
    /// Scalar type of the values, `f32` or `f64`.
    pub precision: &'static str,
    /// Cells (elements) of the mesh.
    pub cells: usize,
    /// Rows of the global matrix (free degrees of freedom; Dirichlet rows eliminated).
    pub rows: usize,
    /// Nonzeros of the global CSR matrix.
    pub nnz: usize,
    /// Entries of all element matrices together (the length of the LMA array).
    pub element_entries: usize,
    /// `k1` or `k2` (remapped, pattern form).
    pub kernel: String,
    /// Median time of one matrix assembly by SpMV, in seconds.
    pub spmv_seconds: f64,
    /// Median time of one matrix assembly by atomic scatter (zeroing the output
    /// included), in seconds.
    pub atomic_seconds: f64,
    /// Median time of one load-vector assembly by SpMV, in seconds.
    pub load_spmv_seconds: f64,
    /// Median time of one load-vector assembly by atomic scatter (zeroing
    /// included), in seconds.
    pub load_atomic_seconds: f64,
    /// Largest difference of either GPU assembly from the CPU CSR assembly.
    pub max_abs_diff: f64,
}

/// Measures both assemblies of the Q_`degree` Poisson matrix with about
/// `rows` rows (Dirichlet rows eliminated).
pub fn bench_gpu<T: Scalar>(
    gpu: &crate::CudaBackend,
    cpu: &CpuBackend,
    dim: usize,
    degree: usize,
    rows: usize,
    threshold: Option<usize>,
    repeats: usize,
) -> Result<AssemblyReport> {
    use super::device::GpuEllWarp;
    use crate::operator::elements;
    use crate::space::{DirichletMode, Space};
    use crate::timing::measure;
    use crate::Backend;
    let cells = (((rows as f64).powf(1.0 / dim as f64) / degree as f64).round() as usize).max(2);
    let mesh = crate::mesh::BoxMesh::structured(dim, cells).build()?;
    let space = Space::tensor(&mesh, degree)?;
    let layout = Layout::new(&space, DirichletMode::Eliminate);
    let cd = CellData::<T>::new(&space, &layout);
    let elems = elements::assemble(cpu, &cd, false)?;
    let reference = Csr::assemble(cpu, &layout, &elems)?;
    let a = AssemblyBySpmv::new(cpu, &reference, &layout, &cd, threshold)?;
    let (em, el) = (
        GpuEllWarp::upload(gpu, &a.matrix, 128)?,
        GpuEllWarp::upload(gpu, &a.load, 128)?,
    );
    let (vals, load) = (
        gpu.upload(&with_zero(&elems.vals))?,
        gpu.upload(&with_zero(&elems.load))?,
    );
    let mut k = gpu.zeros::<T>(reference.nnz())?;
    let mut b = gpu.zeros::<T>(layout.n_rows)?;
    let spmv = measure(gpu, 2, repeats, || em.spmv_with(gpu, &vals, &mut k, true))?.median;
    let load_spmv = measure(gpu, 2, repeats, || el.spmv_with(gpu, &load, &mut b, true))?.median;
    let k_spmv = gpu.download(&k)?;
    let pos = gpu.htod(&a.entry_pos)?;
    let load_pos = gpu.htod(&a.load_pos)?;
    // the appended zero is not scattered: the launch covers pos only
    let scatter = |pos: &cudarc::driver::CudaSlice<u32>,
                   src: &cudarc::driver::CudaSlice<T>,
                   dst: &mut cudarc::driver::CudaSlice<T>|
     -> Result<()> {
        gpu.stream().memset_zeros(dst)?;
        crate::sparse::device::gpu_scatter_add(gpu, pos, src, dst)
    };
    let atomic = measure(gpu, 2, repeats, || scatter(&pos, &vals, &mut k))?.median;
    let load_atomic = measure(gpu, 2, repeats, || scatter(&load_pos, &load, &mut b))?.median;
    let k_atomic = gpu.download(&k)?;
    let diff = |v: &[T]| {
        v.iter()
            .zip(&reference.val)
            .map(|(x, r)| (x.to_f64() - r.to_f64()).abs())
            .fold(0.0, f64::max)
    };
    Ok(AssemblyReport {
        dim,
        degree,
        precision: T::NAME,
        cells: cd.ne,
        rows: layout.n_rows,
        nnz: reference.nnz(),
        element_entries: elems.vals.len(),
        kernel: if threshold.is_some() { "k2" } else { "k1" }.into(),
        spmv_seconds: spmv,
        atomic_seconds: atomic,
        load_spmv_seconds: load_spmv,
        load_atomic_seconds: load_atomic,
        max_abs_diff: diff(&k_spmv).max(diff(&k_atomic)),
    })
}
