//! `#[derive(JsonSchema)]`: schemars' derive plus `#[crd(...)]` markers.
//!
//! The input is copied into a private shadow type carrying only the
//! attributes schemars reads (`serde`, `schemars`, `doc`, `validate`,
//! `garde`) and, on each marked field, a `#[schemars(transform = ...)]` that
//! applies the markers. The real type's `JsonSchema` impl delegates to the
//! shadow and then applies the type-level markers.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Type};

use crate::crd_opts::CRD_OPTIONS;
use crate::markers::{Markers, FIELD_MARKERS, TYPE_MARKERS};
use crate::util;

const KEPT_ATTRS: [&str; 5] = ["serde", "schemars", "doc", "validate", "garde"];

fn kept(attrs: &[Attribute]) -> Vec<&Attribute> {
    attrs
        .iter()
        .filter(|a| KEPT_ATTRS.iter().any(|k| a.path().is_ident(k)))
        .collect()
}

/// Does `#[serde(...)]` contain a bare word (e.g. `flatten`, `skip`, `default`)?
fn serde_word(attrs: &[Attribute], word: &str) -> Option<Span> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(word) && !meta.input.peek(syn::Token![=]) {
                found = Some(meta.path.span());
            }
            util::skip_value(&meta)
        });
    }
    found
}

fn serde_has_key(attrs: &[Attribute], key: &str) -> bool {
    let mut found = false;
    for attr in attrs
        .iter()
        .filter(|a| a.path().is_ident("serde") || a.path().is_ident("schemars"))
    {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(key) {
                found = true;
            }
            util::skip_value(&meta)
        });
    }
    found
}

/// Type-level markers and the crate path from the container's `#[crd(...)]`.
/// CRD options are left to `#[derive(CustomResource)]`, which also reports
/// unknown options when the type is a CRD spec (it has group/version/kind).
fn container(input: &DeriveInput) -> syn::Result<(Markers, TokenStream)> {
    // The crate path first: marker expressions need it.
    let krate = util::crate_option(&input.attrs)?;
    let mut markers = Markers::default();
    let is_spec = crate::crd_opts::has_crd_identity(&input.attrs);
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("crd")) {
        attr.parse_nested_meta(|meta| {
            let name = util::key(&meta);
            if TYPE_MARKERS.contains(&name.as_str()) {
                markers.parse(&meta, &name, false, &krate)
            } else if name == "crate" || CRD_OPTIONS.contains(&name.as_str()) {
                if !is_spec && name != "crate" {
                    return Err(meta.error(format!(
                        "`{name}` is a custom resource option: it needs #[derive(CustomResource)] and group/version/kind"
                    )));
                }
                util::skip_value(&meta)
            } else if is_spec {
                // #[derive(CustomResource)] reports it, with a suggestion.
                util::skip_value(&meta)
            } else if FIELD_MARKERS.contains(&name.as_str()) {
                Err(meta.error(format!("`{name}` is a field marker; put it on a field")))
            } else {
                Err(util::unknown(&meta, "type marker", TYPE_MARKERS))
            }
        })?;
    }
    markers.finish()?;
    Ok((markers, krate))
}

struct FieldInfo {
    markers: Markers,
    ty: Type,
}

fn field_markers(
    field: &syn::Field,
    krate: &TokenStream,
    in_variant: bool,
) -> syn::Result<Option<FieldInfo>> {
    let mut markers = Markers::default();
    let mut seen_attr = false;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("crd")) {
        seen_attr = true;
        attr.parse_nested_meta(|meta| {
            let name = util::key(&meta);
            if FIELD_MARKERS.contains(&name.as_str()) {
                markers.parse(&meta, &name, true, krate)
            } else if TYPE_MARKERS.contains(&name.as_str()) {
                Err(meta.error(format!(
                    "`{name}` is a type marker; put it on the struct or enum"
                )))
            } else {
                Err(util::unknown(&meta, "field marker", FIELD_MARKERS))
            }
        })?;
    }
    if !seen_attr {
        return Ok(None);
    }
    markers.finish()?;
    if let Some(span) = serde_word(&field.attrs, "flatten") {
        return Err(syn::Error::new(
            markers.first_span.unwrap_or(span),
            "markers cannot apply to a #[serde(flatten)] field: put them on the fields of the flattened type",
        ));
    }
    if serde_word(&field.attrs, "skip").is_some() {
        return Err(syn::Error::new(
            markers.first_span.unwrap_or_else(|| field.span()),
            "markers on a #[serde(skip)] field have no effect: the field is not in the schema",
        ));
    }
    if in_variant {
        if let Some(span) = markers.required_or_optional {
            return Err(syn::Error::new(
                span,
                "`required`/`optional` are not supported on enum variant fields",
            ));
        }
    }
    if markers.is_empty() {
        return Ok(None);
    }
    Ok(Some(FieldInfo {
        markers,
        ty: field.ty.clone(),
    }))
}

/// `Option<T>` (by name: `Option`, `std::option::Option`,
/// `core::option::Option`), and the `T`.
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else {
        return None;
    };
    if path.qself.is_some() {
        return None;
    }
    let segments: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let named = matches!(
        segments
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        ["Option"] | ["std" | "core", "option", "Option"]
    );
    if !named {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &path.path.segments.last()?.arguments else {
        return None;
    };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [syn::GenericArgument::Type(inner)] => Some(inner),
        _ => None,
    }
}

/// Whether the `null` schemars adds to a named `Option<T>` field is to be
/// taken out again: `Option` says the field may be absent, which the
/// field's absence from `required` already says (controller-gen writes no
/// `nullable` for an optional pointer either). Kept where `null` means
/// something of its own: `#[crd(nullable)]`, `#[crd(required)]` (the key
/// must be there and `None` is written as `null`), `Option<Option<T>>`,
/// and fields whose schema comes from another type (`with`,
/// `schema_with`) or that are flattened or skipped.
fn not_nullable_option(field: &syn::Field, markers: Option<&Markers>) -> bool {
    let Some(inner) = field.ident.as_ref().and(option_inner(&field.ty)) else {
        return false;
    };
    if option_inner(inner).is_some() {
        return false;
    }
    if markers.is_some_and(|m| m.nullable || m.required) {
        return false;
    }
    let other_schema = ["with", "schema_with", "serialize_with"]
        .iter()
        .any(|key| serde_has_key(&field.attrs, key));
    let skipped = ["flatten", "skip"]
        .iter()
        .any(|word| serde_word(&field.attrs, word).is_some());
    !other_schema && !skipped
}

/// Does `ty` mention `ident` (a directly recursive type)?
fn mentions(ty: &Type, ident: &syn::Ident) -> bool {
    fn walk(tokens: TokenStream, ident: &syn::Ident) -> bool {
        tokens.into_iter().any(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) => i == *ident,
            proc_macro2::TokenTree::Group(g) => walk(g.stream(), ident),
            _ => false,
        })
    }
    walk(ty.to_token_stream(), ident)
}

fn check_recursion(fields: &Fields, ident: &syn::Ident, schemaless: &[bool]) -> syn::Result<()> {
    for (i, field) in fields.iter().enumerate() {
        let bypass = schemaless.get(i).copied().unwrap_or(false)
            || serde_word(&field.attrs, "skip").is_some()
            || serde_has_key(&field.attrs, "with")
            || serde_has_key(&field.attrs, "schema_with");
        if !bypass && mentions(&field.ty, ident) {
            return Err(syn::Error::new_spanned(
                &field.ty,
                format!(
                    "`{ident}` contains itself: a recursive type cannot become a structural CRD schema; \
                     mark this field #[crd(schemaless)] to accept any value here"
                ),
            ));
        }
    }
    Ok(())
}

fn is_schemaless(field: &syn::Field) -> bool {
    let mut found = false;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("crd")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("schemaless") || meta.path.is_ident("preserve_unknown_fields") {
                found = true;
            }
            util::skip_value(&meta)
        });
    }
    found
}

pub fn derive(input: DeriveInput) -> syn::Result<TokenStream> {
    let (type_markers, krate) = container(&input)?;
    let ident = &input.ident;
    let shadow = format_ident!("__KubeforgeSchema{}", ident);
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();

    let mut transforms = Vec::new();
    let mut checks = Vec::new();
    let mut field_index = 0usize;

    let mut shadow_field = |field: &syn::Field, in_variant: bool| -> syn::Result<TokenStream> {
        let info = field_markers(field, &krate, in_variant)?;
        let attrs = kept(&field.attrs);
        let fident = &field.ident;
        let colon = field.colon_token;
        let ty = &field.ty;
        let strip_null = not_nullable_option(field, info.as_ref().map(|i| &i.markers));
        let mut extra = TokenStream::new();
        if info.is_some() || strip_null {
            let fname = format_ident!("__kubeforge_field_{}", field_index);
            field_index += 1;
            // Runs after schemars has set the field's schema, description
            // and serde default, so both steps see the final property.
            let strip =
                strip_null.then(|| quote!(#krate::crd::__private::strip_option_null(schema);));
            let apply = info.as_ref().map(|info| {
                let exprs = &info.markers.exprs;
                quote!(#krate::crd::__private::apply_field_markers(schema, &[#(#exprs),*]);)
            });
            transforms.push(quote! {
                #[allow(non_snake_case)]
                fn #fname(schema: &mut #krate::schemars::Schema) {
                    #strip
                    #apply
                }
            });
            extra = quote!(#[schemars(transform = #fname)]);
        }
        if let Some(info) = info {
            checks.push(info.markers.check_tokens(&info.ty, &krate));
        }
        Ok(quote!(#(#attrs)* #extra #fident #colon #ty))
    };

    let body = match &input.data {
        Data::Struct(data) => {
            let schemaless: Vec<bool> = data.fields.iter().map(is_schemaless).collect();
            check_recursion(&data.fields, ident, &schemaless)?;
            let fields = data
                .fields
                .iter()
                .map(|f| shadow_field(f, false))
                .collect::<syn::Result<Vec<_>>>()?;
            match &data.fields {
                Fields::Named(_) => {
                    quote!(struct #shadow #impl_generics #where_clause { #(#fields),* })
                }
                Fields::Unnamed(_) => {
                    quote!(struct #shadow #impl_generics (#(#fields),*) #where_clause;)
                }
                Fields::Unit => quote!(struct #shadow #impl_generics #where_clause;),
            }
        }
        Data::Enum(data) => {
            check_mixed_enum(&input, data)?;
            let mut variants = Vec::new();
            for v in &data.variants {
                let schemaless: Vec<bool> = v.fields.iter().map(is_schemaless).collect();
                check_recursion(&v.fields, ident, &schemaless)?;
                let attrs = kept(&v.attrs);
                if let Some(attr) = v.attrs.iter().find(|a| a.path().is_ident("crd")) {
                    return Err(syn::Error::new_spanned(
                        attr,
                        "markers go on variant fields or on the enum, not on variants",
                    ));
                }
                let vident = &v.ident;
                let fields = v
                    .fields
                    .iter()
                    .map(|f| shadow_field(f, true))
                    .collect::<syn::Result<Vec<_>>>()?;
                let disc = v.discriminant.as_ref().map(|(eq, e)| quote!(#eq #e));
                variants.push(match &v.fields {
                    Fields::Named(_) => quote!(#(#attrs)* #vident { #(#fields),* }),
                    Fields::Unnamed(_) => quote!(#(#attrs)* #vident (#(#fields),*)),
                    Fields::Unit => quote!(#(#attrs)* #vident #disc),
                });
            }
            quote!(enum #shadow #impl_generics #where_clause { #(#variants),* })
        }
        Data::Union(u) => {
            return Err(syn::Error::new_spanned(
                u.union_token,
                "JsonSchema cannot be derived for a union",
            ))
        }
    };

    let container_attrs = kept(&input.attrs);
    let renamed = serde_has_key(&input.attrs, "rename");
    let rename = (!renamed && input.generics.params.is_empty()).then(|| {
        let name = ident.to_string();
        quote!(#[schemars(rename = #name)])
    });
    let krate_str = format!("{}::schemars", krate.to_string().replace(' ', ""));

    // `#[serde(default)]` on the container: schemars asks the shadow for its
    // default, which is the real type's.
    let default_impl = serde_word(&input.attrs, "default").map(|_| {
        let Data::Struct(data) = &input.data else {
            return quote!();
        };
        let (pattern, build) = match &data.fields {
            Fields::Named(named) => {
                let names: Vec<_> = named.named.iter().map(|f| &f.ident).collect();
                (
                    quote!(#ident { #(#names),* }),
                    quote!(#shadow { #(#names),* }),
                )
            }
            Fields::Unnamed(unnamed) => {
                let names: Vec<_> = (0..unnamed.unnamed.len())
                    .map(|i| format_ident!("f{}", i))
                    .collect();
                (
                    quote!(#ident ( #(#names),* )),
                    quote!(#shadow ( #(#names),* )),
                )
            }
            Fields::Unit => (quote!(#ident), quote!(#shadow)),
        };
        quote! {
            impl #impl_generics ::core::default::Default for #shadow #ty_generics #where_clause {
                fn default() -> Self {
                    let #pattern = <#ident #ty_generics as ::core::default::Default>::default();
                    #build
                }
            }
        }
    });

    let mut bounded = input.generics.clone();
    for param in bounded.type_params_mut() {
        param
            .bounds
            .push(syn::parse_quote!(#krate::schemars::JsonSchema));
    }
    let (bounded_impl, _, _) = bounded.split_for_impl();
    let type_exprs = &type_markers.exprs;
    let (check_impl, _, check_where) = input.generics.split_for_impl();
    let check_fn = (!checks.is_empty()).then(|| {
        quote! {
            #[allow(dead_code, non_snake_case, clippy::extra_unused_type_parameters)]
            fn __kubeforge_marker_checks #check_impl () #check_where { #(#checks)* }
        }
    });

    Ok(quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, non_snake_case, unused_qualifications, clippy::all)]
        const _: () = {
            #[derive(#krate::schemars::JsonSchema)]
            #[schemars(crate = #krate_str)]
            #rename
            #(#container_attrs)*
            #[allow(dead_code, non_camel_case_types, missing_docs, clippy::all)]
            #body

            #default_impl
            #(#transforms)*
            #check_fn

            #[automatically_derived]
            impl #bounded_impl #krate::schemars::JsonSchema for #ident #ty_generics #where_clause {
                fn schema_name() -> ::std::borrow::Cow<'static, str> {
                    <#shadow #ty_generics as #krate::schemars::JsonSchema>::schema_name()
                }
                fn schema_id() -> ::std::borrow::Cow<'static, str> {
                    <#shadow #ty_generics as #krate::schemars::JsonSchema>::schema_id()
                }
                fn inline_schema() -> bool {
                    <#shadow #ty_generics as #krate::schemars::JsonSchema>::inline_schema()
                }
                fn json_schema(generator: &mut #krate::schemars::SchemaGenerator) -> #krate::schemars::Schema {
                    let mut schema = <#shadow #ty_generics as #krate::schemars::JsonSchema>::json_schema(generator);
                    #krate::crd::__private::apply_type_markers(&mut schema, &[#(#type_exprs),*]);
                    schema
                }
            }

            #[automatically_derived]
            impl #impl_generics #krate::crd::__private::KubeforgeSchema for #ident #ty_generics #where_clause {}
        };
    })
}

/// An externally tagged enum mixing unit and data variants serializes as a
/// string or an object: no structural schema can say that.
fn check_mixed_enum(input: &DeriveInput, data: &syn::DataEnum) -> syn::Result<()> {
    if serde_has_key(&input.attrs, "tag") || serde_word(&input.attrs, "untagged").is_some() {
        return Ok(());
    }
    let live: Vec<&syn::Variant> = data
        .variants
        .iter()
        .filter(|v| {
            serde_word(&v.attrs, "skip").is_none() && serde_word(&v.attrs, "untagged").is_none()
        })
        .collect();
    let units = live
        .iter()
        .filter(|v| matches!(v.fields, Fields::Unit))
        .count();
    if units > 0 && units < live.len() {
        let data_variant = live
            .iter()
            .find(|v| !matches!(v.fields, Fields::Unit))
            .map(|v| v.ident.span())
            .unwrap_or_else(|| input.ident.span());
        return Err(syn::Error::new(
            data_variant,
            format!(
                "`{}` mixes unit variants (serialized as strings) with data variants (serialized as objects): \
                 a structural CRD schema gives a field one type; make every variant carry data, \
                 or use #[serde(tag = \"...\")]",
                input.ident
            ),
        ));
    }
    Ok(())
}

/// A do-nothing impl emitted next to a compile error (never run: the crate
/// does not build), so one mistake gives one error.
pub fn placeholder(input: &DeriveInput) -> TokenStream {
    let krate = quote!(::kubeforge);
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let name = ident.to_string();
    quote! {
        impl #impl_generics #krate::schemars::JsonSchema for #ident #ty_generics #where_clause {
            fn schema_name() -> ::std::borrow::Cow<'static, str> { #name.into() }
            fn json_schema(_: &mut #krate::schemars::SchemaGenerator) -> #krate::schemars::Schema {
                #krate::schemars::Schema::default()
            }
        }
        impl #impl_generics #krate::crd::__private::KubeforgeSchema for #ident #ty_generics #where_clause {}
    }
}
