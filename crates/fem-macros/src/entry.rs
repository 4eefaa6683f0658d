//! Expansion of `#[kernel(...)]`: validation of the kernel signature and
//! generation of the per-precision entry points.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::punctuated::Punctuated;
use syn::visit_mut::VisitMut;
use syn::{
    FnArg, GenericParam, Ident, ItemFn, Pat, ReturnType, Token, Type, TypePath,
};

/// Precisions a kernel may be instantiated for.
const SUPPORTED: &[&str] = &["f32", "f64"];

/// The Q_p elements with specialised kernels: (dim, degree, NB, QD), the
/// same table as `fem_kernels::with_element!`.
const ELEMENTS: &[(usize, usize, usize, usize)] = &[
    (2, 1, 4, 36),
    (2, 2, 9, 64),
    (2, 3, 16, 100),
    (2, 4, 25, 144),
    (2, 5, 36, 196),
    (2, 6, 49, 256),
    (3, 1, 8, 189),
    (3, 2, 27, 448),
    (3, 3, 64, 875),
    (3, 4, 125, 1512),
];

/// `#[kernel(types; axis; axis ...)]`.
struct Spec {
    types: Punctuated<Ident, Token![,]>,
    axes: Vec<Axis>,
}

/// One instantiation axis: the element table (binds `D`, `NB`, `QD`), or a
/// named const generic with its values.
enum Axis {
    Elements,
    /// Tensor-product degrees N (binds `NQ` = N + 1, `GQ` = N + 2 and
    /// `HQ` = ⌈GQ / 2⌉, the stored rows of a centro-symmetric `GQ × ·`
    /// matrix).
    Degrees(Vec<usize>),
    Values(Ident, Vec<syn::Expr>),
}

impl syn::parse::Parse for Spec {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let mut types = Punctuated::new();
        while !input.is_empty() && !input.peek(Token![;]) {
            types.push_value(input.parse()?);
            if input.peek(Token![,]) {
                types.push_punct(input.parse()?);
            }
        }
        let mut axes = Vec::new();
        while input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
            let name: Ident = input.parse()?;
            if name == "elements" {
                axes.push(Axis::Elements);
                continue;
            }
            if name == "degrees" {
                let mut degrees = Vec::new();
                if input.peek(Token![=]) {
                    input.parse::<Token![=]>()?;
                    let lo: syn::LitInt = input.parse()?;
                    input.parse::<Token![..=]>()?;
                    let hi: syn::LitInt = input.parse()?;
                    degrees.extend(lo.base10_parse::<usize>()?..=hi.base10_parse::<usize>()?);
                } else {
                    degrees.extend(1..=15);
                }
                axes.push(Axis::Degrees(degrees));
                continue;
            }
            input.parse::<Token![=]>()?;
            let mut values = Vec::new();
            loop {
                values.push(input.parse::<syn::Expr>()?);
                if !input.peek(Token![,]) {
                    break;
                }
                input.parse::<Token![,]>()?;
            }
            axes.push(Axis::Values(name, values));
        }
        Ok(Self { types, axes })
    }
}

/// One binding of the generic parameters: name → (value tokens, name suffix).
type Binding = Vec<(String, TokenStream, String)>;

fn axis_bindings(axis: &Axis) -> Vec<Binding> {
    match axis {
        Axis::Elements => ELEMENTS
            .iter()
            .map(|&(d, p, nb, qd)| {
                vec![
                    ("D".to_string(), quote!(#d), format!("_{d}d_p{p}")),
                    ("NB".to_string(), quote!(#nb), String::new()),
                    ("QD".to_string(), quote!(#qd), String::new()),
                ]
            })
            .collect(),
        Axis::Degrees(degrees) => degrees
            .iter()
            .map(|&n| {
                let (nq, gq) = (n + 1, n + 2);
                let hq = gq.div_ceil(2);
                vec![
                    ("NQ".to_string(), quote!(#nq), format!("_n{n}")),
                    ("GQ".to_string(), quote!(#gq), String::new()),
                    ("HQ".to_string(), quote!(#hq), String::new()),
                ]
            })
            .collect(),
        Axis::Values(name, values) => values
            .iter()
            .map(|v| {
                let text = quote!(#v).to_string().replace(' ', "");
                let suffix = match text.as_str() {
                    "true" => "1".to_string(),
                    "false" => "0".to_string(),
                    t => t.to_lowercase().replace("::", "_"),
                };
                vec![(name.to_string(), quote!(#v), format!("_{}{}", name.to_string().to_lowercase(), suffix))]
            })
            .collect(),
    }
}

/// Entry points for every combination of the precisions and the axes.
fn expand_axes(mut func: ItemFn, types: &Punctuated<Ident, Token![,]>, axes: &[Axis]) -> syn::Result<TokenStream> {
    let generics: Vec<GenericParam> = func.sig.generics.params.iter().cloned().collect();
    let type_params: Vec<&Ident> = generics.iter().filter_map(|g| if let GenericParam::Type(t) = g { Some(&t.ident) } else { None }).collect();
    let [tp] = type_params.as_slice() else {
        return Err(syn::Error::new_spanned(&func.sig.generics, "a kernel with instantiation axes takes one type parameter (the precision)"));
    };
    let tp = (*tp).clone();
    if types.is_empty() {
        return Err(syn::Error::new_spanned(&func.sig.ident, "list the precisions before the axes: #[kernel(f32, f64; ...)]"));
    }
    let mut combos: Vec<Binding> = vec![Vec::new()];
    for axis in axes {
        let mut next = Vec::new();
        for c in &combos {
            for b in axis_bindings(axis) {
                let mut merged = c.clone();
                merged.extend(b);
                next.push(merged);
            }
        }
        combos = next;
    }
    // every const generic must be bound by an axis
    for g in &generics {
        if let GenericParam::Const(c) = g {
            if !combos[0].iter().any(|(n, _, _)| c.ident == n) {
                return Err(syn::Error::new_spanned(&c.ident, format!("const parameter `{}` is not bound by any axis", c.ident)));
            }
        }
    }
    func.attrs.push(syn::parse_quote!(#[inline(always)]));
    let name = func.sig.ident.clone();
    let mut entries = Vec::new();
    for ty in types {
        if !SUPPORTED.contains(&ty.to_string().as_str()) {
            return Err(syn::Error::new(ty.span(), format!("unsupported kernel precision `{ty}`: expected one of {SUPPORTED:?}")));
        }
        for combo in &combos {
            let suffix: String = combo.iter().map(|(_, _, s)| s.as_str()).collect();
            let entry_name = format_ident!("fem_{}{}_{}", name, suffix, ty);
            let args_generic: Vec<TokenStream> = generics
                .iter()
                .map(|g| match g {
                    GenericParam::Type(_) => quote!(#ty),
                    GenericParam::Const(c) => {
                        let v = &combo.iter().find(|(n, _, _)| c.ident == n).unwrap().1;
                        quote!({ #v })
                    }
                    GenericParam::Lifetime(_) => quote!('_),
                })
                .collect();
            let mut args = Vec::new();
            let mut idents = Vec::new();
            for arg in &func.sig.inputs {
                if let FnArg::Typed(t) = arg {
                    let mut ty_arg = (*t.ty).clone();
                    Substitute { param: &tp, concrete: ty }.visit_type_mut(&mut ty_arg);
                    BindConsts { combo }.visit_type_mut(&mut ty_arg);
                    let pat = &t.pat;
                    args.push(quote!(#pat: #ty_arg));
                    idents.push(quote!(#pat));
                }
            }
            let doc = format!("PTX entry point `{entry_name}`: see [`{name}`].");
            entries.push(quote! {
                #[cfg(target_arch = "nvptx64")]
                #[doc = #doc]
                #[no_mangle]
                pub unsafe extern "ptx-kernel" fn #entry_name(#(#args),*) {
                    #name::<#(#args_generic),*>(#(#idents),*)
                }
            });
        }
    }
    Ok(quote! {
        #func
        #(#entries)*
    })
}

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let spec: Spec = syn::parse2(attr)?;
    let types = spec.types;
    let mut func: ItemFn = syn::parse2(item)?;
    validate_signature(&func)?;
    if !spec.axes.is_empty() {
        return expand_axes(func, &types, &spec.axes);
    }
    let type_param = single_type_param(&func, types.is_empty())?;
    for t in &types {
        if !SUPPORTED.contains(&t.to_string().as_str()) {
            return Err(syn::Error::new(
                t.span(),
                format!("unsupported kernel precision `{t}`: expected one of {SUPPORTED:?}"),
            ));
        }
    }
    func.attrs.push(syn::parse_quote!(#[inline(always)]));
    let entries: Vec<TokenStream> = match &type_param {
        None => vec![entry_point(&func, None, None)?],
        Some(p) => types
            .iter()
            .map(|t| entry_point(&func, Some(p), Some(t)))
            .collect::<syn::Result<_>>()?,
    };
    Ok(quote! {
        #func
        #(#entries)*
    })
}

/// Entry points take plain values and pointers: no `self`, no patterns,
/// no return value, and the function must be `unsafe` because the
/// pointers it dereferences cannot be checked.
fn validate_signature(func: &ItemFn) -> syn::Result<()> {
    let sig = &func.sig;
    if sig.unsafety.is_none() {
        return Err(syn::Error::new_spanned(
            sig.fn_token,
            "a kernel must be an `unsafe fn`: it dereferences raw device pointers",
        ));
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        return Err(syn::Error::new_spanned(ty, "a kernel cannot return a value; write results through a pointer"));
    }
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new_spanned(a, "a kernel cannot be async"));
    }
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(r) => {
                return Err(syn::Error::new_spanned(r, "a kernel cannot take `self`"))
            }
            FnArg::Typed(t) => {
                if !matches!(&*t.pat, Pat::Ident(_)) {
                    return Err(syn::Error::new_spanned(&t.pat, "kernel parameters must be plain identifiers"));
                }
                if matches!(&*t.ty, Type::Reference(_)) {
                    return Err(syn::Error::new_spanned(
                        &t.ty,
                        "kernel parameters cannot be references: pass device pointers (`*const T`, `*mut T`)",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The kernel's one type parameter (the precision), or none for a
/// non-generic kernel instantiated without a type list.
fn single_type_param(func: &ItemFn, no_types: bool) -> syn::Result<Option<Ident>> {
    let params: Vec<&GenericParam> = func.sig.generics.params.iter().collect();
    let type_params: Vec<&Ident> = params
        .iter()
        .filter_map(|p| match p {
            GenericParam::Type(t) => Some(&t.ident),
            _ => None,
        })
        .collect();
    if let Some(p) = params.iter().find(|p| !matches!(p, GenericParam::Type(_))) {
        return Err(syn::Error::new_spanned(p, "only a type parameter (the precision) is supported here"));
    }
    match (type_params.as_slice(), no_types) {
        ([], true) => Ok(None),
        ([], false) => Err(syn::Error::new_spanned(
            &func.sig.ident,
            "precisions are listed but the kernel has no type parameter",
        )),
        ([p], false) => Ok(Some((*p).clone())),
        ([p], true) => Err(syn::Error::new_spanned(
            p,
            "a generic kernel needs its precisions listed: #[kernel(f32, f64)]",
        )),
        (_, _) => Err(syn::Error::new_spanned(
            &func.sig.generics,
            "a kernel takes at most one type parameter (the precision)",
        )),
    }
}

/// Replaces every path that is exactly the type parameter by the concrete type.
struct Substitute<'a> {
    param: &'a Ident,
    concrete: &'a Ident,
}

impl VisitMut for Substitute<'_> {
    fn visit_type_path_mut(&mut self, tp: &mut TypePath) {
        if tp.qself.is_none() && tp.path.is_ident(self.param) {
            let c = self.concrete;
            *tp = syn::parse_quote!(#c);
        } else {
            syn::visit_mut::visit_type_path_mut(self, tp);
        }
    }
}

/// Replaces the axes' const parameters in a parameter type (`Tab<T, NQ>`,
/// `[T; GQ]`) by their values, so that entry points may take arrays and
/// structs sized by the degree by value.
struct BindConsts<'a> {
    combo: &'a Binding,
}

impl BindConsts<'_> {
    fn value(&self, path: &syn::Path) -> Option<&TokenStream> {
        let id = path.get_ident()?;
        self.combo.iter().find(|(n, _, _)| id == n).map(|(_, v, _)| v)
    }
}

impl VisitMut for BindConsts<'_> {
    fn visit_generic_argument_mut(&mut self, arg: &mut syn::GenericArgument) {
        if let syn::GenericArgument::Type(Type::Path(tp)) = arg {
            if let Some(v) = tp.qself.is_none().then(|| self.value(&tp.path)).flatten() {
                *arg = syn::parse_quote!({ #v });
                return;
            }
        }
        syn::visit_mut::visit_generic_argument_mut(self, arg);
    }
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::Path(p) = e {
            if let Some(v) = p.qself.is_none().then(|| self.value(&p.path)).flatten() {
                *e = syn::parse_quote!({ #v });
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

fn entry_point(func: &ItemFn, param: Option<&Ident>, concrete: Option<&Ident>) -> syn::Result<TokenStream> {
    let name = &func.sig.ident;
    let entry_name = match concrete {
        Some(t) => format_ident!("fem_{}_{}", name, t),
        None => format_ident!("fem_{}", name),
    };
    let mut args = Vec::new();
    let mut idents = Vec::new();
    for arg in &func.sig.inputs {
        if let FnArg::Typed(t) = arg {
            let mut ty = (*t.ty).clone();
            if let (Some(p), Some(c)) = (param, concrete) {
                Substitute { param: p, concrete: c }.visit_type_mut(&mut ty);
            }
            let pat = &t.pat;
            args.push(quote!(#pat: #ty));
            idents.push(quote!(#pat));
        }
    }
    let turbofish = concrete.map(|c| quote!(::<#c>));
    let doc = format!("PTX entry point `{entry_name}`: see [`{name}`].");
    Ok(quote! {
        #[cfg(target_arch = "nvptx64")]
        #[doc = #doc]
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn #entry_name(#(#args),*) {
            #name #turbofish(#(#idents),*)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::expand;
    use quote::quote;

    fn expanded(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> String {
        expand(attr, item).unwrap().to_string()
    }

    #[test]
    fn one_entry_per_precision_with_substituted_types() {
        let out = expanded(
            quote!(f32, f64),
            quote!(pub unsafe fn axpy<T: Real>(n: usize, a: T, x: *const T, y: *mut T) {}),
        );
        assert!(out.contains("fn fem_axpy_f32 (n : usize , a : f32 , x : * const f32 , y : * mut f32)"), "{out}");
        assert!(out.contains("fn fem_axpy_f64 (n : usize , a : f64 , x : * const f64 , y : * mut f64)"), "{out}");
        assert!(out.contains("axpy :: < f64 > (n , a , x , y)"), "{out}");
        assert!(out.contains("extern \"ptx-kernel\""));
        assert!(out.contains("inline (always)"));
    }

    #[test]
    fn axes_instantiate_every_combination() {
        let out = expanded(
            quote!(f64; elements; SYM = false, true),
            quote!(pub unsafe fn lma<T: Real, const D: usize, const NB: usize, const QD: usize, const SYM: bool>(n: usize, x: *const T) {}),
        );
        assert!(out.contains("fn fem_lma_2d_p1_sym0_f64 (n : usize , x : * const f64)"), "{out}");
        assert!(out.contains("fn fem_lma_3d_p4_sym1_f64"), "{out}");
        assert!(out.contains("lma :: < f64 , { 3usize } , { 125usize } , { 1512usize } , { true } >"), "{out}");
        assert_eq!(out.matches("extern \"ptx-kernel\"").count(), 20);
        let out = expanded(quote!(f32, f64; TPR = 1, 32), quote!(pub unsafe fn csr<T: Real, const TPR: usize>(n: usize) {}));
        assert!(out.contains("fn fem_csr_tpr32_f32") && out.contains("fn fem_csr_tpr1_f64"), "{out}");
        let out = expanded(quote!(f64; degrees = 3..=3), quote!(pub unsafe fn bp<T: Real, const NQ: usize, const GQ: usize, const HQ: usize>(t: Tab<T, NQ, HQ>, c: [T; GQ]) {}));
        assert!(out.contains("fn fem_bp_n3_f64 (t : Tab < f64 , { 4usize } , { 3usize } > , c : [f64 ; { 5usize }])"), "{out}");
        let err = expand(quote!(f64; TPR = 1), quote!(pub unsafe fn k<T, const TPR: usize, const X: usize>(n: usize) {})).unwrap_err();
        assert!(err.to_string().contains("`X` is not bound"));
    }

    #[test]
    fn non_generic_kernel_gets_plain_name() {
        let out = expanded(quote!(), quote!(pub unsafe fn probe(n: usize, p: *mut u32) {}));
        assert!(out.contains("fn fem_probe (n : usize , p : * mut u32)"), "{out}");
    }

    fn error_of(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> String {
        expand(attr, item).unwrap_err().to_string()
    }

    #[test]
    fn rejects_bad_signatures() {
        assert!(error_of(quote!(f64), quote!(pub fn k<T>(x: *mut T) {})).contains("unsafe fn"));
        assert!(error_of(quote!(f64), quote!(pub unsafe fn k<T>(x: *mut T) -> T { loop {} })).contains("cannot return"));
        assert!(error_of(quote!(f16), quote!(pub unsafe fn k<T>(x: *mut T) {})).contains("unsupported kernel precision `f16`"));
        assert!(error_of(quote!(), quote!(pub unsafe fn k<T>(x: *mut T) {})).contains("precisions listed"));
        assert!(error_of(quote!(f64), quote!(pub unsafe fn k(x: *mut f64) {})).contains("no type parameter"));
        assert!(error_of(quote!(f64), quote!(pub unsafe fn k<T, U>(x: *mut T) {})).contains("at most one"));
        assert!(error_of(quote!(f64), quote!(pub unsafe fn k<T>(x: &mut T) {})).contains("cannot be references"));
        assert!(error_of(quote!(f64), quote!(pub unsafe fn k<T>((a, b): (T, T)) {})).contains("plain identifiers"));
    }
}
