//! The five fields of a standard cron spec as robfig/cron v1.2.0 reads them
//! (`getField`, `getRange`, `parseIntOrName`, `mustParseInt` in parser.go),
//! into bitsets with spec.go's star bit, and their canonical numeric form for
//! croner.

use super::go;

/// Set in a field's bits when one of its items starts with `*` or `?`; it
/// decides whether day of month and day of week are ANDed or ORed.
pub(crate) const STAR_BIT: u64 = 1 << 63;

/// A field's range and the names it accepts (lower case, exactly as written
/// in spec.go).
pub(crate) struct Bounds {
    pub(crate) min: u64,
    pub(crate) max: u64,
    names: &'static [(&'static str, u64)],
}

/// Minutes, 0–59.
pub(crate) const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
/// Hours, 0–23.
pub(crate) const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
/// Day of month, 1–31.
pub(crate) const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
/// Months, 1–12 or `jan`–`dec`.
pub(crate) const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
/// Day of week, 0–6 (Sunday is 0; 7 is rejected) or `sun`–`sat`.
pub(crate) const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// The bitsets of a parsed spec: bit `n` set means value `n` matches, plus
/// [`STAR_BIT`]. Seconds are always 0 in a standard spec, so they are left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FieldBits {
    pub(crate) minute: u64,
    pub(crate) hour: u64,
    pub(crate) dom: u64,
    pub(crate) month: u64,
    pub(crate) dow: u64,
}

/// `getField`: the union of the field's comma-separated items. Empty items
/// are skipped, so a field of commas alone sets no bit.
pub(crate) fn get_field(field: &str, bounds: &Bounds) -> Result<u64, String> {
    let mut bits = 0;
    for expr in field.split(',').filter(|item| !item.is_empty()) {
        bits |= get_range(expr, bounds)?;
    }
    Ok(bits)
}

/// `getRange`: one item, `*`, `?`, `n`, `n-m`, each optionally `/step`, with
/// robfig's checks in robfig's order.
fn get_range(expr: &str, bounds: &Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;

    let (start, mut end, extra) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        // Whatever follows a star's hyphen is never looked at.
        (bounds.min, bounds.max, STAR_BIT)
    } else {
        let start = parse_int_or_name(low_and_high[0], bounds)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], bounds)?,
            _ => return Err(format!("Too many hyphens: {expr}")),
        };
        (start, end, 0)
    };

    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            // "N/step" means "N-max/step".
            if single {
                end = bounds.max;
            }
            step
        }
        _ => return Err(format!("Too many slashes: {expr}")),
    };

    if start < bounds.min {
        return Err(format!(
            "Beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Err(format!(
            "End of range ({end}) above maximum ({}): {expr}",
            bounds.max
        ));
    }
    if start > end {
        return Err(format!(
            "Beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("Step of range should be a positive number: {expr}"));
    }
    Ok(get_bits(start, end, step) | extra)
}

/// `parseIntOrName`: a name of the field (case-insensitive, Go's
/// `strings.ToLower`), else a number.
fn parse_int_or_name(expr: &str, bounds: &Bounds) -> Result<u64, String> {
    if !bounds.names.is_empty() {
        let lower = go_to_lower(expr);
        if let Some((_, value)) = bounds.names.iter().find(|(name, _)| *name == lower) {
            return Ok(*value);
        }
    }
    must_parse_int(expr)
}

/// `mustParseInt`: Go's `strconv.Atoi`, then no negative numbers.
fn must_parse_int(expr: &str) -> Result<u64, String> {
    let num = go::atoi(expr).map_err(|err| format!("Failed to parse int from {expr}: {err}"))?;
    u64::try_from(num).map_err(|_| format!("Negative number ({num}) not allowed: {expr}"))
}

/// As much of Go's `strings.ToLower` as a name lookup can see: its simple
/// case mapping sends two non-ASCII letters to ASCII ones (U+0130 to `i`,
/// U+212A Kelvin to `k`); every other non-ASCII character stays non-ASCII.
fn go_to_lower(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{130}' => 'i',
            '\u{212a}' => 'k',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// `getBits`: every `step`-th value from `min` to `max`, both within 0–63.
pub(crate) fn get_bits(min: u64, max: u64, step: u64) -> u64 {
    let mut bits = 0;
    let mut value = min;
    while value <= max {
        bits |= 1 << value;
        value = match value.checked_add(step) {
            Some(next) => next,
            None => break,
        };
    }
    bits
}

/// `all`: the whole range, with the star bit.
pub(crate) fn all(bounds: &Bounds) -> u64 {
    get_bits(bounds.min, bounds.max, 1) | STAR_BIT
}

/// The longest month each month can have (February in a leap year).
const LONGEST_MONTH: [u64; 13] = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/// The pattern croner is given for `bits`, and its `dom_and_dow` flag; `None`
/// when the spec can never fire, where robfig walks five years and gives the
/// zero time.
///
/// Every field is an explicit list, so croner's own star rule (a literal
/// whole-field `*`) never applies and the flag alone carries robfig's: AND
/// when either day field has the star bit, else OR. An empty day field ORed
/// with the other is dropped by making it the full list and ANDing.
pub(crate) fn canonical(bits: &FieldBits) -> Option<(String, bool)> {
    let values = |field: u64| field & !STAR_BIT;
    let (minute, hour, month) = (values(bits.minute), values(bits.hour), values(bits.month));
    let (mut dom, mut dow) = (values(bits.dom), values(bits.dow));
    let mut and = bits.dom & STAR_BIT != 0 || bits.dow & STAR_BIT != 0;
    if minute == 0 || hour == 0 || month == 0 {
        return None;
    }
    // Days of the month that exist in at least one of the chosen months.
    let real_days = (1..=12)
        .filter(|m| month & (1 << m) != 0)
        .fold(0, |days, m| days | get_bits(1, LONGEST_MONTH[m], 1));
    let dom_can_match = dom & real_days != 0;
    if and {
        // A real day of the month falls on every weekday sooner or later.
        if !dom_can_match || dow == 0 {
            return None;
        }
    } else if dow == 0 {
        if !dom_can_match {
            return None;
        }
        (dow, and) = (get_bits(DOW.min, DOW.max, 1), true);
    } else if dom == 0 {
        (dom, and) = (get_bits(DOM.min, DOM.max, 1), true);
    }
    let pattern = [minute, hour, dom, month, dow]
        .iter()
        .map(|&field| list(field))
        .collect::<Vec<_>>()
        .join(" ");
    Some((pattern, and))
}

/// The set bits of `field` as a comma-separated list of numbers.
fn list(field: u64) -> String {
    (0..64)
        .filter(|bit| field & (1 << bit) != 0)
        .map(|bit: u32| bit.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_set_robfigs_bits() {
        let bits = |expr: &str, bounds: &Bounds| get_field(expr, bounds).unwrap();
        assert_eq!(bits("5", &MINUTES), 1 << 5);
        assert_eq!(bits("5-7/2", &MINUTES), 1 << 5 | 1 << 7);
        assert_eq!(bits("1,5-7/2,3", &DOM), 1 << 1 | 1 << 5 | 1 << 7 | 1 << 3);
        assert_eq!(bits("*/2", &MONTHS), 0b1010_1010_1010 | STAR_BIT);
        assert_eq!(bits("?", &DOW), 0x7f | STAR_BIT);
        assert_eq!(bits("*-3", &HOURS), 0xff_ffff | STAR_BIT);
        assert_eq!(bits("50/5", &MINUTES), 1 << 50 | 1 << 55);
        assert_eq!(bits("jan/4", &MONTHS), 1 << 1 | 1 << 5 | 1 << 9);
        assert_eq!(bits("MON-fri", &DOW), 0b11_1110);
        assert_eq!(bits("sun", &DOW), 1);
        assert_eq!(bits(",,", &MINUTES), 0);
        assert_eq!(bits("1,*", &DOM), all(&DOM));
        assert_eq!(bits("*/9223372036854775807", &MINUTES), 1 | STAR_BIT);
        assert_eq!(all(&MINUTES), 0x0fff_ffff_ffff_ffff | STAR_BIT);
        assert_eq!(all(&DOM), 0xffff_fffe | STAR_BIT);
        assert_eq!(all(&MONTHS), 0x1ffe | STAR_BIT);
        assert_eq!(all(&DOW), 0x7f | STAR_BIT);
    }

    #[test]
    fn names_are_lowered_the_go_way() {
        assert_eq!(get_field("FR\u{130}", &DOW), Ok(1 << 5));
        assert_eq!(
            get_field("FRI\u{307}", &DOW),
            Err(
                "Failed to parse int from FRI\u{307}: strconv.Atoi: parsing \"FRI\u{307}\": invalid syntax"
                    .to_string()
            )
        );
        // Names belong to their field only.
        assert!(get_field("jan", &DOW).is_err());
        assert!(get_field("mon", &MONTHS).is_err());
        assert!(get_field("monday", &DOW).is_err());
    }

    fn spec(minute: u64, hour: u64, dom: u64, month: u64, dow: u64) -> FieldBits {
        FieldBits {
            minute,
            hour,
            dom,
            month,
            dow,
        }
    }

    #[test]
    fn canonical_lists_every_value_and_carries_the_star_rule() {
        let every = spec(
            all(&MINUTES),
            all(&HOURS),
            all(&DOM),
            all(&MONTHS),
            all(&DOW),
        );
        let (pattern, and) = canonical(&every).unwrap();
        assert!(and);
        let fields: Vec<&str> = pattern.split(' ').collect();
        assert_eq!(fields.len(), 5);
        assert_eq!(fields[0].split(',').count(), 60);
        assert_eq!(fields[2].split(',').next(), Some("1"));
        assert_eq!(fields[3], "1,2,3,4,5,6,7,8,9,10,11,12");
        assert_eq!(fields[4], "0,1,2,3,4,5,6");

        let or = spec(1, 1, 1 << 1, 1 << 3, 1 << 1);
        assert_eq!(canonical(&or), Some(("0 0 1 3 1".to_string(), false)));
    }

    #[test]
    fn canonical_drops_an_empty_day_field_only_when_ored() {
        let month = 1 << 1;
        // OR: the other day field decides alone.
        assert_eq!(
            canonical(&spec(1, 1, 0, month, 1 << 1)),
            Some((
                "0 0 ".to_string() + &list(get_bits(1, 31, 1)) + " 1 1",
                true
            ))
        );
        assert_eq!(
            canonical(&spec(1, 1, 1 << 5, month, 0)),
            Some(("0 0 5 1 0,1,2,3,4,5,6".to_string(), true))
        );
        // AND with an empty field, or both empty: never.
        assert_eq!(canonical(&spec(1, 1, all(&DOM), month, 0)), None);
        assert_eq!(canonical(&spec(1, 1, 0, month, all(&DOW))), None);
        assert_eq!(canonical(&spec(1, 1, 0, month, 0)), None);
        assert_eq!(canonical(&spec(0, 1, 1 << 5, month, 1)), None);
        assert_eq!(canonical(&spec(1, 0, 1 << 5, month, 1)), None);
        assert_eq!(canonical(&spec(1, 1, 1 << 5, 0, 1)), None);
    }

    #[test]
    fn canonical_knows_days_no_chosen_month_has() {
        let feb = 1 << 2;
        // 30 February, ANDed: never.
        assert_eq!(canonical(&spec(1, 1, 1 << 30, feb, all(&DOW))), None);
        // 29 February exists in leap years.
        assert!(canonical(&spec(1, 1, 1 << 29, feb, all(&DOW))).is_some());
        // 30 February ORed with Mondays: the Mondays of February.
        assert!(canonical(&spec(1, 1, 1 << 30, feb, 1 << 1)).is_some());
        // 31 April or June, and nothing else: never.
        assert_eq!(canonical(&spec(1, 1, 1 << 31, 1 << 4 | 1 << 6, 0)), None);
    }
}
