//! String `format` checks: the formats apiextensions-apiserver keeps in a
//! CRD schema (`supportedFormats` in pkg/apis/apiextensions/validation;
//! others are stripped and never validated) with the semantics of the
//! kube-openapi `strfmt` default registry.

use std::net::IpAddr;
use std::sync::LazyLock;

use base64::Engine as _;
use regex::Regex;

fn re(p: &str) -> Regex {
    Regex::new(p).expect("constant format regex compiles")
}

static UUID: LazyLock<Regex> =
    LazyLock::new(|| re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Regex> =
    LazyLock::new(|| re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static BSON_OBJECT_ID: LazyLock<Regex> = LazyLock::new(|| re("^[0-9a-fA-F]{24}$"));
static SSN: LazyLock<Regex> = LazyLock::new(|| re(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static HEX_COLOR: LazyLock<Regex> = LazyLock::new(|| re("^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGB_COLOR: LazyLock<Regex> = LazyLock::new(|| {
    let c = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*";
    re(&format!(r"^rgb\({c},{c},{c}\)$"))
});
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$",
    )
});
static TIME_PART: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});
static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| re(r#"^(?:[^<>@\s]*<)?[^<>@\s"]+@[^<>@\s]+\.?[^<>@\s]*>?$"#));
static DURATION_UNITS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:(\d+)\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)\s*)+$",
    )
});
static GO_DURATION: LazyLock<Regex> =
    LazyLock::new(|| re(r"^[-+]?(?:0|(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$"));

/// The normalized name strfmt registers a format under (`date-time` and
/// `datetime` are the same format).
fn normalize(format: &str) -> String {
    format
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether `value` is valid for `format`. `None` when the format is not one
/// kube-apiserver validates (the schema keeps it, but nothing checks it).
pub(crate) fn check(format: &str, value: &str) -> Option<bool> {
    let ok = match normalize(format).as_str() {
        "bsonobjectid" => BSON_OBJECT_ID.is_match(value),
        "uri" => is_uri(value),
        "email" => EMAIL.is_match(value),
        "hostname" => is_hostname(value),
        "ipv4" => value.parse::<IpAddr>().is_ok() && value.contains('.'),
        "ipv6" => value.parse::<IpAddr>().is_ok() && value.contains(':'),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uuid" => UUID.is_match(value),
        "uuid3" => UUID3.is_match(value),
        "uuid4" => UUID4.is_match(value),
        "uuid5" => UUID5.is_match(value),
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => {
            let digits: String = value.chars().filter(char::is_ascii_digit).collect();
            CREDIT_CARD.is_match(&digits)
        }
        "ssn" => SSN.is_match(value),
        "hexcolor" => HEX_COLOR.is_match(value),
        "rgbcolor" => RGB_COLOR.is_match(value),
        "byte" => is_base64(value),
        "password" => true,
        "date" => is_date(value),
        "duration" => GO_DURATION.is_match(value) || DURATION_UNITS.is_match(value.trim()),
        "datetime" => is_date_time(value),
        _ => return None,
    };
    Some(ok)
}

fn is_uri(v: &str) -> bool {
    // net/url.ParseRequestURI: an absolute URI or an absolute path.
    if v.is_empty() || v.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if v.starts_with('/') {
        return true;
    }
    match v.split_once(':') {
        Some((scheme, _)) => {
            let mut cs = scheme.chars();
            cs.next().is_some_and(|c| c.is_ascii_alphabetic())
                && cs.all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
        }
        None => false,
    }
}

fn is_hostname(v: &str) -> bool {
    if v.is_empty() || v.len() > 255 {
        return false;
    }
    v.trim_end_matches('.').split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.chars().all(|c| c.is_alphanumeric() || c == '-')
    })
}

fn is_cidr(v: &str) -> bool {
    let Some((ip, bits)) = v.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    !bits.is_empty()
        && bits.chars().all(|c| c.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|b| b <= max)
}

fn is_mac(v: &str) -> bool {
    let hex_groups = |sep: char, width: usize| -> bool {
        let groups: Vec<&str> = v.split(sep).collect();
        let n = groups.len();
        let count_ok = if width == 2 {
            n == 6 || n == 8 || n == 20
        } else {
            n == 3 || n == 4 || n == 10
        };
        count_ok
            && groups
                .iter()
                .all(|g| g.len() == width && g.chars().all(|c| c.is_ascii_hexdigit()))
    };
    hex_groups(':', 2) || hex_groups('-', 2) || hex_groups('.', 4)
}

fn isbn_digits(v: &str) -> String {
    v.chars().filter(|c| *c != ' ' && *c != '-').collect()
}

fn is_isbn10(v: &str) -> bool {
    let d = isbn_digits(v);
    if d.len() != 10 {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in d.chars().enumerate() {
        let n = match c {
            '0'..='9' => c as u32 - '0' as u32,
            'X' | 'x' if i == 9 => 10,
            _ => return false,
        };
        sum += (10 - i as u32) * n;
    }
    sum % 11 == 0
}

fn is_isbn13(v: &str) -> bool {
    let d = isbn_digits(v);
    if d.len() != 13 || !d.chars().all(|c| c.is_ascii_digit()) {
        return false;
    }
    let sum: u32 = d
        .chars()
        .enumerate()
        .map(|(i, c)| (c as u32 - '0' as u32) * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    sum % 10 == 0
}

fn is_base64(v: &str) -> bool {
    // encoding/base64.StdEncoding ignores CR and LF and does not insist on
    // zero trailing bits.
    let cleaned: String = v.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    engine.decode(cleaned.as_bytes()).is_ok()
}

/// `time.Parse("2006-01-02", v)`.
pub(crate) fn is_date(v: &str) -> bool {
    let b = v.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |s: &str| -> Option<u32> {
        if s.chars().all(|c| c.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    let (Some(y), Some(m), Some(d)) = (num(&v[0..4]), num(&v[5..7]), num(&v[8..10])) else {
        return false;
    };
    if !(1..=12).contains(&m) || d == 0 {
        return false;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    d <= days
}

/// strfmt `IsDateTime`: a full-date, `T`, and a time with a zone.
fn is_date_time(v: &str) -> bool {
    if v.len() < 4 {
        return false;
    }
    let lower = v.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    match TIME_PART.captures(parts[1]) {
        Some(c) => {
            let get = |i: usize| c.get(i).map_or("", |m| m.as_str());
            get(1) <= "23" && get(2) <= "59" && get(3) <= "59"
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn formats_follow_strfmt() {
        let cases = [
            ("date-time", "2024-01-02T03:04:05Z", true),
            ("date-time", "2024-01-02T03:04:05.123+02:00", true),
            ("date-time", "2024-01-02 03:04:05", false),
            ("date-time", "yesterday", false),
            ("datetime", "2024-02-30T00:00:00Z", false),
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123e4567", false),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("email", "a@example.com", true),
            ("email", "no-at-sign", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "::1", false),
            ("ipv6", "::1", true),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad.com", false),
            ("mac", "00:1a:2b:3c:4d:5e", true),
            ("duration", "1h30m", true),
            ("duration", "3 days", true),
            ("duration", "soon", false),
            ("hexcolor", "#fff", true),
            ("isbn10", "0321751043", true),
            ("isbn13", "978-0321751041", true),
            ("password", "anything", true),
        ];
        for (format, value, ok) in cases {
            assert_eq!(check(format, value), Some(ok), "{format} {value}");
        }
        // Formats kube-apiserver strips are never validated.
        assert_eq!(check("int32", "x"), None);
        assert_eq!(check("my-format", "x"), None);
    }
}
