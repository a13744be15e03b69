//! Cron schedules exactly as the reference operator reads them: robfig/cron
//! v1.2.0's `cron.ParseStandard` (what it accepts, its error texts byte for
//! byte, its descriptors and `@every`, its day-of-month/day-of-week star rule)
//! in front of the `croner` crate, which walks the calendar for the next time.
//!
//! Times are UTC, where the Go operator uses the manager's local zone.

mod descriptors;
mod fields;
mod go;
#[cfg(test)]
mod tests;

use std::fmt;
use std::time::Duration;

use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use jiff::tz::TimeZone;
use jiff::Timestamp;

use fields::{FieldBits, DOM, DOW, HOURS, MINUTES, MONTHS};

pub use go::quote;

/// Nanoseconds in a second.
const SECOND_NANOS: i128 = 1_000_000_000;

/// How many years past the first candidate instant robfig's `Next` looks
/// before it gives up and returns the zero time.
const YEARS_SEARCHED: i32 = 5;

/// A parsed schedule: robfig's `*SpecSchedule` or `ConstantDelaySchedule`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// A five-field spec or one of the predefined descriptors (`@daily` …).
    Spec(SpecSchedule),
    /// `@every <duration>`: the delay, at least a second, in whole seconds.
    Every(Duration),
}

/// A five-field spec: robfig's bitsets (with spec.go's star bit) and the
/// croner schedule built from their canonical form; no croner schedule when
/// the spec can never fire.
#[derive(Clone, Debug)]
pub struct SpecSchedule {
    bits: FieldBits,
    // Boxed: croner's pattern is a few hundred bytes, `Every` sixteen.
    cron: Option<Box<Cron>>,
}

/// Why a schedule was refused; its text is robfig/cron's, byte for byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// `cron.ParseStandard` of robfig/cron v1.2.0: five fields (minute, hour,
/// day of month, month, day of week) or a descriptor.
pub fn parse_standard(spec: &str) -> Result<Schedule, ParseError> {
    if spec.is_empty() {
        return Err(ParseError("Empty spec string".to_string()));
    }
    // Only a leading `@`, untrimmed, makes a descriptor.
    if spec.starts_with('@') {
        return descriptors::parse_descriptor(spec);
    }
    // Go's `strings.Fields` splits on the same Unicode white space.
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(ParseError(format!(
            "Expected exactly 5 fields, found {}: {spec}",
            fields.len()
        )));
    }
    // The first field in error wins.
    let field = |text: &str, bounds| fields::get_field(text, bounds).map_err(ParseError);
    let bits = FieldBits {
        minute: field(fields[0], &MINUTES)?,
        hour: field(fields[1], &HOURS)?,
        dom: field(fields[2], &DOM)?,
        month: field(fields[3], &MONTHS)?,
        dow: field(fields[4], &DOW)?,
    };
    SpecSchedule::new(bits).map(Schedule::Spec)
}

impl Schedule {
    /// robfig's `Next`: the first activation strictly after `after`, in UTC.
    /// `None` where robfig gives the zero time: a spec with no activation
    /// within five years (counted from the year of the next whole second).
    /// Also `None` where robfig would answer but this cannot: a spec searched
    /// from before year 1 or past year 5000 (croner's range), or a result
    /// jiff cannot represent.
    pub fn next(&self, after: Timestamp) -> Option<Timestamp> {
        match self {
            Schedule::Spec(spec) => spec.next(after),
            // `t.Add(delay - t.Nanosecond())`.
            Schedule::Every(delay) => {
                let nanos = after.as_nanosecond();
                let whole_second = nanos - nanos.rem_euclid(SECOND_NANOS);
                let delay = i128::try_from(delay.as_nanos()).ok()?;
                Timestamp::from_nanosecond(whole_second.checked_add(delay)?).ok()
            }
        }
    }
}

impl SpecSchedule {
    /// Builds the croner schedule for `bits`.
    fn new(bits: FieldBits) -> Result<SpecSchedule, ParseError> {
        let cron = match fields::canonical(&bits) {
            None => None,
            Some((pattern, dom_and_dow)) => Some(Box::new(
                CronParser::builder()
                    .seconds(Seconds::Disallowed)
                    .year(Year::Disallowed)
                    .dom_and_dow(dom_and_dow)
                    .build()
                    .parse(&pattern)
                    // The canonical pattern is plain numeric lists within
                    // croner's bounds; this is a guard, not an expected path.
                    .map_err(|err| {
                        ParseError(format!("croner refused the pattern {pattern:?}: {err}"))
                    })?,
            )),
        };
        Ok(SpecSchedule { bits, cron })
    }

    fn next(&self, after: Timestamp) -> Option<Timestamp> {
        let cron = self.cron.as_ref()?;
        // robfig starts at the next whole second; croner steps off the
        // origin's second the same way (exclusive search, sub-seconds dropped).
        let second = i64::try_from(after.as_nanosecond().div_euclid(SECOND_NANOS)).ok()?;
        let origin = Timestamp::from_second(second).ok()?.to_zoned(TimeZone::UTC);
        let first = Timestamp::from_second(second.checked_add(1)?).ok()?;
        let first_year = i32::from(first.to_zoned(TimeZone::UTC).year());
        // croner searches years 1 to 5000 only; before year 1 it would skip
        // ahead to it, a wrong answer rather than none.
        if first_year < 1 {
            return None;
        }
        let year_limit = first_year + YEARS_SEARCHED;
        let next = cron.find_next_occurrence(&origin, false).ok()?;
        (i32::from(next.year()) <= year_limit).then(|| next.timestamp())
    }
}

/// Two specs are equal when robfig's bitsets are.
impl PartialEq for SpecSchedule {
    fn eq(&self, other: &Self) -> bool {
        self.bits == other.bits
    }
}

impl Eq for SpecSchedule {}
