//! Grid transfer between consecutive uniformly refined Q_p spaces
//! (Geveler et al. §3.3): the prolongation `P_ij = φ_j^coarse(ξ_i)`, the
//! coarse basis functions evaluated at the fine nodes, and the restriction
//! `R = Pᵀ`. A fine node's position in its parent's reference cell is
//! exact, since refinement keeps the parent's reference frame.

use crate::mesh::refine::Refinement;
use crate::operator::csr::Csr;
use crate::space::dirichlet::NONE;
use crate::space::{Layout, Space};
use crate::{Error, Result, Scalar};
use fem_core::element::pow;
use fem_core::lagrange::lagrange;

/// The prolongation from `coarse` (rows of `lc`) to its refinement `fine`
/// (rows of `lf`), as a `lf.n_rows × lc.n_rows` CSR matrix. Eliminated
/// DOFs have no row or column; fixed rows of either side are left out,
/// so corrections never touch Dirichlet values.
pub fn prolongation<T: Scalar>(coarse: &Space, lc: &Layout, fine: &Space, lf: &Layout, r: &Refinement) -> Result<Csr<T>> {
    if coarse.degree != fine.degree || coarse.dim != fine.dim || r.parent.len() != fine.n_cells() {
        return Err(Error::InvalidArgument("prolongation: the spaces are not one uniform refinement apart".into()));
    }
    let (dim, np) = (fine.dim, fine.degree + 1);
    let nb = pow(np, dim);
    let nodes = &fine.nodes_1d;
    let mut rows: Vec<Option<Vec<(u32, T)>>> = vec![None; lf.n_rows];
    for f in 0..fine.n_cells() {
        let (c, kid) = (r.parent[f] as usize, r.child[f] as usize);
        for i in 0..nb {
            let row = lf.cell_rows[f * nb + i];
            if row == NONE || lf.fixed[row as usize] || rows[row as usize].is_some() {
                continue;
            }
            // The node in the parent's reference cell [-1, 1]^dim.
            let xi: Vec<f64> = (0..dim).map(|a| (nodes[(i / pow(np, a)) % np] - 1.0) / 2.0 + ((kid >> a) & 1) as f64).collect();
            let mut entries: Vec<(u32, T)> = (0..nb)
                .filter_map(|j| {
                    let col = lc.cell_rows[c * nb + j];
                    if col == NONE || lc.fixed[col as usize] {
                        return None;
                    }
                    let phi: f64 = (0..dim).map(|a| lagrange(nodes, (j / pow(np, a)) % np, xi[a])).product();
                    (phi.abs() > 1e-13).then(|| (col, T::from_f64(phi)))
                })
                .collect();
            entries.sort_by_key(|e| e.0);
            rows[row as usize] = Some(entries);
        }
    }
    Ok(crate::space::nested::from_rows(rows.into_iter().map(Option::unwrap_or_default).collect()))
}

/// `Aᵀ` of an `a.n_rows × n_cols` CSR matrix, columns sorted.
pub fn transpose<T: Scalar>(a: &Csr<T>, n_cols: usize) -> Csr<T> {
    let mut row_ptr = vec![0u32; n_cols + 1];
    for &c in &a.col {
        row_ptr[c as usize + 1] += 1;
    }
    for i in 0..n_cols {
        row_ptr[i + 1] += row_ptr[i];
    }
    let mut fill = row_ptr.clone();
    let (mut col, mut val) = (vec![0u32; a.nnz()], vec![T::ZERO; a.nnz()]);
    for r in 0..a.n_rows {
        for p in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
            let c = a.col[p] as usize;
            col[fill[c] as usize] = r as u32;
            val[fill[c] as usize] = a.val[p];
            fill[c] += 1;
        }
    }
    Csr { n_rows: n_cols, row_ptr, col, val }
}
