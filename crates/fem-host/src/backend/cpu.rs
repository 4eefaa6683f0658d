//! The CPU backend: vectors are `Vec<T>`, operations run on a rayon pool
//! and apply the per-item functions of `fem_kernels::blas`, the same ones
//! the GPU kernels apply.
//!
//! Reductions sum fixed-size chunks and then the chunk sums in order, so
//! their result does not depend on the number of threads.

use super::{Backend, BackendKind};
use crate::error::{first, same_len, Error};
use crate::{Result, Scalar};
use fem_kernels::{blas, krylov};
use rayon::prelude::*;
use std::time::Instant;
use crate::sparse::SharedOut;

/// Elements per rayon task: large enough to amortise scheduling, small
/// enough to balance over the cores.
const CHUNK: usize = 1 << 14;

/// Rayon-parallel backend on the host.
pub struct CpuBackend {
    pool: rayon::ThreadPool,
}

impl CpuBackend {
    /// A backend on `threads` threads (all cores when `None`).
    pub fn new(threads: Option<usize>) -> Result<Self> {
        let mut b = rayon::ThreadPoolBuilder::new();
        if let Some(t) = threads {
            if t == 0 {
                return Err(Error::InvalidArgument("thread count must be at least 1".into()));
            }
            b = b.num_threads(t);
        }
        let pool = b.build().map_err(|e| Error::ThreadPool(e.to_string()))?;
        Ok(Self { pool })
    }

    /// Runs `f` inside this backend's thread pool (so rayon work in `f`
    /// uses its threads).
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }

    /// Number of worker threads in this backend's pool.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    fn chunked_sum<T: Scalar>(&self, n: usize, chunk_sum: impl Fn(std::ops::Range<usize>) -> T + Sync) -> T {
        let sums: Vec<T> = self.pool.install(|| {
            (0..n.div_ceil(CHUNK)).into_par_iter().map(|c| chunk_sum(c * CHUNK..((c + 1) * CHUNK).min(n))).collect()
        });
        sums.into_iter().fold(T::ZERO, |a, b| a + b)
    }
}

impl Backend for CpuBackend {
    type Vector<T: Scalar> = Vec<T>;

    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn name(&self) -> String {
        format!("CPU (rayon, {} threads)", self.threads())
    }

    fn zeros<T: Scalar>(&self, n: usize) -> Result<Vec<T>> {
        Ok(vec![T::ZERO; n])
    }

    fn upload<T: Scalar>(&self, data: &[T]) -> Result<Vec<T>> {
        Ok(data.to_vec())
    }

    fn write<T: Scalar>(&self, data: &[T], v: &mut Vec<T>) -> Result<()> {
        crate::error::same_len("written values", data.len(), v.len())?;
        v.copy_from_slice(data);
        Ok(())
    }

    fn download<T: Scalar>(&self, v: &Vec<T>) -> Result<Vec<T>> {
        Ok(v.clone())
    }

    fn len<T: Scalar>(&self, v: &Vec<T>) -> usize {
        v.len()
    }

    fn copy<T: Scalar>(&self, src: &Vec<T>, dst: &mut Vec<T>) -> Result<()> {
        same_len("copy", src.len(), dst.len())?;
        self.pool.install(|| {
            dst.par_chunks_mut(CHUNK).zip(src.par_chunks(CHUNK)).for_each(|(d, s)| d.copy_from_slice(s))
        });
        Ok(())
    }

    fn convert<S: Scalar, T: Scalar>(&self, src: &Vec<S>, dst: &mut Vec<T>) -> Result<()> {
        same_len("convert", src.len(), dst.len())?;
        self.pool.install(|| {
            dst.par_chunks_mut(CHUNK).zip(src.par_chunks(CHUNK)).for_each(|(d, s)| d.iter_mut().zip(s).for_each(|(d, s)| *d = T::from_f64(s.to_f64())))
        });
        Ok(())
    }

    fn axpy<T: Scalar>(&self, alpha: T, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        same_len("axpy", x.len(), y.len())?;
        self.pool.install(|| {
            y.par_chunks_mut(CHUNK).zip(x.par_chunks(CHUNK)).for_each(|(yc, xc)| {
                yc.iter_mut().zip(xc).for_each(|(yi, &xi)| *yi = blas::axpy(alpha, xi, *yi))
            })
        });
        Ok(())
    }

    fn axpby<T: Scalar>(&self, alpha: T, x: &Vec<T>, beta: T, y: &mut Vec<T>) -> Result<()> {
        same_len("axpby", x.len(), y.len())?;
        self.pool.install(|| {
            y.par_chunks_mut(CHUNK).zip(x.par_chunks(CHUNK)).for_each(|(yc, xc)| {
                yc.iter_mut().zip(xc).for_each(|(yi, &xi)| *yi = blas::axpby(alpha, xi, beta, *yi))
            })
        });
        Ok(())
    }

    fn mul<T: Scalar>(&self, x: &Vec<T>, y: &Vec<T>, z: &mut Vec<T>) -> Result<()> {
        same_len("mul", x.len(), y.len())?;
        same_len("mul", x.len(), z.len())?;
        self.pool.install(|| {
            z.par_chunks_mut(CHUNK).zip(x.par_chunks(CHUNK).zip(y.par_chunks(CHUNK))).for_each(|(zc, (xc, yc))| {
                zc.iter_mut().zip(xc.iter().zip(yc)).for_each(|(zi, (&xi, &yi))| *zi = blas::mul(xi, yi))
            })
        });
        Ok(())
    }

    fn reciprocal<T: Scalar>(&self, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        same_len("reciprocal", x.len(), y.len())?;
        self.pool.install(|| y.par_chunks_mut(CHUNK).zip(x.par_chunks(CHUNK)).for_each(|(yc, xc)| yc.iter_mut().zip(xc).for_each(|(yi, &xi)| *yi = blas::reciprocal(xi))));
        Ok(())
    }

    fn dot_first<T: Scalar>(&self, n: usize, x: &Vec<T>, y: &Vec<T>) -> Result<T> {
        first("dot", n, x.len().min(y.len()))?;
        Ok(self.chunked_sum(n, |r| blas::dot_chunk(&x[r.clone()], &y[r])))
    }

    fn sumsq_first<T: Scalar>(&self, n: usize, x: &Vec<T>) -> Result<T> {
        first("sum of squares", n, x.len())?;
        Ok(self.chunked_sum(n, |r| blas::sumsq_chunk(&x[r])))
    }

    fn dot_into<T: Scalar>(&self, n: usize, x: &Vec<T>, y: &Vec<T>, s: &mut Vec<f64>, slot: usize) -> Result<()> {
        crate::error::scalar_slots("dot_into", slot, 1, s.len())?;
        s[slot] = self.dot_first(n, x, y)?.to_f64();
        Ok(())
    }

    fn cg_update<T: Scalar>(&self, n: usize, s: &mut Vec<f64>, p: &Vec<T>, q: &Vec<T>, x: &mut Vec<T>, r: &mut Vec<T>, jacobi: Option<(&Vec<T>, &mut Vec<T>)>, history: Option<&mut Vec<f64>>) -> Result<()> {
        let len = x.len();
        crate::error::cg_update_lengths(n, s.len(), len, [p.len(), q.len(), r.len()], jacobi.as_ref().map(|(d, z)| (d.len(), z.len())))?;
        // when stopped, or p·Ap ≤ 0 (which closing reports), nothing moves
        if let Some(alpha) = krylov::step_length(s[krylov::STATUS], s[krylov::RZ], s[krylov::PQ]) {
            let alpha = T::from_f64(alpha);
            let (xs, rs) = (SharedOut(x.as_mut_ptr()), SharedOut(r.as_mut_ptr()));
            let scale = jacobi.map(|(d, z)| (d, SharedOut(z.as_mut_ptr())));
            let sums: Vec<[T; 2]> = self.pool.install(|| {
                (0..len.div_ceil(CHUNK))
                    .into_par_iter()
                    .map(|c| {
                        let mut acc = [T::ZERO; 2];
                        for i in c * CHUNK..((c + 1) * CHUNK).min(len) {
                            // SAFETY: chunks are disjoint; every vector holds `len` rows.
                            let (xi, ri) = unsafe { (xs.at(i), rs.at(i)) };
                            [*xi, *ri] = krylov::update(alpha, p[i], q[i], *xi, *ri);
                            let zi = match &scale {
                                Some((d, z)) => {
                                    let zi = blas::mul(d[i], *ri);
                                    *unsafe { z.at(i) } = zi;
                                    zi
                                }
                                None => *ri,
                            };
                            if i < n {
                                acc = [blas::sumsq_term(acc[0], *ri), blas::dot_term(acc[1], *ri, zi)];
                            }
                        }
                        acc
                    })
                    .collect()
            });
            let [rr, rz] = sums.into_iter().fold([T::ZERO; 2], |a, b| [a[0] + b[0], a[1] + b[1]]);
            s[krylov::RR] = rr.to_f64();
            s[krylov::RZN] = rz.to_f64();
        }
        match history {
            Some(h) => self.cg_advance(s, h),
            None => Ok(()),
        }
    }

    fn cg_advance(&self, s: &mut Vec<f64>, history: &mut Vec<f64>) -> Result<()> {
        crate::error::scalar_slots("cg_advance", 0, krylov::SLOTS, s.len())?;
        let slots: &mut [f64; krylov::SLOTS] = (&mut s[..krylov::SLOTS]).try_into().expect("length checked");
        if let Some((k, res)) = krylov::advance(slots) {
            first("cg_advance history", k + 1, history.len())?;
            history[k] = res;
        }
        Ok(())
    }

    fn cg_direction<T: Scalar>(&self, s: &Vec<f64>, z: &Vec<T>, p: &mut Vec<T>) -> Result<()> {
        crate::error::scalar_slots("cg_direction", 0, krylov::SLOTS, s.len())?;
        if s[krylov::STATUS] != krylov::RUNNING {
            return Ok(());
        }
        self.axpby(T::ONE, z, T::from_f64(s[krylov::BETA]), p)
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    fn time(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let t = Instant::now();
        f()?;
        Ok(t.elapsed().as_secs_f64())
    }
}
