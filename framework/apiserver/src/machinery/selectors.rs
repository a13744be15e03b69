//! Label and field selectors: parsing the `labelSelector` / `fieldSelector`
//! query parameters (apimachinery `pkg/labels` and `pkg/fields` grammar) and
//! matching them against stored objects.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::machinery::names;
use crate::machinery::util::go_quote;

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

/// A label selector operator: apimachinery's `selection.Operator`, whose
/// spelling the error messages quote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// The binary operators as `parseOperator`'s error lists them
/// (`labels.binaryOperators`).
const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

/// One requirement (`labels.Requirement`): a key, an operator and the
/// values, sorted and without duplicates as the parser's string set gives
/// them.
#[derive(Clone, Debug, PartialEq)]
struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

/// A parsed label selector; empty matches everything.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct LabelSelector {
    /// Sorted by key, as `labels.Parse` sorts them.
    reqs: Vec<Requirement>,
}

/// The lexer's tokens (`labels.Token`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// The literals that are tokens of their own (`labels.string2token`).
const STRING_TO_TOKEN: &[(&[u8], Token)] = &[
    (b")", Token::ClosedPar),
    (b",", Token::Comma),
    (b"!", Token::DoesNotExist),
    (b"==", Token::DoubleEquals),
    (b"=", Token::Equals),
    (b">", Token::GreaterThan),
    (b"in", Token::In),
    (b"<", Token::LessThan),
    (b"!=", Token::NotEquals),
    (b"notin", Token::NotIn),
    (b"(", Token::OpenPar),
];

fn keyword(lit: &[u8]) -> Option<Token> {
    STRING_TO_TOKEN
        .iter()
        .find(|(s, _)| *s == lit)
        .map(|(_, t)| *t)
}

/// `labels.isWhitespace`: space, tab, CR and LF only.
fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// `labels.isSpecialSymbol`: the characters operators are made of.
fn is_special_symbol(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// apimachinery's label selector lexer, byte for byte: `read` answers 0
/// at the end and for a NUL byte alike, which ends a word or the input as
/// it does upstream. Words are anything between operators and whitespace;
/// whether they are valid keys or values is checked after parsing.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// `scanIDOrKeyword`: a word, which is `in`/`notin` or an identifier.
    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let mut buffer = Vec::new();
        loop {
            match self.read() {
                0 => break,
                ch if is_special_symbol(ch) || is_whitespace(ch) => {
                    self.unread();
                    break;
                }
                ch => buffer.push(ch),
            }
        }
        let lit = String::from_utf8_lossy(&buffer).into_owned();
        (keyword(&buffer).unwrap_or(Token::Identifier), lit)
    }

    /// `scanSpecialSymbol`: the longest operator at this point.
    fn scan_special_symbol(&mut self) -> (Token, String) {
        let mut buffer = Vec::new();
        let mut last: Option<(Token, usize)> = None;
        loop {
            match self.read() {
                0 => break,
                ch if is_special_symbol(ch) => {
                    buffer.push(ch);
                    if let Some(t) = keyword(&buffer) {
                        last = Some((t, buffer.len()));
                    } else if last.is_some() {
                        self.unread();
                        break;
                    }
                }
                _ => {
                    self.unread();
                    break;
                }
            }
        }
        match last {
            Some((t, len)) => (t, String::from_utf8_lossy(&buffer[..len]).into_owned()),
            None => (
                Token::Error,
                format!(
                    "error expected: keyword found '{}'",
                    String::from_utf8_lossy(&buffer)
                ),
            ),
        }
    }

    /// `Lex`: the next token and its literal.
    fn lex(&mut self) -> (Token, String) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        match ch {
            0 => (Token::EndOfString, String::new()),
            ch if is_special_symbol(ch) => {
                self.unread();
                self.scan_special_symbol()
            }
            _ => {
                self.unread();
                self.scan_id_or_keyword()
            }
        }
    }
}

/// Where the parser is: `in` and `notin` are operators only where an
/// operator is expected, identifiers everywhere else (`labels.ParserContext`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// apimachinery's recursive-descent label selector parser over the
/// scanned tokens (`labels.Parser`).
struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

fn in_context(tok: Token, context: Context) -> Token {
    match tok {
        Token::In | Token::NotIn if context == Context::Values => Token::Identifier,
        t => t,
    }
}

impl Parser {
    fn new(selector: &str) -> Self {
        let mut lexer = Lexer {
            s: selector.as_bytes(),
            pos: 0,
        };
        let mut items = Vec::new();
        loop {
            let (tok, lit) = lexer.lex();
            items.push((tok, lit));
            if tok == Token::EndOfString {
                break;
            }
        }
        Self { items, position: 0 }
    }

    fn item(&self, at: usize) -> (Token, String) {
        self.items
            .get(at)
            .or(self.items.last())
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()))
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        let (tok, lit) = self.item(self.position);
        (in_context(tok, context), lit)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let (tok, lit) = self.item(self.position);
        self.position += 1;
        (in_context(tok, context), lit)
    }

    /// `parse`: requirements separated by commas.
    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ))
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, op) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Op::Exists | Op::DoesNotExist)) = op {
            return new_requirement(key, op, Vec::new());
        }
        let op = self.parse_operator()?;
        let values = match op {
            Op::In | Op::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(key, op, values)
    }

    /// `parseKeyAndInferOperator`: `[!]key`, with `exists` inferred when
    /// the requirement ends after the key.
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Op>), String> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            op = Some(Op::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        // The parser's field path is nil here, which Go prints as `<nil>`.
        if let Some(e) = validate_label_key(&lit, "<nil>") {
            return Err(e);
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) && op.is_none() {
            op = Some(Op::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<Op, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Op::In,
            Token::Equals => Op::Equals,
            Token::DoubleEquals => Op::DoubleEquals,
            Token::GreaterThan => Op::GreaterThan,
            Token::LessThan => Op::LessThan,
            Token::NotIn => Op::NotIn,
            Token::NotEquals => Op::NotEquals,
            _ => return Err(format!("found '{lit}', expected: {BINARY_OPERATORS}")),
        })
    }

    /// `parseValues`: `( values )`; `()` is the empty value.
    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let s = self.parse_identifiers_list()?;
                if self.consume(Context::Values).0 != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(s)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    /// `parseIdentifiersList`: comma-separated, possibly empty values.
    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut s: Vec<String> = Vec::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    s.push(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(s),
                        _ => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if s.is_empty() {
                        s.push(String::new());
                    }
                    match self.lookahead(Context::Values).0 {
                        Token::ClosedPar => {
                            s.push(String::new());
                            return Ok(s);
                        }
                        Token::Comma => {
                            self.consume(Context::Values);
                            s.push(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    /// `parseExactValue`: the one value after `=`, `==`, `!=`, `>` or
    /// `<`; nothing is the empty value.
    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if matches!(tok, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            return Ok(vec![lit]);
        }
        Err(format!("found '{lit}', expected: identifier"))
    }
}

/// `field.Invalid(path, value, detail).Error()` for a string value.
fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

/// `labels.validateLabelKey`: `IsQualifiedName`'s messages, joined.
fn validate_label_key(key: &str, path: &str) -> Option<String> {
    let errs = names::is_qualified_name(key);
    (!errs.is_empty()).then(|| invalid(path, key, &errs.join("; ")))
}

/// `utilerrors.NewAggregate(errs).Error()`: one message as it is, more
/// (without repeats) in brackets.
fn aggregate(errs: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::new();
    for e in errs {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    if unique.len() == 1 {
        unique.remove(0)
    } else {
        format!("[{}]", unique.join(", "))
    }
}

/// `labels.NewRequirement`, for what the parser can produce: the values
/// become a sorted set; `gt`/`lt` take an integer; every value must be a
/// valid label value.
fn new_requirement(key: String, op: Op, mut values: Vec<String>) -> Result<Requirement, String> {
    values.sort();
    values.dedup();
    let mut errs = Vec::new();
    if let Some(e) = validate_label_key(&key, "key") {
        errs.push(e);
    }
    // The parser gives `gt`/`lt` exactly one value and `in`/`notin` at
    // least one, so of the count checks only the integer one can fail.
    if matches!(op, Op::GreaterThan | Op::LessThan) {
        for (i, v) in values.iter().enumerate() {
            if v.parse::<i64>().is_err() {
                errs.push(invalid(
                    &format!("values[{i}]"),
                    v,
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                ));
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let msgs = names::is_valid_label_value(v);
        if !msgs.is_empty() {
            errs.push(invalid(&format!("values[{i}][{key}]"), v, &msgs.join("; ")));
        }
    }
    if errs.is_empty() {
        Ok(Requirement { key, op, values })
    } else {
        Err(aggregate(errs))
    }
}

impl Requirement {
    /// `Requirement.Matches`, given the label's value (`None` when the
    /// object has no such label).
    fn matches(&self, have: Option<&str>) -> bool {
        let listed = |v: &str| self.values.iter().any(|x| x == v);
        match self.op {
            Op::In | Op::Equals | Op::DoubleEquals => have.is_some_and(listed),
            Op::NotIn | Op::NotEquals => have.is_none_or(|v| !listed(v)),
            Op::Exists => have.is_some(),
            Op::DoesNotExist => have.is_none(),
            Op::GreaterThan | Op::LessThan => {
                let Some(have) = have.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let [want] = self.values.as_slice() else {
                    return false;
                };
                match want.parse::<i64>() {
                    Ok(want) if self.op == Op::GreaterThan => have > want,
                    Ok(want) => have < want,
                    Err(_) => false,
                }
            }
        }
    }
}

impl std::fmt::Display for Requirement {
    /// `Requirement.String`: `!key`, `key`, `key=v`, `key in (a,b)`, ...
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.op == Op::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let (op, open, close) = match self.op {
            Op::Exists | Op::DoesNotExist => return Ok(()),
            Op::Equals => ("=", "", ""),
            Op::DoubleEquals => ("==", "", ""),
            Op::NotEquals => ("!=", "", ""),
            Op::In => (" in ", "(", ")"),
            Op::NotIn => (" notin ", "(", ")"),
            Op::GreaterThan => (">", "", ""),
            Op::LessThan => ("<", "", ""),
        };
        write!(f, "{op}{open}{}{close}", self.values.join(","))
    }
}

impl std::fmt::Display for LabelSelector {
    /// `Selector.String`: the requirements, sorted by key, joined by commas.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, r) in self.reqs.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl LabelSelector {
    /// Whether it selects everything (no requirement).
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Parses a `labelSelector` query value as `labels.Parse` does; the
    /// error is its message, which kube-apiserver answers with as a 400.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Parser::new(s).parse()?;
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { reqs })
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
        self.reqs
            .iter()
            .all(|r| r.matches(labels.and_then(|l| l.get(&r.key)).and_then(Value::as_str)))
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
    /// The value compared with, unescaped.
    pub value: String,
    /// `!=` instead of `=`.
    pub negated: bool,
}

/// A parsed field selector.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct FieldSelector {
    /// In the order of the sorted terms, as `fields.ParseSelector` keeps
    /// them.
    reqs: Vec<FieldReq>,
}

/// `fields.splitTerms`: the terms between unescaped commas, escapes kept;
/// none for the empty selector.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// `fields.termOperators`, `!=` and `==` tried before `=`.
const TERM_OPERATORS: [&str; 3] = ["!=", "==", "="];

/// `fields.splitTerm`: split at the first operator; the left side knows no
/// escapes, the right side is returned still escaped.
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        TERM_OPERATORS
            .iter()
            .find(|op| rest.starts_with(**op))
            .map(|op| (&term[..i], *op, &rest[op.len()..]))
    })
}

/// `fields.UnescapeValue`: `\\`, `\,` and `\=` are the escapes; any other
/// escape, a lone trailing backslash, or a bare `,` or `=` is an error.
fn unescape_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_owned());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                ));
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Go prints the rune with %v: its number.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                ))
            }
            c => out.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".into());
    }
    Ok(out)
}

/// `fields.EscapeValue`.
fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl std::fmt::Display for FieldSelector {
    /// `Selector.String`: `label=value` and `label!=value` terms, values
    /// escaped, joined by commas.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, r) in self.reqs.iter().enumerate() {
            let op = if r.negated { "!=" } else { "=" };
            let sep = if i > 0 { "," } else { "" };
            write!(f, "{sep}{}{op}{}", r.label, escape_value(&r.value))?;
        }
        Ok(())
    }
}

impl FieldSelector {
    /// Whether it selects everything (no requirement).
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Parses a `fieldSelector` as `fields.ParseSelector` does (terms
    /// sorted, empty terms skipped, nothing trimmed), then maps each label
    /// through `resolve` to the JSON path it reads, as kube-apiserver's
    /// `ConvertFieldLabel` transform does after parsing: an error is the
    /// kind's conversion message, answered as a 400.
    pub fn parse(
        s: &str,
        resolve: impl Fn(&str) -> Result<Vec<String>, String>,
    ) -> Result<Self, String> {
        let mut terms = split_terms(s);
        terms.sort_unstable();
        let mut parsed = Vec::with_capacity(terms.len());
        for term in terms.into_iter().filter(|t| !t.is_empty()) {
            let Some((label, op, rhs)) = split_term(term) else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                ));
            };
            parsed.push((label, unescape_value(rhs)?, op == "!="));
        }
        let mut reqs = Vec::with_capacity(parsed.len());
        for (label, value, negated) in parsed {
            let path = resolve(label)?;
            reqs.push(FieldReq {
                label: label.to_owned(),
                path,
                value,
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

#[cfg(test)]
mod apimachinery_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StoredObject;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "labels": labels}, "status": {"phase": "Running"}, "spec": {"hostNetwork": true}})
    }

    #[test]
    fn an_unexpected_character_is_quoted_whole() {
        let err = LabelSelector::parse("é=x").expect_err("rejected");
        assert!(
            err.starts_with("unable to parse requirement: <nil>: Invalid value: \"é\": name part"),
            "{err}"
        );
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
                Ok(l.split('.').map(str::to_owned).collect())
            }
            _ => Err(format!("field label not supported: {l}")),
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
