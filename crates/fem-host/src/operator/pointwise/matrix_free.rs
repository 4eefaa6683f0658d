//! The matrix-free action of a `#[fem_kernel]` physics' Jacobian on
//! hexahedra (`fem_kernels::pointwise::matrix_free`), on the CPU and the
//! GPU, and its diagonal for Jacobi.
//!
//! Nothing is stored for the tangent but the state's E-vector: each
//! product re-evaluates the linearisation at the points. The diagonal
//! needs the point data once per update; they are made a chunk of cells
//! at a time and dropped, so the level's memory stays the state's and a
//! chunk's ([`DIAGONAL_CHUNK_VALUES`]), not partial assembly's
//! NC²·blocks values a point.

use super::gpu::GpuPointwise;
use super::diagonal::diagonal_cells;
use super::partial::{points_per_cell, GpuPartial, Tables1d};
use super::{Pointwise, CPU_CHUNK};
use crate::{Backend, CpuBackend, CudaBackend, Error, Result};
use cudarc::driver::CudaSlice;
use fem_kernels::pointwise::{Kernels, Variant};
use rayon::prelude::*;

/// Point values a GPU chunk of the diagonal holds at once (128 MB in f64).
pub const DIAGONAL_CHUNK_VALUES: usize = 1 << 24;

/// An error unless `v` has a matrix-free action.
pub fn check(v: &Variant) -> Result<()> {
    if !v.matrix_free {
        return Err(Error::InvalidArgument(format!(
            "the matrix-free Jacobian needs a physics with g0..g3 on hexahedra with (p + 1)³ Gauss points, not {}(p = {}, q = {})",
            v.shape.name(),
            v.degree,
            v.nq
        )));
    }
    Ok(())
}

impl<K: Kernels<f64>> Pointwise<f64, K> {
    /// `ye = J(u) x` cell by cell on the CPU, E-vectors of all cells; the
    /// direction's entry `k` is read as `x_of(k)` (the gather from an
    /// L-vector, fused into the cells' loop).
    pub fn action_cpu(&self, cpu: &CpuBackend, u: &[f64], x_of: &(impl Fn(usize) -> f64 + Sync), ye: &mut [f64]) -> Result<()> {
        self.check_u(u)?;
        check(&self.variant)?;
        crate::error::same_len("matrix-free product's E-vectors", u.len(), ye.len())?;
        let nl = self.variant.n_local();
        cpu.install(|| {
            ye.par_chunks_mut(CPU_CHUNK * nl).enumerate().for_each(|(k, o)| {
                let first = k * CPU_CHUNK;
                let dir: Vec<f64> = (0..o.len()).map(|i| x_of(first * nl + i)).collect();
                let ran = K::action_cells(&self.variant, &self.sf_tab, first, u, &self.x, &self.a, self.time, &dir, o);
                debug_assert!(ran, "a matrix-free variant has its action");
            })
        });
        Ok(())
    }

    /// The diagonal of every cell's Jacobian at `u` as an E-vector, on the
    /// CPU: each task makes its cells' point data, takes their diagonal
    /// and drops them.
    pub fn free_diagonal_cpu(&self, cpu: &CpuBackend, u: &[f64]) -> Result<Vec<f64>> {
        self.check_u(u)?;
        check(&self.variant)?;
        let v = &self.variant;
        let (t, nl, per) = (Tables1d::new(v)?, v.n_local(), points_per_cell(v));
        let mut out = vec![0.0; self.n_cells * nl];
        cpu.install(|| {
            out.par_chunks_mut(CPU_CHUNK * nl).enumerate().try_for_each(|(k, o)| {
                let mut g = vec![0.0; o.len() / nl * per];
                let ran = K::points_cells(v, self.residual_table(), k * CPU_CHUNK, u, &self.x, &self.a, self.time, &mut g);
                debug_assert!(ran, "a matrix-free variant has its point data");
                diagonal_cells(&t, v, &g, o)
            })
        })?;
        Ok(out)
    }
}

impl GpuPointwise<f64> {
    /// `y += (I − F) J(u) (I − F) x` on L-vectors, `u` the state's E-vector
    /// and `map` the E-vector's rows ([`crate::space::restriction::SKIP`]
    /// where held): gather, action and atomic scatter in one kernel.
    pub fn action(&self, gpu: &CudaBackend, u: &CudaSlice<f64>, map: &CudaSlice<u32>, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        let v = &self.variant;
        check(v)?;
        let (Some(mf), Some(points)) = (self.matrix_free(), v.points) else {
            return Err(Error::InvalidArgument("this variant has no matrix-free kernels".into()));
        };
        let nl = self.n_cells * v.n_local();
        if u.len() < nl || map.len() < nl {
            return Err(Error::InvalidArgument(format!("a state of {} values and a map of {} do not cover {} cells", u.len(), map.len(), self.n_cells)));
        }
        let (_, xc, a) = self.inputs();
        mf.launch_action(gpu, points, self.n_cells, map, (u, xc, a), x, y, self.time)
    }

    /// `d += diag((I − F) J(u) (I − F))`: the point data of
    /// [`DIAGONAL_CHUNK_VALUES`] values' worth of cells at a time, then
    /// their diagonal by `partial`'s kernel, one buffer reused.
    pub fn add_free_diagonal(&self, gpu: &CudaBackend, partial: &GpuPartial, u: &CudaSlice<f64>, map: &CudaSlice<u32>, d: &mut CudaSlice<f64>) -> Result<()> {
        self.add_free_diagonal_by(gpu, partial, u, map, d, DIAGONAL_CHUNK_VALUES)
    }

    /// [`Self::add_free_diagonal`] with chunks of `chunk_values` point
    /// values (at least a cell's).
    pub fn add_free_diagonal_by(&self, gpu: &CudaBackend, partial: &GpuPartial, u: &CudaSlice<f64>, map: &CudaSlice<u32>, d: &mut CudaSlice<f64>, chunk_values: usize) -> Result<()> {
        let v = &self.variant;
        check(v)?;
        let (n, nl, per) = (self.n_cells, v.n_local(), points_per_cell(v));
        if map.len() < n * nl {
            return Err(Error::InvalidArgument(format!("a map of {} values does not cover {n} cells", map.len())));
        }
        let chunk = (chunk_values / per.max(1)).clamp(1, n.max(1));
        gpu.ensure_free(8 * chunk * per)?;
        let mut g = gpu.zeros::<f64>(chunk * per)?;
        for first in (0..n).step_by(chunk) {
            let cells = chunk.min(n - first);
            self.points_of(gpu, first..first + cells, u, &mut g.slice_mut(..cells * per))?;
            partial.add_diagonal_of(gpu, cells, &g.slice(..cells * per), &map.slice(first * nl..(first + cells) * nl), d)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::BoxMesh;
    use crate::operator::pointwise::diagonal::diagonal_cpu;
    use crate::operator::pointwise::partial::apply_cpu;
    use crate::operator::pointwise::{rel, Aux};
    use crate::rng::SplitMix64;
    use crate::space::Space;
    use fem_kernels::physics::{Elasticity, Mass, NeoHookean, Poisson, Radiation};

    /// The matrix-free action of `P` at degree `p` on perturbed hexahedra
    /// equals partial assembly's product of the point data at the same
    /// state (a random one of size `size`, and a random direction), and
    /// its diagonal equals theirs; at Q1 and Q2 both equal the element
    /// matrices' product too.
    fn matches_partial<P: Kernels<f64>>(p: usize, size: f64, aux: &dyn Fn(&Space) -> (Vec<f64>, bool)) {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let space = Space::tensor(&BoxMesh::unstructured(3, 2, 5).build().unwrap(), p).unwrap();
        let (a, nodal) = aux(&space);
        let op = Pointwise::<f64, P>::new(&space, Some((p + 1).pow(3)), if nodal { Aux::Nodal(&a) } else { Aux::Cell(&a) }).unwrap();
        let v = op.variant;
        assert!(v.matrix_free, "{} Q{p}", P::NAME);
        let (nl, cells) = (v.n_local(), op.n_cells);
        let mut r = SplitMix64::new(11 * p as u64);
        let mut random = |n: usize, s: f64| -> Vec<f64> { (0..n).map(|_| s * (2.0 * r.next_f64() - 1.0)).collect() };
        let (u, x) = (random(cells * nl, size), random(cells * nl, 1.0));
        let g = op.points_cpu(&cpu, &u).unwrap();
        let t = Tables1d::new(&v).unwrap();
        let mut want = vec![0.0; x.len()];
        apply_cpu(&cpu, &t, &v, &g, &x, &mut want).unwrap();
        let mut got = vec![0.0; x.len()];
        op.action_cpu(&cpu, &u, &|k| x[k], &mut got).unwrap();
        let err = rel(&got, &want);
        assert!(err < 1e-12, "{} Q{p}: product {err:e}", P::NAME);
        let err = rel(&op.free_diagonal_cpu(&cpu, &u).unwrap(), &diagonal_cpu(&cpu, &t, &v, &g).unwrap());
        assert!(err < 1e-13, "{} Q{p}: diagonal {err:e}", P::NAME);
        if p <= 2 {
            let k = op.jacobian_cpu(&cpu, &u).unwrap();
            let dense: Vec<f64> = (0..cells * nl).map(|i| (0..nl).map(|j| k[i * nl + j] * x[i / nl * nl + j]).sum()).collect();
            let err = rel(&got, &dense);
            assert!(err < 1e-12, "{} Q{p}: against the element matrices {err:e}", P::NAME);
        }
    }

    fn nodal(s: &Space) -> (Vec<f64>, bool) {
        ((0..2 * s.n_dofs).map(|i| 1.0 + (i % 7) as f64 / 7.0).collect(), true)
    }

    fn per_cell(s: &Space) -> (Vec<f64>, bool) {
        ((0..s.n_cells()).flat_map(|c| [1.0 + 0.1 * c as f64, 0.5]).collect(), false)
    }

    /// Every degree of the scalar and vector physics, the nonlinear ones
    /// (g0 of radiation, neo-Hookean's g3) at states away from zero, and
    /// the mass (g0 alone).
    #[test]
    fn matrix_free_action_equals_partial_assembly() {
        for p in 1..=8 {
            matches_partial::<Poisson>(p, 1.0, &nodal);
        }
        for p in [1, 2, 3, 5, 8] {
            matches_partial::<Elasticity>(p, 1.0, &per_cell);
        }
        for p in [1, 2, 4] {
            // displacements small against the nodes' spacing, so that no point inverts
            matches_partial::<NeoHookean>(p, 0.02 / (p * p) as f64, &per_cell);
        }
        for p in [1, 2] {
            matches_partial::<Radiation>(p, 0.5, &nodal);
        }
        for p in [1, 2, 4, 8] {
            matches_partial::<Mass>(p, 1.0, &nodal);
        }
    }

    /// Variants without the action are refused with the reason.
    #[test]
    fn simplices_and_other_rules_have_no_matrix_free_action() {
        let cpu = CpuBackend::new(Some(1)).unwrap();
        let tet = Space::simplex(&crate::mesh::simplex::SimplexBox::unstructured(3, 2, 3).build().unwrap(), 1).unwrap();
        let op = Pointwise::<f64, Elasticity>::new(&tet, None, Aux::Cell(&per_cell(&tet).0)).unwrap();
        let u = vec![0.0; op.n_cells * op.variant.n_local()];
        let mut y = u.clone();
        let e = op.action_cpu(&cpu, &u, &|_| 0.0, &mut y).unwrap_err().to_string();
        assert!(e.contains("hexahedra") && e.contains("tet(p = 1"), "{e}");
        assert!(op.free_diagonal_cpu(&cpu, &u).is_err());
    }
}
