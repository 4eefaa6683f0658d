//! Tensor products `A_z ⊗ A_y ⊗ A_x` of 1D sparse matrices acting on
//! vectors of a lattice of nodes numbered x fastest, applied one axis at a
//! time ([`fem_kernels::lattice::axis_entry`], the same per-entry function
//! on the CPU and the GPU).
//!
//! p-multigrid's transfers between the degrees of a spectral-element grid
//! are such products ([`crate::mesh::SpectralBox::transfer_from`]). Stored
//! as one 3D matrix, the transfer from degree 3 to 7 holds about 45
//! entries a fine row and took most of the solve's set-up to build; its
//! three 1D factors hold a few hundred entries in all, and the three
//! passes read and write little more than the two vectors.

use super::csr::Csr;
use super::LinearOperator;
use crate::error::same_len;
use crate::solver::transfer::transpose;
use crate::{CpuBackend, CudaBackend, Error, Result};
use cudarc::driver::{CudaSlice, PushKernelArg};
use fem_kernels::lattice::axis_entry;
use rayon::prelude::*;
use std::sync::Mutex;

/// `A_z ⊗ A_y ⊗ A_x` on lattices: the 1D matrix `axes[a]` maps `cols[a]`
/// nodes along axis `a` to its `n_rows`.
#[derive(Clone, Debug)]
pub struct Kronecker {
    /// The 1D matrices along x, y and z.
    pub axes: [Csr<f64>; 3],
    /// Columns of each 1D matrix.
    pub cols: [usize; 3],
}

impl Kronecker {
    /// The product of `axes`, each with the columns `cols` gives it; an
    /// error where a matrix is malformed or names a column past its own.
    pub fn new(axes: [Csr<f64>; 3], cols: [usize; 3]) -> Result<Self> {
        for (a, m) in axes.iter().enumerate() {
            let bad = |why: String| Err(Error::InvalidArgument(format!("the 1D matrix along axis {a} {why}")));
            if m.row_ptr.len() != m.n_rows + 1 || m.row_ptr[0] != 0 || m.row_ptr.windows(2).any(|w| w[0] > w[1]) {
                return bad("has malformed row offsets".into());
            }
            if m.nnz() != m.col.len() || m.col.len() != m.val.len() {
                return bad(format!("has {} offsets' entries, {} columns and {} values", m.nnz(), m.col.len(), m.val.len()));
            }
            if let Some(c) = m.col.iter().find(|&&c| c as usize >= cols[a]) {
                return bad(format!("names column {c} of {}", cols[a]));
            }
        }
        Ok(Self { axes, cols })
    }

    /// The lattice the product maps to.
    pub fn out_dims(&self) -> [usize; 3] {
        [0, 1, 2].map(|a| self.axes[a].n_rows)
    }

    /// Values of the vectors it maps to.
    pub fn n_rows(&self) -> usize {
        self.out_dims().iter().product()
    }

    /// Values of the vectors it maps from.
    pub fn n_cols(&self) -> usize {
        self.cols.iter().product()
    }

    /// `Aᵀ`: the product of the 1D transposes.
    pub fn transpose(&self) -> Self {
        let axes = [0, 1, 2].map(|a| transpose(&self.axes[a], self.cols[a]));
        Self { axes, cols: self.out_dims() }
    }

    /// The lattices of the three passes, x first: from, after x, after y
    /// and the result.
    fn passes(&self) -> [[usize; 3]; 4] {
        let [r0, r1, r2] = self.out_dims();
        let [c0, c1, c2] = self.cols;
        [[c0, c1, c2], [r0, c1, c2], [r0, r1, c2], [r0, r1, r2]]
    }

    /// The values between the passes: the lengths of the two scratch
    /// vectors.
    fn scratch_lens(&self) -> [usize; 2] {
        let p = self.passes();
        [p[1].iter().product(), p[2].iter().product()]
    }

    /// The three passes, each from the one before into the next of
    /// `scratch`, by `pass(axis, out, inp, from, to)`.
    fn each_pass<V>(&self, x: &V, y: &mut V, scratch: &mut [V; 2], mut pass: impl FnMut(usize, [usize; 3], [usize; 3], &V, &mut V) -> Result<()>) -> Result<()> {
        let p = self.passes();
        let [s0, s1] = scratch;
        pass(0, p[1], p[0], x, s0)?;
        pass(1, p[2], p[1], s0, s1)?;
        pass(2, p[3], p[2], s1, y)
    }

    /// Checks `x` and `y` against the product's sizes.
    fn check(&self, x: usize, y: usize) -> Result<()> {
        same_len("lattice product's input", x, self.n_cols())?;
        same_len("lattice product's output", y, self.n_rows())
    }
}

/// One pass on the host: every entry of `to` from `from`.
fn cpu_pass(m: &Csr<f64>, axis: usize, out: [usize; 3], inp: [usize; 3], from: &[f64], to: &mut [f64]) {
    to.par_iter_mut().enumerate().with_min_len(4096).for_each(|(i, y)| {
        // SAFETY: `Kronecker::new` checked the 1D matrix's offsets and
        // columns, and the passes' lattices size `from` and `to`
        *y = unsafe { axis_entry(i, out, inp, axis, m.row_ptr.as_ptr(), m.col.as_ptr(), m.val.as_ptr(), from.as_ptr()) };
    });
}

/// The product on the CPU backend, with its scratch vectors.
pub struct CpuKronecker {
    op: Kronecker,
    scratch: Mutex<[Vec<f64>; 2]>,
}

impl CpuKronecker {
    /// `op` ready to apply.
    pub fn new(op: Kronecker) -> Self {
        let scratch = Mutex::new(op.scratch_lens().map(|n| vec![0.0; n]));
        Self { op, scratch }
    }
}

impl LinearOperator<CpuBackend, f64> for CpuKronecker {
    fn rows(&self) -> usize {
        self.op.n_rows()
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<f64>, y: &mut Vec<f64>) -> Result<()> {
        self.op.check(x.len(), y.len())?;
        let mut guard = self.scratch.lock().expect("scratch poisoned");
        let scratch: &mut [Vec<f64>; 2] = &mut guard;
        cpu.install(|| {
            self.op.each_pass(x, y, scratch, |a, out, inp, from, to| {
                cpu_pass(&self.op.axes[a], a, out, inp, from, to);
                Ok(())
            })
        })
    }
    fn name(&self) -> String {
        "lattice".into()
    }
}

/// The product on the GPU: the 1D matrices and the scratch vectors there.
pub struct GpuKronecker {
    op: Kronecker,
    axes: [(CudaSlice<u32>, CudaSlice<u32>, CudaSlice<f64>); 3],
    scratch: Mutex<[CudaSlice<f64>; 2]>,
}

impl GpuKronecker {
    /// `op`'s 1D matrices uploaded, its scratch vectors made.
    pub fn new(gpu: &CudaBackend, op: Kronecker) -> Result<Self> {
        let [s0, s1] = op.scratch_lens();
        gpu.ensure_free((s0 + s1) * 8)?;
        let upload = |m: &Csr<f64>| -> Result<_> { Ok((gpu.htod(&m.row_ptr)?, gpu.htod(&m.col)?, gpu.htod(&m.val)?)) };
        let axes = [upload(&op.axes[0])?, upload(&op.axes[1])?, upload(&op.axes[2])?];
        let s = gpu.stream();
        let scratch = Mutex::new([s.alloc_zeros(s0.max(1))?, s.alloc_zeros(s1.max(1))?]);
        Ok(Self { op, axes, scratch })
    }
}

impl LinearOperator<CudaBackend, f64> for GpuKronecker {
    fn rows(&self) -> usize {
        self.op.n_rows()
    }
    fn apply(&self, gpu: &CudaBackend, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> Result<()> {
        self.op.check(x.len(), y.len())?;
        let f = gpu.kernel::<f64>("lattice_axis")?;
        let mut scratch = self.scratch.lock().expect("scratch poisoned");
        self.op.each_pass(x, y, &mut scratch, |a, out, inp, from, to| {
            let (ptr, col, val) = &self.axes[a];
            let n: usize = out.iter().product();
            let mut b = gpu.stream().launch_builder(&f);
            b.arg(&out[0]).arg(&out[1]).arg(&out[2]).arg(&inp[0]).arg(&inp[1]).arg(&inp[2]).arg(&a);
            b.arg(ptr).arg(col).arg(val).arg(from).arg(to);
            // SAFETY: the arguments are `fem_lattice_axis_f64`'s, the
            // lattices sized as `each_pass` gives them
            unsafe { b.launch(gpu.per_item(n)) }?;
            Ok(())
        })
    }
    fn name(&self) -> String {
        "lattice".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// A 1D matrix of `rows × cols`: every third row empty, the first
    /// full, the others two entries wide, values of both signs.
    fn matrix(rows: usize, cols: usize) -> Csr<f64> {
        let len = |r: usize| match r {
            0 => cols,
            r if r % 3 == 1 => 0,
            _ => 2.min(cols),
        };
        Csr::from_row_fn(rows, len, |r, c, v| {
            for (k, (c, v)) in c.iter_mut().zip(v.iter_mut()).enumerate() {
                *c = if r == 0 { k as u32 } else { ((r * 7 + k * 5) % cols) as u32 };
                *v = (r + 2 * k) as f64 * 0.25 - 1.0;
            }
        })
        .unwrap()
    }

    /// Entry (row, col) of a 1D matrix.
    fn entry(m: &Csr<f64>, r: usize, c: usize) -> f64 {
        (m.row_ptr[r]..m.row_ptr[r + 1]).map(|p| p as usize).filter(|&p| m.col[p] as usize == c).map(|p| m.val[p]).sum()
    }

    /// Against the sum over every pair of lattice nodes of the product of
    /// the three 1D entries: sizes on each axis that differ, grow and
    /// shrink, with empty rows; its transpose against the same sum swapped.
    #[test]
    fn the_passes_equal_the_product_entry_by_entry() {
        let mut rng = SplitMix64::new(3);
        let (rows, cols) = ([5, 2, 7], [3, 4, 1]);
        let k = Kronecker::new([0, 1, 2].map(|a| matrix(rows[a], cols[a])), cols).unwrap();
        let x: Vec<f64> = (0..k.n_cols()).map(|_| rng.next_f64() - 0.5).collect();
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let mut y = vec![f64::NAN; k.n_rows()];
        CpuKronecker::new(k.clone()).apply(&cpu, &x, &mut y).unwrap();
        let at = |i: usize, d: [usize; 3]| fem_kernels::lattice::coordinates(i, d);
        let product = |i: usize, j: usize| {
            let (r, c) = (at(i, rows), at(j, cols));
            (0..3).map(|a| entry(&k.axes[a], r[a], c[a])).product::<f64>()
        };
        for (i, yi) in y.iter().enumerate() {
            let want: f64 = (0..k.n_cols()).map(|j| product(i, j) * x[j]).sum();
            assert!((yi - want).abs() < 1e-13, "row {i}: {yi} against {want}");
        }
        let t = k.transpose();
        assert_eq!((t.n_rows(), t.n_cols()), (k.n_cols(), k.n_rows()));
        let z: Vec<f64> = (0..k.n_rows()).map(|_| rng.next_f64() - 0.5).collect();
        let mut w = vec![f64::NAN; t.n_rows()];
        CpuKronecker::new(t).apply(&cpu, &z, &mut w).unwrap();
        for (j, wj) in w.iter().enumerate() {
            let want: f64 = (0..k.n_rows()).map(|i| product(i, j) * z[i]).sum();
            assert!((wj - want).abs() < 1e-13, "column {j}: {wj} against {want}");
        }
    }

    /// A column past its axis, malformed offsets and vectors of the wrong
    /// length are errors.
    #[test]
    fn bad_products_and_vectors_are_errors() {
        let axes = [0, 1, 2].map(|_| matrix(3, 3));
        assert!(Kronecker::new(axes.clone(), [3, 2, 3]).is_err());
        let mut bad = axes.clone();
        bad[2].row_ptr[1] = 100;
        assert!(Kronecker::new(bad, [3, 3, 3]).is_err());
        let k = CpuKronecker::new(Kronecker::new(axes, [3, 3, 3]).unwrap());
        let cpu = CpuBackend::new(Some(1)).unwrap();
        assert!(k.apply(&cpu, &vec![0.0; 26], &mut vec![0.0; 27]).is_err());
        assert!(k.apply(&cpu, &vec![0.0; 27], &mut vec![0.0; 28]).is_err());
    }
}
