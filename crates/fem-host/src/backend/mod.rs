//! Backends: where vectors live and kernels run.
//!
//! [`Backend`] is written once and implemented by the CPU backend (rayon)
//! and the CUDA backend (cudarc); algorithms above it are generic over it,
//! and the [conformance suite](crate::conformance) checks every backend
//! against the same references. Its methods are generic over the precision,
//! so the trait is not object-safe: [`AnyBackend`] is the run-time choice.

pub mod cpu;
pub mod cuda;
pub mod recording;

use crate::{Result, Scalar};
use serde::Serialize;

/// Which kind of backend an object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// The host, with rayon threads ([`cpu::CpuBackend`]).
    Cpu,
    /// An NVIDIA GPU through the CUDA driver ([`cuda::CudaBackend`]).
    Cuda,
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Cpu => "cpu",
            Self::Cuda => "cuda",
        })
    }
}

/// A user's request: a specific backend, or the GPU when one works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// The GPU when it can be opened, else the CPU.
    Auto,
    /// The CPU backend, even when a GPU is present.
    Cpu,
    /// The GPU, failing if it cannot be opened.
    Cuda,
}

/// Vector storage and BLAS-1 operations of a backend.
///
/// Operations are asynchronous on the GPU: they return once launched, and
/// [`download`](Backend::download), reductions and
/// [`synchronize`](Backend::synchronize) wait for them.
pub trait Backend {
    /// A vector of `T` in this backend's memory.
    type Vector<T: Scalar>;

    /// Which kind of backend this is.
    fn kind(&self) -> BackendKind;
    /// Human-readable description (device name, thread count).
    fn name(&self) -> String;

    /// A new vector of `n` zeros.
    fn zeros<T: Scalar>(&self, n: usize) -> Result<Self::Vector<T>>;
    /// A new vector holding a copy of the host slice `data`.
    fn upload<T: Scalar>(&self, data: &[T]) -> Result<Self::Vector<T>>;
    /// `v ← data` from the host, into a vector of the same length: no
    /// allocation, for values refreshed at every step.
    fn write<T: Scalar>(&self, data: &[T], v: &mut Self::Vector<T>) -> Result<()>;
    /// A host copy of `v`, after the work queued on it has finished.
    fn download<T: Scalar>(&self, v: &Self::Vector<T>) -> Result<Vec<T>>;
    /// Number of elements of `v`.
    fn len<T: Scalar>(&self, v: &Self::Vector<T>) -> usize;

    /// `dst ← src`.
    fn copy<T: Scalar>(&self, src: &Self::Vector<T>, dst: &mut Self::Vector<T>) -> Result<()>;
    /// `dst ← src` in another precision (rounded to nearest when
    /// narrowing, exact when widening).
    fn convert<S: Scalar, T: Scalar>(&self, src: &Self::Vector<S>, dst: &mut Self::Vector<T>) -> Result<()>;
    /// `y ← αx + y`.
    fn axpy<T: Scalar>(&self, alpha: T, x: &Self::Vector<T>, y: &mut Self::Vector<T>) -> Result<()>;
    /// `y ← αx + βy`.
    fn axpby<T: Scalar>(&self, alpha: T, x: &Self::Vector<T>, beta: T, y: &mut Self::Vector<T>) -> Result<()>;
    /// `z ← x ∘ y`, the element-wise product.
    fn mul<T: Scalar>(&self, x: &Self::Vector<T>, y: &Self::Vector<T>, z: &mut Self::Vector<T>) -> Result<()>;
    /// `y ← 1 / x` element-wise (an inverse diagonal, made where it is used).
    fn reciprocal<T: Scalar>(&self, x: &Self::Vector<T>, y: &mut Self::Vector<T>) -> Result<()>;
    /// `Σ_{i<n} xᵢyᵢ`: the dot product of the first `n` entries (a
    /// distributed vector's owned part; `n` at most either length).
    fn dot_first<T: Scalar>(&self, n: usize, x: &Self::Vector<T>, y: &Self::Vector<T>) -> Result<T>;
    /// `Σ_{i<n} xᵢ²` over the first `n` entries.
    fn sumsq_first<T: Scalar>(&self, n: usize, x: &Self::Vector<T>) -> Result<T>;
    /// `Σ xᵢyᵢ`.
    fn dot<T: Scalar>(&self, x: &Self::Vector<T>, y: &Self::Vector<T>) -> Result<T> {
        crate::error::same_len("dot", self.len(x), self.len(y))?;
        self.dot_first(self.len(x), x, y)
    }
    /// `‖x‖₂`.
    fn norm2<T: Scalar>(&self, x: &Self::Vector<T>) -> Result<T> {
        Ok(self.sumsq_first(self.len(x), x)?.sqrt())
    }

    /// `s[slot] ← Σ_{i<n} xᵢyᵢ` (in `f64`), left in the backend's memory:
    /// a Krylov method's scalars need no read-back
    /// ([`fem_kernels::krylov`] holds their slots).
    fn dot_into<T: Scalar>(&self, n: usize, x: &Self::Vector<T>, y: &Self::Vector<T>, s: &mut Self::Vector<f64>, slot: usize) -> Result<()>;
    /// CG's update from its scalars `s`: α = `s[RZ] / s[PQ]`, `x ← x + αp`,
    /// `r ← r − αq`; with an inverse diagonal `(d, z)`, `z ← d∘r`. Then
    /// `s[RR] ← r·r` and `s[RZN] ← r·z` (`r·r` without `d`) over the first
    /// `n` rows, and given a `history`, the iteration is closed as
    /// [`Backend::cg_advance`] closes it (for the identity and Jacobi,
    /// whose r·z this step has). Nothing moves once `s` says the solve has
    /// stopped.
    #[allow(clippy::too_many_arguments)]
    fn cg_update<T: Scalar>(
        &self,
        n: usize,
        s: &mut Self::Vector<f64>,
        p: &Self::Vector<T>,
        q: &Self::Vector<T>,
        x: &mut Self::Vector<T>,
        r: &mut Self::Vector<T>,
        jacobi: Option<(&Self::Vector<T>, &mut Self::Vector<T>)>,
        history: Option<&mut Self::Vector<f64>>,
    ) -> Result<()>;
    /// Closes a CG iteration on `s` ([`fem_kernels::krylov::advance`]) and
    /// records its relative residual in `history`.
    fn cg_advance(&self, s: &mut Self::Vector<f64>, history: &mut Self::Vector<f64>) -> Result<()>;
    /// `p ← z + βp` with β = `s[BETA]`, unless the solve has stopped.
    fn cg_direction<T: Scalar>(&self, s: &Self::Vector<f64>, z: &Self::Vector<T>, p: &mut Self::Vector<T>) -> Result<()>;

    /// Waits for all work submitted so far.
    fn synchronize(&self) -> Result<()>;
    /// Seconds `f` takes on this backend (CUDA events on the GPU, so launch
    /// latency on the host is not counted twice).
    fn time(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<f64>;
    /// Runs `f`, whose work is the same every time it runs under `key`
    /// (the same launches on the same buffers), from `recording` where the
    /// backend records (the GPU: a CUDA graph captured at the second run,
    /// replayed from then on); a new key records anew. The CPU runs `f`.
    /// `f` must not read results back or wait on the device (a capture
    /// cannot hold that; it may fail or stall): an iterative coarse solve,
    /// for one, is run outside.
    fn replay<K: PartialEq + Clone>(&self, recording: &recording::Recording<K>, key: &K, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        let _ = (recording, key);
        f()
    }
}

/// The backend chosen at run time.
pub enum AnyBackend {
    /// The rayon backend on the host.
    Cpu(cpu::CpuBackend),
    /// The CUDA backend on one GPU.
    Cuda(cuda::CudaBackend),
}

impl AnyBackend {
    /// Opens the requested backend. `Auto` takes the GPU when the driver, a
    /// device and the embedded PTX are all there, else the CPU, and returns
    /// why the GPU was not taken.
    pub fn open(choice: BackendChoice, ptx: &'static fem_build::PtxSet) -> Result<(Self, Option<String>)> {
        Self::open_on(choice, 0, ptx)
    }

    /// [`AnyBackend::open`] on GPU `ordinal` (a rank's own GPU).
    pub fn open_on(choice: BackendChoice, ordinal: usize, ptx: &'static fem_build::PtxSet) -> Result<(Self, Option<String>)> {
        match choice {
            BackendChoice::Cpu => Ok((Self::Cpu(cpu::CpuBackend::new(None)?), None)),
            BackendChoice::Cuda => Ok((Self::Cuda(cuda::CudaBackend::new(ordinal, ptx)?), None)),
            BackendChoice::Auto => match cuda::CudaBackend::new(ordinal, ptx) {
                Ok(gpu) => Ok((Self::Cuda(gpu), None)),
                Err(e) => Ok((Self::Cpu(cpu::CpuBackend::new(None)?), Some(e.to_string()))),
            },
        }
    }

    /// Which kind of backend was opened.
    pub fn kind(&self) -> BackendKind {
        match self {
            Self::Cpu(b) => b.kind(),
            Self::Cuda(b) => b.kind(),
        }
    }

    /// Human-readable description of the open backend (device name, thread count).
    pub fn name(&self) -> String {
        match self {
            Self::Cpu(b) => b.name(),
            Self::Cuda(b) => b.name(),
        }
    }
}

/// Runs a generic `fn(&impl Backend)` body on whichever backend an
/// [`AnyBackend`] holds: `with_backend!(any, |b| work(b))`.
#[macro_export]
macro_rules! with_backend {
    ($any:expr, |$b:ident| $body:expr) => {
        match $any {
            $crate::AnyBackend::Cpu($b) => $body,
            $crate::AnyBackend::Cuda($b) => $body,
        }
    };
}
