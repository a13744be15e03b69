//! A CEL rule seen as text, before the parser sees it: its size and how
//! deeply its expression tree nests, checked against kube-apiserver's
//! bounds; and where its field selections and string literals are, which
//! error messages point at. kube-apiserver's parser (cel-go) refuses rules
//! past these bounds; the `cel` crate's parser and evaluator recurse once
//! per nesting level and would overflow the stack (or, past 96 nested
//! expressions, panic) on such input, so it never gets them.
//!
//! The depth is counted as cel-go's parser counts it
//! (`checkAndIncrementRecursionDepth`, `parser/parser.go`): one level per
//! nested expression (parentheses, list and map elements, call arguments,
//! index expressions, the else branch of `?:`), per relation (`==`, `<`,
//! `in`, ...), per arithmetic operator, per field selection, method call
//! and index. `&&` and `||` do not count (cel-go balances them), nor do
//! unary operators. The scan reads tokens, not a tree, so `a.b + c.d`
//! counts three where the tree is two deep: it may overestimate a depth,
//! never underestimate one.

/// The largest rule, in code points: cel-go's default
/// `expressionSizeCodePointLimit` (`parser/parser.go`), which kube-apiserver
/// keeps.
pub(super) const MAX_CODE_POINTS: usize = 100_000;

/// The deepest expression tree: cel-go's default `maxRecursionDepth`
/// (`parser/parser.go`), which kube-apiserver keeps.
pub(super) const MAX_RECURSION_DEPTH: usize = 250;

/// How many expressions may nest inside one another (parentheses, list,
/// map and argument elements, index expressions, `?:` else branches): the
/// `cel` crate parser's own limit (`max_recursion_depth`, 96), below
/// cel-go's 250. Deeper rules get cel-go's message, naming this limit.
pub(super) const MAX_NESTED_EXPRESSIONS: usize = 96;

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Ident,
    /// A string or bytes literal, quotes and prefix included.
    Str,
    Number,
    /// Punctuation and operators, one or two bytes.
    Punct,
}

#[derive(Clone, Copy, Debug)]
struct Token {
    kind: Kind,
    /// Byte range in the rule.
    start: usize,
    end: usize,
}

/// Splits a rule into tokens, skipping whitespace and `//` comments. Never
/// fails: what is not a token becomes one-byte punctuation, for the parser
/// to report.
struct Tokens<'a> {
    bytes: &'a [u8],
    i: usize,
}

impl<'a> Tokens<'a> {
    fn new(rule: &'a str) -> Self {
        Tokens {
            bytes: rule.as_bytes(),
            i: 0,
        }
    }
}

impl Iterator for Tokens<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let b = self.bytes;
        loop {
            match b.get(self.i)? {
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => self.i += 1,
                b'/' if b.get(self.i + 1) == Some(&b'/') => {
                    while self.i < b.len() && b[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                _ => break,
            }
        }
        let start = self.i;
        let c = b[start];
        let (kind, end) = match c {
            b'"' | b'\'' => (Kind::Str, skip_string(b, start, false)),
            b'`' => (Kind::Ident, skip_until(b, start + 1, b'`')),
            b'0'..=b'9' => (Kind::Number, skip_number(b, start)),
            b'.' if b.get(start + 1).is_some_and(u8::is_ascii_digit) => {
                (Kind::Number, skip_number(b, start))
            }
            c if c == b'_' || c.is_ascii_alphabetic() => {
                let mut j = start;
                while j < b.len() && (b[j] == b'_' || b[j].is_ascii_alphanumeric()) {
                    j += 1;
                }
                let word = &b[start..j];
                let prefix =
                    word.len() <= 2 && word.iter().all(|x| matches!(x, b'r' | b'R' | b'b' | b'B'));
                if prefix && matches!(b.get(j), Some(b'"' | b'\'')) {
                    // r"..", b"..", rb"..", br"..".
                    let raw = word.iter().any(|x| matches!(x, b'r' | b'R'));
                    (Kind::Str, skip_string(b, j, raw))
                } else {
                    (Kind::Ident, j)
                }
            }
            _ => {
                let two = b.get(start..start + 2).unwrap_or(&[]);
                let len = match two {
                    b"&&" | b"||" | b"==" | b"!=" | b"<=" | b">=" | b"?." | b"[?" => 2,
                    _ => 1,
                };
                (Kind::Punct, start + len)
            }
        };
        self.i = end.max(start + 1).min(b.len());
        Some(Token {
            kind,
            start,
            end: self.i,
        })
    }
}

/// Skips a string literal from its opening quote at `i` (single, double or
/// triple quoted; escapes skip a character unless `raw`); an unterminated
/// one ends at the end of its line (or of the rule, when triple quoted).
fn skip_string(b: &[u8], i: usize, raw: bool) -> usize {
    let q = b[i];
    let triple = b.get(i..i + 3).is_some_and(|t| t.iter().all(|&x| x == q));
    let mut j = if triple { i + 3 } else { i + 1 };
    while j < b.len() {
        match b[j] {
            b'\\' if !raw => j += 2,
            x if x == q => {
                if !triple {
                    return j + 1;
                }
                if b.get(j..j + 3).is_some_and(|t| t.iter().all(|&x| x == q)) {
                    return j + 3;
                }
                j += 1;
            }
            b'\n' | b'\r' if !triple => return j,
            _ => j += 1,
        }
    }
    b.len()
}

fn skip_until(b: &[u8], mut j: usize, q: u8) -> usize {
    while j < b.len() {
        if b[j] == q {
            return j + 1;
        }
        j += 1;
    }
    b.len()
}

/// Skips a number literal (decimal, hex, float with exponent, `u` suffix).
fn skip_number(b: &[u8], mut i: usize) -> usize {
    let digits = |b: &[u8], mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    if b[i] == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X')) {
        i += 2;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            i += 1;
        }
    } else {
        i = digits(b, i);
        if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i = digits(b, i + 1);
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            let mut j = i + 1;
            if matches!(b.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            if b.get(j).is_some_and(u8::is_ascii_digit) {
                i = digits(b, j);
            }
        }
    }
    if matches!(b.get(i), Some(b'u' | b'U')) {
        i += 1;
    }
    i
}

/// Why a rule was refused before parsing, in cel-go's words (reported
/// without a source location, as cel-go reports these).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refused(pub String);

/// One nested expression being scanned.
#[derive(Default)]
struct Frame {
    /// Counted operators on the current operand's path.
    links: usize,
    /// `?:` else branches opened here (each nests one more expression).
    conditionals: usize,
}

/// Checks a rule's size and nesting, in one pass over its text.
pub(super) fn check(rule: &str) -> Result<(), Refused> {
    let size = rule.chars().count();
    if size > MAX_CODE_POINTS {
        return Err(Refused(format!(
            "expression code point size exceeds limit: size: {size}, limit {MAX_CODE_POINTS}"
        )));
    }
    let bytes = rule.as_bytes();
    let mut frames = vec![Frame::default()];
    // What the frames below the top one contribute, as running sums.
    let (mut below_depth, mut below_nesting) = (0usize, 0usize);
    // Whether the previous token ends an operand (so `[` indexes, `-`
    // subtracts, `in` is an operator).
    let mut after_operand = false;
    for t in Tokens::new(rule) {
        let top = frames.len() - 1;
        let text = &bytes[t.start..t.end];
        let mut deeper = false;
        match (t.kind, text) {
            (Kind::Ident, b"in") if after_operand => {
                frames[top].links += 1;
                deeper = true;
                after_operand = false;
            }
            (Kind::Ident | Kind::Str | Kind::Number, _) => after_operand = true,
            (Kind::Punct, b"(" | b"[" | b"{" | b"[?") => {
                // An index counts itself (a method call was counted at
                // its `.`); every element inside is a nested expression.
                if text[0] == b'[' && after_operand {
                    frames[top].links += 1;
                }
                let f = &frames[top];
                below_depth += 1 + f.conditionals + f.links;
                below_nesting += 1 + f.conditionals;
                frames.push(Frame::default());
                deeper = true;
                after_operand = false;
            }
            (Kind::Punct, b")" | b"]" | b"}") => {
                if frames.len() > 1 {
                    frames.pop();
                    let f = &frames[frames.len() - 1];
                    below_depth -= 1 + f.conditionals + f.links;
                    below_nesting -= 1 + f.conditionals;
                }
                after_operand = true;
            }
            (Kind::Punct, b"," | b":" | b"&&" | b"||") => {
                // A new element, entry or branch; `&&`/`||` chains are
                // balanced by the parser.
                frames[top].links = 0;
                after_operand = false;
            }
            (Kind::Punct, b"?") => {
                frames[top].conditionals += 1;
                frames[top].links = 0;
                deeper = true;
                after_operand = false;
            }
            (Kind::Punct, b"-" | b"!") if !after_operand => {
                // Unary operators are not counted by cel-go.
            }
            (
                Kind::Punct,
                b"." | b"?." | b"==" | b"!=" | b"<" | b"<=" | b">" | b">=" | b"+" | b"-" | b"*"
                | b"/" | b"%",
            ) => {
                frames[top].links += 1;
                deeper = true;
                after_operand = false;
            }
            _ => after_operand = false,
        }
        if deeper {
            let f = &frames[frames.len() - 1];
            if below_depth + 1 + f.conditionals + f.links > MAX_RECURSION_DEPTH {
                return Err(Refused(format!(
                    "expression recursion limit exceeded: {MAX_RECURSION_DEPTH}"
                )));
            }
            if below_nesting + 1 + f.conditionals > MAX_NESTED_EXPRESSIONS {
                return Err(Refused(format!(
                    "expression recursion limit exceeded: {MAX_NESTED_EXPRESSIONS} nested expressions"
                )));
            }
        }
    }
    Ok(())
}

/// Byte offsets of a rule's field selections (the `.` of `a.b`, not of a
/// method call `a.b()`) and of its string literals, in source order: the
/// order a post-order walk of the parsed tree meets them in.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Anchors {
    pub selects: Vec<usize>,
    pub strings: Vec<usize>,
}

pub(super) fn anchors(rule: &str) -> Anchors {
    let bytes = rule.as_bytes();
    let tokens: Vec<Token> = Tokens::new(rule).collect();
    let mut out = Anchors::default();
    for (i, t) in tokens.iter().enumerate() {
        match (t.kind, &bytes[t.start..t.end]) {
            (Kind::Str, _) => out.strings.push(t.start),
            (Kind::Punct, b".") => {
                let name = tokens.get(i + 1).filter(|n| n.kind == Kind::Ident);
                let after = tokens.get(i + 2).map(|n| &bytes[n.start..n.end]);
                if name.is_some() && !matches!(after, Some(b"(" | b"{")) {
                    out.selects.push(t.start);
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(rule: &str) -> Option<String> {
        check(rule).err().map(|r| r.0)
    }

    #[test]
    fn deep_rules_are_refused_before_parsing() {
        let recursion = Some("expression recursion limit exceeded: 250".to_string());
        let nested = Some("expression recursion limit exceeded: 96 nested expressions".to_string());
        assert_eq!(
            refused(&("[".repeat(5000) + &"]".repeat(5000) + " == []")),
            nested
        );
        assert_eq!(
            refused(&("self".to_string() + &".a".repeat(5000) + " == 1")),
            recursion
        );
        assert_eq!(
            refused(&("[1]".to_string() + &"[0]".repeat(20000) + " == 1")),
            recursion
        );
        assert_eq!(refused(&("1".to_string() + &" + 1".repeat(300))), recursion);
        assert_eq!(refused(&"true ? 1 : ".repeat(200)), nested);
        assert_eq!(
            refused(&("size(".repeat(15000) + "\"\"" + &")".repeat(15000) + " == 0")),
            nested
        );
    }

    #[test]
    fn ordinary_rules_pass() {
        for rule in [
            "self.replicas <= self.maxReplicas",
            "self.all(x, x.name.startsWith('a') && x.ports.all(p, p > 0 && p < 65536))",
            "!has(self.a) || (self.a.size() > 0 ? self.a[0] == 'x' : true)",
            "self.l.map(x, x * 2).filter(y, y > 10).size() == 0",
            "'a.b(c)' == \"[[[\" && r'\\d+' != b'x' && 1.5e3 > .5",
            "// a comment (((\nself.x in [1, 2, 3]",
            // 100 conjuncts: balanced, not deep.
            &vec!["self.a == 1"; 100].join(" && "),
        ] {
            assert_eq!(check(rule), Ok(()), "{rule}");
        }
        // Exactly at the limits.
        assert_eq!(check(&("(".repeat(95) + "1" + &")".repeat(95))), Ok(()));
        assert!(check(&("(".repeat(96) + "1" + &")".repeat(96))).is_err());
        assert_eq!(check(&("self".to_string() + &".a".repeat(249))), Ok(()));
        assert!(check(&("self".to_string() + &".a".repeat(250))).is_err());
    }

    #[test]
    fn size_is_counted_in_code_points() {
        let rule = "'".to_string() + &"é".repeat(MAX_CODE_POINTS - 2) + "'";
        assert_eq!(check(&rule), Ok(()));
        assert_eq!(
            refused(&(rule + " ")),
            Some("expression code point size exceeds limit: size: 100001, limit 100000".into())
        );
    }

    #[test]
    fn anchors_are_selections_and_strings_in_source_order() {
        let rule = "self.a.f('x') == self.b && has(self.c) && \"y\".size() > 0";
        let a = anchors(rule);
        let at = |p: usize| &rule[p..p + 2];
        assert_eq!(
            a.selects.iter().map(|&p| at(p)).collect::<Vec<_>>(),
            [".a", ".b", ".c"]
        );
        assert_eq!(
            a.strings.iter().map(|&p| at(p)).collect::<Vec<_>>(),
            ["'x", "\"y"]
        );
    }
}
