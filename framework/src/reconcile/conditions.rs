//! Status conditions (`metav1.Condition` lists): set, find, test and remove
//! them with apimachinery's semantics (`k8s.io/apimachinery/pkg/api/meta`
//! `conditions.go`).
//!
//! [`set_condition`] changes `lastTransitionTime` only when the condition
//! appears or its `status` flips; a new reason, message or
//! `observedGeneration` updates the entry in place and still reports a
//! change, so a reconciler writes status only when [`set_condition`]
//! returned `true`.
//!
//! The k8s-openapi `Condition` has a required `lastTransitionTime`; a time
//! at or before the Unix epoch (what `Default` gives, and Go's zero time) is
//! taken as "unset" and stamped with the current time, as Go's `IsZero()`
//! check does.
//!
//! ```
//! use kubeforge::reconcile::conditions::{self, ConditionExt as _, ConditionStatus};
//!
//! let mut conds = Vec::new();
//! let ready = conditions::new_condition("Available", ConditionStatus::True, "Reconciled", "3/3 ready")
//!     .with_observed_generation(Some(4));
//! assert!(conditions::set_condition(&mut conds, ready.clone()));
//! assert!(!conditions::set_condition(&mut conds, ready)); // nothing changed
//! assert!(conditions::is_condition_true(&conds, "Available"));
//! assert!(conditions::is_condition_current(&conds, "Available", 4));
//! ```

use std::fmt;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube_core::Resource;

/// The three values of a condition's `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    /// `"True"`.
    True,
    /// `"False"`.
    False,
    /// `"Unknown"`.
    Unknown,
}

impl ConditionStatus {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

impl From<bool> for ConditionStatus {
    fn from(value: bool) -> Self {
        if value {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        }
    }
}

impl fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Builder-style additions to k8s-openapi's `Condition`.
pub trait ConditionExt: Sized {
    /// Sets `observedGeneration` (usually the object's `metadata.generation`).
    fn with_observed_generation(self, generation: Option<i64>) -> Self;
    /// Sets `lastTransitionTime` explicitly; [`set_condition`] keeps it when
    /// the status changes instead of using the current time.
    fn with_last_transition_time(self, time: Timestamp) -> Self;
}

impl ConditionExt for Condition {
    fn with_observed_generation(mut self, generation: Option<i64>) -> Self {
        self.observed_generation = generation;
        self
    }

    fn with_last_transition_time(mut self, time: Timestamp) -> Self {
        self.last_transition_time = Time(time);
        self
    }
}

/// A condition with an unset `lastTransitionTime`, for [`set_condition`].
pub fn new_condition(
    type_: impl Into<String>,
    status: ConditionStatus,
    reason: impl Into<String>,
    message: impl Into<String>,
) -> Condition {
    Condition {
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
        message: message.into(),
        observed_generation: None,
        reason: reason.into(),
        status: status.as_str().to_owned(),
        type_: type_.into(),
    }
}

/// Whether `time` counts as unset (Go's `Time.IsZero()`).
fn is_unset(time: &Time) -> bool {
    time.0 <= Timestamp::UNIX_EPOCH
}

/// Sets `new` in `conditions` and returns whether anything changed, stamping
/// a transition with the current time. See [`set_condition_at`].
pub fn set_condition(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    set_condition_at(conditions, new, Timestamp::now())
}

/// Sets `new` in `conditions`, using `now` as the transition time, and
/// returns whether anything changed (apimachinery's `SetStatusCondition`):
///
/// - no condition of that type: `new` is appended, with `now` as its
///   `lastTransitionTime` unless it carries one;
/// - the status differs: status and `lastTransitionTime` (from `new` if set,
///   else `now`) change;
/// - reason, message and `observedGeneration` are copied, each difference
///   counting as a change but leaving `lastTransitionTime` alone.
pub fn set_condition_at(
    conditions: &mut Vec<Condition>,
    mut new: Condition,
    now: Timestamp,
) -> bool {
    let Some(existing) = find_condition_mut(conditions, &new.type_) else {
        if is_unset(&new.last_transition_time) {
            new.last_transition_time = Time(now);
        }
        conditions.push(new);
        return true;
    };

    let mut changed = false;
    if existing.status != new.status {
        existing.status = new.status;
        existing.last_transition_time = if is_unset(&new.last_transition_time) {
            Time(now)
        } else {
            new.last_transition_time
        };
        changed = true;
    }
    if existing.reason != new.reason {
        existing.reason = new.reason;
        changed = true;
    }
    if existing.message != new.message {
        existing.message = new.message;
        changed = true;
    }
    if existing.observed_generation != new.observed_generation {
        existing.observed_generation = new.observed_generation;
        changed = true;
    }
    changed
}

/// [`set_condition`] with `observedGeneration` taken from `obj`'s
/// `metadata.generation`, the usual way to tie a condition to the spec it
/// describes.
pub fn set_condition_for<K: Resource>(
    conditions: &mut Vec<Condition>,
    obj: &K,
    new: Condition,
) -> bool {
    set_condition(
        conditions,
        new.with_observed_generation(obj.meta().generation),
    )
}

/// Removes the condition of `type_`; returns whether one was there.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// The condition of `type_`, if present.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The condition of `type_`, mutably, if present.
pub fn find_condition_mut<'a>(
    conditions: &'a mut [Condition],
    type_: &str,
) -> Option<&'a mut Condition> {
    conditions.iter_mut().find(|c| c.type_ == type_)
}

/// Whether the condition of `type_` is present with `status`.
pub fn is_condition_present_and_equal(
    conditions: &[Condition],
    type_: &str,
    status: ConditionStatus,
) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == status.as_str())
}

/// Whether the condition of `type_` is present and `True`.
pub fn is_condition_true(conditions: &[Condition], type_: &str) -> bool {
    is_condition_present_and_equal(conditions, type_, ConditionStatus::True)
}

/// Whether the condition of `type_` is present and `False`.
pub fn is_condition_false(conditions: &[Condition], type_: &str) -> bool {
    is_condition_present_and_equal(conditions, type_, ConditionStatus::False)
}

/// Whether the condition of `type_` was set for `generation` (its
/// `observedGeneration` equals it), i.e. it describes the current spec
/// rather than an older one.
pub fn is_condition_current(conditions: &[Condition], type_: &str, generation: i64) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.observed_generation == Some(generation))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::ToSpan as _;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn cond(type_: &str, status: ConditionStatus, reason: &str) -> Condition {
        new_condition(type_, status, reason, "")
    }

    #[test]
    fn a_new_condition_is_appended_with_now_as_transition_time() {
        let mut conds = Vec::new();
        assert!(set_condition_at(
            &mut conds,
            cond("Ready", ConditionStatus::False, "Starting"),
            t(0)
        ));
        assert_eq!(conds.len(), 1);
        assert_eq!(conds[0].last_transition_time, Time(t(0)));
        assert_eq!(conds[0].status, "False");
    }

    #[test]
    fn an_explicit_transition_time_is_kept_on_append() {
        let mut conds = Vec::new();
        let c = cond("Ready", ConditionStatus::True, "Up").with_last_transition_time(t(-50));
        set_condition_at(&mut conds, c, t(0));
        assert_eq!(conds[0].last_transition_time, Time(t(-50)));
    }

    #[test]
    fn transition_time_changes_only_when_status_changes() {
        // apimachinery conditions_test.go TestSetStatusCondition.
        let mut conds = Vec::new();
        set_condition_at(&mut conds, cond("Ready", ConditionStatus::False, "A"), t(0));

        // Same status, new reason and message: changed, time kept.
        let mut c = cond("Ready", ConditionStatus::False, "B");
        c.message = "still waiting".into();
        assert!(set_condition_at(&mut conds, c, t(10)));
        assert_eq!(conds[0].last_transition_time, Time(t(0)));
        assert_eq!(conds[0].reason, "B");
        assert_eq!(conds[0].message, "still waiting");

        // Identical: unchanged.
        let mut same = cond("Ready", ConditionStatus::False, "B");
        same.message = "still waiting".into();
        assert!(!set_condition_at(&mut conds, same, t(20)));
        assert_eq!(conds[0].last_transition_time, Time(t(0)));

        // Status flips: time moves to now.
        assert!(set_condition_at(
            &mut conds,
            cond("Ready", ConditionStatus::True, "B"),
            t(30)
        ));
        assert_eq!(conds[0].last_transition_time, Time(t(30)));
        assert_eq!(conds[0].status, "True");
        assert_eq!(conds[0].message, "");

        // Status flips with an explicit time: that time wins.
        let c = cond("Ready", ConditionStatus::Unknown, "B").with_last_transition_time(t(35));
        assert!(set_condition_at(&mut conds, c, t(40)));
        assert_eq!(conds[0].last_transition_time, Time(t(35)));
    }

    #[test]
    fn an_explicit_time_is_ignored_when_status_is_unchanged() {
        let mut conds = Vec::new();
        set_condition_at(&mut conds, cond("Ready", ConditionStatus::True, "A"), t(0));
        let c = cond("Ready", ConditionStatus::True, "A").with_last_transition_time(t(99));
        assert!(!set_condition_at(&mut conds, c, t(100)));
        assert_eq!(conds[0].last_transition_time, Time(t(0)));
    }

    #[test]
    fn observed_generation_is_copied_and_counts_as_a_change() {
        let mut conds = Vec::new();
        set_condition_at(
            &mut conds,
            cond("Ready", ConditionStatus::True, "A").with_observed_generation(Some(1)),
            t(0),
        );
        assert!(is_condition_current(&conds, "Ready", 1));
        assert!(set_condition_at(
            &mut conds,
            cond("Ready", ConditionStatus::True, "A").with_observed_generation(Some(2)),
            t(5)
        ));
        assert!(is_condition_current(&conds, "Ready", 2));
        assert!(!is_condition_current(&conds, "Ready", 1));
        assert_eq!(conds[0].last_transition_time, Time(t(0)));
        assert!(!is_condition_current(&conds, "Missing", 2));
    }

    #[test]
    fn set_condition_for_stamps_the_object_generation() {
        let obj = ConfigMap {
            metadata: ObjectMeta {
                generation: Some(7),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut conds = Vec::new();
        assert!(set_condition_for(
            &mut conds,
            &obj,
            cond("Ready", ConditionStatus::True, "A")
        ));
        assert_eq!(conds[0].observed_generation, Some(7));
        // The real clock was used.
        let age = Timestamp::now()
            .since(conds[0].last_transition_time.0)
            .unwrap();
        assert!(age.compare(1.minute()).unwrap().is_lt());
    }

    #[test]
    fn other_conditions_are_left_alone() {
        let mut conds = Vec::new();
        set_condition_at(&mut conds, cond("A", ConditionStatus::True, "x"), t(0));
        set_condition_at(&mut conds, cond("B", ConditionStatus::False, "y"), t(1));
        set_condition_at(&mut conds, cond("A", ConditionStatus::False, "x"), t(2));
        assert_eq!(conds.len(), 2);
        assert_eq!(conds[1].last_transition_time, Time(t(1)));
        assert_eq!(conds[1].status, "False");
        assert_eq!(conds[0].type_, "A");
    }

    #[test]
    fn find_test_and_remove() {
        let mut conds = Vec::new();
        set_condition_at(&mut conds, cond("A", ConditionStatus::True, "x"), t(0));
        set_condition_at(&mut conds, cond("B", ConditionStatus::False, "y"), t(0));
        set_condition_at(&mut conds, cond("C", ConditionStatus::Unknown, "z"), t(0));
        assert_eq!(find_condition(&conds, "B").unwrap().reason, "y");
        assert!(find_condition(&conds, "D").is_none());
        assert!(is_condition_true(&conds, "A"));
        assert!(!is_condition_true(&conds, "B"));
        assert!(is_condition_false(&conds, "B"));
        assert!(!is_condition_false(&conds, "C"));
        assert!(!is_condition_true(&conds, "D") && !is_condition_false(&conds, "D"));
        assert!(is_condition_present_and_equal(
            &conds,
            "C",
            ConditionStatus::Unknown
        ));
        find_condition_mut(&mut conds, "C").unwrap().message = "m".into();
        assert_eq!(conds[2].message, "m");

        assert!(remove_condition(&mut conds, "B"));
        assert!(!remove_condition(&mut conds, "B"));
        assert_eq!(
            conds.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(),
            ["A", "C"]
        );
    }

    #[test]
    fn go_zero_time_from_the_wire_counts_as_unset() {
        let c: Condition = serde_json::from_value(serde_json::json!({
            "type": "Ready", "status": "True", "reason": "A", "message": "",
            "lastTransitionTime": "0001-01-01T00:00:00Z"
        }))
        .unwrap();
        let mut conds = Vec::new();
        set_condition_at(&mut conds, c, t(3));
        assert_eq!(conds[0].last_transition_time, Time(t(3)));
    }

    #[test]
    fn status_values_and_conversions() {
        assert_eq!(ConditionStatus::from(true).as_str(), "True");
        assert_eq!(ConditionStatus::from(false).to_string(), "False");
        assert_eq!(ConditionStatus::Unknown.as_str(), "Unknown");
    }
}
