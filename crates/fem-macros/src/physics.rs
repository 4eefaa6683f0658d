//! Expansion of `#[fem_kernel(...)]` on a module of pointwise functions:
//! validation of the functions and the variant list, then the physics type,
//! its `Physics` impls, the CPU dispatch and one PTX entry per variant and
//! precision.

use fem_core::shape::Shape;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{GenericParam, Ident, Item, ItemFn, ItemMod, LitInt};

/// The pointwise functions a physics module may define, in `Terms` order:
/// the cell terms, then the boundary term and its linearisation.
const FUNCTIONS: [&str; 9] = ["f0", "f1", "g0", "g1", "g2", "g3", "bf0", "bg0", "bg1"];

/// Whether `FUNCTIONS[k]` is a boundary function, which also takes the
/// outward normal.
const fn boundary(k: usize) -> bool {
    k >= 6
}

/// One element the attribute names.
struct ElementSpec {
    shape: Shape,
    degree: usize,
    nq: usize,
    span: Span,
}

/// Parsed attribute.
struct Spec {
    physics: Option<Ident>,
    /// `None`: as many components as dimensions (`components = dim`).
    components: Option<usize>,
    aux: usize,
    aux_nodal: bool,
    elements: Vec<ElementSpec>,
    precisions: Vec<Ident>,
    gpu_cfg: Option<TokenStream>,
}

fn int(meta: &syn::meta::ParseNestedMeta) -> syn::Result<(usize, Span)> {
    let lit: LitInt = meta.value()?.parse()?;
    Ok((lit.base10_parse()?, lit.span()))
}

fn parse_element(meta: syn::meta::ParseNestedMeta, out: &mut Vec<ElementSpec>) -> syn::Result<()> {
    let ident = meta.path.get_ident().cloned().ok_or_else(|| meta.error("expected an element: tri, tet, quad or hex"))?;
    let shape = Shape::parse(&ident.to_string())
        .ok_or_else(|| syn::Error::new(ident.span(), format!("unknown element `{ident}`: expected tri, tet, quad or hex")))?;
    let (mut degree, mut nq) = (None, None);
    meta.parse_nested_meta(|kv| {
        if kv.path.is_ident("p") {
            let (p, span) = int(&kv)?;
            if !shape.supports_degree(p) {
                let have = if shape.is_simplex() { "1 and 2".to_string() } else { format!("1 to {}", fem_core::shape::MAX_TENSOR_DEGREE) };
                return Err(syn::Error::new(span, format!("`{ident}` elements support degrees {have}, not {p}")));
            }
            degree = Some(p);
        } else if kv.path.is_ident("q") {
            let (n, span) = int(&kv)?;
            if !shape.rule_sizes().contains(&n) {
                return Err(syn::Error::new(span, format!("no {n}-point rule on `{ident}`: available {:?}", shape.rule_sizes())));
            }
            nq = Some(n);
        } else {
            return Err(kv.error("expected `p = degree` or `q = quadrature points`"));
        }
        Ok(())
    })?;
    let (Some(degree), Some(nq)) = (degree, nq) else {
        return Err(syn::Error::new(ident.span(), format!("`{ident}` needs both `p = ...` and `q = ...`")));
    };
    if out.iter().any(|e| e.shape == shape && e.degree == degree && e.nq == nq) {
        return Err(syn::Error::new(ident.span(), format!("`{ident}(p = {degree}, q = {nq})` is listed twice")));
    }
    out.push(ElementSpec { shape, degree, nq, span: ident.span() });
    Ok(())
}

impl Spec {
    fn parse(attr: TokenStream) -> syn::Result<Self> {
        let mut spec = Spec { physics: None, components: Some(1), aux: 0, aux_nodal: false, elements: Vec::new(), precisions: Vec::new(), gpu_cfg: None };
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("physics") {
                spec.physics = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("components") {
                let v = meta.value()?;
                if v.peek(Ident) {
                    let id: Ident = v.parse()?;
                    if id != "dim" {
                        return Err(syn::Error::new(id.span(), "components is a number or `dim`"));
                    }
                    spec.components = None;
                } else {
                    let lit: LitInt = v.parse()?;
                    let n: usize = lit.base10_parse()?;
                    if n == 0 || n > 3 {
                        return Err(syn::Error::new(lit.span(), "components must be 1, 2, 3 or `dim`"));
                    }
                    spec.components = Some(n);
                }
            } else if meta.path.is_ident("aux") {
                let (n, span) = int(&meta)?;
                // They live in shared memory beside the batch's E-vectors.
                if n > 16 {
                    return Err(syn::Error::new(span, "at most 16 auxiliary fields"));
                }
                spec.aux = n;
            } else if meta.path.is_ident("aux_space") {
                let id: Ident = meta.value()?.parse()?;
                spec.aux_nodal = match id.to_string().as_str() {
                    "nodal" => true,
                    "cell" => false,
                    _ => return Err(syn::Error::new(id.span(), "aux_space is `nodal` (the solution's space) or `cell` (P0)")),
                };
            } else if meta.path.is_ident("elements") {
                meta.parse_nested_meta(|el| parse_element(el, &mut spec.elements))?;
            } else if meta.path.is_ident("precision") {
                meta.parse_nested_meta(|p| {
                    let id = p.path.get_ident().cloned().ok_or_else(|| p.error("expected f32 or f64"))?;
                    if id != "f32" && id != "f64" {
                        return Err(syn::Error::new(id.span(), format!("unsupported precision `{id}`: expected f32 or f64")));
                    }
                    spec.precisions.push(id);
                    Ok(())
                })?;
            } else if meta.path.is_ident("gpu_cfg") {
                let content;
                syn::parenthesized!(content in meta.input);
                spec.gpu_cfg = Some(content.parse()?);
            } else {
                return Err(meta.error("expected physics, components, aux, aux_space, elements, precision or gpu_cfg"));
            }
            Ok(())
        });
        syn::parse::Parser::parse2(parser, attr)?;
        if spec.elements.is_empty() {
            return Err(syn::Error::new(Span::call_site(), "name at least one element: elements(tri(p = 1, q = 1), ...)"));
        }
        if spec.precisions.is_empty() {
            spec.precisions = vec![Ident::new("f32", Span::call_site()), Ident::new("f64", Span::call_site())];
        }
        Ok(spec)
    }
}

/// Checks a pointwise function's shape: `<T: Real, const D: usize>` and
/// five arguments (u, ∇u, a, ∇a, x), six with the normal n on the
/// boundary, either followed by the time t if the function takes it, with
/// a return type; whether it takes the time.
fn check_function(f: &ItemFn, on_boundary: bool) -> syn::Result<bool> {
    let params: Vec<&GenericParam> = f.sig.generics.params.iter().collect();
    let ok = matches!(params.as_slice(), [GenericParam::Type(_), GenericParam::Const(c)] if c.ident == "D");
    if !ok {
        let span = if params.is_empty() { f.sig.ident.span() } else { f.sig.generics.span() };
        return Err(syn::Error::new(span, format!("`{}` must be generic as `<T: Real, const D: usize>`", f.sig.ident)));
    }
    let (n, args) = if on_boundary { (6, "six arguments (u, du, a, da, x, n), or seven with the time t") } else { (5, "five arguments (u, du, a, da, x), or six with the time t") };
    let with_time = f.sig.inputs.len() == n + 1;
    if f.sig.inputs.len() != n && !with_time {
        return Err(syn::Error::new(f.sig.inputs.span(), format!("`{}` takes {args}", f.sig.ident)));
    }
    if matches!(f.sig.output, syn::ReturnType::Default) {
        return Err(syn::Error::new(f.sig.ident.span(), format!("`{}` must return its values", f.sig.ident)));
    }
    Ok(with_time)
}

fn camel(s: &str) -> String {
    s.split('_').map(|w| w[..1].to_uppercase() + &w[1..]).collect()
}

fn shape_path(s: Shape) -> TokenStream {
    let v = format_ident!("{}", format!("{s:?}"));
    quote!(::fem_kernels::fem_core::shape::Shape::#v)
}

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let spec = Spec::parse(attr)?;
    let mut module: ItemMod = syn::parse2(item)?;
    let Some((_, items)) = module.content.as_mut() else {
        return Err(syn::Error::new(module.ident.span(), "#[fem_kernel] goes on an inline module: `mod name { fn f1 ... }`"));
    };
    let mut spans: [Option<Span>; 9] = [None; 9];
    let mut timed = [false; 9];
    let mut reads_state = false;
    for it in items.iter() {
        if let Item::Fn(f) = it {
            if let Some(k) = FUNCTIONS.iter().position(|n| f.sig.ident == n) {
                timed[k] = check_function(f, boundary(k))?;
                spans[k] = Some(f.sig.ident.span());
                reads_state |= (2..6).contains(&k) && crate::state::reads_state(f);
            }
        }
    }
    let present = spans.map(|s| s.is_some());
    if !present[0] && !present[1] {
        return Err(syn::Error::new(module.ident.span(), "a physics defines `f0`, `f1` or both"));
    }
    if !present[6] && (present[7] || present[8]) {
        let span = spans[7].or(spans[8]).unwrap_or_else(|| module.ident.span());
        return Err(syn::Error::new(span, "`bg0` and `bg1` linearise the boundary term: define `bf0` too"));
    }
    let has_jacobian = present[2..6].iter().any(|&p| p);
    let name = module.ident.to_string();
    let ty = spec.physics.clone().unwrap_or_else(|| format_ident!("{}", camel(&name)));
    let generated = generate(&spec, &ty, &name, spans, timed, (has_jacobian, reads_state));
    items.extend(syn::parse2::<syn::File>(generated)?.items);
    Ok(quote!(#module))
}

/// `jacobian`: whether the physics has g0..g3, and whether they read the
/// state.
fn generate(spec: &Spec, ty: &Ident, name: &str, spans: [Option<Span>; 9], timed: [bool; 9], jacobian: (bool, bool)) -> TokenStream {
    let (has_jacobian, reads_state) = jacobian;
    let present = spans.map(|s| s.is_some());
    let core = quote!(::fem_kernels::fem_core);
    let na = spec.aux;
    let nodal = spec.aux_nodal;
    let nc_of = |d: usize| spec.components.unwrap_or(d);
    let mut dims: Vec<usize> = spec.elements.iter().map(|e| e.shape.dim()).collect();
    dims.sort_unstable();
    dims.dedup();
    let [f0, f1, g0, g1, g2, g3, bf0, bg0, bg1] = present;
    let terms = quote!(#core::physics::Terms { f0: #f0, f1: #f1, g: [#g0, #g1, #g2, #g3], bf0: #bf0, bg: [#bg0, #bg1], g_reads_state: #reads_state });
    let facet_jacobian = bg0 || bg1;

    let impls = dims.iter().map(|&d| {
        let nc = nc_of(d);
        let pt = quote!(#core::physics::Point<T, #d, #nc, #na>);
        // Absent boundary functions keep the trait's zero defaults.
        let methods = FUNCTIONS.iter().zip(spans).enumerate().filter(|(k, (_, span))| !boundary(*k) || span.is_some()).map(|(k, (f, span))| {
            let fi = format_ident!("{f}");
            let out = match *f {
                "f0" | "bf0" => quote!([T; #nc]),
                "f1" => quote!([[T; #d]; #nc]),
                "g0" | "bg0" => quote!([[T; #nc]; #nc]),
                "g1" | "g2" | "bg1" => quote!([[[T; #d]; #nc]; #nc]),
                _ => quote!([[[[T; #d]; #d]; #nc]; #nc]),
            };
            // the time only to the functions that take it
            let t = if timed[k] { quote!(, p.t) } else { quote!() };
            let body = match span {
                Some(span) if boundary(k) => quote_spanned!(span=> #fi::<T, #d>(&p.u, &p.du, &p.a, &p.da, &p.x, n #t)),
                Some(span) => quote_spanned!(span=> #fi::<T, #d>(&p.u, &p.du, &p.a, &p.da, &p.x #t)),
                None => quote!(<#out as #core::physics::Zero>::zero()),
            };
            let args = if boundary(k) { quote!(p: &#pt, n: &[T; #d]) } else { quote!(p: &#pt) };
            quote! {
                #[inline(always)]
                fn #fi(#args) -> #out { #body }
            }
        });
        quote! {
            impl<T: #core::Real> #core::physics::Physics<T, #d, #nc, #na> for #ty {
                const TERMS: #core::physics::Terms = #terms;
                #(#methods)*
            }
        }
    });

    let precisions: Vec<String> = spec.precisions.iter().map(|p| p.to_string()).collect();
    let mut table = Vec::new();
    let mut residual_arms = Vec::new();
    let mut jacobian_arms = Vec::new();
    let mut points_arms = Vec::new();
    let mut action_arms = Vec::new();
    let mut facet_arms = [Vec::new(), Vec::new(), Vec::new()];
    let mut entries = Vec::new();
    for e in &spec.elements {
        let (d, p, nq) = (e.shape.dim(), e.degree, e.nq);
        let (nb, nv, nc) = (e.shape.n_basis(p), e.shape.vertices(), nc_of(d));
        let nl = nb * nc;
        let aux = if nodal { nb * na } else { na };
        let base = format!("fem_residual_{name}_{}_p{p}_q{nq}", e.shape.name());
        let jbase = format!("fem_jacobian_{name}_{}_p{p}_q{nq}", e.shape.name());
        let jac = if has_jacobian { quote!(Some(#jbase)) } else { quote!(None) };
        let (nqf, nf) = (e.shape.facet_rule_size(p), e.shape.local_facets());
        let fbase = ["residual", "jacobian", "points"].map(|what| format!("fem_facet_{what}_{name}_{}_p{p}_q{nq}", e.shape.name()));
        let fentry = |k: usize, on: bool| {
            let b = &fbase[k];
            if on { quote!(Some(#b)) } else { quote!(None) }
        };
        let (fres, fjac) = (fentry(0, bf0), fentry(1, facet_jacobian));
        // partial assembly's point data: tensor cells of a linearised physics
        let partial = has_jacobian && !e.shape.is_simplex();
        let pbase = format!("fem_points_{name}_{}_p{p}_q{nq}", e.shape.name());
        let pentry = if partial { quote!(Some(#pbase)) } else { quote!(None) };
        // sum-factorised residual and point data: hexahedra from Q2 with
        // (p + 1)³ Gauss points, which replace the one-thread-per-cell
        // residual and the per-point point data there
        let sf = e.shape.dim() == 3 && !e.shape.is_simplex() && p >= 2 && nq == (p + 1).pow(3);
        // the Jacobian's matrix-free action: hexahedra with (p + 1)³ Gauss
        // points from Q1
        let mf = partial && e.shape.dim() == 3 && nq == (p + 1).pow(3);
        let shape = shape_path(e.shape);
        table.push(quote_spanned! {e.span=>
            ::fem_kernels::pointwise::Variant {
                shape: #shape, degree: #p, nq: #nq, nc: #nc, na: #na, aux_nodal: #nodal,
                terms: #terms, block: ::fem_kernels::pointwise::lcm(#nq, #nl), residual: #base, jacobian: #jac, precisions: &[#(#precisions),*],
                nqf: #nqf, facet_residual: #fres, facet_jacobian: #fjac, points: #pentry, sum_factorised: #sf, matrix_free: #mf,
            }
        });
        let generics = quote!(#d, #nc, #na, #nb, #nv, #nq, #nodal);
        let fgenerics = quote!(#d, #nc, #na, #nb, #nv, #nqf, #nf, #nodal);
        let point_len = quote!(::fem_kernels::pointwise::facet::facet_point_len(#d, #nc, #nqf));
        for (k, (func, per)) in [(quote!(facet_residual), quote!(#nl)), (quote!(facet_jacobian), quote!(#nl * #nl)), (quote!(facet_points), point_len)].into_iter().enumerate() {
            let fsizes = quote!([#nl, #nv * #d, #aux, #per]);
            facet_arms[k].push(quote! {
                (#shape, #p, #nq) => ::fem_kernels::pointwise::facet::for_facets(first, #fsizes, local, u, x, a, out, |l, u, x, a, o| {
                    ::fem_kernels::pointwise::facet::#func::<T, Self, #fgenerics>(tab, l, u, x, a, t, o)
                }),
            });
            if (k == 0 && !bf0) || (k > 0 && !facet_jacobian) {
                continue;
            }
            let gate = match &spec.gpu_cfg {
                Some(c) => quote!(#[cfg(all(target_arch = "nvptx64", #c))]),
                None => quote!(#[cfg(target_arch = "nvptx64")]),
            };
            let tab_len = quote!(::fem_kernels::pointwise::facet::facet_table_len(#d, #nb, #nv, #nf, #nqf));
            for prec in &spec.precisions {
                let entry = format_ident!("{}_{prec}", fbase[k]);
                entries.push(quote! {
                    #gate
                    #[no_mangle]
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe extern "ptx-kernel" fn #entry(
                        n: usize, tab: *const #prec, local: *const u32, u: *const #prec,
                        x: *const #prec, a: *const #prec, out: *mut #prec, t: #prec,
                    ) {
                        ::fem_kernels::pointwise::facet::on_gpu::<#prec>(n, #tab_len, #fsizes, tab, local, u, x, a, out, |tab, l, u, x, a, o| {
                            ::fem_kernels::pointwise::facet::#func::<#prec, #ty, #fgenerics>(tab, l, u, x, a, t, o)
                        })
                    }
                });
            }
        }
        let sizes = quote!([#nl, #nv * #d, #aux, #nl]);
        let n1 = p + 1;
        let sf_generics = quote!(#nc, #na, #nb, #nv, #nq, #nodal, #n1);
        let residual_cell = if sf {
            quote!(::fem_kernels::pointwise::sum_factorised::cell_residual::<T, Self, #sf_generics>)
        } else {
            quote!(::fem_kernels::pointwise::cell_residual::<T, Self, #generics>)
        };
        residual_arms.push(quote! {
            (#shape, #p, #nq) => ::fem_kernels::pointwise::for_cells(first, #sizes, u, x, a, out, |u, x, a, o| {
                #residual_cell(tab, u, x, a, t, o)
            }),
        });
        let jsizes = quote!([#nl, #nv * #d, #aux, #nl * #nl]);
        if partial {
            let psizes = quote!([#nl, #nv * #d, #aux, ::fem_kernels::pointwise::partial::point_len(#d, #nc, <Self as #core::physics::Physics<T, #d, #nc, #na>>::TERMS) * #nq]);
            let points_cell = if sf {
                quote!(::fem_kernels::pointwise::sum_factorised::cell_points::<T, Self, #sf_generics>)
            } else {
                quote!(::fem_kernels::pointwise::partial::cell_points::<T, Self, #generics>)
            };
            points_arms.push(quote! {
                (#shape, #p, #nq) => ::fem_kernels::pointwise::for_cells(first, #psizes, u, x, a, out, |u, x, a, o| {
                    #points_cell(tab, u, x, a, t, o)
                }),
            });
        }
        if mf {
            action_arms.push(quote! {
                (#shape, #p, #nq) => {
                    let mut k = 0;
                    ::fem_kernels::pointwise::for_cells(first, #sizes, u, x, a, out, |u, x, a, o| {
                        ::fem_kernels::pointwise::matrix_free::cell_action::<T, Self, #sf_generics>(tab, u, x, a, t, &dir[k * #nl..(k + 1) * #nl], o);
                        k += 1;
                    })
                }
            });
        }
        jacobian_arms.push(quote! {
            (#shape, #p, #nq) => ::fem_kernels::pointwise::for_cells(first, #jsizes, u, x, a, out, |u, x, a, o| {
                ::fem_kernels::pointwise::cell_jacobian_cpu::<T, Self, #generics>(tab, u, x, a, t, o)
            }),
        });
        let gate = match &spec.gpu_cfg {
            Some(c) => quote!(#[cfg(all(target_arch = "nvptx64", #c))]),
            None => quote!(#[cfg(target_arch = "nvptx64")]),
        };
        for prec in &spec.precisions {
            let (rcell, jcell) = (format!("{base}_cell"), format!("{jbase}_cell"));
            let (rsf, psf) = (format!("{base}_sf"), format!("{pbase}_sf"));
            let mut kinds = vec![("residual", &base, false)];
            kinds.push(if sf { ("residual", &rsf, true) } else { ("residual_cells", &rcell, false) });
            if has_jacobian {
                kinds.push(("jacobian", &jbase, false));
                kinds.push(("jacobian_cells", &jcell, false));
            }
            if partial {
                kinds.push(if sf { ("points", &psf, true) } else { ("points", &pbase, false) });
            }
            if mf {
                let entry = format_ident!("{pbase}_mf_{prec}");
                entries.push(quote! {
                    #gate
                    #[no_mangle]
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe extern "ptx-kernel" fn #entry(
                        n_cells: usize, tab: *const #prec, map: *const u32, u: *const #prec,
                        x: *const #prec, a: *const #prec, xin: *const #prec, y: *mut #prec, t: #prec,
                    ) {
                        ::fem_kernels::pointwise::matrix_free::action::<#prec, #ty, #sf_generics>(n_cells, tab, map, u, x, a, xin, y, t)
                    }
                });
            }
            for (kind, b, tensor) in kinds {
                let entry = format_ident!("{b}_{prec}");
                let func = format_ident!("{kind}");
                let call = if tensor {
                    quote!(::fem_kernels::pointwise::sum_factorised::#func::<#prec, #ty, #sf_generics>)
                } else {
                    quote!(::fem_kernels::pointwise::gpu::#func::<#prec, #ty, #generics>)
                };
                entries.push(quote! {
                    #gate
                    #[no_mangle]
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe extern "ptx-kernel" fn #entry(
                        n_cells: usize, batches: usize, tab: *const #prec, u: *const #prec,
                        x: *const #prec, a: *const #prec, out: *mut #prec, t: #prec,
                    ) {
                        #call(n_cells, batches, tab, u, x, a, out, t)
                    }
                });
            }
        }
    }
    // a cell dispatch over the variants' arms; without arms, a stub that says so
    let cell_body = |arms: &[TokenStream]| {
        if arms.is_empty() {
            quote!({ let _ = (v, tab, first, u, x, a, t, out); false })
        } else {
            quote! {
                match (v.shape, v.degree, v.nq) {
                    #(#arms)*
                    _ => return false,
                }
                true
            }
        }
    };
    let jacobian_body = cell_body(if has_jacobian { &jacobian_arms } else { &[] });
    let points_body = cell_body(&points_arms);
    let action_body = if action_arms.is_empty() {
        quote!({ let _ = (v, tab, first, u, x, a, t, dir, out); false })
    } else {
        quote! {
            match (v.shape, v.degree, v.nq) {
                #(#action_arms)*
                _ => return false,
            }
            true
        }
    };
    let facet_body = |k: usize, on: bool| {
        let arms = &facet_arms[k];
        if on {
            quote! {
                match (v.shape, v.degree, v.nq) {
                    #(#arms)*
                    _ => return false,
                }
                true
            }
        } else {
            quote!({ let _ = (v, tab, first, local, u, x, a, t, out); false })
        }
    };
    let (facet_residual_body, facet_jacobian_body, facet_points_body) = (facet_body(0, bf0), facet_body(1, facet_jacobian), facet_body(2, facet_jacobian));
    let kernel_impls = ["f32", "f64"].map(|p| {
        let t = format_ident!("{p}");
        quote! {
            #[cfg(not(target_arch = "nvptx64"))]
            impl ::fem_kernels::pointwise::Kernels<#t> for #ty {
                const NAME: &'static str = #name;
                const VARIANTS: &'static [::fem_kernels::pointwise::Variant] = Self::__VARIANTS;

                #[allow(clippy::too_many_arguments)]
                fn residual_cells(v: &::fem_kernels::pointwise::Variant, tab: &[#t], first: usize, u: &[#t], x: &[#t], a: &[#t], t: #t, out: &mut [#t]) -> bool {
                    Self::__residual_cells(v, tab, first, u, x, a, t, out)
                }

                #[allow(clippy::too_many_arguments)]
                fn jacobian_cells(v: &::fem_kernels::pointwise::Variant, tab: &[#t], first: usize, u: &[#t], x: &[#t], a: &[#t], t: #t, out: &mut [#t]) -> bool {
                    Self::__jacobian_cells(v, tab, first, u, x, a, t, out)
                }

                #[allow(clippy::too_many_arguments)]
                fn facet_residuals(v: &::fem_kernels::pointwise::Variant, tab: &[#t], first: usize, local: &[u32], u: &[#t], x: &[#t], a: &[#t], t: #t, out: &mut [#t]) -> bool {
                    Self::__facet_residuals(v, tab, first, local, u, x, a, t, out)
                }

                #[allow(clippy::too_many_arguments)]
                fn facet_jacobians(v: &::fem_kernels::pointwise::Variant, tab: &[#t], first: usize, local: &[u32], u: &[#t], x: &[#t], a: &[#t], t: #t, out: &mut [#t]) -> bool {
                    Self::__facet_jacobians(v, tab, first, local, u, x, a, t, out)
                }

                #[allow(clippy::too_many_arguments)]
                fn facet_points(v: &::fem_kernels::pointwise::Variant, tab: &[#t], first: usize, local: &[u32], u: &[#t], x: &[#t], a: &[#t], t: #t, out: &mut [#t]) -> bool {
                    Self::__facet_points(v, tab, first, local, u, x, a, t, out)
                }

                #[allow(clippy::too_many_arguments)]
                fn points_cells(v: &::fem_kernels::pointwise::Variant, tab: &[#t], first: usize, u: &[#t], x: &[#t], a: &[#t], t: #t, out: &mut [#t]) -> bool {
                    Self::__points_cells(v, tab, first, u, x, a, t, out)
                }

                #[allow(clippy::too_many_arguments)]
                fn action_cells(v: &::fem_kernels::pointwise::Variant, tab: &[#t], first: usize, u: &[#t], x: &[#t], a: &[#t], t: #t, dir: &[#t], out: &mut [#t]) -> bool {
                    Self::__action_cells(v, tab, first, u, x, a, t, dir, out)
                }
            }
        }
    });
    let doc = format!("The `{name}` physics: pointwise functions of this module, kernels generated by `#[fem_kernel]`.");
    quote! {
        #[doc = #doc]
        #[derive(Clone, Copy, Debug, Default)]
        pub struct #ty;

        #(#impls)*

        // The CPU code is generic over the scalar but instantiated here,
        // once per precision, by non-generic impls: every crate that runs
        // the physics links this code instead of compiling its own copy.
        #[doc(hidden)]
        #[cfg(not(target_arch = "nvptx64"))]
        impl #ty {
            const __VARIANTS: &'static [::fem_kernels::pointwise::Variant] = &[#(#table),*];

            #[allow(clippy::too_many_arguments)]
            fn __residual_cells<T: #core::Real>(v: &::fem_kernels::pointwise::Variant, tab: &[T], first: usize, u: &[T], x: &[T], a: &[T], t: T, out: &mut [T]) -> bool {
                match (v.shape, v.degree, v.nq) {
                    #(#residual_arms)*
                    _ => return false,
                }
                true
            }

            #[allow(clippy::too_many_arguments)]
            fn __jacobian_cells<T: #core::Real>(v: &::fem_kernels::pointwise::Variant, tab: &[T], first: usize, u: &[T], x: &[T], a: &[T], t: T, out: &mut [T]) -> bool {
                #jacobian_body
            }

            #[allow(clippy::too_many_arguments)]
            fn __points_cells<T: #core::Real>(v: &::fem_kernels::pointwise::Variant, tab: &[T], first: usize, u: &[T], x: &[T], a: &[T], t: T, out: &mut [T]) -> bool {
                #points_body
            }

            #[allow(clippy::too_many_arguments)]
            fn __action_cells<T: #core::Real>(v: &::fem_kernels::pointwise::Variant, tab: &[T], first: usize, u: &[T], x: &[T], a: &[T], t: T, dir: &[T], out: &mut [T]) -> bool {
                #action_body
            }

            #[allow(clippy::too_many_arguments)]
            fn __facet_residuals<T: #core::Real>(v: &::fem_kernels::pointwise::Variant, tab: &[T], first: usize, local: &[u32], u: &[T], x: &[T], a: &[T], t: T, out: &mut [T]) -> bool {
                #facet_residual_body
            }

            #[allow(clippy::too_many_arguments)]
            fn __facet_jacobians<T: #core::Real>(v: &::fem_kernels::pointwise::Variant, tab: &[T], first: usize, local: &[u32], u: &[T], x: &[T], a: &[T], t: T, out: &mut [T]) -> bool {
                #facet_jacobian_body
            }

            #[allow(clippy::too_many_arguments)]
            fn __facet_points<T: #core::Real>(v: &::fem_kernels::pointwise::Variant, tab: &[T], first: usize, local: &[u32], u: &[T], x: &[T], a: &[T], t: T, out: &mut [T]) -> bool {
                #facet_points_body
            }
        }

        #(#kernel_impls)*

        #(#entries)*
    }
}

