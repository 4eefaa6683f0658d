//! The Newton solver's operations on the GPU: everything stays on the
//! device across iterations. Element residuals and tangents by thread
//! transposition (the physics' generated entry points), assembly by atomic
//! adds through the position maps (fixed rows and columns skipped) or by
//! SpMV with their 0/1 gather matrices (ELL-WARP, or cuSPARSE beside a
//! cuSPARSE tangent), the
//! tangent's values refilled into a sparse format (ELL-WARP K2 unless
//! another is asked for), or its element matrices applied by
//! `fem_element_spmv` (gather, dense row, atomic scatter in one pass).

use super::assembly::{gather_pattern, is_zero};
use super::{NewtonOps, NewtonSizes, Scatter, Setup};
use crate::operator::csr::Csr;
use crate::operator::pointwise::partial::GpuPartial;
use crate::operator::pointwise::{GpuFacetTerm, GpuPointwise, Transposition};
use crate::operator::device_pattern::DevicePattern;
use crate::space::restriction::GpuRestriction;
use crate::sparse::assembly::gather_matrix;
use crate::sparse::cusparse::CusparseCsr;
use crate::sparse::device::{blocks_of, gpu_scatter_add, prepare_gpu, GpuEllWarp};
use rayon::prelude::*;
use crate::sparse::params::SpmvParams;
use crate::sparse::stats::RowStats;
use crate::sparse::{Spmv, SpmvFormat};
use crate::{Backend, CpuBackend, CudaBackend, Result};
use cudarc::driver::{CudaSlice, PushKernelArg};
use fem_kernels::pointwise::Kernels;
use fem_kernels::sparse::ELEMENT_CHUNK;

/// The assembled matrix `csr` (values refilled later) in `format` with the
/// a-priori parameters (ELL-WARP's threshold and block).
pub(crate) fn sparse_matrix<T: crate::Scalar>(gpu: &CudaBackend, csr: &Csr<T>, format: SpmvFormat) -> Result<Box<dyn Spmv<CudaBackend, T>>> {
    prepare_gpu(gpu, &CpuBackend::new(None)?, csr, format, &SpmvParams::a_priori(&RowStats::of(csr)))
}

/// 1 / the values at `diag_pos` of the CSR values `kflat`.
pub(crate) fn inverse_diagonal(gpu: &CudaBackend, diag_pos: &CudaSlice<u32>, kflat: &CudaSlice<f64>, inv: &mut CudaSlice<f64>) -> Result<()> {
    let f = gpu.kernel::<f64>("inverse_gathered")?;
    let n = inv.len();
    unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(diag_pos).arg(kflat).arg(inv).launch(gpu.grid::<f64>(n, 0)) }?;
    Ok(())
}

/// The CSR position of every element-tangent entry of `setup`
/// ([`Setup::entry_pos`], the same function of the pattern, the gathered
/// `rows` and the `fixed` mask), made on the device: the host neither
/// computes nor sends it (at 6.3M rows of Q1, 400 MB).
fn entry_slots<K: Kernels<f64>>(gpu: &CudaBackend, setup: &Setup<K>, rows: &CudaSlice<u32>, fixed: &CudaSlice<f64>) -> Result<CudaSlice<u32>> {
    let (n, nl) = (setup.entry_len(), setup.physics.variant.n_local());
    if n == 0 {
        return Ok(gpu.stream().alloc_zeros(1)?);
    }
    let pattern = DevicePattern::upload(gpu, &setup.csr)?;
    gpu.ensure_free(n * 4)?;
    let mut pos = gpu.stream().alloc_zeros::<u32>(n)?;
    let f = gpu.function("fem_gathered_entry_slots")?;
    unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(&nl).arg(rows).arg(fixed).arg(&pattern.row_ptr).arg(&pattern.col).arg(&mut pos).launch(gpu.per_item(n)) }?;
    Ok(pos)
}

/// The residual's map ([`Setup::residual_pos`]: the gathered `rows`,
/// none where `fixed`) made on the device from the maps it holds: the
/// host neither computes nor sends it (at 6.3M rows of Q1, 100 MB).
fn residual_rows(gpu: &CudaBackend, rows: &CudaSlice<u32>, fixed: &CudaSlice<f64>) -> Result<CudaSlice<u32>> {
    let n = rows.len();
    if n == 0 {
        return Ok(gpu.stream().null()?);
    }
    gpu.ensure_free(n * 4)?;
    let mut out = gpu.stream().alloc_zeros::<u32>(n)?;
    let f = gpu.function("fem_residual_rows")?;
    // SAFETY: `rows` holds rows of `fixed` or NONE; `out` as long as `rows`
    unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(rows).arg(fixed).arg(&mut out).launch(gpu.per_item(n)) }?;
    Ok(out)
}

/// The mask of the `fixed` rows ([`Setup::fixed_mask`]) made on the
/// device from one byte a row: the host sends an eighth of it (at 6.3M
/// rows, 6 MB rather than 50).
fn fixed_mask_on(gpu: &CudaBackend, fixed: &[bool]) -> Result<CudaSlice<f64>> {
    let n = fixed.len();
    if n == 0 {
        return Ok(gpu.stream().null()?);
    }
    gpu.ensure_free(n * 9)?;
    let flags = gpu.htod(&fixed.par_iter().map(|&f| f as u8).collect::<Vec<u8>>())?;
    let mut out = gpu.stream().alloc_zeros::<f64>(n)?;
    // SAFETY: `flags` and `out` hold n rows each
    unsafe { gpu.stream().launch_builder(&gpu.function("fem_flag_mask")?).arg(&n).arg(&flags).arg(&mut out).launch(gpu.per_item(n)) }?;
    Ok(out)
}

impl<K: Kernels<f64>> Setup<K> {
    /// [`Setup::residual_pos`] and [`Setup::fixed_mask`] as the GPU makes
    /// them, brought back: for comparison with the host's.
    pub fn residual_pos_on(&self, gpu: &CudaBackend) -> Result<(Vec<u32>, Vec<f64>)> {
        let rows = GpuRestriction::of_map(gpu, &self.gather, self.n_rows())?;
        let fixed = fixed_mask_on(gpu, &self.fixed)?;
        Ok((gpu.dtoh(&residual_rows(gpu, &rows.map, &fixed)?)?, gpu.dtoh(&fixed)?))
    }

    /// [`Setup::entry_pos`] as the GPU makes it for Newton's assembly,
    /// brought back: for comparison with the host's.
    pub fn entry_pos_on(&self, gpu: &CudaBackend) -> Result<Vec<u32>> {
        let rows = GpuRestriction::of_map(gpu, &self.gather, self.n_rows())?;
        let pos = entry_slots(gpu, self, &rows.map, &fixed_mask_on(gpu, &self.fixed)?)?;
        let mut v = gpu.dtoh(&pos)?;
        v.truncate(self.entry_len());
        Ok(v)
    }
}

/// Threads per block of the gather matrices' ELL-WARP products.
const GATHER_BLOCK: u32 = 128;

/// A 0/1 gather matrix on the device: its product sums element values
/// into global ones ([`Scatter::Spmv`]).
enum GatherSum {
    Warp(GpuEllWarp<f64>),
    Cusparse(CusparseCsr<f64>),
}

impl GatherSum {
    /// The gather matrix of the entries at `pos` into `rows` rows, for the
    /// cuSPARSE kernel or ELL-WARP's.
    fn new(gpu: &CudaBackend, cpu: &CpuBackend, pos: &[u32], rows: usize, cusparse: bool) -> Result<Self> {
        Ok(if cusparse {
            // one column more than entries: the padding zero of the element arrays
            Self::Cusparse(CusparseCsr::rectangular(gpu, &gather_matrix::<f64>(pos, rows), pos.len() + 1)?)
        } else {
            Self::Warp(GpuEllWarp::upload(gpu, &gather_pattern(cpu, pos, rows)?, GATHER_BLOCK)?)
        })
    }

    /// `out ← G elem`.
    fn sum(&self, gpu: &CudaBackend, elem: &CudaSlice<f64>, out: &mut CudaSlice<f64>) -> Result<()> {
        match self {
            Self::Warp(g) => g.spmv_with(gpu, elem, out, true),
            Self::Cusparse(g) => g.spmv(gpu, elem, out),
        }
    }
}

/// What the device holds.
pub struct GpuState {
    physics: GpuPointwise<f64>,
    /// The boundary term, whose facets follow the cells in the E-vectors.
    facets: Option<GpuFacetTerm<f64>>,
    /// Launches of the residual and the tangent (`None`: sum-factorised
    /// residuals of hexahedra from Q2, else one thread per cell, for
    /// variants too large for shared memory).
    launch: [Option<Transposition>; 2],
    /// The E-vector's map from the unknowns.
    gather: GpuRestriction,
    /// The residual's: the same map, fixed rows skipped.
    residual: GpuRestriction,
    /// CSR position of every element-tangent entry (empty when the
    /// tangent stays element matrices).
    entry_pos: CudaSlice<u32>,
    /// What the residual's values start from before the adds (minus the
    /// load).
    base: CudaSlice<f64>,
    /// The tangent's: its nonzero CSR values (1 on fixed diagonals) and
    /// their positions, not a copy of the whole pattern's values.
    tangent_base: (CudaSlice<u32>, CudaSlice<f64>),
    diag_pos: CudaSlice<u32>,
    /// 1 in fixed rows, 0 in free ones.
    fixed: CudaSlice<f64>,
    /// The residual's and the tangent's gather matrices ([`Scatter::Spmv`]).
    sums: [Option<GatherSum>; 2],
    /// Whether each base is zero, so that a sum by SpMV need not add it.
    base_zero: [bool; 2],
    /// Partial assembly's kernels, or why the variant has none.
    partial: std::result::Result<GpuPartial, String>,
    /// The scratch of the boundary term's product from its point data.
    facet_scratch: std::sync::Mutex<CudaSlice<f64>>,
}

/// Threads per element row of `fem_element_spmv` for `nl` × `nl`
/// element matrices: enough that each loads its entries in one chunk of
/// [`ELEMENT_CHUNK`], up to a warp.
pub(crate) fn element_lanes(nl: usize) -> u32 {
    (nl.div_ceil(ELEMENT_CHUNK).next_power_of_two() as u32).min(32)
}

impl GpuState {
    /// Partial assembly's kernels; an error (why) on the variants they do
    /// not take.
    fn partial_kernels(&self) -> Result<&GpuPartial> {
        self.partial.as_ref().map_err(|e| crate::Error::InvalidArgument(e.clone()))
    }

    /// Values of the cells' E-vector (the facets' follow).
    fn cell_len(&self) -> usize {
        self.physics.n_cells * self.physics.variant.n_local()
    }

    /// Values of the boundary term's point data, after the cells' point
    /// data or the matrix-free state (0: no boundary linearisation).
    fn facet_points(&self) -> usize {
        self.facets.as_ref().map_or(0, |f| f.point_values())
    }

    /// The boundary term with its point data, where it has a
    /// linearisation.
    fn facet_term(&self) -> Option<&GpuFacetTerm<f64>> {
        self.facets.as_ref().filter(|f| f.point_values() > 0)
    }

    /// The boundary term's point data at the solution E-vector `ue` into
    /// the end of `kept`.
    fn facet_points_into(&self, gpu: &CudaBackend, ue: &CudaSlice<f64>, kept: &mut CudaSlice<f64>) -> Result<()> {
        match self.facet_term() {
            Some(f) => {
                let n = f.point_values();
                let at = kept.len().checked_sub(n).ok_or_else(|| crate::Error::InvalidArgument(format!("{} values kept by the points hold no boundary point data of {n}", kept.len())))?;
                f.points(gpu, &ue.slice(self.cell_len()..), &mut kept.slice_mut(at..))
            }
            None => Ok(()),
        }
    }

    /// `y +=` the boundary term's product from the point data at the end
    /// of `kept`.
    fn add_facet_product(&self, gpu: &CudaBackend, kept: &CudaSlice<f64>, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        let Some(f) = self.facet_term() else { return Ok(()) };
        let mut t = self.facet_scratch.lock().map_err(|_| crate::Error::InvalidArgument("a boundary product panicked".into()))?;
        let at = kept.len().saturating_sub(f.point_values());
        f.add_point_product(gpu, &kept.slice(at..), &self.residual.map.slice(self.cell_len()..), x, y, &mut t)
    }

    /// `d +=` the boundary term's diagonal likewise.
    fn add_facet_diagonal(&self, gpu: &CudaBackend, kept: &CudaSlice<f64>, d: &mut CudaSlice<f64>) -> Result<()> {
        let Some(f) = self.facet_term() else { return Ok(()) };
        let at = kept.len().saturating_sub(f.point_values());
        f.add_point_diagonal(gpu, &kept.slice(at..), &self.residual.map.slice(self.cell_len()..), d)
    }
}

impl NewtonOps for CudaBackend {
    type State = GpuState;

    fn cells_pattern(&self, cpu: &CpuBackend, n_rows: usize, nb: usize, cell_rows: &[u32]) -> Result<Csr<f64>> {
        // rows past a thread's buffer (high degrees) are the host's
        match DevicePattern::host_pattern(self, n_rows, nb, cell_rows)? {
            Some(p) => Ok(p),
            None => Csr::cells_pattern(cpu, n_rows, nb, cell_rows, &[]),
        }
    }

    fn ensure_fits(&self, what: &str, bytes: usize) -> Result<()> {
        self.ensure_problem_fits(what, bytes)
    }

    fn gathers_cells(&self) -> bool {
        true
    }

    fn prepare<K: Kernels<f64> + 'static>(&self, setup: &Setup<K>, tangent: Option<SpmvFormat>, scatter: Scatter) -> Result<GpuState> {
        let s = self.stream();
        let lma = tangent.is_none();
        let (ne, nl) = (setup.physics.n_cells, setup.physics.variant.n_local());
        let nf = setup.facets.as_ref().map_or(0, |t| t.len());
        let sizes = NewtonSizes { elements: ne + nf, n_local: nl, rows: setup.n_rows(), nnz: setup.csr.nnz(), tangent: NewtonSizes::tangent_values(nl, setup.has_pattern()) };
        self.ensure_free(sizes.device_bytes(lma, scatter == Scatter::Spmv))?;
        // the residual's map: the host's where its gather matrix is made
        // there (once, for the matrix and the restriction), else made on
        // the device
        let host_residual = (scatter == Scatter::Spmv).then(|| setup.residual_pos());
        let sums = match &host_residual {
            Some(residual_pos) => {
                let (cpu, cusparse) = (CpuBackend::new(None)?, tangent == Some(SpmvFormat::Cusparse));
                let tangent = if lma { None } else { Some(GatherSum::new(self, &cpu, setup.entry_pos(), setup.csr.nnz(), cusparse)?) };
                [Some(GatherSum::new(self, &cpu, residual_pos, setup.n_rows(), cusparse)?), tangent]
            }
            None => [None, None],
        };
        let gather = GpuRestriction::of_map(self, &setup.gather, setup.n_rows())?;
        let physics = match &setup.cells {
            Some(cells) => GpuPointwise::from_nodes(self, &setup.physics, cells, &gather.map)?,
            None => GpuPointwise::new(self, &setup.physics)?,
        };
        let fixed = fixed_mask_on(self, &setup.fixed)?;
        let residual = match host_residual {
            Some(pos) => GpuRestriction::of_map(self, &pos, setup.n_rows())?,
            None => GpuRestriction::on_device(residual_rows(self, &gather.map, &fixed)?, setup.n_rows()),
        };
        // the atomic adds' map only where they sum the tangent
        let entry_pos = if lma || scatter == Scatter::Spmv { s.alloc_zeros(1)? } else { entry_slots(self, setup, &gather.map, &fixed)? };
        let base = self.upload(&setup.residual_base)?;
        // the tangent's base is 1 on the fixed diagonals, 0 elsewhere
        let positions = if lma { Vec::new() } else { setup.fixed_diagonals() };
        let base_zero = [is_zero(&setup.residual_base), positions.is_empty()];
        let tangent_base = (self.htod(&positions)?, self.upload(&vec![1.0; positions.len()])?);
        let partial = GpuPartial::new(self, &setup.physics.variant, ne).map_err(|e| e.to_string());
        let shared = self.props().shared_mem_per_block_optin as usize;
        let facets = setup.facets.as_ref().map(|t| GpuFacetTerm::new(self, t)).transpose()?;
        let facet_scratch = self.zeros(facets.as_ref().map_or(0, |f| f.scratch_len()).max(1))?;
        Ok(GpuState {
            // hexahedra from Q2 take the sum-factorised residual even where
            // a thread-transposition block fits (scalar Q2: 0.27 against
            // 8.9 ms at 2.4M DOFs on an H100)
            launch: [false, true].map(|jacobian| (jacobian || !physics.variant.sum_factorised).then(|| Transposition::fitting(&physics.variant, jacobian, 8, shared).ok()).flatten()),
            physics,
            facets,
            gather,
            residual,
            entry_pos,
            base,
            tangent_base,
            diag_pos: self.htod(&setup.diag_pos)?,
            fixed,
            sums,
            base_zero,
            partial,
            facet_scratch: std::sync::Mutex::new(facet_scratch),
        })
    }

    fn gather(&self, s: &GpuState, u: &CudaSlice<f64>, ue: &mut CudaSlice<f64>) -> Result<()> {
        s.gather.gather(self, u, ue)
    }

    fn set_residual_base(&self, s: &mut GpuState, base: &[f64]) -> Result<()> {
        s.base_zero[0] = is_zero(base);
        self.write(base, &mut s.base)
    }

    fn aux<'s>(&self, s: &'s GpuState) -> &'s CudaSlice<f64> {
        s.physics.aux()
    }

    fn aux_mut<'s>(&self, s: &'s mut GpuState) -> &'s mut CudaSlice<f64> {
        s.physics.aux_mut()
    }

    fn set_time(&self, s: &mut GpuState, t: f64) {
        s.physics.time = t;
        if let Some(f) = &mut s.facets {
            f.time = t;
        }
    }

    fn elements(&self, s: &GpuState, jacobian: bool, ue: &CudaSlice<f64>, out: &mut CudaSlice<f64>) -> Result<()> {
        match (jacobian, &s.partial, s.launch[jacobian as usize]) {
            // from Q2 the element matrices come from the point data
            (true, Ok(p), _) if p.builds_elements() && s.physics.variant.points.is_some() => {
                let mut g = self.zeros::<f64>(p.point_values())?;
                s.physics.points(self, ue, &mut g)?;
                p.elements(self, &g, out)?;
            }
            (_, _, Some(t)) => s.physics.evaluate(self, jacobian, t, ue, out)?,
            (_, _, None) => s.physics.evaluate_cells(self, jacobian, ue, out)?,
        }
        match &s.facets {
            Some(f) => {
                let (cells, done) = (s.physics.n_cells * s.physics.variant.n_local(), s.physics.out_len(jacobian));
                f.evaluate(self, jacobian, &ue.slice(cells..), &mut out.slice_mut(done..))
            }
            None => Ok(()),
        }
    }

    fn assemble(&self, s: &GpuState, matrix: bool, elem: &CudaSlice<f64>, out: &mut CudaSlice<f64>) -> Result<()> {
        let m = matrix as usize;
        if let Some(g) = &s.sums[m] {
            g.sum(self, elem, out)?;
            return match (s.base_zero[m], matrix) {
                (true, _) => Ok(()),
                (false, true) => gpu_scatter_add(self, &s.tangent_base.0, &s.tangent_base.1, out),
                (false, false) => self.axpy(1.0, &s.base, out),
            };
        }
        match matrix {
            true => {
                self.stream().memset_zeros(out)?;
                gpu_scatter_add(self, &s.tangent_base.0, &s.tangent_base.1, out)?;
                gpu_scatter_add(self, &s.entry_pos, elem, out)
            }
            false => {
                self.copy(&s.base, out)?;
                s.residual.add(self, elem, out)
            }
        }
    }

    fn inverse_diagonal(&self, s: &GpuState, kflat: &CudaSlice<f64>, inv: &mut CudaSlice<f64>) -> Result<()> {
        inverse_diagonal(self, &s.diag_pos, kflat, inv)
    }

    fn default_format(&self) -> SpmvFormat {
        SpmvFormat::K2
    }

    fn matrix<K: Kernels<f64>, T: crate::Scalar>(&self, _: &GpuState, setup: &Setup<K>, format: SpmvFormat) -> Result<Box<dyn Spmv<CudaBackend, T>>> {
        sparse_matrix(self, &setup.csr.in_precision::<T>(), format)
    }

    fn element_product(&self, s: &GpuState, kelem: &CudaSlice<f64>, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        self.mul(&s.fixed, x, y)?;
        let (map, rows) = (&s.residual.map, s.residual.len());
        let nl = kelem.len() / rows.max(1);
        let lanes = element_lanes(nl);
        let f = self.kernel::<f64>("element_spmv")?;
        unsafe { self.stream().launch_builder(&f).arg(&rows).arg(&nl).arg(&lanes).arg(kelem).arg(map).arg(x).arg(y).launch(blocks_of(rows * lanes as usize, 256)) }?;
        Ok(())
    }

    fn element_diagonal(&self, s: &GpuState, kelem: &CudaSlice<f64>, d: &mut CudaSlice<f64>) -> Result<()> {
        self.copy(&s.fixed, d)?;
        let (map, rows) = (&s.residual.map, s.residual.len());
        let nl = kelem.len() / rows.max(1);
        let f = self.kernel::<f64>("element_diagonal_add")?;
        unsafe { self.stream().launch_builder(&f).arg(&rows).arg(&nl).arg(kelem).arg(map).arg(d).launch(self.grid::<f64>(rows, 0)) }?;
        Ok(())
    }

    /// Hexahedra the kernels take: from Q2 their Newton update is several
    /// times faster than element matrices' or K2's set-up and products
    /// together (`benches/gpu/results/partial`).
    fn auto_partial(&self, v: &fem_kernels::pointwise::Variant) -> bool {
        GpuPartial::supports(v).is_ok()
    }

    fn points(&self, s: &GpuState, ue: &CudaSlice<f64>, g: &mut CudaSlice<f64>) -> Result<()> {
        s.partial_kernels()?;
        s.physics.points(self, ue, g)?;
        s.facet_points_into(self, ue, g)
    }

    fn hold_state(&self, s: &GpuState, ue: &CudaSlice<f64>, held: &mut CudaSlice<f64>) -> Result<()> {
        crate::error::same_len("the matrix-free state", held.len(), ue.len() + s.facet_points())?;
        if !ue.is_empty() {
            self.stream().memcpy_dtod(ue, &mut held.slice_mut(..ue.len()))?;
        }
        s.facet_points_into(self, ue, held)
    }

    fn partial_product(&self, s: &GpuState, g: &CudaSlice<f64>, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        self.mul(&s.fixed, x, y)?;
        s.partial_kernels()?.apply(self, g, &s.residual.map, x, y)?;
        s.add_facet_product(self, g, x, y)
    }

    fn partial_diagonal(&self, s: &GpuState, g: &CudaSlice<f64>, d: &mut CudaSlice<f64>) -> Result<()> {
        self.copy(&s.fixed, d)?;
        s.partial_kernels()?.add_diagonal(self, g, &s.residual.map, d)?;
        s.add_facet_diagonal(self, g, d)
    }

    fn free_product(&self, s: &GpuState, held: &CudaSlice<f64>, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        self.mul(&s.fixed, x, y)?;
        s.physics.action(self, held, &s.residual.map, x, y)?;
        s.add_facet_product(self, held, x, y)
    }

    fn free_diagonal(&self, s: &GpuState, held: &CudaSlice<f64>, d: &mut CudaSlice<f64>) -> Result<()> {
        self.copy(&s.fixed, d)?;
        s.physics.add_free_diagonal(self, s.partial_kernels()?, held, &s.residual.map, d)?;
        s.add_facet_diagonal(self, held, d)
    }

    fn describe(&self, s: &GpuState) -> String {
        let blocks = |t: Transposition| format!("{} cell blocks per batch", t.blocks);
        let residual = s.launch[0].map_or(s.physics.cells_method().to_string(), blocks);
        let tangent = s.launch[1].map_or("one thread per cell".to_string(), blocks);
        let sum = match &s.sums[0] {
            None => "atomics",
            Some(GatherSum::Warp(_)) => "ELL-WARP SpMV",
            Some(GatherSum::Cusparse(_)) => "cuSPARSE SpMV",
        };
        format!("{}, element kernels by thread transposition (residual {residual}, tangent {tangent}), assembly by {sum}", self.name())
    }
}
