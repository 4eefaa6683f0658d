//! The problem on the whole mesh, as one rank solves it or rank 0 cuts
//! it into pieces: the file's cells refined into every level's space and
//! numbered, the Dirichlet rows, the load, the natural conditions' parts,
//! and the physics' auxiliary values.

use super::{lame, GroupValue, LoadKind, MeshSolveOptions, Physics};
use fem_host::stages::Laps;
use crate::expression::Expression;
use fem_host::distributed::AuxAt;
use fem_host::io::gmsh::GmshMesh;
use fem_host::rng::SplitMix64;
use fem_host::space::{BoundaryPart, Constraints, Load, NestedSpaces, Space};
use fem_host::{CpuBackend, Error, Result};
use std::collections::HashSet;
use std::f64::consts::PI;

/// The whole problem.
pub(super) struct Problem {
    /// Every level's space, the finest last.
    pub nested: NestedSpaces,
    /// Components of the field.
    pub nc: usize,
    /// The Dirichlet rows.
    pub constraints: Constraints,
    /// The load at t = 0.
    pub load: Load,
    /// The Neumann groups' parts and values.
    pub neumann: Vec<(BoundaryPart, Vec<Expression>)>,
    /// The Robin groups as one part, and the nodal g.
    pub robin: Option<(BoundaryPart, Vec<f64>)>,
    /// Whether the load changes in time.
    pub moving_load: bool,
}

impl Problem {
    /// `o` on the cells of `file`, the stages' seconds marked in `marks`.
    pub fn build(file: &GmshMesh, o: &MeshSolveOptions, cpu: &CpuBackend, marks: &mut Laps, stage: &(dyn Fn(&str) + Sync)) -> Result<Self> {
        stage("space");
        let (cells, nodes) = file.cell_mesh()?;
        marks.lap("mesh");
        let nested = NestedSpaces::new(cells, o.degree, o.refine + 1)?;
        marks.lap("spaces");
        let nested = nested.renumbered(cpu, o.ordering, 7)?;
        marks.lap("numbering");
        let space = nested.finest();
        let d = space.shape.dim();
        let nc = if o.physics.is_vector() { d } else { 1 };
        stage("boundary conditions and load");
        // facets of the natural (Neumann, Robin) conditions
        let mut natural_keys = HashSet::new();
        let robin = robin_data(file, &nodes, space, o, &mut natural_keys)?;
        let mut neumann = Vec::new();
        for n in &o.neumann {
            let part = file.boundary(std::slice::from_ref(&n.group), &nodes)?;
            if let BoundaryPart::Facets { keys, .. } = &part {
                natural_keys.extend(keys.iter().copied());
            }
            let v = n.value.len();
            if !(v == 1 || (v == d && nc == d)) {
                let or = if nc == d { format!(" or {d}") } else { String::new() };
                return Err(Error::InvalidArgument(format!("Neumann group `{}`: {v} values; give one{or}", n.group)));
            }
            neumann.push((part, n.value.clone()));
        }
        let mut constraints = Constraints::none(space, nc);
        if o.dirichlet.is_empty() {
            let keys: HashSet<[u32; 4]> = space
                .facets
                .iter()
                .map(|f| f.key)
                .filter(|k| !natural_keys.contains(k))
                .collect();
            // a boundary cooled all round needs no Dirichlet part
            if !(robin.is_some() && keys.is_empty()) {
                let rest = BoundaryPart::Facets {
                    name: "boundary outside the Neumann and Robin groups".into(),
                    keys,
                };
                constraints = constraints.dirichlet(space, &rest, |_, u| u.fill(0.0))?;
            }
        }
        // where groups share nodes, the later group's values hold there
        for g in &o.dirichlet {
            let values = dirichlet_values(g, nc)?;
            let part = file.boundary(std::slice::from_ref(&g.group), &nodes)?;
            let fill = move |x: &[f64; 3], t: f64, u: &mut [f64]| u.iter_mut().zip(&values).for_each(|(u, e)| *u = e.at(x, t));
            constraints = match g.value.iter().any(Expression::depends_on_time) {
                true => constraints.dirichlet_in_time(space, &part, fill)?,
                false => constraints.dirichlet(space, &part, |x, u| fill(x, 0.0, u))?,
            };
        }
        if let LoadKind::Expression(f) = &o.load {
            if !(f.len() == 1 || f.len() == nc) {
                return Err(Error::InvalidArgument(format!("the load has {} components; give one{}", f.len(), if nc > 1 { format!(" or {nc}") } else { String::new() })));
            }
        }
        let load = natural_load(space, nc, &neumann, &o.load, 0.0)?;
        let moving_load = neumann.iter().any(|(_, v)| v.iter().any(Expression::depends_on_time)) || matches!(&o.load, LoadKind::Expression(f) if f.iter().any(Expression::depends_on_time));
        marks.lap("boundary");
        Ok(Self { nested, nc, constraints, load, neumann, robin, moving_load })
    }

    /// The finest space.
    pub fn space(&self) -> &Space {
        self.nested.finest()
    }

    /// The load at time `t`.
    pub fn load_at(&self, kind: &LoadKind, t: f64) -> Result<Load> {
        natural_load(self.space(), self.nc, &self.neumann, kind, t)
    }

    /// The physics' auxiliary values (a run for every node or every cell)
    /// and where its boundary term acts.
    pub fn aux(&self, o: &MeshSolveOptions) -> Result<(Vec<f64>, AuxAt, Option<&BoundaryPart>)> {
        let space = self.space();
        Ok(match o.physics {
            Physics::Poisson | Physics::Mass => ((0..space.n_dofs).flat_map(|_| [1.0, 0.0]).collect(), AuxAt::Nodes, None),
            Physics::Radiation => {
                let (part, g) = self.robin.as_ref().ok_or_else(|| Error::InvalidArgument("radiation needs Robin groups".into()))?;
                (g.iter().flat_map(|&g| [0.0, g]).collect(), AuxAt::Nodes, Some(part))
            }
            Physics::Elasticity | Physics::NeoHookean => {
                let lame = lame(o.young, o.poisson_ratio)?;
                ((0..space.n_cells()).flat_map(|_| lame).collect(), AuxAt::Cells, None)
            }
        })
    }
}

/// The Robin groups of `o` as one boundary part and the nodal g (each
/// group's value on its nodes), their facet keys added to `taken`; `None`
/// without Robin groups. An error when the physics has no Robin term or
/// needs one, or a group has other than one value.
fn robin_data(file: &GmshMesh, nodes: &[u32], space: &Space, o: &MeshSolveOptions, taken: &mut HashSet<[u32; 4]>) -> Result<Option<(BoundaryPart, Vec<f64>)>> {
    match (o.physics == Physics::Radiation, o.robin.is_empty()) {
        (false, true) => return Ok(None),
        (false, false) => return Err(Error::InvalidArgument(format!("Robin groups are the boundary term of radiation, not of {:?}", o.physics))),
        (true, true) => return Err(Error::InvalidArgument("radiation cools through Robin groups: name at least one (GROUP=g)".into())),
        (true, false) => {}
    }
    let (mut keys, mut g) = (HashSet::new(), vec![0.0; space.n_dofs]);
    for r in &o.robin {
        let [v] = &r.value[..] else {
            return Err(Error::InvalidArgument(format!("Robin group `{}`: one value g, not {}", r.group, r.value.len())));
        };
        if v.depends_on_time() {
            return Err(Error::InvalidArgument(format!("Robin group `{}`: g = {v} changes in time; the cooling data are fixed", r.group)));
        }
        let part = file.boundary(std::slice::from_ref(&r.group), nodes)?;
        let facets = part.facets(space)?;
        keys.extend(facets.iter().map(|f| f.key));
        for (node, _) in space.facet_mask(facets).iter().enumerate().filter(|m| *m.1) {
            g[node] = v.at(&space.dof_coords[node], 0.0);
        }
    }
    taken.extend(keys.iter().copied());
    Ok(Some((BoundaryPart::Facets { name: "the Robin groups".into(), keys }, g)))
}

/// Π sin(π xₐ) over the first `d` coordinates.
pub(super) fn sine(x: &[f64; 3], d: usize) -> f64 {
    x[..d].iter().map(|&v| (PI * v).sin()).product()
}

/// The `nc` values a Dirichlet group holds: zero without values, one
/// value in every component, or one per component.
fn dirichlet_values(g: &GroupValue, nc: usize) -> Result<Vec<Expression>> {
    match g.value.len() {
        0 => Ok(vec![Expression::constant(0.0); nc]),
        1 => Ok(vec![g.value[0].clone(); nc]),
        n if n == nc => Ok(g.value.clone()),
        n => Err(Error::InvalidArgument(format!("Dirichlet group `{}`: {n} values; give one{}", g.group, if nc > 1 { format!(" or {nc}") } else { String::new() }))),
    }
}

/// The load at time `t`: the Neumann groups' fluxes or tractions (on
/// their parts, one value along the outward normal n for a vector field,
/// else one per component) and the volume load of `kind`.
fn natural_load(space: &Space, nc: usize, neumann: &[(BoundaryPart, Vec<Expression>)], kind: &LoadKind, t: f64) -> Result<Load> {
    let mut load = Load::zero(space, nc);
    for (part, v) in neumann {
        load = load.neumann(space, part, |x, normal, g| {
            for (c, gc) in g.iter_mut().enumerate() {
                *gc = if v.len() == 1 && nc > 1 { v[0].at(x, t) * normal[c] } else { v[c.min(v.len() - 1)].at(x, t) };
            }
        })?;
    }
    volume_load(space, nc, kind, t, load)
}

/// `load` plus the volume load of `kind` at time `t`.
fn volume_load(space: &Space, nc: usize, kind: &LoadKind, t: f64, load: Load) -> Result<Load> {
    let d = space.shape.dim();
    Ok(match kind {
        LoadKind::Sine => load.source(space, |x, f| f.fill(d as f64 * PI * PI * sine(x, d))),
        LoadKind::One if nc == 1 => load.source(space, |_, f| f[0] = 1.0),
        LoadKind::One => load.source(space, |_, f| {
            f.fill(0.0);
            f[nc - 1] = -1.0;
        }),
        LoadKind::Random => {
            // drawn from each node's position, so that any numbering of
            // the nodes sees the same load
            let nodal: Vec<f64> = (0..space.n_dofs * nc)
                .map(|r| {
                    let x = space.dof_coords[r / nc];
                    let seed = x.iter().fold(2024 + (r % nc) as u64, |h, v| (h ^ v.to_bits()).wrapping_mul(0x0100_0000_01b3));
                    2.0 * SplitMix64::new(seed).next_f64() - 1.0
                })
                .collect();
            load.nodal_source(space, &nodal)?
        }
        LoadKind::Zero => load,
        LoadKind::Expression(e) => load.source(space, |x, f| f.iter_mut().enumerate().for_each(|(c, f)| *f = e[c.min(e.len() - 1)].at(x, t))),
    })
}

