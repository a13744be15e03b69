//! `#[derive(CustomResource)]`: the container options and the generated
//! root type with its trait impls.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::ext::IdentExt as _;
use syn::spanned::Spanned;
use syn::{Attribute, DeriveInput, LitStr};

use crate::markers::{self, TYPE_MARKERS};
use crate::util::{self, Seen};

/// Options of the CRD itself (type markers are handled by the JsonSchema derive).
pub const CRD_OPTIONS: &[&str] = &[
    "group",
    "version",
    "kind",
    "scope",
    "namespaced",
    "cluster",
    "plural",
    "singular",
    "shortname",
    "shortnames",
    "category",
    "categories",
    "status",
    "scale",
    "printcolumn",
    "selectable",
    "root_validation",
    "served",
    "storage",
    "deprecated",
    "label",
    "annotation",
    "root",
    "derive",
    "attr",
    "schema",
    "schema_fn",
];

/// Does the container carry group/version/kind (so it is a CRD spec)?
pub fn has_crd_identity(attrs: &[Attribute]) -> bool {
    let mut found = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("crd")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("group")
                || meta.path.is_ident("version")
                || meta.path.is_ident("kind")
            {
                found = true;
            }
            util::skip_value(&meta)
        });
    }
    found
}

struct Column {
    name: LitStr,
    type_: LitStr,
    json_path: LitStr,
    description: Option<LitStr>,
    format: Option<LitStr>,
    priority: Option<i32>,
}

struct Scale {
    spec: LitStr,
    status: LitStr,
    selector: Option<LitStr>,
    span: Span,
}

#[derive(PartialEq, Clone, Copy)]
enum SchemaMode {
    Derived,
    Manual,
    Disabled,
}

struct Opts {
    krate: TokenStream,
    group: Option<LitStr>,
    version: Option<LitStr>,
    kind: Option<LitStr>,
    cluster: Option<bool>,
    plural: Option<LitStr>,
    singular: Option<LitStr>,
    shortnames: Vec<LitStr>,
    categories: Vec<LitStr>,
    status: Option<syn::Type>,
    scale: Option<Scale>,
    columns: Vec<Column>,
    selectable: Vec<LitStr>,
    root_validations: Vec<TokenStream>,
    served: bool,
    storage: Option<bool>,
    deprecated: Option<Option<LitStr>>,
    labels: Vec<(LitStr, LitStr)>,
    annotations: Vec<(LitStr, LitStr)>,
    root: Option<syn::Ident>,
    derives: Vec<syn::Path>,
    attrs: Vec<TokenStream>,
    schema: (SchemaMode, Option<Span>),
    schema_fn: Option<syn::Path>,
    has_markers: bool,
}

fn dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part.starts_with(|c: char| c.is_ascii_alphanumeric())
                && part.ends_with(|c: char| c.is_ascii_alphanumeric())
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

fn check(lit: &LitStr, ok: bool, message: &str) -> syn::Result<()> {
    if ok {
        Ok(())
    } else {
        Err(syn::Error::new_spanned(lit, message))
    }
}

fn pair(meta: &syn::meta::ParseNestedMeta, name: &str) -> syn::Result<(LitStr, LitStr)> {
    let content;
    syn::parenthesized!(content in meta.input);
    let key: LitStr = content
        .parse()
        .map_err(|e| syn::Error::new(e.span(), format!("`{name}` expects (\"key\", \"value\")")))?;
    content.parse::<syn::Token![,]>()?;
    let value: LitStr = content.parse()?;
    let _ = content.parse::<Option<syn::Token![,]>>()?;
    Ok((key, value))
}

const COLUMN_KEYS: &[&str] = &[
    "name",
    "type",
    "json_path",
    "description",
    "format",
    "priority",
];
const COLUMN_TYPES: &[&str] = &["integer", "number", "string", "boolean", "date"];
const COLUMN_FORMATS: &[&str] = &[
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "date",
    "date-time",
    "password",
];
const SCALE_KEYS: &[&str] = &["spec", "status", "selector"];

fn one_of(lit: &LitStr, allowed: &[&str], what: &str) -> syn::Result<()> {
    let v = lit.value();
    if allowed.contains(&v.as_str()) {
        return Ok(());
    }
    let hint = util::suggest(&v, allowed)
        .map(|s| format!("; did you mean {s:?}?"))
        .unwrap_or_default();
    Err(syn::Error::new_spanned(
        lit,
        format!("{what} must be one of {}{hint}", allowed.join(", ")),
    ))
}

/// A printer column's `type` or `format`: a word as kubebuilder writes it
/// (`type = integer`, `format = date-time`) or a string (`type = "integer"`),
/// checked against `allowed`. The word form is the one to recommend: clippy's
/// `duplicated_attributes` compares `key = "literal"` pairs across an
/// attribute (rust-clippy#12537) and reads no attribute holding a word as a
/// value, so two columns of one type are not taken for a repeated attribute.
fn column_word(
    meta: &syn::meta::ParseNestedMeta,
    key: &str,
    allowed: &[&str],
    what: &str,
) -> syn::Result<LitStr> {
    let input = meta.value()?;
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        one_of(&lit, allowed, what)?;
        return Ok(lit);
    }
    if input.peek(syn::Ident::peek_any) {
        let first = input.call(syn::Ident::parse_any)?;
        let mut word = first.to_string();
        let mut tokens = quote!(#first);
        // `date-time`: a hyphenated word is three tokens.
        while input.peek(syn::Token![-]) && input.peek2(syn::Ident::peek_any) {
            let dash: syn::Token![-] = input.parse()?;
            let next = input.call(syn::Ident::parse_any)?;
            word.push('-');
            word.push_str(&next.to_string());
            tokens.extend(quote!(#dash #next));
        }
        if allowed.contains(&word.as_str()) {
            return Ok(LitStr::new(&word, first.span()));
        }
        let hint = util::suggest(&word, allowed)
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        return Err(syn::Error::new_spanned(
            tokens,
            format!("{what} must be one of {}{hint}", allowed.join(", ")),
        ));
    }
    let found: syn::Expr = input.parse()?;
    Err(syn::Error::new_spanned(
        found,
        format!(
            "`{key}` expects one of {} as a word, e.g. `{key} = {}`",
            allowed.join(", "),
            allowed.first().copied().unwrap_or_default()
        ),
    ))
}

fn parse_column(meta: &syn::meta::ParseNestedMeta) -> syn::Result<Column> {
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta
            .error("`printcolumn` expects (name = \"...\", type = integer, json_path = \"...\")"));
    }
    let span = meta.path.span();
    let mut seen = Seen::default();
    let (mut name, mut type_, mut json_path, mut description, mut format, mut priority) =
        (None, None, None, None, None, None);
    meta.parse_nested_meta(|inner| {
        let key = util::key(&inner);
        if !COLUMN_KEYS.contains(&key.as_str()) {
            return Err(util::unknown(&inner, "printcolumn option", COLUMN_KEYS));
        }
        seen.once(&inner, &key)?;
        match key.as_str() {
            "name" => name = Some(util::string(&inner, "name")?),
            "type" => {
                type_ = Some(column_word(
                    &inner,
                    "type",
                    COLUMN_TYPES,
                    "a printer column's type",
                )?);
            }
            "json_path" => {
                let lit = util::string(&inner, "json_path")?;
                check(
                    &lit,
                    lit.value().starts_with('.'),
                    "`json_path` must start with `.`, e.g. \".spec.replicas\"",
                )?;
                json_path = Some(lit);
            }
            "description" => description = Some(util::string(&inner, "description")?),
            "format" => {
                format = Some(column_word(
                    &inner,
                    "format",
                    COLUMN_FORMATS,
                    "a printer column's format",
                )?);
            }
            _ => {
                let e = util::expr(&inner)?;
                let value = match &e {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i),
                        ..
                    }) => i.base10_parse::<i32>()?,
                    _ => {
                        return Err(syn::Error::new_spanned(
                            e,
                            "`priority` expects a non-negative integer",
                        ))
                    }
                };
                priority = Some(value);
            }
        }
        Ok(())
    })?;
    let missing = |what: &str| {
        let example = if what == "type" {
            "integer (or number, string, boolean, date)"
        } else {
            "\"...\""
        };
        syn::Error::new(span, format!("`printcolumn` needs {what} = {example}"))
    };
    Ok(Column {
        name: name.ok_or_else(|| missing("name"))?,
        type_: type_.ok_or_else(|| missing("type"))?,
        json_path: json_path.ok_or_else(|| missing("json_path"))?,
        description,
        format,
        priority,
    })
}

fn parse_scale(meta: &syn::meta::ParseNestedMeta) -> syn::Result<Scale> {
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta
            .error("`scale` expects (spec = \".spec.replicas\", status = \".status.replicas\")"));
    }
    let span = meta.path.span();
    let mut seen = Seen::default();
    let (mut spec, mut status, mut selector) = (None, None, None);
    meta.parse_nested_meta(|inner| {
        let key = util::key(&inner);
        if !SCALE_KEYS.contains(&key.as_str()) {
            return Err(util::unknown(&inner, "scale option", SCALE_KEYS));
        }
        seen.once(&inner, &key)?;
        let lit = util::string(&inner, &key)?;
        let v = lit.value();
        match key.as_str() {
            "spec" => {
                check(
                    &lit,
                    v.starts_with(".spec."),
                    "the scale spec path must be under .spec, e.g. \".spec.replicas\"",
                )?;
                spec = Some(lit);
            }
            "status" => {
                check(
                    &lit,
                    v.starts_with(".status."),
                    "the scale status path must be under .status, e.g. \".status.replicas\"",
                )?;
                status = Some(lit);
            }
            _ => {
                check(
                    &lit,
                    v.starts_with(".status.") || v.starts_with(".spec."),
                    "the scale selector path must be under .status or .spec",
                )?;
                selector = Some(lit);
            }
        }
        Ok(())
    })?;
    Ok(Scale {
        spec: spec
            .ok_or_else(|| syn::Error::new(span, "`scale` needs spec = \".spec.<replicas>\""))?,
        status: status.ok_or_else(|| {
            syn::Error::new(span, "`scale` needs status = \".status.<replicas>\"")
        })?,
        selector,
        span,
    })
}

fn parse_type(meta: &syn::meta::ParseNestedMeta, name: &str) -> syn::Result<syn::Type> {
    let value = meta.value()?;
    if value.peek(LitStr) {
        let lit: LitStr = value.parse()?;
        lit.parse::<syn::Type>().map_err(|_| {
            syn::Error::new_spanned(
                &lit,
                format!("`{name}` expects a type, e.g. {name} = \"FooStatus\""),
            )
        })
    } else {
        value.parse::<syn::Type>()
    }
}

fn parse_path(meta: &syn::meta::ParseNestedMeta, name: &str) -> syn::Result<syn::Path> {
    let value = meta.value()?;
    if value.peek(LitStr) {
        let lit: LitStr = value.parse()?;
        lit.parse::<syn::Path>()
            .map_err(|_| syn::Error::new_spanned(&lit, format!("`{name}` expects a path")))
    } else {
        value.parse::<syn::Path>()
    }
}

fn parse(input: &DeriveInput) -> syn::Result<Opts> {
    let mut opts = Opts {
        // The crate path first: option expressions name it.
        krate: util::crate_option(&input.attrs)?,
        group: None,
        version: None,
        kind: None,
        cluster: None,
        plural: None,
        singular: None,
        shortnames: Vec::new(),
        categories: Vec::new(),
        status: None,
        scale: None,
        columns: Vec::new(),
        selectable: Vec::new(),
        root_validations: Vec::new(),
        served: true,
        storage: None,
        deprecated: None,
        labels: Vec::new(),
        annotations: Vec::new(),
        root: None,
        derives: Vec::new(),
        attrs: Vec::new(),
        schema: (SchemaMode::Derived, None),
        schema_fn: None,
        has_markers: false,
    };
    let crd_attrs: Vec<&Attribute> = input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("crd"))
        .collect();
    let krate = opts.krate.clone();
    let mut seen = Seen::default();
    let mut all_known: Vec<&str> = CRD_OPTIONS.to_vec();
    all_known.extend_from_slice(TYPE_MARKERS);
    all_known.push("crate");
    for attr in &crd_attrs {
        attr.parse_nested_meta(|meta| {
            let name = util::key(&meta);
            let repeatable = matches!(
                name.as_str(),
                "shortname" | "category" | "printcolumn" | "selectable" | "root_validation" | "label"
                    | "annotation" | "derive" | "attr"
            );
            if CRD_OPTIONS.contains(&name.as_str()) && !repeatable {
                seen.once(&meta, &name)?;
            }
            match name.as_str() {
                "crate" => util::skip_value(&meta)?,
                "group" => {
                    let lit = util::string(&meta, "group")?;
                    let v = lit.value();
                    check(&lit, dns_subdomain(&v) && v.contains('.'),
                        "`group` must be a lowercase DNS subdomain with at least one dot, e.g. \"cache.example.com\"")?;
                    opts.group = Some(lit);
                }
                "version" => {
                    let lit = util::string(&meta, "version")?;
                    check(&lit, dns_label(&lit.value()),
                        "`version` must be a lowercase DNS label starting with a letter, e.g. \"v1alpha1\"")?;
                    opts.version = Some(lit);
                }
                "kind" => {
                    let lit = util::string(&meta, "kind")?;
                    let v = lit.value();
                    check(&lit,
                        v.starts_with(|c: char| c.is_ascii_uppercase()) && v.chars().all(|c| c.is_ascii_alphanumeric()),
                        "`kind` must be an UpperCamelCase name of letters and digits, e.g. \"Memcached\"")?;
                    opts.kind = Some(lit);
                }
                "scope" => {
                    let lit = util::string(&meta, "scope")?;
                    opts.cluster = Some(match lit.value().as_str() {
                        "Namespaced" | "namespaced" => false,
                        "Cluster" | "cluster" => true,
                        other => {
                            let hint = util::suggest(other, &["Namespaced", "Cluster"])
                                .map(|s| format!("; did you mean {s:?}?"))
                                .unwrap_or_default();
                            return Err(syn::Error::new_spanned(
                                &lit,
                                format!("`scope` must be \"Namespaced\" or \"Cluster\"{hint}"),
                            ));
                        }
                    });
                    if seen.has("namespaced") || seen.has("cluster") {
                        return Err(meta.error("the scope is already set"));
                    }
                }
                "namespaced" | "cluster" => {
                    let on = util::flag(&meta, &name)?;
                    let other = if name == "namespaced" { "cluster" } else { "namespaced" };
                    if seen.has(other) || seen.has("scope") {
                        return Err(meta.error("the scope is already set"));
                    }
                    opts.cluster = Some((name == "cluster") == on);
                }
                "plural" | "singular" => {
                    let lit = util::string(&meta, &name)?;
                    check(&lit, dns_label(&lit.value()),
                        &format!("`{name}` must be a lowercase DNS label, e.g. \"memcacheds\""))?;
                    if name == "plural" { opts.plural = Some(lit) } else { opts.singular = Some(lit) }
                }
                "shortname" | "shortnames" | "category" | "categories" => {
                    let lits = util::strings(&meta, &name)?;
                    for lit in &lits {
                        check(lit, dns_label(&lit.value()), &format!("`{name}` must be lowercase DNS labels, e.g. \"mc\""))?;
                    }
                    if name.starts_with("short") { opts.shortnames.extend(lits) } else { opts.categories.extend(lits) }
                }
                "status" => opts.status = Some(parse_type(&meta, "status")?),
                "scale" => opts.scale = Some(parse_scale(&meta)?),
                "printcolumn" => opts.columns.push(parse_column(&meta)?),
                "selectable" => {
                    let lit = util::string(&meta, "selectable")?;
                    check(&lit, lit.value().starts_with('.'), "`selectable` expects a JSON path such as \".spec.color\"")?;
                    opts.selectable.push(lit);
                }
                "root_validation" => opts.root_validations.push(markers::validation_rule(&meta, &krate)?),
                "served" => opts.served = util::flag(&meta, "served")?,
                "storage" => opts.storage = Some(util::flag(&meta, "storage")?),
                "deprecated" => {
                    if meta.input.peek(syn::Token![=]) {
                        let e = util::expr(&meta)?;
                        match e {
                            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => opts.deprecated = Some(Some(s)),
                            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(b), .. }) => {
                                if b.value { opts.deprecated = Some(None) }
                            }
                            other => return Err(syn::Error::new_spanned(other,
                                "`deprecated` expects a warning string, or nothing: deprecated = \"use v2\"")),
                        }
                    } else {
                        util::flag(&meta, "deprecated")?;
                        opts.deprecated = Some(None);
                    }
                }
                "label" | "annotation" => {
                    if !meta.input.peek(syn::token::Paren) {
                        return Err(meta.error(format!("`{name}` expects (\"key\", \"value\")")));
                    }
                    let kv = pair(&meta, &name)?;
                    if name == "label" { opts.labels.push(kv) } else { opts.annotations.push(kv) }
                }
                "root" => {
                    let lit = util::string(&meta, "root")?;
                    let ident = lit.parse::<syn::Ident>()
                        .map_err(|_| syn::Error::new_spanned(&lit, "`root` expects a type name, e.g. root = \"Memcached\""))?;
                    opts.root = Some(ident);
                }
                "derive" => {
                    if meta.input.peek(syn::token::Paren) {
                        let content;
                        syn::parenthesized!(content in meta.input);
                        let paths = content.parse_terminated(syn::Path::parse_mod_style, syn::Token![,])?;
                        opts.derives.extend(paths);
                    } else {
                        opts.derives.push(parse_path(&meta, "derive")?);
                    }
                }
                "attr" => {
                    if meta.input.peek(syn::token::Paren) {
                        let group: proc_macro2::Group = meta.input.parse()?;
                        let inner = group.stream();
                        opts.attrs.push(quote!(#[#inner]));
                    } else {
                        let lit = util::string(&meta, "attr")?;
                        let m: syn::Meta = lit.parse().map_err(|_| syn::Error::new_spanned(&lit, "`attr` expects attribute contents, e.g. attr = \"allow(dead_code)\""))?;
                        opts.attrs.push(quote!(#[#m]));
                    }
                }
                "schema" => {
                    let lit = util::string(&meta, "schema")?;
                    let mode = match lit.value().as_str() {
                        "derived" => SchemaMode::Derived,
                        "manual" => SchemaMode::Manual,
                        "disabled" => SchemaMode::Disabled,
                        other => {
                            let hint = util::suggest(other, &["derived", "manual", "disabled"])
                                .map(|s| format!("; did you mean {s:?}?"))
                                .unwrap_or_default();
                            return Err(syn::Error::new_spanned(&lit,
                                format!("`schema` must be \"derived\", \"manual\" or \"disabled\"{hint}")));
                        }
                    };
                    opts.schema = (mode, Some(lit.span()));
                }
                "schema_fn" => opts.schema_fn = Some(parse_path(&meta, "schema_fn")?),
                other if TYPE_MARKERS.contains(&other) => {
                    opts.has_markers = true;
                    util::skip_value(&meta)?;
                }
                _ => return Err(util::unknown(&meta, "option", &all_known)),
            }
            Ok(())
        })?;
    }
    let span = crd_attrs
        .first()
        .map(|a| a.span())
        .unwrap_or_else(|| input.ident.span());
    let missing = |what: &str, example: &str| {
        let message = format!(
            "#[derive(CustomResource)] needs `{what}`: #[crd({what} = \"{example}\", ...)]"
        );
        match crd_attrs.first() {
            Some(attr) => syn::Error::new_spanned(attr, message),
            None => syn::Error::new(span, message),
        }
    };
    if crd_attrs.is_empty() {
        return Err(syn::Error::new(
            input.ident.span(),
            "#[derive(CustomResource)] needs #[crd(group = \"...\", version = \"...\", kind = \"...\")]",
        ));
    }
    if opts.group.is_none() {
        return Err(missing("group", "example.com"));
    }
    if opts.version.is_none() {
        return Err(missing("version", "v1"));
    }
    if opts.kind.is_none() {
        return Err(missing("kind", "Foo"));
    }
    if let Some(scale) = &opts.scale {
        if opts.status.is_none() {
            return Err(syn::Error::new(
                scale.span,
                "the scale subresource needs a status: add status = \"FooStatus\"",
            ));
        }
    }
    match (opts.schema.0, &opts.schema_fn) {
        (SchemaMode::Manual, None) => {
            return Err(syn::Error::new(
                opts.schema.1.unwrap_or(span),
                "schema = \"manual\" needs schema_fn = \"path::to::fn\" returning the object's JSONSchemaProps",
            ))
        }
        (SchemaMode::Derived | SchemaMode::Disabled, Some(path)) => {
            return Err(syn::Error::new_spanned(path, "schema_fn needs schema = \"manual\""))
        }
        _ => {}
    }
    Ok(opts)
}

fn to_plural(word: &str) -> String {
    if word.ends_with('s')
        || word.ends_with('x')
        || word.ends_with('z')
        || word.ends_with("ch")
        || word.ends_with("sh")
    {
        return format!("{word}es");
    }
    if let Some(stem) = word.strip_suffix('y') {
        if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) {
            return format!("{stem}ies");
        }
    }
    format!("{word}s")
}

fn opt_str(lit: &Option<LitStr>) -> TokenStream {
    match lit {
        Some(l) => quote!(::core::option::Option::Some(#l)),
        None => quote!(::core::option::Option::None),
    }
}

fn field_has_markers(input: &DeriveInput) -> bool {
    let syn::Data::Struct(data) = &input.data else {
        return false;
    };
    data.fields
        .iter()
        .any(|f| f.attrs.iter().any(|a| a.path().is_ident("crd")))
}

pub fn derive(input: DeriveInput) -> syn::Result<TokenStream> {
    let opts = parse(&input)?;
    let krate = &opts.krate;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "#[derive(CustomResource)] does not support generic spec types",
        ));
    }
    if let syn::Data::Union(u) = &input.data {
        return Err(syn::Error::new_spanned(
            u.union_token,
            "#[derive(CustomResource)] needs a struct or enum spec",
        ));
    }
    let spec = &input.ident;
    let vis = &input.vis;
    let (group, version, kind) = match (&opts.group, &opts.version, &opts.kind) {
        (Some(g), Some(v), Some(k)) => (g, v, k),
        _ => {
            return Err(syn::Error::new(
                input.ident.span(),
                "group, version and kind are required",
            ))
        }
    };
    let kind_str = kind.value();
    let root = opts
        .root
        .clone()
        .unwrap_or_else(|| format_ident!("{}", kind_str, span = kind.span()));
    if root == *spec {
        return Err(syn::Error::new_spanned(kind, format!(
            "the generated type would be called `{root}`, like the spec type; name the spec `{root}Spec` or set root = \"...\"")));
    }
    let singular = opts
        .singular
        .as_ref()
        .map(|s| s.value())
        .unwrap_or_else(|| kind_str.to_ascii_lowercase());
    let plural = opts
        .plural
        .as_ref()
        .map(|s| s.value())
        .unwrap_or_else(|| to_plural(&singular));
    let crd_name = format!("{plural}.{}", group.value());
    let api_version = format!("{}/{}", group.value(), version.value());
    let cluster = opts.cluster.unwrap_or(false);
    let (scope_ty, scope) = if cluster {
        (
            quote!(#krate::kube_core::ClusterResourceScope),
            quote!(#krate::crd::Scope::Cluster),
        )
    } else {
        (
            quote!(#krate::kube_core::NamespaceResourceScope),
            quote!(#krate::crd::Scope::Namespaced),
        )
    };
    let meta_ty = quote!(#krate::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta);
    let shortnames = &opts.shortnames;
    let categories = &opts.categories;
    let selectable = &opts.selectable;
    let root_validations = &opts.root_validations;
    let columns = opts.columns.iter().map(|c| {
        let (name, type_, json_path) = (&c.name, &c.type_, &c.json_path);
        let description = opt_str(&c.description);
        let format = opt_str(&c.format);
        let priority = match c.priority {
            Some(p) => quote!(::core::option::Option::Some(#p)),
            None => quote!(::core::option::Option::None),
        };
        quote!(#krate::crd::PrinterColumn { name: #name, type_: #type_, json_path: #json_path,
            description: #description, format: #format, priority: #priority })
    });
    let scale = match &opts.scale {
        Some(s) => {
            let (sp, st) = (&s.spec, &s.status);
            let sel = opt_str(&s.selector);
            quote!(::core::option::Option::Some(#krate::crd::ScaleSubresource {
                spec_replicas_path: #sp, status_replicas_path: #st, label_selector_path: #sel }))
        }
        None => quote!(::core::option::Option::None),
    };
    let storage = match opts.storage {
        Some(b) => quote!(::core::option::Option::Some(#b)),
        None => quote!(::core::option::Option::None),
    };
    let (deprecated, warning) = match &opts.deprecated {
        None => (false, quote!(::core::option::Option::None)),
        Some(None) => (true, quote!(::core::option::Option::None)),
        Some(Some(w)) => (true, quote!(::core::option::Option::Some(#w))),
    };
    let labels = opts.labels.iter().map(|(k, v)| quote!((#k, #v)));
    let annotations = opts.annotations.iter().map(|(k, v)| quote!((#k, #v)));
    let served = opts.served;
    let has_status = opts.status.is_some();
    let spec_name = spec.to_string();
    let schema_source = match opts.schema.0 {
        SchemaMode::Derived => {
            quote!(#krate::crd::SchemaSource::Derived(#krate::crd::__private::root_schema_for::<#root>))
        }
        SchemaMode::Manual => {
            let f = &opts.schema_fn;
            quote!(#krate::crd::SchemaSource::Manual(#f))
        }
        SchemaMode::Disabled => quote!(#krate::crd::SchemaSource::Disabled),
    };

    let status_ty = opts.status.as_ref();
    let status_field = status_ty.map(|st| {
        quote! {
            /// The observed state, written by the controller through the status subresource.
            #[serde(default, skip_serializing_if = "::core::option::Option::is_none")]
            pub status: ::core::option::Option<#st>,
        }
    });
    let status_init = status_ty.map(|_| quote!(status: ::core::option::Option::None,));
    let status_ser = status_ty.map(|_| {
        quote! {
            if let ::core::option::Option::Some(status) = &self.status {
                state.serialize_field("status", status)?;
            } else {
                state.skip_field("status")?;
            }
        }
    });
    let has_status_impl = status_ty.map(|st| {
        quote! {
            impl #krate::kube_core::object::HasStatus for #root {
                type Status = #st;
                fn status(&self) -> ::core::option::Option<&#st> { self.status.as_ref() }
                fn status_mut(&mut self) -> &mut ::core::option::Option<#st> { &mut self.status }
            }
        }
    });
    let n_fields = 4usize + usize::from(has_status);
    let derives = &opts.derives;
    let serde_path = format!("{}::serde", krate.to_string().replace(' ', ""));
    let attrs = &opts.attrs;
    let doc = format!(" The `{kind_str}` custom resource (`{api_version}`), generated by `#[derive(CustomResource)]` from [`{spec_name}`].");

    let json_schema_impl = (opts.schema.0 == SchemaMode::Derived).then(|| {
        let status_schema = match status_ty {
            Some(st) => quote!(::core::option::Option::Some(generator.subschema_for::<#st>())),
            None => quote!(::core::option::Option::None),
        };
        let marker_check = (field_has_markers(&input) || opts.has_markers).then(|| {
            let span = input.ident.span();
            let check = util::respan(quote!(#krate::crd::__private::KubeforgeSchema), span);
            let spec_ty = util::respan(quote!(#spec), span);
            quote! {
                const _: fn() = || {
                    fn assert_kubeforge_schema<T: ?::core::marker::Sized + #check>() {}
                    assert_kubeforge_schema::<#spec_ty>();
                };
            }
        });
        quote! {
            #marker_check
            impl #krate::schemars::JsonSchema for #root {
                fn schema_name() -> ::std::borrow::Cow<'static, str> { #kind_str.into() }
                fn schema_id() -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(::core::concat!(::core::module_path!(), "::", #kind_str))
                }
                fn json_schema(generator: &mut #krate::schemars::SchemaGenerator) -> #krate::schemars::Schema {
                    let spec = generator.subschema_for::<#spec>();
                    let status = #status_schema;
                    #krate::crd::__private::object_schema(&<Self as #krate::crd::CustomResource>::DESCRIPTOR, spec, status)
                }
            }
        }
    });

    Ok(quote! {
        #[doc = #doc]
        #[derive(#krate::serde::Deserialize, ::core::clone::Clone, ::core::fmt::Debug #(, #derives)*)]
        #[serde(crate = #serde_path)]
        #(#attrs)*
        #vis struct #root {
            /// Standard object metadata.
            #[serde(default)]
            pub metadata: #meta_ty,
            /// The desired state.
            pub spec: #spec,
            #status_field
        }

        impl #root {
            /// A new object with the given name and spec (and no status).
            pub fn new(name: &str, spec: #spec) -> Self {
                Self {
                    metadata: #meta_ty {
                        name: ::core::option::Option::Some(::std::string::ToString::to_string(name)),
                        ..::core::default::Default::default()
                    },
                    spec,
                    #status_init
                }
            }
        }

        impl #krate::serde::Serialize for #root {
            fn serialize<S: #krate::serde::Serializer>(&self, serializer: S) -> ::core::result::Result<S::Ok, S::Error> {
                use #krate::serde::ser::SerializeStruct as _;
                let mut state = serializer.serialize_struct(#kind_str, #n_fields)?;
                state.serialize_field("apiVersion", #api_version)?;
                state.serialize_field("kind", #kind_str)?;
                state.serialize_field("metadata", &self.metadata)?;
                state.serialize_field("spec", &self.spec)?;
                #status_ser
                state.end()
            }
        }

        impl #krate::kube_core::Resource for #root {
            type DynamicType = ();
            type Scope = #scope_ty;
            fn kind(_: &()) -> ::std::borrow::Cow<'_, str> { #kind_str.into() }
            fn group(_: &()) -> ::std::borrow::Cow<'_, str> { #group.into() }
            fn version(_: &()) -> ::std::borrow::Cow<'_, str> { #version.into() }
            fn api_version(_: &()) -> ::std::borrow::Cow<'_, str> { #api_version.into() }
            fn plural(_: &()) -> ::std::borrow::Cow<'_, str> { #plural.into() }
            fn meta(&self) -> &#meta_ty { &self.metadata }
            fn meta_mut(&mut self) -> &mut #meta_ty { &mut self.metadata }
        }

        impl #krate::kube_core::object::HasSpec for #root {
            type Spec = #spec;
            fn spec(&self) -> &#spec { &self.spec }
            fn spec_mut(&mut self) -> &mut #spec { &mut self.spec }
        }

        #has_status_impl

        impl #krate::crd::CustomResource for #root {
            const DESCRIPTOR: #krate::crd::CrdDescriptor = #krate::crd::CrdDescriptor {
                group: #group,
                version: #version,
                kind: #kind_str,
                plural: #plural,
                singular: #singular,
                short_names: &[#(#shortnames),*],
                categories: &[#(#categories),*],
                scope: #scope,
                spec_type: ::core::concat!(::core::module_path!(), "::", #spec_name),
                has_status: #has_status,
                scale: #scale,
                printer_columns: &[#(#columns),*],
                selectable_fields: &[#(#selectable),*],
                root_validations: &[#(#root_validations),*],
                served: #served,
                storage: #storage,
                deprecated: #deprecated,
                deprecation_warning: #warning,
                labels: &[#(#labels),*],
                annotations: &[#(#annotations),*],
                schema: #schema_source,
            };
        }

        impl #krate::kube_core::CustomResourceExt for #root {
            /// The CRD for this version.
            ///
            /// # Panics
            /// When the schema cannot be made structural; use
            /// `CustomResource::try_crd` to get that as an error.
            fn crd() -> #krate::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
                match <Self as #krate::crd::CustomResource>::try_crd() {
                    ::core::result::Result::Ok(crd) => crd,
                    ::core::result::Result::Err(e) => ::core::panic!("{}", e),
                }
            }
            fn crd_name() -> &'static str { #crd_name }
            fn api_resource() -> #krate::kube_core::ApiResource {
                #krate::kube_core::ApiResource::erase::<Self>(&())
            }
            fn shortnames() -> &'static [&'static str] { &[#(#shortnames),*] }
        }

        impl #krate::scheme::Registrable for #root {
            fn registration() -> #krate::scheme::Registration {
                #krate::scheme::Registration::for_custom_resource::<Self>()
            }
        }

        #json_schema_impl
    })
}
