//! Which rank each cell goes to: METIS's k-way partition of the dual
//! graph (cells joined where they share a facet), element-balanced, or
//! cuts of a space-filling (Morton) curve through the cell centres; with
//! the quality a user judges it by (the facets cut, the imbalance).

use crate::space::Space;
use crate::{Error, Result};
use rayon::prelude::*;
use serde::Serialize;

/// How cells are split among ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Partitioner {
    /// METIS k-way on the dual graph: few facets cut.
    Metis,
    /// Equal runs of cells along a Morton curve through their centres:
    /// no graph, compact parts on structured meshes.
    Curve,
    /// Bricks of a structured grid ([`super::bricks`]), which each rank
    /// works out alone.
    Bricks,
}

/// The rank of every cell, and its quality.
#[derive(Clone, Debug, Serialize)]
pub struct Partition {
    /// Ranks.
    pub parts: usize,
    /// `rank[cell]`.
    #[serde(skip)]
    pub rank: Vec<u32>,
    /// How it was made.
    pub partitioner: Partitioner,
    /// Facets between cells of different ranks.
    pub cut_facets: usize,
    /// Cells of each rank.
    pub cells: Vec<usize>,
    /// The largest rank's cells over the mean (1 = perfect balance).
    pub imbalance: f64,
}

/// The sorted vertex key of local facet `l` of cell `c` (see
/// [`crate::space::facets`] for the local numbering).
fn facet_key(space: &Space, c: usize, l: usize) -> [u32; 4] {
    let nv = space.shape.vertices();
    let v = &space.cell_vertices[c * nv..(c + 1) * nv];
    let mut k = [u32::MAX; 4];
    let on: Vec<u32> = if space.shape.is_simplex() {
        (0..nv).filter(|&j| j != l).map(|j| v[j]).collect()
    } else {
        (0..nv).filter(|&j| (j >> (l / 2)) & 1 == l % 2).map(|j| v[j]).collect()
    };
    k[..on.len()].copy_from_slice(&on);
    k[..on.len()].sort_unstable();
    k
}

/// The dual graph in CSR form: cells joined where they share a facet.
pub fn dual_graph(space: &Space) -> (Vec<usize>, Vec<u32>) {
    let (n, per) = (space.n_cells(), space.shape.local_facets());
    let mut keyed: Vec<([u32; 4], u32)> = (0..n * per).into_par_iter().map(|f| (facet_key(space, f / per, f % per), (f / per) as u32)).collect();
    keyed.par_sort_unstable();
    let pairs: Vec<(u32, u32)> = keyed.par_chunk_by(|a, b| a.0 == b.0).filter(|g| g.len() == 2).map(|g| (g[0].1, g[1].1)).collect();
    let mut degree = vec![0usize; n + 1];
    for &(a, b) in &pairs {
        degree[a as usize + 1] += 1;
        degree[b as usize + 1] += 1;
    }
    for i in 0..n {
        degree[i + 1] += degree[i];
    }
    let (ptr, mut fill) = (degree.clone(), degree);
    let mut adj = vec![0u32; ptr[n]];
    for &(a, b) in &pairs {
        adj[fill[a as usize]] = b;
        fill[a as usize] += 1;
        adj[fill[b as usize]] = a;
        fill[b as usize] += 1;
    }
    (ptr, adj)
}

impl Partition {
    /// The cells of `space` split among `parts` ranks by `how`. With more
    /// ranks than cells, the ranks past the cells own none.
    pub fn new(space: &Space, parts: usize, how: Partitioner) -> Result<Self> {
        if parts == 0 {
            return Err(Error::InvalidArgument("a partition needs at least one part".into()));
        }
        if how == Partitioner::Bricks {
            return Err(Error::InvalidArgument("bricks split a structured grid of elements (fem bp); a mesh's cells are split by metis or curve".into()));
        }
        let n = space.n_cells();
        let (ptr, adj) = dual_graph(space);
        let rank: Vec<u32> = if parts == 1 {
            vec![0; n]
        } else if parts >= n {
            (0..n as u32).collect()
        } else {
            match how {
                Partitioner::Metis => metis_parts(&ptr, &adj, parts)?,
                Partitioner::Curve => curve_parts(space, parts),
                Partitioner::Bricks => unreachable!("refused above"),
            }
        };
        Ok(Self::of(parts, how, rank, &ptr, &adj))
    }

    /// The quality of the partition `rank` of the cells of dual graph
    /// `ptr`, `adj`.
    fn of(parts: usize, how: Partitioner, rank: Vec<u32>, ptr: &[usize], adj: &[u32]) -> Self {
        let n = rank.len();
        let mut cells = vec![0usize; parts];
        rank.iter().for_each(|&r| cells[r as usize] += 1);
        let cut_facets = (0..n).map(|c| adj[ptr[c]..ptr[c + 1]].iter().filter(|&&o| rank[o as usize] != rank[c]).count()).sum::<usize>() / 2;
        let mean = n as f64 / parts as f64;
        let imbalance = if n == 0 { 1.0 } else { *cells.iter().max().unwrap_or(&0) as f64 / mean };
        Self { parts, rank, partitioner: how, cut_facets, cells, imbalance }
    }
}

/// METIS keeps state between the steps of a call: calls from several
/// threads (ranks run as threads) take turns.
static METIS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// METIS k-way (contiguous parts, edge cut minimised, 3 % imbalance).
fn metis_parts(ptr: &[usize], adj: &[u32], parts: usize) -> Result<Vec<u32>> {
    let _turn = METIS.lock().unwrap_or_else(|p| p.into_inner());
    let idx = |v: usize| metis::Idx::try_from(v).map_err(|_| Error::InvalidArgument(format!("{v} exceeds METIS's 32-bit indices")));
    let xadj = ptr.iter().map(|&p| idx(p)).collect::<Result<Vec<_>>>()?;
    let adjncy = adj.iter().map(|&a| idx(a as usize)).collect::<Result<Vec<_>>>()?;
    let mut part = vec![0 as metis::Idx; ptr.len() - 1];
    metis::Graph::new(1, idx(parts)?, &xadj, &adjncy)
        .map_err(|e| Error::InvalidArgument(format!("METIS refused the dual graph: {e}")))?
        .part_kway(&mut part)
        .map_err(|e| Error::InvalidArgument(format!("METIS failed to partition: {e}")))?;
    Ok(part.into_iter().map(|p| p as u32).collect())
}

/// Equal runs of cells in the Morton order of their centres.
fn curve_parts(space: &Space, parts: usize) -> Vec<u32> {
    let (n, nv, d) = (space.n_cells(), space.shape.vertices(), space.dim());
    let centre = |c: usize| -> [f64; 3] {
        let mut x = [0.0; 3];
        for &v in &space.cell_vertices[c * nv..(c + 1) * nv] {
            (0..3).for_each(|a| x[a] += space.vertices[v as usize][a] / nv as f64);
        }
        x
    };
    let centres: Vec<[f64; 3]> = (0..n).into_par_iter().map(centre).collect();
    let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    for x in &centres {
        (0..3).for_each(|a| {
            lo[a] = lo[a].min(x[a]);
            hi[a] = hi[a].max(x[a]);
        });
    }
    // 21 bits an axis interleaved into 63
    let code = |x: &[f64; 3]| -> u64 {
        let mut m = 0u64;
        let q: Vec<u64> = (0..d).map(|a| if hi[a] > lo[a] { (((x[a] - lo[a]) / (hi[a] - lo[a])) * ((1u64 << 21) - 1) as f64) as u64 } else { 0 }).collect();
        for bit in 0..21 {
            for (a, qa) in q.iter().enumerate() {
                m |= ((qa >> bit) & 1) << (bit * d + a);
            }
        }
        m
    };
    let mut order: Vec<(u64, u32)> = centres.par_iter().enumerate().map(|(c, x)| (code(x), c as u32)).collect();
    order.par_sort_unstable();
    let mut rank = vec![0u32; n];
    for (k, &(_, c)) in order.iter().enumerate() {
        rank[c as usize] = (k * parts / n) as u32;
    }
    rank
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::BoxMesh;

    #[test]
    fn partitions_balance_cells_and_count_the_cut() {
        let mesh = BoxMesh::structured(2, 8).build().unwrap();
        let space = Space::tensor(&mesh, 1).unwrap();
        let (ptr, adj) = dual_graph(&space);
        // 2·8·7 interior facets, each seen from both cells
        assert_eq!((ptr[64], adj.len()), (224, 224));
        for how in [Partitioner::Metis, Partitioner::Curve] {
            let p = Partition::new(&space, 4, how).unwrap();
            assert_eq!(p.cells.iter().sum::<usize>(), 64);
            assert!(p.imbalance <= 1.1, "{how:?}: {:?}", p.cells);
            // four quarters cut 16 facets; no split of 64 squares into 4 cuts fewer
            assert!((16..=24).contains(&p.cut_facets), "{how:?}: {}", p.cut_facets);
        }
        let p = Partition::new(&space, 70, Partitioner::Metis).unwrap();
        assert_eq!((p.cells[63], p.cells[64], p.cut_facets), (1, 0, 112));
        assert!(Partition::new(&space, 0, Partitioner::Curve).is_err());
    }

    #[test]
    fn metis_called_from_threads_at_once_partitions_alike() {
        let mesh = BoxMesh::unstructured(3, 6, 2).build().unwrap();
        let space = Space::tensor(&mesh, 1).unwrap();
        let serial = Partition::new(&space, 3, Partitioner::Metis).unwrap();
        // METIS called from several threads at once
        let each = crate::distributed::Threads::run(3, |_| Partition::new(&space, 3, Partitioner::Metis).unwrap());
        for p in &each {
            assert_eq!((&p.rank, p.cut_facets), (&serial.rank, serial.cut_facets));
        }
    }
}
