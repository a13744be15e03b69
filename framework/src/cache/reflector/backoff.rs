//! [`Backoff`]: how long a reflector waits after a failed list or watch
//! (client-go's `NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0)`,
//! reflector.go): the wait doubles from 800 ms up to a 30 s cap, each wait
//! gets up to 100 % random jitter on top (so a fleet of clients does not
//! retry in lockstep), and after 2 minutes without a failure it starts
//! again from 800 ms.

use std::time::Duration;

use tokio::time::Instant;

/// A backoff policy. The default is client-go's reflector policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Backoff {
    /// The first wait.
    pub initial: Duration,
    /// The largest wait before jitter (client-go's `Cap`).
    pub max: Duration,
    /// The factor each failure multiplies the wait by.
    pub factor: f64,
    /// The jitter: each wait is `base * (1 + jitter * r)`, `r` uniform in
    /// `[0, 1)` (client-go's `wait.Jitter`).
    pub jitter: f64,
    /// After this long without a failure, the next wait is `initial` again.
    pub reset_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            factor: 2.0,
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

impl Backoff {
    /// A policy from `initial` doubling up to `max`, with client-go's jitter
    /// and reset (handy for tests that want fast retries).
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            ..Self::default()
        }
    }
}

/// The running state of a [`Backoff`] for one reflector.
#[derive(Debug)]
pub(crate) struct BackoffState {
    policy: Backoff,
    next: Duration,
    last_failure: Option<Instant>,
    rng: fastrand::Rng,
}

impl BackoffState {
    pub(crate) fn new(policy: Backoff) -> Self {
        Self {
            next: policy.initial,
            policy,
            last_failure: None,
            rng: fastrand::Rng::new(),
        }
    }

    /// The wait after one more failure.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last_failure
            .is_some_and(|t| now.duration_since(t) >= self.policy.reset_after)
        {
            self.next = self.policy.initial;
        }
        self.last_failure = Some(now);
        let base = self.next.min(self.policy.max);
        let grown = base.mul_f64(self.policy.factor.max(1.0));
        self.next = grown.min(self.policy.max);
        let jitter = self.policy.jitter.max(0.0) * self.rng.f64();
        base.mul_f64(1.0 + jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn doubles_with_jitter_up_to_the_cap_and_resets_after_quiet() {
        let mut b = BackoffState::new(Backoff::default());
        let mut bases = Vec::new();
        for _ in 0..8 {
            let d = b.next_delay();
            bases.push(d);
        }
        let expected_base = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0];
        for (d, base) in bases.iter().zip(expected_base) {
            let secs = d.as_secs_f64();
            assert!(
                secs >= base && secs < 2.0 * base + 1e-9,
                "{secs} not in [{base}, {})",
                2.0 * base
            );
        }
        tokio::time::advance(Duration::from_secs(121)).await;
        let d = b.next_delay().as_secs_f64();
        assert!(
            (0.8..1.6).contains(&d),
            "reset after two quiet minutes: {d}"
        );
    }
}
