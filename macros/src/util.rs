//! Attribute-parsing helpers shared by the derives: typed values with errors
//! on the offending token, duplicate detection, and "did you mean" hints.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, ExprUnary, Lit, LitStr, UnOp};

/// Levenshtein distance, for suggestions.
pub fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let v = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
            cur.push(v);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest known name, if it is close enough to be a likely typo.
pub fn suggest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = (name.len() / 3).max(2);
    known
        .iter()
        .map(|k| (distance(name, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// The error for an unknown option, with a suggestion when one is close.
pub fn unknown(meta: &ParseNestedMeta, what: &str, known: &[&str]) -> syn::Error {
    let name = meta
        .path
        .get_ident()
        .map(|i| i.to_string())
        .unwrap_or_else(|| quote::ToTokens::to_token_stream(&meta.path).to_string());
    let mut message = format!("unknown {what} `{name}`");
    if let Some(s) = suggest(&name, known) {
        message.push_str(&format!("; did you mean `{s}`?"));
    } else {
        message.push_str(&format!("; expected one of: {}", known.join(", ")));
    }
    meta.error(message)
}

/// The key of a nested meta as a string.
pub fn key(meta: &ParseNestedMeta) -> String {
    meta.path
        .get_ident()
        .map(|i| i.to_string())
        .unwrap_or_default()
}

/// Tracks options seen in one attribute list, to refuse duplicates.
#[derive(Default)]
pub struct Seen(Vec<String>);

impl Seen {
    pub fn once(&mut self, meta: &ParseNestedMeta, name: &str) -> syn::Result<()> {
        if self.0.iter().any(|s| s == name) {
            return Err(meta.error(format!("duplicate option `{name}`")));
        }
        self.0.push(name.to_string());
        Ok(())
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|s| s == name)
    }
}

pub fn expr(meta: &ParseNestedMeta) -> syn::Result<Expr> {
    meta.value()?.parse::<Expr>()
}

/// `key = "string"`.
pub fn string(meta: &ParseNestedMeta, name: &str) -> syn::Result<LitStr> {
    let e = expr(meta)?;
    match e {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s),
        other => Err(syn::Error::new_spanned(
            other,
            format!("`{name}` expects a string literal, e.g. {name} = \"...\""),
        )),
    }
}

/// `key` alone (true) or `key = true|false`.
pub fn flag(meta: &ParseNestedMeta, name: &str) -> syn::Result<bool> {
    if meta.input.peek(syn::Token![=]) {
        match expr(meta)? {
            Expr::Lit(ExprLit {
                lit: Lit::Bool(b), ..
            }) => Ok(b.value),
            other => Err(syn::Error::new_spanned(
                other,
                format!("`{name}` expects a boolean: write `{name}` or `{name} = false`"),
            )),
        }
    } else if meta.input.peek(syn::token::Paren) {
        Err(meta.error(format!("`{name}` takes no arguments")))
    } else {
        Ok(true)
    }
}

/// A numeric literal (int or float, optionally negative) as f64.
pub fn number(meta: &ParseNestedMeta, name: &str) -> syn::Result<(f64, Span)> {
    let e = expr(meta)?;
    let span = e.span();
    let bad = |e: &Expr| {
        syn::Error::new_spanned(e, format!("`{name}` expects a number, e.g. {name} = 1"))
    };
    let (negative, lit) = match &e {
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => match &**expr {
            Expr::Lit(ExprLit { lit, .. }) => (true, lit),
            _ => return Err(bad(&e)),
        },
        Expr::Lit(ExprLit { lit, .. }) => (false, lit),
        _ => return Err(bad(&e)),
    };
    let value = match lit {
        Lit::Int(i) => i.base10_parse::<f64>()?,
        Lit::Float(f) => f.base10_parse::<f64>()?,
        _ => return Err(bad(&e)),
    };
    // `1e999` parses as infinity, which no JSON schema can hold and which
    // `quote` refuses to emit (it panics on a non-finite float).
    if !value.is_finite() {
        return Err(syn::Error::new_spanned(
            &e,
            format!("`{name}` is out of range: it must be a finite number"),
        ));
    }
    Ok((if negative { -value } else { value }, span))
}

/// A non-negative integer literal.
pub fn count(meta: &ParseNestedMeta, name: &str) -> syn::Result<u64> {
    let e = expr(meta)?;
    match &e {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse::<u64>(),
        _ => Err(syn::Error::new_spanned(
            e,
            format!("`{name}` expects a non-negative integer, e.g. {name} = 1"),
        )),
    }
}

/// `key = "a"` or `key = ["a", "b"]`.
pub fn strings(meta: &ParseNestedMeta, name: &str) -> syn::Result<Vec<LitStr>> {
    let e = expr(meta)?;
    let bad = |e: &Expr| {
        syn::Error::new_spanned(
            e,
            format!("`{name}` expects a string or a list of strings, e.g. {name} = [\"a\", \"b\"]"),
        )
    };
    match &e {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(vec![s.clone()]),
        Expr::Array(array) => array
            .elems
            .iter()
            .map(|el| match el {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Ok(s.clone()),
                other => Err(bad(other)),
            })
            .collect(),
        _ => Err(bad(&e)),
    }
}

/// A JSON value written as a literal, a list, or `json!(...)`.
pub fn json(meta: &ParseNestedMeta, name: &str, krate: &TokenStream) -> syn::Result<TokenStream> {
    let e = expr(meta)?;
    json_expr(&e, name, krate)
}

pub fn json_expr(e: &Expr, name: &str, krate: &TokenStream) -> syn::Result<TokenStream> {
    match e {
        Expr::Macro(m) if m.mac.path.is_ident("json") => {
            let tokens = &m.mac.tokens;
            Ok(quote::quote!(#krate::serde_json::json!(#tokens)))
        }
        Expr::Lit(ExprLit {
            lit: Lit::Str(_) | Lit::Int(_) | Lit::Float(_) | Lit::Bool(_),
            ..
        })
        | Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => Ok(quote::quote!(#krate::serde_json::json!(#e))),
        Expr::Array(array) => {
            for el in &array.elems {
                json_expr(el, name, krate)?;
            }
            Ok(quote::quote!(#krate::serde_json::json!(#e)))
        }
        Expr::Path(p) if p.path.is_ident("null") => {
            Ok(quote::quote!(#krate::serde_json::Value::Null))
        }
        other => Err(syn::Error::new_spanned(
            other,
            format!(
                "`{name}` expects a JSON value: a literal, a list, or json!({{...}}) for an object"
            ),
        )),
    }
}

/// Give every token the same span, so that errors about generated code
/// point at the marker that caused it.
pub fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let TokenTree::Group(g) = &tt {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tt = TokenTree::Group(group);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}

/// `crate = "path"` among a container's `#[crd(...)]` options: where
/// generated code finds kubeforge (`::kubeforge` unless set). Read before
/// the other options, whose expressions name it.
pub fn crate_option(attrs: &[Attribute]) -> syn::Result<TokenStream> {
    let mut krate = quote::quote!(::kubeforge);
    for attr in attrs.iter().filter(|a| a.path().is_ident("crd")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let path: syn::Path = string(&meta, "crate")?.parse()?;
                krate = quote::quote!(#path);
                Ok(())
            } else {
                skip_value(&meta)
            }
        })?;
    }
    Ok(krate)
}

/// Consumes whatever follows an option name (`= value` or `(...)`).
pub fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<proc_macro2::Group>()?;
    }
    Ok(())
}
