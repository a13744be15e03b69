//! Go's text forms for the values whose JSON kube-apiserver writes with Go's
//! own formatting: `metav1.Time` (RFC 3339, seconds), `metav1.MicroTime`
//! (RFC 3339, microseconds), `time.Duration.String()`, and
//! `encoding/json`'s float64 numbers. Total functions: any input, no panic.

use serde_json::{Number, Value};

/// Seconds from 0001-01-01T00:00:00Z (Go's zero `time.Time`) to the Unix
/// epoch: `metav1.Time` writes `null` for that instant.
pub(super) const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// Formats a Unix time as `metav1.Time` does: UTC, whole seconds,
/// `2006-01-02T15:04:05Z`.
pub(super) fn rfc3339_seconds(unix_seconds: i64) -> String {
    let (date, time) = civil(unix_seconds);
    format!("{date}T{time}Z")
}

/// Formats a Unix time as `metav1.MicroTime` does:
/// `2006-01-02T15:04:05.000000Z` (microseconds truncated, not rounded).
pub(super) fn rfc3339_micros(unix_seconds: i64, nanos: u32) -> String {
    let (date, time) = civil(unix_seconds);
    format!("{date}T{time}.{:06}Z", nanos / 1000)
}

/// Normalizes `(seconds, nanos)` as Go's `time.Unix` does, so that
/// `0 <= nanos < 1e9`. Overflow wraps, as Go's int64 arithmetic does.
pub(super) fn normalize(seconds: i64, nanos: i64) -> (i64, u32) {
    let carry = nanos.div_euclid(1_000_000_000);
    let nanos = nanos.rem_euclid(1_000_000_000);
    // rem_euclid of a positive modulus is in 0..1e9.
    (seconds.wrapping_add(carry), nanos as u32)
}

/// `YYYY-MM-DD` and `hh:mm:ss` of a Unix time, proleptic Gregorian, UTC.
fn civil(unix_seconds: i64) -> (String, String) {
    let days = unix_seconds.div_euclid(86_400);
    let secs = unix_seconds.rem_euclid(86_400);
    // Days to civil date (H. Hinnant's algorithm); |days| <= 1.1e14, so no
    // step overflows i64.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let date = if year < 0 {
        format!("-{:04}-{month:02}-{day:02}", year.unsigned_abs())
    } else {
        format!("{year:04}-{month:02}-{day:02}")
    };
    let time = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    (date, time)
}

/// Go's `time.Duration(nanos).String()`: `1h2m3.5s`, `1.5ms`, `0s`.
pub(super) fn duration(nanos: i64) -> String {
    let negative = nanos < 0;
    let mut u = nanos.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (unit, precision) = match u {
            0 => return "0s".to_owned(),
            1..=999 => ("ns", 0),
            1_000..=999_999 => ("µs", 3),
            _ => ("ms", 6),
        };
        let fraction = fraction(&mut u, precision);
        out.push_str(&u.to_string());
        out.push_str(&fraction);
        out.push_str(unit);
    } else {
        let fraction = fraction(&mut u, 9);
        let seconds = u % 60;
        let minutes_total = u / 60;
        if minutes_total > 0 {
            let hours = minutes_total / 60;
            if hours > 0 {
                out.push_str(&format!("{hours}h"));
            }
            out.push_str(&format!("{}m", minutes_total % 60));
        }
        out.push_str(&format!("{seconds}{fraction}s"));
    }
    if negative {
        out.insert(0, '-');
    }
    out
}

/// Splits off the last `precision` decimal digits of `*v` as `.ddd` with
/// trailing zeros dropped (empty when they are all zero), as Go's
/// `fmtFrac` does.
fn fraction(v: &mut u64, precision: u32) -> String {
    let divisor = 10u64.pow(precision);
    let mut digits = *v % divisor;
    *v /= divisor;
    if digits == 0 {
        return String::new();
    }
    let mut width = precision as usize;
    while digits % 10 == 0 {
        digits /= 10;
        width -= 1;
    }
    format!(".{digits:0width$}")
}

/// A JSON number for a float, written the way Go's `encoding/json` would
/// read back: integral values as integers (`5`, not `5.0`). `None` for NaN
/// and infinities, which Go refuses to marshal.
pub(super) fn float_value(v: f64) -> Option<Value> {
    if !v.is_finite() {
        return None;
    }
    // Integral floats within i64 become integers, as Go prints them
    // without a fraction; beyond 2^63 they stay floats.
    if v.fract() == 0.0 && v.abs() < 9.2e18 {
        return Some(Value::Number(Number::from(v as i64)));
    }
    Number::from_f64(v).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_format_like_metav1_time_and_microtime() {
        assert_eq!(rfc3339_seconds(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_seconds(1_704_164_645), "2024-01-02T03:04:05Z");
        assert_eq!(rfc3339_seconds(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_seconds(-1), "1969-12-31T23:59:59Z");
        assert_eq!(rfc3339_seconds(GO_ZERO_TIME_UNIX), "0001-01-01T00:00:00Z");
        assert_eq!(rfc3339_seconds(253_402_300_799), "9999-12-31T23:59:59Z");
        assert_eq!(
            rfc3339_micros(1_704_164_645, 123_456_789),
            "2024-01-02T03:04:05.123456Z"
        );
        assert_eq!(
            rfc3339_micros(1_704_164_645, 0),
            "2024-01-02T03:04:05.000000Z"
        );
        // Extreme inputs format without panicking.
        assert!(rfc3339_seconds(i64::MAX).ends_with('Z'));
        assert!(rfc3339_seconds(i64::MIN).starts_with('-'));
    }

    #[test]
    fn nanos_normalize_like_go_time_unix() {
        assert_eq!(normalize(10, 1_500_000_000), (11, 500_000_000));
        assert_eq!(normalize(10, -1), (9, 999_999_999));
        assert_eq!(normalize(i64::MAX, 2_000_000_000), (i64::MIN + 1, 0));
    }

    #[test]
    fn durations_format_like_go() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(1), "1ns");
        assert_eq!(duration(1_500), "1.5µs");
        assert_eq!(duration(1_500_000), "1.5ms");
        assert_eq!(duration(100_000_000), "100ms");
        assert_eq!(duration(1_000_000_000), "1s");
        assert_eq!(duration(1_500_000_000), "1.5s");
        assert_eq!(duration(90_000_000_000), "1m30s");
        assert_eq!(duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(duration(3_723_000_000_001), "1h2m3.000000001s");
        assert_eq!(duration(-1_500_000_000), "-1.5s");
        assert_eq!(duration(i64::MIN), "-2562047h47m16.854775808s");
        assert_eq!(duration(i64::MAX), "2562047h47m16.854775807s");
    }

    #[test]
    fn floats_become_go_style_json_numbers() {
        assert_eq!(float_value(5.0), Some(Value::from(5)));
        assert_eq!(float_value(-0.5), Some(Value::from(-0.5)));
        assert_eq!(float_value(1e300), Some(Value::from(1e300)));
        assert_eq!(float_value(f64::NAN), None);
        assert_eq!(float_value(f64::INFINITY), None);
    }
}
