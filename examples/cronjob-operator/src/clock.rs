//! The controller's clock: what time it is, and how long to wait in real
//! time until a scheduled instant. The operator runs on [`SystemClock`];
//! tests move a [`FakeClock`] instead of sleeping until a schedule fires,
//! and the benchmark runs virtual minutes in real seconds on a
//! [`ScaledClock`].

use std::sync::Mutex;
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};

/// A source of the current time for the reconcile.
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;

    /// How long to wait, in real time, until it is `at` on this clock: zero
    /// when `at` has passed.
    fn until(&self, at: Timestamp) -> Duration {
        positive(at.duration_since(self.now()))
    }
}

/// The system's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that stands still until it is set or advanced.
#[derive(Debug)]
pub struct FakeClock {
    now: Mutex<Timestamp>,
}

impl FakeClock {
    /// A clock that reads `now`.
    pub fn new(now: Timestamp) -> Self {
        FakeClock {
            now: Mutex::new(now),
        }
    }

    /// Makes the clock read `now`.
    pub fn set(&self, now: Timestamp) {
        *self.lock() = now;
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.lock();
        let by = SignedDuration::try_from(by).unwrap_or(SignedDuration::MAX);
        *now = now.saturating_add(by).unwrap_or(*now);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Timestamp> {
        // A poisoned lock still holds a valid time.
        self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Timestamp {
        *self.lock()
    }
}

/// A clock that runs `speed` times faster than real time from a starting
/// point: virtual minutes pass in real seconds.
#[derive(Debug)]
pub struct ScaledClock {
    real_start: Instant,
    virtual_start: Timestamp,
    speed: u32,
}

impl ScaledClock {
    /// A clock that reads `start` now and runs `speed` times as fast as
    /// real time (a speed of 0 is taken as 1).
    pub fn new(start: Timestamp, speed: u32) -> Self {
        ScaledClock {
            real_start: Instant::now(),
            virtual_start: start,
            speed: speed.max(1),
        }
    }

    /// The real instant at which this clock reads `at` (the start, if `at`
    /// is before it).
    pub fn real_instant(&self, at: Timestamp) -> Instant {
        let virtual_elapsed = positive(at.duration_since(self.virtual_start));
        self.real_start + virtual_elapsed / self.speed
    }
}

impl Clock for ScaledClock {
    fn now(&self) -> Timestamp {
        let virtual_elapsed = self.real_start.elapsed() * self.speed;
        let by = SignedDuration::try_from(virtual_elapsed).unwrap_or(SignedDuration::MAX);
        self.virtual_start
            .saturating_add(by)
            .unwrap_or(self.virtual_start)
    }

    fn until(&self, at: Timestamp) -> Duration {
        // Rounded up: a wait that ends a few virtual nanoseconds early
        // would find `at` not yet reached.
        let nanos = positive(at.duration_since(self.now())).as_nanos();
        let real = nanos.div_ceil(u128::from(self.speed));
        Duration::from_nanos(u64::try_from(real).unwrap_or(u64::MAX))
    }
}

/// A signed span as a wait: negative spans are no wait at all.
fn positive(span: SignedDuration) -> Duration {
    Duration::try_from(span).unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn a_fake_clock_moves_only_when_told() {
        let clock = FakeClock::new(at("2026-01-01T00:00:00Z"));
        assert_eq!(clock.now(), at("2026-01-01T00:00:00Z"));
        clock.advance(Duration::from_secs(90));
        assert_eq!(clock.now(), at("2026-01-01T00:01:30Z"));
        clock.set(at("2027-01-01T00:00:00Z"));
        assert_eq!(clock.now(), at("2027-01-01T00:00:00Z"));
    }

    #[test]
    fn the_wait_until_a_past_instant_is_zero() {
        let clock = FakeClock::new(at("2026-01-01T00:01:00Z"));
        assert_eq!(clock.until(at("2026-01-01T00:00:00Z")), Duration::ZERO);
        assert_eq!(
            clock.until(at("2026-01-01T00:02:00Z")),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn a_scaled_clock_waits_a_fraction_of_the_virtual_span() {
        let start = at("2026-01-01T00:00:00Z");
        let clock = ScaledClock::new(start, 60);
        let wait = clock.until(at("2026-01-01T00:01:00Z"));
        assert!(wait <= Duration::from_secs(1), "{wait:?}");
        assert!(wait > Duration::from_millis(500), "{wait:?}");
        assert_eq!(
            clock.real_instant(at("2026-01-01T00:01:00Z")) - clock.real_instant(start),
            Duration::from_secs(1)
        );
    }
}
