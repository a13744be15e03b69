//! A container's environment, as the kubelet's
//! `makeEnvironmentVariables` builds it (pkg/kubelet/kubelet_pods.go):
//! `envFrom` (ConfigMaps and Secrets, with a prefix), then `env` (values
//! with `$(VAR)` expanded from what came before, `fieldRef` for the
//! downward API, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef`),
//! then the Service links of the pod's namespace and the `kubernetes`
//! Service's, for names not set already, and `HOSTNAME`. A reference that
//! cannot be resolved is the kubelet's `CreateContainerConfigError`
//! message.

use std::sync::Arc;

use base64::Engine;
use serde_json::Value;

use crate::machinery::util::Pointer;
use crate::registry::core::service::KUBERNETES_SERVICE_IP;
use crate::registry::state::Shared;
use crate::storage::{Filter, ResKey};

/// The `kubernetes` Service's port.
pub(super) const KUBERNETES_SERVICE_PORT: u16 = 443;

/// The object `namespace/name` of a core/v1 `resource`.
pub(super) fn object(
    shared: &Shared,
    resource: &str,
    namespace: &str,
    name: &str,
) -> Option<Arc<Value>> {
    let res = ResKey::new("", resource);
    let obj = shared
        .storage
        .lock()
        .get(&res, &(namespace.to_owned(), name.to_owned()))?;
    Some(obj.value())
}

/// A ConfigMap's or Secret's entries as bytes (a Secret's `data` is
/// base64, a ConfigMap's `binaryData` too).
fn entries(obj: &Value, secret: bool) -> Entries {
    let b64 = |v: &Value| {
        v.as_str()
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
    };
    let mut out = Vec::new();
    if let Some(data) = obj.get("data").and_then(Value::as_object) {
        for (k, v) in data {
            let bytes = if secret {
                b64(v)
            } else {
                v.as_str().map(|s| s.as_bytes().to_vec())
            };
            if let Some(bytes) = bytes {
                out.push((k.clone(), bytes));
            }
        }
    }
    if let Some(data) = obj.get("binaryData").and_then(Value::as_object) {
        for (k, v) in data {
            if let Some(bytes) = b64(v) {
                out.push((k.clone(), bytes));
            }
        }
    }
    out
}

/// A string field of `v`, empty when absent.
pub(super) fn str_at<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

/// A ConfigMap's or Secret's keys and values.
type Entries = Vec<(String, Vec<u8>)>;

/// A ConfigMap or Secret an env or volume reference names (none if
/// optional and missing), or the kubelet's error.
pub(super) fn source(
    shared: &Shared,
    namespace: &str,
    reference: &Value,
    secret: bool,
) -> Result<Option<Entries>, String> {
    let name = str_at(reference, "name");
    let optional = reference.get("optional").and_then(Value::as_bool) == Some(true);
    let (resource, what) = if secret {
        ("secrets", "secret")
    } else {
        ("configmaps", "configmap")
    };
    match object(shared, resource, namespace, name) {
        Some(obj) => Ok(Some(entries(&obj, secret))),
        None if optional => Ok(None),
        None => Err(format!("{what} \"{name}\" not found")),
    }
}

/// The value of a downward-API `fieldPath` of the pod.
pub(super) fn field(pod: &Value, path: &str, pod_ip: &str) -> Result<String, String> {
    let meta = |f: &str| {
        pod.at(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let keyed = |map: &str, rest: &str| {
        let key = rest
            .strip_prefix("['")
            .and_then(|r| r.strip_suffix("']"))
            .unwrap_or(rest);
        pod.at(&format!("/metadata/{map}"))
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    Ok(match path {
        "metadata.name" => meta("name"),
        "metadata.namespace" => meta("namespace"),
        "metadata.uid" => meta("uid"),
        "spec.nodeName" => pod
            .at("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        "spec.serviceAccountName" => pod
            .at("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        "status.podIP" | "status.podIPs" => pod_ip.to_owned(),
        "status.hostIP" | "status.hostIPs" => pod
            .at("/status/hostIP")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        "metadata.labels" => lines(pod.at("/metadata/labels")),
        "metadata.annotations" => lines(pod.at("/metadata/annotations")),
        p if p.starts_with("metadata.labels[") => keyed("labels", &p["metadata.labels".len()..]),
        p if p.starts_with("metadata.annotations[") => {
            keyed("annotations", &p["metadata.annotations".len()..])
        }
        other => return Err(format!("unsupported fieldPath: {other}")),
    })
}

/// Labels or annotations as the downward API writes them: `key="value"`
/// lines, sorted.
fn lines(map: Option<&Value>) -> String {
    let mut out: Vec<String> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", Value::String(v.as_str().unwrap_or("").to_owned())))
        .collect();
    out.sort();
    out.join("\n")
}

/// A quantity (`500m`, `128Mi`, `2`) in base units.
fn quantity(q: &str) -> Option<f64> {
    const SUFFIXES: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("Pi", 1125899906842624.0),
        ("Ei", 1152921504606846976.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
    ];
    let q = q.trim();
    for (suffix, factor) in SUFFIXES {
        if let Some(n) = q.strip_suffix(suffix) {
            return n.parse::<f64>().ok().map(|n| n * factor);
        }
    }
    q.parse().ok()
}

/// A `resourceFieldRef`'s value: the container's limit or request divided
/// by the divisor and rounded up (a missing limit is the node's
/// allocatable, a missing request 0), as `ExtractContainerResourceValue`.
fn resource(
    shared: &Shared,
    pod: &Value,
    container: &Value,
    reference: &Value,
) -> Result<String, String> {
    let name = str_at(reference, "resource");
    let Some((kind, what)) = name.split_once('.') else {
        return Err(format!("unsupported container resource: {name}"));
    };
    let divisor = reference
        .get("divisor")
        .and_then(Value::as_str)
        .and_then(quantity)
        .filter(|d| *d > 0.0)
        .unwrap_or(1.0);
    let own = container
        .at(&format!("/resources/{kind}/{what}"))
        .and_then(Value::as_str)
        .and_then(quantity);
    let value = match (own, kind) {
        (Some(v), _) => v,
        (None, "limits") => {
            let node = pod
                .at("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("");
            object(shared, "nodes", "", node)
                .and_then(|n| {
                    n.at(&format!("/status/allocatable/{what}"))
                        .and_then(Value::as_str)
                        .and_then(quantity)
                })
                .unwrap_or(0.0)
        }
        (None, _) => 0.0,
    };
    Ok(format!("{}", (value / divisor).ceil() as i64))
}

/// Expands `$(VAR)` from `defined`; `$$` is a literal `$`; an undefined
/// reference stays as written (k8s.io/kubernetes/third_party/forked/golang/expansion).
fn expand(input: &str, defined: &[(String, String)]) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(') {
            match inner.find(')') {
                Some(end) => {
                    let name = &inner[..end];
                    match defined.iter().rev().find(|(k, _)| k == name) {
                        Some((_, v)) => out.push_str(v),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &inner[end + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = inner;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn set(env: &mut Vec<(String, String)>, name: &str, value: String) {
    match env.iter_mut().find(|(k, _)| k == name) {
        Some(slot) => slot.1 = value,
        None => env.push((name.to_owned(), value)),
    }
}

/// The environment of `container` in `pod`, whose IP is `pod_ip`.
pub(super) fn environment(
    shared: &Shared,
    pod: &Value,
    container: &Value,
    pod_ip: &str,
) -> Result<Vec<(String, String)>, String> {
    let namespace = pod
        .at("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let mut env: Vec<(String, String)> = Vec::new();
    for from in container
        .get("envFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let prefix = str_at(from, "prefix");
        let found = if let Some(r) = from.get("configMapRef") {
            source(shared, namespace, r, false)?
        } else if let Some(r) = from.get("secretRef") {
            source(shared, namespace, r, true)?
        } else {
            None
        };
        for (k, v) in found.into_iter().flatten() {
            set(
                &mut env,
                &format!("{prefix}{k}"),
                String::from_utf8_lossy(&v).into_owned(),
            );
        }
    }
    for e in container
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = str_at(e, "name");
        let value = if let Some(v) = e.get("value").and_then(Value::as_str) {
            expand(v, &env)
        } else if let Some(from) = e.get("valueFrom") {
            match value_from(shared, pod, container, namespace, from, pod_ip)? {
                Some(v) => v,
                None => continue,
            }
        } else {
            String::new()
        };
        set(&mut env, name, value);
    }
    let links = pod.at("/spec/enableServiceLinks").and_then(Value::as_bool) != Some(false);
    for (k, v) in service_links(shared, namespace, links) {
        if !env.iter().any(|(n, _)| *n == k) {
            env.push((k, v));
        }
    }
    if !env.iter().any(|(n, _)| n == "HOSTNAME") {
        let host = pod
            .at("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        env.push(("HOSTNAME".to_owned(), host.to_owned()));
    }
    Ok(env)
}

fn value_from(
    shared: &Shared,
    pod: &Value,
    container: &Value,
    namespace: &str,
    from: &Value,
    pod_ip: &str,
) -> Result<Option<String>, String> {
    if let Some(f) = from.get("fieldRef") {
        return field(pod, str_at(f, "fieldPath"), pod_ip).map(Some);
    }
    if let Some(r) = from.get("resourceFieldRef") {
        return resource(shared, pod, container, r).map(Some);
    }
    for (field, secret, kind) in [
        ("configMapKeyRef", false, "ConfigMap"),
        ("secretKeyRef", true, "Secret"),
    ] {
        let Some(r) = from.get(field) else { continue };
        let key = str_at(r, "key");
        let optional = r.get("optional").and_then(Value::as_bool) == Some(true);
        let Some(found) = source(shared, namespace, r, secret)? else {
            return Ok(None);
        };
        return match found.into_iter().find(|(k, _)| k == key) {
            Some((_, v)) => Ok(Some(String::from_utf8_lossy(&v).into_owned())),
            None if optional => Ok(None),
            None => Err(format!(
                "couldn't find key {key} in {kind} {namespace}/{}",
                str_at(r, "name")
            )),
        };
    }
    Ok(None)
}

/// The Docker-links variables of one Service (pkg/kubelet/envvars).
fn links_of(name: &str, ip: &str, ports: &[Value], out: &mut Vec<(String, String)>) {
    let prefix = name.to_uppercase().replace('-', "_");
    let Some(first) = ports.first() else { return };
    let port_of = |p: &Value| p.get("port").and_then(Value::as_i64).unwrap_or(0);
    out.push((format!("{prefix}_SERVICE_HOST"), ip.to_owned()));
    out.push((format!("{prefix}_SERVICE_PORT"), port_of(first).to_string()));
    for p in ports {
        if let Some(pname) = p
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        {
            out.push((
                format!(
                    "{prefix}_SERVICE_PORT_{}",
                    pname.to_uppercase().replace('-', "_")
                ),
                port_of(p).to_string(),
            ));
        }
    }
    let proto = |p: &Value| {
        p.get("protocol")
            .and_then(Value::as_str)
            .unwrap_or("TCP")
            .to_owned()
    };
    out.push((
        format!("{prefix}_PORT"),
        format!("{}://{ip}:{}", proto(first).to_lowercase(), port_of(first)),
    ));
    for p in ports {
        let (port, proto) = (port_of(p), proto(p));
        let base = format!("{prefix}_PORT_{port}_{proto}");
        out.push((
            base.clone(),
            format!("{}://{ip}:{port}", proto.to_lowercase()),
        ));
        out.push((format!("{base}_PROTO"), proto.to_lowercase()));
        out.push((format!("{base}_PORT"), port.to_string()));
        out.push((format!("{base}_ADDR"), ip.to_owned()));
    }
}

/// The `kubernetes` Service's variables always; with `links`, those of
/// each Service of `namespace` with a cluster IP.
fn service_links(shared: &Shared, namespace: &str, links: bool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if links {
        let res = ResKey::new("", "services");
        let filter = Filter {
            namespace: Some(namespace.to_owned()),
            ..Filter::default()
        };
        let services: Vec<Arc<Value>> = shared
            .storage
            .lock()
            .list(&res, &filter, None, None, None)
            .map(|page| page.items.iter().map(|o| o.value()).collect())
            .unwrap_or_default();
        for svc in services {
            let name = svc
                .at("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let ip = svc
                .at("/spec/clusterIP")
                .and_then(Value::as_str)
                .unwrap_or("");
            if ip.is_empty() || ip == "None" || (namespace == "default" && name == "kubernetes") {
                continue;
            }
            let ports = svc
                .at("/spec/ports")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            links_of(name, ip, &ports, &mut out);
        }
    }
    let port =
        serde_json::json!({"name": "https", "port": KUBERNETES_SERVICE_PORT, "protocol": "TCP"});
    links_of(
        "kubernetes",
        &KUBERNETES_SERVICE_IP.to_string(),
        &[port],
        &mut out,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_follows_the_kubelets_rules() {
        let defined = vec![("A".to_owned(), "x".to_owned())];
        assert_eq!(expand("$(A)-$(B)-$$(A)-$", &defined), "x-$(B)-$(A)-$");
        assert_eq!(expand("$(A", &defined), "$(A");
    }

    #[test]
    fn quantities_and_links() {
        assert_eq!(quantity("500m"), Some(0.5));
        assert_eq!(quantity("128Mi"), Some(134217728.0));
        let mut out = Vec::new();
        let ports = [serde_json::json!({"name": "http-api", "port": 80, "protocol": "TCP"})];
        links_of("my-svc", "10.96.0.9", &ports, &mut out);
        let get = |k: &str| out.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("MY_SVC_SERVICE_HOST"), Some("10.96.0.9"));
        assert_eq!(get("MY_SVC_SERVICE_PORT_HTTP_API"), Some("80"));
        assert_eq!(get("MY_SVC_PORT"), Some("tcp://10.96.0.9:80"));
        assert_eq!(get("MY_SVC_PORT_80_TCP_ADDR"), Some("10.96.0.9"));
    }

    #[test]
    fn downward_fields() {
        let pod = serde_json::json!({"metadata": {"name": "p", "namespace": "n",
            "labels": {"b": "2", "a": "1"}}});
        assert_eq!(
            field(&pod, "metadata.labels", "").unwrap(),
            "a=\"1\"\nb=\"2\""
        );
        assert_eq!(field(&pod, "metadata.labels['a']", "").unwrap(), "1");
        assert_eq!(
            field(&pod, "status.podIP", "10.244.0.2").unwrap(),
            "10.244.0.2"
        );
        assert!(field(&pod, "spec.nope", "").is_err());
    }
}
