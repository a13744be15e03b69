//! Core (`v1`) kinds other than the Pod spec: Namespace (label, phase,
//! finalizer), Node (allocatable from capacity), Secret (type, and
//! `stringData` folded into `data`), Service (`SetDefaults_Service`, plus
//! the registry's cluster IP and IP families), and the Pod's create-time
//! ServiceAccount and status. Source: `pkg/apis/core/v1/defaults.go` and
//! `pkg/registry/core/service/storage/alloc.go` (Kubernetes 1.35).

use std::sync::atomic::{AtomicU32, Ordering};

use base64::Engine;
use serde_json::{json, Map, Value};

use super::fields::{ensure_object, fill, items_mut, obj_name, set_if_absent, spec_mut, Table, D};

/// `SetDefaults_Namespace`: the `kubernetes.io/metadata.name` label
/// (when the namespace has a name); `SetDefaults_NamespaceStatus`'s phase
/// is the create-time status below.
pub(super) fn namespace(obj: &mut Value) {
    let name = obj_name(obj);
    if name.is_empty() {
        return;
    }
    if let Some(labels) = ensure_object(obj, &["metadata", "labels"]) {
        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
}

/// The namespace strategy's `PrepareForCreate`: the `kubernetes`
/// finalizer and phase Active.
pub(super) fn namespace_create(obj: &mut Value, _: &AtomicU32) {
    if let Some(map) = obj.as_object_mut() {
        map.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
        map.insert("status".into(), json!({"phase": "Active"}));
    }
}

/// An update keeps the label (the strategy canonicalizes it again).
pub(super) fn namespace_update(obj: &mut Value, _: &Value) {
    namespace(obj);
}

/// `SetDefaults_NodeStatus`: allocatable is capacity unless given.
pub(super) fn node(obj: &mut Value) {
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    if status.get("allocatable").is_none_or(Value::is_null) {
        if let Some(capacity) = status.get("capacity").filter(|c| c.is_object()).cloned() {
            status.insert("allocatable".into(), capacity);
        }
    }
}

/// `SetDefaults_Secret`, and `stringData` merged into `data` (base64) and
/// dropped, as the v1 conversion does on every write.
pub(super) fn secret(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    fill(map, &[("type", D::Str("Opaque"))]);
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

/// `SetDefaults_Service`'s plain fields.
const SERVICE: Table = &[
    ("sessionAffinity", D::Str("None")),
    ("type", D::Str("ClusterIP")),
];

/// `v1.DefaultClientIPServiceAffinitySeconds`, three hours.
const CLIENT_IP_TIMEOUT: i64 = 10800;

/// `SetDefaults_Service`.
pub(super) fn service(obj: &mut Value) {
    let Some(spec) = spec_mut(obj) else {
        return;
    };
    fill(spec, SERVICE);
    let str_of = |spec: &Map<String, Value>, k: &str| {
        spec.get(k).and_then(Value::as_str).unwrap_or("").to_owned()
    };
    match str_of(spec, "sessionAffinity").as_str() {
        "None" => {
            spec.remove("sessionAffinityConfig");
        }
        "ClientIP" => {
            let timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.pointer("/clientIP/timeoutSeconds"));
            if timeout.is_none_or(Value::is_null) {
                spec.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": CLIENT_IP_TIMEOUT}}),
                );
            }
        }
        _ => {}
    }
    for p in items_mut(spec, "ports") {
        fill(p, &[("protocol", D::Str("TCP"))]);
        let target = p.get("targetPort");
        let unset = target.is_none_or(|t| t.is_null() || t == &json!(0) || t == &json!(""));
        if unset {
            if let Some(port) = p.get("port").cloned() {
                p.insert("targetPort".into(), port);
            }
        }
    }
    let ty = str_of(spec, "type");
    let external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    // service.ExternallyAccessible: a load balancer, node ports, or a
    // ClusterIP service with external IPs.
    let externally_accessible =
        ty == "LoadBalancer" || ty == "NodePort" || (ty == "ClusterIP" && external_ips);
    if externally_accessible {
        fill(spec, &[("externalTrafficPolicy", D::Str("Cluster"))]);
    }
    if matches!(ty.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP") {
        fill(spec, &[("internalTrafficPolicy", D::PtrStr("Cluster"))]);
    }
    if ty == "LoadBalancer" {
        fill(spec, &[("allocateLoadBalancerNodePorts", D::Bool(true))]);
        if let Some(ingress) = obj
            .pointer_mut("/status/loadBalancer/ingress")
            .and_then(Value::as_array_mut)
        {
            for ing in ingress.iter_mut().filter_map(Value::as_object_mut) {
                if ing
                    .get("ip")
                    .and_then(Value::as_str)
                    .is_some_and(|ip| !ip.is_empty())
                {
                    fill(ing, &[("ipMode", D::PtrStr("VIP"))]);
                }
            }
        }
    }
}

/// The service registry on create: a cluster IP from the service CIDR
/// (10.96.0.0/12, kind's default), the IP families, `status.loadBalancer`.
pub(super) fn service_create(obj: &mut Value, next_ip: &AtomicU32) {
    if let Some(spec) = spec_mut(obj) {
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
        ip_families(spec);
    }
    if let Some(map) = obj.as_object_mut() {
        map.insert("status".into(), json!({"loadBalancer": {}}));
    }
}

/// On update the allocated cluster IPs survive a body that omits them
/// (`patchAllocatedValues`), and the families are defaulted again.
pub(super) fn service_update(obj: &mut Value, old: &Value) {
    let old_ip = old.pointer("/spec/clusterIP").cloned();
    let old_ips = old.pointer("/spec/clusterIPs").cloned();
    if let Some(spec) = spec_mut(obj) {
        if let Some(ip) = old_ip {
            set_if_absent(spec, "clusterIP", ip);
        }
        if let Some(ips) = old_ips {
            set_if_absent(spec, "clusterIPs", ips);
        }
        ip_families(spec);
    }
}

/// `tryDefaultValidateServiceClusterIPFields` on a single-stack IPv4
/// cluster: SingleStack / [IPv4], except a headless service without a
/// selector, which is RequireDualStack with both families; ExternalName
/// services get neither.
fn ip_families(spec: &mut Map<String, Value>) {
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return;
    }
    let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    let selectorless = spec
        .get("selector")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if headless && selectorless {
        set_if_absent(spec, "ipFamilyPolicy", json!("RequireDualStack"));
        set_if_absent(spec, "ipFamilies", json!(["IPv4"]));
        let single = spec.get("ipFamilyPolicy").and_then(Value::as_str) == Some("SingleStack");
        if let Some(families) = spec.get_mut("ipFamilies").and_then(Value::as_array_mut) {
            if families.len() == 1 && !single {
                let alt = if families[0] == "IPv6" {
                    "IPv4"
                } else {
                    "IPv6"
                };
                families.push(json!(alt));
            }
        }
    } else {
        set_if_absent(spec, "ipFamilyPolicy", json!("SingleStack"));
        set_if_absent(spec, "ipFamilies", json!(["IPv4"]));
    }
}

/// The ServiceAccount admission plugin (create only), and the status a new
/// Pod starts with.
pub(super) fn pod_create(obj: &mut Value, _: &AtomicU32) {
    if let Some(spec) = spec_mut(obj) {
        set_if_absent(spec, "serviceAccountName", json!("default"));
    }
    let qos = pod_qos(obj);
    if let Some(map) = obj.as_object_mut() {
        map.insert(
            "status".into(),
            json!({"phase": "Pending", "qosClass": qos}),
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `pkg/apis/core/v1/defaults_test.go`: `TestSetDefaultService`
    /// (sessionAffinity None without a config, type ClusterIP),
    /// `TestSetDefaultServicePort` and `TestSetDefaulServiceTargetPort`
    /// (protocol TCP, targetPort = port when 0 or ""),
    /// `TestSetDefaulServiceExternalTraffic` (Cluster for NodePort and
    /// LoadBalancer, nothing for ClusterIP),
    /// `TestSetDefaultServiceSessionAffinityConfig` (ClientIP → 10800 s);
    /// internalTrafficPolicy and allocateLoadBalancerNodePorts as
    /// `SetDefaults_Service` sets them.
    #[test]
    fn services_get_set_defaults_service() {
        let cases = [
            (
                json!({"ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}),
                json!({"sessionAffinity": "None", "type": "ClusterIP", "internalTrafficPolicy": "Cluster",
                    "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80},
                              {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}),
            ),
            (
                json!({"type": "NodePort", "ports": [{"port": 80, "targetPort": 0}]}),
                json!({"sessionAffinity": "None", "type": "NodePort", "internalTrafficPolicy": "Cluster",
                    "externalTrafficPolicy": "Cluster", "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]}),
            ),
            (
                json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local"}),
                json!({"sessionAffinity": "None", "type": "LoadBalancer", "internalTrafficPolicy": "Cluster",
                    "externalTrafficPolicy": "Local", "allocateLoadBalancerNodePorts": true}),
            ),
            (
                json!({"externalIPs": ["1.2.3.4"], "sessionAffinity": "ClientIP"}),
                json!({"type": "ClusterIP", "internalTrafficPolicy": "Cluster", "externalIPs": ["1.2.3.4"],
                    "externalTrafficPolicy": "Cluster", "sessionAffinity": "ClientIP",
                    "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}}),
            ),
            (
                json!({"sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}}}),
                json!({"sessionAffinity": "None", "type": "ClusterIP", "internalTrafficPolicy": "Cluster"}),
            ),
            (
                json!({"type": "ExternalName", "externalName": "example.com"}),
                json!({"sessionAffinity": "None", "type": "ExternalName", "externalName": "example.com"}),
            ),
        ];
        for (input, expected) in cases {
            let mut svc = json!({"spec": input.clone()});
            service(&mut svc);
            assert_eq!(svc["spec"], expected, "{input}");
        }
    }

    /// `pkg/registry/core/service/storage/alloc.go`: headless without a
    /// selector is RequireDualStack with both families.
    #[test]
    fn ip_families_follow_the_allocator() {
        for (input, policy, families) in [
            (
                json!({"selector": {"a": "b"}}),
                "SingleStack",
                json!(["IPv4"]),
            ),
            (
                json!({"clusterIP": "None", "selector": {"a": "b"}}),
                "SingleStack",
                json!(["IPv4"]),
            ),
            (
                json!({"clusterIP": "None"}),
                "RequireDualStack",
                json!(["IPv4", "IPv6"]),
            ),
            (
                json!({"clusterIP": "None", "ipFamilyPolicy": "SingleStack"}),
                "SingleStack",
                json!(["IPv4"]),
            ),
        ] {
            let mut spec = input.as_object().cloned().unwrap();
            ip_families(&mut spec);
            assert_eq!(spec["ipFamilyPolicy"], policy, "{input}");
            assert_eq!(spec["ipFamilies"], families, "{input}");
        }
    }

    /// `TestSetDefaultSecret`, `SetDefaults_Namespace`'s name label,
    /// `TestSetDefaultNodeStatusAllocatable`.
    #[test]
    fn secrets_namespaces_and_nodes() {
        let mut s = json!({"stringData": {"k": "v"}});
        secret(&mut s);
        assert_eq!(s, json!({"type": "Opaque", "data": {"k": "dg=="}}));
        let mut s = json!({"type": "kubernetes.io/tls"});
        secret(&mut s);
        assert_eq!(s["type"], "kubernetes.io/tls");

        let mut ns = json!({"metadata": {"name": "team"}});
        namespace(&mut ns);
        assert_eq!(
            ns["metadata"]["labels"],
            json!({"kubernetes.io/metadata.name": "team"})
        );

        let mut n = json!({"status": {"capacity": {"cpu": "4"}}});
        node(&mut n);
        assert_eq!(n["status"]["allocatable"], json!({"cpu": "4"}));
        let mut n = json!({"status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3"}}});
        node(&mut n);
        assert_eq!(n["status"]["allocatable"], json!({"cpu": "3"}));
    }
}
