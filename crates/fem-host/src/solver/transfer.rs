//! Grid transfer between consecutive uniformly refined Q_p spaces
//! (Geveler et al. §3.3) on the rows of their layouts: the prolongation
//! `P_ij = φ_j^coarse(ξ_i)`, the coarse basis functions at the fine nodes
//! ([`tensor_interpolation`], the nested spaces' transfer), and the
//! restriction `R = Pᵀ`.

use crate::mesh::refine::Refinement;
use crate::operator::csr::Csr;
use crate::space::dirichlet::NONE;
use crate::space::nested::{from_rows, tensor_interpolation};
use crate::space::{Layout, Space};
use crate::{Error, Result, Scalar};

/// The prolongation from `coarse` (rows of `lc`) to its refinement `fine`
/// (rows of `lf`), as a `lf.n_rows × lc.n_rows` CSR matrix. Eliminated
/// DOFs have no row or column; fixed rows of either side are left out,
/// so corrections never touch Dirichlet values.
pub fn prolongation<T: Scalar>(coarse: &Space, lc: &Layout, fine: &Space, lf: &Layout, r: &Refinement) -> Result<Csr<T>> {
    if coarse.degree != fine.degree || coarse.dim() != fine.dim() {
        return Err(Error::InvalidArgument("prolongation: the spaces are not one uniform refinement apart".into()));
    }
    let p = tensor_interpolation(&coarse.cell_dofs, &fine.cell_dofs, fine.n_dofs, fine.dim(), fine.degree, &r.parent, &r.child)?;
    Ok(on_rows(&p, coarse.n_dofs, lc, lf))
}

/// The DOF transfer `p` (`n_coarse` columns) between the free rows of
/// `lf` (rows) and `lc` (columns).
fn on_rows<T: Scalar>(p: &Csr<f64>, n_coarse: usize, lc: &Layout, lf: &Layout) -> Csr<T> {
    let mut coarse_row = vec![NONE; n_coarse];
    for (r, &d) in lc.row_dof.iter().enumerate() {
        if !lc.fixed[r] {
            coarse_row[d as usize] = r as u32;
        }
    }
    let rows = lf
        .row_dof
        .iter()
        .zip(&lf.fixed)
        .map(|(&d, &fixed)| {
            if fixed {
                return Vec::new();
            }
            let d = d as usize;
            let mut row: Vec<(u32, T)> = (p.row_ptr[d] as usize..p.row_ptr[d + 1] as usize)
                .filter_map(|k| Some(coarse_row[p.col[k] as usize]).filter(|&c| c != NONE).map(|c| (c, T::from_f64(p.val[k]))))
                .collect();
            row.sort_unstable_by_key(|e| e.0);
            row
        })
        .collect();
    from_rows(rows)
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
