//! Whether a physics' Jacobian reads the state: the matrix-free action
//! interpolates the state to the points only for Jacobians that read it
//! (neo-Hookean's g3 reads ∇u; linear elasticity's and the Laplacian's
//! read neither u nor ∇u), which halves a vector physics' shared memory
//! and contractions when they do not.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{FnArg, ItemFn, Pat};

/// Whether `f` may read its first two arguments (`u`, `du`): a parameter
/// bound to `_` is never read; a named one is read where its name occurs
/// in the body, inside a string literal too (a format string may name
/// it); any other pattern counts as read. Shadowing only errs towards
/// reading.
pub fn reads_state(f: &ItemFn) -> bool {
    let body = f.block.to_token_stream();
    f.sig.inputs.iter().take(2).any(|arg| match arg {
        FnArg::Typed(t) => match &*t.pat {
            Pat::Wild(_) => false,
            Pat::Ident(i) => occurs(&i.ident.to_string(), body.clone()),
            _ => true,
        },
        FnArg::Receiver(_) => true,
    })
}

/// Whether `name` occurs in `tokens` as an identifier or inside a
/// literal.
fn occurs(name: &str, tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == name,
        TokenTree::Literal(l) => l.to_string().contains(name),
        TokenTree::Group(g) => occurs(name, g.stream()),
        TokenTree::Punct(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(src: &str) -> bool {
        reads_state(&syn::parse_str::<ItemFn>(src).unwrap())
    }

    #[test]
    fn a_parameter_used_in_the_body_is_read() {
        assert!(reads("fn g3<T, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], a: &[T; 0], da: &[[T; D]; 0], x: &[T; D]) -> T { du[0][0] }"));
        assert!(reads("fn g0<T, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 0], da: &[[T; D]; 0], x: &[T; D]) -> T { { let v = [u[0]]; v[0] } }"));
        assert!(reads("fn g0<T, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 0], da: &[[T; D]; 0], x: &[T; D]) -> T { _u[0] }"));
        assert!(reads("fn g0<T, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 0], da: &[[T; D]; 0], x: &[T; D]) -> T { show!(\"{u:?}\"); a[0] }"));
        assert!(reads("fn g0<T, const D: usize>([u]: &[T; 1], _du: &[[T; D]; 1], a: &[T; 0], da: &[[T; D]; 0], x: &[T; D]) -> T { a[0] }"));
    }

    #[test]
    fn a_parameter_not_in_the_body_is_not_read() {
        assert!(!reads("fn g3<T, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], a: &[T; 2], da: &[[T; D]; 2], x: &[T; D]) -> T { a[0] * x[0] }"));
        assert!(!reads("fn g3<T, const D: usize>(u: &[T; 1], _: &[[T; D]; 1], a: &[T; 2], da: &[[T; D]; 2], x: &[T; D]) -> T { a[0] }"));
        // the state's name as part of another identifier is not a read
        assert!(!reads("fn g3<T, const D: usize>(u: &[T; 1], du: &[[T; D]; 1], a: &[T; 2], dua: &[[T; D]; 2], x: &[T; D]) -> T { dua[0][0] }"));
    }
}
