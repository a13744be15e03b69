//! Schema markers in `#[crd(...)]`: on fields (the kubebuilder field
//! markers) and on types (CEL rules, property counts, one-of groups).
//! Each becomes a `kubeforge::crd::markers::Marker` expression plus, where
//! the marker only makes sense for some Rust types, a compile-time check
//! spanned at the marker.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::LitStr;

use crate::util::{self, Seen};

pub const FIELD_MARKERS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusive_minimum",
    "exclusive_maximum",
    "multiple_of",
    "min_length",
    "max_length",
    "pattern",
    "min_items",
    "max_items",
    "min_properties",
    "max_properties",
    "format",
    "enum_values",
    "default",
    "example",
    "title",
    "nullable",
    "required",
    "optional",
    "preserve_unknown_fields",
    "embedded_resource",
    "int_or_string",
    "schemaless",
    "list_type",
    "list_map_keys",
    "map_type",
    "immutable",
    "validation",
];

pub const TYPE_MARKERS: &[&str] = &[
    "validation",
    "min_properties",
    "max_properties",
    "preserve_unknown_fields",
    "map_type",
    "exactly_one_of",
    "at_most_one_of",
    "at_least_one_of",
    "title",
];

/// Which family of Rust types a marker needs.
#[derive(Clone, Copy)]
pub enum Needs {
    Numeric,
    String,
    Array,
    Object,
}

/// Markers parsed from one field's or type's attributes.
#[derive(Default)]
pub struct Markers {
    /// `Marker` expressions.
    pub exprs: Vec<TokenStream>,
    /// Type checks: (family, span of the marker).
    pub checks: Vec<(Needs, Span)>,
    pub seen: Seen,
    bounds: Bounds,
    list_type: Option<(String, Span)>,
    list_map_keys: Option<Span>,
    pub required_or_optional: Option<Span>,
    pub first_span: Option<Span>,
    /// `nullable` is set (and not `= false`).
    pub nullable: bool,
    /// `required` is set (and not `= false`).
    pub required: bool,
}

#[derive(Default)]
struct Bounds {
    min: Option<(f64, Span)>,
    max: Option<(f64, Span)>,
    min_len: Option<(u64, Span)>,
    max_len: Option<(u64, Span)>,
    min_items: Option<(u64, Span)>,
    max_items: Option<(u64, Span)>,
    min_props: Option<(u64, Span)>,
    max_props: Option<(u64, Span)>,
}

impl Markers {
    pub fn is_empty(&self) -> bool {
        self.exprs.is_empty()
    }

    /// Parse one marker; `field` tells field markers from type markers.
    pub fn parse(
        &mut self,
        meta: &ParseNestedMeta,
        name: &str,
        field: bool,
        krate: &TokenStream,
    ) -> syn::Result<()> {
        let m = quote!(#krate::crd::markers::Marker);
        let span = meta.path.span();
        self.first_span.get_or_insert(span);
        if name != "validation" {
            self.seen.once(meta, name)?;
        }
        let expr = match name {
            "minimum" | "maximum" | "exclusive_minimum" | "exclusive_maximum" | "multiple_of" => {
                let (v, vspan) = util::number(meta, name)?;
                self.checks.push((Needs::Numeric, span));
                match name {
                    "minimum" | "exclusive_minimum" => {
                        let other = if name == "minimum" {
                            "exclusive_minimum"
                        } else {
                            "minimum"
                        };
                        if self.seen.has(other) {
                            return Err(
                                meta.error(format!("`{name}` and `{other}` cannot both be set"))
                            );
                        }
                        self.bounds.min = Some((v, vspan));
                    }
                    "maximum" | "exclusive_maximum" => {
                        let other = if name == "maximum" {
                            "exclusive_maximum"
                        } else {
                            "maximum"
                        };
                        if self.seen.has(other) {
                            return Err(
                                meta.error(format!("`{name}` and `{other}` cannot both be set"))
                            );
                        }
                        self.bounds.max = Some((v, vspan));
                    }
                    _ => {
                        if v <= 0.0 {
                            return Err(syn::Error::new(
                                vspan,
                                "`multiple_of` must be greater than 0",
                            ));
                        }
                    }
                }
                let variant = match name {
                    "minimum" => quote!(Minimum),
                    "maximum" => quote!(Maximum),
                    "exclusive_minimum" => quote!(ExclusiveMinimum),
                    "exclusive_maximum" => quote!(ExclusiveMaximum),
                    _ => quote!(MultipleOf),
                };
                quote!(#m::#variant(#v))
            }
            "min_length" | "max_length" => {
                let v = util::count(meta, name)?;
                self.checks.push((Needs::String, span));
                if name == "min_length" {
                    self.bounds.min_len = Some((v, span));
                    quote!(#m::MinLength(#v))
                } else {
                    self.bounds.max_len = Some((v, span));
                    quote!(#m::MaxLength(#v))
                }
            }
            "min_items" | "max_items" => {
                let v = util::count(meta, name)?;
                self.checks.push((Needs::Array, span));
                if name == "min_items" {
                    self.bounds.min_items = Some((v, span));
                    quote!(#m::MinItems(#v))
                } else {
                    self.bounds.max_items = Some((v, span));
                    quote!(#m::MaxItems(#v))
                }
            }
            "min_properties" | "max_properties" => {
                let v = util::count(meta, name)?;
                if field {
                    self.checks.push((Needs::Object, span));
                }
                if name == "min_properties" {
                    self.bounds.min_props = Some((v, span));
                    quote!(#m::MinProperties(#v))
                } else {
                    self.bounds.max_props = Some((v, span));
                    quote!(#m::MaxProperties(#v))
                }
            }
            "pattern" => {
                let lit = util::string(meta, name)?;
                if let Err(e) = regex_syntax::Parser::new().parse(&lit.value()) {
                    return Err(syn::Error::new_spanned(
                        &lit,
                        format!("`pattern` is not a valid regular expression: {e}"),
                    ));
                }
                self.checks.push((Needs::String, span));
                quote!(#m::Pattern(#lit))
            }
            "format" => {
                let lit = util::string(meta, name)?;
                quote!(#m::Format(#lit))
            }
            "title" => {
                let lit = util::string(meta, name)?;
                quote!(#m::Title(#lit))
            }
            "enum_values" => {
                let e = util::expr(meta)?;
                let syn::Expr::Array(array) = &e else {
                    return Err(syn::Error::new_spanned(
                        e,
                        "`enum_values` expects a list of JSON values, e.g. enum_values = [\"a\", \"b\"]",
                    ));
                };
                if array.elems.is_empty() {
                    return Err(syn::Error::new_spanned(
                        array,
                        "`enum_values` needs at least one value",
                    ));
                }
                let values = array
                    .elems
                    .iter()
                    .map(|el| util::json_expr(el, name, krate))
                    .collect::<syn::Result<Vec<_>>>()?;
                quote!(#m::Enum(::std::vec![#(#values),*]))
            }
            "default" => {
                let v = util::json(meta, name, krate)?;
                quote!(#m::Default(#v))
            }
            "example" => {
                let v = util::json(meta, name, krate)?;
                quote!(#m::Example(#v))
            }
            "nullable"
            | "required"
            | "optional"
            | "preserve_unknown_fields"
            | "embedded_resource"
            | "int_or_string"
            | "schemaless"
            | "immutable" => {
                if !util::flag(meta, name)? {
                    return Ok(());
                }
                self.nullable |= name == "nullable";
                self.required |= name == "required";
                if name == "required" || name == "optional" {
                    let other = if name == "required" {
                        "optional"
                    } else {
                        "required"
                    };
                    if self.seen.has(other) {
                        return Err(meta.error("`required` and `optional` cannot both be set"));
                    }
                    self.required_or_optional = Some(span);
                }
                if (name == "int_or_string" && self.seen.has("schemaless"))
                    || (name == "schemaless" && self.seen.has("int_or_string"))
                {
                    return Err(meta.error("`int_or_string` and `schemaless` cannot both be set"));
                }
                let variant = match name {
                    "nullable" => quote!(Nullable),
                    "required" => quote!(Required),
                    "optional" => quote!(Optional),
                    "preserve_unknown_fields" => quote!(PreserveUnknownFields),
                    "embedded_resource" => quote!(EmbeddedResource),
                    "int_or_string" => quote!(IntOrString),
                    "schemaless" => quote!(Schemaless),
                    _ => quote!(Immutable),
                };
                quote!(#m::#variant)
            }
            "list_type" => {
                let lit = util::string(meta, name)?;
                let variant = match lit.value().as_str() {
                    "atomic" => quote!(Atomic),
                    "set" => quote!(Set),
                    "map" => quote!(Map),
                    other => {
                        return Err(syn::Error::new_spanned(
                            &lit,
                            format!(
                                "`list_type` must be \"atomic\", \"set\" or \"map\", not {other:?}"
                            ),
                        ))
                    }
                };
                self.checks.push((Needs::Array, span));
                self.list_type = Some((lit.value(), lit.span()));
                quote!(#m::ListType(#krate::crd::markers::ListType::#variant))
            }
            "list_map_keys" => {
                let keys = util::strings(meta, name)?;
                if keys.is_empty() {
                    return Err(meta.error("`list_map_keys` needs at least one key"));
                }
                self.checks.push((Needs::Array, span));
                self.list_map_keys = Some(span);
                quote!(#m::ListMapKeys(&[#(#keys),*]))
            }
            "map_type" => {
                let lit = util::string(meta, name)?;
                let variant = match lit.value().as_str() {
                    "atomic" => quote!(Atomic),
                    "granular" => quote!(Granular),
                    other => {
                        return Err(syn::Error::new_spanned(
                            &lit,
                            format!("`map_type` must be \"atomic\" or \"granular\", not {other:?}"),
                        ))
                    }
                };
                quote!(#m::MapType(#krate::crd::markers::MapType::#variant))
            }
            "validation" => {
                let rule = validation_rule(meta, krate)?;
                quote!(#m::Validation(#rule))
            }
            "exactly_one_of" | "at_most_one_of" | "at_least_one_of" => {
                let fields = util::strings(meta, name)?;
                if fields.len() < 2 {
                    return Err(meta.error(format!("`{name}` needs at least two field names")));
                }
                let variant = match name {
                    "exactly_one_of" => quote!(ExactlyOneOf),
                    "at_most_one_of" => quote!(AtMostOneOf),
                    _ => quote!(AtLeastOneOf),
                };
                quote!(#m::#variant(&[#(#fields),*]))
            }
            _ => unreachable_marker(meta)?,
        };
        self.exprs.push(expr);
        Ok(())
    }

    /// Checks across markers, once all are parsed.
    pub fn finish(&self) -> syn::Result<()> {
        let b = &self.bounds;
        if let (Some((min, _)), Some((max, span))) = (b.min, b.max) {
            if min > max {
                return Err(syn::Error::new(
                    span,
                    format!("maximum {max} is below minimum {min}"),
                ));
            }
        }
        let pairs = [
            (b.min_len, b.max_len, "max_length", "min_length"),
            (b.min_items, b.max_items, "max_items", "min_items"),
            (b.min_props, b.max_props, "max_properties", "min_properties"),
        ];
        for (min, max, max_name, min_name) in pairs {
            if let (Some((min, _)), Some((max, span))) = (min, max) {
                if min > max {
                    return Err(syn::Error::new(
                        span,
                        format!("{max_name} {max} is below {min_name} {min}"),
                    ));
                }
            }
        }
        match (&self.list_type, self.list_map_keys) {
            (Some((t, span)), None) if t == "map" => Err(syn::Error::new(
                *span,
                "list_type = \"map\" needs list_map_keys = [\"...\"] naming the keys of the items",
            )),
            (Some((t, _)), Some(span)) if t != "map" => Err(syn::Error::new(
                span,
                "list_map_keys only applies with list_type = \"map\"",
            )),
            (None, Some(span)) => Err(syn::Error::new(
                span,
                "list_map_keys needs list_type = \"map\"",
            )),
            _ => Ok(()),
        }
    }

    /// The compile-time type checks for a field of type `ty`.
    pub fn check_tokens(&self, ty: &syn::Type, krate: &TokenStream) -> TokenStream {
        let checks = self.checks.iter().map(|(needs, span)| {
            let f = match needs {
                Needs::Numeric => quote!(assert_numeric),
                Needs::String => quote!(assert_string),
                Needs::Array => quote!(assert_array),
                Needs::Object => quote!(assert_object),
            };
            let ty = util::respan(quote!(#ty), *span);
            let call = util::respan(quote!(#krate::crd::__private::#f), *span);
            quote::quote_spanned!(*span=> #call::<#ty>();)
        });
        quote!(#(#checks)*)
    }
}

fn unreachable_marker(meta: &ParseNestedMeta) -> syn::Result<TokenStream> {
    Err(meta.error("this marker is not supported here"))
}

const VALIDATION_KEYS: &[&str] = &[
    "rule",
    "message",
    "message_expression",
    "reason",
    "field_path",
    "optional_old_self",
];

const REASONS: &[&str] = &[
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
];

/// `validation = "rule"` or `validation(rule = "...", message = "...", ...)`.
pub fn validation_rule(meta: &ParseNestedMeta, krate: &TokenStream) -> syn::Result<TokenStream> {
    let mut rule: Option<LitStr> = None;
    let mut fields: Vec<TokenStream> = Vec::new();
    if meta.input.peek(syn::Token![=]) {
        let lit = util::string(meta, "validation")?;
        check_rule(&lit)?;
        rule = Some(lit);
    } else if meta.input.peek(syn::token::Paren) {
        let mut seen = Seen::default();
        meta.parse_nested_meta(|inner| {
            let name = util::key(&inner);
            if !VALIDATION_KEYS.contains(&name.as_str()) {
                return Err(util::unknown(&inner, "validation option", VALIDATION_KEYS));
            }
            seen.once(&inner, &name)?;
            match name.as_str() {
                "rule" => {
                    let lit = util::string(&inner, "rule")?;
                    check_rule(&lit)?;
                    rule = Some(lit);
                }
                "optional_old_self" => {
                    let b = util::flag(&inner, &name)?;
                    fields.push(quote!(optional_old_self: ::core::option::Option::Some(#b),));
                }
                "reason" => {
                    let lit = util::string(&inner, &name)?;
                    if !REASONS.contains(&lit.value().as_str()) {
                        let hint = util::suggest(&lit.value(), REASONS)
                            .map(|s| format!("; did you mean {s:?}?"))
                            .unwrap_or_default();
                        return Err(syn::Error::new_spanned(
                            &lit,
                            format!("`reason` must be one of {}{hint}", REASONS.join(", ")),
                        ));
                    }
                    fields.push(quote!(reason: ::core::option::Option::Some(#lit),));
                }
                other => {
                    let lit = util::string(&inner, other)?;
                    let ident = syn::Ident::new(other, Span::call_site());
                    fields.push(quote!(#ident: ::core::option::Option::Some(#lit),));
                }
            }
            Ok(())
        })?;
    } else {
        return Err(meta.error("`validation` expects a CEL rule: validation = \"self.x > 0\" or validation(rule = \"...\", message = \"...\")"));
    }
    let Some(rule) = rule else {
        return Err(meta.error("`validation(...)` needs rule = \"<CEL expression>\""));
    };
    Ok(quote! {
        #krate::crd::ValidationRule { #(#fields)* ..#krate::crd::ValidationRule::new(#rule) }
    })
}

fn check_rule(lit: &LitStr) -> syn::Result<()> {
    if lit.value().trim().is_empty() {
        return Err(syn::Error::new_spanned(lit, "a CEL rule cannot be empty"));
    }
    Ok(())
}
