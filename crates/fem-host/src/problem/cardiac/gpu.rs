//! The monodomain solver's backend operations on the GPU: everything stays
//! on the device across steps. Element residuals and matrices by thread
//! transposition (the generated entry points), assembly by SpMV with the
//! ELL-WARP or cuSPARSE kernels or by atomics, CG with the same SpMV, and
//! the point-history and activation updates as small kernels.

use super::cpu::gather_matrices;
use super::{Assembly, Config, Kernel, Ops, Setup};
use crate::operator::pointwise::{GpuPointwise, Transposition};
use crate::problem::nonlinear::gpu::inverse_diagonal;
use crate::sparse::assembly::gather_matrix;
use crate::sparse::cusparse::CusparseCsr;
use crate::sparse::device::{gpu_gather, gpu_scatter_add, GpuEllWarp};
use crate::sparse::Spmv;
use crate::{Backend, CpuBackend, CudaBackend, Result};
use cudarc::driver::{CudaSlice, PushKernelArg};

/// Threads per block of the ELL-WARP launches.
const WARP_BLOCK: u32 = 128;

/// How element values become global ones on the device.
enum Assembler {
    /// Gather matrices of the residual and the matrix, ELL-WARP.
    Warp([GpuEllWarp<f64>; 2]),
    /// The same gather matrices as cuSPARSE CSR.
    Cusparse([CusparseCsr<f64>; 2]),
    /// Targets of the residual and matrix entries for atomic adds.
    Atomic([CudaSlice<u32>; 2]),
}

pub struct GpuState {
    physics: GpuPointwise<f64>,
    launch: Transposition,
    cell_dofs: CudaSlice<u32>,
    diag_pos: CudaSlice<u32>,
    amp: CudaSlice<f64>,
    assembler: Assembler,
    kernel: Kernel,
}

impl Ops for CudaBackend {
    type State = GpuState;

    fn prepare(&self, setup: &Setup, cfg: &Config) -> Result<GpuState> {
        let cpu = CpuBackend::new(None)?;
        let s = self.stream();
        let entries = setup.entry_pos.len();
        self.ensure_free(8 * (setup.physics.n_cells * 30 + entries * 3 + setup.csr.nnz() * 4))?;
        let assembler = match (cfg.assembly, cfg.kernel) {
            (Assembly::Atomic, _) => Assembler::Atomic([s.clone_htod(&setup.space.cell_dofs)?, s.clone_htod(&setup.entry_pos)?]),
            (Assembly::Spmv, Kernel::Warp) => {
                let [r, k] = gather_matrices(&cpu, setup)?;
                Assembler::Warp([GpuEllWarp::upload(self, &r, WARP_BLOCK)?, GpuEllWarp::upload(self, &k, WARP_BLOCK)?])
            }
            (Assembly::Spmv, Kernel::Cusparse) => {
                let r = gather_matrix::<f64>(&setup.space.cell_dofs, setup.space.n_dofs);
                let k = gather_matrix::<f64>(&setup.entry_pos, setup.csr.nnz());
                // One column more than entries: the element arrays end in the zero ELL-WARP padding reads.
                Assembler::Cusparse([CusparseCsr::rectangular(self, &r, setup.space.cell_dofs.len() + 1)?, CusparseCsr::rectangular(self, &k, entries + 1)?])
            }
        };
        let physics = GpuPointwise::new(self, &setup.physics)?;
        Ok(GpuState {
            launch: Transposition::default_for(&physics.variant),
            physics,
            cell_dofs: s.clone_htod(&setup.space.cell_dofs)?,
            diag_pos: s.clone_htod(&setup.diag_pos)?,
            amp: self.upload(&setup.amp)?,
            assembler,
            kernel: cfg.kernel,
        })
    }

    fn gather(&self, s: &GpuState, phi: &CudaSlice<f64>, u: &mut CudaSlice<f64>) -> Result<()> {
        gpu_gather(self, &s.cell_dofs, phi, u)
    }

    fn elements(&self, s: &GpuState, jacobian: bool, u: &CudaSlice<f64>, out: &mut CudaSlice<f64>) -> Result<()> {
        s.physics.evaluate(self, jacobian, s.launch, u, out)
    }

    fn assemble(&self, s: &GpuState, matrix: bool, elem: &CudaSlice<f64>, out: &mut CudaSlice<f64>) -> Result<()> {
        let m = matrix as usize;
        match &s.assembler {
            Assembler::Warp(g) => g[m].spmv_with(self, elem, out, true),
            Assembler::Cusparse(g) => g[m].spmv(self, elem, out),
            Assembler::Atomic(pos) => {
                self.stream().memset_zeros(out)?;
                gpu_scatter_add(self, &pos[m], elem, out)
            }
        }
    }

    fn inverse_diagonal(&self, s: &GpuState, kflat: &CudaSlice<f64>, inv: &mut CudaSlice<f64>) -> Result<()> {
        inverse_diagonal(self, &s.diag_pos, kflat, inv)
    }

    fn advance(&self, s: &mut GpuState, u: &CudaSlice<f64>, on: f64) -> Result<()> {
        let f = self.kernel::<f64>("cardiac_advance")?;
        let (n, nl) = (s.physics.n_cells, s.physics.variant.n_local());
        let cfg = self.grid::<f64>(2 * n, 0);
        unsafe { self.stream().launch_builder(&f).arg(&n).arg(&nl).arg(u).arg(s.physics.aux_mut()).arg(&s.amp).arg(&on).launch(cfg) }?;
        Ok(())
    }

    fn activation(&self, prev: &CudaSlice<f64>, phi: &CudaSlice<f64>, t: f64, dt: f64, act: &mut CudaSlice<f64>) -> Result<()> {
        let f = self.kernel::<f64>("cardiac_activation")?;
        let n = act.len();
        unsafe { self.stream().launch_builder(&f).arg(&n).arg(prev).arg(phi).arg(&t).arg(&dt).arg(act).launch(self.grid::<f64>(n, 0)) }?;
        Ok(())
    }

    fn aux(&self, s: &GpuState) -> Result<Vec<f64>> {
        self.download(s.physics.aux())
    }

    fn matrix(&self, s: &GpuState, setup: &Setup, _: &Config) -> Result<Box<dyn Spmv<CudaBackend, f64>>> {
        Ok(match s.kernel {
            Kernel::Cusparse => Box::new(CusparseCsr::new(self, &setup.csr)?),
            Kernel::Warp => crate::problem::nonlinear::gpu::sparse_matrix(self, &setup.csr, crate::sparse::SpmvFormat::K2)?,
        })
    }

    fn describe(&self, s: &GpuState) -> String {
        let how = match &s.assembler {
            Assembler::Warp(_) => "ELL-WARP SpMV",
            Assembler::Cusparse(_) => "cuSPARSE SpMV",
            Assembler::Atomic(_) => "atomics",
        };
        format!("{}, assembly by {how}, thread transposition {} × {}", self.name(), s.launch.blocks, s.launch.batches)
    }
}
