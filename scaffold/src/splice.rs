//! Edits to a generated Rust file the user may have changed since: the
//! additions `kubeforge create webhook` makes to a kind's webhook module and
//! its test when a second webhook type is added (kubebuilder's webhook
//! updater). Each edit finds an anchor the generator wrote (a `use` list, the
//! `register` chain, the end of the file) and says which one is missing
//! rather than guess; the caller formats the result with rustfmt.

/// Why a file could not be edited.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpliceError {
    /// The anchor is not in the file.
    #[error("no `{anchor}` to add `{addition}` to")]
    Missing {
        /// What was looked for.
        anchor: String,
        /// What would have been added.
        addition: String,
    },
    /// The anchor appears more than once, so where to edit is ambiguous.
    #[error("`{anchor}` appears more than once, so it is unclear which to add `{addition}` to")]
    Ambiguous {
        /// What was looked for.
        anchor: String,
        /// What would have been added.
        addition: String,
    },
}

/// `source` with `item` (Rust code starting with a blank line) appended at
/// its end.
pub fn append(source: &str, item: &str) -> String {
    let mut out = source.trim_end().to_owned();
    out.push('\n');
    out.push_str(item.trim_end());
    out.push('\n');
    out
}

/// `source` with `link` (e.g. `.validator::<Guestbook, _>(GuestbookWebhook)`)
/// added at the end of the method chain that starts at `start` (e.g.
/// `mgr.webhooks()`): before the `;` that ends its statement.
pub fn extend_chain(source: &str, start: &str, link: &str) -> Result<String, SpliceError> {
    let error = |ambiguous: bool| {
        let (anchor, addition) = (start.to_owned(), link.to_owned());
        if ambiguous {
            SpliceError::Ambiguous { anchor, addition }
        } else {
            SpliceError::Missing { anchor, addition }
        }
    };
    let mut found = source.match_indices(start);
    let (at, _) = found.next().ok_or_else(|| error(false))?;
    if found.next().is_some() {
        return Err(error(true));
    }
    let end = statement_end(source, at + start.len()).ok_or_else(|| error(false))?;
    Ok(format!(
        "{}\n        {link}{}",
        source[..end].trim_end(),
        &source[end..]
    ))
}

/// The index of the `;` ending the statement that continues at `from`:
/// the first one outside brackets, string literals and comments.
fn statement_end(source: &str, from: usize) -> Option<usize> {
    let bytes = source.as_bytes();
    let mut depth = 0usize;
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.checked_sub(1)?,
            b';' if depth == 0 => return Some(i),
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `source` importing `names` from `path` (e.g. `kubeforge::webhook`): added
/// to its `use path::{...};` list when it has one (kept sorted), else a
/// `use` of their own after the last top-level `use`.
pub fn import(source: &str, path: &str, names: &[&str]) -> String {
    let list_start = format!("use {path}::{{");
    if let Some(start) = source.find(&list_start) {
        let inner_start = start + list_start.len();
        if let Some(len) = source[inner_start..].find("};") {
            let inner = &source[inner_start..inner_start + len];
            let mut all: Vec<&str> = inner
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .collect();
            for name in names {
                if !all.contains(name) {
                    all.push(name);
                }
            }
            all.sort_unstable();
            return format!(
                "{}{}{}",
                &source[..inner_start],
                all.join(", "),
                &source[inner_start + len..]
            );
        }
    }
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| !source.contains(&format!("use {path}::{name};")))
        .collect();
    match missing.as_slice() {
        [] => source.to_owned(),
        [one] => add_use(source, &format!("use {path}::{one};")),
        many => add_use(source, &format!("use {path}::{{{}}};", many.join(", "))),
    }
}

/// `source` with the statement `line` (a whole `use ...;`) after its last
/// top-level `use` from the same crate (so it joins that group of imports),
/// else after its last `use`, else after its leading comments; unchanged
/// when it has that line already.
pub fn add_use(source: &str, line: &str) -> String {
    if source.lines().any(|l| l.trim() == line) {
        return source.to_owned();
    }
    let root = |use_line: &str| -> String {
        let path = use_line
            .trim_start_matches("pub ")
            .trim_start_matches("use ");
        path.split("::").next().unwrap_or_default().to_owned()
    };
    let lines: Vec<&str> = source.lines().collect();
    let (mut after_any, mut after_same) = (None, None);
    let mut i = 0;
    while i < lines.len() {
        if lines[i].starts_with("use ") || lines[i].starts_with("pub use ") {
            let same = root(lines[i]) == root(line);
            while i < lines.len() && !lines[i].trim_end().ends_with(';') {
                i += 1;
            }
            after_any = Some(i + 1);
            if same {
                after_same = Some(i + 1);
            }
        }
        i += 1;
    }
    let after = after_same.or(after_any);
    let at = after.unwrap_or_else(|| {
        lines
            .iter()
            .position(|l| !(l.starts_with("//") || l.trim().is_empty()))
            .unwrap_or(lines.len())
    });
    let at = at.min(lines.len());
    let mut out: Vec<&str> = lines[..at].to_vec();
    out.push(line);
    if after.is_none() {
        out.push("");
    }
    out.extend_from_slice(&lines[at..]);
    let mut text = out.join("\n");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_goes_before_the_semicolon_ending_the_chain() {
        let source = "pub fn register(mgr: &Manager) {\n    mgr.webhooks().defaulter::<G, _>(GWebhook);\n}\n";
        let out = extend_chain(source, "mgr.webhooks()", ".validator::<G, _>(GWebhook)").unwrap();
        assert_eq!(
            out,
            "pub fn register(mgr: &Manager) {\n    mgr.webhooks().defaulter::<G, _>(GWebhook)\n        .validator::<G, _>(GWebhook);\n}\n"
        );
    }

    #[test]
    fn semicolons_in_arguments_strings_and_comments_do_not_end_the_chain() {
        let source = "fn register(mgr: &Manager) {\n    mgr.webhooks() // a; b\n        .defaulter_with::<G, _>(GWebhook, opts(\";\", { x; y }));\n}\n";
        let out = extend_chain(source, "mgr.webhooks()", ".validator::<G, _>(GWebhook)").unwrap();
        assert!(
            out.contains("opts(\";\", { x; y }))\n        .validator::<G, _>(GWebhook);\n}"),
            "{out}"
        );
    }

    #[test]
    fn a_missing_or_doubled_chain_is_named() {
        let err = extend_chain("fn register() {}\n", "mgr.webhooks()", ".v()").unwrap_err();
        assert_eq!(err.to_string(), "no `mgr.webhooks()` to add `.v()` to");
        let twice = "mgr.webhooks().a();\nmgr.webhooks().b();\n";
        let err = extend_chain(twice, "mgr.webhooks()", ".v()").unwrap_err();
        assert!(matches!(err, SpliceError::Ambiguous { .. }), "{err}");
        let unterminated = "mgr.webhooks().a()\n";
        assert!(extend_chain(unterminated, "mgr.webhooks()", ".v()").is_err());
    }

    #[test]
    fn names_join_the_use_list_sorted_once() {
        let source = "use kubeforge::webhook::{AdmissionRequest, AdmissionResult, Defaulter};\nuse kubeforge::Manager;\n";
        let out = import(
            source,
            "kubeforge::webhook",
            &["Validator", "Denial", "Defaulter"],
        );
        assert_eq!(
            out,
            "use kubeforge::webhook::{AdmissionRequest, AdmissionResult, Defaulter, Denial, Validator};\nuse kubeforge::Manager;\n"
        );
        // rustfmt's multi-line form.
        let wrapped =
            "use kubeforge::webhook::{\n    AdmissionRequest, AdmissionResult, Defaulter,\n};\n";
        let out = import(wrapped, "kubeforge::webhook", &["WebhookOptions"]);
        assert!(
            out.contains("AdmissionRequest, AdmissionResult, Defaulter, WebhookOptions};"),
            "{out}"
        );
    }

    #[test]
    fn without_a_use_list_names_get_a_use_of_their_own() {
        let source = "//! Doc.\n\nuse a::B;\nuse c::{\n    D,\n};\n\nfn f() {}\n";
        let out = import(source, "kubeforge::webhook", &["Denial", "Validator"]);
        assert_eq!(
            out,
            "//! Doc.\n\nuse a::B;\nuse c::{\n    D,\n};\nuse kubeforge::webhook::{Denial, Validator};\n\nfn f() {}\n"
        );
        let once = import(&out, "kubeforge::prelude", &["ResourceExt"]);
        assert!(
            once.contains("use kubeforge::webhook::{Denial, Validator};\nuse kubeforge::prelude::ResourceExt;\n\nfn f"),
            "{once}"
        );
        // With the crate's other imports, not after the last `use`.
        let grouped = add_use("use a::B;\n\nuse crate::C;\n", "use a::D;");
        assert_eq!(grouped, "use a::B;\nuse a::D;\n\nuse crate::C;\n");
        assert_eq!(import(&once, "kubeforge::prelude", &["ResourceExt"]), once);
        let bare = add_use("//! Doc.\n\nfn f() {}\n", "use a::B;");
        assert_eq!(bare, "//! Doc.\n\nuse a::B;\n\nfn f() {}\n");
    }

    #[test]
    fn an_item_is_appended_after_the_last_one() {
        assert_eq!(
            append("fn a() {}\n\n\n", "\nfn b() {}\n"),
            "fn a() {}\n\nfn b() {}\n"
        );
    }
}
