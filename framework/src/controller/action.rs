//! What a reconcile asks for next ([`Action`]), and the marker for errors
//! that retrying cannot fix ([`TerminalError`]).
//!
//! The controller turns each result into workqueue calls exactly as
//! controller-runtime's `reconcileHandler` does:
//!
//! | reconcile returned                 | queue                         | `result` label  |
//! |------------------------------------|-------------------------------|-----------------|
//! | `Err(e)`, `e` not terminal         | `add_rate_limited`            | `error`         |
//! | `Err(e)`, `e` terminal             | nothing (logged, counted)     | `error`         |
//! | [`Action::requeue_after`]`(d > 0)` | `forget`, then `add_after(d)` | `requeue_after` |
//! | [`Action::requeue`]                | `add_rate_limited`            | `requeue`       |
//! | [`Action::done`]                   | `forget`                      | `success`       |
//!
//! Every re-add is at the priority the key was handed out at, unless the
//! action names one with [`Action::with_priority`] (controller-runtime's
//! `Result.Priority`, `pkg/reconcile/reconcile.go`).

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use crate::reconcile::finalizer::Outcome;
use crate::workqueue::Priority;

/// What the controller does with an object after a successful reconcile.
///
/// ```
/// use std::time::Duration;
/// use kubeforge::controller::Action;
///
/// // Check again in five minutes even if nothing changes (drift detection).
/// let periodic = Action::requeue_after(Duration::from_secs(300));
/// assert_eq!(periodic.requeue_after_duration(), Some(Duration::from_secs(300)));
/// // Nothing more to do until the object or something it watches changes.
/// assert!(Action::done().is_done());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Action {
    next: Next,
    /// The priority of the re-add; `None`: the key's current one.
    priority: Option<Priority>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
enum Next {
    #[default]
    Done,
    After(Duration),
    RateLimited,
}

impl Action {
    /// Nothing more to do: the key's retry history is forgotten and the
    /// object is reconciled again only when a watched event enqueues it
    /// (controller-runtime's `Result{}`).
    pub const fn done() -> Self {
        Self {
            next: Next::Done,
            priority: None,
        }
    }

    /// The same as [`done`](Self::done), named as kube-rs names it: wait
    /// for the next change.
    pub const fn await_change() -> Self {
        Self::done()
    }

    /// Reconcile again after `delay`, even if nothing changes; the retry
    /// history is forgotten first (controller-runtime's
    /// `Result{RequeueAfter: d}`). A zero delay means [`done`](Self::done),
    /// as `RequeueAfter: 0` does in controller-runtime.
    pub const fn requeue_after(delay: Duration) -> Self {
        if delay.is_zero() {
            Self::done()
        } else {
            Self {
                next: Next::After(delay),
                priority: None,
            }
        }
    }

    /// Reconcile again after the rate limiter's delay, as after an error but
    /// without logging one (controller-runtime's `Result{Requeue: true}`).
    pub const fn requeue() -> Self {
        Self {
            next: Next::RateLimited,
            priority: None,
        }
    }

    /// Re-adds the key at `priority` rather than at the priority it was
    /// handed out at (controller-runtime's `Result.Priority`): after an
    /// error too, when this is what the error policy returns. Higher goes
    /// first; [`LOW_PRIORITY`](crate::workqueue::LOW_PRIORITY) is what an
    /// informer's initial list and resyncs enqueue at. Meaningless on
    /// [`done`](Self::done), which re-adds nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kubeforge::controller::Action;
    /// use kubeforge::workqueue::LOW_PRIORITY;
    ///
    /// // A periodic check that must not delay live changes.
    /// let periodic = Action::requeue_after(Duration::from_secs(300)).with_priority(LOW_PRIORITY);
    /// assert_eq!(periodic.priority(), Some(LOW_PRIORITY));
    /// ```
    pub const fn with_priority(mut self, priority: Priority) -> Self {
        self.priority = Some(priority);
        self
    }

    /// The priority set with [`with_priority`](Self::with_priority), if any.
    pub const fn priority(&self) -> Option<Priority> {
        self.priority
    }

    /// Whether this is [`done`](Self::done).
    pub const fn is_done(&self) -> bool {
        matches!(self.next, Next::Done)
    }

    /// The delay of [`requeue_after`](Self::requeue_after), if that is what
    /// this is.
    pub const fn requeue_after_duration(&self) -> Option<Duration> {
        match self.next {
            Next::After(d) => Some(d),
            _ => None,
        }
    }

    /// Whether this is a rate-limited [`requeue`](Self::requeue).
    pub const fn is_rate_limited_requeue(&self) -> bool {
        matches!(self.next, Next::RateLimited)
    }

    /// The `result` label of `controller_runtime_reconcile_total` for this
    /// action: `success`, `requeue_after` or `requeue`.
    pub const fn result_label(&self) -> &'static str {
        match self.next {
            Next::Done => "success",
            Next::After(_) => "requeue_after",
            Next::RateLimited => "requeue",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.next {
            Next::Done => f.write_str("done"),
            Next::After(d) => write!(f, "requeue after {d:?}"),
            Next::RateLimited => f.write_str("requeue (rate limited)"),
        }
    }
}

/// The action a finalizer flow's
/// reconciler returned; [`done`](Action::done) when nothing ran.
impl From<Outcome<Action>> for Action {
    fn from(outcome: Outcome<Action>) -> Self {
        outcome.into_value().unwrap_or_default()
    }
}

/// Writes an error and its sources as `outer: inner: innermost`, skipping
/// a source whose text the outer message already ends with (thiserror's
/// `"{0}"` messages repeat their source).
pub(crate) struct ErrorChain<'a>(pub(crate) &'a (dyn StdError + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut written = self.0.to_string();
        f.write_str(&written)?;
        let mut next = self.0.source();
        while let Some(e) = next {
            let text = e.to_string();
            if !written.ends_with(&text) {
                write!(f, ": {text}")?;
                written = text;
            }
            next = e.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::TerminalError;

    #[derive(Debug, thiserror::Error)]
    enum AppError {
        #[error("invalid: {0}")]
        Invalid(#[from] TerminalError),
        #[error("wrapped")]
        Wrapped(#[source] Box<AppError>),
    }

    #[test]
    fn actions_map_to_controller_runtime_results() {
        assert_eq!(Action::done().result_label(), "success");
        assert_eq!(Action::await_change(), Action::done());
        assert_eq!(Action::default(), Action::done());
        let after = Action::requeue_after(Duration::from_secs(3));
        assert_eq!(after.result_label(), "requeue_after");
        assert_eq!(after.requeue_after_duration(), Some(Duration::from_secs(3)));
        assert!(Action::requeue().is_rate_limited_requeue());
        assert_eq!(Action::requeue().result_label(), "requeue");
        // `RequeueAfter: 0` is a plain success in controller-runtime.
        assert!(Action::requeue_after(Duration::ZERO).is_done());
    }

    #[test]
    fn an_action_carries_the_priority_of_its_re_add() {
        assert_eq!(Action::requeue().priority(), None);
        let raised = Action::requeue().with_priority(7);
        assert_eq!(raised.priority(), Some(7));
        assert!(raised.is_rate_limited_requeue());
        assert_eq!(raised.result_label(), "requeue");
        let after = Action::requeue_after(Duration::from_secs(1)).with_priority(-100);
        assert_eq!(after.requeue_after_duration(), Some(Duration::from_secs(1)));
        assert_eq!(after.priority(), Some(-100));
    }

    #[test]
    fn finalizer_outcomes_become_actions() {
        let applied = Outcome::Applied {
            value: Action::requeue_after(Duration::from_secs(9)),
            finalizer_added: true,
        };
        assert_eq!(
            Action::from(applied),
            Action::requeue_after(Duration::from_secs(9))
        );
        assert_eq!(
            Action::from(Outcome::CleanedUp(Action::requeue())),
            Action::requeue()
        );
        assert_eq!(Action::from(Outcome::<Action>::Skipped), Action::done());
    }

    #[test]
    fn error_chains_do_not_repeat_sources() {
        let err = AppError::Wrapped(Box::new(AppError::from(TerminalError::new("bad"))));
        assert_eq!(
            ErrorChain(&err).to_string(),
            "wrapped: invalid: terminal error: bad"
        );
    }
}
