//! The schedule module against robfig/cron v1.2.0: its messages, what it
//! accepts, hand-worked next times, and a differential test against a literal
//! port of spec.go's `Next` over the same bitsets.

use std::time::Duration;

use jiff::civil::{date, DateTime};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};
use proptest::prelude::*;

use super::fields::{all, get_bits, FieldBits, STAR_BIT};
use super::fields::{DOM, DOW, HOURS, MINUTES, MONTHS};
use super::{parse_standard, Schedule, SpecSchedule};

fn bits(spec: &str) -> FieldBits {
    match parse_standard(spec) {
        Ok(Schedule::Spec(SpecSchedule { bits, .. })) => bits,
        other => panic!("{spec:?} gave {other:?}"),
    }
}

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn next(spec: &str, after: &str) -> Option<Timestamp> {
    parse_standard(spec).unwrap().next(ts(after))
}

// (a) One row per message kind, derived from parser.go, strconv and time.
#[test]
fn messages_are_robfigs() {
    let table = [
        ("", "Empty spec string"),
        (
            "invalid-cron-schedule",
            "Expected exactly 5 fields, found 1: invalid-cron-schedule",
        ),
        ("* * * *", "Expected exactly 5 fields, found 4: * * * *"),
        ("* * * * * *", "Expected exactly 5 fields, found 6: * * * * * *"),
        (" @hourly", "Expected exactly 5 fields, found 1:  @hourly"),
        ("@HOURLY", "Unrecognized descriptor: @HOURLY"),
        ("@every", "Unrecognized descriptor: @every"),
        ("@yearly ", "Unrecognized descriptor: @yearly "),
        (
            "@every Xm",
            r#"Failed to parse duration @every Xm: time: invalid duration "Xm""#,
        ),
        (
            "@every ",
            r#"Failed to parse duration @every : time: invalid duration """#,
        ),
        (
            "@every 1",
            r#"Failed to parse duration @every 1: time: missing unit in duration "1""#,
        ),
        (
            "@every 5q",
            r#"Failed to parse duration @every 5q: time: unknown unit "q" in duration "5q""#,
        ),
        (
            "@every  5m",
            r#"Failed to parse duration @every  5m: time: invalid duration " 5m""#,
        ),
        ("60 * * * *", "End of range (60) above maximum (59): 60"),
        ("* 24 * * *", "End of range (24) above maximum (23): 24"),
        ("* * 0 * *", "Beginning of range (0) below minimum (1): 0"),
        ("* * * 0 *", "Beginning of range (0) below minimum (1): 0"),
        ("* * * 13 *", "End of range (13) above maximum (12): 13"),
        ("5-3 * * * *", "Beginning of range (5) beyond end of range (3): 5-3"),
        // The range is checked before the step.
        ("5-3/0 * * * *", "Beginning of range (5) beyond end of range (3): 5-3/0"),
        ("*/0 * * * *", "Step of range should be a positive number: */0"),
        ("*/-0 * * * *", "Step of range should be a positive number: */-0"),
        ("*//2 * * * *", "Too many slashes: *//2"),
        ("1/2/3 * * * *", "Too many slashes: 1/2/3"),
        ("5--5 * * * *", "Too many hyphens: 5--5"),
        // Hyphens are counted before slashes, and only once the start parsed.
        ("5--5/2/3 * * * *", "Too many hyphens: 5--5/2/3"),
        (
            "x-5 * * * *",
            r#"Failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax"#,
        ),
        (
            "x/2/3 * * * *",
            r#"Failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax"#,
        ),
        (
            "-1 * * * *",
            r#"Failed to parse int from : strconv.Atoi: parsing "": invalid syntax"#,
        ),
        (
            "* * * * 5/",
            r#"Failed to parse int from : strconv.Atoi: parsing "": invalid syntax"#,
        ),
        ("*/-12 * * * *", "Negative number (-12) not allowed: -12"),
        ("5/-012 * * * *", "Negative number (-12) not allowed: -012"),
        (
            "99999999999999999999 * * * *",
            r#"Failed to parse int from 99999999999999999999: strconv.Atoi: parsing "99999999999999999999": value out of range"#,
        ),
        ("* * * * 7", "End of range (7) above maximum (6): 7"),
        ("0 0 * * 1-7", "End of range (7) above maximum (6): 1-7"),
        (
            "* * * * monday",
            r#"Failed to parse int from monday: strconv.Atoi: parsing "monday": invalid syntax"#,
        ),
        (
            "* * * jan-x *",
            r#"Failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax"#,
        ),
        (
            "mon * * * *",
            r#"Failed to parse int from mon: strconv.Atoi: parsing "mon": invalid syntax"#,
        ),
        (
            "* * * * jan",
            r#"Failed to parse int from jan: strconv.Atoi: parsing "jan": invalid syntax"#,
        ),
        (
            "0 0 L * *",
            r#"Failed to parse int from L: strconv.Atoi: parsing "L": invalid syntax"#,
        ),
        (
            "0 0 15W * *",
            r#"Failed to parse int from 15W: strconv.Atoi: parsing "15W": invalid syntax"#,
        ),
        (
            "0 0 * * 5#2",
            r#"Failed to parse int from 5#2: strconv.Atoi: parsing "5#2": invalid syntax"#,
        ),
        (
            "a\"b * * * *",
            r#"Failed to parse int from a"b: strconv.Atoi: parsing "a\"b": invalid syntax"#,
        ),
        (
            "\u{0}\u{ad} * * * *",
            "Failed to parse int from \u{0}\u{ad}: strconv.Atoi: parsing \"\\x00\\u00ad\": invalid syntax",
        ),
        // The first field in error wins.
        ("60 24 0 13 7", "End of range (60) above maximum (59): 60"),
        ("* 24 0 13 7", "End of range (24) above maximum (23): 24"),
    ];
    let mut failures = Vec::new();
    for (spec, expected) in table {
        match parse_standard(spec) {
            Err(err) if err.to_string() == expected => {}
            other => failures.push(format!("{spec:?}: expected {expected:?}, got {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// (b) What robfig accepts and croner on its own would not, or would read otherwise.
#[test]
fn accepts_what_robfig_accepts() {
    let star = |bounds| all(bounds);
    assert_eq!(bits("+5 * * * *").minute, 1 << 5);
    assert_eq!(bits("007 * * * *").minute, 1 << 7);
    // A plain number to robfig; croner would read `+` as "AND the day fields".
    assert_eq!(bits("0 0 * * +1").dow, 1 << 1);
    assert_eq!(bits("*-5 * * * *").minute, star(&MINUTES));
    assert_eq!(bits("*-x-y/30 * * * *").minute, 1 | 1 << 30 | STAR_BIT);
    assert_eq!(
        bits("? ? ? ? ?"),
        FieldBits {
            minute: star(&MINUTES),
            hour: star(&HOURS),
            dom: star(&DOM),
            month: star(&MONTHS),
            dow: star(&DOW),
        }
    );
    assert_eq!(bits("1,,2 * * * *").minute, 1 << 1 | 1 << 2);
    assert_eq!(bits(",1, * * * *").minute, 1 << 1);
    assert_eq!(bits("* * * jan/2 *").month, get_bits(1, 12, 2));
    assert_eq!(bits("* * * JAN-Mar *").month, get_bits(1, 3, 1));
    assert_eq!(bits("* * * * MON-fri").dow, get_bits(1, 5, 1));
    assert_eq!(bits("* * * * sun,SAT").dow, 1 | 1 << 6);
    assert_eq!(bits("*/60 * * * *").minute, 1 | STAR_BIT);
    // Any Unicode white space separates fields, as in Go's strings.Fields.
    assert_eq!(bits("\t0\u{a0}0\u{3000}1\n* *\r\n").dom, 1 << 1);

    let descriptor = |spec: &str| {
        let minute = 1;
        let hour = 1;
        match spec {
            "@yearly" | "@annually" => (minute, hour, 1 << 1, 1 << 1, star(&DOW)),
            "@monthly" => (minute, hour, 1 << 1, star(&MONTHS), star(&DOW)),
            "@weekly" => (minute, hour, star(&DOM), star(&MONTHS), 1),
            "@daily" | "@midnight" => (minute, hour, star(&DOM), star(&MONTHS), star(&DOW)),
            _ => (minute, star(&HOURS), star(&DOM), star(&MONTHS), star(&DOW)),
        }
    };
    for spec in [
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
    ] {
        let (minute, hour, dom, month, dow) = descriptor(spec);
        assert_eq!(
            bits(spec),
            FieldBits {
                minute,
                hour,
                dom,
                month,
                dow
            },
            "{spec}"
        );
    }

    let every = |spec: &str| match parse_standard(spec) {
        Ok(Schedule::Every(delay)) => delay,
        other => panic!("{spec:?} gave {other:?}"),
    };
    assert_eq!(every("@every 1h30m"), Duration::from_secs(5400));
    assert_eq!(every("@every 500ms"), Duration::from_secs(1));
    assert_eq!(every("@every 2.9s"), Duration::from_secs(2));
    assert_eq!(every("@every -5m"), Duration::from_secs(1));
    assert_eq!(every("@every 0"), Duration::from_secs(1));
    assert_eq!(every("@every 1µs"), Duration::from_secs(1));
}

// (c) Semantics, with next times worked out by hand from a calendar.
#[test]
fn day_of_month_or_day_of_week_without_a_star() {
    // Friday 27 November 2026: the next Monday is the 30th, then 1 December.
    assert_eq!(
        next("0 0 1 * 1", "2026-11-27T00:00:00Z"),
        Some(ts("2026-11-30T00:00:00Z"))
    );
    assert_eq!(
        next("0 0 1 * 1", "2026-11-30T00:00:00Z"),
        Some(ts("2026-12-01T00:00:00Z"))
    );
    assert_eq!(
        next("0 0 1 * 1", "2026-12-01T00:00:00Z"),
        Some(ts("2026-12-07T00:00:00Z"))
    );
    // An empty day of month ORed: Mondays alone.
    assert_eq!(
        next("0 0 , * 1", "2026-11-30T00:00:00Z"),
        Some(ts("2026-12-07T00:00:00Z"))
    );
}

#[test]
fn a_star_in_either_day_field_ands_them() {
    // v1.2.0 keeps the star bit with a step: the 1st AND Sun/Tue/Thu/Sat.
    // 1 Dec 2026 is a Tuesday; 1 Jan, 1 Feb and 1 Mar 2027 are a Friday and
    // two Mondays; 1 Apr 2027 is a Thursday.
    assert_eq!(
        next("0 0 1 * */2", "2026-11-27T00:00:00Z"),
        Some(ts("2026-12-01T00:00:00Z"))
    );
    assert_eq!(
        next("0 0 1 * */2", "2026-12-01T00:00:00Z"),
        Some(ts("2027-04-01T00:00:00Z"))
    );
    // A star in any comma item counts: every Monday, the 1st alone is not enough.
    assert_eq!(
        next("0 0 1,* * 1", "2026-11-27T00:00:00Z"),
        Some(ts("2026-11-30T00:00:00Z"))
    );
    assert_eq!(
        next("0 0 1,* * 1", "2026-11-30T00:00:00Z"),
        Some(ts("2026-12-07T00:00:00Z"))
    );
    // An empty day of week ANDed never fires.
    assert_eq!(next("0 0 * * ,", "2026-11-27T00:00:00Z"), None);
}

#[test]
fn descriptors_fire_when_robfig_says() {
    // Sunday 29 November 2026: strictly after midnight is the next Sunday.
    assert_eq!(
        next("@weekly", "2026-11-29T00:00:00Z"),
        Some(ts("2026-12-06T00:00:00Z"))
    );
    assert_eq!(
        next("@weekly", "2026-11-28T23:59:59.999Z"),
        Some(ts("2026-11-29T00:00:00Z"))
    );
    assert_eq!(
        next("@midnight", "2026-11-27T10:00:00Z"),
        Some(ts("2026-11-28T00:00:00Z"))
    );
    assert_eq!(
        next("@annually", "2026-11-27T10:00:00Z"),
        Some(ts("2027-01-01T00:00:00Z"))
    );
    assert_eq!(
        next("@monthly", "2026-11-27T10:00:00Z"),
        Some(ts("2026-12-01T00:00:00Z"))
    );
    assert_eq!(
        next("@hourly", "2026-11-27T10:00:00Z"),
        Some(ts("2026-11-27T11:00:00Z"))
    );
}

#[test]
fn next_is_strictly_after_on_whole_minutes() {
    let every_minute = "* * * * *";
    assert_eq!(
        next(every_minute, "2026-11-27T10:00:00Z"),
        Some(ts("2026-11-27T10:01:00Z"))
    );
    assert_eq!(
        next(every_minute, "2026-11-27T09:59:59.5Z"),
        Some(ts("2026-11-27T10:00:00Z"))
    );
    assert_eq!(
        next(every_minute, "2026-11-27T10:00:00.000000001Z"),
        Some(ts("2026-11-27T10:01:00Z"))
    );
    assert_eq!(
        next(every_minute, "2026-12-31T23:59:30Z"),
        Some(ts("2027-01-01T00:00:00Z"))
    );
    assert_eq!(
        next("0 0 1 1 *", "1969-06-15T00:00:00.5Z"),
        Some(ts("1970-01-01T00:00:00Z"))
    );
}

#[test]
fn outside_crons_years_there_is_no_answer() {
    // robfig would answer; croner's search covers years 1 to 5000 only.
    assert_eq!(next("* * * * *", "0000-06-01T00:00:00Z"), None);
    assert_eq!(next("* * * * *", "6000-01-01T00:00:00Z"), None);
    assert_eq!(
        next("* * * * *", "0000-12-31T23:59:59Z"),
        Some(ts("0001-01-01T00:00:00Z"))
    );
    assert_eq!(
        next("* * * * *", "4999-12-31T23:59:30Z"),
        Some(ts("5000-01-01T00:00:00Z"))
    );
}

#[test]
fn nothing_past_robfigs_five_years() {
    // 2100 is no leap year: after 2097-03-01 the next 29 February is in 2104,
    // past 2097 + 5.
    assert_eq!(next("0 0 29 2 *", "2097-03-01T00:00:00Z"), None);
    assert_eq!(
        next("0 0 29 2 *", "2095-03-01T00:00:00Z"),
        Some(ts("2096-02-29T00:00:00Z"))
    );
    assert_eq!(next("0 0 30 2 *", "2026-11-27T00:00:00Z"), None);
    assert_eq!(next("0 0 31 4,6,9,11 *", "2026-11-27T00:00:00Z"), None);
    // 29 February on a Sunday: 2032, past 2026 + 5 but within 2027 + 5.
    assert_eq!(next("0 0 29 2 */7", "2026-11-27T00:00:00Z"), None);
    assert_eq!(
        next("0 0 29 2 */7", "2027-01-01T00:00:00Z"),
        Some(ts("2032-02-29T00:00:00Z"))
    );
    // The limit counts from the year of the next whole second.
    assert_eq!(
        next("0 0 29 2 */7", "2026-12-31T23:59:59.5Z"),
        Some(ts("2032-02-29T00:00:00Z"))
    );
    // Fields that set no bit never fire.
    assert_eq!(next(", * * * *", "2026-11-27T00:00:00Z"), None);
    assert_eq!(next("* , * * *", "2026-11-27T00:00:00Z"), None);
    assert_eq!(next("* * * , *", "2026-11-27T00:00:00Z"), None);
}

#[test]
fn every_adds_whole_seconds_to_the_current_second() {
    assert_eq!(
        next("@every 90s", "2026-11-27T10:00:00.7Z"),
        Some(ts("2026-11-27T10:01:30Z"))
    );
    assert_eq!(
        next("@every 90s", "2026-11-27T10:00:00Z"),
        Some(ts("2026-11-27T10:01:30Z"))
    );
    assert_eq!(
        next("@every 1.5s", "2026-11-27T10:00:00.9Z"),
        Some(ts("2026-11-27T10:00:01Z"))
    );
    assert_eq!(
        next("@every 10s", "1969-12-31T23:59:59.5Z"),
        Some(ts("1970-01-01T00:00:09Z"))
    );
    assert_eq!(next("@every 2562047h", "9999-01-01T00:00:00Z"), None);
}

/// spec.go's `Next`, line for line, on UTC civil time: the oracle.
fn robfig_next(bits: &FieldBits, after: Timestamp) -> Option<Timestamp> {
    const SECOND_BITS: u64 = 1; // the standard parser's seconds field is "0"
    let nanos = after.as_nanosecond();
    let start = nanos + 1_000_000_000 - nanos.rem_euclid(1_000_000_000);
    let mut t: DateTime = Timestamp::from_nanosecond(start)
        .ok()?
        .to_zoned(TimeZone::UTC)
        .datetime();
    let mut added = false;
    let year_limit = t.year() + 5;
    let bit = |value: i8| 1u64 << value;
    let day_matches = |t: DateTime| {
        let dom_match = bit(t.day()) & bits.dom > 0;
        let dow_match = bit(t.weekday().to_sunday_zero_offset()) & bits.dow > 0;
        if bits.dom & STAR_BIT > 0 || bits.dow & STAR_BIT > 0 {
            dom_match && dow_match
        } else {
            dom_match || dow_match
        }
    };
    'wrap: loop {
        if t.year() > year_limit {
            return None;
        }
        while bit(t.month()) & bits.month == 0 {
            if !added {
                added = true;
                t = date(t.year(), t.month(), 1).at(0, 0, 0, 0);
            }
            t = t.checked_add(1.month()).ok()?;
            if t.month() == 1 {
                continue 'wrap;
            }
        }
        while !day_matches(t) {
            if !added {
                added = true;
                t = t.date().at(0, 0, 0, 0);
            }
            t = t.checked_add(1.day()).ok()?;
            if t.day() == 1 {
                continue 'wrap;
            }
        }
        while bit(t.hour()) & bits.hour == 0 {
            if !added {
                added = true;
                t = t.date().at(t.hour(), 0, 0, 0);
            }
            t = t.checked_add(1.hour()).ok()?;
            if t.hour() == 0 {
                continue 'wrap;
            }
        }
        while bit(t.minute()) & bits.minute == 0 {
            if !added {
                added = true;
                t = t.date().at(t.hour(), t.minute(), 0, 0);
            }
            t = t.checked_add(1.minute()).ok()?;
            if t.minute() == 0 {
                continue 'wrap;
            }
        }
        while bit(t.second()) & SECOND_BITS == 0 {
            if !added {
                added = true;
                t = t.date().at(t.hour(), t.minute(), t.second(), 0);
            }
            t = t.checked_add(1.second()).ok()?;
            if t.second() == 0 {
                continue 'wrap;
            }
        }
        return Some(t.to_zoned(TimeZone::UTC).ok()?.timestamp());
    }
}

#[test]
fn the_oracle_agrees_with_the_hand_worked_times() {
    let check = |spec: &str, after: &str, expected: Option<&str>| {
        assert_eq!(
            robfig_next(&bits(spec), ts(after)),
            expected.map(ts),
            "{spec} after {after}"
        );
    };
    check(
        "0 0 1 * 1",
        "2026-11-30T00:00:00Z",
        Some("2026-12-01T00:00:00Z"),
    );
    check(
        "0 0 1 * */2",
        "2026-12-01T00:00:00Z",
        Some("2027-04-01T00:00:00Z"),
    );
    check("0 0 29 2 *", "2097-03-01T00:00:00Z", None);
    check(
        "0 0 29 2 */7",
        "2026-12-31T23:59:59.5Z",
        Some("2032-02-29T00:00:00Z"),
    );
    // robfig walks hours for five years before giving up on an empty field.
    check("* , * * *", "2026-11-27T00:00:00Z", None);
}

/// One comma item of a field, in robfig's grammar, within the field's bounds.
fn item(min: u64, max: u64, names: &'static [&'static str]) -> BoxedStrategy<String> {
    let value = min..=max;
    let step = 1..=max + 2;
    let number = prop_oneof![
        4 => value.clone().prop_map(|v| v.to_string()),
        1 => value.clone().prop_map(|v| format!("0{v}")),
        1 => value.clone().prop_map(|v| format!("+{v}")),
    ];
    let name_or_number = if names.is_empty() {
        number.boxed()
    } else {
        prop_oneof![
            3 => number,
            1 => (0..names.len()).prop_map(move |i| names[i].to_string()),
            1 => (0..names.len()).prop_map(move |i| names[i].to_uppercase()),
        ]
        .boxed()
    };
    let numeric = move |text: &str| -> u64 {
        let lower = text.to_lowercase();
        match names.iter().position(|name| *name == lower) {
            Some(i) => i as u64 + min,
            None => text.trim_start_matches('+').parse().unwrap_or(min),
        }
    };
    let range = (name_or_number.clone(), name_or_number.clone()).prop_map(move |(a, b)| {
        if numeric(&a) <= numeric(&b) {
            format!("{a}-{b}")
        } else {
            format!("{b}-{a}")
        }
    });
    prop_oneof![
        3 => name_or_number.clone(),
        2 => range.clone(),
        2 => (range, step.clone()).prop_map(|(r, s)| format!("{r}/{s}")),
        1 => (name_or_number, step.clone()).prop_map(|(v, s)| format!("{v}/{s}")),
        1 => Just("*".to_string()),
        1 => Just("?".to_string()),
        1 => step.clone().prop_map(|s| format!("*/{s}")),
        1 => step.prop_map(|s| format!("?-{s}/{s}")),
    ]
    .boxed()
}

/// A field: one to three items, now and then with an empty one.
fn field(min: u64, max: u64, names: &'static [&'static str]) -> BoxedStrategy<String> {
    prop_oneof![
        8 => prop::collection::vec(item(min, max, names), 1..=3).prop_map(|items| items.join(",")),
        1 => (item(min, max, names), item(min, max, names)).prop_map(|(a, b)| format!("{a},,{b}")),
    ]
    .boxed()
}

fn spec() -> impl Strategy<Value = String> {
    const MONTH_NAMES: &[&str] = &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    const DAY_NAMES: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    let five = (
        field(0, 59, &[]),
        field(0, 23, &[]),
        field(1, 31, &[]),
        field(1, 12, MONTH_NAMES),
        field(0, 6, DAY_NAMES),
    )
        .prop_map(|(m, h, dom, mon, dow)| format!("{m} {h} {dom} {mon} {dow}"));
    // Rare day-of-month and month combinations, and empty day fields.
    let sparse = (
        prop::sample::select(vec!["29", "30", "31", "29,30", "1,31", ",", "*", "*/10"]),
        prop::sample::select(vec!["2", "4,6", "feb,apr", "*", "2/12", "dec"]),
        prop::sample::select(vec!["*", "?", ",", "0", "*/3", "1-5", "sat"]),
    )
        .prop_map(|(dom, month, dow)| format!("0 0 {dom} {month} {dow}"));
    let descriptor = prop::sample::select(vec![
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
    ])
    .prop_map(str::to_string);
    prop_oneof![8 => five, 2 => sparse, 1 => descriptor]
}

/// An instant from 1970 to 2200, often on a whole minute or second.
fn instant() -> impl Strategy<Value = Timestamp> {
    const END_2199: i64 = 7_258_118_400;
    (0..END_2199, 0..1_000_000_000i32, 0..4u8).prop_map(|(second, nanos, shape)| {
        let (second, nanos) = match shape {
            0 => (second - second % 60, 0),
            1 => (second, 0),
            _ => (second, nanos),
        };
        Timestamp::new(second, nanos).unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    // (d) croner behind the pre-parser agrees with robfig's own walk.
    #[test]
    fn next_matches_robfigs_walk(spec in spec(), after in instant()) {
        let schedule = parse_standard(&spec).unwrap();
        let Schedule::Spec(SpecSchedule { bits, .. }) = &schedule else {
            panic!("{spec:?} is not a spec");
        };
        let mut t = after;
        for _ in 0..3 {
            let expected = robfig_next(bits, t);
            prop_assert_eq!(schedule.next(t), expected, "{} after {}", spec, t);
            match expected {
                Some(found) => t = found,
                None => break,
            }
        }
    }

    #[test]
    fn any_text_parses_or_fails_with_a_robfig_message(text in "\\PC{0,30}|[0-9*?/,@a-z -]{0,30}") {
        match parse_standard(&text) {
            Ok(schedule) => {
                let _ = schedule.next(Timestamp::UNIX_EPOCH);
            }
            Err(err) => prop_assert!(!err.to_string().starts_with("croner"), "{}", err),
        }
    }
}
