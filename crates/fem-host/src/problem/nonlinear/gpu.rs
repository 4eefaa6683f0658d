//! The Newton solver's operations on the GPU: everything stays on the
//! device across iterations. Element residuals and tangents by thread
//! transposition (the physics' generated entry points), assembly by atomic
//! adds through the position maps (fixed rows and columns skipped), the
//! tangent's values refilled into ELL-WARP for CG.

use super::{NewtonOps, Setup};
use crate::operator::csr::Csr;
use crate::operator::pointwise::{GpuFacetTerm, GpuPointwise, Transposition};
use crate::sparse::device::{gpu_gather, GpuEllWarp};
use crate::sparse::params::SpmvParams;
use crate::sparse::stats::RowStats;
use crate::sparse::warp::{EllWarp, Numbering};
use crate::sparse::Spmv;
use crate::{Backend, CpuBackend, CudaBackend, Result};
use cudarc::driver::{CudaSlice, PushKernelArg};
use fem_kernels::pointwise::Kernels;

/// The assembled matrix `csr` (values refilled later) as ELL-WARP K2 with
/// the a-priori threshold and block, x and y in the original numbering.
pub(crate) fn warp_matrix(gpu: &CudaBackend, csr: &Csr<f64>) -> Result<GpuEllWarp<f64>> {
    let cpu = CpuBackend::new(None)?;
    let p = SpmvParams::a_priori(&RowStats::of(csr));
    let m = EllWarp::new(&cpu, csr, csr.n_rows, Some(p.threshold), Numbering::Remap)?;
    GpuEllWarp::upload(gpu, &m, p.block)
}

/// `out[pos[k]] += elem[k]` by atomic adds, skipping `u32::MAX`
/// (`out` as it was: zero it, or fill it with a base, first).
pub(crate) fn scatter_add(gpu: &CudaBackend, pos: &CudaSlice<u32>, elem: &CudaSlice<f64>, out: &mut CudaSlice<f64>) -> Result<()> {
    let f = gpu.kernel::<f64>("scatter_add")?;
    let n = pos.len();
    unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(pos).arg(elem).arg(out).launch(gpu.grid::<f64>(n, 0)) }?;
    Ok(())
}

/// 1 / the values at `diag_pos` of the CSR values `kflat`.
pub(crate) fn inverse_diagonal(gpu: &CudaBackend, diag_pos: &CudaSlice<u32>, kflat: &CudaSlice<f64>, inv: &mut CudaSlice<f64>) -> Result<()> {
    let f = gpu.kernel::<f64>("inverse_gathered")?;
    let n = inv.len();
    unsafe { gpu.stream().launch_builder(&f).arg(&n).arg(diag_pos).arg(kflat).arg(inv).launch(gpu.grid::<f64>(n, 0)) }?;
    Ok(())
}

/// What the device holds.
pub struct GpuState {
    physics: GpuPointwise<f64>,
    /// The boundary term, whose facets follow the cells in the E-vectors.
    facets: Option<GpuFacetTerm<f64>>,
    /// Launches of the residual and the tangent (`None`: one thread per
    /// cell, for tangents too large for shared memory).
    launch: (Transposition, Option<Transposition>),
    gather: CudaSlice<u32>,
    /// Residual and tangent targets of the element values.
    pos: [CudaSlice<u32>; 2],
    /// What the residual's and the tangent's values start from before the
    /// adds (minus the load; 1 on fixed diagonals).
    base: [CudaSlice<f64>; 2],
    diag_pos: CudaSlice<u32>,
}

impl NewtonOps for CudaBackend {
    type State = GpuState;

    fn prepare<K: Kernels<f64> + 'static>(&self, setup: &Setup<K>) -> Result<GpuState> {
        let s = self.stream();
        let (ne, nl) = (setup.physics.n_cells, setup.physics.variant.n_local());
        let nf = setup.facets.as_ref().map_or(0, |t| t.len());
        self.ensure_free(8 * ((ne + nf) * nl * (nl + 3) + setup.csr.nnz() * 4 + setup.n_rows() * 12))?;
        let physics = GpuPointwise::new(self, &setup.physics)?;
        let shared = self.props().shared_mem_per_block_optin as usize;
        Ok(GpuState {
            launch: (Transposition::fitting(&physics.variant, false, 8, shared)?, Transposition::fitting(&physics.variant, true, 8, shared).ok()),
            physics,
            facets: setup.facets.as_ref().map(|t| GpuFacetTerm::new(self, t)).transpose()?,
            gather: s.clone_htod(&setup.gather)?,
            pos: [s.clone_htod(&setup.residual_pos)?, s.clone_htod(&setup.entry_pos)?],
            base: [self.upload(&setup.residual_base)?, self.upload(&setup.csr.val)?],
            diag_pos: s.clone_htod(&setup.diag_pos)?,
        })
    }

    fn gather(&self, s: &GpuState, u: &CudaSlice<f64>, ue: &mut CudaSlice<f64>) -> Result<()> {
        gpu_gather(self, &s.gather, u, ue)
    }

    fn set_residual_base(&self, s: &mut GpuState, base: &[f64]) -> Result<()> {
        crate::error::same_len("residual base", base.len(), self.len(&s.base[0]))?;
        s.base[0] = self.upload(base)?;
        Ok(())
    }

    fn elements(&self, s: &GpuState, jacobian: bool, ue: &CudaSlice<f64>, out: &mut CudaSlice<f64>) -> Result<()> {
        match (jacobian, s.launch.1) {
            (false, _) => s.physics.evaluate(self, false, s.launch.0, ue, out)?,
            (true, Some(t)) => s.physics.evaluate(self, true, t, ue, out)?,
            (true, None) => s.physics.jacobian_cells(self, ue, out)?,
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
        self.copy(&s.base[matrix as usize], out)?;
        scatter_add(self, &s.pos[matrix as usize], elem, out)
    }

    fn inverse_diagonal(&self, s: &GpuState, kflat: &CudaSlice<f64>, inv: &mut CudaSlice<f64>) -> Result<()> {
        inverse_diagonal(self, &s.diag_pos, kflat, inv)
    }

    fn matrix<K: Kernels<f64>>(&self, _: &GpuState, setup: &Setup<K>) -> Result<Box<dyn Spmv<CudaBackend, f64>>> {
        Ok(Box::new(warp_matrix(self, &setup.csr)?))
    }

    fn describe(&self, s: &GpuState) -> String {
        let tangent = s.launch.1.map_or("one thread per cell".to_string(), |t| format!("{} cell blocks per batch", t.blocks));
        format!("{}, element kernels by thread transposition (residual {} cell blocks per batch, tangent {tangent}), assembly by atomics, the tangent in ELL-WARP", self.name(), s.launch.0.blocks)
    }
}
