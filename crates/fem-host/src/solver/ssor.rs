//! Multi-colour SSOR (symmetric Gauss–Seidel, ω = 1) of Reguly & Giles,
//! Algorithm 3: the rows are coloured so that no two rows of one colour
//! couple; the forward sweep solves `(L + D) y = r` colour by colour, the
//! backward sweep `D⁻¹ (L + D)ᵀ z = y` in reverse colour order, each
//! colour's rows in parallel. `M = (L + D) D⁻¹ (L + D)ᵀ` in the colour
//! order, symmetric positive definite for an SPD `A`, so it preconditions
//! CG. CSR and ELLPACK, on the CPU (rayon) and the GPU (one launch per
//! colour and direction), through the same per-row function.

use crate::mesh::adjacency::VertexCells;
use crate::operator::LinearOperator;
use crate::operator::csr::Csr;
use crate::operator::ell::Ell;
use crate::operator::gpu::{GpuCsr, GpuEll};
use crate::{Backend, CpuBackend, CudaBackend, Error, Result, Scalar};
use crate::sparse::SharedOut;
use cudarc::driver::{CudaSlice, PushKernelArg};
use fem_kernels::sparse::{coloured_row, swept};
use rayon::prelude::*;

/// A colouring of the matrix graph: rows of one colour share no entry.
#[derive(Clone, Debug)]
pub struct RowColouring {
    /// Colour of every row, below 255.
    pub colour: Vec<u8>,
    /// Rows of each colour, ascending.
    pub rows: Vec<Vec<u32>>,
}

impl RowColouring {
    /// Greedy first-fit colouring of the (symmetrised) pattern of `a`.
    pub fn new<T: Scalar>(a: &Csr<T>) -> Result<Self> {
        let n = a.n_rows;
        // the rows naming each column, ascending
        let at = VertexCells::of_ids(n, n, |i| &a.col[a.row_ptr[i] as usize..a.row_ptr[i + 1] as usize]);
        let mut colour = vec![u8::MAX; n];
        let mut taken = [false; 256];
        for i in 0..n {
            let neighbours = a.col[a.row_ptr[i] as usize..a.row_ptr[i + 1] as usize].iter().chain(at.of(i));
            for &j in neighbours.clone() {
                if j as usize != i && colour[j as usize] != u8::MAX {
                    taken[colour[j as usize] as usize] = true;
                }
            }
            let c = (0..255).find(|&c| !taken[c]).ok_or_else(|| Error::InvalidArgument(format!("row {i} needs more than 255 colours")))?;
            colour[i] = c as u8;
            for &j in neighbours {
                if colour[j as usize] != u8::MAX {
                    taken[colour[j as usize] as usize] = false;
                }
            }
        }
        let n_colours = colour.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
        let mut rows = vec![Vec::new(); n_colours];
        for (i, &c) in colour.iter().enumerate() {
            rows[c as usize].push(i as u32);
        }
        Ok(Self { colour, rows })
    }

    /// Whether no stored entry couples two distinct rows of one colour.
    pub fn is_valid<T: Scalar>(&self, a: &Csr<T>) -> bool {
        (0..a.n_rows).all(|i| (a.row_ptr[i]..a.row_ptr[i + 1]).all(|p| {
            let j = a.col[p as usize] as usize;
            j == i || self.colour[j] != self.colour[i]
        }))
    }
}

/// The storage an SSOR sweeps.
pub enum SsorMatrix<T> {
    /// Sweep the rows of a CSR matrix.
    Csr(Csr<T>),
    /// Sweep the rows of a transposed (slot-major) ELLPACK matrix.
    Ell(Ell<T>),
}

/// Coloured SSOR on the CPU.
pub struct CpuSsor<T> {
    /// The matrix `A = L + D + Lᵀ` whose rows are swept.
    pub matrix: SsorMatrix<T>,
    /// Row colours of `matrix`'s pattern; fixes the sweep order.
    pub colouring: RowColouring,
}

impl<T: Scalar> CpuSsor<T> {
    fn sweep<const FORWARD: bool>(&self, cpu: &CpuBackend, rhs: &[T], v: &mut [T]) {
        // a colour's rows are distinct and read only other colours' values
        let out = SharedOut(v.as_mut_ptr());
        let out = &out;
        let colours: Vec<usize> = if FORWARD { (0..self.colouring.rows.len()).collect() } else { (0..self.colouring.rows.len()).rev().collect() };
        for c in colours {
            cpu.install(|| {
                self.colouring.rows[c].par_iter().for_each(|&i| {
                    let i = i as usize;
                    // SAFETY: row i is written by this task only; the entries read
                    // belong to rows of other colours, which no task writes now.
                    unsafe {
                        let vp = out.0 as *const T;
                        let part = match &self.matrix {
                            SsorMatrix::Csr(a) => coloured_row::<T, FORWARD>(i, a.row_ptr[i] as usize..a.row_ptr[i + 1] as usize, a.col.as_ptr(), a.val.as_ptr(), self.colouring.colour.as_ptr(), c as u8, vp),
                            SsorMatrix::Ell(a) => coloured_row::<T, FORWARD>(i, (0..a.width).map(|s| s * a.n_rows + i), a.col.as_ptr(), a.val.as_ptr(), self.colouring.colour.as_ptr(), c as u8, vp),
                        };
                        *out.0.add(i) = swept::<T, FORWARD>(rhs[i], part);
                    }
                })
            });
        }
    }
}

impl<T: Scalar> LinearOperator<CpuBackend, T> for CpuSsor<T> {
    fn rows(&self) -> usize {
        match &self.matrix {
            SsorMatrix::Csr(a) => a.n_rows,
            SsorMatrix::Ell(a) => a.n_rows,
        }
    }
    fn apply(&self, cpu: &CpuBackend, r: &Vec<T>, z: &mut Vec<T>) -> Result<()> {
        crate::error::same_len("ssor", r.len(), z.len())?;
        let mut y = vec![T::ZERO; r.len()];
        self.sweep::<true>(cpu, r, &mut y);
        self.sweep::<false>(cpu, &y, z);
        Ok(())
    }
    fn name(&self) -> String {
        "ssor".into()
    }
}

/// The matrix an SSOR sweeps on the GPU.
pub enum GpuSsorMatrix<T: Scalar> {
    /// Device CSR, swept by the `ssor_csr` kernels.
    Csr(GpuCsr<T>),
    /// Device ELLPACK, swept by the `ssor_ell` kernels.
    Ell(GpuEll<T>),
}

/// Coloured SSOR on the GPU.
pub struct GpuSsor<T: Scalar> {
    /// The matrix whose rows are swept.
    pub matrix: GpuSsorMatrix<T>,
    /// Colour of every row ([`RowColouring::colour`] on the device).
    pub colour: CudaSlice<u8>,
    /// Rows of each colour, one launch per entry and direction.
    pub rows: Vec<CudaSlice<u32>>,
    /// The forward sweep's result.
    y: std::sync::Mutex<Option<CudaSlice<T>>>,
}

impl<T: Scalar> GpuSsor<T> {
    /// Uploads `colouring` (which must be of `matrix`'s pattern) next to `matrix`.
    pub fn new(gpu: &CudaBackend, matrix: GpuSsorMatrix<T>, colouring: &RowColouring) -> Result<Self> {
        let rows = colouring.rows.iter().map(|r| gpu.htod(r)).collect::<Result<_>>()?;
        Ok(Self { matrix, colour: gpu.htod(&colouring.colour)?, rows, y: std::sync::Mutex::new(None) })
    }

    fn sweep(&self, gpu: &CudaBackend, forward: bool, rhs: &CudaSlice<T>, v: &mut CudaSlice<T>) -> Result<()> {
        let s = gpu.stream();
        let order: Vec<usize> = if forward { (0..self.rows.len()).collect() } else { (0..self.rows.len()).rev().collect() };
        let base = match self.matrix {
            GpuSsorMatrix::Csr(_) => "ssor_csr",
            GpuSsorMatrix::Ell(_) => "ssor_ell",
        };
        let f = gpu.function(&format!("fem_{base}_forward{}_{}", forward as u8, T::NAME))?;
        for c in order {
            let rows = &self.rows[c];
            let (n, c32) = (rows.len(), c as u32);
            let cfg = gpu.grid::<T>(n * 2, 0);
            match &self.matrix {
                GpuSsorMatrix::Csr(a) => unsafe {
                    s.launch_builder(&f).arg(&n).arg(rows).arg(&a.row_ptr).arg(&a.col).arg(&a.val).arg(&self.colour).arg(&c32).arg(rhs).arg(&mut *v).launch(cfg)
                }?,
                GpuSsorMatrix::Ell(a) => unsafe {
                    s.launch_builder(&f)
                        .arg(&n)
                        .arg(rows)
                        .arg(&a.ld)
                        .arg(&a.width)
                        .arg(&a.col)
                        .arg(&a.val)
                        .arg(&self.colour)
                        .arg(&c32)
                        .arg(rhs)
                        .arg(&mut *v)
                        .launch(cfg)
                }?,
            };
        }
        Ok(())
    }
}

impl<T: Scalar> LinearOperator<CudaBackend, T> for GpuSsor<T> {
    fn rows(&self) -> usize {
        match &self.matrix {
            GpuSsorMatrix::Csr(a) => a.n_rows,
            GpuSsorMatrix::Ell(a) => a.n_rows,
        }
    }
    fn apply(&self, gpu: &CudaBackend, r: &CudaSlice<T>, z: &mut CudaSlice<T>) -> Result<()> {
        crate::error::same_len("ssor", r.len(), z.len())?;
        let mut guard = self.y.lock().expect("ssor work vector poisoned");
        if guard.as_ref().is_none_or(|y| y.len() != r.len()) {
            *guard = Some(gpu.zeros::<T>(r.len())?);
        }
        let y = guard.as_mut().expect("allocated above");
        self.sweep(gpu, true, r, y)?;
        self.sweep(gpu, false, y, z)
    }
    fn name(&self) -> String {
        "ssor".into()
    }
}
