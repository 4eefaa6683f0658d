//! How Newton's tangent is stored for the Krylov method: assembled into a
//! global sparse format, or kept as the element matrices the physics'
//! kernels produce (the local matrix approach, LMA) and applied as gather,
//! dense product and scatter. The second skips the assembly into CSR, its
//! pattern and its reordering at every update, and reads fewer bytes per
//! product where elements are large (Q3 and up, vector fields on Q2);
//! the first reads fewer where they are small (P1, P2 simplices).
//! On hexahedra it may also be kept by its quadrature points: partial
//! assembly's point data, or nothing but the state for the matrix-free
//! action; the cell-wise storages are applied by
//! [`super::cell_tangent`].

use super::{NewtonOps, Setup};
pub use crate::operator::gpu::Scatter;
use crate::sparse::assembly::gather_matrix;
use crate::sparse::params::SpmvParams;
use crate::sparse::stats::RowStats;
use crate::sparse::warp::EllWarp;
use crate::sparse::SpmvFormat;
use crate::{CpuBackend, Error, Result};
use fem_kernels::pointwise::{Kernels, Variant};
use rayon::prelude::*;
use serde::Serialize;

/// The assembly level of Newton's tangent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum Assembly {
    /// With Jacobi: partial assembly on the backends and variants that
    /// take it, from degree 2 ([`NewtonOps::auto_partial`]: its set-up is
    /// the point data, not element matrices, and its product reads fewer
    /// bytes than theirs), matrix-free there instead for vector fields
    /// (see [`Assembly::by_points`]), else element matrices where their product
    /// reads at most [`LMA_BYTES_FACTOR`] times the assembled matrix's
    /// bytes; otherwise the backend's sparse format
    /// ([`NewtonOps::default_format`]).
    #[default]
    Auto,
    /// Assembled into this sparse format (one that keeps the original
    /// numbering: not the renumbered ELL-WARP variants).
    Sparse(SpmvFormat),
    /// Element matrices (LMA), preconditioned by Jacobi.
    Lma,
    /// Partial assembly on quadrilaterals and hexahedra: the
    /// linearisation stored at the quadrature points and applied by sum
    /// factorisation, preconditioned by Jacobi (its diagonal by sum
    /// factorisation too).
    Partial,
    /// Matrix-free on hexahedra (`none`): the linearisation recomputed
    /// at the points by every product from the state, nothing stored but
    /// it; preconditioned by Jacobi, whose diagonal comes from point data
    /// made a chunk of cells at a time.
    MatrixFree,
}

impl std::fmt::Display for Assembly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Auto => write!(f, "auto"),
            Self::Sparse(s) => write!(f, "{}", s.name()),
            Self::Lma => write!(f, "lma"),
            Self::Partial => write!(f, "partial"),
            Self::MatrixFree => write!(f, "none"),
        }
    }
}

impl std::str::FromStr for Assembly {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "lma" => Ok(Self::Lma),
            "partial" => Ok(Self::Partial),
            "none" | "matrix-free" => Ok(Self::MatrixFree),
            _ => s.parse().map(Self::Sparse).map_err(|_| format!("unknown assembly `{s}` (auto, lma, partial, none, or a sparse format: {})", SpmvFormat::ALL.map(|f| f.name()).join(", "))),
        }
    }
}

/// What a workspace stores: [`Assembly`] resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Storage {
    /// Assembled into this format.
    Sparse(SpmvFormat),
    /// Element matrices.
    Lma,
    /// Point data of partial assembly.
    Partial,
    /// The state's E-vector, for the matrix-free action.
    MatrixFree,
}

impl Storage {
    /// The sparse format of the assembled tangent; `None` for element
    /// matrices.
    pub(crate) fn format(self) -> Option<SpmvFormat> {
        match self {
            Self::Sparse(f) => Some(f),
            Self::Lma | Self::Partial | Self::MatrixFree => None,
        }
    }

    /// Whether the Krylov method applies the tangent cell by cell (element
    /// matrices, point data or the matrix-free action) rather than as an
    /// assembled matrix.
    pub(crate) fn by_cells(self) -> bool {
        !matches!(self, Self::Sparse(_))
    }

    /// The tangent's values at the solution E-vector `ue` into `kelem`, as
    /// this storage keeps them: point data, the state itself (the
    /// matrix-free linearisation point) or element matrices.
    pub(crate) fn linearise<B: NewtonOps>(self, b: &B, state: &B::State, ue: &B::Vector<f64>, kelem: &mut B::Vector<f64>) -> Result<()> {
        match self {
            Self::Partial => b.points(state, ue, kelem),
            Self::MatrixFree => b.hold_state(state, ue, kelem),
            Self::Lma | Self::Sparse(_) => b.elements(state, true, ue, kelem),
        }
    }

    /// Values the backend holds for the tangent of `setup` between
    /// updates: element matrices (with SpMV's padding zero where `scatter`
    /// sums by SpMV, from which the assembled values are refilled) or
    /// partial assembly's point data, or the state's E-vector for the
    /// matrix-free action; the last two with a boundary term's point data
    /// after them.
    pub(crate) fn values<K: Kernels<f64>>(self, setup: &Setup<K>, scatter: Scatter) -> usize {
        match self {
            Self::MatrixFree => setup.gather.len() + setup.facet_point_values(),
            Self::Lma => setup.entry_len(),
            Self::Partial => setup.physics.n_cells * crate::operator::pointwise::partial::points_per_cell(&setup.physics.variant) + setup.facet_point_values(),
            Self::Sparse(_) => padded(setup.entry_len(), scatter),
        }
    }

    /// How the report names it.
    pub(super) fn describe(self) -> String {
        match self {
            Self::Sparse(f) => format!("the tangent assembled in {}", f.name()),
            Self::Lma => "the tangent as element matrices (LMA)".into(),
            Self::Partial => "the tangent partially assembled (point data, sum factorisation)".into(),
            Self::MatrixFree => "the tangent matrix-free (recomputed at the points, sum factorisation)".into(),
        }
    }
}

/// How many fewer bytes element matrices must read than the assembled
/// matrix to be the faster product: their product gathers its input and
/// adds its output by atomics (GPU) or by rows summed from scattered
/// element rows (CPU), and reaches about half the bandwidth the sparse
/// formats do (on an H200, 49 % of DRAM peak against 86 % for ELL-WARP on
/// Q2 hexahedra; on 16 host cores, 48 against 115 GB/s).
pub const LMA_BYTES_FACTOR: f64 = 0.5;

/// Bytes of matrix data one product reads: element matrices and their
/// map, against the assembled values and column indices.
pub fn product_bytes<K: Kernels<f64>>(setup: &Setup<K>) -> (usize, usize) {
    let rows = setup.gather.len();
    let nl = setup.entry_len() / rows.max(1);
    (rows * (8 * nl + 4), 12 * setup.csr.nnz() + 4 * (setup.n_rows() + 1))
}

/// Whether a product of element matrices of `lma` bytes beats one of the
/// assembled matrix of `sparse` bytes.
fn elements_are_faster(lma: usize, sparse: usize) -> bool {
    lma as f64 <= LMA_BYTES_FACTOR * sparse as f64
}

impl Assembly {
    /// The storage for `setup` preconditioned by `precond` on a backend
    /// whose sparse format is `default` and that takes partial assembly of
    /// this variant in `auto` when `partial`; an error where the two cannot
    /// go together.
    /// A set-up made without its pattern ([`Setup::has_pattern`]) takes
    /// partial assembly only.
    pub(crate) fn resolve<K: Kernels<f64>>(self, setup: &Setup<K>, precond: super::Precond, precision: super::Precision, default: SpmvFormat, partial: bool) -> Result<Storage> {
        let storage = self.resolve_on_pattern(setup, precond, precision, default, partial)?;
        if !matches!(storage, Storage::Partial | Storage::MatrixFree) && !setup.has_pattern() {
            return Err(Error::InvalidArgument(format!("the set-up was made without the assembled tangent's pattern, for partial assembly; {self} needs it")));
        }
        Ok(storage)
    }

    /// Whether Newton partially assembles the tangent of `v` with these
    /// options, on a backend that takes it in `auto` where `partial`,
    /// before any set-up: what [`Assembly::resolve`] picks.
    pub fn takes_partial(self, v: &Variant, precond: super::Precond, precision: super::Precision, partial: bool) -> bool {
        let jacobi = !precond.needs_matrix() && precision == super::Precision::F64;
        let fits = Self::partial_refusal(v, jacobi, precond).is_none();
        fits && (self == Self::Partial || (self == Self::Auto && partial && v.degree >= 2))
    }

    /// What `auto` stores where it stores the tangent by its points:
    /// matrix-free for vector fields, whose point data (81 values a point
    /// in 3D) make partial assembly's product read-bound (elasticity Q2 on
    /// an H100: 744 against 3543 µs a CG iteration, Q4 198 against 716;
    /// the products alone at 1e7 DOFs, Q4: 14.7 against 4.9 GDOF/s),
    /// partial assembly for scalar ones, whose 9 values a point cost less
    /// than interpolating the state and the auxiliary fields at every
    /// product (Poisson Q3: 1288 against 1754 µs).
    pub(crate) fn by_points(v: &Variant) -> Storage {
        if v.nc > 1 && v.matrix_free {
            Storage::MatrixFree
        } else {
            Storage::Partial
        }
    }

    /// Whether Newton stores the tangent without its assembled pattern
    /// with these options: partially assembled ([`Self::takes_partial`])
    /// or matrix-free, where that applies.
    pub fn skips_pattern(self, v: &Variant, precond: super::Precond, precision: super::Precision, partial: bool) -> bool {
        let jacobi = !precond.needs_matrix() && precision == super::Precision::F64;
        self.takes_partial(v, precond, precision, partial) || (self == Self::MatrixFree && Self::matrix_free_refusal(v, jacobi, precond).is_none())
    }

    /// Why the matrix-free action cannot apply the tangent of `v`, if it
    /// cannot: partial assembly's reasons, and its variants' rule.
    fn matrix_free_refusal(v: &Variant, jacobi: bool, precond: super::Precond) -> Option<Error> {
        if let Err(e) = crate::operator::pointwise::matrix_free::check(v) {
            return Some(e);
        }
        Self::points_refusal("the matrix-free tangent", v, jacobi, precond)
    }

    /// Why partial assembly cannot store the tangent of `v`, if it
    /// cannot.
    fn partial_refusal(v: &Variant, jacobi: bool, precond: super::Precond) -> Option<Error> {
        Self::points_refusal("partial assembly", v, jacobi, precond)
    }

    /// Why `level`, a storage by the quadrature points, cannot hold the
    /// tangent of `v`, if it cannot (a boundary term's linearisation
    /// goes by its facet points alongside).
    fn points_refusal(level: &str, v: &Variant, jacobi: bool, precond: super::Precond) -> Option<Error> {
        if v.points.is_none() {
            return Some(Error::InvalidArgument(format!("{level} needs a physics with a Jacobian on quadrilaterals or hexahedra, not {}", v.shape.name())));
        }
        if !jacobi {
            return Some(Error::InvalidArgument(format!("{precond} needs the assembled tangent; {level} is preconditioned by Jacobi, Chebyshev, p-multigrid or not at all, in f64")));
        }
        None
    }

    /// [`Assembly::resolve`] on a set-up with its pattern.
    fn resolve_on_pattern<K: Kernels<f64>>(self, setup: &Setup<K>, precond: super::Precond, precision: super::Precision, default: SpmvFormat, partial: bool) -> Result<Storage> {
        let jacobi = !precond.needs_matrix() && precision == super::Precision::F64;
        let v = &setup.physics.variant;
        match self {
            Self::Auto if self.takes_partial(v, precond, precision, partial) => Ok(Self::by_points(v)),
            Self::Auto => {
                let (lma, sparse) = product_bytes(setup);
                Ok(if jacobi && elements_are_faster(lma, sparse) { Storage::Lma } else { Storage::Sparse(default) })
            }
            Self::Lma if jacobi => Ok(Storage::Lma),
            Self::Partial => match Self::partial_refusal(v, jacobi, precond) {
                Some(e) => Err(e),
                None => Ok(Storage::Partial),
            },
            Self::MatrixFree => match Self::matrix_free_refusal(v, jacobi, precond) {
                Some(e) => Err(e),
                None => Ok(Storage::MatrixFree),
            },
            Self::Lma if precision == super::Precision::F32 => Err(Error::InvalidArgument("a single-precision solve needs the assembled tangent; element matrices (LMA) are applied in f64".into())),
            Self::Lma => Err(Error::InvalidArgument(format!("{precond} needs the assembled tangent; element matrices (LMA) are preconditioned by Jacobi, Chebyshev, p-multigrid or not at all"))),
            Self::Sparse(f) if f.warp().is_some_and(|(_, n)| n != crate::sparse::warp::Numbering::Remap) => {
                Err(Error::InvalidArgument(format!("the {} format renumbers its rows; Newton's tangent needs one in the original numbering (csr, ell, ellt, k1, k2, cusparse)", f.name())))
            }
            Self::Sparse(f) => Ok(Storage::Sparse(f)),
        }
    }
}

/// The 0/1 gather matrix of assembly by SpMV ([`Scatter::Spmv`]): row
/// `r` sums the element entries `k` whose position `pos[k]` is `r`
/// (entries at `u32::MAX` are skipped), in ELL-WARP pattern form with the
/// a-priori threshold; its padding reads the zero one past the entries,
/// so the element arrays it multiplies are [`padded`].
pub(crate) fn gather_pattern(cpu: &CpuBackend, pos: &[u32], rows: usize) -> Result<EllWarp<f64>> {
    let e = gather_matrix::<f64>(pos, rows);
    let threshold = SpmvParams::a_priori(&RowStats::of(&e)).threshold;
    EllWarp::pattern(cpu, &e, pos.len(), Some(threshold))
}

/// Whether every value is zero: a base a sum by SpMV need not add.
pub(super) fn is_zero(v: &[f64]) -> bool {
    v.par_iter().all(|&x| x == 0.0)
}

/// Length of an element array of `len` entries summed by `scatter`: one
/// more (a zero) for the padding of SpMV's gather matrix.
pub fn padded(len: usize, scatter: Scatter) -> usize {
    len + (scatter == Scatter::Spmv) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::LinearOperator;
    use crate::problem::nonlinear::NewtonOps;
    use crate::mesh::simplex::SimplexBox;
    use crate::mesh::BoxMesh;
    use crate::operator::pointwise::Aux;
    use crate::problem::nonlinear::{solve, NewtonOptions, Precision, Precond};
    use crate::rng::SplitMix64;
    use crate::space::{BoundaryPart, Constraints, Space};
    use crate::CpuBackend;
    use fem_kernels::physics::{Elasticity, MinimalSurface, Poisson, Radiation};

    fn random(n: usize, seed: u64) -> Vec<f64> {
        let mut r = SplitMix64::new(seed);
        (0..n).map(|_| 2.0 * r.next_f64() - 1.0).collect()
    }

    /// The element matrices at a random state applied as they are, and
    /// assembled into CSR then applied: one product, one diagonal, fixed
    /// rows (part of the boundary) and the boundary term's facets included.
    fn compare<K: Kernels<f64> + 'static>(cpu: &CpuBackend, setup: &Setup<K>, label: &str) {
        let n = setup.n_rows();
        let (assembled, lma) = (cpu.prepare(setup, Some(SpmvFormat::Csr), Scatter::Atomic).unwrap(), cpu.prepare(setup, None, Scatter::Atomic).unwrap());
        let u = random(n, 1);
        let mut ue = vec![0.0; setup.gather.len()];
        cpu.gather(&assembled, &u, &mut ue).unwrap();
        let mut kelem = vec![0.0; setup.entry_len()];
        cpu.elements(&assembled, true, &ue, &mut kelem).unwrap();
        let mut csr = (*setup.csr).clone();
        cpu.assemble(&assembled, true, &kelem, &mut csr.val).unwrap();
        let x = random(n, 2);
        let (mut want, mut got) = (vec![0.0; n], vec![0.0; n]);
        LinearOperator::apply(&csr, cpu, &x, &mut want).unwrap();
        cpu.element_product(&lma, &kelem, &x, &mut got).unwrap();
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(scale > 0.0 && diff <= 1e-13 * scale, "{label}: product {diff:e} of {scale:e}");
        for (r, &f) in setup.fixed.iter().enumerate().filter(|(_, f)| **f) {
            assert!(f && got[r] == x[r], "{label}: fixed row {r}");
        }
        let mut d = vec![0.0; n];
        cpu.element_diagonal(&lma, &kelem, &mut d).unwrap();
        for (r, &p) in setup.diag_pos.iter().enumerate() {
            assert!((d[r] - csr.val[p as usize]).abs() <= 1e-13 * scale, "{label}: diagonal of row {r}");
        }
    }

    #[test]
    fn element_matrices_apply_as_the_assembled_tangent() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let half = BoundaryPart::at("x < 1/2", |c| c[0] < 0.5);
        let robin = BoundaryPart::at("x > 1/2", |c| c[0] > 0.5);
        // P1, P2 triangles and Q2 quadrilaterals with a Robin term (3 to 9 entries a row)
        let spaces = [
            Space::simplex(&SimplexBox::unstructured(2, 5, 3).build().unwrap(), 1).unwrap(),
            Space::simplex(&SimplexBox::unstructured(2, 4, 3).build().unwrap(), 2).unwrap(),
            Space::tensor(&BoxMesh::unstructured(2, 4, 3).build().unwrap(), 2).unwrap(),
        ];
        for s in &spaces {
            let aux: Vec<f64> = random(2 * s.n_dofs, 3).iter().map(|v| v + 2.0).collect();
            let bcs = Constraints::none(s, 1).dirichlet(s, &half, |_, u| u[0] = 1.0).unwrap();
            let setup = Setup::<Radiation>::constrained(&cpu, s, Aux::Nodal(&aux), &bcs, None).unwrap().with_boundary_term(s, &robin).unwrap();
            compare(&cpu, &setup, &format!("radiation {:?} p = {}", s.shape, s.degree));
        }
        // vector fields: P2 tetrahedra (30 entries a row), Q1 hexahedra (24)
        let spaces = [
            Space::simplex(&SimplexBox::unstructured(3, 2, 3).build().unwrap(), 2).unwrap(),
            Space::tensor(&BoxMesh::unstructured(3, 3, 3).build().unwrap(), 1).unwrap(),
        ];
        for s in &spaces {
            let cells: Vec<f64> = (0..s.n_cells()).flat_map(|_| [1.0, 0.5]).collect();
            let bcs = Constraints::none(s, 3).dirichlet(s, &half, |_, u| u.fill(0.0)).unwrap();
            let setup = Setup::<Elasticity>::constrained(&cpu, s, Aux::Cell(&cells), &bcs, None).unwrap();
            compare(&cpu, &setup, &format!("elasticity {:?} p = {}", s.shape, s.degree));
        }
        // the higher tensor degrees: Q3 scalar fields, Q2 and Q3 vector fields
        let tensor = |dim: usize, n: usize, p: usize| Space::tensor(&BoxMesh::unstructured(dim, n, 3).build().unwrap(), p).unwrap();
        for s in [tensor(2, 3, 3), tensor(3, 2, 3)] {
            let aux: Vec<f64> = random(2 * s.n_dofs, 4).iter().map(|v| v + 2.0).collect();
            let bcs = Constraints::none(&s, 1).dirichlet(&s, &half, |_, u| u[0] = 0.0).unwrap();
            let setup = Setup::<Poisson>::constrained(&cpu, &s, Aux::Nodal(&aux), &bcs, None).unwrap();
            compare(&cpu, &setup, &format!("poisson {:?} p = {}", s.shape, s.degree));
        }
        for s in [tensor(2, 3, 2), tensor(2, 3, 3), tensor(3, 2, 2)] {
            let cells: Vec<f64> = (0..s.n_cells()).flat_map(|_| [1.0, 0.5]).collect();
            let bcs = Constraints::none(&s, s.dim()).dirichlet(&s, &half, |_, u| u.fill(0.0)).unwrap();
            let setup = Setup::<Elasticity>::constrained(&cpu, &s, Aux::Cell(&cells), &bcs, None).unwrap();
            compare(&cpu, &setup, &format!("elasticity {:?} p = {}", s.shape, s.degree));
        }
    }

    /// The partially assembled tangent at a random state of entries up to
    /// `size` against the assembled one: product (fixed rows kept) and
    /// diagonal, every value finite.
    fn compare_partial<K: Kernels<f64> + 'static>(cpu: &CpuBackend, setup: &Setup<K>, size: f64, label: &str) {
        let n = setup.n_rows();
        let state = cpu.prepare(setup, Some(SpmvFormat::Csr), Scatter::Atomic).unwrap();
        let mut ue = vec![0.0; setup.gather.len()];
        let u: Vec<f64> = random(n, 1).iter().map(|v| size * v).collect();
        cpu.gather(&state, &u, &mut ue).unwrap();
        let mut kelem = vec![0.0; setup.entry_len()];
        cpu.elements(&state, true, &ue, &mut kelem).unwrap();
        let mut csr = (*setup.csr).clone();
        cpu.assemble(&state, true, &kelem, &mut csr.val).unwrap();
        let v = &setup.physics.variant;
        let mut g = vec![0.0; setup.physics.n_cells * crate::operator::pointwise::partial::points_per_cell(v)];
        cpu.points(&state, &ue, &mut g).unwrap();
        // the element matrices from the point data are the element kernels'
        let t = crate::operator::pointwise::partial::Tables1d::new(v).unwrap();
        let from_points = crate::operator::pointwise::partial::elements_cpu(cpu, &t, v, &g).unwrap();
        let kscale = kelem.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let kdiff = from_points.iter().zip(&kelem).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(from_points.len() == setup.physics.n_cells * v.n_local().pow(2) && kdiff <= 1e-12 * kscale, "{label}: element matrices {kdiff:e} of {kscale:e}");
        let x = random(n, 2);
        let (mut want, mut got) = (vec![0.0; n], vec![0.0; n]);
        LinearOperator::apply(&csr, cpu, &x, &mut want).unwrap();
        cpu.partial_product(&state, &g, &x, &mut got).unwrap();
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(got.iter().chain(&want).all(|v| v.is_finite()), "{label}: not finite");
        assert!(scale > 0.0 && diff <= 1e-12 * scale, "{label}: product {diff:e} of {scale:e}");
        assert!(setup.fixed.iter().any(|&f| f) && setup.fixed.iter().zip(&got).zip(&x).all(|((&f, g), x)| !f || g == x), "{label}: fixed rows");
        let mut d = vec![0.0; n];
        cpu.partial_diagonal(&state, &g, &mut d).unwrap();
        for (r, &p) in setup.diag_pos.iter().enumerate() {
            assert!(d[r].is_finite() && (d[r] - csr.val[p as usize]).abs() <= 1e-12 * scale, "{label}: diagonal of row {r}: {} vs {}", d[r], csr.val[p as usize]);
        }
    }

    /// Partial assembly applies as the assembled tangent and has its
    /// diagonal and element matrices: every term of the Jacobian (g3 alone, g0 with g3, vector
    /// fields coupling their components, a nonlinear one) on distorted
    /// quadrilaterals and hexahedra of degree 1 to 3, part of the boundary
    /// held; simplices and a preconditioner that needs the matrix are
    /// refused.
    #[test]
    fn partial_assembly_applies_as_the_assembled_tangent() {
        use fem_kernels::physics::NeoHookean;
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let half = BoundaryPart::at("x < 1/2", |c| c[0] < 0.5);
        let tensor = |dim: usize, n: usize, p: usize| Space::tensor(&BoxMesh::unstructured(dim, n, 3).build().unwrap(), p).unwrap();
        let nodal = |s: &Space, seed| -> Vec<f64> { random(2 * s.n_dofs, seed).iter().map(|v| v + 2.0).collect() };
        for s in [tensor(2, 4, 1), tensor(2, 3, 3), tensor(3, 3, 1), tensor(3, 2, 2), tensor(3, 2, 3)] {
            let bcs = Constraints::none(&s, 1).dirichlet(&s, &half, |_, u| u[0] = 0.0).unwrap();
            let setup = Setup::<Poisson>::constrained(&cpu, &s, Aux::Nodal(&nodal(&s, 4)), &bcs, None).unwrap();
            compare_partial(&cpu, &setup, 1.0, &format!("poisson {:?} p = {}", s.shape, s.degree));
        }
        for s in [tensor(2, 3, 2), tensor(3, 2, 2)] {
            let bcs = Constraints::none(&s, 1).dirichlet(&s, &half, |_, u| u[0] = 1.0).unwrap();
            let setup = Setup::<Radiation>::constrained(&cpu, &s, Aux::Nodal(&nodal(&s, 5)), &bcs, None).unwrap();
            compare_partial(&cpu, &setup, 1.0, &format!("radiation {:?} p = {}", s.shape, s.degree));
        }
        for s in [tensor(2, 3, 3), tensor(3, 3, 1), tensor(3, 2, 2)] {
            let cells: Vec<f64> = (0..s.n_cells()).flat_map(|_| [1.0, 0.5]).collect();
            let bcs = Constraints::none(&s, s.dim()).dirichlet(&s, &half, |_, u| u.fill(0.0)).unwrap();
            let setup = Setup::<Elasticity>::constrained(&cpu, &s, Aux::Cell(&cells), &bcs, None).unwrap();
            compare_partial(&cpu, &setup, 1.0, &format!("elasticity {:?} p = {}", s.shape, s.degree));
            if s.degree == 1 {
                let setup = setup.with_physics::<NeoHookean>(&s, Aux::Cell(&cells)).unwrap();
                compare_partial(&cpu, &setup, 0.02, &format!("neo-Hookean {:?}", s.shape));
            }
        }
        let tri = Space::simplex(&SimplexBox::unstructured(2, 4, 3).build().unwrap(), 2).unwrap();
        let e = Assembly::Partial.resolve(&Setup::<MinimalSurface>::new(&cpu, &tri).unwrap(), Precond::Jacobi, Precision::F64, SpmvFormat::Csr, false).unwrap_err().to_string();
        assert!(e.contains("quadrilaterals or hexahedra"), "{e}");
        let q2 = tensor(2, 3, 2);
        let setup = Setup::<Poisson>::with_aux(&cpu, &q2, Aux::Nodal(&nodal(&q2, 6))).unwrap();
        let e = Assembly::Partial.resolve(&setup, Precond::Ssor, Precision::F64, SpmvFormat::Csr, false).unwrap_err().to_string();
        assert!(e.contains("Jacobi"), "{e}");
        assert_eq!(Assembly::Partial.resolve(&setup, Precond::Jacobi, Precision::F64, SpmvFormat::Csr, false).unwrap(), Storage::Partial);
        // Newton reaches the assembled tangent's solution in as many updates
        let s = tensor(3, 3, 2);
        let bcs = Constraints::none(&s, 1).dirichlet(&s, &half, |_, u| u[0] = 1.0).unwrap();
        let setup = Setup::<Radiation>::constrained(&cpu, &s, Aux::Nodal(&nodal(&s, 7)), &bcs, None).unwrap();
        let o = NewtonOptions { assembly: Assembly::Sparse(SpmvFormat::Csr), rtol: 1e-10, krylov_rtol: 1e-12, ..Default::default() };
        let (want, a) = solve(&cpu, &setup, &bcs.initial(), &o, &mut |_| {}).unwrap();
        let (got, b) = solve(&cpu, &setup, &bcs.initial(), &NewtonOptions { assembly: Assembly::Partial, ..o }, &mut |_| {}).unwrap();
        assert!(a.converged && b.converged && a.steps.len() == b.steps.len() && b.kernels.contains("partially assembled"), "{}: {:?}", b.kernels, b.residuals);
        let diff = got.iter().zip(&want).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(diff < 1e-9, "Newton: {diff:e}");
    }

    /// R(v) on the CPU, the residual's physics part at the L-vector `v`.
    fn residual_at<K: Kernels<f64> + 'static>(cpu: &CpuBackend, state: &<CpuBackend as NewtonOps>::State, setup: &Setup<K>, v: &[f64]) -> Vec<f64> {
        let mut ue = vec![0.0; setup.gather.len()];
        cpu.gather(state, &v.to_vec(), &mut ue).unwrap();
        let mut relem = vec![0.0; padded(setup.gather.len(), Scatter::Atomic)];
        cpu.elements(state, false, &ue, &mut relem).unwrap();
        let mut r = vec![0.0; setup.n_rows()];
        cpu.assemble(state, false, &relem, &mut r).unwrap();
        r
    }

    /// The partially assembled tangent at a state of entries up to `size`
    /// against the residual's derivative along a direction zero on the
    /// fixed rows: `R(x) − R(0)` where the physics is linear (`size` 0),
    /// a central difference of step 10⁻⁶ otherwise; the diagonal against
    /// the product on unit vectors of some rows; fixed rows kept.
    fn compare_partial_with_residuals<K: Kernels<f64> + 'static>(cpu: &CpuBackend, setup: &Setup<K>, size: f64, label: &str) {
        let n = setup.n_rows();
        let state = cpu.prepare(setup, None, Scatter::Atomic).unwrap();
        let u: Vec<f64> = random(n, 1).iter().zip(&setup.fixed).map(|(v, &f)| if f { 0.0 } else { size * v }).collect();
        let mut ue = vec![0.0; setup.gather.len()];
        cpu.gather(&state, &u, &mut ue).unwrap();
        let v = &setup.physics.variant;
        let mut g = vec![0.0; setup.physics.n_cells * crate::operator::pointwise::partial::points_per_cell(v)];
        cpu.points(&state, &ue, &mut g).unwrap();
        let x = random(n, 2);
        let free: Vec<f64> = x.iter().zip(&setup.fixed).map(|(&x, &f)| if f { 0.0 } else { x }).collect();
        let mut got = vec![0.0; n];
        cpu.partial_product(&state, &g, &x, &mut got).unwrap();
        let (want, tol): (Vec<f64>, f64) = if size == 0.0 {
            let (r1, r0) = (residual_at(cpu, &state, setup, &free), residual_at(cpu, &state, setup, &u));
            (r1.iter().zip(&r0).map(|(a, b)| a - b).collect(), 1e-11)
        } else {
            let h = 1e-6;
            let shifted = |s: f64| -> Vec<f64> { u.iter().zip(&free).map(|(u, x)| u + s * x).collect() };
            let (up, down) = (residual_at(cpu, &state, setup, &shifted(h)), residual_at(cpu, &state, setup, &shifted(-h)));
            (up.iter().zip(&down).map(|(a, b)| (a - b) / (2.0 * h)).collect(), 1e-7)
        };
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = (0..n).filter(|&r| !setup.fixed[r]).fold(0.0f64, |m, r| m.max((got[r] - want[r]).abs()));
        assert!(got.iter().all(|v| v.is_finite()) && scale > 0.0 && diff <= tol * scale, "{label}: product {diff:e} of {scale:e}");
        assert!(setup.fixed.iter().any(|&f| f) && setup.fixed.iter().zip(&got).zip(&x).all(|((&f, g), x)| !f || g == x), "{label}: fixed rows");
        let mut d = vec![0.0; n];
        cpu.partial_diagonal(&state, &g, &mut d).unwrap();
        let rows: Vec<usize> = (0..n).filter(|&r| !setup.fixed[r]).step_by(n / 7).collect();
        for r in rows {
            let mut e = vec![0.0; n];
            e[r] = 1.0;
            cpu.partial_product(&state, &g, &e, &mut got).unwrap();
            assert!((d[r] - got[r]).abs() <= 1e-12 * scale.max(d[r].abs()), "{label}: diagonal of row {r}: {} vs {}", d[r], got[r]);
        }
    }

    /// From Q4 to Q8, where element matrices cost too much to compare
    /// against (`n_local² · nq` a cell), partial assembly of every shipped
    /// hexahedral physics applies as the residual's derivative, with that
    /// diagonal: distorted cells where the pattern stays small, part of
    /// the boundary held.
    #[test]
    fn partial_assembly_to_q8_is_the_residuals_derivative() {
        use fem_kernels::physics::NeoHookean;
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let half = BoundaryPart::at("x < 1/2", |c| c[0] < 0.5);
        let hex = |n: usize, p: usize| Space::tensor(&BoxMesh::unstructured(3, n, 3).build().unwrap(), p).unwrap();
        for p in 4..=8 {
            let s = hex(2, p);
            let aux: Vec<f64> = random(2 * s.n_dofs, 4).iter().map(|v| v + 2.0).collect();
            let bcs = Constraints::none(&s, 1).dirichlet(&s, &half, |_, u| u[0] = 0.0).unwrap();
            let setup = Setup::<Poisson>::constrained(&cpu, &s, Aux::Nodal(&aux), &bcs, None).unwrap();
            compare_partial_with_residuals(&cpu, &setup, 0.0, &format!("poisson Q{p}"));
            // vector fields: two cells a side while the pattern is small
            let s = hex(if p <= 5 { 2 } else { 1 }, p);
            let cells: Vec<f64> = (0..s.n_cells()).flat_map(|c| [1.0 + 0.1 * c as f64, 0.5]).collect();
            let bcs = Constraints::none(&s, 3).dirichlet(&s, &half, |_, u| u.fill(0.0)).unwrap();
            let setup = Setup::<Elasticity>::constrained(&cpu, &s, Aux::Cell(&cells), &bcs, None).unwrap();
            compare_partial_with_residuals(&cpu, &setup, 0.0, &format!("elasticity Q{p}"));
            let setup = setup.with_physics::<NeoHookean>(&s, Aux::Cell(&cells)).unwrap();
            // displacements small against the nodes' spacing (∼ 1 / (n p²)), so
            // that no point inverts
            compare_partial_with_residuals(&cpu, &setup, 0.01 / (p * p) as f64, &format!("neo-Hookean Q{p}"));
        }
    }

    /// A stationary solve whose tangent is partially assembled (asked
    /// for, or `auto`'s pick on CPU Q3) is set up without the assembled
    /// tangent's pattern and reaches the solution of the set-up with it;
    /// another storage on such a set-up is an error; a time-dependent
    /// solve, a preconditioner that needs the matrix, and `auto` at Q2 on
    /// the CPU keep the pattern.
    #[test]
    fn partial_solves_are_set_up_without_the_pattern() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let half = BoundaryPart::at("x < 1/2", |c| c[0] < 0.5);
        let tensor = |p: usize| Space::tensor(&BoxMesh::unstructured(3, 3, 3).build().unwrap(), p).unwrap();
        let (q3, q2) = (tensor(3), tensor(2));
        let aux = |s: &Space| -> Vec<f64> { random(2 * s.n_dofs, 4).iter().map(|v| v + 2.0).collect() };
        let bcs = |s: &Space| Constraints::none(s, 1).dirichlet(s, &half, |_, u| u[0] = 1.0).unwrap();
        let partial = NewtonOptions { assembly: Assembly::Partial, rtol: 1e-10, krylov_rtol: 1e-12, ..Default::default() };
        let made = |s: &Space, o: &NewtonOptions, stationary: bool| Setup::<Poisson>::for_newton_on(&cpu, &cpu, s, Aux::Nodal(&aux(s)), &bcs(s), None, o, stationary).unwrap();
        let lean = made(&q3, &partial, true);
        assert!(!lean.has_pattern() && lean.csr.nnz() == 0 && lean.diag_pos.is_empty());
        let full = made(&q3, &partial, false);
        assert!(full.has_pattern() && full.csr.nnz() > 0);
        let (want, a) = solve(&cpu, &full, &bcs(&q3).initial(), &partial, &mut |_| {}).unwrap();
        let (got, b) = solve(&cpu, &lean, &bcs(&q3).initial(), &partial, &mut |_| {}).unwrap();
        let diff = got.iter().zip(&want).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(a.converged && b.converged && a.steps.len() == b.steps.len() && diff < 1e-12, "{diff:e}");
        let auto = NewtonOptions { assembly: Assembly::Auto, ..partial };
        assert!(!made(&q3, &auto, true).has_pattern());
        assert!(made(&q2, &auto, true).has_pattern());
        assert!(made(&q3, &NewtonOptions { precond: Precond::Ssor, ..auto }, true).has_pattern());
        let e = solve(&cpu, &lean, &bcs(&q3).initial(), &NewtonOptions { assembly: Assembly::Sparse(SpmvFormat::Csr), ..partial }, &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("without the assembled tangent's pattern"), "{e}");
    }

    /// The matrix-free tangent applies as the partially assembled one on
    /// the backend's L-vectors (fixed rows the identity, their columns
    /// left out) with the same diagonal, and a nonlinear solve with it is
    /// set up without the pattern and reaches partial assembly's solution
    /// in the same updates.
    #[test]
    fn matrix_free_newton_equals_partial_assembly() {
        use fem_kernels::physics::NeoHookean;
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let half = BoundaryPart::at("x < 1/2", |c| c[0] < 0.5);
        for p in [1, 2] {
            let s = Space::tensor(&BoxMesh::unstructured(3, 2, 3).build().unwrap(), p).unwrap();
            let cells: Vec<f64> = (0..s.n_cells()).flat_map(|c| [1.0 + 0.1 * c as f64, 0.5]).collect();
            let bcs = Constraints::none(&s, 3).dirichlet(&s, &half, |x, u| u.copy_from_slice(&[0.0, 0.0, 0.04 * (3.0 * x[1]).sin()])).unwrap();
            let partial = NewtonOptions { assembly: Assembly::Partial, rtol: 1e-10, krylov_rtol: 1e-12, ..Default::default() };
            let free = NewtonOptions { assembly: Assembly::MatrixFree, ..partial };
            let setup = |o: &NewtonOptions| Setup::<NeoHookean>::for_newton_on(&cpu, &cpu, &s, Aux::Cell(&cells), &bcs, None, o, true).unwrap();
            let (lean, reference) = (setup(&free), setup(&partial));
            assert!(!lean.has_pattern(), "Q{p}");
            let state = cpu.prepare(&lean, None, Scatter::Atomic).unwrap();
            let n = lean.n_rows();
            let mut ue = vec![0.0; lean.gather.len()];
            let u: Vec<f64> = random(n, 5).iter().map(|v| 0.01 * v).collect();
            cpu.gather(&state, &u, &mut ue).unwrap();
            let mut g = vec![0.0; Storage::Partial.values(&lean, Scatter::Atomic)];
            cpu.points(&state, &ue, &mut g).unwrap();
            let x = random(n, 6);
            let (mut want, mut got) = (vec![0.0; n], vec![0.0; n]);
            cpu.partial_product(&state, &g, &x, &mut want).unwrap();
            cpu.free_product(&state, &ue, &x, &mut got).unwrap();
            let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(diff < 1e-12 * scale && lean.fixed.iter().zip(&got).zip(&x).all(|((&f, g), x)| !f || g == x), "Q{p}: product {diff:e}");
            cpu.partial_diagonal(&state, &g, &mut want).unwrap();
            cpu.free_diagonal(&state, &ue, &mut got).unwrap();
            let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(diff < 1e-12 * scale, "Q{p}: diagonal {diff:e}");
            let (want, a) = solve(&cpu, &reference, &bcs.initial(), &partial, &mut |_| {}).unwrap();
            let (got, b) = solve(&cpu, &lean, &bcs.initial(), &free, &mut |_| {}).unwrap();
            let diff = got.iter().zip(&want).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
            assert!(a.converged && b.converged && a.steps.len() == b.steps.len() && a.steps.len() > 2 && diff < 1e-10, "Q{p}: {diff:e}, {:?} {:?}", a.residuals, b.residuals);
            assert!(b.kernels.contains("matrix-free"), "{}", b.kernels);
        }
    }

    /// Newton on a nonlinear problem reaches the same solution in the same
    /// updates whichever way the tangent is stored.
    #[test]
    fn every_storage_gives_the_same_newton_solution() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let space = Space::simplex(&SimplexBox::unstructured(2, 6, 2).build().unwrap(), 2).unwrap();
        let setup = Setup::<MinimalSurface>::new(&cpu, &space).unwrap();
        let start: Vec<f64> = space.dof_coords.iter().zip(&space.boundary).map(|(x, &b)| if b { x[0] * x[1] } else { 0.0 }).collect();
        let o = NewtonOptions { assembly: Assembly::Sparse(SpmvFormat::Csr), ..Default::default() };
        let (want, reference) = solve(&cpu, &setup, &start, &o, &mut |_| {}).unwrap();
        let formats = [SpmvFormat::Ell, SpmvFormat::EllT, SpmvFormat::K1, SpmvFormat::K2];
        for assembly in formats.map(Assembly::Sparse).into_iter().chain([Assembly::Lma]) {
            let o = NewtonOptions { assembly, ..o };
            let (u, r) = solve(&cpu, &setup, &start, &o, &mut |_| {}).unwrap();
            assert!(r.converged && r.steps.len() == reference.steps.len(), "{assembly}: {:?}", r.residuals);
            assert!(r.kernels.contains(if assembly == Assembly::Lma { "element matrices" } else { "assembled in" }), "{}", r.kernels);
            let diff = u.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(diff < 1e-9, "{assembly}: {diff:e}");
        }
    }

    /// Auto takes element matrices only where they read at most
    /// LMA_BYTES_FACTOR of the assembled bytes (not Q2 hexahedra, whose
    /// element matrices are fewer bytes but not by that much), never with
    /// SSOR, nor where they are more bytes (P1 triangles); partial
    /// assembly from Q2 with Jacobi in f64 where the backend takes it; element
    /// matrices with another preconditioner than Jacobi, and formats that
    /// renumber rows, are errors.
    #[test]
    fn auto_follows_the_bytes_and_bad_pairs_are_errors() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let q2 = Space::tensor(&BoxMesh::unstructured(3, 6, 1).build().unwrap(), 2).unwrap();
        let p1 = Space::simplex(&SimplexBox::unstructured(2, 6, 1).build().unwrap(), 1).unwrap();
        let coefficients = |s: &Space| -> Vec<f64> { (0..s.n_dofs).flat_map(|_| [1.0, 0.0]).collect() };
        let (high, low) = (
            Setup::<Poisson>::with_aux(&cpu, &q2, Aux::Nodal(&coefficients(&q2))).unwrap(),
            Setup::<Poisson>::with_aux(&cpu, &p1, Aux::Nodal(&coefficients(&p1))).unwrap(),
        );
        let (lma, sparse) = product_bytes(&high);
        assert!(lma < sparse && !elements_are_faster(lma, sparse), "Q2 hexahedra: {lma} against {sparse}");
        assert!(elements_are_faster(40, 100) && !elements_are_faster(60, 100));
        let (lma, sparse) = product_bytes(&low);
        assert!(lma > sparse, "P1: {lma} against {sparse}");
        assert_eq!(Assembly::Auto.resolve(&high, Precond::Jacobi, Precision::F64, SpmvFormat::K2, false).unwrap(), Storage::Sparse(SpmvFormat::K2));
        assert_eq!(Assembly::Auto.resolve(&high, Precond::Ssor, Precision::F64, SpmvFormat::K2, false).unwrap(), Storage::Sparse(SpmvFormat::K2));
        assert_eq!(Assembly::Auto.resolve(&low, Precond::Jacobi, Precision::F64, SpmvFormat::Csr, false).unwrap(), Storage::Sparse(SpmvFormat::Csr));
        // on a backend that takes partial assembly: from Q2, with Jacobi in f64
        let q1 = Space::tensor(&BoxMesh::unstructured(3, 4, 1).build().unwrap(), 1).unwrap();
        let q1 = Setup::<Poisson>::with_aux(&cpu, &q1, Aux::Nodal(&coefficients(&q1))).unwrap();
        assert_eq!(Assembly::Auto.resolve(&high, Precond::Jacobi, Precision::F64, SpmvFormat::K2, true).unwrap(), Storage::Partial);
        // matrix-free for vector fields there
        let lame: Vec<f64> = (0..q2.n_cells()).flat_map(|_| [1.0, 0.5]).collect();
        let vector = Setup::<Elasticity>::with_aux(&cpu, &q2, Aux::Cell(&lame)).unwrap();
        assert_eq!(Assembly::Auto.resolve(&vector, Precond::Jacobi, Precision::F64, SpmvFormat::K2, true).unwrap(), Storage::MatrixFree);
        assert_eq!(Assembly::Auto.resolve(&vector, Precond::Jacobi, Precision::F64, SpmvFormat::K2, false).unwrap(), Storage::Sparse(SpmvFormat::K2));
        assert_eq!(Assembly::Auto.resolve(&high, Precond::Ssor, Precision::F64, SpmvFormat::K2, true).unwrap(), Storage::Sparse(SpmvFormat::K2));
        assert_eq!(Assembly::Auto.resolve(&high, Precond::Jacobi, Precision::F32, SpmvFormat::K2, true).unwrap(), Storage::Sparse(SpmvFormat::K2));
        assert_eq!(Assembly::Auto.resolve(&q1, Precond::Jacobi, Precision::F64, SpmvFormat::K2, true).unwrap(), Storage::Sparse(SpmvFormat::K2));
        assert_eq!(Assembly::Auto.resolve(&low, Precond::Jacobi, Precision::F64, SpmvFormat::Csr, true).unwrap(), Storage::Sparse(SpmvFormat::Csr));
        // the CPU takes it from Q3 on tensor cells only
        let q3 = Space::tensor(&BoxMesh::unstructured(3, 2, 1).build().unwrap(), 3).unwrap();
        let q3 = Setup::<Poisson>::with_aux(&cpu, &q3, Aux::Nodal(&coefficients(&q3))).unwrap();
        let taken = [&q1, &high, &q3, &low].map(|s| super::super::NewtonOps::auto_partial(&cpu, &s.physics.variant));
        assert_eq!(taken, [false, false, true, false]);
        let e = Assembly::Lma.resolve(&high, Precond::Ssor, Precision::F64, SpmvFormat::K2, false).unwrap_err().to_string();
        assert!(e.contains("Jacobi"), "{e}");
        let e = Assembly::Sparse(SpmvFormat::K2r).resolve(&high, Precond::Jacobi, Precision::F64, SpmvFormat::K2, false).unwrap_err().to_string();
        assert!(e.contains("renumbers"), "{e}");
        let o = NewtonOptions { assembly: Assembly::Sparse(SpmvFormat::Cusparse), ..Default::default() };
        assert!(solve(&cpu, &low, &vec![0.0; low.n_rows()], &o, &mut |_| {}).is_err());
    }

    /// Sums by SpMV with the gather matrices equal the atomic (row sum,
    /// serial scatter) ones: the residual with a load, fixed rows holding
    /// values and a Robin term's facets, and the tangent with its unit
    /// fixed diagonals; Newton then reaches the same solution in the same
    /// updates on an assembled tangent and on element matrices, and the
    /// colouring is refused.
    #[test]
    fn sums_by_spmv_equal_the_atomic_ones() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let s = Space::simplex(&SimplexBox::unstructured(2, 5, 3).build().unwrap(), 2).unwrap();
        let aux: Vec<f64> = random(2 * s.n_dofs, 3).iter().map(|v| v + 2.0).collect();
        let bcs = Constraints::none(&s, 1).dirichlet(&s, &BoundaryPart::at("x < 1/2", |c| c[0] < 0.5), |_, u| u[0] = 1.0).unwrap();
        let load = crate::space::Load::zero(&s, 1).source(&s, |x, f| f[0] = 1.0 + x[0]);
        let setup = Setup::<Radiation>::constrained(&cpu, &s, Aux::Nodal(&aux), &bcs, Some(&load)).unwrap().with_boundary_term(&s, &BoundaryPart::at("x > 1/2", |c| c[0] > 0.5)).unwrap();
        let (atomic, spmv) = (cpu.prepare(&setup, Some(SpmvFormat::Csr), Scatter::Atomic).unwrap(), cpu.prepare(&setup, Some(SpmvFormat::Csr), Scatter::Spmv).unwrap());
        let mut ue = vec![0.0; setup.gather.len()];
        cpu.gather(&atomic, &random(setup.n_rows(), 5), &mut ue).unwrap();
        for matrix in [false, true] {
            let (len, rows) = if matrix { (setup.entry_len(), setup.csr.nnz()) } else { (setup.gather.len(), setup.n_rows()) };
            let mut elem = vec![0.0; padded(len, Scatter::Spmv)];
            cpu.elements(&atomic, matrix, &ue, &mut elem).unwrap();
            let (mut want, mut got) = (vec![0.0; rows], vec![f64::NAN; rows]);
            cpu.assemble(&atomic, matrix, &elem, &mut want).unwrap();
            if matrix {
                // the cells' parallel scatter by colour against one thread's
                let mut serial = setup.tangent_base();
                crate::operator::pointwise::scatter_add(setup.entry_pos(), &elem[..setup.entry_len()], &mut serial);
                let diff = serial.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(diff <= 1e-13 * serial.iter().fold(0.0f64, |m, v| m.max(v.abs())), "coloured scatter: {diff:e}");
            }
            cpu.assemble(&spmv, matrix, &elem, &mut got).unwrap();
            let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let diff = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(scale > 0.0 && diff <= 1e-13 * scale, "tangent {matrix}: {diff:e} of {scale:e}");
        }
        let start = bcs.initial();
        for assembly in [Assembly::Sparse(SpmvFormat::K2), Assembly::Lma] {
            let o = NewtonOptions { assembly, rtol: 1e-12, krylov_rtol: 1e-13, ..Default::default() };
            let (want, a) = solve(&cpu, &setup, &start, &o, &mut |_| {}).unwrap();
            let (got, b) = solve(&cpu, &setup, &start, &NewtonOptions { scatter: Scatter::Spmv, ..o }, &mut |_| {}).unwrap();
            assert!(a.converged && b.converged && a.steps.len() == b.steps.len() && b.kernels.contains("SpMV"), "{assembly}: {}", b.kernels);
            let diff = got.iter().zip(&want).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
            assert!(diff < 1e-10, "{assembly}: {diff:e}");
        }
        let e = solve(&cpu, &setup, &start, &NewtonOptions { scatter: Scatter::Colour, ..Default::default() }, &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("colour"), "{e}");
    }

    #[test]
    fn names_parse_back() {
        for a in [Assembly::Auto, Assembly::Lma, Assembly::Partial, Assembly::Sparse(SpmvFormat::K2), Assembly::Sparse(SpmvFormat::Cusparse)] {
            assert_eq!(a.to_string().parse::<Assembly>().unwrap(), a);
        }
        assert!("lmx".parse::<Assembly>().unwrap_err().contains("auto, lma"));
    }
}
