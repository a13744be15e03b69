//! Semantic validation of built-in kinds beyond decoding: the required
//! fields and cross-field rules of kube-apiserver's `pkg/apis/*/validation`
//! that operators hit most (workload selectors matching their template,
//! containers with names and images, service ports, binding roleRefs).
//! k8s-openapi decodes missing required fields as defaults, so these are
//! checked here.

use serde_json::Value;

use crate::machinery::status::Cause;
use crate::machinery::util::go_quote;
use crate::registry::ResourceDef;

fn is_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(m)) => m.is_empty(),
        _ => false,
    }
}

fn pod_spec(spec: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    let containers = spec.and_then(|s| s.get("containers"));
    match containers.and_then(Value::as_array) {
        Some(cs) if !cs.is_empty() => {
            for (i, c) in cs.iter().enumerate() {
                if is_empty(c.get("name")) {
                    causes.push(Cause::required(format!("{path}.containers[{i}].name")));
                }
                if is_empty(c.get("image")) {
                    causes.push(Cause::required(format!("{path}.containers[{i}].image")));
                }
            }
        }
        _ => causes.push(Cause::required(format!("{path}.containers"))),
    }
}

/// `selector.matchLabels` must select the template's labels.
fn selector_matches_template(obj: &Value, causes: &mut Vec<Cause>, required: bool) {
    let selector = obj.pointer("/spec/selector");
    if is_empty(selector) {
        if required {
            causes.push(Cause::required("spec.selector"));
        }
        return;
    }
    let labels = obj
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object);
    let matches = selector
        .and_then(|s| s.get("matchLabels"))
        .and_then(Value::as_object)
        .is_none_or(|want| {
            want.iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        });
    if !matches {
        causes.push(Cause::invalid(
            "spec.template.metadata.labels",
            "Invalid value: map[string]string{...}: `selector` does not match template `labels`",
        ));
    }
}

/// The field errors kube-apiserver would report for this object; `old` is
/// the stored object on an update.
pub(crate) fn validate(def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if def.builtin().is_none() {
        return causes;
    }
    match (def.group.as_str(), def.plural.as_str()) {
        ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets") => {
            selector_matches_template(obj, &mut causes, true);
            pod_spec(
                obj.pointer("/spec/template/spec"),
                "spec.template.spec",
                &mut causes,
            );
            if obj
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .is_some_and(|r| r < 0)
            {
                causes.push(Cause::invalid(
                    "spec.replicas",
                    "Invalid value: -1: must be greater than or equal to 0",
                ));
            }
        }
        ("batch", "jobs") => {
            selector_matches_template(obj, &mut causes, false);
            pod_spec(
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
        }
        ("batch", "cronjobs") => {
            if is_empty(obj.pointer("/spec/schedule")) {
                causes.push(Cause::required("spec.schedule"));
            }
            pod_spec(
                obj.pointer("/spec/jobTemplate/spec/template/spec"),
                "spec.jobTemplate.spec.template.spec",
                &mut causes,
            );
            // `ValidateCronJobCreate`: the controller's Jobs append an
            // 11-character suffix to a name that must stay a 63-character
            // label, so a new CronJob's name has 52 at most.
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
        }
        ("", "pods") => pod_spec(obj.get("spec"), "spec", &mut causes),
        ("", "services") => {
            let ty = obj.pointer("/spec/type").and_then(Value::as_str);
            let headless = obj.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None");
            if ty != Some("ExternalName") && !headless && is_empty(obj.pointer("/spec/ports")) {
                causes.push(Cause::required("spec.ports"));
            }
        }
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => {
            for f in ["kind", "name"] {
                if is_empty(obj.pointer(&format!("/roleRef/{f}"))) {
                    causes.push(Cause::required(format!("roleRef.{f}")));
                }
            }
        }
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => {
            let mutating = def.plural == "mutatingwebhookconfigurations";
            causes.extend(crate::registry::admissionregistration::validate::validate(
                mutating, obj, old,
            ));
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            causes.extend(
                crate::registry::admissionregistration::policy_checks::validate_policy(obj, old),
            );
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => {
            causes.extend(
                crate::registry::admissionregistration::policy_checks::validate_binding(obj),
            );
        }
        ("coordination.k8s.io", "leases")
            if obj
                .pointer("/spec/leaseDurationSeconds")
                .and_then(Value::as_i64)
                .is_some_and(|d| d <= 0) =>
        {
            causes.push(Cause::invalid(
                "spec.leaseDurationSeconds",
                "Invalid value: 0: must be greater than 0",
            ));
        }
        _ => {}
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use serde_json::json;

    #[test]
    fn deployment_rules() {
        let reg = Registry::with_builtins();
        let def = reg.get("apps", "v1", "deployments").unwrap();
        let ok = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        assert!(validate(&def, &ok, None).is_empty());
        let bad = json!({"spec": {"selector": {"matchLabels": {"a": "x"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}}});
        let fields: Vec<String> = validate(&def, &bad, None)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            [
                "spec.template.metadata.labels",
                "spec.template.spec.containers[0].image"
            ]
        );
    }
}
