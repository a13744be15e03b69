//! Cron schedules as the CronJob controller reads them (robfig/cron's
//! standard parser): five fields (minute, hour, day of month, month, day
//! of week) with `*`, `?`, lists, ranges, steps and month/day names, or a
//! macro (`@hourly`, `@daily`/`@midnight`, `@weekly`, `@monthly`,
//! `@yearly`/`@annually`); when both day fields are restricted, either
//! may match. Times are civil times in the CronJob's time zone.

use jiff::civil::DateTime;
use jiff::ToSpan;

/// A parsed schedule: the allowed values of each field.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Schedule {
    minutes: Vec<bool>,
    hours: Vec<bool>,
    days: Vec<bool>,
    months: Vec<bool>,
    weekdays: Vec<bool>,
    dom_star: bool,
    dow_star: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn value(text: &str, names: &[&str], offset: u32) -> Result<u32, String> {
    if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
        return Ok(i as u32 + offset);
    }
    text.parse()
        .map_err(|_| format!("failed to parse int from {text}"))
}

fn field(
    text: &str,
    min: u32,
    max: u32,
    names: &[&str],
    name_offset: u32,
) -> Result<(Vec<bool>, bool), String> {
    let mut allowed = vec![false; max as usize + 1];
    let star = text == "*" || text == "?";
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (
                r,
                s.parse::<u32>()
                    .map_err(|_| format!("failed to parse int from {s}"))?,
            ),
            None => (part, 1),
        };
        if step == 0 {
            return Err(format!("step of range should be a positive number: {part}"));
        }
        let (lo, hi) = if range == "*" || range == "?" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a, names, name_offset)?, value(b, names, name_offset)?)
        } else {
            let v = value(range, names, name_offset)?;
            (v, if part.contains('/') { max } else { v })
        };
        if lo < min || hi > max || lo > hi {
            return Err(format!("end of range ({hi}) above maximum ({max}): {part}"));
        }
        let mut v = lo;
        while v <= hi {
            allowed[v as usize] = true;
            v += step;
        }
    }
    Ok((allowed, star))
}

impl Schedule {
    /// Parses a schedule, with kube's error wording.
    pub fn parse(spec: &str) -> Result<Schedule, String> {
        let spec = match spec.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let parts: Vec<&str> = spec.split_whitespace().collect();
        if parts.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields, found {}: {spec}",
                parts.len()
            ));
        }
        let (minutes, _) = field(parts[0], 0, 59, &[], 0)?;
        let (hours, _) = field(parts[1], 0, 23, &[], 0)?;
        let (days, dom_star) = field(parts[2], 1, 31, &[], 0)?;
        let (months, _) = field(parts[3], 1, 12, &MONTHS, 1)?;
        let (mut weekdays, dow_star) = field(parts[4].replace('7', "0").as_str(), 0, 6, &DAYS, 0)?;
        weekdays.resize(7, false);
        Ok(Schedule {
            minutes,
            hours,
            days,
            months,
            weekdays,
            dom_star,
            dow_star,
        })
    }

    fn day_matches(&self, t: DateTime) -> bool {
        let dom = self.days[t.day() as usize];
        let dow = self.weekdays[t.weekday().to_sunday_zero_offset() as usize];
        if self.dom_star || self.dow_star {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// The first activation strictly after `after` (within five years).
    pub fn next(&self, after: DateTime) -> Option<DateTime> {
        let mut t = after
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?
            .checked_add(1.minute())
            .ok()?;
        let limit = after.checked_add(5.years()).ok()?;
        while t <= limit {
            if !self.months[t.month() as usize] {
                t = t
                    .first_of_month()
                    .checked_add(1.month())
                    .ok()?
                    .start_of_day();
                continue;
            }
            if !self.day_matches(t) {
                t = t.start_of_day().checked_add(1.day()).ok()?;
                continue;
            }
            if !self.hours[t.hour() as usize] {
                t = t
                    .with()
                    .minute(0)
                    .build()
                    .ok()?
                    .checked_add(1.hour())
                    .ok()?;
                continue;
            }
            if !self.minutes[t.minute() as usize] {
                t = t.checked_add(1.minute()).ok()?;
                continue;
            }
            return Some(t);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    #[test]
    fn parses_and_steps() {
        let s = Schedule::parse("*/15 9-17 * * mon-fri").unwrap();
        let sat = date(2026, 11, 28).at(10, 0, 0, 0);
        assert_eq!(s.next(sat), Some(date(2026, 11, 30).at(9, 0, 0, 0)));
        let mon = date(2026, 11, 30).at(9, 0, 30, 0);
        assert_eq!(s.next(mon), Some(date(2026, 11, 30).at(9, 15, 0, 0)));
        let h = Schedule::parse("@hourly").unwrap();
        assert_eq!(h.next(mon), Some(date(2026, 11, 30).at(10, 0, 0, 0)));
        assert!(Schedule::parse("* * *").is_err());
        assert!(Schedule::parse("61 * * * *").is_err());
        // Both day fields restricted: either matches.
        let d = Schedule::parse("0 0 1 * sun").unwrap();
        assert_eq!(
            d.next(date(2026, 11, 25).at(0, 0, 0, 0)),
            Some(date(2026, 11, 29).at(0, 0, 0, 0))
        );
    }
}
