//! The GPU's sum-factorised residual and point data of hexahedral
//! variants from Q2 (`fem_kernels::pointwise::sum_factorised`): their
//! table, launch shape and launches. They replace the one-thread-per-cell
//! residual, whose O(p⁶) work a cell on one thread took a second per
//! Newton step at Q8, and the per-point point data, which tabulated every
//! basis function at every point.

use super::partial::{Slabs, Tables1d};
use crate::{Backend, CudaBackend, Error, Result, Scalar};
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, PushKernelArg};
use fem_kernels::pointwise::sum_factorised::action_fields;
use fem_kernels::pointwise::{row_len, Variant};

/// Flops of one cell's sum-factorised residual: per interpolated field
/// (components and nodal auxiliary fields) three 1D interpolations and
/// three collocation derivatives of 2·N1⁴ each, the same back per
/// component, per z-line the trilinear geometry's five vectors (about
/// 140), and per point the Jacobian's inverse from them (about 60) and
/// the fluxes' pull-back (the physics' own arithmetic not counted, as in
/// the paper's count of the element kernels).
pub fn flops_per_cell(v: &Variant) -> f64 {
    let (n1, d, nc) = ((v.degree + 1) as f64, v.dim() as f64, v.nc as f64);
    let contractions = 12.0 * n1.powi(4) * (fields(v) as f64 + nc);
    contractions + 140.0 * n1 * n1 + v.nq as f64 * (60.0 + 2.0 * d * d * nc)
}

/// The uploaded table and launch shapes of one variant.
pub struct GpuSumFactorised<T> {
    tab: CudaSlice<T>,
    slabs: Slabs,
    /// The matrix-free action's launch (the direction's components beside
    /// the state's fields), or why one element does not fit.
    action: std::result::Result<Slabs, String>,
}

/// Fields a sum-factorised element of `v` holds in shared memory.
fn fields(v: &Variant) -> usize {
    fem_kernels::pointwise::sum_factorised::fields(v.nc, v.na, v.aux_nodal)
}

/// The kernels' table of `v` ([`fem_kernels::pointwise::sum_factorised::table_len`]):
/// `[B | D]` of [`Tables1d`], then its 1D Gauss points and weights. `full`
/// (the element kernels' table) must hold the same rule: each point's
/// weight the product of the 1D weights, x fastest.
pub fn tables(v: &Variant, full: &[f64]) -> Result<Vec<f64>> {
    let t = Tables1d::new(v)?;
    let (d, nb, nv) = (v.dim(), v.n_basis(), v.shape.vertices());
    let stride = row_len(d, nb, nv);
    if full.len() != v.nq * stride {
        return Err(Error::InvalidArgument(format!("a table of {} values for {} points of {stride}", full.len(), v.nq)));
    }
    let (n1, (points, weights)) = (t.q1, &t.rule);
    for (q, row) in full.chunks(stride).enumerate() {
        let w: f64 = (0..d).map(|a| weights[q / n1.pow(a as u32) % n1]).product();
        if (row[0] - w).abs() > 1e-13 {
            return Err(Error::InvalidArgument(format!("point {q} of the table has weight {} where the tensor Gauss rule has {w}", row[0])));
        }
    }
    Ok(t.b.iter().chain(&t.d).chain(points).chain(weights).copied().collect())
}

impl<T: Scalar> GpuSumFactorised<T> {
    /// The table `tab` of `v` ([`tables`]) on the device and its launch
    /// shapes; `None` for variants without sum-factorised entry points
    /// (neither [`Variant::sum_factorised`] nor [`Variant::matrix_free`]),
    /// an error where one element's work arrays exceed a block's shared
    /// memory.
    pub fn new(gpu: &CudaBackend, v: &Variant, tab: &[T]) -> Result<Option<Self>> {
        if !v.sum_factorised && !v.matrix_free {
            return Ok(None);
        }
        let slabs = Slabs::fit(gpu, v.degree + 1, fields(v), T::BYTES)?;
        let action = match v.matrix_free {
            true => Slabs::fit(gpu, v.degree + 1, action_fields(v.nc, v.na, v.aux_nodal, v.terms.g_reads_state), T::BYTES).map_err(|e| format!("the matrix-free action: {e}")),
            false => Err("this variant has no matrix-free action".into()),
        };
        Ok(Some(Self { tab: gpu.upload(tab)?, slabs, action }))
    }

    /// Launches `entry` (with its precision) on `n_cells` cells: the
    /// element kernels' arguments, `tab` replaced by this table.
    #[allow(clippy::too_many_arguments)]
    pub fn launch(&self, gpu: &CudaBackend, entry: &str, n_cells: usize, u: &CudaView<T>, x: &CudaView<T>, a: &CudaView<T>, out: &mut CudaViewMut<T>, time: T) -> Result<()> {
        let f = gpu.function(&format!("{entry}_{}", T::NAME))?;
        let cfg = self.slabs.config(gpu, &f, n_cells)?;
        let batches = 1usize;
        // SAFETY: the caller checked that the E-vectors cover `n_cells`
        // cells; the launch gives each element its slab of threads and
        // its shared memory (`Slabs`)
        unsafe { gpu.stream().launch_builder(&f).arg(&n_cells).arg(&batches).arg(&self.tab).arg(u).arg(x).arg(a).arg(out).arg(&time).launch(cfg) }?;
        Ok(())
    }

    /// `y += (I − F) J(u) (I − F) xin` by the matrix-free entry
    /// `{points}_mf` of `n_cells` cells ([`fem_kernels::pointwise::matrix_free::action`]),
    /// `u`, `x`, `a` the state's and the cells' E-vectors.
    #[allow(clippy::too_many_arguments)]
    pub fn launch_action(&self, gpu: &CudaBackend, points: &str, n_cells: usize, map: &CudaSlice<u32>, (u, x, a): (&CudaSlice<T>, &CudaSlice<T>, &CudaSlice<T>), xin: &CudaSlice<T>, y: &mut CudaSlice<T>, time: T) -> Result<()> {
        let slabs = self.action.as_ref().map_err(|e| Error::InvalidArgument(e.clone()))?;
        let f = gpu.function(&format!("{points}_mf_{}", T::NAME))?;
        let cfg = slabs.config(gpu, &f, n_cells)?;
        // SAFETY: the caller checked that the map covers `n_cells` cells
        // and names rows of `xin` and `y`, and the E-vectors cover them
        unsafe { gpu.stream().launch_builder(&f).arg(&n_cells).arg(&self.tab).arg(map).arg(u).arg(x).arg(a).arg(xin).arg(y).arg(&time).launch(cfg) }?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::BoxMesh;
    use crate::operator::pointwise::{rel, tabulate, Aux, Pointwise};
    use crate::rng::SplitMix64;
    use crate::space::Space;
    use crate::CpuBackend;
    use fem_core::physics::Physics;
    use fem_kernels::physics::{Elasticity, Mass, NeoHookean, Poisson};
    use fem_core::shape::Shape;
    use fem_kernels::pointwise::sum_factorised::table_len;
    use fem_kernels::pointwise::{cell_residual, partial::cell_points, Kernels};

    /// The CPU's sum-factorised residual and point data of `P` at degree
    /// `p` (N_q = NB points) equal the element kernels' (the whole table,
    /// every basis function at every point) to rounding, on perturbed
    /// hexahedra with a random state of size `size` and auxiliary fields
    /// that vary per node or per cell.
    fn matches_element_kernels<P, const NC: usize, const NA: usize, const NB: usize, const AUXN: bool>(p: usize, size: f64)
    where
        P: Kernels<f64> + Physics<f64, 3, NC, NA>,
    {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let space = Space::tensor(&BoxMesh::unstructured(3, 2, 7).build().unwrap(), p).unwrap();
        let mut r = SplitMix64::new(p as u64);
        let aux: Vec<f64> = (0..if AUXN { space.n_dofs } else { space.n_cells() } * NA).map(|_| 1.0 + r.next_f64()).collect();
        let op = Pointwise::<f64, P>::new(&space, Some(NB), if AUXN { Aux::Nodal(&aux) } else { Aux::Cell(&aux) }).unwrap();
        assert!(op.variant.sum_factorised, "Q{p}");
        let nl = NB * NC;
        let u: Vec<f64> = (0..space.n_cells() * nl).map(|_| size * (2.0 * r.next_f64() - 1.0)).collect();
        let (na, nx) = (op.variant.aux_per_cell(), 8 * 3);
        let mut want = vec![0.0; u.len()];
        for (c, w) in want.chunks_mut(nl).enumerate() {
            cell_residual::<f64, P, 3, NC, NA, NB, 8, NB, AUXN>(&op.tab, &u[c * nl..][..nl], &op.x[c * nx..][..nx], &op.a[c * na..][..na], 0.0, w);
        }
        let err = rel(&op.residual_cpu(&cpu, &u).unwrap(), &want);
        assert!(err < 1e-12, "{} Q{p}: residual {err:e}", P::NAME);
        let per = fem_kernels::pointwise::partial::point_len(3, NC, <P as Physics<f64, 3, NC, NA>>::TERMS) * NB;
        let mut want = vec![0.0; space.n_cells() * per];
        for (c, w) in want.chunks_mut(per).enumerate() {
            cell_points::<f64, P, 3, NC, NA, NB, 8, NB, AUXN>(&op.tab, &u[c * nl..][..nl], &op.x[c * nx..][..nx], &op.a[c * na..][..na], 0.0, w);
        }
        let err = rel(&op.points_cpu(&cpu, &u).unwrap(), &want);
        assert!(err < 1e-12, "{} Q{p}: point data {err:e}", P::NAME);
    }

    #[test]
    fn sum_factorised_cells_equal_the_element_kernels() {
        matches_element_kernels::<Poisson, 1, 2, 27, true>(2, 1.0);
        matches_element_kernels::<Poisson, 1, 2, 64, true>(3, 1.0);
        matches_element_kernels::<Poisson, 1, 2, 343, true>(6, 1.0);
        matches_element_kernels::<Elasticity, 3, 2, 27, false>(2, 1.0);
        matches_element_kernels::<Elasticity, 3, 2, 125, false>(4, 1.0);
        // displacements small enough that no point inverts
        matches_element_kernels::<NeoHookean, 3, 2, 27, false>(2, 0.02);
        matches_element_kernels::<NeoHookean, 3, 2, 64, false>(3, 0.01);
        // f0 and g0 alone: no derivative contractions either way
        matches_element_kernels::<Mass, 1, 2, 27, true>(2, 1.0);
        matches_element_kernels::<Mass, 1, 2, 216, true>(5, 1.0);
    }

    /// The kernels read the basis as products of the 1D `B` and `D·B`
    /// along x, y and z (x fastest) and the geometry from the 1D rule on
    /// trilinear cells: every entry of the element kernels' table is that
    /// product, each row's weight the product of the 1D weights and its
    /// vertex part the Q1 basis at the rule's point, so both evaluate the
    /// same basis at the same points in the same reference coordinates.
    #[test]
    fn tables_factor_the_element_kernels_table() {
        let variants = <Poisson as Kernels<f64>>::VARIANTS.iter().chain(<Elasticity as Kernels<f64>>::VARIANTS);
        let mut checked = 0;
        for v in variants.filter(|v| v.sum_factorised) {
            let full = tabulate(v);
            let tab = tables(v, &full).unwrap();
            let t = Tables1d::new(v).unwrap();
            let (n1, nb, nv) = (t.n1, v.n_basis(), v.shape.vertices());
            assert_eq!(t.q1, n1);
            let stride = row_len(3, nb, nv);
            let (rule, (points, weights)) = (&tab[2 * n1 * n1..], &t.rule);
            assert_eq!((rule.len(), tab.len()), (2 * n1, table_len(n1)));
            assert_eq!(rule, [&points[..], &weights[..]].concat().as_slice());
            for q in 0..v.nq {
                let row = &full[q * stride..(q + 1) * stride];
                let qi = [q % n1, q / n1 % n1, q / (n1 * n1)];
                let (mut val, mut grad) = ([0.0; 8], [0.0; 24]);
                Shape::Hexahedron.geometry_basis(&qi.map(|a| points[a]), &mut val, &mut grad);
                let vertex = |m: usize, h: usize| if h == 0 { val[m] } else { grad[m * 3 + h - 1] };
                for m in 0..nv * 4 {
                    assert!((row[1 + nb * 4 + m] - vertex(m / 4, m % 4)).abs() < 1e-13, "Q{} point {q}: vertex basis {m}", v.degree);
                }
                assert!((row[0] - qi.iter().map(|&a| weights[a]).product::<f64>()).abs() < 1e-14);
                for n in 0..nb {
                    let ni = [n % n1, n / n1 % n1, n / (n1 * n1)];
                    for h in 0..4 {
                        let f: f64 = (0..3).map(|a| if h == a + 1 { t.bd[qi[a] * n1 + ni[a]] } else { t.b[qi[a] * n1 + ni[a]] }).product();
                        let want = row[1 + n * 4 + h];
                        assert!((f - want).abs() < 1e-11 * (1.0 + want.abs()), "Q{} point {q} node {n} term {h}: {f} against {want}", v.degree);
                    }
                }
            }
            checked += 1;
        }
        assert!(checked >= 14, "Q2 to Q8 of both physics");
        let q1 = <Poisson as Kernels<f64>>::VARIANTS.iter().find(|v| v.shape.dim() == 3 && v.degree == 1).unwrap();
        assert!(!q1.sum_factorised && tables(q1, &[0.0]).is_err());
    }
}
