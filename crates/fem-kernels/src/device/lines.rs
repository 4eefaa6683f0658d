//! Line contractions of tensor-product kernels in shared memory: a
//! thread applies a 1D matrix to the line of values it owns (BP's
//! operators, the library's partial product), and an element's
//! interpolation to the Gauss points and integration back
//! ([`to_points`], [`from_points`]) on its `NQ × NQ` slab of threads,
//! shared by the partial product and the sum-factorised residual and
//! point data ([`crate::pointwise::sum_factorised`]). Built with every
//! `nvptx64` build, the kernel crates of users included, which compile
//! the sum-factorised entry points of their own physics.

use super::{barrier, block_dim_x, block_dim_y, dynamic_shared, thread_idx_x, thread_idx_y};
use crate::pointwise::partial::per_element;
use crate::tensor::{interp_column, project_column};
use fem_core::tensor::padded;
use fem_core::{unroll, Real};

/// Applies `A` (`G × N`, rows `q < ⌈G/2⌉` in `a`) to the line of `N`
/// values at `src + m·s` and writes the `G` results to `dst + q·s` (over
/// the line when `dst` is `src`): the thread owns the line, reads each
/// value once and writes each result once.
#[inline(always)]
pub unsafe fn line<T: Real, const N: usize, const G: usize, const ODD: bool>(src: *const T, dst: *mut T, s: usize, a: impl Fn(usize, usize) -> T) {
    let r: [T; N] = core::array::from_fn(|m| *src.add(m * s));
    let c = interp_column::<T, N, G, ODD>(a, &r);
    unroll::<G>(|q| *dst.add(q * s) = c[q]);
}

/// The transpose of [`line`]: `G` values in, `N` results out.
#[inline(always)]
pub unsafe fn line_t<T: Real, const N: usize, const G: usize, const ODD: bool>(w: *mut T, s: usize, a: impl Fn(usize, usize) -> T) {
    let c: [T; G] = core::array::from_fn(|q| *w.add(q * s));
    let r = project_column::<T, N, G, ODD>(a, &c);
    unroll::<N>(|m| *w.add(m * s) = r[m]);
}

/// The 1D matrices `[B | D]` of `tab` copied into shared memory by the
/// whole block, and the work arrays of this thread's element
/// (`blockDim.y` elements a block, `fields` fields each, see
/// [`field`]): the layout of [`crate::pointwise::partial::shared_len`].
/// The caller passes a barrier before reading either.
#[inline(always)]
pub unsafe fn element_work<T: Real, const NQ: usize>(tab: *const T, fields: usize) -> (*mut T, [impl Fn(usize, usize) -> T + Copy; 2]) {
    let s = dynamic_shared::<T>();
    let (t, nt) = (thread_idx_x() + block_dim_x() * thread_idx_y(), block_dim_x() * block_dim_y());
    let mut m = t;
    while m < 2 * NQ * NQ {
        *s.add(m) = *tab.add(m);
        m += nt;
    }
    let (sb, sd) = (s as *const T, s.add(NQ * NQ) as *const T);
    let w = s.add(2 * NQ * NQ + thread_idx_y() * per_element(NQ, fields));
    (w, [matrix::<T, NQ>(sb), matrix::<T, NQ>(sd)])
}

/// Entry (q, m) of the row-major `NQ × NQ` matrix at `a`.
#[inline(always)]
fn matrix<T: Real, const NQ: usize>(a: *const T) -> impl Fn(usize, usize) -> T + Copy {
    // SAFETY: the callers index within the matrix they loaded
    move |q: usize, m: usize| unsafe { *a.add(q * NQ + m) }
}

/// Array `h` of field `f` in an element's work `w`: h = 0 the values (at
/// the nodes, then at the points), 1..=3 the reference derivatives at the
/// points, each `NQ` slices of `NQ × padded(NQ)`.
#[inline(always)]
pub unsafe fn field<T, const NQ: usize>(w: *mut T, f: usize, h: usize) -> *mut T {
    w.add((f * 4 + h) * NQ * NQ * padded(NQ))
}

/// Offset of node or point (i, j, k) in a work array.
#[inline(always)]
pub const fn at<const NQ: usize>(k: usize, j: usize, i: usize) -> usize {
    (k * NQ + j) * padded(NQ) + i
}

/// Field `f`'s node values, stored in its array 0 by the whole block
/// and a barrier passed, to its value and reference derivatives at the
/// Gauss points (arrays 0 to 3): x- and y-lines in shared memory, the
/// thread's z-column in registers, then the collocation derivative,
/// which is left out (arrays 1 to 3 untouched) unless `derivatives`: a
/// g0-only Jacobian (the mass) never reads them. The whole block calls
/// it; the caller passes a barrier before reading.
#[inline(always)]
pub unsafe fn to_points<T: Real, const NQ: usize>(w: *mut T, f: usize, b: impl Fn(usize, usize) -> T + Copy, d: impl Fn(usize, usize) -> T + Copy, derivatives: bool) {
    let p = padded(NQ);
    let t = thread_idx_x();
    let (i, j) = (t % NQ, t / NQ);
    // x-line (row t div N, line t mod N) and y-line (column t mod N) of slice t div N
    let (xl, yl) = (at::<NQ>(t / NQ, t % NQ, 0), at::<NQ>(t / NQ, 0, t % NQ));
    let u = field::<T, NQ>(w, f, 0);
    line::<T, NQ, NQ, false>(u.add(xl), u.add(xl), 1, b);
    barrier();
    line::<T, NQ, NQ, false>(u.add(yl), u.add(yl), p, b);
    barrier();
    let r: [T; NQ] = core::array::from_fn(|k| *u.add(at::<NQ>(k, j, i)));
    let col = interp_column::<T, NQ, NQ, false>(b, &r);
    if !derivatives {
        unroll::<NQ>(|k| *u.add(at::<NQ>(k, j, i)) = col[k]);
        return;
    }
    let dz = interp_column::<T, NQ, NQ, true>(d, &col);
    unroll::<NQ>(|k| {
        *u.add(at::<NQ>(k, j, i)) = col[k];
        *field::<T, NQ>(w, f, 3).add(at::<NQ>(k, j, i)) = dz[k];
    });
    barrier();
    line::<T, NQ, NQ, true>(u.add(xl), field::<T, NQ>(w, f, 1).add(xl), 1, d);
    line::<T, NQ, NQ, true>(u.add(yl), field::<T, NQ>(w, f, 2).add(yl), p, d);
}

/// The transpose of [`to_points`]: field `f`'s values and reference
/// derivatives at the points (arrays 0 to 3, a barrier passed since they
/// were written; the values alone unless `derivatives`) integrated
/// against the basis into its node values, left in array 0 with a
/// barrier passed.
#[inline(always)]
pub unsafe fn from_points<T: Real, const NQ: usize>(w: *mut T, f: usize, b: impl Fn(usize, usize) -> T + Copy, d: impl Fn(usize, usize) -> T + Copy, derivatives: bool) {
    let p = padded(NQ);
    let t = thread_idx_x();
    let (i, j) = (t % NQ, t / NQ);
    let (xl, yl) = (at::<NQ>(t / NQ, t % NQ, 0), at::<NQ>(t / NQ, 0, t % NQ));
    let arr = |h: usize| field::<T, NQ>(w, f, h);
    let u = arr(0);
    let mut sum: [T; NQ] = core::array::from_fn(|k| *u.add(at::<NQ>(k, j, i)));
    if derivatives {
        let vz: [T; NQ] = core::array::from_fn(|k| *arr(3).add(at::<NQ>(k, j, i)));
        let z = project_column::<T, NQ, NQ, true>(d, &vz);
        line_t::<T, NQ, NQ, true>(arr(1).add(xl), 1, d);
        line_t::<T, NQ, NQ, true>(arr(2).add(yl), p, d);
        barrier();
        sum = core::array::from_fn(|k| sum[k] + z[k] + *arr(1).add(at::<NQ>(k, j, i)) + *arr(2).add(at::<NQ>(k, j, i)));
    }
    let r = project_column::<T, NQ, NQ, false>(b, &sum);
    unroll::<NQ>(|k| *u.add(at::<NQ>(k, j, i)) = r[k]);
    barrier();
    line_t::<T, NQ, NQ, false>(u.add(yl), p, b);
    barrier();
    line_t::<T, NQ, NQ, false>(u.add(xl), 1, b);
    barrier();
}
