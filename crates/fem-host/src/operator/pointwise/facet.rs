//! The boundary term of a `#[fem_kernel]` physics (`bf0`, `bg0`, `bg1`)
//! on chosen boundary facets of a space: the facet table, each facet's
//! cell and local number, and its cell's vertex and auxiliary E-vectors,
//! evaluated on the CPU (rayon) or the GPU (one thread per facet,
//! `fem_kernels::pointwise::facet`). Results are per facet in the cell
//! layout (n_local, or n_local² for element matrices), so they gather and
//! scatter through the facet's cell like one more element.
//!
//! Where the cells' tangent is kept by its points (partial assembly, the
//! matrix-free action), the boundary term's is too: bg0 and bg1 at the
//! facet points ([`FacetTerm::points_cpu`], [`FacetShape::point_len`] a
//! facet), applied and diagonalised from the facet table by one code for
//! every physics ([`FacetShape`]) on the CPU and the GPU. Element matrices
//! of a facet hold its cell's n_local² entries (531k at Q8): the point
//! data hold nc²(d + 1) a facet point.

use super::{fill_row, Pointwise};
use crate::space::facets::{facet_map, span_normal, Facet};
use crate::{Backend, CpuBackend, CudaBackend, Error, Result, Scalar};
use cudarc::driver::{CudaFunction, CudaSlice, CudaView, CudaViewMut, LaunchArgs, LaunchConfig, PushKernelArg};
use fem_core::shape::Shape;
use fem_kernels::pointwise::facet::{facet_table_len, FacetShape};
use fem_kernels::pointwise::{row_len, Kernels, Variant};
use rayon::prelude::*;
use std::marker::PhantomData;

/// Facets per rayon task on the CPU.
const CPU_CHUNK: usize = 256;

/// The reference outward unit normal of local facet `local` of `shape`.
fn reference_normal(shape: Shape, local: usize) -> [f64; 3] {
    let (d, mut n) = (shape.dim(), [0.0; 3]);
    if !shape.is_simplex() {
        n[local / 2] = if local % 2 == 1 { 1.0 } else { -1.0 };
    } else if local == 0 {
        n[..d].fill(1.0 / (d as f64).sqrt());
    } else {
        n[local - 1] = -1.0;
    }
    n
}

/// The facet table of `v` (layout of `fem_kernels::pointwise::facet`):
/// per local facet, the facet rule's points mapped into the cell, their
/// weights times the facet map's measure; then the reference normals.
pub fn tabulate_facets(v: &Variant) -> Vec<f64> {
    let (s, d, nb, nv) = (v.shape, v.dim(), v.n_basis(), v.shape.vertices());
    let (nf, nq, stride) = (s.local_facets(), v.nqf, row_len(d, nb, nv));
    let (mut pts, mut w) = (vec![0.0; nq * (d - 1)], vec![0.0; nq]);
    s.facet_rule(v.degree, &mut pts, &mut w);
    let mut tab = vec![0.0; facet_table_len(d, nb, nv, nf, nq)];
    for l in 0..nf {
        let map = facet_map(s, l);
        let measure = span_normal(d, map.axes).iter().map(|x| x * x).sum::<f64>().sqrt();
        for q in 0..nq {
            let xi = map.point(&pts[q * (d - 1)..][..d - 1]);
            fill_row(v, &xi[..d], w[q] * measure, &mut tab[(l * nq + q) * stride..][..stride]);
        }
        tab[nf * nq * stride + l * d..][..d].copy_from_slice(&reference_normal(s, l)[..d]);
    }
    tab
}

/// The GPU entry of a variant's boundary point data, from its element
/// matrices' (`fem_facet_jacobian_…` → `fem_facet_points_…`, as
/// `#[fem_kernel]` names them).
fn points_entry(jacobian_entry: &str) -> String {
    jacobian_entry.replacen("fem_facet_jacobian_", "fem_facet_points_", 1)
}

/// The sizes of `v`'s facet point data and table.
pub fn facet_shape(v: &Variant) -> FacetShape {
    FacetShape { d: v.dim(), nb: v.n_basis(), nc: v.nc, nqf: v.nqf, nv: v.shape.vertices() }
}

/// Values of the boundary linearisation's point data of `n` facets of
/// `v`: none where bf0 does not depend on u.
fn point_values_of(v: &Variant, n: usize) -> usize {
    match v.facet_jacobian {
        Some(_) => n * facet_shape(v).point_len(),
        None => 0,
    }
}

/// The CPU code of one variant over a range of facets, as `Kernels` has it.
type FacetsFn<T> = fn(&Variant, &[T], usize, &[u32], &[T], &[T], &[T], T, &mut [T]) -> bool;

/// The boundary term of `K` on a set of boundary facets.
pub struct FacetTerm<T, K> {
    /// The variant of the cells' physics.
    pub variant: Variant,
    /// The facets it acts on.
    pub facets: Vec<Facet>,
    /// Local facet number of each.
    pub local: Vec<u32>,
    /// The facet table ([`tabulate_facets`]).
    pub tab: Vec<T>,
    /// Vertex coordinates of each facet's cell.
    pub x: Vec<T>,
    /// Auxiliary fields of each facet's cell.
    pub a: Vec<T>,
    /// The time the boundary term is evaluated at (`Point::t`).
    pub time: T,
    _physics: PhantomData<fn() -> K>,
}

impl<T: Clone, K> Clone for FacetTerm<T, K> {
    fn clone(&self) -> Self {
        Self { variant: self.variant, facets: self.facets.clone(), local: self.local.clone(), tab: self.tab.clone(), x: self.x.clone(), a: self.a.clone(), time: self.time.clone(), _physics: PhantomData }
    }
}

impl<T: Scalar, K: Kernels<T>> FacetTerm<T, K> {
    /// The boundary term of `op`'s physics on `facets`; an error when the
    /// physics defines no `bf0`.
    pub fn new(op: &Pointwise<T, K>, facets: &[&Facet]) -> Result<Self> {
        let (nx, na) = (op.variant.shape.vertices() * op.variant.dim(), op.variant.aux_per_cell());
        Self::of_cells(op, facets, Self::per_facet_cell(facets, &op.x, nx), Self::per_facet_cell(facets, &op.a, na))
    }

    /// [`FacetTerm::new`] with the facets' cells' coordinates `x` and
    /// auxiliary fields `a` given in facet order: made for these cells
    /// alone where the physics keeps no E-vectors of all cells
    /// ([`crate::operator::pointwise::NodalCells`]).
    pub fn of_cells(op: &Pointwise<T, K>, facets: &[&Facet], x: Vec<T>, a: Vec<T>) -> Result<Self> {
        let v = op.variant;
        if v.facet_residual.is_none() {
            return Err(Error::InvalidArgument(format!("physics `{}` defines no boundary term bf0", K::NAME)));
        }
        crate::error::same_len("the facets' cell coordinates", x.len(), facets.len() * v.shape.vertices() * v.dim())?;
        crate::error::same_len("the facets' cell fields", a.len(), facets.len() * v.aux_per_cell())?;
        Ok(Self {
            variant: v,
            facets: facets.iter().map(|&&f| f).collect(),
            local: facets.iter().map(|f| f.local as u32).collect(),
            tab: tabulate_facets(&v).into_iter().map(T::from_f64).collect(),
            x,
            a,
            time: op.time,
            _physics: PhantomData,
        })
    }

    /// The `n` values of each facet's cell in `data` (`n` a cell), in
    /// facet order.
    pub fn per_facet_cell(facets: &[&Facet], data: &[T], n: usize) -> Vec<T> {
        facets.iter().flat_map(|f| data[f.cell as usize * n..][..n].iter().copied()).collect()
    }

    /// Facets.
    pub fn len(&self) -> usize {
        self.facets.len()
    }

    /// Whether the term acts on no facet.
    pub fn is_empty(&self) -> bool {
        self.facets.is_empty()
    }

    /// Output values per facet: n_local, or n_local² for element matrices.
    pub fn per_facet(&self, jacobian: bool) -> usize {
        let nl = self.variant.n_local();
        if jacobian {
            nl * nl
        } else {
            nl
        }
    }

    /// Values of the boundary linearisation's point data
    /// ([`Self::points_cpu`]): none where bf0 does not depend on u.
    pub fn point_values(&self) -> usize {
        point_values_of(&self.variant, self.len())
    }

    /// Boundary residuals (`jacobian` false) or element matrices on the
    /// CPU from the facets' cell E-vectors `u`.
    pub fn evaluate_cpu(&self, cpu: &CpuBackend, jacobian: bool, u: &[T]) -> Result<Vec<T>> {
        let f: FacetsFn<T> = if jacobian { K::facet_jacobians } else { K::facet_residuals };
        self.run_cpu(cpu, f, self.per_facet(jacobian), jacobian, u)
    }

    /// The boundary linearisation's point data ([`Self::point_values`])
    /// on the CPU from the facets' cell E-vectors `u`.
    pub fn points_cpu(&self, cpu: &CpuBackend, u: &[T]) -> Result<Vec<T>> {
        self.run_cpu(cpu, K::facet_points, facet_shape(&self.variant).point_len(), true, u)
    }

    /// `f` over the facets on `cpu`'s threads, `per` values a facet; zero
    /// for the linearisation (`jacobian`) where bf0 does not depend on u.
    fn run_cpu(&self, cpu: &CpuBackend, f: FacetsFn<T>, per: usize, jacobian: bool, u: &[T]) -> Result<Vec<T>> {
        let nl = self.variant.n_local();
        if u.len() != self.len() * nl {
            return Err(Error::InvalidArgument(format!("facet E-vector has {} values, {} facets need {}", u.len(), self.len(), self.len() * nl)));
        }
        let mut out = vec![T::ZERO; self.len() * per];
        if jacobian && self.variant.facet_jacobian.is_none() {
            // bf0 does not depend on u: its linearisation is zero.
            return Ok(out);
        }
        let ran = cpu.install(|| {
            out.par_chunks_mut(CPU_CHUNK * per).enumerate().all(|(k, o)| f(&self.variant, &self.tab, k * CPU_CHUNK, &self.local, u, &self.x, &self.a, self.time, o))
        });
        if !ran {
            return Err(Error::InvalidArgument(format!("physics `{}` has no boundary {}", K::NAME, if jacobian { "linearisation bg0, bg1" } else { "term" })));
        }
        Ok(out)
    }

    /// `ye = K_Γ x` on the facets' E-vector from their point data `h`,
    /// `x(k)` the facets' E-vector entry k.
    pub fn point_product_cpu(&self, cpu: &CpuBackend, h: &[T], x: &(impl Fn(usize) -> T + Sync), ye: &mut [T]) -> Result<()> {
        let s = facet_shape(&self.variant);
        let (nl, hl, nt) = (s.n_local(), s.point_len(), s.nqf * s.nc);
        self.check_points(h, ye.len())?;
        cpu.install(|| {
            // the point actions' scratch made once a task, not once a facet
            ye.par_chunks_mut(nl).enumerate().for_each_init(
                || vec![T::ZERO; nt],
                |t, (f, y)| {
                    let (l, hf) = (self.local[f] as usize, &h[f * hl..(f + 1) * hl]);
                    for (i, ti) in t.iter_mut().enumerate() {
                        *ti = s.action(&self.tab, l, i / s.nc, i % s.nc, hf, |j| x(f * nl + j));
                    }
                    for (i, v) in y.iter_mut().enumerate() {
                        *v = s.test(&self.tab, l, i, t);
                    }
                },
            )
        });
        Ok(())
    }

    /// The diagonal of the facets' element matrices, as their E-vector,
    /// from their point data `h`.
    pub fn point_diagonal_cpu(&self, cpu: &CpuBackend, h: &[T]) -> Result<Vec<T>> {
        let s = facet_shape(&self.variant);
        let (nl, hl) = (s.n_local(), s.point_len());
        let mut out = vec![T::ZERO; self.len() * nl];
        self.check_points(h, out.len())?;
        cpu.install(|| out.par_chunks_mut(nl).enumerate().for_each(|(f, d)| d.iter_mut().enumerate().for_each(|(i, v)| *v = s.diagonal(&self.tab, self.local[f] as usize, i, &h[f * hl..(f + 1) * hl]))));
        Ok(out)
    }

    /// An error unless `h` holds the facets' point data and `ye` their
    /// E-vector's length.
    fn check_points(&self, h: &[T], ye: usize) -> Result<()> {
        let s = facet_shape(&self.variant);
        if h.len() != self.len() * s.point_len() || ye != self.len() * s.n_local() {
            return Err(Error::InvalidArgument(format!("{} facets: point data of {} values and an E-vector of {ye}", self.len(), h.len())));
        }
        Ok(())
    }
}

/// The boundary term on the GPU: uploaded table and facet data.
pub struct GpuFacetTerm<T> {
    variant: Variant,
    n: usize,
    /// The sizes of the point data and table, and the table's length:
    /// arguments of the point data's kernels.
    shape: FacetShape,
    tab_len: usize,
    tab: CudaSlice<T>,
    local: CudaSlice<u32>,
    x: CudaSlice<T>,
    a: CudaSlice<T>,
    /// The time the boundary term is evaluated at (`Point::t`).
    pub time: T,
}

impl<T: Scalar> GpuFacetTerm<T> {
    /// Uploads `term`; an error when its physics has no kernels in `T`.
    pub fn new<K: Kernels<T>>(gpu: &CudaBackend, term: &FacetTerm<T, K>) -> Result<Self> {
        if !term.variant.precisions.contains(&T::NAME) {
            return Err(Error::InvalidArgument(format!("physics `{}` has no {} kernels", K::NAME, T::NAME)));
        }
        let a = if term.a.is_empty() { gpu.upload(&[T::ZERO])? } else { gpu.upload(&term.a)? };
        let local = if term.local.is_empty() { vec![0] } else { term.local.clone() };
        Ok(Self { variant: term.variant, n: term.len(), shape: facet_shape(&term.variant), tab_len: term.tab.len(), tab: gpu.upload(&term.tab)?, local: gpu.htod(&local)?, x: gpu.upload(&term.x)?, a, time: term.time })
    }

    /// Boundary residuals or element matrices into `out` from the facets'
    /// cell E-vectors `u` (views: they follow the cells' in one buffer).
    /// Without bg0 and bg1 the element matrices are zero.
    pub fn evaluate(&self, gpu: &CudaBackend, jacobian: bool, u: &CudaView<T>, out: &mut CudaViewMut<T>) -> Result<()> {
        let nl = self.variant.n_local();
        let per = if jacobian { nl * nl } else { nl };
        if u.len() < self.n * nl || out.len() < self.n * per {
            return Err(Error::InvalidArgument(format!("facet E-vectors of {} and {} values do not fit {} facets", u.len(), out.len(), self.n)));
        }
        let entry = if jacobian { self.variant.facet_jacobian } else { self.variant.facet_residual };
        match entry {
            Some(base) => self.per_facet(gpu, base, u, out),
            None => gpu.stream().memset_zeros(out).map_err(Into::into),
        }
    }

    /// The generated per-facet entry `base` (one thread a facet) from the
    /// facets' cell E-vectors `u` into `out`.
    fn per_facet(&self, gpu: &CudaBackend, base: &str, u: &CudaView<T>, out: &mut CudaViewMut<T>) -> Result<()> {
        if self.n == 0 {
            return Ok(());
        }
        let f = gpu.function(&format!("{base}_{}", T::NAME))?;
        let cfg = LaunchConfig { grid_dim: (self.n.div_ceil(128).clamp(1, i32::MAX as usize) as u32, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
        unsafe { gpu.stream().launch_builder(&f).arg(&self.n).arg(&self.tab).arg(&self.local).arg(u).arg(&self.x).arg(&self.a).arg(out).arg(&self.time).launch(cfg) }?;
        Ok(())
    }
}

impl GpuFacetTerm<f64> {
    /// Values of the point data ([`FacetTerm::point_values`]).
    pub fn point_values(&self) -> usize {
        point_values_of(&self.variant, self.n)
    }

    /// Scratch values of [`Self::add_point_product`]: a facet's point
    /// data applied at its points.
    pub fn scratch_len(&self) -> usize {
        self.n * self.shape.nqf * self.shape.nc
    }

    /// The boundary linearisation's point data into `out` from the facets'
    /// cell E-vectors `u` (views: they follow the cells' in one buffer);
    /// nothing where bf0 does not depend on u.
    pub fn points(&self, gpu: &CudaBackend, u: &CudaView<f64>, out: &mut CudaViewMut<f64>) -> Result<()> {
        let Some(base) = self.variant.facet_jacobian else { return Ok(()) };
        if u.len() < self.n * self.variant.n_local() || out.len() < self.point_values() {
            return Err(Error::InvalidArgument(format!("facet E-vector of {} and point data of {} values do not fit {} facets", u.len(), out.len(), self.n)));
        }
        self.per_facet(gpu, &points_entry(base), u, out)
    }

    /// `y += K_Γ x` on L-vectors from the point data `h`, `map` the
    /// facets' E-vector rows ([`crate::space::restriction::SKIP`] where
    /// held), `t` a scratch of [`Self::scratch_len`] values.
    pub fn add_point_product(&self, gpu: &CudaBackend, h: &CudaView<f64>, map: &CudaView<u32>, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>, t: &mut CudaSlice<f64>) -> Result<()> {
        self.check(h, map)?;
        if self.point_values() == 0 || self.n == 0 {
            return Ok(());
        }
        if t.len() < self.scratch_len() {
            return Err(Error::InvalidArgument(format!("a facet scratch of {} values for {}", t.len(), self.scratch_len())));
        }
        let f = gpu.kernel::<f64>("facet_point_action")?;
        unsafe { self.point_args(gpu, &f).arg(h).arg(map).arg(x).arg(&mut *t).launch(gpu.per_item(self.scratch_len())) }?;
        let f = gpu.kernel::<f64>("facet_point_test")?;
        unsafe { self.point_args(gpu, &f).arg(&*t).arg(map).arg(y).launch(gpu.per_item(self.n * self.shape.n_local())) }?;
        Ok(())
    }

    /// `d += diag(K_Γ)` on L-vectors from the point data `h`.
    pub fn add_point_diagonal(&self, gpu: &CudaBackend, h: &CudaView<f64>, map: &CudaView<u32>, d: &mut CudaSlice<f64>) -> Result<()> {
        self.check(h, map)?;
        if self.point_values() == 0 || self.n == 0 {
            return Ok(());
        }
        let f = gpu.kernel::<f64>("facet_point_diagonal")?;
        unsafe { self.point_args(gpu, &f).arg(h).arg(map).arg(d).launch(gpu.per_item(self.n * self.shape.n_local())) }?;
        Ok(())
    }

    /// A launch of `f`, one of the point data's kernels, with the
    /// arguments they all take first: the facets, their shape, the table
    /// and the local numbers.
    fn point_args<'a>(&'a self, gpu: &'a CudaBackend, f: &'a CudaFunction) -> LaunchArgs<'a> {
        let s = &self.shape;
        let mut args = gpu.stream().launch_builder(f);
        args.arg(&self.n).arg(&s.d).arg(&s.nb).arg(&s.nc).arg(&s.nqf).arg(&s.nv).arg(&self.tab).arg(&self.tab_len).arg(&self.local);
        args
    }

    /// An error unless `h` and `map` cover the facets.
    fn check(&self, h: &CudaView<f64>, map: &CudaView<u32>) -> Result<()> {
        if h.len() < self.point_values() || map.len() < self.n * self.shape.n_local() {
            return Err(Error::InvalidArgument(format!("{} facets: point data of {} values and a map of {}", self.n, h.len(), map.len())));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::simplex::SimplexBox;
    use crate::mesh::BoxMesh;
    use crate::operator::pointwise::Aux;
    use crate::space::{BoundaryPart, Load, Space};

    /// A boundary term using every argument: bf0 = u³ + u ∂u/∂n + n₀ + x₀.
    #[fem_macros::fem_kernel(
        components = 1,
        elements(tri(p = 1, q = 3), tri(p = 2, q = 6), tet(p = 1, q = 4), tet(p = 2, q = 4), quad(p = 1, q = 4), quad(p = 4, q = 25), hex(p = 1, q = 8), hex(p = 2, q = 27)),
        precision(f64)
    )]
    mod flux_robin {
        use fem_core::Real;

        fn normal_derivative<T: Real, const D: usize>(du: &[T; D], n: &[T; D]) -> T {
            (0..D).fold(T::ZERO, |s, k| du[k].mad(n[k], s))
        }

        pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[T; D]; 1] {
            [du[0]]
        }

        pub fn bf0<T: Real, const D: usize>(u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], x: &[T; D], n: &[T; D]) -> [T; 1] {
            [u[0] * u[0] * u[0] + u[0] * normal_derivative(&du[0], n) + n[0] + x[0]]
        }

        pub fn bg0<T: Real, const D: usize>(u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D], n: &[T; D]) -> [[T; 1]; 1] {
            [[T::from_f64(3.0) * u[0] * u[0] + normal_derivative(&du[0], n)]]
        }

        pub fn bg1<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D], n: &[T; D]) -> [[[T; D]; 1]; 1] {
            [[core::array::from_fn(|g| u[0] * n[g])]]
        }
    }
    use flux_robin::FluxRobin;

    /// Perturbed, shuffled spaces of every shape at the test physics' degrees.
    fn spaces() -> Vec<Space> {
        let mut out = Vec::new();
        for dim in [2, 3] {
            let simplex = SimplexBox::unstructured(dim, 2, 3).build().unwrap();
            let tensor = BoxMesh::unstructured(dim, 2, 3).build().unwrap();
            for p in [1, 2] {
                out.push(Space::simplex(&simplex, p).unwrap());
            }
            for p in if dim == 2 { [1, 4] } else { [1, 2] } {
                out.push(Space::tensor(&tensor, p).unwrap());
            }
        }
        out
    }

    fn term(s: &Space) -> FacetTerm<f64, FluxRobin> {
        let op = Pointwise::<f64, FluxRobin>::new(s, None, Aux::None).unwrap();
        FacetTerm::new(&op, &BoundaryPart::All.facets(s).unwrap()).unwrap()
    }

    /// Scatters per-facet residuals into the nodes.
    fn scatter(s: &Space, t: &FacetTerm<f64, FluxRobin>, r: &[f64]) -> Vec<f64> {
        let nb = s.nb();
        let mut out = vec![0.0; s.n_dofs];
        for (k, f) in t.facets.iter().enumerate() {
            for b in 0..nb {
                out[s.cell_dofs[f.cell as usize * nb + b] as usize] += r[k * nb + b];
            }
        }
        out
    }

    /// At u = 0 the term is ∫_Γ φ (n₀ + x₀): the host's Neumann load of
    /// that flux, whose normals and measures are computed another way.
    #[test]
    fn the_boundary_term_at_zero_is_the_neumann_load_of_its_flux() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        for s in spaces() {
            let t = term(&s);
            let r = t.evaluate_cpu(&cpu, false, &vec![0.0; t.len() * s.nb()]).unwrap();
            let want = Load::zero(&s, 1).neumann(&s, &BoundaryPart::All, |x, n, g| g[0] = n[0] + x[0]).unwrap();
            let got = scatter(&s, &t, &r);
            let worst = got.iter().zip(&want.values).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(worst < 1e-12, "{:?} p{}: {worst:e}", s.shape, s.degree);
            assert!(want.values.iter().any(|v| v.abs() > 1e-3));
        }
    }

    /// The element matrices are the residual's derivative (bg0 and bg1,
    /// pulled back through the cell's geometry): central differences.
    #[test]
    fn boundary_element_matrices_are_the_residuals_derivative() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        for s in spaces() {
            let t = term(&s);
            let nl = s.nb();
            let u: Vec<f64> = (0..t.len() * nl).map(|i| ((i * 37 % 101) as f64 / 101.0 - 0.5) * 1.5).collect();
            let jac = t.evaluate_cpu(&cpu, true, &u).unwrap();
            let h = 1e-6;
            let mut worst = 0.0f64;
            for f in [0, t.len() / 2, t.len() - 1] {
                for j in 0..nl {
                    let (mut up, mut down) = (u.clone(), u.clone());
                    up[f * nl + j] += h;
                    down[f * nl + j] -= h;
                    let (rp, rm) = (t.evaluate_cpu(&cpu, false, &up).unwrap(), t.evaluate_cpu(&cpu, false, &down).unwrap());
                    for i in 0..nl {
                        let fd = (rp[f * nl + i] - rm[f * nl + i]) / (2.0 * h);
                        worst = worst.max((fd - jac[(f * nl + i) * nl + j]).abs());
                    }
                }
            }
            assert!(worst < 1e-7, "{:?} p{}: {worst:e}", s.shape, s.degree);
        }
    }

    /// The linearisation kept by the facet points applies as the element
    /// matrices do (bg0 and bg1, every shape and degree of the test
    /// physics): the product on a random E-vector and the diagonal.
    #[test]
    fn boundary_point_data_apply_as_the_element_matrices() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        for s in spaces() {
            let (t, nl) = (term(&s), s.nb());
            let u: Vec<f64> = (0..t.len() * nl).map(|i| ((i * 37 % 101) as f64 / 101.0 - 0.5) * 1.5).collect();
            let x: Vec<f64> = (0..t.len() * nl).map(|i| ((i * 53 % 89) as f64 / 89.0 - 0.5) * 2.0).collect();
            let (jac, h) = (t.evaluate_cpu(&cpu, true, &u).unwrap(), t.points_cpu(&cpu, &u).unwrap());
            assert_eq!(h.len(), t.point_values());
            let mut got = vec![f64::NAN; t.len() * nl];
            t.point_product_cpu(&cpu, &h, &|k| x[k], &mut got).unwrap();
            let want: Vec<f64> = (0..t.len() * nl).map(|r| (0..nl).map(|j| jac[r * nl + j] * x[r / nl * nl + j]).sum()).collect();
            let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let worst = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(scale > 1e-3 && worst <= 1e-13 * scale, "{:?} p{}: product {worst:e} of {scale:e}", s.shape, s.degree);
            let diagonal = t.point_diagonal_cpu(&cpu, &h).unwrap();
            let worst = (0..t.len() * nl).fold(0.0f64, |m, r| m.max((diagonal[r] - jac[r * nl + r % nl]).abs()));
            assert!(worst <= 1e-13 * scale, "{:?} p{}: diagonal {worst:e}", s.shape, s.degree);
            assert!(t.point_product_cpu(&cpu, &h[1..], &|k| x[k], &mut got).is_err());
        }
    }

    #[test]
    fn a_physics_without_a_boundary_term_is_refused() {
        let s = Space::simplex(&SimplexBox::unstructured(2, 2, 1).build().unwrap(), 1).unwrap();
        let op = Pointwise::<f64, fem_kernels::physics::MinimalSurface>::new(&s, None, Aux::None).unwrap();
        let e = FacetTerm::new(&op, &BoundaryPart::All.facets(&s).unwrap()).err().unwrap().to_string();
        assert!(e.contains("bf0"), "{e}");
    }
}
