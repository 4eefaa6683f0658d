//! Errors of the host library.

use thiserror::Error;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Error)]
pub enum Error {
    /// No CUDA driver library, or no device.
    #[error("CUDA is not available: {0}")]
    CudaUnavailable(String),
    /// The build had no PTX toolchain, so there are no GPU kernels.
    #[error("the GPU kernels were not compiled to PTX at build time ({0}); install the device toolchain with `{hint}` and rebuild", hint = fem_build::INSTALL_HINT)]
    PtxNotBuilt(String),
    #[error("no embedded PTX runs on compute capability {major}.{minor} (built for: {archs})")]
    NoCompatiblePtx { major: u32, minor: u32, archs: String },
    #[error("kernel `{0}` is not in the loaded PTX module")]
    MissingKernel(String),
    #[error("CUDA driver error: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    #[error("{op}: vector lengths differ ({left} vs {right})")]
    LengthMismatch { op: &'static str, left: usize, right: usize },
    #[error("not enough GPU memory: {requested} bytes requested, {free} bytes free")]
    OutOfDeviceMemory { requested: usize, free: usize },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("invalid mesh: {0}")]
    Mesh(#[from] crate::mesh::validate::MeshError),
    #[error("Matrix Market: {0}")]
    MatrixMarket(#[from] crate::io::matrix_market::MatrixMarketError),
    #[error("Gmsh file: {0}")]
    Gmsh(#[from] crate::io::gmsh::GmshError),
    #[error("VTK output: {0}")]
    Vtk(#[from] crate::io::vtk::VtkError),
    #[error("cuSPARSE: {0}")]
    Cusparse(String),
    #[error("CPU thread pool: {0}")]
    ThreadPool(String),
}

/// Checks that two vectors an operation combines have the same length.
pub fn same_len(op: &'static str, left: usize, right: usize) -> Result<()> {
    if left == right {
        Ok(())
    } else {
        Err(Error::LengthMismatch { op, left, right })
    }
}

/// Checks the input and output of a product with an operator of `rows`
/// rows; `Ok(false)` when it has none, so there is nothing to compute (and
/// nothing a gather could read).
pub fn product_lens(op: &'static str, rows: usize, x: usize, y: usize) -> Result<bool> {
    same_len(op, x, rows)?;
    same_len(op, y, rows)?;
    Ok(rows > 0)
}
