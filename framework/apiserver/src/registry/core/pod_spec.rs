//! What every PodSpec gets, in bare Pods and in every PodTemplateSpec
//! (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs):
//! kube's `SetDefaults_PodSpec`, `_Container`, `_Probe`, `_HTTPGetAction`,
//! `_Volume` and the volume sources, `_ObjectFieldSelector`, walked into
//! every container, init container and ephemeral container as
//! `pkg/apis/core/v1/zz_generated.defaults.go` does (source:
//! `pkg/apis/core/v1/defaults.go`, Kubernetes 1.35); and the checks of
//! `pkg/apis/core/validation` operators hit most (containers with names
//! and images, a workload's selector matching its template's labels).

use serde_json::{json, Map, Value};

use crate::machinery::status::Cause;
use crate::registry::fields::{at_mut, fill, items_mut, obj_mut, Table, D};

/// `SetDefaults_PodSpec`.
const POD_SPEC: Table = &[
    ("dnsPolicy", D::Str("ClusterFirst")),
    ("restartPolicy", D::Str("Always")),
    ("securityContext", D::Obj),
    ("terminationGracePeriodSeconds", D::PtrInt(30)),
    ("schedulerName", D::Str("default-scheduler")),
];

/// `SetDefaults_Container` (the pull policy aside). `resources` is a
/// non-pointer struct in Go, so a cluster always shows `resources: {}`.
const CONTAINER: Table = &[
    ("terminationMessagePath", D::Str("/dev/termination-log")),
    ("terminationMessagePolicy", D::Str("File")),
    ("resources", D::Obj),
];

/// `SetDefaults_Probe`.
const PROBE: Table = &[
    ("timeoutSeconds", D::Int(1)),
    ("periodSeconds", D::Int(10)),
    ("successThreshold", D::Int(1)),
    ("failureThreshold", D::Int(3)),
];

/// `SetDefaults_HTTPGetAction`.
const HTTP_GET: Table = &[("path", D::Str("/")), ("scheme", D::Str("HTTP"))];

/// The generated defaulter's `Protocol == "" → "TCP"` on container ports.
const PORT: Table = &[("protocol", D::Str("TCP"))];

/// `SetDefaults_ObjectFieldSelector`.
const FIELD_REF: Table = &[("apiVersion", D::Str("v1"))];

/// 0644, the `*VolumeSourceDefaultMode` constants.
const MODE: Table = &[("defaultMode", D::PtrInt(420))];

/// Per volume source: its defaults (`SetDefaults_*VolumeSource`, and the
/// declarative `+default` tags of the in-tree plugins' types; values as in
/// `defaults_test.go` `TestWorkloadDefaults`).
const VOLUME_SOURCES: &[(&str, Table)] = &[
    ("hostPath", &[("type", D::PtrStr(""))]),
    ("secret", MODE),
    ("configMap", MODE),
    ("downwardAPI", MODE),
    ("projected", MODE),
    ("iscsi", &[("iscsiInterface", D::Str("default"))]),
    (
        "rbd",
        &[
            ("pool", D::Str("rbd")),
            ("user", D::Str("admin")),
            ("keyring", D::Str("/etc/ceph/keyring")),
        ],
    ),
    (
        "azureDisk",
        &[
            ("cachingMode", D::PtrStr("ReadWrite")),
            ("fsType", D::PtrStr("ext4")),
            ("readOnly", D::Bool(false)),
            ("kind", D::PtrStr("Shared")),
        ],
    ),
    (
        "scaleIO",
        &[
            ("storageMode", D::Str("ThinProvisioned")),
            ("fsType", D::Str("xfs")),
        ],
    ),
];

/// `SetDefaults_PersistentVolumeClaimSpec`.
pub(crate) const PVC_SPEC: Table = &[("volumeMode", D::PtrStr("Filesystem"))];

/// Defaults the PodTemplateSpec at `path` (e.g. `["spec", "template"]`),
/// if it has a spec.
pub(crate) fn template(obj: &mut Value, path: &[&str]) {
    let Some(t) = at_mut(obj, path) else {
        return;
    };
    if let Some(spec) = obj_mut(t, "spec") {
        defaults(spec);
    }
}

/// A PodSpec: `SetDefaults_PodSpec`, then every volume and container.
pub(crate) fn defaults(spec: &mut Map<String, Value>) {
    fill(spec, POD_SPEC);
    for v in items_mut(spec, "volumes") {
        volume(v);
    }
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        for c in items_mut(spec, key) {
            container(c);
        }
    }
}

/// `SetDefaults_Container` and the generated walk into ports, env, probes
/// and lifecycle hooks.
fn container(c: &mut Map<String, Value>) {
    if c.get("imagePullPolicy")
        .is_none_or(|p| p.as_str().is_none_or(str::is_empty))
    {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        c.insert("imagePullPolicy".into(), json!(pull_policy(image)));
    }
    fill(c, CONTAINER);
    for p in items_mut(c, "ports") {
        fill(p, PORT);
    }
    for e in items_mut(c, "env") {
        if let Some(f) = obj_mut(e, "valueFrom").and_then(|v| obj_mut(v, "fieldRef")) {
            fill(f, FIELD_REF);
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = obj_mut(c, probe) {
            fill(p, PROBE);
            if let Some(h) = obj_mut(p, "httpGet") {
                fill(h, HTTP_GET);
            }
        }
    }
    if let Some(l) = obj_mut(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = obj_mut(l, hook).and_then(|h| obj_mut(h, "httpGet")) {
                fill(h, HTTP_GET);
            }
        }
    }
}

/// `SetDefaults_Volume` (no source means emptyDir; an image volume's pull
/// policy by its tag) and each source's defaults.
fn volume(v: &mut Map<String, Value>) {
    if !v.iter().any(|(k, val)| k != "name" && !val.is_null()) {
        v.insert("emptyDir".into(), json!({}));
    }
    for (source, table) in VOLUME_SOURCES {
        if let Some(s) = obj_mut(v, source) {
            fill(s, table);
        }
    }
    if let Some(d) = obj_mut(v, "downwardAPI") {
        field_refs(d);
    }
    if let Some(p) = obj_mut(v, "projected") {
        for s in items_mut(p, "sources") {
            if let Some(d) = obj_mut(s, "downwardAPI") {
                field_refs(d);
            }
            if let Some(t) = obj_mut(s, "serviceAccountToken") {
                fill(t, &[("expirationSeconds", D::PtrInt(3600))]);
            }
        }
    }
    if let Some(spec) = obj_mut(v, "ephemeral")
        .and_then(|e| obj_mut(e, "volumeClaimTemplate"))
        .and_then(|t| obj_mut(t, "spec"))
    {
        fill(spec, PVC_SPEC);
    }
    if let Some(image) = obj_mut(v, "image") {
        if image
            .get("pullPolicy")
            .is_none_or(|p| p.as_str().is_none_or(str::is_empty))
        {
            let reference = image.get("reference").and_then(Value::as_str).unwrap_or("");
            image.insert("pullPolicy".into(), json!(pull_policy(reference)));
        }
    }
}

fn field_refs(downward: &mut Map<String, Value>) {
    for item in items_mut(downward, "items") {
        if let Some(f) = obj_mut(item, "fieldRef") {
            fill(f, FIELD_REF);
        }
    }
}

/// `SetDefaults_Container`'s pull policy: `Always` when the image's tag is
/// `latest` (or it has neither tag nor digest, which means `latest`),
/// `IfNotPresent` otherwise, and for a reference that does not parse
/// (`parsers.ParseImageName`'s error is ignored and the tag is empty).
pub(crate) fn pull_policy(image: &str) -> &'static str {
    if image_tag(image).as_deref() == Some("latest") {
        "Always"
    } else {
        "IfNotPresent"
    }
}

/// The tag `parsers.ParseImageName` finds: the explicit tag, `latest` when
/// there is neither tag nor digest, empty with only a digest, `None` when
/// the reference does not parse (docker's reference grammar, loosely: a
/// lowercase path, an optional domain, a tag of `[\w][\w.-]{0,127}`).
fn image_tag(image: &str) -> Option<String> {
    // A bare image ID is refused ("cannot specify 64-byte hexadecimal strings").
    if image.len() == 64 && image.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')) {
        return None;
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    if digest.is_some_and(|d| !d.contains(':')) {
        return None;
    }
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (repo, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
        None => (name, None),
    };
    if let Some(t) = tag {
        let valid = t.len() <= 128
            && t.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !valid {
            return None;
        }
    }
    if !valid_repo(repo) {
        return None;
    }
    Some(match (tag, digest) {
        (Some(t), _) => t.to_owned(),
        (None, Some(_)) => String::new(),
        (None, None) => "latest".to_owned(),
    })
}

/// A repository name: an optional domain (a first component with `.` or
/// `:`, or `localhost`, or with capitals), then lowercase path components.
fn valid_repo(repo: &str) -> bool {
    let path = match repo.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.chars().any(|c| c.is_ascii_uppercase()) =>
        {
            rest
        }
        _ => repo,
    };
    !path.is_empty()
        && path.split('/').all(|component| {
            !component.is_empty()
                && component
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && component.chars().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
                })
        })
}

pub(crate) fn is_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(m)) => m.is_empty(),
        _ => false,
    }
}

pub(crate) fn check(spec: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
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
pub(crate) fn selector_matches_template(obj: &Value, causes: &mut Vec<Cause>, required: bool) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::core::pod::defaults as pod;

    /// The references of `pkg/util/parsers/parsers_test.go`
    /// `TestParseImageName` (tag `latest`, or none and no digest → Always;
    /// another tag, a digest alone, or an error → IfNotPresent), and
    /// `pkg/apis/core/v1/defaults_test.go`
    /// `TestSetDefaultReplicationControllerInitContainers` ("busybox" →
    /// Always).
    #[test]
    fn pull_policy_follows_the_images_tag() {
        const SHA: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let hex = &SHA["sha256:".len()..];
        for (image, policy) in [
            ("root".to_owned(), "Always"),
            ("root:tag".to_owned(), "IfNotPresent"),
            (format!("root@{SHA}"), "IfNotPresent"),
            ("user/repo".to_owned(), "Always"),
            ("user/repo:tag".to_owned(), "IfNotPresent"),
            (format!("user/repo@{SHA}"), "IfNotPresent"),
            ("url:5000/repo".to_owned(), "Always"),
            ("url:5000/repo:tag".to_owned(), "IfNotPresent"),
            (format!("url:5000/repo@{SHA}"), "IfNotPresent"),
            (format!("url:5000/repo:latest@{SHA}"), "Always"),
            ("ROOT".to_owned(), "IfNotPresent"),
            ("http://root".to_owned(), "IfNotPresent"),
            (hex.to_owned(), "IfNotPresent"),
            ("busybox".to_owned(), "Always"),
            ("nginx:latest".to_owned(), "Always"),
            ("nginx:1.25".to_owned(), "IfNotPresent"),
            ("registry.k8s.io/pause:3.10".to_owned(), "IfNotPresent"),
            ("localhost/app".to_owned(), "Always"),
            (String::new(), "IfNotPresent"),
        ] {
            assert_eq!(pull_policy(&image), policy, "{image}");
        }
    }

    /// `pkg/apis/core/v1/defaults_test.go` `TestWorkloadDefaults`: every
    /// default under a PodTemplateSpec, with its expected value.
    #[test]
    fn a_template_gets_every_podspec_default_of_test_workload_defaults() {
        let mut d = json!({"spec": {"template": {"spec": {
            "containers": [full_container()],
            "initContainers": [full_container()],
            "ephemeralContainers": [full_container()],
            "volumes": [
                {"name": "empty"},
                {"name": "hp", "hostPath": {"path": "/x"}},
                {"name": "s", "secret": {"secretName": "s"}},
                {"name": "cm", "configMap": {"name": "c"}},
                {"name": "dw", "downwardAPI": {"items": [{"path": "p", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                {"name": "pr", "projected": {"sources": [
                    {"downwardAPI": {"items": [{"path": "p", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                    {"serviceAccountToken": {"path": "t"}}]}},
                {"name": "is", "iscsi": {"targetPortal": "t", "iqn": "i", "lun": 0}},
                {"name": "rbd", "rbd": {"monitors": ["m"], "image": "i"}},
                {"name": "az", "azureDisk": {"diskName": "d", "diskURI": "u"}},
                {"name": "sio", "scaleIO": {"gateway": "g", "system": "s", "secretRef": {}}},
                {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                {"name": "img", "image": {"reference": "quay.io/x/y:latest"}},
            ],
        }}}});
        template(&mut d, &["spec", "template"]);
        let spec = &d["spec"]["template"]["spec"];
        assert_eq!(spec["dnsPolicy"], "ClusterFirst");
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["schedulerName"], "default-scheduler");
        assert_eq!(spec["securityContext"], json!({}));
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        // enableServiceLinks is SetDefaults_Pod's, not PodSpec's.
        assert!(spec.get("enableServiceLinks").is_none());
        for kind in ["containers", "initContainers", "ephemeralContainers"] {
            assert_eq!(spec[kind][0], full_container_defaulted(), "{kind}");
        }
        let v = &spec["volumes"];
        let expected = [
            json!({"name": "empty", "emptyDir": {}}),
            json!({"name": "hp", "hostPath": {"path": "/x", "type": ""}}),
            json!({"name": "s", "secret": {"secretName": "s", "defaultMode": 420}}),
            json!({"name": "cm", "configMap": {"name": "c", "defaultMode": 420}}),
            json!({"name": "dw", "downwardAPI": {"defaultMode": 420, "items": [
                {"path": "p", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}]}}),
            json!({"name": "pr", "projected": {"defaultMode": 420, "sources": [
                {"downwardAPI": {"items": [{"path": "p", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}]}},
                {"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]}}),
            json!({"name": "is", "iscsi": {"targetPortal": "t", "iqn": "i", "lun": 0, "iscsiInterface": "default"}}),
            json!({"name": "rbd", "rbd": {"monitors": ["m"], "image": "i", "pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"}}),
            json!({"name": "az", "azureDisk": {"diskName": "d", "diskURI": "u", "cachingMode": "ReadWrite", "fsType": "ext4", "readOnly": false, "kind": "Shared"}}),
            json!({"name": "sio", "scaleIO": {"gateway": "g", "system": "s", "secretRef": {}, "storageMode": "ThinProvisioned", "fsType": "xfs"}}),
            json!({"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {"volumeMode": "Filesystem"}}}}),
            json!({"name": "img", "image": {"reference": "quay.io/x/y:latest", "pullPolicy": "Always"}}),
        ];
        for (i, e) in expected.iter().enumerate() {
            assert_eq!(&v[i], e);
        }
    }

    fn full_container() -> Value {
        let http = json!({"httpGet": {"port": 80}});
        json!({"name": "c", "image": "app:v1",
            "ports": [{"containerPort": 80}],
            "env": [{"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            "livenessProbe": http, "readinessProbe": http, "startupProbe": http,
            "lifecycle": {"postStart": http, "preStop": http}})
    }

    fn full_container_defaulted() -> Value {
        let http = json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}});
        let probe = json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
            "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3});
        json!({"name": "c", "image": "app:v1", "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "resources": {},
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "env": [{"name": "E", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}],
            "livenessProbe": probe, "readinessProbe": probe, "startupProbe": probe,
            "lifecycle": {"postStart": http, "preStop": http}})
    }

    /// `TestPodDefaults` adds `enableServiceLinks` and requests defaulted
    /// from limits (`TestSetDefaultRequestsPod`: a request given stays);
    /// `TestSetDefaultPodSpecHostNetwork`: host ports follow container
    /// ports.
    #[test]
    fn a_pod_also_gets_set_defaults_pod() {
        let mut p = json!({"spec": {"hostNetwork": true, "containers": [{
            "name": "c", "image": "app", "ports": [{"containerPort": 8080}, {"containerPort": 53, "hostPort": 5353}],
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}]}});
        pod(&mut p);
        let c = &p["spec"]["containers"][0];
        assert_eq!(p["spec"]["enableServiceLinks"], true);
        assert_eq!(
            c["resources"]["requests"],
            json!({"cpu": "500m", "memory": "1Gi"})
        );
        assert_eq!(c["ports"][0]["hostPort"], 8080);
        assert_eq!(c["ports"][1]["hostPort"], 5353);
        assert_eq!(c["imagePullPolicy"], "Always");
    }

    /// What the client set is kept, including explicit zeros on pointer
    /// fields (`terminationGracePeriodSeconds: 0`) and explicit probe
    /// values (`SetDefaults_Probe` only fills zeros).
    #[test]
    fn set_values_are_never_overwritten() {
        let mut d = json!({"spec": {"template": {"spec": {
            "restartPolicy": "Never", "dnsPolicy": "Default", "schedulerName": "s",
            "securityContext": {"runAsUser": 1}, "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "app", "imagePullPolicy": "Never",
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "ports": [{"containerPort": 53, "protocol": "UDP"}],
                "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 2, "failureThreshold": 7}}],
            "volumes": [{"name": "s", "secret": {"secretName": "s", "defaultMode": 256}}]}}}});
        template(&mut d, &["spec", "template"]);
        let s = &d["spec"]["template"]["spec"];
        assert_eq!(s["restartPolicy"], "Never");
        assert_eq!(s["dnsPolicy"], "Default");
        assert_eq!(s["schedulerName"], "s");
        assert_eq!(s["securityContext"], json!({"runAsUser": 1}));
        assert_eq!(s["terminationGracePeriodSeconds"], 0);
        let c = &s["containers"][0];
        assert_eq!(c["imagePullPolicy"], "Never");
        assert_eq!(c["terminationMessagePolicy"], "FallbackToLogsOnError");
        assert_eq!(c["ports"][0]["protocol"], "UDP");
        assert_eq!(
            c["readinessProbe"],
            json!({"exec": {"command": ["true"]}, "periodSeconds": 2, "failureThreshold": 7,
                "timeoutSeconds": 1, "successThreshold": 1})
        );
        assert_eq!(s["volumes"][0]["secret"]["defaultMode"], 256);
    }

    /// `TestDefaultRequestIsNotSetForReplicationController`: a template's
    /// limits do not become requests (that is `SetDefaults_Pod`'s).
    #[test]
    fn a_templates_limits_do_not_become_requests() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "app",
            "resources": {"limits": {"cpu": "100m"}}}]}}}});
        template(&mut d, &["spec", "template"]);
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "100m"}})
        );
    }
}
