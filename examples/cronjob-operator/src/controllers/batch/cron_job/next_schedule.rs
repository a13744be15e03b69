//! The reference's `getNextSchedule`: the latest run missed since the last
//! scheduled time (or the CronJob's creation), clamped by
//! `startingDeadlineSeconds`, and the next run after now.

use jiff::{SignedDuration, Timestamp};

use crate::schedule::{parse_standard, quote};

/// The reference's limit on the missed runs it walks through.
pub const MAX_MISSED_RUNS: usize = 100;

/// The reference's error text when more runs than [`MAX_MISSED_RUNS`] were
/// missed (or the schedule never fires: robfig's zero time).
pub const TOO_MANY_MISSED: &str = "Too many missed start times (> 100). Set or decrease .spec.startingDeadlineSeconds or check clock skew.";

/// The runs of a schedule as seen at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Runs {
    /// The latest scheduled time at or before now not yet run.
    pub missed: Option<Timestamp>,
    /// The first scheduled time after now; `None` where robfig gives the
    /// zero time (the schedule never fires again).
    pub next: Option<Timestamp>,
}

/// `getNextSchedule(cronJob, now)`: `earliest` is the last schedule time
/// (else the creation time), moved forward to `now - deadline` when that is
/// later. The error is the text the reference logs and puts in the
/// `InvalidSchedule` condition.
pub fn next_schedule(
    schedule: &str,
    earliest: Timestamp,
    deadline_seconds: Option<i64>,
    now: Timestamp,
) -> Result<Runs, String> {
    let sched = parse_standard(schedule)
        .map_err(|e| format!("unparseable schedule {}: {e}", quote(schedule)))?;
    let mut earliest = earliest;
    if let Some(deadline) = deadline_seconds {
        let scheduling_deadline = now
            .checked_sub(SignedDuration::from_secs(deadline))
            .unwrap_or(Timestamp::MIN);
        if scheduling_deadline > earliest {
            earliest = scheduling_deadline;
        }
    }
    if earliest > now {
        return Ok(Runs {
            missed: None,
            next: sched.next(now),
        });
    }
    let mut missed = None;
    let mut starts = 0;
    let mut t = sched.next(earliest);
    // robfig's zero time is before any `now`: the loop goes on with it
    // (and `Next(zero)` is zero again) until the count runs out.
    loop {
        match t {
            Some(at) if at > now => break,
            Some(at) => {
                missed = Some(at);
                t = sched.next(at);
            }
            None => {}
        }
        starts += 1;
        if starts > MAX_MISSED_RUNS {
            return Err(TOO_MANY_MISSED.to_owned());
        }
    }
    Ok(Runs {
        missed,
        next: sched.next(now),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn nothing_missed_before_the_first_run() {
        let runs = next_schedule(
            "*/5 * * * *",
            at("2026-01-01T00:01:00Z"),
            None,
            at("2026-01-01T00:04:59Z"),
        )
        .unwrap();
        assert_eq!(runs.missed, None);
        assert_eq!(runs.next, Some(at("2026-01-01T00:05:00Z")));
    }

    #[test]
    fn the_latest_of_several_missed_runs_is_kept() {
        let runs = next_schedule(
            "*/5 * * * *",
            at("2026-01-01T00:01:00Z"),
            None,
            at("2026-01-01T00:17:00Z"),
        )
        .unwrap();
        assert_eq!(runs.missed, Some(at("2026-01-01T00:15:00Z")));
        assert_eq!(runs.next, Some(at("2026-01-01T00:20:00Z")));
    }

    #[test]
    fn a_hundred_missed_runs_pass_and_a_hundred_and_one_do_not() {
        let created = at("2026-01-01T00:00:30Z");
        let hundred = at("2026-01-01T01:40:00Z");
        let runs = next_schedule("* * * * *", created, None, hundred).unwrap();
        assert_eq!(runs.missed, Some(hundred));
        let err = next_schedule("* * * * *", created, None, at("2026-01-01T01:41:00Z"));
        assert_eq!(err, Err(TOO_MANY_MISSED.to_owned()));
    }

    #[test]
    fn the_deadline_moves_the_start_forward() {
        let created = at("2026-01-01T00:00:30Z");
        let now = at("2026-01-01T02:00:10Z");
        let runs = next_schedule("* * * * *", created, Some(200), now).unwrap();
        assert_eq!(runs.missed, Some(at("2026-01-01T02:00:00Z")));
        // The last run is more than the deadline ago: the clamp hides it.
        let runs = next_schedule("0 * * * *", created, Some(30), at("2026-01-01T02:02:00Z"));
        assert_eq!(runs.unwrap().missed, None);
    }

    #[test]
    fn a_start_after_now_gives_only_the_next_run() {
        let runs = next_schedule(
            "0 * * * *",
            at("2026-01-01T05:00:00Z"),
            None,
            at("2026-01-01T04:30:00Z"),
        )
        .unwrap();
        assert_eq!(runs.missed, None);
        assert_eq!(runs.next, Some(at("2026-01-01T05:00:00Z")));
    }

    #[test]
    fn a_schedule_that_never_fires_is_too_many_missed_runs() {
        let err = next_schedule(
            "0 0 30 2 *",
            at("2026-01-01T00:00:00Z"),
            None,
            at("2026-01-02T00:00:00Z"),
        );
        assert_eq!(err, Err(TOO_MANY_MISSED.to_owned()));
    }

    #[test]
    fn an_unparseable_schedule_names_the_parsers_error() {
        let err = next_schedule(
            "bad",
            at("2026-01-01T00:00:00Z"),
            None,
            at("2026-01-02T00:00:00Z"),
        );
        assert_eq!(
            err,
            Err(
                r#"unparseable schedule "bad": Expected exactly 5 fields, found 1: bad"#.to_owned()
            )
        );
    }
}
