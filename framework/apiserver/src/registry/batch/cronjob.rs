//! CronJobs: `SetDefaults_CronJob` and the job template defaulted as a
//! Job's, a required schedule, a name of 52 characters at most on create
//! (`ValidateCronJobCreate`), generation by `spec`, and the `SCHEDULE
//! TIMEZONE SUSPEND ACTIVE LAST SCHEDULE` row.

use k8s_openapi::api::batch::v1::CronJob;
use serde_json::{json, Value};

use super::job::failure_policy;
use crate::machinery::status::Cause;
use crate::machinery::util::{age_secs, go_quote, human_duration, Pointer};
use crate::registry::core::pod_spec::is_empty;
use crate::registry::core::pod_spec::{self, template};
use crate::registry::fields::{fill, obj_mut, spec_mut, Table, D};
use crate::registry::printers::{age, len_at, name, none_if_empty, str_at, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin, Defaults, ALL, SPEC};

const FIELDS: Table = &[
    ("concurrencyPolicy", D::Str("Allow")),
    ("suspend", D::Bool(false)),
    ("successfulJobsHistoryLimit", D::PtrInt(3)),
    ("failedJobsHistoryLimit", D::PtrInt(1)),
];

pub(crate) static CRONJOB: Builtin = Builtin {
    short_names: &["cj"],
    categories: ALL,
    status: true,
    generation: Some(SPEC),
    printer: Printer {
        columns: &[
            Name,
            Str("Schedule", 0),
            Str("Timezone", 0),
            Str("Suspend", 0),
            Int("Active", 0),
            Str("Last Schedule", 0),
            Age,
        ],
        cells,
    },
    defaults: Defaults::fields(defaults),
    validate,
    ..builtin::<CronJob>("batch", "cronjobs", "CronJob")
};

/// `SetDefaults_CronJob`, and the job template's pod template and failure
/// policy.
pub(super) fn defaults(obj: &mut Value) {
    if let Some(spec) = spec_mut(obj) {
        fill(spec, FIELDS);
        if let Some(job_spec) = obj_mut(spec, "jobTemplate").and_then(|t| obj_mut(t, "spec")) {
            failure_policy(job_spec);
        }
    }
    template(obj, &["spec", "jobTemplate", "spec", "template"]);
}

/// `ValidateCronJobCreate` and `ValidateCronJobSpec`.
fn validate(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if is_empty(obj.pointer("/spec/schedule")) {
        causes.push(Cause::required("spec.schedule"));
    }
    pod_spec::check(
        obj.pointer("/spec/jobTemplate/spec/template/spec"),
        "spec.jobTemplate.spec.template.spec",
        &mut causes,
    );
    // The controller's Jobs append an 11-character suffix to a name that
    // must stay a 63-character label, so a new CronJob's name has 52 at
    // most.
    let name = obj.pointer("/metadata/name").and_then(Value::as_str);
    if let Some(name) = name.filter(|n| old.is_none() && n.len() > 52) {
        causes.push(Cause::invalid(
            "metadata.name",
            format!(
                "Invalid value: {}: must be no more than 52 characters",
                go_quote(name)
            ),
        ));
    }
    causes
}

/// The cells of a CronJob row.
fn cells(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(str_at(o, "/spec/schedule")),
        json!(none_if_empty(str_at(o, "/spec/timeZone").to_owned())),
        json!(o
            .at("/spec/suspend")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            .to_string()
            .replace("true", "True")
            .replace("false", "False")),
        json!(len_at(o, "/status/active")),
        json!(o
            .at("/status/lastScheduleTime")
            .map(|t| human_duration(age_secs(Some(t))))
            .unwrap_or_else(|| "<none>".into())),
        age(o),
    ]
}
