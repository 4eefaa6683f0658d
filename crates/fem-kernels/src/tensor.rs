//! Layout shared by the tensor-product kernels and the host that launches
//! them, and the 1D contractions that use the centro-symmetry of the
//! interpolation matrix (`I[g−1−q][n−1−m] = I[q][m]`) and the
//! centro-antisymmetry of the differentiation matrices: every stored entry
//! serves two outputs, and only the first ⌈g/2⌉ rows need storing.
//!
//! BP1, BP3.0 and BP3.5's line kernel take their matrices by value as
//! [`Half`] launch parameters. The slice and one-thread-per-node BP3.5
//! kernels read D from shared memory, packed by the host as
//! `[I | Iᵀ | D | Dᵀ | glD | glDᵀ]`: a thread that needs row `r` of a
//! matrix reads the transpose's column `r`, so the threads of a warp read
//! consecutive words and never conflict.

use fem_core::tensor::padded;
use fem_core::Real;

/// Offsets into the packed table for `nq` GLL and `gq` GL points:
/// (I, Iᵀ, D, Dᵀ, glD, glDᵀ, total length).
pub const fn table_offsets(nq: usize, gq: usize) -> [usize; 7] {
    let i = 0;
    let it = i + gq * nq;
    let d = it + gq * nq;
    let dt = d + nq * nq;
    let gd = dt + nq * nq;
    let gdt = gd + gq * gq;
    [i, it, d, dt, gd, gdt, gdt + gq * gq]
}

/// Which kernel a launch is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BpKernel {
    /// BP1.0, `gq × gq` threads per element.
    Mass,
    /// BP3.5, `nq × nq` threads per element (2D slices).
    Collocated,
    /// BP3.5, `nq³` threads per element.
    Collocated3d,
    /// BP3.5, `nq × nq` threads per element (line contractions).
    CollocatedLines,
    /// BP3.0, `gq × gq` threads per element.
    Quadrature,
}

impl BpKernel {
    /// Threads per element.
    pub const fn threads(self, nq: usize, gq: usize) -> usize {
        match self {
            Self::Mass | Self::Quadrature => gq * gq,
            Self::Collocated | Self::CollocatedLines => nq * nq,
            Self::Collocated3d => nq * nq * nq,
        }
    }

    /// The part of the packed table the kernel copies to shared memory:
    /// (offset, length); none for a kernel whose tables are launch
    /// parameters ([`Half`]).
    pub const fn table(self, nq: usize, gq: usize) -> (usize, usize) {
        let o = table_offsets(nq, gq);
        match self {
            Self::Mass | Self::Quadrature | Self::CollocatedLines => (0, 0),
            Self::Collocated | Self::Collocated3d => (o[2], o[4] - o[2]),
        }
    }

    /// Shared-memory values of one element's work arrays (padded).
    pub const fn per_element(self, nq: usize, gq: usize) -> usize {
        match self {
            Self::Mass => nq * gq * padded(gq),
            Self::Collocated => 3 * nq * padded(nq),
            Self::CollocatedLines => 3 * nq * nq * padded(nq),
            Self::Collocated3d => 4 * nq * nq * padded(nq),
            Self::Quadrature => 3 * gq * gq * padded(gq),
        }
    }

    /// Shared-memory values of a block of `epb` elements.
    pub const fn shared_len(self, nq: usize, gq: usize, epb: usize) -> usize {
        self.table(nq, gq).1 + epb * self.per_element(nq, gq)
    }

    /// Shared-memory values of a block of `epb` elements whose geometric
    /// factors pass through a ring `ahead` slices deep (BP3.5's line
    /// kernel, `ahead` > 0), which follows the work arrays: `ahead` + 1
    /// slots of the seven factors of each of the element's `nq²` threads.
    pub const fn shared_len_with_ring(self, nq: usize, gq: usize, epb: usize, ahead: usize) -> usize {
        let ring = if ahead > 0 { (ahead + 1) * fem_core::tensor::NGEO * nq * nq } else { 0 };
        self.shared_len(nq, gq, epb) + epb * ring
    }
}

/// The rows `q < HQ = ⌈G / 2⌉` of a `G × C` matrix that is centro-symmetric
/// (`A[G−1−q][C−1−m] = A[q][m]`, the interpolation matrix) or
/// centro-antisymmetric (`= −A[q][m]`, the differentiation matrices), the
/// rest following by symmetry. Kernels take it by value: a launch
/// parameter lives in the constant bank, and with the loops unrolled every
/// entry is an operand of the multiply-add at a fixed address, read by the
/// whole warp at once, with no load and no shared-memory traffic.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Half<T, const C: usize, const HQ: usize> {
    /// Rows `0..HQ`, each of `C` entries.
    pub rows: [[T; C]; HQ],
}

impl<T: Real, const C: usize, const HQ: usize> Half<T, C, HQ> {
    /// Entry (q, m) of the stored rows (`q < HQ`).
    #[inline(always)]
    pub fn at(&self, q: usize, m: usize) -> T {
        self.rows[q][m]
    }
}

/// `v` as the mirrored entry `A[G−1−q][N−1−m]` of a matrix whose row q
/// holds it: negated for a centro-antisymmetric (`ODD`) matrix.
#[inline(always)]
fn mirrored<T: Real, const ODD: bool>(v: T) -> T {
    if ODD {
        -v
    } else {
        v
    }
}

/// `c[q] = Σ_m A[q][m]·r[m]` for all `G` points from the `N` values `r`,
/// with `a(q, m)` reading the rows `q < ⌈G / 2⌉` of `A` (`G × N`,
/// centro-symmetric, or centro-antisymmetric when `ODD`).
#[inline(always)]
pub fn interp_column<T: Real, const N: usize, const G: usize, const ODD: bool>(a: impl Fn(usize, usize) -> T, r: &[T; N]) -> [T; G] {
    let mut c = [T::ZERO; G];
    fem_core::unroll::<G>(|q| {
        if 2 * q + 1 < G {
            fem_core::unroll::<N>(|m| {
                let v = a(q, m);
                c[q] = v.mad(r[m], c[q]);
                c[G - 1 - q] = mirrored::<T, ODD>(v).mad(r[N - 1 - m], c[G - 1 - q]);
            });
        } else if 2 * q + 1 == G {
            fem_core::unroll::<N>(|m| c[q] = a(q, m).mad(r[m], c[q]));
        }
    });
    c
}

/// `r[m] = Σ_q A[q][m]·c[q]`, the transpose of [`interp_column`].
#[inline(always)]
pub fn project_column<T: Real, const N: usize, const G: usize, const ODD: bool>(a: impl Fn(usize, usize) -> T, c: &[T; G]) -> [T; N] {
    let mut r = [T::ZERO; N];
    fem_core::unroll::<G>(|q| {
        if 2 * q + 1 < G {
            fem_core::unroll::<N>(|m| {
                let v = a(q, m);
                r[m] = v.mad(c[q], r[m]);
                r[N - 1 - m] = mirrored::<T, ODD>(v).mad(c[G - 1 - q], r[N - 1 - m]);
            });
        } else if 2 * q + 1 == G {
            fem_core::unroll::<N>(|m| r[m] = a(q, m).mad(c[q], r[m]));
        }
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_columns_match_plain_products() {
        // a centro-symmetric 5 × 4 matrix
        let a = |q: usize, m: usize| {
            let (q2, m2) = if q * 4 + m < (4 - q) * 4 + (3 - m) { (q, m) } else { (4 - q, 3 - m) };
            1.0 + q2 as f64 * 0.7 - m2 as f64 * 0.3 + (q2 * m2) as f64 * 0.11
        };
        let r = [1.0, -2.0, 0.5, 3.0];
        let c: [f64; 5] = interp_column::<_, 4, 5, false>(a, &r);
        for q in 0..5 {
            let s: f64 = (0..4).map(|m| a(q, m) * r[m]).sum();
            assert!((c[q] - s).abs() < 1e-14);
        }
        let back: [f64; 4] = project_column::<_, 4, 5, false>(a, &c);
        for m in 0..4 {
            let s: f64 = (0..5).map(|q| a(q, m) * c[q]).sum();
            assert!((back[m] - s).abs() < 1e-13);
        }
        // even number of points
        let b = |q: usize, m: usize| a(q.min(3), m) + a(3 - q.min(3), 3 - m);
        let c: [f64; 4] = interp_column::<_, 4, 4, false>(b, &r);
        for q in 0..4 {
            let s: f64 = (0..4).map(|m| b(q, m) * r[m]).sum();
            assert!((c[q] - s).abs() < 1e-13, "{q}");
        }
    }

    /// A centro-antisymmetric `g × g` matrix (a differentiation matrix's
    /// symmetry), entries from a formula that is not itself symmetric.
    fn antisymmetric(g: usize) -> impl Fn(usize, usize) -> f64 {
        move |q, m| {
            let f = |q: usize, m: usize| 0.3 + q as f64 * 0.7 - m as f64 * 0.45 + (q * m) as f64 * 0.13;
            if 2 * q + 1 < g || (2 * q + 1 == g && 2 * m + 1 < g) {
                f(q, m)
            } else if 2 * q + 1 == g && 2 * m + 1 == g {
                0.0
            } else {
                -f(g - 1 - q, g - 1 - m)
            }
        }
    }

    fn check_antisymmetric<const G: usize>() {
        let a = antisymmetric(G);
        for q in 0..G {
            for m in 0..G {
                assert_eq!(a(G - 1 - q, G - 1 - m), -a(q, m));
            }
        }
        let r: [f64; G] = core::array::from_fn(|m| 1.0 + (m as f64 * 1.3).sin());
        let c: [f64; G] = interp_column::<_, G, G, true>(&a, &r);
        let back: [f64; G] = project_column::<_, G, G, true>(&a, &r);
        for q in 0..G {
            let s: f64 = (0..G).map(|m| a(q, m) * r[m]).sum();
            let t: f64 = (0..G).map(|m| a(m, q) * r[m]).sum();
            assert!((c[q] - s).abs() < 1e-12, "{G}: {q}: {} vs {s}", c[q]);
            assert!((back[q] - t).abs() < 1e-12, "{G}: {q}: {} vs {t}", back[q]);
        }
    }

    #[test]
    fn antisymmetric_columns_match_plain_products() {
        check_antisymmetric::<4>();
        check_antisymmetric::<5>();
        check_antisymmetric::<1>();
    }
}
