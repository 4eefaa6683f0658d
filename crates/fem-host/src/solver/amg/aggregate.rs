//! Aggregation of the strength graph's nodes: pyamg's
//! `standard_aggregation` (Vaněk, Mandel & Brezina 1996, §4.1), three
//! greedy passes in node order. Pass 1 makes an aggregate of every node
//! whose strong neighbours are all free, with those neighbours; pass 2
//! joins each node left over to an aggregate of a neighbour; pass 3 makes
//! aggregates of what remains, each node with its free neighbours. Nodes
//! without strong neighbours (rows held fixed, decoupled unknowns) join
//! no aggregate: the coarse levels need not represent them, the smoother
//! solves them. The passes follow pyamg's exactly, so that hierarchies
//! can be compared with its own.

use super::strength::Graph;

pub use fem_kernels::amg::NONE;

/// Each node's aggregate ([`NONE`] for isolated nodes) and the
/// number of aggregates.
pub fn aggregate(g: &Graph) -> (Vec<u32>, usize) {
    let n = g.n_nodes();
    // 0: free; > 0: aggregate + 1 from pass 1; < 0: −(aggregate + 1)
    // joined in pass 2; ISOLATED: no strong neighbour
    const ISOLATED: i64 = i64::MIN;
    let mut x = vec![0i64; n];
    let mut next: i64 = 1;
    for i in 0..n {
        if x[i] != 0 {
            continue;
        }
        let nb = g.neighbours(i);
        if nb.is_empty() {
            x[i] = ISOLATED;
        } else if nb.iter().all(|&j| x[j as usize] == 0) {
            x[i] = next;
            for &j in nb {
                x[j as usize] = next;
            }
            next += 1;
        }
    }
    for i in 0..n {
        if x[i] != 0 {
            continue;
        }
        if let Some(&j) = g.neighbours(i).iter().find(|&&j| x[j as usize] > 0) {
            x[i] = -x[j as usize];
        }
    }
    let mut next = next - 1;
    let mut agg = vec![NONE; n];
    for i in 0..n {
        match x[i] {
            ISOLATED => {}
            0 => {
                agg[i] = next as u32;
                for &j in g.neighbours(i) {
                    let j = j as usize;
                    if x[j] == 0 && agg[j] == NONE {
                        agg[j] = next as u32;
                        x[j] = ISOLATED + 1; // taken in this pass
                    }
                }
                next += 1;
            }
            v if v == ISOLATED + 1 => {}
            v => agg[i] = (v.abs() - 1) as u32,
        }
    }
    (agg, next as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(n: usize) -> Graph {
        let mut g = Graph { row_ptr: vec![0], col: Vec::new() };
        for i in 0..n {
            for j in [i.wrapping_sub(1), i + 1] {
                if j < n {
                    g.col.push(j as u32);
                }
            }
            g.row_ptr.push(g.col.len() as u32);
        }
        g
    }

    /// A path of 10 nodes: pass 1 takes {0,1}, {2,3,4}? No: node 0 with
    /// its neighbour 1; node 2 has the aggregated neighbour 1, so node 3
    /// takes {2,3,4}, node 6 {5,6,7}, node 9 has an aggregated neighbour
    /// 8? No, 8 is free: {8,9}. Written out as pyamg computes it.
    #[test]
    fn a_path_aggregates_as_pyamg_does() {
        // pyamg.aggregation.standard_aggregation on the 10-node path
        // (strength of the 1D Laplacian): [0 0 1 1 1 2 2 2 3 3]
        let (agg, n) = aggregate(&path(10));
        assert_eq!(n, 4);
        assert_eq!(agg, vec![0, 0, 1, 1, 1, 2, 2, 2, 3, 3]);
    }

    /// Isolated nodes join nothing; every other node joins an aggregate
    /// that holds a strong neighbour or itself.
    #[test]
    fn isolated_nodes_stay_out_and_the_rest_join() {
        let mut g = path(7);
        // cut node 3 out of the path
        let cut = |c: &Vec<u32>| c.iter().copied().filter(|&j| j != 3).collect::<Vec<_>>();
        let rows: Vec<Vec<u32>> = (0..7).map(|i| if i == 3 { Vec::new() } else { cut(&g.neighbours(i).to_vec()) }).collect();
        g = Graph { row_ptr: vec![0], col: Vec::new() };
        for r in rows {
            g.col.extend(r);
            g.row_ptr.push(g.col.len() as u32);
        }
        let (agg, n) = aggregate(&g);
        assert_eq!(agg[3], NONE);
        assert!(agg.iter().enumerate().all(|(i, &a)| i == 3 || (a as usize) < n));
        for i in (0..7).filter(|&i| i != 3) {
            assert!(g.neighbours(i).iter().any(|&j| agg[j as usize] == agg[i]), "node {i} alone");
        }
    }
}
