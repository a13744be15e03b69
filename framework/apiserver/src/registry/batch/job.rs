//! Jobs: `SetDefaults_Job` (completions, parallelism, backoff, completion
//! mode, pod replacement, the failure policy's rules) and the template's
//! PodSpec; on create the generated selector and `controller-uid` labels
//! of `pkg/registry/batch/job/strategy.go`; a restart policy of Never or
//! OnFailure; generation by `spec`; and the `STATUS COMPLETIONS
//! DURATION` row.

use std::sync::atomic::AtomicU32;

use k8s_openapi::api::batch::v1::Job;
use serde_json::{json, Map, Value};

use crate::machinery::status::Cause;
use crate::machinery::util::{human_duration, Pointer};
use crate::registry::core::pod_spec::{self, template};
use crate::registry::fields::{
    ensure_object, fill, items_mut, obj_mut, obj_name, spec_mut, Table, D,
};
use crate::registry::printers::{age, str_at, Col::*, Printer};
use crate::registry::printers::{condition_true, parse};
use crate::registry::strategy::{builtin, Builtin, Defaults, FieldLabelConversion, ALL, SPEC};

const FIELDS: Table = &[
    ("parallelism", D::PtrInt(1)),
    ("completionMode", D::PtrStr("NonIndexed")),
    ("suspend", D::Bool(false)),
    ("manualSelector", D::Bool(false)),
];

pub(crate) static JOB: Builtin = Builtin {
    categories: ALL,
    status: true,
    generation: Some(SPEC),
    field_label_conversion: FieldLabelConversion::OwnFor("batchv1.Job"),
    field_labels: &[("status.successful", "status.succeeded")],
    printer: Printer {
        columns: &[
            Name,
            Str("Status", 0),
            Str("Completions", 0),
            Str("Duration", 0),
            Age,
        ],
        cells,
    },
    defaults: Defaults {
        create: Some(on_create),
        ..Defaults::fields(defaults)
    },
    validate,
    ..builtin::<Job>("batch", "jobs", "Job")
};

fn unset(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key).is_none_or(Value::is_null)
}

/// `SetDefaults_Job`.
pub(crate) fn defaults(obj: &mut Value) {
    template_labels(obj);
    if let Some(spec) = spec_mut(obj) {
        if unset(spec, "completions") && unset(spec, "parallelism") {
            spec.insert("completions".into(), json!(1));
        }
        // With a per-index limit the global one is effectively unlimited.
        let backoff = if unset(spec, "backoffLimitPerIndex") {
            6
        } else {
            i64::from(i32::MAX)
        };
        fill(spec, &[("backoffLimit", D::PtrInt(backoff))]);
        fill(spec, FIELDS);
        let replacement = if unset(spec, "podFailurePolicy") {
            "TerminatingOrFailed"
        } else {
            "Failed"
        };
        fill(spec, &[("podReplacementPolicy", D::PtrStr(replacement))]);
        failure_policy(spec);
    }
    template(obj, &["spec", "template"]);
}

/// A Job without labels takes its template's.
fn template_labels(obj: &mut Value) {
    let Some(labels) = obj
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.is_object())
        .cloned()
    else {
        return;
    };
    let empty = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if empty {
        if let Some(meta) = ensure_object(obj, &["metadata"]) {
            meta.insert("labels".into(), labels);
        }
    }
}

/// Every `onPodConditions` pattern's status defaults to `True`.
pub(super) fn failure_policy(job_spec: &mut Map<String, Value>) {
    let Some(policy) = obj_mut(job_spec, "podFailurePolicy") else {
        return;
    };
    for rule in items_mut(policy, "rules") {
        for pattern in items_mut(rule, "onPodConditions") {
            fill(pattern, &[("status", D::Str("True"))]);
        }
    }
}

/// The Job strategy's `generateSelector` on create: unless
/// `manualSelector`, the selector is the Job's uid and the template gets
/// the job labels.
pub(super) fn on_create(obj: &mut Value, _: &AtomicU32) {
    if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let name = obj_name(obj);
    if let Some(labels) = ensure_object(obj, &["spec", "template", "metadata", "labels"]) {
        for (k, v) in [
            ("batch.kubernetes.io/controller-uid", &uid),
            ("batch.kubernetes.io/job-name", &name),
            ("controller-uid", &uid),
            ("job-name", &name),
        ] {
            labels.insert(k.into(), json!(v));
        }
    }
    if obj.pointer("/spec/selector").is_none_or(Value::is_null) {
        if let Some(spec) = ensure_object(obj, &["spec"]) {
            spec.insert(
                "selector".into(),
                json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
            );
        }
    }
}

/// `ValidateJob`: the selector matches the template (when given), the
/// template's PodSpec, and a restart policy of Never or OnFailure.
fn validate(obj: &Value, _: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    pod_spec::selector_matches_template(obj, &mut causes, false);
    pod_spec::check(
        obj.pointer("/spec/template/spec"),
        "spec.template.spec",
        &mut causes,
    );
    let restart = obj
        .pointer("/spec/template/spec/restartPolicy")
        .and_then(Value::as_str);
    if !matches!(restart, Some("Never" | "OnFailure")) {
        causes.push(Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value: valid values: \"OnFailure\", \"Never\"".into(),
            field: "spec.template.spec.restartPolicy".into(),
        });
    }
    causes
}

/// `printJob`: NAME STATUS COMPLETIONS DURATION AGE.
fn cells(o: &Value) -> Vec<Value> {
    let status = if condition_true(o, "Complete") {
        "Complete"
    } else if condition_true(o, "Failed") {
        "Failed"
    } else if o.at("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if condition_true(o, "Suspended") {
        "Suspended"
    } else if condition_true(o, "FailureTarget") {
        "FailureTarget"
    } else if condition_true(o, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let succeeded = o
        .at("/status/succeeded")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let parallelism = o.at("/spec/parallelism").and_then(Value::as_i64);
    let completions = match (
        o.at("/spec/completions").and_then(Value::as_i64),
        parallelism,
    ) {
        (Some(c), _) => format!("{succeeded}/{c}"),
        (None, Some(p)) if p > 1 => format!("{succeeded}/1 of {p}"),
        _ => format!("{succeeded}/1"),
    };
    let start = parse(str_at(o, "/status/startTime"));
    let end = parse(str_at(o, "/status/completionTime"));
    let duration = match (start, end) {
        (None, _) => String::new(),
        (Some(s), None) => human_duration(jiff::Timestamp::now().as_second() - s.as_second()),
        (Some(s), Some(e)) => human_duration(e.as_second() - s.as_second()),
    };
    vec![
        json!(str_at(o, "/metadata/name")),
        json!(status),
        json!(completions),
        json!(duration),
        age(o),
    ]
}
