//! Rate limiters: how long an item waits before its next retry.
//!
//! The same family as client-go's `util/workqueue/default_rate_limiters.go`:
//! a per-item exponential backoff, a global token bucket, a fast-then-slow
//! per-item limiter and a combinator taking the longest of several. Each
//! limiter keeps its own small lock, held only for the arithmetic.

use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hashbrown::HashMap;
use tokio::time::Instant;

/// Decides how long an item must wait before it is retried.
///
/// client-go's `RateLimiter` interface: [`when`](RateLimiter::when) records a
/// failure and returns the delay, [`forget`](RateLimiter::forget) clears the
/// item's history (call it when the item succeeded or was given up on), and
/// [`num_requeues`](RateLimiter::num_requeues) reports the failures recorded.
pub trait RateLimiter<T>: Send + Sync {
    /// Records one more failure of `item` and returns how long it must wait.
    fn when(&self, item: &T) -> Duration;
    /// Stops tracking `item`: its next failure starts from scratch.
    fn forget(&self, item: &T);
    /// The number of failures recorded for `item` since it was last forgotten.
    fn num_requeues(&self, item: &T) -> usize;
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Arc<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }
    fn num_requeues(&self, item: &T) -> usize {
        (**self).num_requeues(item)
    }
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }
    fn num_requeues(&self, item: &T) -> usize {
        (**self).num_requeues(item)
    }
}

/// A poisoned lock only means another thread panicked mid-update of a plain
/// counter map; the data is still usable, so keep going rather than panic.
fn lock<S>(m: &Mutex<S>) -> MutexGuard<'_, S> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Per-item exponential backoff: `base * 2^failures`, capped at `max`
/// (client-go's `ItemExponentialFailureRateLimiter`).
///
/// The arithmetic is exact and cannot overflow: once the product exceeds
/// `max` (or anything representable) the answer is `max`.
pub struct ItemExponentialFailure<T> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> ItemExponentialFailure<T> {
    /// A limiter starting at `base` and doubling up to `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> Default for ItemExponentialFailure<T> {
    /// client-go's controller default: 5 ms doubling to 1000 s.
    fn default() -> Self {
        Self::new(Duration::from_millis(5), Duration::from_secs(1000))
    }
}

impl<T> std::fmt::Debug for ItemExponentialFailure<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemExponentialFailure")
            .field("base", &self.base)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

/// `base * 2^exp`, or `max` if that is larger than `max` or overflows.
fn exponential(base: Duration, exp: u32, max: Duration) -> Duration {
    let delay = 1u128
        .checked_shl(exp)
        .and_then(|factor| base.as_nanos().checked_mul(factor));
    match delay {
        Some(nanos) if nanos <= max.as_nanos() => duration_from_nanos(nanos),
        _ => max,
    }
}

/// A `Duration` from a nanosecond count known to fit one (it is at most some
/// existing `Duration`'s `as_nanos()`).
fn duration_from_nanos(nanos: u128) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    let secs = u64::try_from(nanos / NANOS_PER_SEC).unwrap_or(u64::MAX);
    // The remainder is below one billion, so it always fits.
    let sub = u32::try_from(nanos % NANOS_PER_SEC).unwrap_or(0);
    Duration::new(secs, sub)
}

impl<T: Eq + Hash + Clone + Send + Sync> RateLimiter<T> for ItemExponentialFailure<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = {
            let mut failures = lock(&self.failures);
            let count = failures.entry(item.clone()).or_insert(0);
            let exp = *count;
            *count = count.saturating_add(1);
            exp
        };
        exponential(self.base, exp, self.max)
    }

    fn forget(&self, item: &T) {
        lock(&self.failures).remove(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        lock(&self.failures)
            .get(item)
            .map_or(0, |&n| usize::try_from(n).unwrap_or(usize::MAX))
    }
}

/// A global token bucket shared by every item (client-go's
/// `BucketRateLimiter` over `golang.org/x/time/rate`).
///
/// The bucket holds up to `burst` tokens and refills at `qps` tokens per
/// second; each [`when`](RateLimiter::when) reserves one token, possibly
/// going into debt, and returns the time until that debt is repaid. It does
/// not track items: [`num_requeues`](RateLimiter::num_requeues) is always 0.
/// Time is tokio's clock, so `tokio::time::pause()` drives it in tests.
///
/// As in `x/time/rate`, a bucket with `burst` 0 (and finite `qps`) never
/// grants a token and answers [`Duration::MAX`]; a bucket with infinite
/// `qps` always answers zero; a bucket with `qps` 0 grants `burst` tokens and
/// then answers [`Duration::MAX`].
#[derive(Debug)]
pub struct Bucket {
    qps: f64,
    burst: u32,
    state: Mutex<BucketState>,
}

#[derive(Debug)]
struct BucketState {
    tokens: f64,
    /// When tokens were last computed; `None` until the first reservation,
    /// which finds the bucket full.
    last: Option<Instant>,
}

impl Bucket {
    /// A bucket refilling at `qps` tokens per second, holding at most `burst`.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst,
            state: Mutex::new(BucketState {
                tokens: f64::from(burst),
                last: None,
            }),
        }
    }
}

impl Default for Bucket {
    /// client-go's controller default: 10 qps, burst 100.
    fn default() -> Self {
        Self::new(10.0, 100)
    }
}

impl Bucket {
    fn reserve(&self) -> Duration {
        if self.qps.is_infinite() && self.qps > 0.0 {
            return Duration::ZERO;
        }
        let burst = f64::from(self.burst);
        let refills = self.qps > 0.0;
        if self.burst == 0 && refills {
            return Duration::MAX;
        }
        let now = Instant::now();
        let mut state = lock(&self.state);
        let mut tokens = match state.last {
            None => burst,
            Some(last) if refills => {
                let elapsed = now.saturating_duration_since(last).as_secs_f64();
                (state.tokens + elapsed * self.qps).min(burst)
            }
            Some(_) => state.tokens,
        };
        if !refills {
            // A zero (or meaningless) rate never refills: spend what is left,
            // then never again.
            if tokens >= 1.0 {
                state.tokens = tokens - 1.0;
                state.last = Some(now);
                return Duration::ZERO;
            }
            return Duration::MAX;
        }
        tokens -= 1.0;
        state.tokens = tokens;
        state.last = Some(now);
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-tokens / self.qps).unwrap_or(Duration::MAX)
        }
    }
}

impl<T> RateLimiter<T> for Bucket {
    fn when(&self, _item: &T) -> Duration {
        self.reserve()
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> usize {
        0
    }
}

/// Retries quickly for the first attempts, then slowly (client-go's
/// `ItemFastSlowRateLimiter`): the first `max_fast_attempts` failures of an
/// item wait `fast`, later ones wait `slow`.
pub struct ItemFastSlow<T> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: usize,
    failures: Mutex<HashMap<T, usize>>,
}

impl<T> ItemFastSlow<T> {
    /// A limiter answering `fast` for `max_fast_attempts` failures, then `slow`.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: usize) -> Self {
        Self {
            fast,
            slow,
            max_fast_attempts,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> std::fmt::Debug for ItemFastSlow<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemFastSlow")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .finish_non_exhaustive()
    }
}

impl<T: Eq + Hash + Clone + Send + Sync> RateLimiter<T> for ItemFastSlow<T> {
    fn when(&self, item: &T) -> Duration {
        let attempts = {
            let mut failures = lock(&self.failures);
            let count = failures.entry(item.clone()).or_insert(0);
            *count = count.saturating_add(1);
            *count
        };
        if attempts <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, item: &T) {
        lock(&self.failures).remove(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        lock(&self.failures).get(item).copied().unwrap_or(0)
    }
}

/// Asks every limiter and answers the longest delay (client-go's
/// `MaxOfRateLimiter`). Every limiter records the failure; `forget` reaches
/// all of them; `num_requeues` is the largest count.
///
/// With a token bucket inside, the bucket's burst can appear exceeded when
/// other limiters delayed some items longer, as client-go notes.
pub struct MaxOf<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOf<T> {
    /// Combines `limiters`; with none, every delay is zero.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T> std::fmt::Debug for MaxOf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MaxOf")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> RateLimiter<T> for MaxOf<T> {
    fn when(&self, item: &T) -> Duration {
        // Every limiter must see the failure, so no short-circuiting.
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// client-go's `DefaultControllerRateLimiter`: the longer of a per-item
/// exponential backoff (5 ms doubling to 1000 s) and a global token bucket
/// (10 qps, burst 100) that only bounds the overall retry rate.
pub fn default_controller_rate_limiter<T>() -> MaxOf<T>
where
    T: Eq + Hash + Clone + Send + Sync + 'static,
{
    MaxOf::new(vec![
        Box::new(ItemExponentialFailure::<T>::default()),
        Box::new(Bucket::default()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_is_exact_below_the_cap() {
        let base = Duration::from_millis(5);
        let max = Duration::from_secs(1000);
        assert_eq!(exponential(base, 0, max), Duration::from_millis(5));
        assert_eq!(exponential(base, 1, max), Duration::from_millis(10));
        assert_eq!(exponential(base, 10, max), Duration::from_millis(5 * 1024));
        // 5 ms * 2^17 = 655.36 s < 1000 s; 2^18 exceeds it.
        assert_eq!(
            exponential(base, 17, max),
            Duration::from_micros(655_360_000)
        );
        assert_eq!(exponential(base, 18, max), max);
    }

    #[test]
    fn exponential_never_overflows() {
        for exp in [60, 63, 64, 100, 127, 128, 200, u32::MAX] {
            assert_eq!(
                exponential(Duration::MAX, exp, Duration::MAX),
                Duration::MAX,
                "exp {exp}"
            );
            assert_eq!(
                exponential(Duration::from_millis(5), exp, Duration::from_secs(1000)),
                Duration::from_secs(1000),
                "exp {exp}"
            );
        }
        // An uncapped limiter reaches Duration::MAX without wrapping.
        assert_eq!(
            exponential(Duration::from_nanos(1), 127, Duration::MAX),
            Duration::MAX
        );
    }

    #[test]
    fn duration_from_nanos_round_trips() {
        for d in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::new(12, 345_678_901),
            Duration::MAX,
        ] {
            assert_eq!(duration_from_nanos(d.as_nanos()), d);
        }
    }
}
