//! Boundary conditions on any nodal space, independent of how the
//! operator is assembled or which backend applies it: Dirichlet values on
//! parts of the boundary (rows held fixed, at values of x or of x and t),
//! and the loads that do not depend on the solution (sources ∫ f·φ and
//! Neumann tractions ∫_Γ g·φ), which the residual subtracts.
//!
//! A part of the boundary is every boundary facet, the facets of Gmsh
//! physical groups (their vertex keys), or those whose centre a predicate
//! accepts.

use super::facets::Facet;
use super::integrate::{cell_evector, facet_centre, facet_points};
use super::Space;
use crate::{Error, Result};
use std::collections::HashSet;
use std::sync::Arc;

/// A part of the domain's boundary.
pub enum BoundaryPart {
    /// The whole boundary.
    All,
    /// The facets with these keys, e.g. a Gmsh physical group's.
    Facets {
        /// What messages call it.
        name: String,
        /// Sorted corner vertices padded with `u32::MAX`, as
        /// [`crate::io::gmsh::GmshMesh::group_facets`] gives them.
        keys: HashSet<[u32; 4]>,
    },
    /// The facets whose centre a predicate accepts.
    Where {
        /// What messages call it.
        name: String,
        /// The predicate on the facet's centre.
        accept: Box<dyn Fn(&[f64; 3]) -> bool + Send + Sync>,
    },
}

impl BoundaryPart {
    /// Facets whose centre satisfies `accept` (e.g. `|x| x[0] < 1e-12` for x = 0).
    pub fn at(name: &str, accept: impl Fn(&[f64; 3]) -> bool + Send + Sync + 'static) -> Self {
        Self::Where {
            name: name.to_string(),
            accept: Box::new(accept),
        }
    }

    /// The boundary facets of `space` in this part; an error when there
    /// are none (a group that names no facet of the boundary, a predicate
    /// that accepts none).
    pub fn facets<'s>(&self, space: &'s Space) -> Result<Vec<&'s Facet>> {
        let out: Vec<&Facet> = match self {
            Self::All => space.facets.iter().collect(),
            Self::Facets { keys, .. } => space
                .facets
                .iter()
                .filter(|f| keys.contains(&f.key))
                .collect(),
            Self::Where { accept, .. } => space
                .facets
                .iter()
                .filter(|f| accept(&facet_centre(space, f)))
                .collect(),
        };
        if out.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "the boundary part {} has no facet on the boundary of the mesh",
                self.name()
            )));
        }
        Ok(out)
    }

    /// How messages name it.
    pub fn name(&self) -> String {
        match self {
            Self::All => "(the whole boundary)".into(),
            Self::Facets { name, .. } | Self::Where { name, .. } => format!("`{name}`"),
        }
    }
}

/// Dirichlet rows of an `nc`-component field: which are held, and at what.
#[derive(Clone, Debug)]
pub struct Constraints {
    /// Components per node.
    pub nc: usize,
    /// Rows (`node·nc + component`) held at their values.
    pub fixed: Vec<bool>,
    /// The held values (zero in free rows); at t = 0 in the rows of a
    /// part held at values of time.
    pub values: Vec<f64>,
    /// The parts whose values change in time, in the order given.
    moving: Vec<Moving>,
}

/// The value of a Dirichlet condition at a point x and time t: fills all
/// `nc` components.
pub type ValueInTime = Arc<dyn Fn(&[f64; 3], f64, &mut [f64]) + Send + Sync>;

/// Rows held at values of time: each row with its node's point, and the
/// function.
#[derive(Clone)]
struct Moving {
    rows: Vec<(u32, [f64; 3])>,
    value: ValueInTime,
}

impl std::fmt::Debug for Moving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Moving {{ rows: {} }}", self.rows.len())
    }
}

impl Constraints {
    /// No row held: natural conditions on the whole boundary.
    pub fn none(space: &Space, nc: usize) -> Self {
        Self {
            nc,
            fixed: vec![false; space.n_dofs * nc],
            values: vec![0.0; space.n_dofs * nc],
            moving: Vec::new(),
        }
    }

    /// Every component held at `value(x)` on the nodes of `part`.
    pub fn dirichlet(
        self,
        space: &Space,
        part: &BoundaryPart,
        value: impl Fn(&[f64; 3], &mut [f64]),
    ) -> Result<Self> {
        let all: Vec<usize> = (0..self.nc).collect();
        self.dirichlet_components(space, part, &all, value)
    }

    /// The listed components held at the matching entries of `value(x)`
    /// (which fills all `nc`) on the nodes of `part`; the others stay free
    /// (a roller, a symmetry plane).
    pub fn dirichlet_components(
        mut self,
        space: &Space,
        part: &BoundaryPart,
        components: &[usize],
        value: impl Fn(&[f64; 3], &mut [f64]),
    ) -> Result<Self> {
        self.hold(space, part, components, |x, v| value(x, v))?;
        Ok(self)
    }

    /// Every component held at `value(x, t)` on the nodes of `part`: the
    /// time stepper ([`crate::problem::nonlinear::time::integrate`]) sets
    /// these rows to their values at each step's time before solving it.
    pub fn dirichlet_in_time(
        self,
        space: &Space,
        part: &BoundaryPart,
        value: impl Fn(&[f64; 3], f64, &mut [f64]) + Send + Sync + 'static,
    ) -> Result<Self> {
        let all: Vec<usize> = (0..self.nc).collect();
        self.dirichlet_components_in_time(space, part, &all, value)
    }

    /// The listed components held at the matching entries of `value(x,
    /// t)` on the nodes of `part`, as [`Self::dirichlet_in_time`].
    pub fn dirichlet_components_in_time(
        mut self,
        space: &Space,
        part: &BoundaryPart,
        components: &[usize],
        value: impl Fn(&[f64; 3], f64, &mut [f64]) + Send + Sync + 'static,
    ) -> Result<Self> {
        let rows = self.hold(space, part, components, |x, v| value(x, 0.0, v))?;
        let rows = rows.into_iter().map(|r| (r, space.dof_coords[r as usize / self.nc])).collect();
        self.moving.push(Moving { rows, value: Arc::new(value) });
        Ok(self)
    }

    /// Holds the listed components of the nodes of `part` at `value(x)`,
    /// taking those rows from any part held before; returns the rows.
    fn hold(&mut self, space: &Space, part: &BoundaryPart, components: &[usize], value: impl Fn(&[f64; 3], &mut [f64])) -> Result<Vec<u32>> {
        if let Some(c) = components.iter().find(|&&c| c >= self.nc) {
            return Err(Error::InvalidArgument(format!(
                "component {c} of a field with {} components",
                self.nc
            )));
        }
        let facets = part.facets(space)?;
        let mask = space.facet_mask(facets);
        let mut v = vec![0.0; self.nc];
        let mut rows = Vec::new();
        for (node, _) in mask.iter().enumerate().filter(|m| *m.1) {
            value(&space.dof_coords[node], &mut v);
            for &c in components {
                self.fixed[node * self.nc + c] = true;
                self.values[node * self.nc + c] = v[c];
                rows.push((node * self.nc + c) as u32);
            }
        }
        // a row takes the value of the last part that holds it
        let mut taken = vec![false; self.fixed.len()];
        rows.iter().for_each(|&r| taken[r as usize] = true);
        for m in &mut self.moving {
            m.rows.retain(|&(r, _)| !taken[r as usize]);
        }
        self.moving.retain(|m| !m.rows.is_empty());
        Ok(rows)
    }

    /// The rows held at values of time, in the order of
    /// [`Self::moving_values`] (empty when every value is constant).
    pub fn moving_rows(&self) -> Vec<u32> {
        self.moving.iter().flat_map(|m| m.rows.iter().map(|&(r, _)| r)).collect()
    }

    /// The values of [`Self::moving_rows`] at time `t`, into `out`.
    pub fn moving_values(&self, t: f64, out: &mut Vec<f64>) {
        out.clear();
        let mut v = vec![0.0; self.nc];
        for m in &self.moving {
            for (r, x) in &m.rows {
                (m.value)(x, t, &mut v);
                out.push(v[*r as usize % self.nc]);
            }
        }
    }

    /// A start for Newton: the held values, zero elsewhere.
    pub fn initial(&self) -> Vec<f64> {
        self.values.clone()
    }

    /// Rows held.
    pub fn n_fixed(&self) -> usize {
        self.fixed.iter().filter(|&&f| f).count()
    }
}

/// A load vector ∫ f·φ + ∫_Γ g·φ of an `nc`-component field, which the
/// residual of a form subtracts.
#[derive(Clone, Debug)]
pub struct Load {
    /// Components per node.
    pub nc: usize,
    /// The assembled vector, `node·nc + component`.
    pub values: Vec<f64>,
}

impl Load {
    /// No load.
    pub fn zero(space: &Space, nc: usize) -> Self {
        Self {
            nc,
            values: vec![0.0; space.n_dofs * nc],
        }
    }

    /// Adds the source ∫_Ω f(x)·φ.
    pub fn source(mut self, space: &Space, f: impl Fn(&[f64; 3], &mut [f64]) + Sync) -> Self {
        let e = cell_evector(space, self.nc, |p, v| f(&p.x, v));
        self.add_evector(space, &e);
        self
    }

    /// Adds the source ∫_Ω f_h·φ of the finite-element function with node
    /// values `nodal` (`node·nc + component`): a load of any roughness,
    /// e.g. random node values, that still converges under refinement.
    pub fn nodal_source(mut self, space: &Space, nodal: &[f64]) -> Result<Self> {
        crate::error::same_len("nodal source", nodal.len(), self.values.len())?;
        let (nc, nb) = (self.nc, space.nb());
        let e = cell_evector(space, nc, |p, v| {
            let dofs = &space.cell_dofs[p.cell * nb..][..nb];
            for (c, vc) in v.iter_mut().enumerate() {
                *vc = p
                    .phi
                    .iter()
                    .zip(dofs)
                    .map(|(phi, &g)| phi * nodal[g as usize * nc + c])
                    .sum();
            }
        });
        self.add_evector(space, &e);
        Ok(self)
    }

    /// Sums an E-vector into the load.
    fn add_evector(&mut self, space: &Space, e: &[f64]) {
        self.values
            .iter_mut()
            .zip(space.scatter_add(self.nc, e))
            .for_each(|(v, a)| *v += a);
    }

    /// Adds the Neumann traction ∫_Γ g(x, n)·φ on `part` (n the outward
    /// unit normal): a flux for a scalar field (∂u/∂n = g for −Δu), a
    /// traction σ·n = g for elasticity.
    pub fn neumann(
        mut self,
        space: &Space,
        part: &BoundaryPart,
        g: impl Fn(&[f64; 3], &[f64; 3], &mut [f64]),
    ) -> Result<Self> {
        let facets = part.facets(space)?;
        let (nc, nb) = (self.nc, space.nb());
        let mut v = vec![0.0; nc];
        facet_points(space, facets, |p| {
            g(&p.x, &p.normal, &mut v);
            for (b, phi) in p.phi.iter().enumerate() {
                let row = space.cell_dofs[p.cell * nb + b] as usize * nc;
                for c in 0..nc {
                    self.values[row + c] += p.weight * phi * v[c];
                }
            }
        });
        Ok(self)
    }
}
