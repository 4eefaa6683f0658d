//! SpMV formats built from CSR (Wong, Kuhl & Darve; Geveler et al.):
//! ELL-WARP K1/K2 and their renumbered variants, ELLR-T, with plain
//! ELLPACK and CSR (scalar and vector) as baselines and cuSPARSE as the
//! reference; their parameters, the cost of converting CSR into them,
//! assembly by SpMV, and the side-by-side benchmark.

pub mod assembly;
pub mod bench;
pub mod cusparse;
pub mod device;
pub mod device_transpose;
pub mod device_warp;
pub mod ellt;
pub mod generate;
pub mod model;
pub mod params;
pub mod spgemm;
pub mod stats;
pub mod tuning;
pub mod warp;

use serde::Serialize;

/// A format of `fem spmv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpmvFormat {
    /// CSR, with 1 (scalar) to 32 (vector) threads per row on the GPU.
    Csr,
    /// Plain ELLPACK: every row padded to the longest.
    Ell,
    /// ELLR-T: ELLPACK with `T` threads per row and the row lengths stored.
    EllT,
    /// ELL-WARP, one lane per row, `y` written through the permutation.
    K1,
    /// K1 in the sorted numbering (`x` and `y` renumbered).
    K1r,
    /// K1r with each row's entries sorted by their new column.
    K1rs,
    /// ELL-WARP with long rows split over 2..32 lanes, `y` written through
    /// the permutation.
    K2,
    /// K2 in the sorted numbering (`x` and `y` renumbered).
    K2r,
    /// K2r with each row's entries sorted by their new column.
    K2rs,
    /// cuSPARSE's CSR SpMV, the reference (CUDA backend only).
    Cusparse,
}

impl SpmvFormat {
    /// Every format, in the order reports list them (`all` on the command line).
    pub const ALL: [Self; 10] = [
        Self::Csr,
        Self::Ell,
        Self::EllT,
        Self::K1,
        Self::K1r,
        Self::K1rs,
        Self::K2,
        Self::K2r,
        Self::K2rs,
        Self::Cusparse,
    ];

    /// The format's name on the command line and in reports (`csr`, `k1rs`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Csr => "csr",
            Self::Ell => "ell",
            Self::EllT => "ellt",
            Self::K1 => "k1",
            Self::K1r => "k1r",
            Self::K1rs => "k1rs",
            Self::K2 => "k2",
            Self::K2r => "k2r",
            Self::K2rs => "k2rs",
            Self::Cusparse => "cusparse",
        }
    }

    /// The ELL-WARP kernel (K2's threshold comes from the parameters) and
    /// numbering, for the K formats.
    pub fn warp(self) -> Option<(bool, warp::Numbering)> {
        use warp::Numbering::*;
        Some(match self {
            Self::K1 => (false, Remap),
            Self::K1r => (false, Renumber),
            Self::K1rs => (false, RenumberSorted),
            Self::K2 => (true, Remap),
            Self::K2r => (true, Renumber),
            Self::K2rs => (true, RenumberSorted),
            _ => return None,
        })
    }
}

impl std::str::FromStr for SpmvFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("unknown SpMV format `{s}`"))
    }
}

/// A raw output pointer shared by parallel loops that write disjoint
/// indices (rows of a permutation, slots of distinct rows).
#[derive(Clone, Copy)]
pub(crate) struct SharedOut<T>(pub *mut T);

// SAFETY: users write disjoint indices only.
unsafe impl<T> Send for SharedOut<T> {}
unsafe impl<T> Sync for SharedOut<T> {}

impl<T> SharedOut<T> {
    /// # Safety
    /// `i` in range and written by no other thread.
    pub unsafe fn write(&self, i: usize, v: T) {
        *self.0.add(i) = v;
    }

    /// Index `i` to read and write.
    ///
    /// # Safety
    /// `i` in range and touched by no other thread while the reference
    /// lives.
    pub unsafe fn at<'a>(&self, i: usize) -> &'a mut T {
        &mut *self.0.add(i)
    }

    /// The pointer, for writers that take one (each its own indices).
    pub fn ptr(&self) -> *mut T {
        self.0
    }
}

use crate::{Backend, Result, Scalar};

/// A matrix prepared for SpMV in one format on one backend: a
/// [`LinearOperator`](crate::operator::LinearOperator) (whose `name` is the
/// format with its parameter: `csr-t8`, `ellt-t2`, `k2`, …) that also says
/// how it is stored and takes new values of its pattern.
pub trait Spmv<B: Backend, T: Scalar>: crate::operator::LinearOperator<B, T> {
    /// Sorted position → original row, when `x` and `y` are in the
    /// format's own numbering (K1r, K1rs, K2r, K2rs); `None` when they are
    /// in the original one.
    fn numbering(&self) -> Option<&[u32]>;
    /// Bytes of matrix data one product reads: values, indices, per-row or
    /// per-warp metadata and the permutation, padding included.
    fn matrix_bytes(&self) -> usize;
    /// Refills the values from a CSR matrix of the same pattern already on
    /// the backend (zero cost for CSR formats).
    fn reorder(&mut self, b: &B, csr_val: &B::Vector<T>) -> Result<()>;
    /// Threads per block of later launches (formats with a tunable block).
    fn set_block(&mut self, _block: u32) {}
}

/// `to[i] = from[src[i]]` (zero for `NONE`) on the CPU: a format's values
/// refilled from CSR values through its slot → position map.
pub(crate) fn gather_into<T: Scalar>(
    cpu: &crate::CpuBackend,
    src: &[u32],
    from: &[T],
    to: &mut [T],
) {
    use rayon::prelude::*;
    // SAFETY: positions were recorded from arrays of `from`'s pattern.
    cpu.install(|| {
        to.par_iter_mut().enumerate().for_each(|(i, v)| {
            *v = unsafe { fem_kernels::sparse::gathered(i, src.as_ptr(), from.as_ptr()) }
        })
    });
}

/// `x` in a sorted numbering: `out[s] = x[perm[s]]`.
pub fn permute<T: Copy>(perm: &[u32], x: &[T]) -> Vec<T> {
    perm.iter().map(|&r| x[r as usize]).collect()
}

/// Back from a sorted numbering: `out[perm[s]] = y[s]`.
pub fn unpermute<T: Copy + Default>(perm: &[u32], y: &[T]) -> Vec<T> {
    let mut out = vec![T::default(); y.len()];
    for (s, &r) in perm.iter().enumerate() {
        out[r as usize] = y[s];
    }
    out
}
