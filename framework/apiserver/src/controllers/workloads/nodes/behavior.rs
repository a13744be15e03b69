//! Which [`PodBehavior`] and [`Readiness`] a simulated pod gets: its own
//! annotations (`sim.kubeforge.dev/*`) first, then the first matching
//! [`PodPolicy`], then the defaults — pods owned by a Job exit 0 after the
//! Job pod duration (as kwok completes them), others run forever, ready
//! as soon as they run.

use std::time::Duration;

use serde_json::Value;

use crate::controllers::config::{
    parse_duration, PodBehavior, PodPolicy, Readiness, Workloads, ANNOTATION_EXIT_AFTER,
    ANNOTATION_EXIT_CODE, ANNOTATION_IMAGE_PULL, ANNOTATION_READY, ANNOTATION_START_LATENCY,
};
use crate::machinery::util::Pointer;

/// A pod's resolved behaviour.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Plan {
    pub start_latency: Duration,
    pub behavior: PodBehavior,
    pub readiness: Readiness,
}

fn annotation<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
    pod.at("/metadata/annotations")?.get(key)?.as_str()
}

fn matches(policy: &PodPolicy, pod: &Value) -> bool {
    if let Some(ns) = &policy.namespace {
        if pod.at("/metadata/namespace").and_then(Value::as_str) != Some(ns.as_str()) {
            return false;
        }
    }
    let labels = pod.at("/metadata/labels");
    if !policy
        .labels
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)).and_then(Value::as_str) == Some(v.as_str()))
    {
        return false;
    }
    if let Some(text) = &policy.image_contains {
        let any = pod
            .at("/spec/containers")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("image")
                        .and_then(Value::as_str)
                        .is_some_and(|i| i.contains(text.as_str()))
                })
            });
        if !any {
            return false;
        }
    }
    true
}

fn parse_readiness(text: &str) -> Option<Readiness> {
    match text {
        "never" | "false" => Some(Readiness::Never),
        "true" | "0" => Some(Readiness::Immediate),
        _ => match text.strip_prefix("flip:") {
            Some(p) => parse_duration(p).map(Readiness::Flip),
            None => parse_duration(text).map(Readiness::After),
        },
    }
}

/// Resolves the plan for `pod`.
pub(crate) fn plan(cfg: &Workloads, pod: &Value) -> Plan {
    let owned_by_job = pod
        .at("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|rs| {
            rs.iter()
                .any(|r| r.get("kind").and_then(Value::as_str) == Some("Job"))
        });
    let mut plan = Plan {
        start_latency: cfg.timing.start_latency,
        behavior: if owned_by_job {
            PodBehavior::Exit {
                after: cfg.timing.job_pod_duration,
                code: 0,
            }
        } else {
            PodBehavior::RunForever
        },
        readiness: Readiness::Immediate,
    };
    if let Some(p) = cfg.policies.iter().find(|p| matches(p, pod)) {
        if let Some(b) = &p.behavior {
            plan.behavior = b.clone();
        }
        if let Some(r) = &p.readiness {
            plan.readiness = r.clone();
        }
        if let Some(l) = p.start_latency {
            plan.start_latency = l;
        }
    }
    if let Some(l) = annotation(pod, ANNOTATION_START_LATENCY).and_then(parse_duration) {
        plan.start_latency = l;
    }
    if let Some(after) = annotation(pod, ANNOTATION_EXIT_AFTER).and_then(parse_duration) {
        let code = annotation(pod, ANNOTATION_EXIT_CODE)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        plan.behavior = PodBehavior::Exit { after, code };
    } else if let Some(code) = annotation(pod, ANNOTATION_EXIT_CODE).and_then(|c| c.parse().ok()) {
        if let PodBehavior::Exit { code: c, .. } = &mut plan.behavior {
            *c = code;
        }
    }
    if annotation(pod, ANNOTATION_IMAGE_PULL) == Some("fail") {
        plan.behavior = PodBehavior::ImagePullFails;
    }
    if let Some(r) = annotation(pod, ANNOTATION_READY).and_then(parse_readiness) {
        plan.readiness = r;
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_win_over_policies_and_defaults() {
        let cfg = Workloads::fast().policy(
            PodPolicy::all()
                .label("app", "db")
                .behavior(PodBehavior::ImagePullFails),
        );
        let job_pod = json!({"metadata": {"ownerReferences": [{"kind": "Job"}]}});
        assert!(matches!(
            plan(&cfg, &job_pod).behavior,
            PodBehavior::Exit { code: 0, .. }
        ));
        let db = json!({"metadata": {"labels": {"app": "db"}}});
        assert_eq!(plan(&cfg, &db).behavior, PodBehavior::ImagePullFails);
        let crash = json!({"metadata": {"labels": {"app": "db"}, "annotations": {
            ANNOTATION_EXIT_AFTER: "1s", ANNOTATION_EXIT_CODE: "3", ANNOTATION_READY: "flip:2s"}}});
        let p = plan(&cfg, &crash);
        assert_eq!(
            p.behavior,
            PodBehavior::Exit {
                after: Duration::from_secs(1),
                code: 3
            }
        );
        assert_eq!(p.readiness, Readiness::Flip(Duration::from_secs(2)));
        assert_eq!(plan(&cfg, &json!({})).behavior, PodBehavior::RunForever);
    }
}
