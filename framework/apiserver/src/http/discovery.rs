//! Discovery documents: the legacy `/api`, `/apis`, `/apis/{g}` and
//! per-group-version `APIResourceList`s, and aggregated discovery
//! (`apidiscovery.k8s.io/v2` and `v2beta1` `APIGroupDiscoveryList`), chosen
//! by `Accept` exactly as kube-apiserver does (client-go decides the format
//! from the response `Content-Type` alone).

use bytes::Bytes;
use http::{header, HeaderValue, Response};
use serde_json::{json, Value};

use crate::http::wire::{json as json_response, json_bytes, Body};
use crate::registry::{Registry, ResourceDef};

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// `/api` (legacy).
pub(crate) fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn api_group(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": group_version(name, v), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": name, "versions": vs, "preferredVersion": preferred})
}

/// `/apis` (legacy).
pub(crate) fn api_group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = reg
        .groups()
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, vs)| api_group(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, if served.
pub(crate) fn api_group_doc(reg: &Registry, group: &str) -> Option<Value> {
    let groups = reg.groups();
    let (g, vs) = groups.iter().find(|(g, _)| g == group && !g.is_empty())?;
    let mut doc = api_group(g, vs);
    if let Some(obj) = doc.as_object_mut() {
        obj.insert("kind".into(), json!("APIGroup"));
        obj.insert("apiVersion".into(), json!("v1"));
    }
    Some(doc)
}

const SUB_VERBS: &[&str] = &["get", "patch", "update"];

/// `/api/v1` or `/apis/{g}/{v}`.
pub(crate) fn resource_list(reg: &Registry, group: &str, version: &str) -> Value {
    let mut resources = Vec::new();
    for def in reg.resources(group, version) {
        let mut entry = json!({
            "name": def.plural,
            "singularName": def.singular,
            "namespaced": def.namespaced,
            "kind": def.kind,
            "verbs": def.verbs,
        });
        if !def.short_names.is_empty() {
            entry["shortNames"] = json!(def.short_names);
        }
        if !def.categories.is_empty() {
            entry["categories"] = json!(def.categories);
        }
        resources.push(entry);
        let mut subs: Vec<Value> = Vec::new();
        for sub in &def.extra_subresources {
            let mut entry = json!({"name": format!("{}/{}", def.plural, sub.name), "singularName": "", "namespaced": def.namespaced, "kind": def.kind, "verbs": sub.verbs});
            if let Some((g, v, k)) = sub.kind {
                entry["group"] = json!(g);
                entry["version"] = json!(v);
                entry["kind"] = json!(k);
            }
            subs.push(entry);
        }
        if def.scale.is_some() {
            subs.push(json!({"name": format!("{}/scale", def.plural), "singularName": "", "namespaced": def.namespaced,
                "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": SUB_VERBS}));
        }
        if def.status {
            subs.push(json!({"name": format!("{}/status", def.plural), "singularName": "", "namespaced": def.namespaced, "kind": def.kind, "verbs": SUB_VERBS}));
        }
        subs.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        resources.extend(subs);
    }
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version(group, version),
        "resources": resources,
    })
}

fn aggregated_resource(def: &ResourceDef, version: &str) -> Value {
    let mut r = json!({
        "resource": def.plural,
        "responseKind": {"group": def.group, "version": version, "kind": def.kind},
        "scope": if def.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": def.singular,
        "verbs": def.verbs,
    });
    if !def.short_names.is_empty() {
        r["shortNames"] = json!(def.short_names);
    }
    if !def.categories.is_empty() {
        r["categories"] = json!(def.categories);
    }
    let mut subs = Vec::new();
    for sub in &def.extra_subresources {
        let (g, v, k) = sub
            .kind
            .unwrap_or((def.group.as_str(), version, def.kind.as_str()));
        subs.push(json!({"subresource": sub.name, "responseKind": {"group": g, "version": v, "kind": k}, "verbs": sub.verbs}));
    }
    if def.scale.is_some() {
        subs.push(json!({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": SUB_VERBS}));
    }
    if def.status {
        subs.push(json!({"subresource": "status", "responseKind": {"group": def.group, "version": version, "kind": def.kind}, "verbs": SUB_VERBS}));
    }
    if !subs.is_empty() {
        subs.sort_by(|a, b| a["subresource"].as_str().cmp(&b["subresource"].as_str()));
        r["subresources"] = Value::Array(subs);
    }
    r
}

fn aggregated_group(reg: &Registry, group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| {
            let resources: Vec<Value> = reg
                .resources(group, v)
                .iter()
                .map(|d| aggregated_resource(d, v))
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let mut meta = json!({"creationTimestamp": null});
    if !group.is_empty() {
        meta["name"] = json!(group);
    }
    json!({"metadata": meta, "versions": vs})
}

/// Aggregated discovery for `/api` (`core == true`) or `/apis`.
pub(crate) fn aggregated(reg: &Registry, core: bool, version: &'static str) -> Response<Body> {
    let items: Vec<Value> = reg
        .groups()
        .iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, vs)| aggregated_group(reg, g, vs))
        .collect();
    let doc = json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    });
    let mut resp = json_bytes(
        200,
        Bytes::from(serde_json::to_vec(&doc).unwrap_or_default()),
    );
    let ct = format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
    if let Ok(v) = HeaderValue::from_str(&ct) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    resp
}

/// A legacy discovery document, with `Vary: Accept`.
pub(crate) fn legacy(doc: &Value) -> Response<Body> {
    let mut resp = json_response(200, doc);
    resp.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    resp
}
