//! Errors of the host library.

use thiserror::Error;

/// The result of the host library's fallible calls, [`enum@Error`] unless given.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Bytes in a GiB, for messages.
pub(crate) const GIB: f64 = (1u64 << 30) as f64;

/// Everything that can fail in the host library: device and kernel setup,
/// argument checks, mesh validation and file input and output.
#[derive(Debug, Error)]
pub enum Error {
    /// No CUDA driver library, or no device.
    #[error("CUDA is not available: {0}")]
    CudaUnavailable(String),
    /// The build had no PTX toolchain, so there are no GPU kernels.
    #[error("the GPU kernels were not compiled to PTX at build time ({0}); install the device toolchain with `{hint}` and rebuild", hint = fem_build::INSTALL_HINT)]
    PtxNotBuilt(String),
    /// Every embedded PTX module targets a newer architecture than the
    /// device's.
    #[error("no embedded PTX runs on compute capability {major}.{minor} (built for: {archs})")]
    NoCompatiblePtx {
        /// Major compute capability of the device.
        major: u32,
        /// Minor compute capability of the device.
        minor: u32,
        /// The embedded architectures (`sm_80, sm_90`, ...), comma-separated.
        archs: String,
    },
    /// A kernel was asked for by a PTX name that the loaded module does not
    /// define (or the driver could not load it).
    #[error("kernel `{0}` is not in the loaded PTX module")]
    MissingKernel(String),
    /// A CUDA driver call failed (allocation, copy, module load, launch).
    #[error("CUDA driver error: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// Two vectors an operation combines, or a vector and the operator it
    /// is multiplied with, differ in length.
    #[error("{op}: vector lengths differ ({left} vs {right})")]
    LengthMismatch {
        /// Name of the operation that checked.
        op: &'static str,
        /// Length of the first vector.
        left: usize,
        /// Length of the second vector, or the operator's row count.
        right: usize,
    },
    /// An allocation would exceed the device's free memory; checked before
    /// allocating so the driver does not fail mid-computation.
    #[error("not enough GPU memory: {requested} bytes requested, {free} bytes free")]
    OutOfDeviceMemory {
        /// Bytes the allocation needs.
        requested: usize,
        /// Bytes free on the device when checked.
        free: usize,
    },
    /// A problem whose storage alone would exceed the device's free
    /// memory, refused before any of it is made.
    #[error("{what} needs at least {:.1} GiB on the GPU, where {:.1} GiB is free", *needs as f64 / GIB, *free as f64 / GIB)]
    ProblemTooLarge {
        /// The problem, in words.
        what: String,
        /// Bytes it needs at the least.
        needs: usize,
        /// Bytes free on the device when checked.
        free: usize,
    },
    /// A problem whose set-up alone would exceed the host memory available,
    /// refused before any of it is made (rather than stopped by the
    /// system, part-way, for want of memory).
    #[error("{what} needs at least {:.1} GiB of host memory, where {:.1} GiB is available", *needs as f64 / GIB, *available as f64 / GIB)]
    HostMemoryTooSmall {
        /// The problem, in words.
        what: String,
        /// Bytes it needs at the least.
        needs: usize,
        /// Bytes available when checked (`MemAvailable`).
        available: usize,
    },
    /// An argument is outside what the call accepts (sizes, degrees, launch
    /// shapes, thread counts, ...); the message says which and why.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A mesh failed validation.
    #[error("invalid mesh: {0}")]
    Mesh(#[from] crate::mesh::validate::MeshError),
    /// A Matrix Market file could not be read, parsed or written.
    #[error("Matrix Market: {0}")]
    MatrixMarket(#[from] crate::io::matrix_market::MatrixMarketError),
    /// A Gmsh `.msh` file could not be read, parsed, converted or written.
    #[error("Gmsh file: {0}")]
    Gmsh(#[from] crate::io::gmsh::GmshError),
    /// A VTK file could not be written, or
    /// [`read_fields`](crate::io::vtk::read_fields) could not read one back.
    #[error("VTK output: {0}")]
    Vtk(#[from] crate::io::vtk::VtkError),
    /// A NumPy array or linear system could not be written.
    #[error("NumPy output: {0}")]
    Npy(#[from] crate::io::npy::NpyError),
    /// The cuSPARSE library is missing or one of its calls failed; the
    /// message names the call and its status.
    #[error("cuSPARSE: {0}")]
    Cusparse(String),
    /// The CPU backend's rayon thread pool could not be built.
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

/// Checks that a reduction over the first `n` entries stays within a
/// vector of `len`.
pub fn first(op: &'static str, n: usize, len: usize) -> Result<()> {
    if n <= len {
        Ok(())
    } else {
        Err(Error::LengthMismatch { op, left: n, right: len })
    }
}

/// Checks that a Krylov method's scalar array holds `slot + count` slots
/// and at least the [`fem_kernels::krylov::SLOTS`] its steps read.
pub fn scalar_slots(op: &'static str, slot: usize, count: usize, len: usize) -> Result<()> {
    first(op, (slot + count).max(fem_kernels::krylov::SLOTS), len)
}

/// Checks the vectors of CG's update (`Backend::cg_update`): the scalar
/// array, `x` of `len` rows, `p`, `q` and `r` and the Jacobi pair of the
/// same length, and sums over at most `len` rows.
pub fn cg_update_lengths(n: usize, slots: usize, len: usize, others: [usize; 3], jacobi: Option<(usize, usize)>) -> Result<()> {
    scalar_slots("cg_update", fem_kernels::krylov::RR, 2, slots)?;
    for other in others.into_iter().chain(jacobi.into_iter().flat_map(|(d, z)| [d, z])) {
        same_len("cg_update", len, other)?;
    }
    first("cg_update", n, len)
}

/// Checks the input and output of a product with an operator of `rows`
/// rows; `Ok(false)` when it has none, so there is nothing to compute (and
/// nothing a gather could read).
pub fn product_lens(op: &'static str, rows: usize, x: usize, y: usize) -> Result<bool> {
    same_len(op, x, rows)?;
    same_len(op, y, rows)?;
    Ok(rows > 0)
}
