//! Small helpers: timestamps in the Kubernetes formats, uids, the
//! `generateName` suffix, name validation, and human-readable ages.

use std::borrow::Cow;

use serde_json::Value;

use crate::machinery::names;

/// Now, as a `metav1.Time` (RFC 3339, seconds).
pub(crate) fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A random version-4 UUID.
pub(crate) fn uid() -> String {
    let mut b = [0u8; 16];
    for x in &mut b {
        *x = fastrand::u8(..);
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// `generateName`: the prefix cut to 58 characters plus five characters of
/// apiserver's alphabet (`storage/names/generate.go`).
pub(crate) fn generate_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut cut: String = prefix.chars().take(58).collect();
    for _ in 0..5 {
        let i = fastrand::usize(..ALPHABET.len());
        cut.push(char::from(ALPHABET.get(i).copied().unwrap_or(b'x')));
    }
    cut
}

/// How a kind's `metadata.name` (and a `generateName` prefix) is
/// validated: the name function its kube-apiserver validation hands
/// `ValidateObjectMeta` (`pkg/apis/*/validation`). Which kind uses which is
/// the registry's table (`registry/names.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// apimachinery `NameIsDNSSubdomain`: most kinds, custom resources.
    Subdomain,
    /// `NameIsDNSLabel`: namespaces.
    Label,
    /// `NameIsDNS1035Label`: services.
    Dns1035,
    /// rbac's `ValidateRBACName`: `IsValidPathSegmentName` (no `/`, `%`,
    /// `.` or `..`), a `generateName` prefix held to it too.
    Rbac,
    /// `path.ValidatePathSegmentName` alone, the generic store's check
    /// (`registry/rest/create.go` `BeforeCreate`), for kinds whose own
    /// validation checks no name.
    PathSegment,
}

/// apimachinery's `maskTrailingDash` (`api/validation/generic.go`), which
/// lets a `generateName` prefix end in `-`: it drops the last *two* bytes
/// and appends `a`, as upstream does. Bytes the cut leaves broken become
/// `_`, which keeps the length and fails every DNS rule as they would.
fn mask_trailing_dash(name: &str) -> Cow<'_, str> {
    if name.len() <= 1 || !name.ends_with('-') {
        return Cow::Borrowed(name);
    }
    let bytes = &name.as_bytes()[..name.len() - 2];
    let mut out = String::with_capacity(name.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(chunk.invalid().iter().map(|_| '_'));
    }
    out.push('a');
    Cow::Owned(out)
}

/// The messages kube-apiserver gives for `name` under `rule`, each one a
/// `field.Invalid` of its own; `prefix` when it is a `generateName`.
pub(crate) fn name_errors(name: &str, rule: NameRule, prefix: bool) -> Vec<String> {
    let masked = || {
        if prefix {
            mask_trailing_dash(name)
        } else {
            Cow::Borrowed(name)
        }
    };
    match rule {
        NameRule::Subdomain => names::is_dns1123_subdomain(&masked()),
        NameRule::Label => names::is_dns1123_label(&masked()),
        NameRule::Dns1035 => names::is_dns1035_label(&masked()),
        NameRule::Rbac => names::validate_path_segment_name(name, false),
        NameRule::PathSegment => names::validate_path_segment_name(name, prefix),
    }
}

/// Validates a name, returning the first message kube-apiserver gives.
pub(crate) fn validate_name(name: &str, rule: NameRule) -> Result<(), String> {
    match name_errors(name, rule, false).into_iter().next() {
        Some(msg) => Err(msg),
        None => Ok(()),
    }
}

/// Go's `duration.HumanDuration`, as kubectl's AGE column shows it.
pub(crate) fn human_duration(secs: i64) -> String {
    let s = secs.max(0);
    if s < 120 {
        return format!("{s}s");
    }
    let m = s / 60;
    if m < 10 {
        let rem = s % 60;
        return if rem == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{rem}s")
        };
    }
    if m < 180 {
        return format!("{m}m");
    }
    let h = s / 3600;
    if h < 8 {
        let rem = (s % 3600) / 60;
        return if rem == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{rem}m")
        };
    }
    if h < 48 {
        return format!("{h}h");
    }
    if h < 192 {
        let d = h / 24;
        let rem = h % 24;
        return if rem == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{rem}h")
        };
    }
    if h < 24 * 365 * 2 {
        return format!("{}d", h / 24);
    }
    if h < 24 * 365 * 8 {
        let y = h / (24 * 365);
        let d = (h / 24) % 365;
        return if d == 0 {
            format!("{y}y")
        } else {
            format!("{y}y{d}d")
        };
    }
    format!("{}y", h / (24 * 365))
}

/// Seconds since an RFC 3339 timestamp (0 when absent or unparsable).
pub(crate) fn age_secs(ts: Option<&Value>) -> i64 {
    ts.and_then(Value::as_str)
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
        .map(|t| jiff::Timestamp::now().as_second() - t.as_second())
        .unwrap_or(0)
}

/// `metadata.<field>` as a string.
pub(crate) fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// `metadata.finalizers`.
pub(crate) fn finalizers(obj: &Value) -> Vec<String> {
    strings_at(obj, "/metadata/finalizers")
}

/// The strings of the array at JSON pointer `ptr` (empty when there is no
/// array there; entries that are not strings are skipped).
pub(crate) fn strings_at(v: &Value, ptr: &str) -> Vec<String> {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Mutable `metadata` (created when missing).
pub(crate) fn meta_mut(obj: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    let map = obj.as_object_mut()?;
    map.entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()))
        .as_object_mut()
}

/// Go's `strconv.Quote`.
pub(crate) fn go_quote(s: &str) -> String {
    go_quote_bytes(s.as_bytes())
}

/// Go's `strconv.Quote` of bytes that may not be UTF-8 (an unescaped URL
/// part): printable characters as they are, `\n`-style escapes, `\xff`
/// for a control character or a byte that is not UTF-8, `\u`/`\U` for
/// other characters Go does not print.
pub(crate) fn go_quote_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{7}' => out.push_str("\\a"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{b}' => out.push_str("\\v"),
                c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", u32::from(c))),
                c if go_prints(c) => out.push(c),
                c if u32::from(c) < 0x10000 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint` beyond ASCII, near enough: not a control, a
/// space other than ' ', or a common format character (soft hyphen,
/// zero-width and direction marks, the byte-order mark).
fn go_prints(c: char) -> bool {
    !(c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
}

/// `Value::pointer` without its allocation per token: serde_json's
/// unescapes every token into a new `String`, which the controllers' and
/// table printers' hot paths paid on each read. A pointer with `~` escapes
/// takes serde_json's path.
pub(crate) trait Pointer {
    /// The value at JSON pointer `pointer` (RFC 6901), as `Value::pointer`.
    fn at(&self, pointer: &str) -> Option<&Value>;
}

impl Pointer for Value {
    fn at(&self, pointer: &str) -> Option<&Value> {
        if pointer.contains('~') {
            return self.pointer(pointer);
        }
        if pointer.is_empty() {
            return Some(self);
        }
        pointer
            .strip_prefix('/')?
            .split('/')
            .try_fold(self, |value, token| match value {
                Value::Object(map) => map.get(token),
                Value::Array(items) => array_index(token).and_then(|i| items.get(i)),
                _ => None,
            })
    }
}

/// An array index as RFC 6901 spells it: digits, no sign, no leading zero.
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_use_the_apiserver_alphabet() {
        let n = generate_name(&"x".repeat(70));
        assert_eq!(n.len(), 63);
        assert!(n[58..]
            .bytes()
            .all(|c| b"bcdfghjklmnpqrstvwxz2456789".contains(&c)));
    }

    #[test]
    fn uids_look_like_uuids() {
        let u = uid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
    }

    #[test]
    fn ages_match_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(3600 * 3), "3h");
        assert_eq!(human_duration(86400 * 3), "3d");
    }

    #[test]
    fn name_rules() {
        assert!(validate_name("a.b-c", NameRule::Subdomain).is_ok());
        assert!(validate_name("A", NameRule::Subdomain).is_err());
        assert!(validate_name("a.b", NameRule::Label).is_err());
        assert!(validate_name("1a", NameRule::Dns1035).is_err());
        assert!(validate_name("system:foo", NameRule::Rbac).is_ok());
        // One regex and 253 characters: no 63-character limit per part.
        assert!(validate_name(&"a".repeat(100), NameRule::Subdomain).is_ok());
        assert!(validate_name(&format!("{}.b", "a".repeat(70)), NameRule::Subdomain).is_ok());
    }

    #[test]
    fn at_finds_what_pointer_finds() {
        let doc = serde_json::json!({
            "metadata": {"labels": {"app": "x", "a/b": "slash", "m~n": "tilde"}},
            "items": [{"name": "zero"}, {"name": "one"}],
            "": {"": "empty keys"},
        });
        for path in [
            "",
            "/",
            "//",
            "/metadata",
            "/metadata/labels/app",
            "/metadata/labels/a~1b",
            "/metadata/labels/m~0n",
            "/items/0/name",
            "/items/1/name",
            "/items/01/name",
            "/items/+1/name",
            "/items/2",
            "/items/x",
            "/missing/deep",
            "metadata",
            "/metadata/labels/app/more",
        ] {
            assert_eq!(doc.at(path), doc.pointer(path), "{path:?}");
        }
    }
}
