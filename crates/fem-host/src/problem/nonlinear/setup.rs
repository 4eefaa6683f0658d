//! The problem as the backends read it: a physics on a space, the maps
//! between its element vectors and the global rows, the tangent's
//! pattern and the rows held fixed ([`Setup`]), built once and uploaded
//! by [`NewtonOps::prepare`].

use super::{Levels, NewtonOps, NewtonSizes, NONE};
use crate::operator::csr::Csr;
use crate::operator::pointwise::{Aux, FacetTerm, NodalCells, Pointwise};
use crate::space::{BoundaryPart, Constraints, Load, Space};
use crate::{CpuBackend, Error, Result};
use fem_kernels::pointwise::Kernels;
use fem_kernels::slots::gathered_entry_slot;
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

/// The problem as the backends read it.
pub struct Setup<K> {
    /// The physics on the space.
    pub physics: Pointwise<f64, K>,
    /// Global index of every E-vector entry (`cell·nb·nc + b·nc + c` →
    /// `dof·nc + c`), the boundary term's facets after the cells.
    pub gather: Vec<u32>,
    /// CSR position of every element-tangent entry, `NONE` in fixed rows
    /// and columns ([`Setup::entry_pos`]): made on the host where it is
    /// first read there; the GPU makes its own from the pattern.
    pub(super) entry_pos: OnceLock<Vec<u32>>,
    /// The physics' boundary term and the facets it acts on, if any.
    pub facets: Option<FacetTerm<f64, K>>,
    /// The tangent's pattern, its values zero. Assembly starts from them
    /// with 1 on the fixed rows' diagonals ([`Setup::tangent_base`]), kept
    /// apart so that a backend that holds the values elsewhere never
    /// brings the host's pages in (writing those few entries would bring
    /// in most of them). Shared: the SPAI(1) and SAINV smoothers rebuild
    /// on it after the set-up is gone, and a set-up of another physics on
    /// the same space reads the same.
    pub csr: Arc<Csr<f64>>,
    /// CSR position of each row's diagonal.
    pub diag_pos: Vec<u32>,
    /// Rows held at their given values.
    pub fixed: Vec<bool>,
    /// What the residual's assembly starts from: minus the load in free
    /// rows, zero in fixed ones (R(u) = A(u) − F).
    pub residual_base: Vec<f64>,
    /// The coarser levels of [`Setup::with_multigrid`], if built.
    pub levels: Option<Box<Levels<K>>>,
    /// The low-order level of [`Setup::with_low_order`] under AMG, if
    /// built.
    pub low_order: Option<Box<crate::solver::amg::LowOrder>>,
    /// Every node's position where the field has as many components as
    /// the space has dimensions (empty otherwise): AMG's rigid-body modes.
    pub node_coords: Vec<[f64; 3]>,
    /// The physics' cell data per node, where the backend makes its
    /// E-vectors itself ([`NewtonOps::gathers_cells`]): then the physics'
    /// `x`, and `a` for a nodal field, are empty
    /// ([`Setup::host_physics`] makes them).
    pub cells: Option<NodalCells>,
}

impl<K: Kernels<f64>> Setup<K> {
    /// The physics `K` on `space` (no auxiliary fields) with every
    /// component of the boundary nodes fixed.
    pub fn new(cpu: &CpuBackend, space: &Space) -> Result<Self> {
        Self::with_aux(cpu, space, Aux::None)
    }

    /// [`Setup::new`] with auxiliary fields (coefficients, loads).
    pub fn with_aux(cpu: &CpuBackend, space: &Space, aux: Aux<'_>) -> Result<Self> {
        let physics = Pointwise::<f64, K>::new(space, None, aux)?;
        let nc = physics.variant.nc;
        let fixed = space.boundary.iter().flat_map(|&b| std::iter::repeat_n(b, nc)).collect();
        Self::build(cpu, cpu, space, (physics, None), fixed, None)
    }

    /// The physics `K` on `space` with auxiliary fields `aux`, the rows
    /// `constraints` holds fixed, and the residual less `load` (if any).
    pub fn constrained(cpu: &CpuBackend, space: &Space, aux: Aux<'_>, constraints: &Constraints, load: Option<&Load>) -> Result<Self> {
        Self::of_physics(cpu, space, Pointwise::<f64, K>::new(space, None, aux)?, constraints, load)
    }

    /// [`Setup::constrained`] for backend `b`, which builds the sparsity
    /// pattern where it is fastest ([`NewtonOps::cells_pattern`]: the
    /// GPU's is the host's).
    pub fn constrained_on<B: NewtonOps>(b: &B, cpu: &CpuBackend, space: &Space, aux: Aux<'_>, constraints: &Constraints, load: Option<&Load>) -> Result<Self> {
        Self::of_physics_on(b, cpu, space, Self::physics_on(b, space, None, aux)?, constraints, load)
    }

    /// The physics on `space` with its cell data per node where `b` makes
    /// the E-vectors itself ([`Setup::of_physics_on`] takes it): made
    /// apart so that a caller can let go of the fields it was made from
    /// before the pattern is.
    pub fn physics_on<B: NewtonOps>(b: &B, space: &Space, nq: Option<usize>, aux: Aux<'_>) -> Result<(Pointwise<f64, K>, Option<NodalCells>)> {
        match b.gathers_cells() {
            true => Pointwise::on_nodes(space, nq, aux),
            false => Ok((Pointwise::new(space, nq, aux)?, None)),
        }
    }

    /// The physics with its cell data on the host, made from the nodes
    /// where the set-up keeps them there.
    pub fn host_physics(&self) -> Result<Cow<'_, Pointwise<f64, K>>> {
        let Some(cells) = &self.cells else { return Ok(Cow::Borrowed(&self.physics)) };
        let mut physics = self.physics.clone();
        let (x, a) = cells.expand(&physics.variant, physics.n_cells, &self.gather)?;
        physics.x = x;
        if let Some(a) = a {
            physics.a = a;
        }
        Ok(Cow::Owned(physics))
    }

    /// [`Setup::constrained`] for a physics already evaluated on `space`:
    /// one built with a rule of its own ([`Pointwise::new`]'s `nq`).
    pub fn of_physics(cpu: &CpuBackend, space: &Space, physics: Pointwise<f64, K>, constraints: &Constraints, load: Option<&Load>) -> Result<Self> {
        Self::of_physics_on(cpu, cpu, space, (physics, None), constraints, load)
    }

    /// [`Setup::of_physics`] of the physics [`Setup::physics_on`] made for
    /// `b`, its pattern made by `b`.
    pub fn of_physics_on<B: NewtonOps>(b: &B, cpu: &CpuBackend, space: &Space, (physics, cells): (Pointwise<f64, K>, Option<NodalCells>), constraints: &Constraints, load: Option<&Load>) -> Result<Self> {
        Self::check_physics(space, &physics, constraints, load)?;
        Self::build(b, cpu, space, (physics, cells), constraints.fixed.clone(), load.map(|l| l.values.as_slice()))
    }

    /// The physics was evaluated on `space`, with as many components as
    /// its constraints and load.
    fn check_physics(space: &Space, physics: &Pointwise<f64, K>, constraints: &Constraints, load: Option<&Load>) -> Result<()> {
        if physics.n_cells != space.n_cells() || physics.variant.n_local() != space.nb() * physics.variant.nc {
            return Err(Error::InvalidArgument("the physics was evaluated on another space".into()));
        }
        let nc = physics.variant.nc;
        if constraints.nc != nc || load.is_some_and(|l| l.nc != nc) {
            return Err(Error::InvalidArgument(format!("the physics has {nc} components, its boundary conditions or load another number")));
        }
        crate::error::same_len("constrained rows", constraints.fixed.len(), space.n_dofs * nc)
    }

    /// The maps and the pattern (in parallel: they are per entry of every
    /// element matrix), the pattern made by `b` from the gather map; the
    /// physics with its cell data per node where `b` makes the E-vectors.
    pub(super) fn build<B: NewtonOps>(b: &B, cpu: &CpuBackend, space: &Space, physics: (Pointwise<f64, K>, Option<NodalCells>), fixed: Vec<bool>, load: Option<&[f64]>) -> Result<Self> {
        Self::build_with(b, cpu, space, physics, fixed, load, true)
    }

    /// [`Setup::build`], the pattern and its diagonal positions made only
    /// where `pattern` asks for them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build_with<B: NewtonOps>(b: &B, cpu: &CpuBackend, space: &Space, (physics, cells): (Pointwise<f64, K>, Option<NodalCells>), fixed: Vec<bool>, load: Option<&[f64]>, pattern: bool) -> Result<Self> {
        let nc = physics.variant.nc;
        // what any storage of the tangent holds on the backend, refused
        // before the maps and the pattern are made
        let nl = physics.variant.n_local();
        let sizes = NewtonSizes { tangent: NewtonSizes::tangent_values(nl, pattern), ..NewtonSizes::before_pattern(physics.n_cells, nl, space.n_dofs * nc) };
        b.ensure_fits(&format!("a Newton solve of `{}` on {} cells ({} rows)", K::NAME, physics.n_cells, space.n_dofs * nc), sizes.device_bytes(true, false))?;
        let gather = space.restriction(nc).map;
        let (csr, diag_pos) = match pattern {
            true => Self::pattern_of(b, cpu, space.n_dofs * nc, space.nb() * nc, &gather)?,
            false => (Csr { n_rows: fixed.len(), row_ptr: vec![0; fixed.len() + 1], col: Vec::new(), val: Vec::new() }, Vec::new()),
        };
        let residual_base = match load {
            Some(f) => {
                let mut base = f.to_vec();
                as_residual_base(&mut base, &fixed);
                base
            }
            None => vec![0.0; fixed.len()],
        };
        let node_coords = if nc > 1 && nc == space.dim() { space.dof_coords.clone() } else { Vec::new() };
        Ok(Self { physics, gather, entry_pos: OnceLock::new(), facets: None, csr: Arc::new(csr), diag_pos, fixed, residual_base, levels: None, low_order: None, node_coords, cells })
    }

    /// The tangent's pattern of `rows` rows made by `b` from the gather
    /// map, and its diagonal positions.
    fn pattern_of<B: NewtonOps>(b: &B, cpu: &CpuBackend, rows: usize, nl: usize, gather: &[u32]) -> Result<(Csr<f64>, Vec<u32>)> {
        let csr = b.cells_pattern(cpu, rows, nl, gather)?;
        // collected by index (a collect into Result is not) and checked after
        let diag_pos: Vec<u32> = cpu.install(|| (0..csr.n_rows).into_par_iter().map(|r| csr.position(r, r as u32).map_or(NONE, |p| p as u32)).collect());
        if let Some(r) = cpu.install(|| diag_pos.par_iter().position_any(|&p| p == NONE)) {
            return Err(Error::InvalidArgument(format!("row {r} has no diagonal")));
        }
        Ok((csr, diag_pos))
    }

    /// [`Setup::constrained_on`] for Newton with options `o`: where its
    /// tangent is partially assembled or matrix-free and the solve is
    /// `stationary` (no mass matrix), the assembled tangent's pattern and
    /// its diagonal positions, which neither product reads, are not made. From Q4
    /// they are most of a solve's memory (about 1000 entries a row at Q8);
    /// any other storage is refused on such a set-up
    /// ([`Setup::has_pattern`]). A boundary term may be added after
    /// ([`Setup::with_boundary_term`]): those storages keep its
    /// linearisation by its facet points.
    #[allow(clippy::too_many_arguments)]
    pub fn for_newton_on<B: NewtonOps>(b: &B, cpu: &CpuBackend, space: &Space, aux: Aux<'_>, constraints: &Constraints, load: Option<&Load>, o: &super::NewtonOptions, stationary: bool) -> Result<Self> {
        let physics = Self::physics_on(b, space, None, aux)?;
        let v = &physics.0.variant;
        let pattern = !(stationary && o.assembly.skips_pattern(v, o.precond, o.precision, b.auto_partial(v)));
        Self::check_physics(space, &physics.0, constraints, load)?;
        Self::build_with(b, cpu, space, physics, constraints.fixed.clone(), load.map(|l| l.values.as_slice()), pattern)
    }

    /// Whether the tangent's pattern was made: every storage but partial
    /// assembly and the matrix-free tangent reads it ([`Setup::for_newton_on`] skips it).
    pub fn has_pattern(&self) -> bool {
        self.diag_pos.len() == self.n_rows()
    }

    /// Adds the physics' boundary term (`bf0`, linearised by `bg0`,
    /// `bg1`) on the facets of `part`, replacing any set before: the
    /// Neumann or Robin condition there. An error when the physics has no
    /// boundary term, `part` has no facet, or coarse levels were already
    /// built (add it first, so that [`Setup::with_multigrid`] carries it).
    pub fn with_boundary_term(mut self, space: &Space, part: &BoundaryPart) -> Result<Self> {
        if self.levels.is_some() {
            return Err(Error::InvalidArgument("add the boundary term before the multigrid levels".into()));
        }
        if space.n_cells() != self.physics.n_cells {
            return Err(Error::InvalidArgument("the boundary term's space is not the set-up's".into()));
        }
        let facets = part.facets(space)?;
        self.cells_only();
        // the facets' rows after the cells': their cells' rows again
        let (v, ne) = (self.physics.variant, self.physics.n_cells);
        let nl = v.n_local();
        for f in &facets {
            let c = f.cell as usize;
            self.gather.extend_from_within(c * nl..(c + 1) * nl);
        }
        let term = match &self.cells {
            None => FacetTerm::new(&self.physics, &facets)?,
            // the facets' cells' data made from the nodes through those
            // rows, not every cell's
            Some(cells) => {
                let (x, a) = cells.expand(&v, facets.len(), &self.gather[ne * nl..])?;
                let a = a.unwrap_or_else(|| FacetTerm::<f64, K>::per_facet_cell(&facets, &self.physics.a, v.aux_per_cell()));
                FacetTerm::of_cells(&self.physics, &facets, x, a)?
            }
        };
        self.facets = Some(term);
        Ok(self)
    }

    /// Lets go of what the backend holds its own copy of once prepared:
    /// the physics' coordinates, the node coordinates of its cell data
    /// and the maps. What is left is read for the pattern, the rows, the
    /// coarse levels (which take their coefficients from the auxiliary
    /// field, kept) and the preconditioner.
    pub(super) fn release_uploaded(&mut self) {
        self.physics.x = Vec::new();
        if let Some(c) = &mut self.cells {
            c.coords = Vec::new();
        }
        (self.gather, self.entry_pos) = (Vec::new(), OnceLock::new());
    }

    /// Lets go of the auxiliary field too, once the coarse levels are
    /// made from it.
    pub(super) fn release_aux(&mut self) {
        self.physics.a = Vec::new();
        self.cells = None;
    }

    /// Values of the boundary term's linearisation by its facet points
    /// (none without a boundary term, or where it does not depend on u):
    /// what partial assembly and the matrix-free tangent keep of it.
    pub fn facet_point_values(&self) -> usize {
        self.facets.as_ref().map_or(0, |t| t.point_values())
    }

    /// Drops the boundary term's facets from the maps.
    fn cells_only(&mut self) {
        let (ne, nl) = (self.physics.n_cells, self.physics.variant.n_local());
        self.gather.truncate(ne * nl);
        self.entry_pos = OnceLock::new();
        self.facets = None;
    }

    /// Another physics of as many components on the same space, sharing
    /// this set-up's maps and pattern instead of building them again.
    pub fn with_physics<K2: Kernels<f64>>(&self, space: &Space, aux: Aux<'_>) -> Result<Setup<K2>> {
        let physics = Pointwise::<f64, K2>::new(space, None, aux)?;
        if physics.variant.nc != self.physics.variant.nc || physics.variant.n_local() != self.physics.variant.n_local() || physics.n_cells != self.physics.n_cells {
            return Err(Error::InvalidArgument("the other physics has other components or cells than this set-up".into()));
        }
        let mut other = Setup { physics, gather: self.gather.clone(), entry_pos: OnceLock::new(), facets: None, csr: self.csr.clone(), diag_pos: self.diag_pos.clone(), fixed: self.fixed.clone(), residual_base: self.residual_base.clone(), levels: None, low_order: None, node_coords: self.node_coords.clone(), cells: None };
        other.cells_only();
        Ok(other)
    }

    /// CSR position of every element-tangent entry (`[e][i][j]` over the
    /// cells, then the boundary term's facets), `NONE` in fixed rows and
    /// columns: made here at its first call, in parallel
    /// ([`gathered_entry_slot`], one source with the GPU's).
    pub fn entry_pos(&self) -> &[u32] {
        self.entry_pos.get_or_init(|| {
            let nl = self.physics.variant.n_local();
            let mut pos = vec![0u32; self.entry_len()];
            if nl > 0 {
                let (rows, csr, fixed) = (&self.gather, &self.csr, &self.fixed);
                pos.par_chunks_mut(nl * nl).enumerate().for_each(|(e, out)| {
                    for (k, p) in out.iter_mut().enumerate() {
                        // SAFETY: element e's rows are in the gather map,
                        // which holds rows of the pattern
                        *p = unsafe { gathered_entry_slot(e * nl * nl + k, nl, rows.as_ptr(), |r| fixed[r], csr.row_ptr.as_ptr(), csr.col.as_ptr()) };
                    }
                });
            }
            pos
        })
    }

    /// CSR positions of the fixed rows' diagonals, in row order: where
    /// the tangent's assembly starts from 1 ([`Setup::tangent_base`]).
    pub fn fixed_diagonals(&self) -> Vec<u32> {
        self.diag_pos.par_iter().zip(self.fixed.par_iter()).filter(|(_, &f)| f).map(|(&p, _)| p).collect()
    }

    /// What the tangent's assembly starts from: the pattern's values, 1
    /// on the fixed rows' diagonals and 0 elsewhere.
    pub fn tangent_base(&self) -> Vec<f64> {
        let mut base = vec![0.0; self.csr.nnz()];
        for p in self.fixed_diagonals() {
            base[p as usize] = 1.0;
        }
        base
    }

    /// Global row of every element-residual entry (the gather map's),
    /// `NONE` in fixed rows: made where a backend reads it, as it follows
    /// from the map and the fixed rows, rather than held beside them (the
    /// GPU makes its own, [`fem_kernels::slots::residual_row`] for both).
    pub fn residual_pos(&self) -> Vec<u32> {
        self.gather.par_iter().map(|&r| fem_kernels::slots::residual_row(r, r != NONE && self.fixed[r as usize])).collect()
    }

    /// Entries of all element tangents: the length of [`Setup::entry_pos`].
    pub fn entry_len(&self) -> usize {
        self.gather.len() * self.physics.variant.n_local()
    }

    /// Rows of the global system (nodes × components).
    pub fn n_rows(&self) -> usize {
        self.fixed.len()
    }

    /// 1 in fixed rows, 0 in free ones: what a product multiplies `x` by
    /// to keep the fixed rows.
    pub fn fixed_mask(&self) -> Vec<f64> {
        self.fixed.par_iter().map(|&f| f as u8 as f64).collect()
    }
}

/// The load `f` turned in place into what the residual's assembly starts
/// from: −f in free rows, zero in fixed ones (R(u) = A(u) − F).
pub(super) fn as_residual_base(f: &mut [f64], fixed: &[bool]) {
    for (v, &x) in f.iter_mut().zip(fixed) {
        *v = if x { 0.0 } else { -*v };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::simplex::SimplexBox;
    use crate::mesh::BoxMesh;
    use fem_kernels::physics::Radiation;

    /// A boundary term's cell data made from the nodes for its facets
    /// alone is the one taken from every cell's E-vectors, and the set-up
    /// keeps no E-vectors of all cells for it.
    #[test]
    fn boundary_terms_from_the_nodes_are_the_cells_own() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let mut spaces = vec![Space::simplex(&SimplexBox::unstructured(2, 4, 3).build().unwrap(), 2).unwrap()];
        for (dim, p) in [(2, 1), (2, 2), (3, 1)] {
            spaces.push(Space::tensor(&BoxMesh::unstructured(dim, 3, 5).build().unwrap(), p).unwrap());
        }
        for space in spaces {
            let aux: Vec<f64> = (0..2 * space.n_dofs).map(|i| 1.0 + 0.01 * i as f64).collect();
            let part = BoundaryPart::at("x > 1/2", |c| c[0] > 0.5);
            let label = format!("{:?} p{}", space.shape, space.degree);
            let fixed = vec![false; space.n_dofs];
            let host = (Pointwise::<f64, Radiation>::new(&space, None, Aux::Nodal(&aux)).unwrap(), None);
            let nodal = Pointwise::<f64, Radiation>::on_nodes(&space, None, Aux::Nodal(&aux)).unwrap();
            let want = Setup::build(&cpu, &cpu, &space, host, fixed.clone(), None).unwrap().with_boundary_term(&space, &part).unwrap();
            let got = Setup::build(&cpu, &cpu, &space, nodal, fixed, None).unwrap().with_boundary_term(&space, &part).unwrap();
            assert!(got.cells.is_some() && got.physics.x.is_empty(), "{label}: cell data per node");
            let (w, g) = (want.facets.unwrap(), got.facets.unwrap());
            assert!(!g.facets.is_empty() && g.facets.len() < space.facets.len(), "{label}: part of the boundary");
            assert_eq!((g.facets, g.local, g.x, g.a), (w.facets, w.local, w.x, w.a), "{label}");
            assert_eq!(got.gather, want.gather, "{label}: the facets' rows after the cells'");
        }
    }
}
