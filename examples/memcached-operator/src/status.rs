//! What a Memcached's status says, computed from its Deployment as the API
//! server last returned it: replica counts, the pod selector, and the
//! `Available`, `Progressing` and `Degraded` conditions.
//!
//! Pure functions of the two objects and the clock, so every case is a
//! unit test. The rules, from the Deployment's status (what `kubectl
//! rollout status` reads, `kubectl/pkg/polymorphichelpers/rollout_status.go`):
//!
//! | condition     | `True` when                                                          |
//! |---------------|----------------------------------------------------------------------|
//! | `Available`   | at least `spec.size` pods are available                               |
//! | `Progressing` | the rollout is not finished: the Deployment controller has not seen the latest Deployment spec, or pods are still being updated, started, or removed |
//! | `Degraded`    | the Deployment reports `ProgressDeadlineExceeded` or a `ReplicaFailure` |
//!
//! A stalled rollout (`ProgressDeadlineExceeded`) is `Progressing=False`
//! and `Degraded=True`. `lastTransitionTime` moves only when a condition's
//! status flips (`set_condition`).

use kubeforge::k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus};
use kubeforge::k8s_openapi::jiff::Timestamp;
use kubeforge::reconcile::conditions::ConditionStatus::{self, False, True};
use kubeforge::reconcile::conditions::{new_condition, set_condition_at, ConditionExt as _};

use crate::api::{Memcached, MemcachedStatus};

/// Condition type: every desired pod is available.
pub const AVAILABLE: &str = "Available";
/// Condition type: a rollout or scale is under way.
pub const PROGRESSING: &str = "Progressing";
/// Condition type: the Deployment cannot make progress.
pub const DEGRADED: &str = "Degraded";

/// The selector (as `key=value,...` text) of the pods of a Deployment,
/// from its `spec.selector.matchLabels`.
pub fn selector_text(deployment: &Deployment) -> Option<String> {
    let labels = deployment
        .spec
        .selector
        .match_labels
        .as_ref()
        .filter(|l| !l.is_empty())?;
    Some(
        labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
    )
}

fn deployment_condition<'a>(
    deployment: &'a Deployment,
    type_: &str,
) -> Option<&'a DeploymentCondition> {
    deployment
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_.as_deref() == Some(type_))
}

/// The status `mc` should have, given its Deployment `deployment` as the
/// API server returned it and `now` as the transition time of conditions
/// that flip. Conditions already in `mc.status` keep their
/// `lastTransitionTime` unless their status changes.
pub fn observe(mc: &Memcached, deployment: &Deployment, now: Timestamp) -> MemcachedStatus {
    let desired = mc.spec.size;
    let generation = mc.metadata.generation;
    let ds = deployment.status.as_ref();
    let count = |field: fn(&DeploymentStatus) -> Option<i32>| ds.and_then(field).unwrap_or(0);
    let replicas = count(|s| s.replicas);
    let ready = count(|s| s.ready_replicas);
    let available = count(|s| s.available_replicas);
    let updated = count(|s| s.updated_replicas);
    // Whether the Deployment controller has acted on the spec we applied.
    let observed_generation = ds.and_then(|s| s.observed_generation);
    let observed = match (observed_generation, deployment.metadata.generation) {
        (Some(seen), Some(current)) => seen >= current,
        _ => false,
    };

    let stalled = deployment_condition(deployment, "Progressing").filter(|c| {
        c.status.as_deref() == Some("False")
            && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
    });
    let replica_failure = deployment_condition(deployment, "ReplicaFailure")
        .filter(|c| c.status.as_deref() == Some("True"));

    let mut conditions = mc
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut set = |type_: &str, status: ConditionStatus, reason: &str, message: String| {
        set_condition_at(
            &mut conditions,
            new_condition(type_, status, reason, message).with_observed_generation(generation),
            now,
        );
    };

    let counts = format!("{available}/{desired} pods available, {ready} ready");
    let (status, reason) = if available >= desired {
        (True, "PodsAvailable")
    } else {
        (False, "PodsUnavailable")
    };
    set(AVAILABLE, status, reason, counts.clone());

    let rollout_done =
        observed && updated >= desired && replicas == updated && available >= updated;
    let (status, reason, message) = if let Some(c) = stalled {
        let message = c.message.clone().unwrap_or_else(|| counts.clone());
        (False, "ProgressDeadlineExceeded", message)
    } else if rollout_done {
        (False, "RolloutComplete", counts)
    } else if !observed {
        let generation = deployment.metadata.generation.unwrap_or(0);
        let message =
            format!("waiting for the Deployment controller to act on generation {generation}");
        (True, "DeploymentPending", message)
    } else if updated < desired {
        (
            True,
            "Updating",
            format!("{updated}/{desired} pods updated"),
        )
    } else if replicas > updated {
        let old = replicas - updated;
        (
            True,
            "RemovingOldPods",
            format!("{old} old pods pending termination"),
        )
    } else {
        (True, "WaitingForPods", counts)
    };
    set(PROGRESSING, status, reason, message);

    let message = |c: &DeploymentCondition| c.message.clone().unwrap_or_default();
    let (status, reason, message) = match (stalled, replica_failure) {
        (Some(c), _) => (True, "ProgressDeadlineExceeded", message(c)),
        (None, Some(c)) => (True, "ReplicaFailure", message(c)),
        (None, None) => (
            False,
            "AsExpected",
            "the Deployment reports no failures".to_owned(),
        ),
    };
    set(DEGRADED, status, reason, message);

    MemcachedStatus {
        conditions,
        replicas,
        ready_replicas: ready,
        available_replicas: available,
        selector: selector_text(deployment),
        observed_generation: generation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::MemcachedSpec;
    use kubeforge::k8s_openapi::api::apps::v1::DeploymentSpec;
    use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
    use kubeforge::reconcile::conditions::find_condition;

    fn t(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    fn memcached(size: i32, generation: i64) -> Memcached {
        let mut mc = Memcached::new("cache", MemcachedSpec::with_size(size));
        mc.metadata.namespace = Some("default".into());
        mc.metadata.generation = Some(generation);
        mc
    }

    fn deployment(generation: i64, status: Option<DeploymentStatus>) -> Deployment {
        let mut d = Deployment::default();
        d.metadata.generation = Some(generation);
        d.spec = DeploymentSpec {
            selector: LabelSelector {
                match_labels: Some(
                    [
                        ("app.kubernetes.io/instance", "cache"),
                        ("app.kubernetes.io/name", "memcached"),
                    ]
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        };
        d.status = status;
        d
    }

    fn rolled_out(generation: i64, n: i32) -> DeploymentStatus {
        DeploymentStatus {
            observed_generation: Some(generation),
            replicas: Some(n),
            updated_replicas: Some(n),
            ready_replicas: Some(n),
            available_replicas: Some(n),
            ..Default::default()
        }
    }

    fn status_of(s: &MemcachedStatus, type_: &str) -> (String, String) {
        let c = find_condition(&s.conditions, type_).unwrap_or_else(|| panic!("{type_} is set"));
        (c.status.clone(), c.reason.clone())
    }

    #[test]
    fn a_new_deployment_is_progressing_and_unavailable() {
        let s = observe(&memcached(3, 1), &deployment(1, None), t(0));
        assert_eq!(
            status_of(&s, AVAILABLE),
            ("False".into(), "PodsUnavailable".into())
        );
        assert_eq!(
            status_of(&s, PROGRESSING),
            ("True".into(), "DeploymentPending".into())
        );
        assert_eq!(
            status_of(&s, DEGRADED),
            ("False".into(), "AsExpected".into())
        );
        assert_eq!(
            (s.replicas, s.ready_replicas, s.available_replicas),
            (0, 0, 0)
        );
        assert_eq!(
            s.selector.as_deref(),
            Some("app.kubernetes.io/instance=cache,app.kubernetes.io/name=memcached")
        );
        assert_eq!(s.observed_generation, Some(1));
        assert!(s
            .conditions
            .iter()
            .all(|c| c.observed_generation == Some(1)));
        assert!(s
            .conditions
            .iter()
            .all(|c| c.last_transition_time == Time(t(0))));
    }

    #[test]
    fn a_finished_rollout_is_available_and_complete() {
        let s = observe(
            &memcached(3, 1),
            &deployment(2, Some(rolled_out(2, 3))),
            t(0),
        );
        assert_eq!(
            status_of(&s, AVAILABLE),
            ("True".into(), "PodsAvailable".into())
        );
        assert_eq!(
            status_of(&s, PROGRESSING),
            ("False".into(), "RolloutComplete".into())
        );
        assert_eq!(
            (s.replicas, s.ready_replicas, s.available_replicas),
            (3, 3, 3)
        );
    }

    #[test]
    fn transition_times_move_only_when_a_status_flips() {
        let mut mc = memcached(3, 1);
        let first = observe(&mc, &deployment(1, None), t(0));
        mc.status = Some(first);
        // Partly ready: Available stays False (time kept), Progressing stays True.
        let mut partial = rolled_out(1, 3);
        partial.available_replicas = Some(1);
        partial.ready_replicas = Some(1);
        let second = observe(&mc, &deployment(1, Some(partial)), t(10));
        let available = find_condition(&second.conditions, AVAILABLE).unwrap();
        assert_eq!(available.last_transition_time, Time(t(0)));
        assert_eq!(available.message, "1/3 pods available, 1 ready");
        assert_eq!(
            status_of(&second, PROGRESSING),
            ("True".into(), "WaitingForPods".into())
        );
        assert_eq!(
            find_condition(&second.conditions, PROGRESSING)
                .unwrap()
                .last_transition_time,
            Time(t(0))
        );
        mc.status = Some(second);
        // All available: both flip at t(20); Degraded never changed.
        let third = observe(&mc, &deployment(1, Some(rolled_out(1, 3))), t(20));
        for type_ in [AVAILABLE, PROGRESSING] {
            assert_eq!(
                find_condition(&third.conditions, type_)
                    .unwrap()
                    .last_transition_time,
                Time(t(20)),
                "{type_}"
            );
        }
        assert_eq!(
            find_condition(&third.conditions, DEGRADED)
                .unwrap()
                .last_transition_time,
            Time(t(0))
        );
        // Nothing new: the same status, so no write is needed.
        mc.status = Some(third.clone());
        assert_eq!(
            observe(&mc, &deployment(1, Some(rolled_out(1, 3))), t(30)),
            third
        );
    }

    #[test]
    fn scaling_up_is_progressing_until_the_new_pods_are_available() {
        let mc = memcached(5, 2);
        // The Deployment controller has not seen the new replica count yet.
        let s = observe(&mc, &deployment(2, Some(rolled_out(1, 3))), t(0));
        assert_eq!(
            status_of(&s, AVAILABLE),
            ("False".into(), "PodsUnavailable".into())
        );
        assert_eq!(
            status_of(&s, PROGRESSING),
            ("True".into(), "DeploymentPending".into())
        );
        // Seen, pods being created.
        let mut scaling = rolled_out(2, 3);
        scaling.replicas = Some(5);
        scaling.updated_replicas = Some(5);
        let s = observe(&mc, &deployment(2, Some(scaling)), t(0));
        assert_eq!(
            status_of(&s, PROGRESSING),
            ("True".into(), "WaitingForPods".into())
        );
        assert_eq!(s.replicas, 5);
    }

    #[test]
    fn an_image_change_reports_updating_then_old_pods() {
        let mc = memcached(3, 2);
        let mut rolling = rolled_out(3, 3);
        rolling.updated_replicas = Some(1);
        rolling.replicas = Some(4);
        let s = observe(&mc, &deployment(3, Some(rolling.clone())), t(0));
        assert_eq!(
            status_of(&s, PROGRESSING),
            ("True".into(), "Updating".into())
        );
        rolling.updated_replicas = Some(3);
        let s = observe(&mc, &deployment(3, Some(rolling)), t(0));
        assert_eq!(
            status_of(&s, PROGRESSING),
            ("True".into(), "RemovingOldPods".into())
        );
    }

    #[test]
    fn a_stalled_rollout_is_degraded() {
        let mut status = rolled_out(1, 3);
        status.available_replicas = Some(2);
        status.conditions = Some(vec![DeploymentCondition {
            type_: Some("Progressing".into()),
            status: Some("False".into()),
            reason: Some("ProgressDeadlineExceeded".into()),
            message: Some("ReplicaSet \"cache-5d\" has timed out progressing.".into()),
            ..Default::default()
        }]);
        let s = observe(&memcached(3, 1), &deployment(1, Some(status)), t(0));
        assert_eq!(
            status_of(&s, PROGRESSING),
            ("False".into(), "ProgressDeadlineExceeded".into())
        );
        assert_eq!(
            status_of(&s, DEGRADED),
            ("True".into(), "ProgressDeadlineExceeded".into())
        );
        assert_eq!(
            find_condition(&s.conditions, DEGRADED).unwrap().message,
            "ReplicaSet \"cache-5d\" has timed out progressing."
        );
        assert_eq!(
            status_of(&s, AVAILABLE),
            ("False".into(), "PodsUnavailable".into())
        );
    }

    #[test]
    fn a_replica_failure_is_degraded() {
        let mut status = rolled_out(1, 3);
        status.available_replicas = Some(0);
        status.conditions = Some(vec![DeploymentCondition {
            type_: Some("ReplicaFailure".into()),
            status: Some("True".into()),
            reason: Some("FailedCreate".into()),
            message: Some("pods \"cache-x\" is forbidden: exceeded quota".into()),
            ..Default::default()
        }]);
        let s = observe(&memcached(3, 1), &deployment(1, Some(status)), t(0));
        assert_eq!(
            status_of(&s, DEGRADED),
            ("True".into(), "ReplicaFailure".into())
        );
    }
}
