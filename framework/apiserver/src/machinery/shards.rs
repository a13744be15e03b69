//! `shardSelector` on list and watch, as KEP-5866 (server-side sharded
//! list and watch, alpha in Kubernetes 1.36) defines it:
//! `shardRange(object.metadata.uid, '0x…', '0x…')` ranges, joined by `||`,
//! over the 64-bit FNV-1a hash of the field's value (`k8s.io/apimachinery`
//! `pkg/sharding`), parsed with the messages of `k8s.io/apiserver`
//! `pkg/sharding/parser.go`. The selector is CEL syntax that is parsed,
//! never evaluated: [`parse`] reads the CEL subset a selector can be
//! written in and walks what it built as the upstream parser walks
//! cel-go's AST. A syntax error's wording is this parser's own (upstream
//! quotes cel-go's).

use std::fmt;

/// The field a selector hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ShardField {
    Uid,
    Namespace,
}

impl ShardField {
    fn path(self) -> &'static str {
        match self {
            Self::Uid => "object.metadata.uid",
            Self::Namespace => "object.metadata.namespace",
        }
    }
}

/// A parsed `shardSelector`: ranges `[start, end)` of the hash, OR-ed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ShardSelector {
    field: ShardField,
    /// Bounds as written (`0x` and 16 digits, or 2^64's 17), with values.
    ranges: Vec<(String, String, u128, u128)>,
}

impl ShardSelector {
    /// Whether an object with this uid and namespace is in the selector's
    /// shard (`Selector.Matches`: `start ≤ hash < end`).
    pub fn matches(&self, uid: &str, namespace: &str) -> bool {
        let value = match self.field {
            ShardField::Uid => uid,
            ShardField::Namespace => namespace,
        };
        let h = u128::from(fnv1a64(value.as_bytes()));
        self.ranges.iter().any(|(_, _, s, e)| *s <= h && h < *e)
    }
}

/// The selector re-serialized as `ListMeta.shardInfo.selector` echoes it.
impl fmt::Display for ShardSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (start, end, _, _)) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(" || ")?;
            }
            write!(f, "shardRange({}, '{start}', '{end}')", self.field.path())?;
        }
        Ok(())
    }
}

/// Go's `fnv.New64a` over `bytes`.
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Parses a `shardSelector` value; the error is the message that follows
/// `invalid shard selector: `.
pub(crate) fn parse(s: &str) -> Result<ShardSelector, String> {
    if s.trim().is_empty() {
        return Err(
            "empty shard selector is not allowed; omit the parameter for unfiltered lists".into(),
        );
    }
    let expr = cel::parse(s).map_err(|e| format!("CEL parse error: {e}"))?;
    let mut ranges = Vec::new();
    let mut field = None;
    collect(&expr, &mut ranges, &mut field)?;
    Ok(ShardSelector {
        field: field.unwrap_or(ShardField::Uid),
        ranges,
    })
}

/// Walks `_||_` calls down to `shardRange` calls.
fn collect(
    expr: &cel::Expr,
    ranges: &mut Vec<(String, String, u128, u128)>,
    field: &mut Option<ShardField>,
) -> Result<(), String> {
    let cel::Expr::Call { function, args } = expr else {
        return Err(format!(
            "unexpected expression kind {}; expected shardRange() call or || operator",
            expr.kind()
        ));
    };
    match function.as_str() {
        "_||_" => args.iter().try_for_each(|a| collect(a, ranges, field)),
        "shardRange" => {
            let (f, start, end) = shard_range(args)?;
            match *field {
                Some(seen) if seen != f => Err(format!(
                    "all shard ranges must use the same field, got {:?} and {:?}",
                    seen.path(),
                    f.path()
                )),
                _ => {
                    *field = Some(f);
                    ranges.push(start_end(start, end)?);
                    Ok(())
                }
            }
        }
        other => Err(format!(
            "unsupported function {other:?}; only shardRange() and || are allowed"
        )),
    }
}

fn shard_range(args: &[cel::Expr]) -> Result<(ShardField, String, String), String> {
    let [path, start, end] = args else {
        return Err(format!(
            "shardRange() requires exactly 3 arguments, got {}",
            args.len()
        ));
    };
    let Some(path_text) = path.select_path() else {
        return Err(format!(
            "shardRange() first argument: expected field path (e.g. object.metadata.uid), got expression kind {}",
            path.kind()
        ));
    };
    let field = match path_text.as_str() {
        "object.metadata.uid" => ShardField::Uid,
        "object.metadata.namespace" => ShardField::Namespace,
        other => {
            return Err(format!(
                "unsupported field path {other:?}; supported: object.metadata.uid, object.metadata.namespace"
            ))
        }
    };
    Ok((field, bound("hexStart", start)?, bound("hexEnd", end)?))
}

/// A bound: a string literal holding `0x` and 16 lowercase hex digits, or
/// 2^64 as 17.
fn bound(name: &str, expr: &cel::Expr) -> Result<String, String> {
    let cel::Expr::Str(s) = expr else {
        return Err(format!(
            "{name} must be a string literal (e.g. '0xff'), got expression kind {}",
            expr.kind()
        ));
    };
    let Some(digits) = s.strip_prefix("0x") else {
        return Err(format!("{name} must have '0x' prefix, got {s:?}"));
    };
    if digits.is_empty() {
        return Err(format!("{name}: hex value is required after '0x'"));
    }
    if digits.len() > 17 {
        return Err(format!(
            "{name}: hex value too long ({} chars, max 17): {s:?}",
            digits.len()
        ));
    }
    if let Some(c) = digits.chars().find(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
        return Err(format!(
            "{name}: invalid hex character {} in {s:?}",
            go_rune(c)
        ));
    }
    if digits.len() == 17 && digits != "10000000000000000" {
        return Err(format!(
            "{name}: 17-digit hex value must be '0x10000000000000000' (2^64), got {s:?}"
        ));
    }
    if digits.len() < 16 {
        return Err(format!(
            "{name} must be a 0x-prefixed 16-digit hex value, got {s:?} (did you mean \"0x{digits:0>16}\"?)"
        ));
    }
    Ok(s.clone())
}

/// Go's `%q` of a rune: `'G'`.
fn go_rune(c: char) -> String {
    match c {
        '\'' => r"'\''".into(),
        '\\' => r"'\\'".into(),
        c if c.is_control() => format!("'\\x{:02x}'", u32::from(c)),
        c => format!("'{c}'"),
    }
}

fn start_end(start: String, end: String) -> Result<(String, String, u128, u128), String> {
    let value = |s: &str| u128::from_str_radix(&s[2..], 16).unwrap_or(u128::MAX);
    let (s, e) = (value(&start), value(&end));
    if s >= e {
        return Err(format!(
            "shard range start {start} must be less than end {end}"
        ));
    }
    Ok((start, end, s, e))
}

/// The CEL a selector can be written in: literals, identifiers, field
/// selection, calls, lists and the operators, parsed into the node kinds
/// of cel-go's AST (`common/ast`), which the messages above name by
/// number as Go's `%v` prints an `ast.ExprKind`.
mod cel {
    use std::iter::Peekable;
    use std::str::CharIndices;

    /// A node of the parsed expression.
    #[derive(Debug, PartialEq)]
    pub(super) enum Expr {
        /// A literal other than a string (numbers, bools, null).
        Literal,
        Str(String),
        Ident(String),
        Select(Box<Expr>, String),
        Call {
            function: String,
            args: Vec<Expr>,
        },
        List,
    }

    impl Expr {
        /// cel-go's `ast.ExprKind` value (Unspecified 0, Literal 1,
        /// Ident 2, Select 3, Call 4, List 5).
        pub(super) fn kind(&self) -> u8 {
            match self {
                Self::Literal | Self::Str(_) => 1,
                Self::Ident(_) => 2,
                Self::Select(..) => 3,
                Self::Call { .. } => 4,
                Self::List => 5,
            }
        }

        /// `a.b.c` as text, when this is a selection.
        pub(super) fn select_path(&self) -> Option<String> {
            match self {
                Self::Select(operand, field) => {
                    let base = match &**operand {
                        Self::Ident(name) => name.clone(),
                        other => other.select_path()?,
                    };
                    Some(format!("{base}.{field}"))
                }
                _ => None,
            }
        }
    }

    #[derive(Debug, Clone, PartialEq)]
    enum Token {
        Ident(String),
        Str(String),
        Number,
        Op(&'static str),
    }

    const OPS: &[&str] = &[
        "||", "&&", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "!", "(", ")", "[",
        "]", ",", ".", "?", ":",
    ];

    fn tokens(s: &str) -> Result<Vec<(usize, Token)>, String> {
        let mut out = Vec::new();
        let mut chars = s.char_indices().peekable();
        while let Some(&(at, c)) = chars.peek() {
            if c.is_whitespace() {
                chars.next();
            } else if c == '\'' || c == '"' {
                chars.next();
                out.push((at, Token::Str(string(&mut chars, c, at)?)));
            } else if c.is_ascii_alphabetic() || c == '_' {
                let mut word = String::new();
                while let Some(&(_, c)) = chars
                    .peek()
                    .filter(|(_, c)| c.is_ascii_alphanumeric() || *c == '_')
                {
                    word.push(c);
                    chars.next();
                }
                out.push((at, Token::Ident(word)));
            } else if c.is_ascii_digit() {
                while chars
                    .peek()
                    .is_some_and(|(_, c)| c.is_ascii_alphanumeric() || *c == '.')
                {
                    chars.next();
                }
                out.push((at, Token::Number));
            } else {
                let rest = &s[at..];
                let op = OPS
                    .iter()
                    .find(|op| rest.starts_with(**op))
                    .ok_or_else(|| {
                        format!(
                            "Syntax error: token recognition error at: '{c}' (1:{})",
                            at + 1
                        )
                    })?;
                for _ in 0..op.len() {
                    chars.next();
                }
                out.push((at, Token::Op(op)));
            }
        }
        Ok(out)
    }

    fn string(
        chars: &mut Peekable<CharIndices<'_>>,
        quote: char,
        at: usize,
    ) -> Result<String, String> {
        let mut out = String::new();
        while let Some((_, c)) = chars.next() {
            match c {
                c if c == quote => return Ok(out),
                '\\' => match chars.next() {
                    Some((_, e @ ('\\' | '\'' | '"'))) => out.push(e),
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    _ => {
                        return Err(format!(
                            "Syntax error: invalid escape in string literal (1:{})",
                            at + 1
                        ))
                    }
                },
                c => out.push(c),
            }
        }
        Err(format!(
            "Syntax error: unterminated string literal (1:{})",
            at + 1
        ))
    }

    /// Binary operators by precedence, lowest first, with cel-go's
    /// function names.
    const BINARY: &[&[(&str, &str)]] = &[
        &[("||", "_||_")],
        &[("&&", "_&&_")],
        &[
            ("==", "_==_"),
            ("!=", "_!=_"),
            ("<", "_<_"),
            ("<=", "_<=_"),
            (">", "_>_"),
            (">=", "_>=_"),
        ],
        &[("+", "_+_"), ("-", "_-_")],
        &[("*", "_*_"), ("/", "_/_"), ("%", "_%_")],
    ];

    struct Parser {
        tokens: Vec<(usize, Token)>,
        at: usize,
        len: usize,
    }

    pub(super) fn parse(s: &str) -> Result<Expr, String> {
        let mut p = Parser {
            tokens: tokens(s)?,
            at: 0,
            len: s.len(),
        };
        let e = p.binary(0)?;
        match p.tokens.get(p.at) {
            None => Ok(e),
            Some((pos, _)) => Err(format!("Syntax error: extraneous input (1:{})", pos + 1)),
        }
    }

    impl Parser {
        fn peek_op(&self) -> Option<&'static str> {
            match self.tokens.get(self.at) {
                Some((_, Token::Op(op))) => Some(op),
                _ => None,
            }
        }

        fn error(&self, what: &str) -> String {
            let pos = self.tokens.get(self.at).map_or(self.len, |(p, _)| *p);
            format!("Syntax error: {what} (1:{})", pos + 1)
        }

        fn expect(&mut self, op: &str) -> Result<(), String> {
            if self.peek_op() == Some(op) {
                self.at += 1;
                Ok(())
            } else {
                Err(self.error(&format!("missing '{op}'")))
            }
        }

        fn binary(&mut self, level: usize) -> Result<Expr, String> {
            let Some(ops) = BINARY.get(level) else {
                return self.unary();
            };
            let mut left = self.binary(level + 1)?;
            while let Some(function) = self
                .peek_op()
                .and_then(|op| ops.iter().find(|(o, _)| *o == op))
                .map(|(_, f)| *f)
            {
                self.at += 1;
                let right = self.binary(level + 1)?;
                left = Expr::Call {
                    function: function.into(),
                    args: vec![left, right],
                };
            }
            Ok(left)
        }

        fn unary(&mut self) -> Result<Expr, String> {
            let function = match self.peek_op() {
                Some("!") => "!_",
                Some("-") => "-_",
                _ => return self.member(),
            };
            self.at += 1;
            let operand = self.unary()?;
            Ok(Expr::Call {
                function: function.into(),
                args: vec![operand],
            })
        }

        fn member(&mut self) -> Result<Expr, String> {
            let mut e = self.primary()?;
            loop {
                match self.peek_op() {
                    Some(".") => {
                        self.at += 1;
                        let Some((_, Token::Ident(field))) = self.tokens.get(self.at).cloned()
                        else {
                            return Err(self.error("expected a field name"));
                        };
                        self.at += 1;
                        if self.peek_op() == Some("(") {
                            // A member call: its target comes first.
                            let mut args = vec![e];
                            args.extend(self.arguments()?);
                            e = Expr::Call {
                                function: field,
                                args,
                            };
                        } else {
                            e = Expr::Select(Box::new(e), field);
                        }
                    }
                    Some("[") => {
                        self.at += 1;
                        let index = self.binary(0)?;
                        self.expect("]")?;
                        e = Expr::Call {
                            function: "_[_]".into(),
                            args: vec![e, index],
                        };
                    }
                    _ => return Ok(e),
                }
            }
        }

        fn arguments(&mut self) -> Result<Vec<Expr>, String> {
            self.expect("(")?;
            let mut args = Vec::new();
            if self.peek_op() == Some(")") {
                self.at += 1;
                return Ok(args);
            }
            loop {
                args.push(self.binary(0)?);
                match self.peek_op() {
                    Some(",") => self.at += 1,
                    Some(")") => {
                        self.at += 1;
                        return Ok(args);
                    }
                    _ => return Err(self.error("missing ')'")),
                }
            }
        }

        fn primary(&mut self) -> Result<Expr, String> {
            let Some((_, token)) = self.tokens.get(self.at).cloned() else {
                return Err(self.error("unexpected end of input"));
            };
            self.at += 1;
            match token {
                Token::Str(s) => Ok(Expr::Str(s)),
                Token::Number => Ok(Expr::Literal),
                Token::Ident(w) if matches!(w.as_str(), "true" | "false" | "null") => {
                    Ok(Expr::Literal)
                }
                Token::Ident(name) if self.peek_op() == Some("(") => Ok(Expr::Call {
                    function: name,
                    args: self.arguments()?,
                }),
                Token::Ident(name) => Ok(Expr::Ident(name)),
                Token::Op("(") => {
                    let e = self.binary(0)?;
                    self.expect(")")?;
                    Ok(e)
                }
                Token::Op("[") => {
                    while self.peek_op() != Some("]") {
                        self.binary(0)?;
                        if self.peek_op() == Some(",") {
                            self.at += 1;
                        } else {
                            break;
                        }
                    }
                    self.expect("]")?;
                    Ok(Expr::List)
                }
                Token::Op(op) => {
                    self.at -= 1;
                    Err(self.error(&format!("mismatched input '{op}'")))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str =
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')";

    /// `k8s.io/apimachinery/pkg/sharding`: FNV-1a 64 of the value's
    /// bytes; the empty namespace of cluster-scoped objects hashes to the
    /// offset basis.
    #[test]
    fn the_hash_is_fnv1a_64() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn ranges_select_start_inclusive_end_exclusive_and_or() {
        let all = parse(FULL).unwrap();
        assert!(all.matches("any-uid", ""));
        assert_eq!(all.to_string(), FULL);
        // The hash of "a" is 0xaf63dc4c8601ec8c.
        let at =
            parse("shardRange(object.metadata.uid, '0xaf63dc4c8601ec8c', '0xaf63dc4c8601ec8d')")
                .unwrap();
        assert!(at.matches("a", ""));
        assert!(!at.matches("b", ""));
        let below =
            parse("shardRange(object.metadata.uid, '0x0000000000000000', '0xaf63dc4c8601ec8c')")
                .unwrap();
        assert!(!below.matches("a", ""));
        let two = parse(
            "shardRange(object.metadata.namespace, '0x0000000000000000', '0x0000000000000001') || \
             shardRange(object.metadata.namespace, '0xaf63dc4c8601ec8c', '0xaf63dc4c8601ec8d')",
        )
        .unwrap();
        assert!(two.matches("ignored", "a"));
        assert!(!two.matches("a", "b"));
        assert_eq!(
            two.to_string(),
            "shardRange(object.metadata.namespace, '0x0000000000000000', '0x0000000000000001') || \
             shardRange(object.metadata.namespace, '0xaf63dc4c8601ec8c', '0xaf63dc4c8601ec8d')"
        );
        // Double quotes are CEL string literals too; the echo uses single.
        let dq =
            parse(r#"shardRange(object.metadata.uid, "0x0000000000000000", "0x8000000000000000")"#);
        assert!(dq.is_ok());
    }

    #[test]
    fn n_ranges_split_the_space_exactly() {
        let n: u128 = 4;
        let step = (1u128 << 64) / n;
        let shards: Vec<ShardSelector> = (0..n)
            .map(|i| {
                let end = if i == n - 1 {
                    1u128 << 64
                } else {
                    (i + 1) * step
                };
                parse(&format!(
                    "shardRange(object.metadata.uid, '0x{:016x}', '0x{:016x}')",
                    i * step,
                    end
                ))
                .unwrap()
            })
            .collect();
        for k in 0..2000 {
            let uid = format!("uid-{k}");
            assert_eq!(
                shards.iter().filter(|s| s.matches(&uid, "")).count(),
                1,
                "{uid}"
            );
        }
    }

    /// The messages of `k8s.io/apiserver/pkg/sharding/parser.go`.
    #[test]
    fn invalid_selectors_get_the_parsers_messages() {
        let uid = |a: &str, b: &str| format!("shardRange(object.metadata.uid, {a}, {b})");
        let cases: Vec<(String, String)> = vec![
            ("  ".into(), "empty shard selector is not allowed; omit the parameter for unfiltered lists".into()),
            (
                format!("{FULL} && {FULL}"),
                r#"unsupported function "_&&_"; only shardRange() and || are allowed"#.into(),
            ),
            ("has(object.metadata.uid)".into(), r#"unsupported function "has"; only shardRange() and || are allowed"#.into()),
            ("'0x00'".into(), "unexpected expression kind 1; expected shardRange() call or || operator".into()),
            ("shardRange(object.metadata.uid, '0x0000000000000000')".into(), "shardRange() requires exactly 3 arguments, got 2".into()),
            (
                "shardRange(uid, '0x0000000000000000', '0x10000000000000000')".into(),
                "shardRange() first argument: expected field path (e.g. object.metadata.uid), got expression kind 2".into(),
            ),
            (
                "shardRange(metadata.uid, '0x0000000000000000', '0x10000000000000000')".into(),
                r#"unsupported field path "metadata.uid"; supported: object.metadata.uid, object.metadata.namespace"#.into(),
            ),
            (uid("0", "'0x10000000000000000'"), "hexStart must be a string literal (e.g. '0xff'), got expression kind 1".into()),
            (uid("'0000000000000000'", "'0x10000000000000000'"), r#"hexStart must have '0x' prefix, got "0000000000000000""#.into()),
            (uid("'0x0000000000000000'", "'0x'"), "hexEnd: hex value is required after '0x'".into()),
            (
                uid("'0x0000000000000000'", "'0x100000000000000000'"),
                r#"hexEnd: hex value too long (18 chars, max 17): "0x100000000000000000""#.into(),
            ),
            (uid("'0x000000000000000G'", "'0x10000000000000000'"), r#"hexStart: invalid hex character 'G' in "0x000000000000000G""#.into()),
            (
                uid("'0x0000000000000000'", "'0x20000000000000000'"),
                r#"hexEnd: 17-digit hex value must be '0x10000000000000000' (2^64), got "0x20000000000000000""#.into(),
            ),
            (
                uid("'0x0'", "'0x10000000000000000'"),
                r#"hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)"#.into(),
            ),
            (
                uid("'0x8000000000000000'", "'0x8000000000000000'"),
                "shard range start 0x8000000000000000 must be less than end 0x8000000000000000".into(),
            ),
            (
                format!("{FULL} || shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')"),
                r#"all shard ranges must use the same field, got "object.metadata.uid" and "object.metadata.namespace""#.into(),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse(&input), Err(want), "{input:?}");
        }
        let syntax = parse("shardRange(object.metadata.uid,").unwrap_err();
        assert!(syntax.starts_with("CEL parse error: "), "{syntax}");
    }
}
