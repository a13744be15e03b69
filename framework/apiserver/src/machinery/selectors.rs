//! Label and field selectors: parsing the `labelSelector` / `fieldSelector`
//! query parameters (apimachinery `pkg/labels` and `pkg/fields` grammar) and
//! matching them against stored objects.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// Whether `labels` satisfy a `metav1.LabelSelector` given as JSON
/// (`matchLabels`, `matchExpressions`): an empty selector matches
/// everything, an unknown operator nothing.
pub(crate) fn selector_matches(selector: &Value, labels: Option<&Value>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(ml) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            if get(k) != v.as_str() {
                return false;
            }
        }
    }
    if let Some(exprs) = selector.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|vs| vs.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let have = get(key);
            let ok = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => have.is_some_and(|h| values.contains(&h)),
                "NotIn" => have.is_none_or(|h| !values.contains(&h)),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
    }
    true
}

/// What a selector reads of a stored object, each without parsing the
/// rest of it. Storage implements it; this module stays below storage.
pub(crate) trait Selectable {
    /// `metadata.labels`; `None` when the object has none.
    fn labels(&self) -> Option<Map<String, Value>>;
    /// The value at `path` (object keys); `None` when absent.
    fn field(&self, path: &[String]) -> Option<Value>;
}

/// One label requirement.
#[derive(Clone, Debug, PartialEq)]
enum LabelReq {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
    Gt(String, i64),
    Lt(String, i64),
}

/// A parsed label selector; empty matches everything.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct LabelSelector {
    reqs: Vec<LabelReq>,
}

/// Characters allowed in label keys and values (qualified names, prefixes).
fn is_label_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')
}

struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

#[derive(Debug, PartialEq, Clone)]
enum Tok {
    Ident(String),
    Comma,
    Open,
    Close,
    Bang,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    In,
    NotIn,
    End,
}

impl<'a> Lexer<'a> {
    fn next(&mut self) -> Result<Tok, String> {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        let Some(&c) = self.s.get(self.pos) else {
            return Ok(Tok::End);
        };
        let two = self.s.get(self.pos + 1).copied();
        let tok = match (c, two) {
            (b'!', Some(b'=')) => {
                self.pos += 2;
                return Ok(Tok::NotEq);
            }
            (b'=', Some(b'=')) => {
                self.pos += 2;
                return Ok(Tok::DoubleEq);
            }
            (b'!', _) => Tok::Bang,
            (b'=', _) => Tok::Eq,
            (b',', _) => Tok::Comma,
            (b'(', _) => Tok::Open,
            (b')', _) => Tok::Close,
            (b'>', _) => Tok::Gt,
            (b'<', _) => Tok::Lt,
            _ => {
                let start = self.pos;
                while let Some(&b) = self.s.get(self.pos) {
                    if is_label_char(b as char) {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                if start == self.pos {
                    // Name the whole character, not its first UTF-8 byte.
                    let found = String::from_utf8_lossy(&self.s[self.pos..])
                        .chars()
                        .next()
                        .unwrap_or(char::REPLACEMENT_CHARACTER);
                    return Err(format!("found '{found}'"));
                }
                let word = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
                return Ok(match word.as_str() {
                    "in" => Tok::In,
                    "notin" => Tok::NotIn,
                    _ => Tok::Ident(word),
                });
            }
        };
        self.pos += 1;
        Ok(tok)
    }

    fn peek(&mut self) -> Result<Tok, String> {
        let save = self.pos;
        let t = self.next();
        self.pos = save;
        t
    }
}

fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| !p.is_empty() && p.len() <= 253 && !p.contains('/'));
    if name_ok && prefix_ok {
        Ok(())
    } else {
        Err(format!("invalid label key \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"))
    }
}

fn validate_value(v: &str) -> Result<(), String> {
    let ok = v.is_empty()
        || (v.len() <= 63
            && !v.contains('/')
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if ok {
        Ok(())
    } else {
        Err(format!("invalid label value: \"{v}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"))
    }
}

impl LabelSelector {
    /// Whether it selects everything (no requirement).
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Parses a `labelSelector` query value.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut lx = Lexer {
            s: s.as_bytes(),
            pos: 0,
        };
        let mut reqs = Vec::new();
        if lx.peek()? == Tok::End {
            return Ok(Self { reqs });
        }
        loop {
            reqs.push(Self::requirement(&mut lx)?);
            match lx.next()? {
                Tok::End => break,
                Tok::Comma => continue,
                t => return Err(format!("found '{t:?}', expected: ',' or 'end of string'")),
            }
        }
        Ok(Self { reqs })
    }

    fn requirement(lx: &mut Lexer<'_>) -> Result<LabelReq, String> {
        let negated = if lx.peek()? == Tok::Bang {
            lx.next()?;
            true
        } else {
            false
        };
        let key = match lx.next()? {
            Tok::Ident(k) => k,
            t => return Err(format!("found '{t:?}', expected: identifier")),
        };
        validate_key(&key)?;
        if negated {
            return Ok(LabelReq::NotExists(key));
        }
        match lx.peek()? {
            Tok::End | Tok::Comma => return Ok(LabelReq::Exists(key)),
            _ => {}
        }
        let op = lx.next()?;
        match op {
            Tok::Eq | Tok::DoubleEq | Tok::NotEq => {
                let value = match lx.peek()? {
                    Tok::Ident(v) => {
                        lx.next()?;
                        v
                    }
                    Tok::End | Tok::Comma => String::new(),
                    t => return Err(format!("found '{t:?}', expected: identifier")),
                };
                validate_value(&value)?;
                Ok(if op == Tok::NotEq {
                    LabelReq::NotEq(key, value)
                } else {
                    LabelReq::Eq(key, value)
                })
            }
            Tok::In | Tok::NotIn => {
                if lx.next()? != Tok::Open {
                    return Err("found identifier, expected: '('".into());
                }
                let mut values = Vec::new();
                loop {
                    match lx.next()? {
                        Tok::Ident(v) => {
                            validate_value(&v)?;
                            values.push(v);
                        }
                        Tok::Close if values.is_empty() => break,
                        Tok::Comma => {
                            // `in (a,,b)` and `in (,a)` mean the empty value.
                            values.push(String::new());
                            continue;
                        }
                        t => {
                            return Err(format!("found '{t:?}', expected: ',', ')' or identifier"))
                        }
                    }
                    match lx.next()? {
                        Tok::Comma => continue,
                        Tok::Close => break,
                        t => return Err(format!("found '{t:?}', expected: ',' or ')'")),
                    }
                }
                Ok(if op == Tok::In {
                    LabelReq::In(key, values)
                } else {
                    LabelReq::NotIn(key, values)
                })
            }
            Tok::Gt | Tok::Lt => {
                let value = match lx.next()? {
                    Tok::Ident(v) => v,
                    t => return Err(format!("found '{t:?}', expected: identifier")),
                };
                let n: i64 = value.parse().map_err(|_| {
                    format!("for 'Gt', 'Lt' operators, the value must be an integer: {value}")
                })?;
                Ok(if op == Tok::Gt {
                    LabelReq::Gt(key, n)
                } else {
                    LabelReq::Lt(key, n)
                })
            }
            t => Err(format!(
                "found '{t:?}', expected: '=', '!=', '==', 'in', notin'"
            )),
        }
    }

    /// Matches the `metadata.labels` of `obj`.
    pub fn matches(&self, obj: &Value) -> bool {
        if self.reqs.is_empty() {
            return true;
        }
        let labels = obj
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object);
        self.matches_labels(labels)
    }

    /// Matches a stored object's labels, read from its bytes.
    pub fn matches_stored(&self, obj: &impl Selectable) -> bool {
        if self.reqs.is_empty() {
            return true;
        }
        self.matches_labels(obj.labels().as_ref())
    }

    /// Matches a `metadata.labels` map (`None` when the object has none).
    fn matches_labels(&self, labels: Option<&Map<String, Value>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.reqs.iter().all(|r| match r {
            LabelReq::Eq(k, v) => get(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => get(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
            LabelReq::Gt(k, n) => get(k)
                .and_then(|x| x.parse::<i64>().ok())
                .is_some_and(|x| x > *n),
            LabelReq::Lt(k, n) => get(k)
                .and_then(|x| x.parse::<i64>().ok())
                .is_some_and(|x| x < *n),
        })
    }
}

/// One field requirement: `label=value` or `label!=value`, with the JSON
/// path the label reads.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FieldReq {
    /// The field label as written, e.g. `status.phase`.
    pub label: String,
    /// Where in the object the value lives.
    pub path: Vec<String>,
    /// The value compared with.
    pub value: String,
    /// `!=` instead of `=`.
    pub negated: bool,
}

/// A parsed field selector.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct FieldSelector {
    reqs: Vec<FieldReq>,
}

/// Splits on unescaped `sep`, keeping escapes (apimachinery `fields.splitTerms`).
fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            cur.push('\\');
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if escaped {
        cur.push('\\');
    }
    out.push(cur);
    out
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{e}"
                    ))
                }
                None => return Err("invalid field selector: unterminated escape".into()),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

impl FieldSelector {
    /// Whether it selects everything (no requirement).
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Parses a `fieldSelector`; `resolve` maps a label to the JSON path it
    /// reads, or `None` when the resource does not support it (400 `field
    /// label not supported`).
    pub fn parse(s: &str, resolve: impl Fn(&str) -> Option<Vec<String>>) -> Result<Self, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(Self { reqs });
        }
        for term in split_unescaped(s, ',') {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let (label, value, negated) = if let Some(i) = find_op(term, "!=") {
                (&term[..i], &term[i + 2..], true)
            } else if let Some(i) = find_op(term, "==") {
                (&term[..i], &term[i + 2..], false)
            } else if let Some(i) = find_op(term, "=") {
                (&term[..i], &term[i + 1..], false)
            } else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                ));
            };
            let label = label.trim().to_owned();
            let Some(path) = resolve(&label) else {
                return Err(format!("field label not supported: {label}"));
            };
            reqs.push(FieldReq {
                label,
                path,
                value: unescape(value)?,
                negated,
            });
        }
        Ok(Self { reqs })
    }

    /// A selector for exactly `metadata.name=name` (watch on a single object).
    pub fn name(name: &str) -> Self {
        Self {
            reqs: vec![FieldReq {
                label: "metadata.name".into(),
                path: vec!["metadata".into(), "name".into()],
                value: name.to_owned(),
                negated: false,
            }],
        }
    }

    /// Adds the requirements of `other`.
    pub fn and(mut self, other: FieldSelector) -> Self {
        self.reqs.extend(other.reqs);
        self
    }

    /// Matches a stored object under `key` (namespace, name): its name and
    /// namespace come from the key, other fields from the object; absent
    /// fields read as the empty string, booleans and numbers as their text.
    pub fn matches_stored(&self, key: &(String, String), obj: &impl Selectable) -> bool {
        self.reqs.iter().all(|r| {
            let text = match r.path.as_slice() {
                [m, f] if m == "metadata" && f == "name" => Cow::Borrowed(key.1.as_str()),
                [m, f] if m == "metadata" && f == "namespace" => Cow::Borrowed(key.0.as_str()),
                path => Cow::Owned(text_of(obj.field(path).as_ref()).into_owned()),
            };
            (*text == r.value) != r.negated
        })
    }
}

/// A field's text as a field selector compares it: absent fields read as
/// the empty string, booleans and numbers as their text.
fn text_of(v: Option<&Value>) -> Cow<'_, str> {
    match v {
        Some(Value::String(s)) => Cow::Borrowed(s),
        Some(Value::Bool(b)) => Cow::Owned(b.to_string()),
        Some(Value::Number(n)) => Cow::Owned(n.to_string()),
        _ => Cow::Borrowed(""),
    }
}

/// Position of an unescaped operator in a field term.
fn find_op(term: &str, op: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in term.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
            continue;
        }
        if term.get(i..).is_some_and(|rest| rest.starts_with(op)) {
            return Some(i);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StoredObject;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "labels": labels}, "status": {"phase": "Running"}, "spec": {"hostNetwork": true}})
    }

    #[test]
    fn an_unexpected_character_is_named_whole() {
        let err = LabelSelector::parse("é=x").expect_err("rejected");
        assert_eq!(err, "found 'é'");
    }

    #[test]
    fn label_operators() {
        let o = obj(json!({"app": "web", "tier": "front", "n": "5"}));
        let stored = StoredObject::encode(o.clone(), 1);
        for (sel, want) in [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web,db)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("missing!=x", true),
            ("app=web,tier=back", false),
            ("n>4", true),
            ("n<5", false),
            ("env notin (prod)", true),
        ] {
            let s = LabelSelector::parse(sel).unwrap();
            assert_eq!(s.matches(&o), want, "{sel}");
            assert_eq!(s.matches_stored(&stored), want, "{sel} (stored)");
        }
    }

    #[test]
    fn label_parse_errors() {
        for bad in ["app=", "=x", "app in web", "app in (a", "a b", "n>x"] {
            if bad == "app=" {
                // empty values are legal
                assert!(LabelSelector::parse(bad).is_ok());
                continue;
            }
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn field_selectors() {
        let resolve = |l: &str| match l {
            "metadata.name" | "status.phase" | "spec.hostNetwork" => {
                Some(l.split('.').map(str::to_owned).collect())
            }
            _ => None,
        };
        let o = StoredObject::encode(obj(json!({})), 1);
        let key = (String::new(), "a".to_owned());
        let s = FieldSelector::parse("metadata.name=a,status.phase!=Pending", resolve).unwrap();
        assert!(s.matches_stored(&key, &o));
        let s = FieldSelector::parse("spec.hostNetwork=true", resolve).unwrap();
        assert!(s.matches_stored(&key, &o));
        let s = FieldSelector::parse("metadata.name==b", resolve).unwrap();
        assert!(!s.matches_stored(&key, &o));
        let s =
            FieldSelector::parse("status.phase=Running,spec.hostNetwork!=false", resolve).unwrap();
        assert!(s.matches_stored(&key, &o));
        let err = FieldSelector::parse("spec.foo=x", resolve).unwrap_err();
        assert_eq!(err, "field label not supported: spec.foo");
        assert!(FieldSelector::parse("é=x,metadata.name=é", resolve).is_err());
        let s = FieldSelector::parse("metadata.name=é", resolve).unwrap();
        assert_eq!(s.reqs[0].value, "é");
        let s = FieldSelector::parse(r"metadata.name=a\,b", resolve).unwrap();
        assert_eq!(s.reqs[0].value, "a,b");
    }
}
