//! Element stiffness matrices and load vectors of every cell, computed in
//! parallel on the CPU a cell per task step ([`each_cell`]), and stored in
//! the transposed LMA layout the GPU kernels write too.

use super::cell_data::CellData;
use crate::sparse::SharedOut;
use super::tables::RefTables;
use crate::{CpuBackend, Error, Result, Scalar};
use fem_core::poisson::{Coefficients, Scaled, SinePoisson};
use fem_kernels::cells;
use fem_kernels::sparse::{is_free, sym_index};
use fem_kernels::with_element;
use rayon::prelude::*;

pub use fem_kernels::cells::Strategy as LocalVariant;

/// Element matrices (`vals[(i·nb + j)·ne + e]`, or packed symmetric
/// `vals[sym(i, j)·ne + e]`) and loads (`load[i·ne + e]`).
#[derive(Clone, Debug)]
pub struct ElementMatrices<T> {
    /// Basis functions per cell (each matrix is `nb × nb`).
    pub nb: usize,
    /// Cells.
    pub ne: usize,
    /// Whether only the upper triangle is stored, `nb (nb + 1) / 2` entries per cell.
    pub symmetric: bool,
    /// Element matrix entries, cell index fastest (see above).
    pub vals: Vec<T>,
    /// Element load vectors, `load[i·ne + e]`.
    pub load: Vec<T>,
}

impl<T: Scalar> ElementMatrices<T> {
    /// Entry (i, j) of cell `e`.
    pub fn get(&self, e: usize, i: usize, j: usize) -> T {
        let k = if self.symmetric { sym_index(i.min(j), i.max(j), self.nb) } else { i * self.nb + j };
        self.vals[k * self.ne + e]
    }
}

/// Quadrature points per direction for degree `p`: exact for the stiffness
/// of affine elements, one more than needed for the load.
pub fn quadrature_points(p: usize) -> usize {
    p + 2
}

/// The unsupported-degree error of the specialised kernels.
pub fn unsupported(dim: usize, p: usize) -> Error {
    Error::InvalidArgument(format!("degree {p} in {dim}D has no specialised kernels (2D: 1..=6, 3D: 1..=4)"))
}

/// Assembles every cell's element matrix and load of the sine problem on
/// the CPU.
pub fn assemble<T: Scalar>(cpu: &CpuBackend, cd: &CellData<T>, symmetric: bool) -> Result<ElementMatrices<T>> {
    assemble_with(cpu, cd, symmetric, &SinePoisson)
}

/// Assembles every cell's element matrix and load for coefficients `coeff`
/// ([`each_cell`]'s contraction: the GPU kernels' local variants, reuse or
/// redundant compute, are not a CPU choice).
pub fn assemble_with<T: Scalar, C: Coefficients<T, 2> + Coefficients<T, 3> + Sync>(
    cpu: &CpuBackend,
    cd: &CellData<T>,
    symmetric: bool,
    coeff: &C,
) -> Result<ElementMatrices<T>> {
    let (ne, nb) = (cd.ne, cd.nb);
    let len = if symmetric { nb * (nb + 1) / 2 } else { nb * nb };
    let mut vals = vec![T::ZERO; len * ne];
    let mut load = vec![T::ZERO; nb * ne];
    let (v, l) = (SharedOut(vals.as_mut_ptr()), SharedOut(load.as_mut_ptr()));
    let all: Vec<u32> = (0..ne as u32).collect();
    each_cell(cpu, cd, coeff, &[all], CELL_CHUNK, || (), |_, e, k, load| {
        let (v, l) = (v, l);
        let rows = |i: usize| cd.map[i * ne + e];
        for i in 0..nb {
            let free_i = is_free(rows(i));
            // SAFETY: cell e writes only its own strided entries.
            unsafe { *l.0.add(i * ne + e) = if free_i { load[i] } else { T::ZERO } };
            for j in 0..nb {
                let kij = if free_i && is_free(rows(j)) { k[i * nb + j] } else { T::ZERO };
                let at = match symmetric {
                    true if j < i => continue,
                    true => sym_index(i, j, nb),
                    false => i * nb + j,
                };
                // SAFETY: as above.
                unsafe { *v.0.add(at * ne + e) = kij };
            }
        }
    })?;
    Ok(ElementMatrices { nb, ne, symmetric, vals, load })
}

/// Cells per task of [`each_cell`] where no task owns rows.
const CELL_CHUNK: usize = 64;

/// Hands `visit(scratch, e, k, load)` every cell `e` of `groups` with its
/// element matrix `k` (row-major, every entry, coupled or not) and load,
/// computed on the visiting core ([`cells::element_cpu`]). The groups run
/// one after another, the cells of a group in parallel tasks of `chunk`
/// cells with a `scratch` each: a group of blocks of `chunk` cells that
/// share no row across blocks ([`super::colouring::block_colours`]) lets
/// `visit` add into shared rows without atomics. An error names a cell
/// with a non-positive Jacobian determinant at a quadrature point.
#[allow(clippy::too_many_arguments)]
pub fn each_cell<T: Scalar, C: Coefficients<T, 2> + Coefficients<T, 3> + Sync, S>(
    cpu: &CpuBackend,
    cd: &CellData<T>,
    coeff: &C,
    groups: &[Vec<u32>],
    chunk: usize,
    scratch: impl Fn() -> S + Sync + Send,
    visit: impl Fn(&mut S, usize, &[T], &[T]) + Sync + Send,
) -> Result<()> {
    let tables = RefTables::<T>::new(cd.degree, quadrature_points(cd.degree));
    let tab = tables.view();
    let simd = wide_simd();
    let bad = with_element!(cd.dim, cd.degree, D, NB, QD => {
        let (grads, basis) = (gradient_table::<T, D, NB>(&tab), basis_table::<T, D, NB>(&tab));
        let (shape, weight) = map_tables::<T, D>(&tab);
        let map = cells::MapTables { shape: &shape, weight: &weight };
        let job = Job::<_, _, _, D, NB> { cd, map, grads: &grads, basis: &basis, coeff, visit: &visit };
        cpu.install(|| {
            groups.iter().find_map(|cells| {
                cells.par_chunks(chunk.max(1)).map_init(&scratch, |s, chunk| match simd {
                    // SAFETY: the features were detected on this machine
                    true => unsafe { job.chunk_wide::<QD, _>(chunk, s) },
                    false => job.chunk::<QD, _>(chunk, s, |a, b, c| a * b + c),
                }).find_any(Option::is_some).flatten()
            })
        })
    })
    .ok_or_else(|| unsupported(cd.dim, cd.degree))?;
    match bad {
        Some(e) => Err(Error::InvalidArgument(format!("cell {e} has a non-positive Jacobian at a quadrature point"))),
        None => Ok(()),
    }
}

/// What every task of [`each_cell`] shares, for cells of `D` dimensions
/// and `NB` basis functions.
struct Job<'a, T, C, V, const D: usize, const NB: usize> {
    cd: &'a CellData<T>,
    map: cells::MapTables<'a, T>,
    grads: &'a [[[T; NB]; D]],
    basis: &'a [[T; NB]],
    coeff: &'a C,
    visit: &'a V,
}

impl<T: Scalar, C: Coefficients<T, D>, V, const D: usize, const NB: usize> Job<'_, T, C, V, D, NB> {
    /// The cells of `chunk` in turn; the first with a non-positive
    /// Jacobian determinant. `mac` is `a · b + c` ([`cells::element_cpu`]).
    #[inline(always)]
    fn chunk<const QD: usize, S>(&self, chunk: &[u32], s: &mut S, mac: impl Fn(T, T, T) -> T + Copy) -> Option<usize>
    where
        V: Fn(&mut S, usize, &[T], &[T]),
    {
        let (mut k, mut load) = ([[T::ZERO; NB]; NB], [T::ZERO; NB]);
        // a plain loop: an iterator adaptor's fold would be a function of
        // its own, compiled without the caller's target features
        for &e in chunk {
            let e = e as usize;
            // SAFETY: `verts` holds every vertex of the cd.ne cells.
            let verts = unsafe { cells::vertices::<T, D>(e, self.cd.ne, self.cd.verts.as_ptr()) };
            let coeff = &Scaled { factor: self.cd.kappa[e], inner: self.coeff };
            let min_det = cells::element_cpu::<T, _, D, NB, QD>(self.map, self.grads, self.basis, &verts, coeff, &mut k, &mut load, mac);
            (self.visit)(s, e, k.as_flattened(), &load);
            if !(min_det > T::ZERO) {
                return Some(e);
            }
        }
        None
    }

    /// [`Job::chunk`] compiled for 256-bit vectors and FMA units: the
    /// contraction's axpys run four doubles wide, each multiply and add
    /// one fused instruction ([`Scalar::fused`]).
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA ([`wide_simd`]).
    #[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2,fma"))]
    unsafe fn chunk_wide<const QD: usize, S>(&self, chunk: &[u32], s: &mut S) -> Option<usize>
    where
        V: Fn(&mut S, usize, &[T], &[T]),
    {
        self.chunk::<QD, S>(chunk, s, T::fused)
    }
}

/// Whether this CPU runs [`Job::chunk_wide`].
fn wide_simd() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `g[q][a][i]`: derivative a of basis function i at quadrature point q on
/// the reference cell, the point-major table the CPU's contraction reads
/// with unit stride over the basis functions.
fn gradient_table<T: Scalar, const D: usize, const NB: usize>(tab: &fem_core::element::Tables<'_, T>) -> Vec<[[T; NB]; D]> {
    (0..fem_core::element::pow(tab.nq, D))
        .map(|q| {
            let cq = fem_core::element::split::<D>(q, tab.nq);
            let g: [[T; D]; NB] = std::array::from_fn(|i| tab.grad_at::<D>(&fem_core::element::split::<D>(i, tab.np), &cq));
            std::array::from_fn(|a| std::array::from_fn(|i| g[i][a]))
        })
        .collect()
}

/// `v[q][i]`: basis function i at quadrature point q on the reference
/// cell, point-major like [`gradient_table`].
fn basis_table<T: Scalar, const D: usize, const NB: usize>(tab: &fem_core::element::Tables<'_, T>) -> Vec<[T; NB]> {
    (0..fem_core::element::pow(tab.nq, D))
        .map(|q| {
            let cq = fem_core::element::split::<D>(q, tab.nq);
            std::array::from_fn(|i| tab.basis_at::<D>(&fem_core::element::split::<D>(i, tab.np), &cq))
        })
        .collect()
}

/// The cell map's shape functions and derivatives at the quadrature points
/// and the points' weights, laid out as [`cells::MapTables`] reads them:
/// each vertex's from the map of a cell whose vertices are all at the
/// origin but that one, at (1, …, 1) ([`geometry`]'s `x` and `J` are then
/// its shape function and derivatives, exactly).
///
/// [`geometry`]: fem_core::element::geometry
fn map_tables<T: Scalar, const D: usize>(tab: &fem_core::element::Tables<'_, T>) -> (Vec<T>, Vec<T>) {
    let nq = fem_core::element::pow(tab.nq, D);
    let mut shape = vec![T::ZERO; (1 << D) * (D + 1) * nq];
    let mut weight = vec![T::ZERO; nq];
    for (q, w) in weight.iter_mut().enumerate() {
        let (xi, wq) = tab.point_at::<D>(&fem_core::element::split::<D>(q, tab.nq));
        *w = wq;
        for v in 0..1 << D {
            let mut corner = [[T::ZERO; D]; fem_core::element::MAX_VERTICES];
            corner[v] = [T::ONE; D];
            let (x, jac) = fem_core::element::geometry::<T, D>(&corner, xi);
            shape[v * (D + 1) * nq + q] = x[0];
            for (b, &d) in jac[0].iter().enumerate() {
                shape[(v * (D + 1) + 1 + b) * nq + q] = d;
            }
        }
    }
    (shape, weight)
}

/// The global load vector: element loads summed into their (free) rows.
pub fn load_vector<T: Scalar>(cd: &CellData<T>, elems: &ElementMatrices<T>) -> Vec<T> {
    super::cell_data::sum_into_rows(&cd.map, cd.ne, cd.n_rows, &cd.fixed_rows, T::ZERO, |e, i| elems.load[i * cd.ne + e])
}

/// The diagonal of the operator the element matrices make (1 on fixed rows).
pub fn diagonal<T: Scalar>(cd: &CellData<T>, elems: &ElementMatrices<T>) -> Vec<T> {
    super::cell_data::sum_into_rows(&cd.map, cd.ne, cd.n_rows, &cd.fixed_rows, T::ONE, |e, i| elems.get(e, i, i))
}
