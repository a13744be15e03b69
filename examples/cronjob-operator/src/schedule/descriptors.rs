//! robfig/cron v1.2.0's `parseDescriptor`: the predefined schedules
//! (`@yearly` … `@hourly`, matched exactly and case-sensitively) as bitsets
//! built the way parser.go builds them, and `@every <duration>`.

use std::time::Duration;

use super::fields::{all, FieldBits, DOM, DOW, HOURS, MONTHS};
use super::{go, ParseError, Schedule, SpecSchedule};

/// Nanoseconds in a second, Go's `time.Second`.
const SECOND_NANOS: i64 = 1_000_000_000;

/// Parses a spec that starts with `@`.
pub(crate) fn parse_descriptor(descriptor: &str) -> Result<Schedule, ParseError> {
    // Each descriptor fixes its leading fields at their minimum; the others
    // are `all(...)`, star bit included, as in parser.go.
    let (first_minute, first_hour, first_dom, first_month, sunday) = (1, 1, 1 << 1, 1 << 1, 1);
    let bits = match descriptor {
        "@yearly" | "@annually" => Some(FieldBits {
            minute: first_minute,
            hour: first_hour,
            dom: first_dom,
            month: first_month,
            dow: all(&DOW),
        }),
        "@monthly" => Some(FieldBits {
            minute: first_minute,
            hour: first_hour,
            dom: first_dom,
            month: all(&MONTHS),
            dow: all(&DOW),
        }),
        "@weekly" => Some(FieldBits {
            minute: first_minute,
            hour: first_hour,
            dom: all(&DOM),
            month: all(&MONTHS),
            dow: sunday,
        }),
        "@daily" | "@midnight" => Some(FieldBits {
            minute: first_minute,
            hour: first_hour,
            dom: all(&DOM),
            month: all(&MONTHS),
            dow: all(&DOW),
        }),
        "@hourly" => Some(FieldBits {
            minute: first_minute,
            hour: all(&HOURS),
            dom: all(&DOM),
            month: all(&MONTHS),
            dow: all(&DOW),
        }),
        _ => None,
    };
    if let Some(bits) = bits {
        return SpecSchedule::new(bits).map(Schedule::Spec);
    }

    if let Some(duration) = descriptor.strip_prefix("@every ") {
        let nanos = go::parse_duration(duration)
            .map_err(|err| ParseError(format!("Failed to parse duration {descriptor}: {err}")))?;
        return Ok(Schedule::Every(every(nanos)));
    }

    Err(ParseError(format!("Unrecognized descriptor: {descriptor}")))
}

/// `cron.Every`: at least a second (negative durations included), truncated
/// to whole seconds.
fn every(nanos: i64) -> Duration {
    let nanos = nanos.max(SECOND_NANOS);
    Duration::from_secs(nanos.unsigned_abs() / SECOND_NANOS.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_is_at_least_a_second_in_whole_seconds() {
        assert_eq!(every(0), Duration::from_secs(1));
        assert_eq!(every(-5 * SECOND_NANOS), Duration::from_secs(1));
        assert_eq!(every(i64::MIN), Duration::from_secs(1));
        assert_eq!(every(500_000_000), Duration::from_secs(1));
        assert_eq!(every(1_999_999_999), Duration::from_secs(1));
        assert_eq!(every(90 * SECOND_NANOS), Duration::from_secs(90));
        assert_eq!(every(i64::MAX), Duration::from_secs(9_223_372_036));
    }
}
