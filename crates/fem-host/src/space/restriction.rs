//! The element restriction: the map from element values (E-vector) to
//! global rows (L-vector), and its transpose, on the CPU and on the GPU.
//! Gathering reads one global value per element value. On the CPU,
//! scattering sums every row's element values through the transpose, in
//! parallel over rows, with no atomics and in the order a serial scatter
//! would add them, so results do not depend on the thread count; the
//! transpose is built at the first scatter, so gather-only users never pay
//! for it. On the GPU, scattering adds by atomics. The space's fields, the
//! BP operators, the element-matrix products and the Newton solver
//! (residual assembly) all go through it.

use crate::backend::cuda::DeviceVec;
use crate::mesh::adjacency::VertexCells;
use crate::{CpuBackend, CudaBackend, Result, Scalar};
use cudarc::driver::CudaSlice;
use rayon::prelude::*;
use std::sync::OnceLock;

/// A map entry that adds to no row (a fixed row's element value).
pub const SKIP: u32 = u32::MAX;

/// The element-to-row map and, once scattered through, its transpose.
#[derive(Clone, Debug)]
pub struct Restriction {
    /// `map[k]`: the global row of element value `k` ([`SKIP`]: none).
    pub map: Vec<u32>,
    rows: usize,
    /// Row `r`'s element values are `items[start[r]..start[r + 1]]`, ascending.
    transpose: OnceLock<(Vec<u32>, Vec<u32>)>,
}

/// The transpose of `map` over `rows` rows: row `r`'s entries `k`
/// (ascending) are `items[start[r]..start[r + 1]]`, and entries at
/// [`SKIP`] are in no row; counted and placed in parallel
/// ([`VertexCells::of_ids`], each entry a cell of one id). Also the
/// pattern of the matrix that assembles by SpMV
/// (`sparse::assembly::gather_matrix`).
pub fn transpose_map(map: &[u32], rows: usize) -> (Vec<u32>, Vec<u32>) {
    let t = VertexCells::of_ids(map.len(), rows, |k| std::slice::from_ref(&map[k]));
    (t.start.par_iter().map(|&s| s as u32).collect(), t.cells)
}

impl Restriction {
    /// `map` over `rows` global rows; entries at [`SKIP`] add nowhere.
    pub fn new(map: Vec<u32>, rows: usize) -> Self {
        Self { map, rows, transpose: OnceLock::new() }
    }

    /// Global rows: the length of an L-vector.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// E-vector `xe` from L-vector `x` (zero where the map skips), on
    /// `cpu`'s threads.
    pub fn gather<T: Copy + Default + Send + Sync>(&self, cpu: &CpuBackend, x: &[T], xe: &mut [T]) -> Result<()> {
        crate::error::same_len("gathered L-vector", x.len(), self.rows)?;
        crate::error::same_len("gathered E-vector", xe.len(), self.map.len())?;
        cpu.install(|| xe.par_iter_mut().zip(self.map.par_iter()).for_each(|(v, &g)| *v = if g == SKIP { T::default() } else { x[g as usize] }));
        Ok(())
    }

    /// The E-vector of `x`, on the calling thread's pool (the checked
    /// lengths of [`Self::gather`] are the caller's).
    pub fn gathered<T: Copy + Default + Send + Sync>(&self, x: &[T]) -> Vec<T> {
        self.map.par_iter().map(|&g| if g == SKIP { T::default() } else { x[g as usize] }).collect()
    }

    /// `y[r] = Σ ye[k]` over row `r`'s element values.
    pub fn scatter(&self, cpu: &CpuBackend, ye: &[f64], y: &mut [f64]) {
        y.iter_mut().for_each(|v| *v = 0.0);
        self.add(cpu, ye, y);
    }

    /// The L-vector of summed element values `ye`, on the calling
    /// thread's pool.
    pub fn scattered(&self, ye: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; self.rows];
        self.sum_rows(|k| ye[k], &mut y);
        y
    }

    /// `out[r] += Σ v[k]` over row `r`'s element values.
    pub fn add(&self, cpu: &CpuBackend, v: &[f64], out: &mut [f64]) {
        self.add_with(cpu, |k| v[k], out)
    }

    /// `out[r] += Σ entry(k)` over row `r`'s element values: entries
    /// computed where they are summed, each once.
    pub fn add_with(&self, cpu: &CpuBackend, entry: impl Fn(usize) -> f64 + Sync, out: &mut [f64]) {
        cpu.install(|| self.sum_rows(&entry, out));
    }

    /// [`Self::add_with`] on the calling thread's pool.
    fn sum_rows(&self, entry: impl Fn(usize) -> f64 + Sync, out: &mut [f64]) {
        let (start, items) = self.transpose.get_or_init(|| transpose_map(&self.map, self.rows));
        out.par_iter_mut().enumerate().for_each(|(r, o)| {
            for &k in &items[start[r] as usize..start[r + 1] as usize] {
                *o += entry(k as usize);
            }
        });
    }

    /// The same map on the GPU.
    pub fn upload(&self, gpu: &CudaBackend) -> Result<GpuRestriction> {
        Ok(GpuRestriction { map: gpu.htod(&self.map)?, rows: self.rows })
    }
}

/// A [`Restriction`] on the GPU: the map its kernels read (the element
/// products and the BP operators fuse it into their own loops), gathered
/// and scattered by the generic kernels elsewhere.
pub struct GpuRestriction {
    /// `map[k]`: the global row of element value `k` ([`SKIP`]: none).
    pub map: CudaSlice<u32>,
    rows: usize,
}

impl GpuRestriction {
    /// The restriction of `map` onto `rows` global rows, sent from where
    /// it is (no host copy first).
    pub fn of_map(gpu: &CudaBackend, map: &[u32], rows: usize) -> Result<Self> {
        gpu.ensure_free(map.len() * 4)?;
        Ok(Self { map: gpu.htod(map)?, rows })
    }

    /// The restriction of a `map` made on the device onto `rows` global
    /// rows.
    pub fn on_device(map: CudaSlice<u32>, rows: usize) -> Self {
        Self { map, rows }
    }

    /// A second copy on the device (benchmarks cycle through copies to
    /// find their data out of L2).
    pub fn replica(&self, gpu: &CudaBackend) -> Result<Self> {
        Ok(Self { map: gpu.stream().clone_dtod(&self.map)?, rows: self.rows })
    }

    /// Global rows: the length of an L-vector.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Element values: the length of an E-vector.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are no element values.
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// E-vector `xe` from L-vector `x` (zero where the map skips).
    pub fn gather<T: Scalar>(&self, gpu: &CudaBackend, x: &DeviceVec<T>, xe: &mut DeviceVec<T>) -> Result<()> {
        crate::error::same_len("gathered L-vector", x.len(), self.rows)?;
        crate::sparse::device::gpu_gather(gpu, &self.map, x, xe)
    }

    /// `y[map[k]] += ye[k]` by atomic adds (`y` as it was: zero it, or
    /// fill it with a base, first).
    pub fn add<T: Scalar>(&self, gpu: &CudaBackend, ye: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<()> {
        crate::error::same_len("scattered E-vector", ye.len(), self.map.len())?;
        crate::error::same_len("scattered L-vector", y.len(), self.rows)?;
        crate::sparse::device::gpu_scatter_add(gpu, &self.map, ye, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scattering is the transpose of gathering: ⟨gather x, ye⟩ = ⟨x,
    /// scatter ye⟩ over a map with repeated rows, an empty row and skipped
    /// entries, whose element values read zero and add nowhere; sums come
    /// out in the serial scatter's order, bit for bit.
    #[test]
    fn scatter_is_the_transpose_of_gather() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let map = [3, 0, SKIP, 3, 1, 0, SKIP, 3, 1];
        let r = Restriction::new(map.to_vec(), 5);
        assert_eq!(r.rows(), 5);
        let x = [0.5, -1.25, 7.0, 2.0, 9.0];
        let ye: Vec<f64> = (0..map.len()).map(|k| 0.1 * k as f64 + 0.3).collect();
        let mut xe = vec![f64::NAN; map.len()];
        r.gather(&cpu, &x, &mut xe).unwrap();
        assert_eq!(r.gathered(&x), xe);
        assert!(r.gather(&cpu, &x[..4], &mut xe).is_err() && r.gather(&cpu, &x, &mut xe[1..]).is_err());
        assert_eq!((xe[2], xe[6], xe[0], xe[4]), (0.0, 0.0, 2.0, -1.25));
        let mut y = vec![f64::NAN; 5];
        r.scatter(&cpu, &ye, &mut y);
        let mut serial = [0.0; 5];
        for (k, &g) in map.iter().enumerate().filter(|(_, &g)| g != SKIP) {
            serial[g as usize] += ye[k];
        }
        assert_eq!(y, serial);
        assert_eq!(r.scattered(&ye), y);
        assert_eq!(y[2], 0.0, "a row no element value reaches");
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
        assert!((dot(&xe, &ye) - dot(&x, &y)).abs() < 1e-14);
    }
}
