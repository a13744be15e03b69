//! The few pieces of Go's standard library whose exact behaviour shows through
//! robfig/cron's messages: `strconv.Atoi`, `time.ParseDuration` (with the
//! `time` package's own quoting) and `strconv.Quote`.

use std::fmt::Write as _;

/// 2⁶³: the largest magnitude a Go `time.Duration` may reach before its sign
/// is applied, and one past the largest `int`.
const TWO_63: u64 = 1 << 63;

/// Go's `strconv.Atoi` on a 64-bit platform. The error is the `*NumError`
/// text: `strconv.Atoi: parsing "<s>": invalid syntax` or `value out of range`.
pub(crate) fn atoi(s: &str) -> Result<i64, String> {
    let num_error = |reason: &str| format!("strconv.Atoi: parsing {}: {reason}", quote(s));
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return Err(num_error("invalid syntax"));
    }
    // ParseUint reads left to right: whichever comes first, a byte that is not
    // a digit or an overflow, decides the error.
    let mut magnitude: u64 = 0;
    for byte in digits.bytes() {
        if !byte.is_ascii_digit() {
            return Err(num_error("invalid syntax"));
        }
        magnitude = match magnitude
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(byte - b'0')))
        {
            Some(m) => m,
            None => return Err(num_error("value out of range")),
        };
    }
    let limit = if negative { TWO_63 } else { TWO_63 - 1 };
    if magnitude > limit {
        return Err(num_error("value out of range"));
    }
    let signed = i128::from(magnitude);
    let value = if negative { -signed } else { signed };
    i64::try_from(value).map_err(|_| num_error("value out of range"))
}

/// Go's `time.ParseDuration` as current Go writes it (a `uint64` sum that
/// admits `-9223372036854775808ns`), in signed nanoseconds.
///
/// The grammar is `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` or `0`; the errors are
/// `time: invalid duration "<s>"`, `time: missing unit in duration "<s>"` and
/// `time: unknown unit "<u>" in duration "<s>"`, quoted the `time` package's way.
pub(crate) fn parse_duration(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", time_quote(orig));
    let mut s = orig;
    let mut negative = false;
    if let Some(sign @ (b'-' | b'+')) = s.as_bytes().first() {
        negative = *sign == b'-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        let first = s.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        let (mut value, rest) = leading_int(s).ok_or_else(invalid)?;
        let before_point = rest.len() != s.len();
        s = rest;
        let (mut fraction, mut scale, mut after_point) = (0u64, 1f64, false);
        if let Some(rest) = s.strip_prefix('.') {
            let (f, sc, rest_after) = leading_fraction(rest);
            (fraction, scale, after_point) = (f, sc, rest_after.len() != rest.len());
            s = rest_after;
        }
        if !before_point && !after_point {
            return Err(invalid());
        }
        let unit_len = s
            .bytes()
            .position(|b| b == b'.' || b.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(format!(
                "time: missing unit in duration {}",
                time_quote(orig)
            ));
        }
        let (unit_name, rest) = s.split_at(unit_len);
        s = rest;
        let unit = unit_nanos(unit_name).ok_or_else(|| {
            format!(
                "time: unknown unit {} in duration {}",
                time_quote(unit_name),
                time_quote(orig)
            )
        })?;
        if value > TWO_63 / unit {
            return Err(invalid());
        }
        value *= unit;
        if fraction > 0 {
            // Go computes the fraction in float64, truncating toward zero.
            value += (fraction as f64 * (unit as f64 / scale)) as u64;
            if value > TWO_63 {
                return Err(invalid());
            }
        }
        // Go's uint64 addition wraps: two terms of 2⁶³ sum to 0 and pass.
        total = total.wrapping_add(value);
        if total > TWO_63 {
            return Err(invalid());
        }
    }
    if negative {
        return Ok((-i128::from(total)) as i64);
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// The nanoseconds in one of Go's duration units.
fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60 * 1_000_000_000,
        "h" => 3_600 * 1_000_000_000,
        _ => return None,
    })
}

/// `time.leadingInt`: the leading digits, or `None` past 2⁶³.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let mut x: u64 = 0;
    for byte in s[..digits].bytes() {
        if x > TWO_63 / 10 {
            return None;
        }
        x = x * 10 + u64::from(byte - b'0');
        if x > TWO_63 {
            return None;
        }
    }
    Some((x, &s[digits..]))
}

/// `time.leadingFraction`: the leading digits and their scale, which stops
/// gaining precision (without failing) once another digit would overflow.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (mut x, mut scale, mut overflow) = (0u64, 1f64, false);
    for byte in s[..digits].bytes() {
        if overflow {
            continue;
        }
        if x > (TWO_63 - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(byte - b'0');
        if y > TWO_63 {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[digits..])
}

/// The `time` package's private `quote`: bytes of non-ASCII characters and of
/// controls below a space become `\xNN`; `"` and `\` are backslashed.
fn time_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if !c.is_ascii() || c < ' ' {
            let mut utf8 = [0u8; 4];
            for byte in c.encode_utf8(&mut utf8).bytes() {
                let _ = write!(out, "\\x{byte:02x}");
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.Quote`: a double-quoted Go string literal. Printable
/// characters stay as they are; `\a \b \f \n \r \t \v` keep their short
/// escapes; other controls below U+0080 become `\xNN`; any other character
/// that is not printable becomes `\uNNNN` or `\UNNNNNNNN`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if u32::from(c) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\U{:08x}", u32::from(c));
            }
        }
    }
    out.push('"');
    out
}

/// Go's `unicode.IsPrint` (letters, marks, numbers, punctuation, symbols and
/// the ASCII space), told by exclusion since Rust has no category tables:
/// controls, separators other than U+0020, format characters (Unicode 15),
/// private use, noncharacters and the wholly unassigned planes are not
/// printable. A code point unassigned inside an otherwise assigned block is
/// the one case this takes as printable where Go does not.
fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let format = matches!(
        u32::from(c),
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    );
    let code = u32::from(c);
    let private_use = matches!(code, 0xE000..=0xF8FF | 0xF0000..=0x10FFFF);
    let noncharacter = matches!(code, 0xFDD0..=0xFDEF) || code & 0xFFFE == 0xFFFE;
    let unassigned_plane = matches!(
        code,
        0x40000..=0xDFFFF | 0xE0000 | 0xE0002..=0xE001F | 0xE0080..=0xE00FF | 0xE01F0..=0xEFFFF
    );
    !(format || private_use || noncharacter || unassigned_plane)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoi_accepts_what_go_accepts() {
        assert_eq!(atoi("0"), Ok(0));
        assert_eq!(atoi("+5"), Ok(5));
        assert_eq!(atoi("007"), Ok(7));
        assert_eq!(atoi("-12"), Ok(-12));
        assert_eq!(atoi("-0"), Ok(0));
        assert_eq!(atoi("9223372036854775807"), Ok(i64::MAX));
        assert_eq!(atoi("-9223372036854775808"), Ok(i64::MIN));
    }

    #[test]
    fn atoi_errors_are_go_num_errors() {
        let syntax = |s: &str, q: &str| {
            assert_eq!(
                atoi(s),
                Err(format!("strconv.Atoi: parsing {q}: invalid syntax")),
                "{s:?}"
            );
        };
        syntax("", r#""""#);
        syntax("+", r#""+""#);
        syntax("-", r#""-""#);
        syntax("1a", r#""1a""#);
        syntax(" 1", r#"" 1""#);
        syntax("1_000", r#""1_000""#);
        syntax("0x10", r#""0x10""#);
        syntax("++1", r#""++1""#);
        syntax("x\"y", r#""x\"y""#);
        syntax("é", r#""é""#);
        let range = |s: &str| {
            assert_eq!(
                atoi(s),
                Err(format!("strconv.Atoi: parsing \"{s}\": value out of range")),
            );
        };
        range("9223372036854775808");
        range("-9223372036854775809");
        range("99999999999999999999");
        // The overflow is met before the bad byte, so it wins.
        range("99999999999999999999x");
        syntax("9x9999999999999999999", r#""9x9999999999999999999""#);
    }

    #[test]
    fn parse_duration_follows_go() {
        let ok = |s: &str, ns: i64| assert_eq!(parse_duration(s), Ok(ns), "{s:?}");
        ok("0", 0);
        ok("-0", 0);
        ok("+0", 0);
        ok("0s", 0);
        ok("1h30m", 5_400_000_000_000);
        ok("500ms", 500_000_000);
        ok("1.5h", 5_400_000_000_000);
        ok(".5s", 500_000_000);
        ok("1.s", 1_000_000_000);
        ok("-1.5m", -90_000_000_000);
        ok("1µs", 1_000);
        ok("1μs", 1_000);
        ok("1us2ns", 1_002);
        ok("3h2h", 18_000_000_000_000);
        ok("9223372036854775807ns", i64::MAX);
        ok("-9223372036854775808ns", i64::MIN);
        ok("0.100000000000000000000h", 360_000_000_000);
        ok("0.830103483285477580700h", 2_988_372_539_827);
        ok("9223372036854775808ns9223372036854775808ns", 0);

        let err = |s: &str, msg: &str| assert_eq!(parse_duration(s), Err(msg.to_string()));
        err("", r#"time: invalid duration """#);
        err("-", r#"time: invalid duration "-""#);
        err("1", r#"time: missing unit in duration "1""#);
        err("1h1", r#"time: missing unit in duration "1h1""#);
        err("Xm", r#"time: invalid duration "Xm""#);
        err(".s", r#"time: invalid duration ".s""#);
        err("5q", r#"time: unknown unit "q" in duration "5q""#);
        err("5 m", r#"time: unknown unit " m" in duration "5 m""#);
        err("1H", r#"time: unknown unit "H" in duration "1H""#);
        err(
            "9223372036854775808ns",
            r#"time: invalid duration "9223372036854775808ns""#,
        );
        err("3000000h", r#"time: invalid duration "3000000h""#);
        err(
            "9223372036854775808000ns",
            r#"time: invalid duration "9223372036854775808000ns""#,
        );
        err(
            "1é",
            r#"time: unknown unit "\xc3\xa9" in duration "1\xc3\xa9""#,
        );
        err("\"\t", r#"time: invalid duration "\"\x09""#);
    }

    #[test]
    fn quote_follows_strconv_quote() {
        assert_eq!(quote("abc"), r#""abc""#);
        assert_eq!(quote(""), r#""""#);
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("\u{7}\u{8}\u{c}\n\r\t\u{b}"), r#""\a\b\f\n\r\t\v""#);
        assert_eq!(quote("\u{0}\u{1b}\u{7f}"), r#""\x00\x1b\x7f""#);
        assert_eq!(quote("\u{85}\u{a0}\u{2028}"), r#""\u0085\u00a0\u2028""#);
        assert_eq!(quote("\u{ad}\u{200b}\u{feff}"), r#""\u00ad\u200b\ufeff""#);
        assert_eq!(quote("\u{e000}\u{fffe}"), r#""\ue000\ufffe""#);
        assert_eq!(quote("\u{f0000}\u{e0001}"), r#""\U000f0000\U000e0001""#);
        assert_eq!(
            quote("héllo, 世界 😀 \u{fffd}"),
            "\"héllo, 世界 😀 \u{fffd}\""
        );
        assert_eq!(quote("\u{301}"), "\"\u{301}\"");
    }
}
