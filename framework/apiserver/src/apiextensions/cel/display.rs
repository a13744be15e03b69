//! Compile errors laid out as cel-go lays them out
//! (`common.Errors.ToDisplayString`, `common/errors.go` and
//! `common/error.go`): `ERROR: <input>:LINE:COLUMN: message`, then the
//! source line and a caret under the column, sorted by position; at most
//! 100 errors (`maxErrorsToReport`), then `N more errors were truncated`;
//! no source line when it is longer than 16,384 bytes
//! (`maxSnippetLength`). These bounds are what keeps an error from
//! repeating a long rule many times over. The `cel` crate's own
//! formatting is not used: it panics past column 65,535.

/// Errors shown at most (cel-go `maxErrorsToReport`).
const MAX_ERRORS: usize = 100;
/// The longest source line shown under an error (cel-go
/// `maxSnippetLength`, in bytes).
const MAX_SNIPPET_BYTES: usize = 16_384;

/// An error at a place in the rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Located {
    /// 1-based line and 0-based column in code points; `None` for errors
    /// about the whole rule (cel-go's `NoLocation`, shown as `-1:0`).
    pub at: Option<(usize, usize)>,
    pub message: String,
}

impl Located {
    pub fn nowhere(message: impl Into<String>) -> Self {
        Located {
            at: None,
            message: message.into(),
        }
    }

    /// An error at a byte offset of `source`.
    pub fn at_offset(source: &str, offset: usize, message: impl Into<String>) -> Self {
        let before = &source[..offset.min(source.len())];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count();
        Located {
            at: Some((line, column)),
            message: message.into(),
        }
    }
}

/// The errors as one message.
pub(super) fn display(source: &str, mut errors: Vec<Located>) -> String {
    // Stable: errors at one place keep their order.
    errors.sort_by_key(|e| e.at.map_or((0, 0), |(l, c)| (l, c + 1)));
    let total = errors.len();
    let mut out: Vec<String> = errors
        .iter()
        .take(MAX_ERRORS)
        .map(|e| one(source, e))
        .collect();
    if total > MAX_ERRORS {
        out.push(format!("{} more errors were truncated", total - MAX_ERRORS));
    }
    out.join("\n")
}

fn one(source: &str, e: &Located) -> String {
    let Some((line, column)) = e.at else {
        return format!("ERROR: <input>:-1:0: {}", e.message);
    };
    let mut text = format!("ERROR: <input>:{line}:{}: {}", column + 1, e.message);
    let snippet = source.split('\n').nth(line.wrapping_sub(1));
    if let Some(snippet) = snippet.filter(|s| s.len() <= MAX_SNIPPET_BYTES) {
        let snippet = snippet.replace('\t', " ");
        text.push_str("\n | ");
        text.push_str(&snippet);
        text.push_str("\n | ");
        let mut chars = snippet.chars();
        for _ in 0..column {
            match chars.next() {
                Some(c) if c.len_utf8() > 1 => text.push('\u{ff0e}'),
                Some(_) => text.push('.'),
                None => break,
            }
        }
        match chars.next() {
            Some(c) if c.len_utf8() > 1 => text.push('\u{ff3e}'),
            _ => text.push('^'),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_point_at_their_column() {
        let src = "self.nope == 1";
        let got = display(
            src,
            vec![Located::at_offset(src, 4, "undefined field 'nope'")],
        );
        assert_eq!(
            got,
            "ERROR: <input>:1:5: undefined field 'nope'\n | self.nope == 1\n | ....^"
        );
        assert_eq!(
            display(
                "",
                vec![Located::nowhere("expression recursion limit exceeded: 250")]
            ),
            "ERROR: <input>:-1:0: expression recursion limit exceeded: 250"
        );
    }

    #[test]
    fn long_lines_are_not_repeated_and_errors_are_capped() {
        let src = " ".repeat(65_540) + "1 +";
        let got = display(
            &src,
            vec![Located::at_offset(&src, src.len(), "Syntax error")],
        );
        assert_eq!(got, "ERROR: <input>:1:65544: Syntax error");
        let many = (0..150)
            .map(|i| Located::at_offset("x", 0, format!("e{i}")))
            .collect();
        let got = display("x", many);
        assert_eq!(got.lines().filter(|l| l.starts_with("ERROR")).count(), 100);
        assert!(got.ends_with("\n50 more errors were truncated"), "{got}");
    }

    #[test]
    fn wide_characters_get_wide_dots() {
        let src = "'é' + x";
        let got = display(
            src,
            vec![Located::at_offset(src, src.find('x').unwrap(), "m")],
        );
        assert!(got.ends_with("\n | .\u{ff0e}....^"), "{got}");
    }
}
