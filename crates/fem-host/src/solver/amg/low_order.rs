//! p-multigrid under AMG for high-order spaces: the level below a P2, Q2
//! or higher operator is its Galerkin projection on the mesh's P1/Q1
//! functions (`Pᵀ A P` with `P` the vertex interpolation), and AMG
//! coarsens that low-order operator (the nekRS and MFEM shape). Aggregating
//! a high-order operator directly couples every node to 30–125 others, so
//! aggregates grow huge and the iterations with the mesh; the low-order
//! operator aggregates as P1 and Q1 do.

use super::{check, galerkin, hierarchy, lap, spectral_radius, upload, AmgOptions, AmgStats, LevelStats, Nullspace};
use crate::operator::csr::Csr;
use crate::solver::multigrid::Multigrid;
use crate::solver::PrecondOps;
use crate::space::nested::{field_prolongation, same_nodes, vertex_interpolation};
use crate::space::Space;
use crate::{CpuBackend, Result, Scalar};
use std::time::Instant;

/// The low-order level of a high-order field: the prolongation from the
/// vertices' `nc` components and their near-nullspace.
#[derive(Clone, Debug)]
pub struct LowOrder {
    /// `n_rows × (n_vertices · nc)`, fixed rows empty, and columns at
    /// vertices whose node is held left out.
    pub p: Csr<f64>,
    /// Columns of `p`.
    pub n_coarse: usize,
    /// Constants, or the rigid-body modes at the vertices.
    pub nullspace: Nullspace,
    /// The space's node at every vertex (`u32::MAX` for none): who owns a
    /// vertex's unknowns across ranks.
    pub node: Vec<u32>,
}

impl LowOrder {
    /// The low-order level of `nc`-component fields on `space` whose rows
    /// `fixed` are held; rigid-body modes where `nc` is the dimension and
    /// `rigid` asks for them.
    pub fn new(space: &Space, nc: usize, fixed: &[bool], rigid: bool) -> Result<Self> {
        let scalar = vertex_interpolation(space)?;
        let n_vertices = space.vertices.len();
        // a vertex is held where its own node is; one of no node is left out
        let node = same_nodes(&scalar, n_vertices);
        let fixed_coarse: Vec<bool> = (0..n_vertices * nc).map(|r| node[r / nc] == u32::MAX || fixed[node[r / nc] as usize * nc + r % nc]).collect();
        let p = field_prolongation(scalar, nc, &fixed_coarse, fixed)?;
        let n_coarse = n_vertices * nc;
        let nullspace = if rigid { Nullspace::rigid_body_modes(&space.vertices, nc)? } else { Nullspace::constants(n_coarse, nc) };
        Ok(Self { p, n_coarse, nullspace, node })
    }
}

/// The hierarchy of `a` (`block` rows a node) over its low-order level:
/// `a` smoothed as the AMG levels are, then `Pᵀ a P` and AMG below it.
pub fn build<B: PrecondOps + 'static, T: Scalar>(bk: &B, cpu: &CpuBackend, a: &Csr<f64>, block: usize, low: &LowOrder, o: &AmgOptions) -> Result<(Multigrid<B, T>, AmgStats)> {
    check(cpu, a, block)?;
    let t = Instant::now();
    let a1 = galerkin(cpu, a, &low.p, low.n_coarse)?;
    let projection = lap(t);
    let mut h = hierarchy(cpu, &a1, block, &low.nullspace, o)?;
    let t = Instant::now();
    h.rho.push(spectral_radius(cpu, a));
    h.stats.seconds.smoothing += lap(t);
    h.stats.seconds.galerkin += projection;
    h.stats.levels.insert(0, LevelStats { rows: a.n_rows, nonzeros: a.nnz() });
    let (n0, z0) = (a.n_rows.max(1) as f64, a.nnz().max(1) as f64);
    h.stats.grid_complexity = h.stats.levels.iter().map(|l| l.rows as f64).sum::<f64>() / n0;
    h.stats.operator_complexity = h.stats.levels.iter().map(|l| l.nonzeros as f64).sum::<f64>() / z0;
    h.a.push(a1);
    h.p.push(low.p.clone());
    upload(bk, cpu, a, h, o)
}
