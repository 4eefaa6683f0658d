//! The Newton solver's operations on the GPU: everything stays on the
//! device across iterations. Element residuals and tangents by thread
//! transposition (the physics' generated entry points), assembly by atomic
//! adds through the position maps (fixed rows and columns skipped), the
//! tangent's values refilled into ELL-WARP for CG.

use super::{NewtonOps, Setup};
use crate::operator::csr::Csr;
use crate::operator::pointwise::{GpuPointwise, Transposition};
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
    launch: Transposition,
    gather: CudaSlice<u32>,
    /// Residual and tangent targets of the element values.
    pos: [CudaSlice<u32>; 2],
    /// What the tangent's values start from before the adds (1 on fixed diagonals).
    base: CudaSlice<f64>,
    diag_pos: CudaSlice<u32>,
}

impl NewtonOps for CudaBackend {
    type State = GpuState;

    fn prepare<K: Kernels<f64> + 'static>(&self, setup: &Setup<K>) -> Result<GpuState> {
        let s = self.stream();
        let (ne, nl) = (setup.physics.n_cells, setup.physics.variant.n_local());
        self.ensure_free(8 * (ne * nl * (nl + 3) + setup.csr.nnz() * 4 + setup.n_rows() * 12))?;
        let physics = GpuPointwise::new(self, &setup.physics)?;
        Ok(GpuState {
            launch: Transposition::default_for(&physics.variant),
            physics,
            gather: s.clone_htod(&setup.gather)?,
            pos: [s.clone_htod(&setup.residual_pos)?, s.clone_htod(&setup.entry_pos)?],
            base: self.upload(&setup.csr.val)?,
            diag_pos: s.clone_htod(&setup.diag_pos)?,
        })
    }

    fn gather(&self, s: &GpuState, u: &CudaSlice<f64>, ue: &mut CudaSlice<f64>) -> Result<()> {
        gpu_gather(self, &s.gather, u, ue)
    }

    fn elements(&self, s: &GpuState, jacobian: bool, ue: &CudaSlice<f64>, out: &mut CudaSlice<f64>) -> Result<()> {
        s.physics.evaluate(self, jacobian, s.launch, ue, out)
    }

    fn assemble(&self, s: &GpuState, matrix: bool, elem: &CudaSlice<f64>, out: &mut CudaSlice<f64>) -> Result<()> {
        if matrix {
            self.copy(&s.base, out)?;
        } else {
            self.stream().memset_zeros(out)?;
        }
        scatter_add(self, &s.pos[matrix as usize], elem, out)
    }

    fn inverse_diagonal(&self, s: &GpuState, kflat: &CudaSlice<f64>, inv: &mut CudaSlice<f64>) -> Result<()> {
        inverse_diagonal(self, &s.diag_pos, kflat, inv)
    }

    fn matrix<K: Kernels<f64>>(&self, _: &GpuState, setup: &Setup<K>) -> Result<Box<dyn Spmv<CudaBackend, f64>>> {
        Ok(Box::new(warp_matrix(self, &setup.csr)?))
    }

    fn describe(&self, s: &GpuState) -> String {
        format!("{}, element kernels by thread transposition {} × {}, assembly by atomics, CG on ELL-WARP", self.name(), s.launch.blocks, s.launch.batches)
    }
}
