//! The Newton solver's operations on the CPU: the physics' generated CPU
//! variants on rayon; the residual's assembly and element matrices'
//! products sum each row's entries in parallel through the transposed
//! position map (the residual's [`Restriction`]), the tangent's assembly scatters the cells of one
//! colour in parallel (the boundary term's facets after them, serially), or both sum by SpMV with
//! the ELL-WARP gather matrices on rayon ([`Scatter::Spmv`]); the tangent
//! in any CPU sparse format or as element matrices, whose rows are the
//! per-item functions the GPU kernels apply.

use super::assembly::{gather_pattern, is_zero};
use super::{NewtonOps, Scatter, Setup};
use crate::sparse::SharedOut;
use crate::operator::pointwise::{scatter_add, FacetTerm, Pointwise};
use crate::space::Restriction;
use crate::sparse::device::prepare_cpu;
use crate::sparse::params::SpmvParams;
use crate::sparse::stats::RowStats;
use crate::sparse::warp::EllWarp;
use crate::sparse::{Spmv, SpmvFormat};
use crate::operator::pointwise::diagonal::diagonal_cpu;
use crate::operator::pointwise::partial::{apply_cpu_with, Tables1d};
use crate::space::restriction::SKIP;
use crate::{Backend, CpuBackend, Error, Result};
use fem_kernels::pointwise::{Kernels, Variant};
use rayon::prelude::*;
use fem_kernels::sparse::{element_diagonal, element_row_part};

/// `inv[r] = 1 / kflat[diag_pos[r]]`: the inverse diagonal of CSR values.
pub(crate) fn inverse_diagonal(diag_pos: &[u32], kflat: &[f64], inv: &mut [f64]) {
    for (i, &p) in inv.iter_mut().zip(diag_pos) {
        *i = 1.0 / kflat[p as usize];
    }
}

/// The cells of `setup` grouped by colour: cells of a group touch no
/// common row (the rows of their E-vector entries).
fn cell_colours<K: Kernels<f64>>(setup: &Setup<K>) -> Vec<Vec<u32>> {
    let nl = setup.physics.variant.n_local();
    let rows = setup.gather.iter().map(|&g| g as usize + 1).max().unwrap_or(0);
    crate::operator::colouring::colour_items(rows, setup.physics.n_cells, |c| setup.gather[c * nl..(c + 1) * nl].iter().copied())
}

impl CpuBackend {
    /// Adds the element tangents `elem` into `out` at their CSR positions:
    /// the cells group by group, a group's cells in parallel (they share
    /// no row), then the boundary term's facets on one thread.
    fn scatter_cells(&self, s: &CpuState, elem: &[f64], out: &mut [f64]) {
        let nl = s.variant.n_local();
        let (per_cell, cells) = (nl * nl, s.cell_len / nl.max(1));
        let to = SharedOut(out.as_mut_ptr());
        self.install(|| {
            for group in &s.colours {
                group.par_iter().for_each(|&c| {
                    let to = to;
                    let at = c as usize * per_cell..(c as usize + 1) * per_cell;
                    for (&p, &x) in s.entry_pos[at.clone()].iter().zip(&elem[at]) {
                        if p != u32::MAX {
                            // SAFETY: cells of one group write disjoint rows of `out`.
                            unsafe { *to.0.add(p as usize) += x };
                        }
                    }
                })
            }
        });
        let facets = cells * per_cell..s.entry_pos.len();
        scatter_add(&s.entry_pos[facets.clone()], &elem[facets], out);
    }
}

/// A part (cells or facets) of the physics, its type erased.
trait Part: Send + Sync {
    /// Element values from the part's E-vector.
    fn evaluate(&self, cpu: &CpuBackend, jacobian: bool, u: &[f64]) -> Result<Vec<f64>>;
    /// The time the pointwise functions see.
    fn set_time(&mut self, t: f64);
    /// The auxiliary fields the pointwise functions read.
    fn aux_mut(&mut self) -> &mut Vec<f64>;
    /// The same, to read.
    fn aux(&self) -> &Vec<f64>;
    /// Partial assembly's point data from the part's E-vector.
    fn points(&self, _: &CpuBackend, _: &[f64]) -> Result<Vec<f64>> {
        Err(Error::InvalidArgument("partial assembly covers the cells only".into()))
    }
    /// The Jacobian's matrix-free action on the cells' E-vectors.
    fn action(&self, _: &CpuBackend, _: &[f64], _: &(dyn Fn(usize) -> f64 + Sync), _: &mut [f64]) -> Result<()> {
        Err(Error::InvalidArgument("the matrix-free tangent covers the cells only".into()))
    }
    /// Its diagonal as an E-vector.
    fn free_diagonal(&self, _: &CpuBackend, _: &[f64]) -> Result<Vec<f64>> {
        Err(Error::InvalidArgument("the matrix-free tangent covers the cells only".into()))
    }
    /// The product of the facets' point data `h` ([`Part::points`]) on
    /// their E-vector.
    fn point_product(&self, _: &CpuBackend, _: &[f64], _: &(dyn Fn(usize) -> f64 + Sync), _: &mut [f64]) -> Result<()> {
        Err(Error::InvalidArgument("the cells' point data are applied by sum factorisation".into()))
    }
    /// Its diagonal as an E-vector.
    fn point_diagonal(&self, _: &CpuBackend, _: &[f64]) -> Result<Vec<f64>> {
        Err(Error::InvalidArgument("the cells' point data are applied by sum factorisation".into()))
    }
    /// Values of the facets' point data (0: no linearisation to keep).
    fn point_values(&self) -> usize {
        0
    }
}

impl<K: Kernels<f64>> Part for Pointwise<f64, K> {
    fn evaluate(&self, cpu: &CpuBackend, jacobian: bool, u: &[f64]) -> Result<Vec<f64>> {
        if jacobian {
            self.jacobian_cpu(cpu, u)
        } else {
            self.residual_cpu(cpu, u)
        }
    }
    fn set_time(&mut self, t: f64) {
        self.time = t;
    }
    fn aux_mut(&mut self) -> &mut Vec<f64> {
        &mut self.a
    }
    fn aux(&self) -> &Vec<f64> {
        &self.a
    }
    fn points(&self, cpu: &CpuBackend, u: &[f64]) -> Result<Vec<f64>> {
        self.points_cpu(cpu, u)
    }
    fn action(&self, cpu: &CpuBackend, u: &[f64], x_of: &(dyn Fn(usize) -> f64 + Sync), ye: &mut [f64]) -> Result<()> {
        self.action_cpu(cpu, u, &|k| x_of(k), ye)
    }
    fn free_diagonal(&self, cpu: &CpuBackend, u: &[f64]) -> Result<Vec<f64>> {
        self.free_diagonal_cpu(cpu, u)
    }
}

impl<K: Kernels<f64>> Part for FacetTerm<f64, K> {
    fn evaluate(&self, cpu: &CpuBackend, jacobian: bool, u: &[f64]) -> Result<Vec<f64>> {
        self.evaluate_cpu(cpu, jacobian, u)
    }
    fn set_time(&mut self, t: f64) {
        self.time = t;
    }
    fn aux_mut(&mut self) -> &mut Vec<f64> {
        &mut self.a
    }
    fn aux(&self) -> &Vec<f64> {
        &self.a
    }
    fn points(&self, cpu: &CpuBackend, u: &[f64]) -> Result<Vec<f64>> {
        self.points_cpu(cpu, u)
    }
    fn point_product(&self, cpu: &CpuBackend, h: &[f64], x_of: &(dyn Fn(usize) -> f64 + Sync), ye: &mut [f64]) -> Result<()> {
        self.point_product_cpu(cpu, h, &|k| x_of(k), ye)
    }
    fn point_diagonal(&self, cpu: &CpuBackend, h: &[f64]) -> Result<Vec<f64>> {
        self.point_diagonal_cpu(cpu, h)
    }
    fn point_values(&self) -> usize {
        FacetTerm::point_values(self)
    }
}

/// The CPU's copy of the set-up, with the physics type erased.
pub struct CpuState {
    cells: Box<dyn Part>,
    facets: Option<Box<dyn Part>>,
    /// E-vector values of the cells (the facets' follow).
    cell_len: usize,
    /// The E-vector's map from the unknowns.
    gather: Restriction,
    /// CSR position of every element-tangent entry (empty with LMA or
    /// sums by SpMV).
    entry_pos: Vec<u32>,
    /// The cells grouped so that the cells of a group share no row: the
    /// tangent's scatter runs a group's cells in parallel (empty where
    /// `entry_pos` is).
    colours: Vec<Vec<u32>>,
    /// What the residual's and the tangent's values start from.
    base: [Vec<f64>; 2],
    diag_pos: Vec<u32>,
    /// 1 in fixed rows, 0 in free ones.
    fixed: Vec<f64>,
    /// The residual's: the same map, fixed rows skipped.
    restriction: Restriction,
    /// The residual's and the tangent's gather matrices ([`Scatter::Spmv`]).
    sums: [Option<EllWarp<f64>>; 2],
    /// Whether each base is zero, so that a sum by SpMV need not add it.
    base_zero: [bool; 2],
    /// The cells' variant and, on tensor cells, partial assembly's 1D
    /// matrices.
    variant: Variant,
    tables: Option<Tables1d>,
    /// The partial product's E-vector out, kept between products.
    product_out: std::sync::Mutex<Vec<f64>>,
}

impl CpuState {
    /// Partial assembly's 1D matrices; an error on simplices.
    fn partial_tables(&self) -> Result<&Tables1d> {
        self.tables.as_ref().ok_or_else(|| Error::InvalidArgument(format!("partial assembly needs quadrilaterals or hexahedra, not {}", self.variant.shape.name())))
    }

    /// Values of the boundary term's point data, which follow the cells'
    /// point data or the matrix-free state (0: no boundary
    /// linearisation).
    fn facet_points(&self) -> usize {
        self.facets.as_ref().map_or(0, |f| f.point_values())
    }

    /// The boundary term, where it has a linearisation to keep.
    fn facet_term(&self) -> Option<&dyn Part> {
        self.facets.as_deref().filter(|f| f.point_values() > 0)
    }

    /// The cells' part of values kept by the points (point data or the
    /// matrix-free state) and the boundary term's point data after it.
    fn split<'v>(&self, kept: &'v [f64]) -> (&'v [f64], &'v [f64]) {
        // short values fail the products' length checks
        kept.split_at(kept.len().saturating_sub(self.facet_points()))
    }

    /// The boundary term's point data at the solution E-vector `ue` into
    /// the end of `kept`.
    fn facet_points_into(&self, cpu: &CpuBackend, ue: &[f64], kept: &mut [f64]) -> Result<()> {
        if let Some(f) = self.facet_term() {
            let h = f.points(cpu, &ue[self.cell_len..])?;
            let at = kept.len() - h.len();
            kept[at..].copy_from_slice(&h);
        }
        Ok(())
    }

    /// The facets' part of the product `ye` (their E-vector, after the
    /// cells') from their point data `h`, `x_of` the whole E-vector's
    /// entries.
    fn facet_product(&self, cpu: &CpuBackend, h: &[f64], x_of: &(dyn Fn(usize) -> f64 + Sync), ye: &mut [f64]) -> Result<()> {
        match self.facet_term() {
            Some(f) => f.point_product(cpu, h, &|k| x_of(self.cell_len + k), &mut ye[self.cell_len..]),
            None => Ok(()),
        }
    }

    /// The facets' diagonal from their point data `h` into the facets'
    /// part of the E-vector `de`.
    fn facet_diagonal(&self, cpu: &CpuBackend, h: &[f64], de: &mut [f64]) -> Result<()> {
        if let Some(f) = self.facet_term() {
            de[self.cell_len..].copy_from_slice(&f.point_diagonal(cpu, h)?);
        }
        Ok(())
    }

    /// `x`'s E-vector entry k (zero in held columns).
    fn entry_of<'x>(&'x self, x: &'x [f64]) -> impl Fn(usize) -> f64 + Sync + 'x {
        let map = &self.restriction.map;
        move |k: usize| if map[k] == SKIP { 0.0 } else { x[map[k] as usize] }
    }
}

impl NewtonOps for CpuBackend {
    type State = CpuState;

    fn prepare<K: Kernels<f64> + 'static>(&self, setup: &Setup<K>, tangent: Option<SpmvFormat>, scatter: Scatter) -> Result<CpuState> {
        let lma = tangent.is_none();
        let spmv = scatter == Scatter::Spmv;
        let residual_pos = setup.residual_pos();
        let sums = [spmv.then(|| gather_pattern(self, &residual_pos, setup.n_rows())).transpose()?, (spmv && !lma).then(|| gather_pattern(self, setup.entry_pos(), setup.csr.nnz())).transpose()?];
        Ok(CpuState {
            sums,
            base_zero: [is_zero(&setup.residual_base), lma || !setup.fixed.contains(&true)],
            cells: Box::new(setup.host_physics()?.into_owned()),
            facets: setup.facets.clone().map(|t| -> Box<dyn Part> { Box::new(t) }),
            cell_len: setup.physics.n_cells * setup.physics.variant.n_local(),
            gather: Restriction::new(setup.gather.clone(), setup.n_rows()),
            entry_pos: if lma || spmv { Vec::new() } else { setup.entry_pos().to_vec() },
            colours: if lma || spmv { Vec::new() } else { cell_colours(setup) },
            base: [setup.residual_base.clone(), if lma { Vec::new() } else { setup.tangent_base() }],
            diag_pos: setup.diag_pos.clone(),
            fixed: setup.fixed_mask(),
            restriction: Restriction::new(residual_pos, setup.n_rows()),
            variant: setup.physics.variant,
            tables: Tables1d::new(&setup.physics.variant).ok(),
            product_out: Default::default(),
        })
    }

    fn gather(&self, s: &CpuState, u: &Vec<f64>, ue: &mut Vec<f64>) -> Result<()> {
        s.gather.gather(self, u, ue)
    }

    fn set_residual_base(&self, s: &mut CpuState, base: &[f64]) -> Result<()> {
        s.base_zero[0] = is_zero(base);
        self.write(base, &mut s.base[0])
    }

    fn aux<'s>(&self, s: &'s CpuState) -> &'s Vec<f64> {
        s.cells.aux()
    }

    fn aux_mut<'s>(&self, s: &'s mut CpuState) -> &'s mut Vec<f64> {
        s.cells.aux_mut()
    }

    fn set_time(&self, s: &mut CpuState, t: f64) {
        s.cells.set_time(t);
        if let Some(f) = &mut s.facets {
            f.set_time(t);
        }
    }

    fn elements(&self, s: &CpuState, jacobian: bool, ue: &Vec<f64>, out: &mut Vec<f64>) -> Result<()> {
        let v = s.cells.evaluate(self, jacobian, &ue[..s.cell_len])?;
        out[..v.len()].copy_from_slice(&v);
        if let Some(f) = &s.facets {
            let w = f.evaluate(self, jacobian, &ue[s.cell_len..])?;
            out[v.len()..v.len() + w.len()].copy_from_slice(&w);
        }
        Ok(())
    }

    fn assemble(&self, s: &CpuState, matrix: bool, elem: &Vec<f64>, out: &mut Vec<f64>) -> Result<()> {
        let m = matrix as usize;
        if let Some(g) = &s.sums[m] {
            g.spmv_with::<true>(self, elem, out);
            if !s.base_zero[m] {
                self.axpy(1.0, &s.base[m], out)?;
            }
            return Ok(());
        }
        out.copy_from_slice(&s.base[m]);
        match matrix {
            true => self.scatter_cells(s, elem, out),
            false => s.restriction.add(self, elem, out),
        }
        Ok(())
    }

    fn inverse_diagonal(&self, s: &CpuState, kflat: &Vec<f64>, inv: &mut Vec<f64>) -> Result<()> {
        inverse_diagonal(&s.diag_pos, kflat, inv);
        Ok(())
    }

    fn default_format(&self) -> SpmvFormat {
        SpmvFormat::Csr
    }

    fn matrix<K: Kernels<f64>, T: crate::Scalar>(&self, _: &CpuState, setup: &Setup<K>, format: SpmvFormat) -> Result<Box<dyn Spmv<CpuBackend, T>>> {
        prepare_cpu(self, &setup.csr.in_precision::<T>(), format, &SpmvParams::a_priori(&RowStats::of(&setup.csr)))
    }

    fn element_product(&self, s: &CpuState, kelem: &Vec<f64>, x: &Vec<f64>, y: &mut Vec<f64>) -> Result<()> {
        let (map, nl) = (&s.restriction.map, kelem.len() / s.restriction.map.len().max(1));
        self.mul(&s.fixed, x, y)?;
        // SAFETY: the map's entries index x, kelem holds nl entries per row
        s.restriction.add_with(self, |r| unsafe { element_row_part(r, nl, 0, 1, kelem.as_ptr(), map.as_ptr(), x.as_ptr()) }, y);
        Ok(())
    }

    fn element_diagonal(&self, s: &CpuState, kelem: &Vec<f64>, d: &mut Vec<f64>) -> Result<()> {
        let nl = kelem.len() / s.restriction.map.len().max(1);
        d.copy_from_slice(&s.fixed);
        // SAFETY: kelem holds nl entries per row of the map
        s.restriction.add_with(self, |r| unsafe { element_diagonal(r, nl, kelem.as_ptr()) }, d);
        Ok(())
    }

    /// Tensor cells from Q3: there the partial product costs a Krylov
    /// iteration about what the assembled tangent's does, and its set-up
    /// (point data, no element matrices, no pattern's values) a fraction
    /// (`benches/cpu/partial.sh`, Q3 Poisson hexahedra, 227k rows, two
    /// threads: 12.2 against 11.1 ms an iteration, the command 3.4
    /// against 6.2 s in a seventh of the memory). At Q2 the assembled
    /// tangent's product is about twice as fast, which outweighs its
    /// set-up once Jacobi-CG takes a few hundred iterations.
    fn auto_partial(&self, v: &Variant) -> bool {
        v.degree >= 3 && Tables1d::new(v).is_ok()
    }

    fn points(&self, s: &CpuState, ue: &Vec<f64>, g: &mut Vec<f64>) -> Result<()> {
        let v = s.cells.points(self, &ue[..s.cell_len])?;
        crate::error::same_len("point data", g.len(), v.len() + s.facet_points())?;
        g[..v.len()].copy_from_slice(&v);
        s.facet_points_into(self, ue, g)
    }

    fn hold_state(&self, s: &CpuState, ue: &Vec<f64>, held: &mut Vec<f64>) -> Result<()> {
        crate::error::same_len("the matrix-free state", held.len(), ue.len() + s.facet_points())?;
        held[..ue.len()].copy_from_slice(ue);
        s.facet_points_into(self, ue, held)
    }

    fn partial_product(&self, s: &CpuState, g: &Vec<f64>, x: &Vec<f64>, y: &mut Vec<f64>) -> Result<()> {
        let tables = s.partial_tables()?;
        let (g, h) = s.split(g);
        let x_of = s.entry_of(x);
        // the E-vector out kept from product to product: its cells' part
        // is written whole, the facets' too where they have a
        // linearisation, else it stays zero
        let mut ye = s.product_out.lock().map_err(|_| Error::InvalidArgument("a partial product panicked".into()))?;
        ye.resize(s.restriction.map.len(), 0.0);
        apply_cpu_with(self, tables, &s.variant, g, &x_of, &mut ye[..s.cell_len])?;
        s.facet_product(self, h, &x_of, &mut ye)?;
        self.mul(&s.fixed, x, y)?;
        s.restriction.add(self, &ye, y);
        Ok(())
    }

    fn free_product(&self, s: &CpuState, held: &Vec<f64>, x: &Vec<f64>, y: &mut Vec<f64>) -> Result<()> {
        let (ue, h) = s.split(held);
        let x_of = s.entry_of(x);
        let mut ye = s.product_out.lock().map_err(|_| Error::InvalidArgument("a matrix-free product panicked".into()))?;
        ye.resize(s.restriction.map.len(), 0.0);
        s.cells.action(self, &ue[..s.cell_len], &x_of, &mut ye[..s.cell_len])?;
        s.facet_product(self, h, &x_of, &mut ye)?;
        self.mul(&s.fixed, x, y)?;
        s.restriction.add(self, &ye, y);
        Ok(())
    }

    fn free_diagonal(&self, s: &CpuState, held: &Vec<f64>, d: &mut Vec<f64>) -> Result<()> {
        let (ue, h) = s.split(held);
        let mut de = s.cells.free_diagonal(self, &ue[..s.cell_len])?;
        de.resize(s.restriction.map.len(), 0.0);
        s.facet_diagonal(self, h, &mut de)?;
        d.copy_from_slice(&s.fixed);
        s.restriction.add(self, &de, d);
        Ok(())
    }

    fn partial_diagonal(&self, s: &CpuState, g: &Vec<f64>, d: &mut Vec<f64>) -> Result<()> {
        let (g, h) = s.split(g);
        let mut de = diagonal_cpu(self, s.partial_tables()?, &s.variant, g)?;
        de.resize(s.restriction.map.len(), 0.0);
        s.facet_diagonal(self, h, &mut de)?;
        d.copy_from_slice(&s.fixed);
        s.restriction.add(self, &de, d);
        Ok(())
    }

    fn describe(&self, s: &CpuState) -> String {
        match s.sums[0] {
            Some(_) => format!("{}, assembly by ELL-WARP SpMV", self.name()),
            None => format!("{}, residual assembly by row sums, tangent assembly by scatter, cells of one colour in parallel", self.name()),
        }
    }
}
