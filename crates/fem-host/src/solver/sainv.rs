//! SAINV (Benzi, Cullum & Tůma): the stabilised approximate inverse
//! `A⁻¹ ≈ Z D⁻¹ Zᵀ` of a symmetric positive definite `A`, from an
//! A-biconjugation of the unit vectors with entries of `Z` below a drop
//! tolerance removed (Geveler et al. §3.2: ε = 0.013). The left-looking
//! form: column `i` starts as `e_i` and is made A-conjugate to the earlier
//! columns `z_j` whose `v_j = A z_j` meet it, in increasing `j`; the
//! stabilised coefficient is `v_jᵀ z / p_j` with `p_j = z_jᵀ A z_j`.
//! `M = Z D⁻¹ Zᵀ` is applied as `Zᵀ`, a scaling and `Z`.

use crate::operator::csr::Csr;
use crate::{Error, Result, Scalar};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Sparse columns `(row, value)` of `Z` and the pivots `p_i`.
pub struct Factors {
    /// `z[i]`: the kept entries `(row, value)` of column `i` of `Z`.
    pub z: Vec<Vec<(u32, f64)>>,
    /// `p[i] = z_iᵀ A z_i`, the diagonal of `D`.
    pub p: Vec<f64>,
}

/// A dense accumulator with a list of its touched entries.
struct Workspace {
    val: Vec<f64>,
    touched: Vec<u32>,
    on: Vec<bool>,
}

impl Workspace {
    fn new(n: usize) -> Self {
        Self { val: vec![0.0; n], touched: Vec::new(), on: vec![false; n] }
    }
    /// Adds `v` at `k`; true when `k` was not touched before.
    fn add(&mut self, k: u32, v: f64) -> bool {
        let fresh = !self.on[k as usize];
        if fresh {
            self.on[k as usize] = true;
            self.touched.push(k);
        }
        self.val[k as usize] += v;
        fresh
    }
    /// The entries, sorted, with `|v| ≥ keep(k)`; the workspace is cleared.
    fn drain(&mut self, keep: impl Fn(u32, f64) -> bool) -> Vec<(u32, f64)> {
        self.touched.sort_unstable();
        let out = self.touched.iter().map(|&k| (k, self.val[k as usize])).filter(|&(k, v)| keep(k, v)).collect();
        for &k in &self.touched {
            self.val[k as usize] = 0.0;
            self.on[k as usize] = false;
        }
        self.touched.clear();
        out
    }
}

/// The factors of `a` (symmetric, sorted columns) with drop tolerance
/// `tol`. The biconjugation runs on `S A S` with `S = diag(A)^{-1/2}`, so
/// the tolerance means the same whatever the matrix's scale, and the
/// factor is returned for `A` itself (`Z = S Ẑ`).
pub fn factor<T: Scalar>(a: &Csr<T>, tol: f64) -> Result<Factors> {
    let n = a.n_rows;
    let s: Vec<f64> = a.diag().iter().map(|d| 1.0 / d.to_f64().abs().sqrt()).collect();
    let scaled = |r: usize, q: usize| a.val[q].to_f64() * s[r] * s[a.col[q] as usize];
    let mut z: Vec<Vec<(u32, f64)>> = Vec::with_capacity(n);
    let mut v: Vec<Vec<(u32, f64)>> = Vec::with_capacity(n);
    let mut p: Vec<f64> = Vec::with_capacity(n);
    // meets[k]: the earlier columns j with v_j(k) ≠ 0.
    let mut meets: Vec<Vec<u32>> = vec![Vec::new(); n];
    let (mut zw, mut vw) = (Workspace::new(n), Workspace::new(n));
    let mut queued = vec![u32::MAX; n];
    for i in 0..n {
        zw.add(i as u32, 1.0);
        let mut heap: BinaryHeap<Reverse<u32>> = meets[i].iter().map(|&j| Reverse(j)).collect();
        for &j in &meets[i] {
            queued[j as usize] = i as u32;
        }
        while let Some(Reverse(j)) = heap.pop() {
            let alpha = v[j as usize].iter().map(|&(k, vk)| vk * zw.val[k as usize]).sum::<f64>() / p[j as usize];
            if alpha == 0.0 {
                continue;
            }
            for &(k, zk) in &z[j as usize] {
                if zw.add(k, -alpha * zk) {
                    for &m in &meets[k as usize] {
                        if m > j && queued[m as usize] != i as u32 {
                            queued[m as usize] = i as u32;
                            heap.push(Reverse(m));
                        }
                    }
                }
            }
        }
        let zi = zw.drain(|k, val| k as usize == i || val.abs() >= tol);
        // v_i = A z_i (A symmetric: combine rows).
        for &(k, zk) in &zi {
            for q in a.row_ptr[k as usize] as usize..a.row_ptr[k as usize + 1] as usize {
                vw.add(a.col[q], zk * scaled(k as usize, q));
            }
        }
        let vi = vw.drain(|_, val| val != 0.0);
        let pi: f64 = {
            let mut s = 0.0;
            let (mut x, mut y) = (0, 0);
            while x < vi.len() && y < zi.len() {
                match vi[x].0.cmp(&zi[y].0) {
                    std::cmp::Ordering::Less => x += 1,
                    std::cmp::Ordering::Greater => y += 1,
                    std::cmp::Ordering::Equal => {
                        s += vi[x].1 * zi[y].1;
                        x += 1;
                        y += 1;
                    }
                }
            }
            s
        };
        if !(pi > 0.0) {
            return Err(Error::InvalidArgument(format!("SAINV: non-positive pivot {pi:e} at row {i} (is the matrix SPD?)")));
        }
        for &(k, _) in &vi {
            if (k as usize) > i {
                meets[k as usize].push(i as u32);
            }
        }
        z.push(zi);
        v.push(vi);
        p.push(pi);
    }
    for col in z.iter_mut() {
        for (k, val) in col.iter_mut() {
            *val *= s[*k as usize];
        }
    }
    Ok(Factors { z, p })
}

/// The SAINV factors as CSR matrices: `Zᵀ` (row `k` = column `z_k`),
/// `Z`, and `D⁻¹` — `M = Z D⁻¹ Zᵀ` is applied as two products and a
/// scaling, which keeps it symmetric positive definite (a dropped explicit
/// product would not be) and costs two passes over `Z` instead of one over
/// a product many times denser.
pub fn sainv_factors<T: Scalar>(a: &Csr<T>, tol: f64) -> Result<(Csr<T>, Csr<T>, Vec<T>)> {
    let f = factor(a, tol)?;
    let n = a.n_rows;
    let mut row_ptr = vec![0u32];
    let (mut col, mut val) = (Vec::new(), Vec::new());
    for zk in &f.z {
        for &(r, v) in zk {
            col.push(r);
            val.push(T::from_f64(v));
        }
        if col.len() > u32::MAX as usize {
            return Err(Error::InvalidArgument("SAINV: the factor exceeds 2^32 nonzeros".into()));
        }
        row_ptr.push(col.len() as u32);
    }
    let zt = Csr { n_rows: n, row_ptr, col, val };
    let z = super::transfer::transpose(&zt, n);
    Ok((zt, z, f.p.iter().map(|&p| T::from_f64(1.0 / p)).collect()))
}

/// `M = Z D⁻¹ Zᵀ` on a backend, as one matrix to the smoother.
pub struct FactoredInverse<B: crate::Backend, T: Scalar> {
    zt: crate::solver::multigrid::Matrix<B, T>,
    z: crate::solver::multigrid::Matrix<B, T>,
    inv_d: B::Vector<T>,
    work: std::sync::Mutex<(B::Vector<T>, B::Vector<T>)>,
}

impl<B: crate::Backend, T: Scalar> FactoredInverse<B, T> {
    /// SAINV of `a` with drop tolerance `tol`, its factors stored by `upload`.
    pub fn new(bk: &B, a: &Csr<T>, tol: f64, upload: impl Fn(&Csr<T>, usize) -> Result<crate::solver::multigrid::Matrix<B, T>>) -> Result<Self> {
        let (zt, z, inv_d) = sainv_factors(a, tol)?;
        let n = a.n_rows;
        Ok(Self { zt: upload(&zt, n)?, z: upload(&z, n)?, inv_d: bk.upload(&inv_d)?, work: std::sync::Mutex::new((bk.zeros(n)?, bk.zeros(n)?)) })
    }
}

impl<B: crate::Backend, T: Scalar> crate::operator::LinearOperator<B, T> for FactoredInverse<B, T> {
    fn rows(&self) -> usize {
        self.zt.rows()
    }
    fn apply(&self, b: &B, x: &B::Vector<T>, y: &mut B::Vector<T>) -> Result<()> {
        let mut w = self.work.lock().expect("SAINV work vectors poisoned");
        let (t, u) = &mut *w;
        self.zt.apply(b, x, t)?;
        b.mul(&self.inv_d, t, u)?;
        self.z.apply(b, u, y)
    }
    fn name(&self) -> String {
        "sainv".into()
    }
}

impl<B: crate::Backend, T: Scalar> crate::sparse::Spmv<B, T> for FactoredInverse<B, T> {
    fn numbering(&self) -> Option<&[u32]> {
        None
    }
    fn matrix_bytes(&self) -> usize {
        self.zt.matrix_bytes() + self.z.matrix_bytes()
    }
    fn reorder(&mut self, _b: &B, _csr_val: &B::Vector<T>) -> Result<()> {
        Err(Error::InvalidArgument("SAINV factors are rebuilt, not refilled, for new values".into()))
    }
}
