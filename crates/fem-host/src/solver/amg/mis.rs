//! Parallel aggregation (Bell, Dalton & Olson 2012; the aggregation of
//! Cusp and AmgX): a maximal independent set of the strength graph's
//! square (no two of its nodes within distance 2) is found in rounds,
//! each node comparing pseudo-random keys with those within distance 2;
//! its nodes are the aggregates' roots, their neighbours join them, and
//! the nodes left (within distance 2 of a root) join a neighbour's
//! aggregate. Every step is a function of one node and its neighbours
//! ([`fem_kernels::amg`]), so the GPU set-up runs the same steps and finds
//! the same aggregates; pyamg's `standard_aggregation` ([`super::aggregate`])
//! is sequential.

use super::strength::Graph;
use crate::CpuBackend;
use fem_kernels::amg;
use rayon::prelude::*;

/// Each node's aggregate ([`amg::NONE`] for nodes without strong
/// neighbours) and the number of aggregates; the aggregates are numbered
/// in the order of their roots.
pub fn aggregate(cpu: &CpuBackend, g: &Graph) -> (Vec<u32>, usize) {
    let n = g.n_nodes();
    let (rp, col) = (g.row_ptr.as_ptr() as usize, g.col.as_ptr() as usize);
    let none = || std::ptr::null::<u8>();
    // every node's arguments: its own bounds in the graph
    let node = move |i: usize| unsafe {
        let rp = rp as *const u32;
        (i, *rp.add(i) as usize, *rp.add(i + 1) as usize, col as *const u32)
    };
    cpu.install(|| {
        let mut keys: Vec<u64> = (0..n).into_par_iter().map(|i| unsafe {
            let (i, lo, hi, col) = node(i);
            amg::initial_key(i, lo, hi, col, none())
        }).collect();
        let mut max1 = vec![0u64; n];
        let mut max2 = vec![0u64; n];
        while keys.par_iter().any(|&k| amg::state_of(k) == amg::UNDECIDED) {
            let nb_max = |x: &[u64], out: &mut [u64]| {
                let x = x.as_ptr() as usize;
                out.par_iter_mut().enumerate().for_each(|(i, o)| unsafe {
                    let (i, lo, hi, col) = node(i);
                    *o = amg::neighbourhood_max(i, lo, hi, col, none(), x as *const u64);
                });
            };
            nb_max(&keys, &mut max1);
            nb_max(&max1, &mut max2);
            keys.par_iter_mut().zip(&max2).for_each(|(k, &m)| *k = amg::mis_update(*k, m));
        }
        let mut id = vec![0u32; n];
        let mut roots = 0u32;
        for (i, k) in keys.iter().enumerate() {
            id[i] = roots;
            roots += (amg::state_of(*k) == amg::IN) as u32;
        }
        let (kp, ip) = (keys.as_ptr() as usize, id.as_ptr() as usize);
        let first: Vec<u32> = (0..n).into_par_iter().map(|i| unsafe {
            let (i, lo, hi, col) = node(i);
            amg::root_aggregate(i, lo, hi, col, none(), kp as *const u64, ip as *const u32)
        }).collect();
        let fp = first.as_ptr() as usize;
        let agg = (0..n).into_par_iter().map(|i| unsafe {
            let (i, lo, hi, col) = node(i);
            amg::join_aggregate(i, lo, hi, col, none(), fp as *const u32)
        }).collect();
        (agg, roots as usize)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2D grid graph of `w × h` nodes (5-point couplings).
    fn grid(w: usize, h: usize) -> Graph {
        let mut g = Graph { row_ptr: vec![0], col: Vec::new() };
        for y in 0..h {
            for x in 0..w {
                let mut nb = Vec::new();
                if y > 0 { nb.push((y - 1) * w + x); }
                if x > 0 { nb.push(y * w + x - 1); }
                if x + 1 < w { nb.push(y * w + x + 1); }
                if y + 1 < h { nb.push((y + 1) * w + x); }
                g.col.extend(nb.iter().map(|&j| j as u32));
                g.row_ptr.push(g.col.len() as u32);
            }
        }
        g
    }

    /// Roots are at least 3 apart, every node is in an aggregate that
    /// holds a neighbour or is its root's, and aggregates are connected
    /// through their own nodes to their root within 2 steps.
    #[test]
    fn aggregates_are_rooted_and_cover_the_grid() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let g = grid(37, 23);
        let (agg, n_agg) = aggregate(&cpu, &g);
        assert!(n_agg > 0 && n_agg < g.n_nodes() / 4, "{n_agg} aggregates of {} nodes", g.n_nodes());
        let mut size = vec![0usize; n_agg];
        for (i, &a) in agg.iter().enumerate() {
            assert!((a as usize) < n_agg, "node {i} in no aggregate");
            size[a as usize] += 1;
            assert!(size[a as usize] == 1 || g.neighbours(i).iter().any(|&j| agg[j as usize] == a), "node {i} apart from its aggregate");
        }
        assert!(size.iter().all(|&s| (2..=25).contains(&s)), "sizes {:?}", size);
        // the same aggregates with one thread
        let one = CpuBackend::new(Some(1)).unwrap();
        assert_eq!(aggregate(&one, &g), (agg, n_agg));
    }

    /// Nodes without neighbours join nothing.
    #[test]
    fn isolated_nodes_stay_out() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let g = Graph { row_ptr: vec![0, 1, 2, 2], col: vec![1, 0] };
        let (agg, n) = aggregate(&cpu, &g);
        assert_eq!((agg[2], n), (amg::NONE, 1));
        assert_eq!(agg[0], agg[1]);
    }
}
