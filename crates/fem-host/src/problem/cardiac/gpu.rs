//! The monodomain model's own operations on the GPU: the point-history
//! update and the activation times as small kernels on the device, where
//! the pipeline's Newton solver keeps everything across steps.

use super::Ops;
use crate::{CudaBackend, Result};
use cudarc::driver::{CudaSlice, PushKernelArg};
use fem_kernels::physics::cardiac::AUX;

impl Ops for CudaBackend {
    fn advance(&self, aux: &mut CudaSlice<f64>, ue: &CudaSlice<f64>, amp: &CudaSlice<f64>, nl: usize, on: f64) -> Result<()> {
        let n = amp.len();
        crate::error::same_len("point histories", aux.len() / AUX, n)?;
        crate::error::same_len("converged E-vector", ue.len(), n * nl)?;
        let f = self.kernel::<f64>("cardiac_advance")?;
        let cfg = self.grid::<f64>(2 * n, 0);
        unsafe { self.stream().launch_builder(&f).arg(&n).arg(&nl).arg(ue).arg(aux).arg(amp).arg(&on).launch(cfg) }?;
        Ok(())
    }

    fn activation(&self, prev: &CudaSlice<f64>, phi: &CudaSlice<f64>, t: f64, dt: f64, act: &mut CudaSlice<f64>) -> Result<()> {
        let f = self.kernel::<f64>("cardiac_activation")?;
        let n = act.len();
        unsafe { self.stream().launch_builder(&f).arg(&n).arg(prev).arg(phi).arg(&t).arg(&dt).arg(act).launch(self.grid::<f64>(n, 0)) }?;
        Ok(())
    }
}
