//! The built-in merge schemas against the k8s.io/api tags they transcribe.

use serde_json::json;

use super::super::{object_meta_schema, ListType, MergeSchema, Untyped};
use crate::registry::builtin_merge_schema;

fn map(keys: &[&str]) -> ListType {
    ListType::Map(keys.iter().map(|k| k.to_string()).collect())
}

#[test]
fn object_meta_lists_in_every_kind() {
    for (group, kind) in [
        ("", "ConfigMap"),
        ("apps", "Deployment"),
        ("example.com", "Widget"),
        ("rbac.authorization.k8s.io", "Role"),
    ] {
        let s = builtin_merge_schema(group, kind);
        assert_eq!(
            s.list_type(&["metadata", "ownerReferences"]),
            map(&["uid"]),
            "{kind}"
        );
        assert!(s.map_is_atomic(&["metadata", "ownerReferences"]), "{kind}");
        assert_eq!(
            s.list_type(&["metadata", "finalizers"]),
            ListType::Set,
            "{kind}"
        );
        assert_eq!(
            s.strategic_list_type(&["metadata", "finalizers"]),
            ListType::Set
        );
        assert_eq!(
            s.list_type(&["metadata", "managedFields"]),
            ListType::Atomic
        );
        assert!(s.is_open_map(&["metadata", "labels"]));
        assert!(s.is_open_map(&["metadata", "annotations"]));
    }
}

#[test]
fn pod_spec_lists_wherever_a_pod_template_sits() {
    let roots: [(&str, &str, &[&str]); 5] = [
        ("", "Pod", &["spec"]),
        ("apps", "Deployment", &["spec", "template", "spec"]),
        ("apps", "StatefulSet", &["spec", "template", "spec"]),
        ("batch", "Job", &["spec", "template", "spec"]),
        (
            "batch",
            "CronJob",
            &["spec", "jobTemplate", "spec", "template", "spec"],
        ),
    ];
    for (group, kind, root) in roots {
        let s = builtin_merge_schema(group, kind);
        let at =
            |rest: &[&'static str]| -> Vec<&str> { root.iter().chain(rest).copied().collect() };
        for c in ["containers", "initContainers", "ephemeralContainers"] {
            assert_eq!(s.list_type(&at(&[c])), map(&["name"]), "{kind} {c}");
            assert_eq!(
                s.list_type(&at(&[c, "ports"])),
                map(&["containerPort", "protocol"])
            );
            assert_eq!(
                s.strategic_list_type(&at(&[c, "ports"])),
                map(&["containerPort"])
            );
            assert_eq!(
                s.list_key_default(&at(&[c, "ports"]), "protocol"),
                Some(json!("TCP"))
            );
            assert_eq!(s.list_type(&at(&[c, "env"])), map(&["name"]));
            assert_eq!(s.list_type(&at(&[c, "envFrom"])), ListType::Atomic);
            assert_eq!(s.list_type(&at(&[c, "volumeMounts"])), map(&["mountPath"]));
            assert_eq!(
                s.list_type(&at(&[c, "volumeDevices"])),
                map(&["devicePath"])
            );
            assert_eq!(s.list_type(&at(&[c, "args"])), ListType::Atomic);
            assert_eq!(
                s.list_type(&at(&[c, "resources", "claims"])),
                map(&["name"])
            );
            assert_eq!(
                s.strategic_list_type(&at(&[c, "resources", "claims"])),
                ListType::Atomic
            );
        }
        assert_eq!(s.list_type(&at(&["volumes"])), map(&["name"]));
        assert_eq!(s.list_type(&at(&["imagePullSecrets"])), map(&["name"]));
        assert!(s.map_is_atomic(&at(&["imagePullSecrets"])));
        assert_eq!(s.list_type(&at(&["hostAliases"])), map(&["ip"]));
        assert_eq!(s.list_type(&at(&["tolerations"])), ListType::Atomic);
        assert_eq!(
            s.strategic_list_type(&at(&["tolerations"])),
            ListType::Atomic
        );
        assert_eq!(
            s.list_type(&at(&["topologySpreadConstraints"])),
            map(&["topologyKey", "whenUnsatisfiable"])
        );
        assert_eq!(
            s.strategic_list_type(&at(&["topologySpreadConstraints"])),
            map(&["topologyKey"])
        );
        assert!(s.map_is_atomic(&at(&["nodeSelector"])));
        assert_eq!(s.list_key_default(&at(&["volumes"]), "protocol"), None);
    }
}

#[test]
fn workload_selectors_are_atomic_and_conditions_keyed_by_type() {
    let d = builtin_merge_schema("apps", "Deployment");
    assert!(d.map_is_atomic(&["spec", "selector"]));
    assert_eq!(d.list_type(&["status", "conditions"]), map(&["type"]));
    assert_eq!(
        d.list_type(&["spec", "template", "metadata", "finalizers"]),
        ListType::Set
    );
    let job = builtin_merge_schema("batch", "Job");
    // JobStatus.Conditions: `+listType=atomic`, `patchMergeKey:"type"`.
    assert_eq!(job.list_type(&["status", "conditions"]), ListType::Atomic);
    assert_eq!(
        job.strategic_list_type(&["status", "conditions"]),
        map(&["type"])
    );
    let cj = builtin_merge_schema("batch", "CronJob");
    assert!(cj.map_is_atomic(&["spec", "jobTemplate", "spec", "selector"]));
    let pod = builtin_merge_schema("", "Pod");
    assert_eq!(pod.list_type(&["status", "conditions"]), map(&["type"]));
    assert_eq!(pod.list_type(&["status", "podIPs"]), map(&["ip"]));
    assert_eq!(
        pod.list_type(&["status", "containerStatuses"]),
        ListType::Atomic
    );
}

#[test]
fn other_builtin_kinds() {
    let svc = builtin_merge_schema("", "Service");
    assert_eq!(
        svc.list_type(&["spec", "ports"]),
        map(&["port", "protocol"])
    );
    assert_eq!(svc.strategic_list_type(&["spec", "ports"]), map(&["port"]));
    assert_eq!(
        svc.list_key_default(&["spec", "ports"], "protocol"),
        Some(json!("TCP"))
    );
    assert!(svc.map_is_atomic(&["spec", "selector"]));
    assert_eq!(svc.list_type(&["spec", "externalIPs"]), ListType::Atomic);
    let sa = builtin_merge_schema("", "ServiceAccount");
    assert_eq!(sa.list_type(&["secrets"]), map(&["name"]));
    assert_eq!(sa.list_type(&["imagePullSecrets"]), ListType::Atomic);
    let ns = builtin_merge_schema("", "Namespace");
    assert_eq!(ns.list_type(&["spec", "finalizers"]), ListType::Atomic);
    assert_eq!(ns.list_type(&["status", "conditions"]), map(&["type"]));
    let cm = builtin_merge_schema("", "ConfigMap");
    assert!(cm.is_open_map(&["data"]) && cm.is_open_map(&["binaryData"]));
    let secret = builtin_merge_schema("", "Secret");
    assert!(secret.is_open_map(&["stringData"]));
    let role = builtin_merge_schema("rbac.authorization.k8s.io", "ClusterRole");
    assert_eq!(role.list_type(&["rules"]), ListType::Atomic);
    let binding = builtin_merge_schema("rbac.authorization.k8s.io", "RoleBinding");
    assert_eq!(binding.list_type(&["subjects"]), ListType::Atomic);
    assert!(binding.map_is_atomic(&["roleRef"]));
    let crd = builtin_merge_schema("apiextensions.k8s.io", "CustomResourceDefinition");
    assert_eq!(crd.list_type(&["status", "conditions"]), map(&["type"]));
    assert_eq!(crd.list_type(&["spec", "versions"]), ListType::Atomic);
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        let wh = builtin_merge_schema("admissionregistration.k8s.io", kind);
        assert_eq!(wh.list_type(&["webhooks"]), map(&["name"]));
        assert_eq!(
            wh.list_type(&["webhooks", "matchConditions"]),
            map(&["name"])
        );
        assert_eq!(wh.list_type(&["webhooks", "rules"]), ListType::Atomic);
    }
    let policy = builtin_merge_schema("admissionregistration.k8s.io", "ValidatingAdmissionPolicy");
    assert_eq!(
        policy.list_type(&["spec", "matchConditions"]),
        map(&["name"])
    );
    assert_eq!(policy.list_type(&["spec", "validations"]), ListType::Atomic);
    let binding = builtin_merge_schema(
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    );
    assert_eq!(
        binding.list_type(&["spec", "validationActions"]),
        ListType::Set
    );
    assert_eq!(
        binding.strategic_list_type(&["spec", "validationActions"]),
        ListType::Atomic
    );
    assert!(binding.map_is_atomic(&["spec", "matchResources", "objectSelector"]));
    assert!(policy.map_is_atomic(&["spec", "matchConstraints", "namespaceSelector"]));
    let event = builtin_merge_schema("", "Event");
    assert!(event.map_is_atomic(&["involvedObject"]));
    let event = builtin_merge_schema("events.k8s.io", "Event");
    assert!(event.map_is_atomic(&["regarding"]));
}

#[test]
fn unknown_kinds_know_only_metadata() {
    let s = object_meta_schema();
    assert_eq!(s.list_type(&["spec", "containers"]), ListType::Atomic);
    assert!(!s.map_is_atomic(&["spec", "selector"]));
    assert_eq!(s.list_type(&["metadata", "finalizers"]), ListType::Set);
    assert_eq!(
        Untyped.list_type(&["metadata", "finalizers"]),
        ListType::Atomic
    );
    assert_eq!(Untyped.strategic_list_type(&["x"]), ListType::Atomic);
}
