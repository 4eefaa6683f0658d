//! The 1D matrices of one degree, as the CPU reference uses them and as
//! the GPU kernels receive them packed.

use crate::{Error, Result};
use fem_core::quadrature::{gauss_legendre, gauss_lobatto};
use fem_core::tensor::{differentiation_matrix, interpolation_matrix, MAX_DEGREE};

/// GLL nodes, GL points, their weights and the matrices between them.
#[derive(Clone, Debug)]
pub struct Basis1d {
    /// Polynomial degree N of the basis.
    pub degree: usize,
    /// GLL nodes per direction, N + 1.
    pub nq: usize,
    /// GL points per direction, N + 2.
    pub gq: usize,
    /// The `nq` Gauss–Lobatto–Legendre nodes on [-1, 1], ascending.
    pub gll: Vec<f64>,
    /// GLL quadrature weights, summing to 2.
    pub gll_weights: Vec<f64>,
    /// The `gq` Gauss–Legendre points on [-1, 1], ascending.
    pub gl: Vec<f64>,
    /// GL quadrature weights, summing to 2.
    pub gl_weights: Vec<f64>,
    /// I: GLL values → GL values, `gq × nq`.
    pub interp: Vec<f64>,
    /// D: GLL values → GLL derivatives, `nq × nq`.
    pub diff: Vec<f64>,
    /// glD: GL values → GL derivatives, `gq × gq`.
    pub gl_diff: Vec<f64>,
    /// glD·I: GLL values → GL derivatives, `gq × nq`.
    pub interp_diff: Vec<f64>,
}

impl Basis1d {
    /// The tables of degree `degree`; an error outside 1..=`MAX_DEGREE`.
    pub fn new(degree: usize) -> Result<Self> {
        if !(1..=MAX_DEGREE).contains(&degree) {
            return Err(Error::InvalidArgument(format!("degree {degree} is outside 1..={MAX_DEGREE}")));
        }
        let (nq, gq) = (degree + 1, degree + 2);
        let (mut gll, mut gll_weights) = (vec![0.0; nq], vec![0.0; nq]);
        gauss_lobatto(&mut gll, &mut gll_weights);
        let (mut gl, mut gl_weights) = (vec![0.0; gq], vec![0.0; gq]);
        gauss_legendre(&mut gl, &mut gl_weights);
        let mut interp = vec![0.0; gq * nq];
        interpolation_matrix(&gll, &gl, &mut interp);
        let mut diff = vec![0.0; nq * nq];
        differentiation_matrix(&gll, &mut diff);
        let mut gl_diff = vec![0.0; gq * gq];
        differentiation_matrix(&gl, &mut gl_diff);
        let interp_diff = matmul(&gl_diff, &interp, gq, gq, nq);
        Ok(Self { degree, nq, gq, gll, gll_weights, gl, gl_weights, interp, diff, gl_diff, interp_diff })
    }

    /// The table the GPU kernels load into shared memory.
    pub fn packed(&self) -> Vec<f64> {
        super::gpu::packed_tables(self)
    }
}

/// `a (m × k) · b (k × n)`, row-major.
pub fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for l in 0..k {
            for j in 0..n {
                c[i * n + j] += a[i * k + l] * b[l * n + j];
            }
        }
    }
    c
}

/// The transpose of a row-major `rows × cols` matrix.
pub fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            t[j * rows + i] = a[i * cols + j];
        }
    }
    t
}

/// `out = (Mz ⊗ My ⊗ Mx) input` on a 3D array with x fastest: each matrix
/// (rows × the input extent along its axis) applied along its axis, the
/// sum factorisation of every tensor-product operator here. `scratch`
/// holds the two intermediate arrays.
pub fn contract3(mx: (&[f64], usize), my: (&[f64], usize), mz: (&[f64], usize), dims: [usize; 3], input: &[f64], out: &mut [f64], scratch: &mut Vec<f64>) {
    let [_, n1, n2] = dims;
    let s1 = mx.1 * n1 * n2;
    let s2 = mx.1 * my.1 * n2;
    scratch.resize(s1 + s2, 0.0);
    let (a, b) = scratch.split_at_mut(s1);
    apply_axis(mx.0, mx.1, 0, dims, input, a);
    apply_axis(my.0, my.1, 1, [mx.1, n1, n2], a, b);
    apply_axis(mz.0, mz.1, 2, [mx.1, my.1, n2], b, out);
}

/// `out` = the matrix `m` (rows × dims\[axis\]) applied along `axis` of the
/// 3D array `input` (x fastest); `out` has `rows` along that axis.
pub fn apply_axis(m: &[f64], rows: usize, axis: usize, dims: [usize; 3], input: &[f64], out: &mut [f64]) {
    let [nx, ny, nz] = dims;
    let n = dims[axis];
    // a square matrix on a square or cube of its size (the sum
    // factorisations with as many points as nodes): sizes known to the
    // compiler, loops unrolled
    if rows == n && nx == n && ny == n && (nz == n || nz == 1) {
        let square = match n {
            2 => cube::<2, 4>,
            3 => cube::<3, 9>,
            4 => cube::<4, 16>,
            5 => cube::<5, 25>,
            6 => cube::<6, 36>,
            7 => cube::<7, 49>,
            8 => cube::<8, 64>,
            9 => cube::<9, 81>,
            _ => generic_axis,
        };
        return square(m, rows, axis, dims, input, out);
    }
    generic_axis(m, rows, axis, dims, input, out)
}

/// [`apply_axis`] for an N × N matrix on an N × N × (N or 1) array
/// (`NN` = N²).
fn cube<const N: usize, const NN: usize>(m: &[f64], _: usize, axis: usize, dims: [usize; 3], input: &[f64], out: &mut [f64]) {
    let m: &[f64; NN] = m[..NN].try_into().expect("an N × N matrix");
    let row = |r: usize| -> &[f64] { &m[r * N..][..N] };
    let planes = dims[2];
    match axis {
        0 => {
            for (o, line) in out[..NN * planes].chunks_exact_mut(N).zip(input.chunks_exact(N)) {
                for (r, or) in o.iter_mut().enumerate() {
                    *or = (0..N).map(|l| row(r)[l] * line[l]).sum();
                }
            }
        }
        // each plane's lines of N (axis 1), or the one block of planes
        // of N² (axis 2)
        1 => {
            for (o, inp) in out[..NN * planes].chunks_exact_mut(NN).zip(input.chunks_exact(NN)) {
                scaled_lines::<N, N>(m, inp, o);
            }
        }
        _ => scaled_lines::<N, NN>(m, input, out),
    }
}

/// `out` line r = Σ_l m\[r\]\[l\] · `input` line l, for the N × N matrix
/// `m` on N contiguous lines of L values.
fn scaled_lines<const N: usize, const L: usize>(m: &[f64], input: &[f64], out: &mut [f64]) {
    for (r, row) in m[..N * N].chunks_exact(N).enumerate() {
        let mut acc = [0.0; L];
        for (&c, line) in row.iter().zip(input.chunks_exact(L)) {
            acc.iter_mut().zip(line).for_each(|(a, b)| *a += c * b);
        }
        out[r * L..][..L].copy_from_slice(&acc);
    }
}

/// [`apply_axis`] for any sizes.
fn generic_axis(m: &[f64], rows: usize, axis: usize, dims: [usize; 3], input: &[f64], out: &mut [f64]) {
    let [nx, ny, nz] = dims;
    let n = dims[axis];
    let m = &m[..rows * n];
    match axis {
        // a short dot product per output along each contiguous line
        0 => {
            for (o, line) in out[..rows * ny * nz].chunks_exact_mut(rows).zip(input.chunks_exact(nx)) {
                for (or, row) in o.iter_mut().zip(m.chunks_exact(n)) {
                    *or = row.iter().zip(line).map(|(a, b)| a * b).sum();
                }
            }
        }
        // whole contiguous lines (axis 1) or planes (axis 2) scaled and
        // added: the inner loops run over unit strides
        _ => {
            let (line, blocks) = if axis == 1 { (nx, nz) } else { (nx * ny, 1) };
            for k in 0..blocks {
                let (inp, o) = (&input[k * line * n..][..line * n], &mut out[k * line * rows..][..line * rows]);
                for (orow, row) in o.chunks_exact_mut(line).zip(m.chunks_exact(n)) {
                    orow.fill(0.0);
                    for (&c, src) in row.iter().zip(inp.chunks_exact(line)) {
                        orow.iter_mut().zip(src).for_each(|(a, b)| *a += c * b);
                    }
                }
            }
        }
    }
}

/// The identity matrix of size n.
pub fn identity(n: usize) -> Vec<f64> {
    let mut m = vec![0.0; n * n];
    (0..n).for_each(|i| m[i * n + i] = 1.0);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GPU kernels take only the first ⌈G/2⌉ rows of I, glD and D and
    /// mirror the rest: I must be centro-symmetric, glD and D
    /// centro-antisymmetric, to rounding, at every degree.
    #[test]
    fn interpolation_and_gl_differentiation_have_the_mirror_symmetries() {
        for degree in 1..=15 {
            let b = Basis1d::new(degree).unwrap();
            let (nq, gq) = (b.nq, b.gq);
            let scale = b.gl_diff.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for q in 0..gq {
                for m in 0..nq {
                    let (v, w) = (b.interp[q * nq + m], b.interp[(gq - 1 - q) * nq + nq - 1 - m]);
                    assert!((v - w).abs() <= 1e-14, "I, N = {degree}: ({q}, {m}) {v} vs {w}");
                }
                for m in 0..gq {
                    let (v, w) = (b.gl_diff[q * gq + m], b.gl_diff[(gq - 1 - q) * gq + gq - 1 - m]);
                    assert!((v + w).abs() <= 1e-13 * scale, "glD, N = {degree}: ({q}, {m}) {v} vs {w}");
                }
            }
            for q in 0..nq {
                for m in 0..nq {
                    let (v, w) = (b.diff[q * nq + m], b.diff[(nq - 1 - q) * nq + nq - 1 - m]);
                    assert!((v + w).abs() <= 1e-13 * scale, "D, N = {degree}: ({q}, {m}) {v} vs {w}");
                }
            }
        }
    }

    /// Every axis of 1D, 2D and 3D arrays, square and rectangular
    /// matrices (more and fewer rows than the axis), against the sum
    /// written out entry by entry; what `out` held before is overwritten.
    #[test]
    fn axis_products_are_the_entrywise_sums() {
        let value = |i: usize| ((i * 7919 + 13) % 101) as f64 / 50.0 - 1.0;
        for dims in [[4, 1, 1], [3, 5, 1], [2, 3, 4], [5, 4, 3], [1, 1, 6], [2, 2, 1], [3, 3, 3], [9, 9, 1], [9, 9, 9], [10, 10, 10]] {
            let input: Vec<f64> = (0..dims.iter().product()).map(value).collect();
            for axis in 0..3 {
                let n = dims[axis];
                for rows in [1, n, n + 2] {
                    let m: Vec<f64> = (0..rows * n).map(|i| value(i + 3)).collect();
                    let mut od = dims;
                    od[axis] = rows;
                    let mut out = vec![9.0; od.iter().product()];
                    apply_axis(&m, rows, axis, dims, &input, &mut out);
                    for k in 0..od[2] {
                        for j in 0..od[1] {
                            for i in 0..od[0] {
                                let at = [i, j, k];
                                let want: f64 = (0..n)
                                    .map(|l| {
                                        let mut src = at;
                                        src[axis] = l;
                                        m[at[axis] * n + l] * input[src[0] + dims[0] * (src[1] + dims[1] * src[2])]
                                    })
                                    .sum();
                                let got = out[i + od[0] * (j + od[1] * k)];
                                assert!((got - want).abs() < 1e-13, "{dims:?} axis {axis}, {rows} rows, ({i}, {j}, {k}): {got} vs {want}");
                            }
                        }
                    }
                }
            }
        }
    }
}
