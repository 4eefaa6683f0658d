//! Procedural macros of fem.
//!
//! `#[kernel(f32, f64)]` turns one generic kernel body into PTX entry points
//! with mechanical names (`fem_<name>_<type>`), so host code finds a kernel
//! with a format string and every precision shares a single source. The
//! pointwise-physics macro `#[fem_kernel]` builds on the same expansion.

#![deny(missing_docs)]
use proc_macro::TokenStream;

mod entry;
mod physics;
mod state;

/// Generates one `extern "ptx-kernel"` entry point per listed type for a
/// generic `unsafe fn name<T>(...)`, named `fem_<name>_<type>`; with no list
/// the function must not be generic and the entry is `fem_<name>`.
///
/// After the precisions, `;`-separated axes instantiate const generics:
/// `elements` (the Q_p element table: `D`, `NB`, `QD`), `degrees` or
/// `degrees = A..=B` (tensor-product degree N: `NQ` = N + 1, `GQ` = N + 2,
/// suffix `_n<N>`; 1..=15 by default) and `NAME = v1, v2, ...`.
///
/// The entry points exist only when compiling for `nvptx64`; the generic
/// function itself is kept (and inlined into each entry point).
///
/// ```ignore
/// #[fem_macros::kernel(f32, f64)]
/// pub unsafe fn axpy<T: Real>(n: usize, a: T, x: *const T, y: *mut T) { /* ... */ }
/// // => fem_axpy_f32(n: usize, a: f32, x: *const f32, y: *mut f32), fem_axpy_f64(...)
/// ```
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns a module of pointwise physics functions into a physics type and
/// its kernels.
///
/// The module defines the integrands of the weak form
/// ∫ φ·f0(u, ∇u, a, ∇a, x) + ∇φ : f1(u, ∇u, a, ∇a, x) = 0 as plain
/// functions `fn f1<T: Real, const D: usize>(u: &[T; NC], du: &[[T; D]; NC],
/// a: &[T; NA], da: &[[T; D]; NA], x: &[T; D]) -> [[T; D]; NC]` (and `f0`,
/// and for Newton the derivatives `g0`..`g3`; see
/// `fem_core::physics::Physics` for their shapes). A function that depends
/// on time takes it as one more argument, `t: T`, last (the step's time in
/// a time integration, 0 in a stationary solve). The attribute lists the
/// variants to generate:
///
/// * `elements(tri(p = 1, q = 1), tet(p = 2, q = 4), hex(p = 1, q = 8), ...)`:
///   shape, degree and quadrature points of each variant;
/// * `components = 1` (or 2, 3, or `dim` for vector fields with one
///   component per direction); `aux = NA` auxiliary fields (at most 16), in
///   `aux_space = cell` (P0, the default) or `nodal` (the solution's space);
/// * `precision(f32, f64)` (both by default); `physics = Name` (default: the
///   module name in CamelCase); `gpu_cfg(...)` an extra `cfg` on the PTX
///   entry points.
///
/// It appends to the module the unit struct, its `Physics` impls, a
/// `fem_kernels::pointwise::Kernels` impl (the variant table and the CPU
/// code of each variant, unrolled for its sizes) and, when compiled for
/// `nvptx64`, the thread-transposition entry points
/// `fem_residual_<module>_<shape>_p<P>_q<Q>_<precision>` (and
/// `fem_jacobian_...` when `g0`..`g3` exist). The crate must depend on
/// `fem-kernels`.
///
/// ```ignore
/// #[fem_kernel(components = 1, aux = 1, elements(tri(p = 1, q = 1), tet(p = 2, q = 4)))]
/// pub mod poisson {
///     use fem_kernels::fem_core::Real;
///     pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], a: &[T; 1], _da: &[[T; D]; 1], _x: &[T; D]) -> [[T; D]; 1] {
///         [core::array::from_fn(|k| a[0] * du[0][k])]
///     }
/// }
/// ```
#[proc_macro_attribute]
pub fn fem_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    physics::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
