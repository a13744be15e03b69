//! Services (stored as `services/specs`): `SetDefaults_Service`, the
//! registry's cluster IP and IP families on create and what an update
//! keeps, a DNS-1035 name (`ValidateServiceName`), required ports unless
//! headless or ExternalName, created by a PUT, and the `TYPE CLUSTER-IP
//! EXTERNAL-IP PORT(S)` row. Source: `pkg/apis/core/v1/defaults.go`,
//! `pkg/registry/core/service/storage/alloc.go` (Kubernetes 1.35).

use std::sync::atomic::{AtomicU32, Ordering};

use k8s_openapi::api::core::v1::Service;
use serde_json::{json, Map, Value};

use super::pod_spec::is_empty;
use crate::machinery::status::Cause;
use crate::machinery::util::{NameRule, Pointer};
use crate::registry::fields::{fill, items_mut, set_if_absent, spec_mut, Table, D};
use crate::registry::printers::{age, name, str_at, Col::*, Printer};
use crate::registry::printers::{int_at, none_if_empty, selector};
use crate::registry::strategy::{builtin, Builtin, Defaults};
use crate::registry::strategy::{FieldLabelConversion, ALL};

pub(crate) static SERVICE: Builtin = Builtin {
    short_names: &["svc"],
    categories: ALL,
    status: true,
    // `AddFieldLabelConversionsForService` (`pkg/apis/core/v1/conversion.go`).
    field_label_conversion: FieldLabelConversion::Own,
    field_labels: &[
        ("spec.clusterIP", "spec.clusterIP"),
        ("spec.type", "spec.type"),
    ],
    printer: Printer {
        columns: &[
            Name,
            Str("Type", 0),
            Str("Cluster-IP", 0),
            Str("External-IP", 0),
            Str("Port(s)", 0),
            Age,
            Str("Selector", 1),
        ],
        cells,
    },
    etcd_prefix: Some("services/specs"),
    create_on_update: true,
    name_rule: NameRule::Dns1035,
    defaults: Defaults {
        fields: defaults,
        create: Some(on_create),
        update: Some(on_update),
    },
    validate,
    ..builtin::<Service>("", "services", "Service")
};

/// `SetDefaults_Service`'s plain fields.
const FIELDS: Table = &[
    ("sessionAffinity", D::Str("None")),
    ("type", D::Str("ClusterIP")),
];

/// `v1.DefaultClientIPServiceAffinitySeconds`, three hours.
const CLIENT_IP_TIMEOUT: i64 = 10800;

/// `SetDefaults_Service`.
pub(super) fn defaults(obj: &mut Value) {
    let Some(spec) = spec_mut(obj) else {
        return;
    };
    fill(spec, FIELDS);
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

/// The `kubernetes` Service's cluster IP: the first of the service range,
/// which kube-apiserver reserves for itself (`GetAPIServerServiceIP`);
/// the allocator below starts after it.
pub(crate) const KUBERNETES_SERVICE_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 96, 0, 1);
/// The first cluster IP the allocator hands out, as its offset in the range.
pub(crate) const FIRST_ALLOCATED_IP: u32 = 2;

/// The service registry on create: a cluster IP from the service CIDR
/// (10.96.0.0/12, kind's default), the IP families, `status.loadBalancer`.
pub(super) fn on_create(obj: &mut Value, next_ip: &AtomicU32) {
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
pub(super) fn on_update(obj: &mut Value, old: &Value) {
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
pub(super) fn ip_families(spec: &mut Map<String, Value>) {
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

/// `ValidateService`: ports are required unless the service is headless
/// or an ExternalName.
fn validate(obj: &Value, _: Option<&Value>) -> Vec<Cause> {
    let ty = obj.pointer("/spec/type").and_then(Value::as_str);
    let headless = obj.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None");
    if ty != Some("ExternalName") && !headless && is_empty(obj.pointer("/spec/ports")) {
        return vec![Cause::required("spec.ports")];
    }
    Vec::new()
}

/// The cells of a Service row.
fn cells(o: &Value) -> Vec<Value> {
    let ports = o
        .at("/spec/ports")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    let node = p
                        .get("nodePort")
                        .and_then(Value::as_i64)
                        .map(|n| format!(":{n}"))
                        .unwrap_or_default();
                    format!("{}{node}/{}", int_at(p, "/port"), str_at(p, "/protocol"))
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let ty = str_at(o, "/spec/type");
    let external = if ty == "ExternalName" {
        str_at(o, "/spec/externalName").to_owned()
    } else {
        "<none>".to_owned()
    };
    let cip = str_at(o, "/spec/clusterIP");
    vec![
        name(o),
        json!(ty),
        json!(if cip.is_empty() { "<none>" } else { cip }),
        json!(external),
        json!(none_if_empty(ports)),
        age(o),
        json!(selector(o, "/spec/selector")),
    ]
}
