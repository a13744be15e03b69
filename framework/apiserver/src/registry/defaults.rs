//! Kind-specific defaulting and the fields the API server sets itself:
//! namespace phase and finalizer, the `default` ServiceAccount's home,
//! Secret `stringData`, Service type and cluster IP, Pod phase, workload
//! replicas, the CRD cleanup finalizer, the webhook configurations' v1
//! defaults. Only what clients commonly rely on.
//! Field defaults run on every write, as kube-apiserver's decoder applies
//! them; allocation and admission-plugin defaults on create only.

use std::sync::atomic::{AtomicU32, Ordering};

use base64::Engine;
use serde_json::{json, Value};

use crate::registry::ResourceDef;

/// The finalizer kube-apiserver adds to every CRD.
pub(crate) const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

fn is(def: &ResourceDef, group: &str, plural: &str) -> bool {
    def.builtin().is_some() && def.group == group && def.plural == plural
}

fn set_if_absent(map: &mut serde_json::Map<String, Value>, key: &str, v: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.into(), v);
    }
}

/// Secret: `stringData` is merged into `data` (base64) and dropped.
fn secret(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    set_if_absent(map, "type", json!("Opaque"));
    if let Some(Value::Object(sd)) = map.remove("stringData") {
        let data = map
            .entry("data")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(data) = data.as_object_mut() {
            for (k, v) in sd {
                if let Some(s) = v.as_str() {
                    data.insert(
                        k,
                        json!(base64::engine::general_purpose::STANDARD.encode(s)),
                    );
                }
            }
        }
    }
}

/// Defaults applied on create.
pub(crate) fn on_create(def: &ResourceDef, obj: &mut Value, next_ip: &AtomicU32) {
    if is(def, "", "namespaces") {
        if let Some(map) = obj.as_object_mut() {
            map.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
            map.insert("status".into(), json!({"phase": "Active"}));
        }
        let name = obj_name(obj);
        if let Some(labels) = labels_mut(obj) {
            labels.insert("kubernetes.io/metadata.name".into(), json!(name));
        }
    } else if is(def, "", "secrets") {
        secret(obj);
    } else if is(def, "", "services") {
        if let Some(spec) = ensure_object(obj, &["spec"]) {
            set_if_absent(spec, "type", json!("ClusterIP"));
            set_if_absent(spec, "sessionAffinity", json!("None"));
            let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
            let external = spec.get("type").and_then(Value::as_str) == Some("ExternalName");
            if !headless
                && !external
                && spec
                    .get("clusterIP")
                    .is_none_or(|v| v.as_str().is_none_or(str::is_empty))
            {
                let n = next_ip.fetch_add(1, Ordering::Relaxed);
                let ip = format!("10.96.{}.{}", (n >> 8) & 0xff, n & 0xff);
                spec.insert("clusterIP".into(), json!(ip));
                spec.insert("clusterIPs".into(), json!([ip]));
            } else if headless {
                spec.insert("clusterIPs".into(), json!(["None"]));
            }
            if !external {
                set_if_absent(spec, "ipFamilies", json!(["IPv4"]));
                set_if_absent(spec, "ipFamilyPolicy", json!("SingleStack"));
                set_if_absent(spec, "internalTrafficPolicy", json!("Cluster"));
            }
            if let Some(Value::Array(ports)) = spec.get_mut("ports") {
                for p in ports {
                    if let Some(p) = p.as_object_mut() {
                        set_if_absent(p, "protocol", json!("TCP"));
                        if let Some(port) = p.get("port").cloned() {
                            set_if_absent(p, "targetPort", port);
                        }
                    }
                }
            }
        }
        if let Some(map) = obj.as_object_mut() {
            map.insert("status".into(), json!({"loadBalancer": {}}));
        }
    } else if is(def, "", "pods") {
        if let Some(spec) = ensure_object(obj, &["spec"]) {
            // The ServiceAccount admission plugin, on create only.
            set_if_absent(spec, "serviceAccountName", json!("default"));
        }
        let qos = pod_qos(obj);
        if let Some(map) = obj.as_object_mut() {
            map.insert(
                "status".into(),
                json!({"phase": "Pending", "qosClass": qos}),
            );
        }
    } else if is(def, "batch", "jobs") {
        job_selector(obj);
    } else if is(def, "apiextensions.k8s.io", "customresourcedefinitions") {
        if let Some(meta) = ensure_object(obj, &["metadata"]) {
            let fins = meta
                .entry("finalizers")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Some(fins) = fins.as_array_mut() {
                if !fins.iter().any(|f| f.as_str() == Some(CRD_CLEANUP)) {
                    fins.push(json!(CRD_CLEANUP));
                }
            }
        }
    }
    field_defaults(def, obj);
}

/// The defaulting functions of the versioned types (`SetDefaults_*`),
/// which kube-apiserver runs whenever it decodes an object: on create, and
/// on every update and patch (a field an update drops comes back).
fn field_defaults(def: &ResourceDef, obj: &mut Value) {
    if is(def, "", "pods") {
        if let Some(spec) = ensure_object(obj, &["spec"]) {
            set_if_absent(spec, "restartPolicy", json!("Always"));
            set_if_absent(spec, "dnsPolicy", json!("ClusterFirst"));
            set_if_absent(spec, "schedulerName", json!("default-scheduler"));
            set_if_absent(spec, "terminationGracePeriodSeconds", json!(30));
            set_if_absent(spec, "enableServiceLinks", json!(true));
        }
    } else if is(def, "apps", "deployments")
        || is(def, "apps", "replicasets")
        || is(def, "apps", "statefulsets")
    {
        if let Some(spec) = ensure_object(obj, &["spec"]) {
            set_if_absent(spec, "replicas", json!(1));
            if def.plural == "statefulsets" {
                set_if_absent(spec, "podManagementPolicy", json!("OrderedReady"));
                set_if_absent(spec, "revisionHistoryLimit", json!(10));
                set_if_absent(
                    spec,
                    "updateStrategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
                );
                set_if_absent(
                    spec,
                    "persistentVolumeClaimRetentionPolicy",
                    json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
                );
            }
            if def.plural == "deployments" {
                set_if_absent(spec, "revisionHistoryLimit", json!(10));
                set_if_absent(spec, "progressDeadlineSeconds", json!(600));
                set_if_absent(spec, "strategy", json!({"type": "RollingUpdate"}));
                if let Some(strategy) = spec.get_mut("strategy").and_then(Value::as_object_mut) {
                    set_if_absent(strategy, "type", json!("RollingUpdate"));
                    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                        set_if_absent(strategy, "rollingUpdate", json!({}));
                        if let Some(ru) = strategy
                            .get_mut("rollingUpdate")
                            .and_then(Value::as_object_mut)
                        {
                            set_if_absent(ru, "maxUnavailable", json!("25%"));
                            set_if_absent(ru, "maxSurge", json!("25%"));
                        }
                    }
                }
            }
        }
    } else if is(def, "apps", "daemonsets") {
        if let Some(spec) = ensure_object(obj, &["spec"]) {
            set_if_absent(spec, "revisionHistoryLimit", json!(10));
            set_if_absent(
                spec,
                "updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            );
        }
    } else if is(def, "batch", "cronjobs") {
        if let Some(spec) = ensure_object(obj, &["spec"]) {
            set_if_absent(spec, "concurrencyPolicy", json!("Allow"));
            set_if_absent(spec, "suspend", json!(false));
            set_if_absent(spec, "successfulJobsHistoryLimit", json!(3));
            set_if_absent(spec, "failedJobsHistoryLimit", json!(1));
        }
    } else if is(def, "batch", "jobs") {
        if let Some(spec) = ensure_object(obj, &["spec"]) {
            if spec.get("completions").is_none_or(Value::is_null)
                && spec.get("parallelism").is_none_or(Value::is_null)
            {
                spec.insert("completions".into(), json!(1));
            }
            set_if_absent(spec, "parallelism", json!(1));
            set_if_absent(spec, "backoffLimit", json!(6));
            set_if_absent(spec, "completionMode", json!("NonIndexed"));
            set_if_absent(spec, "suspend", json!(false));
            if spec.get("podFailurePolicy").is_none_or(Value::is_null) {
                set_if_absent(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
            }
        }
    } else if is(
        def,
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    ) || is(
        def,
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    ) {
        let mutating = def.plural == "mutatingwebhookconfigurations";
        crate::registry::admissionregistration::validate::default(obj, mutating);
    } else if is(
        def,
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ) {
        crate::registry::admissionregistration::policy_checks::default(obj, false);
    } else if is(
        def,
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
    ) {
        crate::registry::admissionregistration::policy_checks::default(obj, true);
    } else if is(def, "apiextensions.k8s.io", "customresourcedefinitions") {
        if let Some(spec) = ensure_object(obj, &["spec"]) {
            set_if_absent(spec, "conversion", json!({"strategy": "None"}));
        }
    }
}

/// The Job strategy's `generateSelector`: unless `manualSelector`, the
/// selector is the Job's uid and the template gets the job labels.
fn job_selector(obj: &mut Value) {
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

/// Defaults applied on update.
pub(crate) fn on_update(def: &ResourceDef, obj: &mut Value, old: &Value) {
    field_defaults(def, obj);
    if is(def, "", "secrets") {
        secret(obj);
    } else if is(def, "", "services") {
        // The allocated cluster IP survives updates that omit it.
        let old_ip = old.pointer("/spec/clusterIP").cloned();
        let old_ips = old.pointer("/spec/clusterIPs").cloned();
        if let Some(spec) = ensure_object(obj, &["spec"]) {
            if let Some(ip) = old_ip {
                set_if_absent(spec, "clusterIP", ip);
            }
            if let Some(ips) = old_ips {
                set_if_absent(spec, "clusterIPs", ips);
            }
        }
    } else if is(def, "", "namespaces") {
        let name = obj_name(obj);
        if let Some(labels) = labels_mut(obj) {
            labels.insert("kubernetes.io/metadata.name".into(), json!(name));
        }
    }
}

fn obj_name(obj: &Value) -> String {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn labels_mut(obj: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    ensure_object(obj, &["metadata", "labels"])
}

/// The object at `path`, created (as `{}`) where missing or null.
pub(crate) fn ensure_object<'a>(
    obj: &'a mut Value,
    path: &[&str],
) -> Option<&'a mut serde_json::Map<String, Value>> {
    let mut cur = obj;
    for seg in path {
        let map = cur.as_object_mut()?;
        let slot = map
            .entry((*seg).to_owned())
            .or_insert_with(|| Value::Object(Default::default()));
        if slot.is_null() {
            *slot = Value::Object(Default::default());
        }
        cur = slot;
    }
    cur.as_object_mut()
}

/// BestEffort / Burstable / Guaranteed, from container resources.
fn pod_qos(pod: &Value) -> &'static str {
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        let req = c.pointer("/resources/requests").and_then(Value::as_object);
        let lim = c.pointer("/resources/limits").and_then(Value::as_object);
        if req.is_some_and(|r| !r.is_empty()) || lim.is_some_and(|l| !l.is_empty()) {
            any = true;
        }
        let full = ["cpu", "memory"].iter().all(|k| {
            let l = lim.and_then(|l| l.get(*k));
            l.is_some() && req.and_then(|r| r.get(*k)).is_none_or(|r| Some(r) == l)
        });
        if !full {
            guaranteed = false;
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}
