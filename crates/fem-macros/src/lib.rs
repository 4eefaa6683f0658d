//! Procedural macros of fem.
//!
//! `#[kernel(f32, f64)]` turns one generic kernel body into PTX entry points
//! with mechanical names (`fem_<name>_<type>`), so host code finds a kernel
//! with a format string and every precision shares a single source. The
//! pointwise-physics macro `#[fem_kernel]` builds on the same expansion.

use proc_macro::TokenStream;

mod entry;

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
