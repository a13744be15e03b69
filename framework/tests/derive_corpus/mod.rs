//! The derive corpus: spec types covering every `#[crd(...)]` option and
//! type mapping, each with its CRD, a valid sample object, the fields the
//! apiserver should default, the fields it should prune, and an invalid
//! sample with the field the apiserver names in its error.
//!
//! It is data, so that a test against an API server (install every CRD,
//! wait for Established, create the samples, check defaults, pruning and
//! rejection) is a loop over [`entries`].

#![allow(dead_code)]

pub mod types;

use kubeforge::crd::{CrdError, CustomResource};
use kubeforge::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubeforge::serde_json::{self, json, Value};

use types::*;

/// One corpus entry.
pub struct Entry {
    /// Name, also the snapshot file's stem.
    pub name: &'static str,
    /// The CRD (all versions of the kind).
    pub crd: fn() -> Result<CustomResourceDefinition, CrdError>,
    /// Decode a sample as the Rust type and encode it again.
    pub round_trip: fn(&Value) -> Result<Value, serde_json::Error>,
    /// An object the apiserver accepts.
    pub valid: Value,
    /// JSON pointers into the created object and the values the apiserver
    /// must have defaulted there.
    pub defaults: Vec<(&'static str, Value)>,
    /// JSON pointers of unknown fields in `valid` the apiserver must prune.
    pub pruned: Vec<&'static str>,
    /// An object the apiserver rejects, and the field its error names.
    pub invalid: Option<(Value, &'static str)>,
    /// Whether the invalid sample is rejected by a CEL rule (which only a
    /// server evaluates) rather than by the OpenAPI schema.
    pub invalid_by_cel: bool,
}

fn rt<K: CustomResource>(v: &Value) -> Result<Value, serde_json::Error> {
    let k: K = serde_json::from_value(v.clone())?;
    serde_json::to_value(&k)
}

fn obj(api_version: &str, kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec})
}

fn entry<K: CustomResource>(name: &'static str, spec: Value) -> Entry {
    let d = K::DESCRIPTOR;
    Entry {
        name,
        crd: K::try_crd,
        round_trip: rt::<K>,
        valid: obj(&d.api_version(), d.kind, "sample", spec),
        defaults: Vec::new(),
        pruned: Vec::new(),
        invalid: None,
        invalid_by_cel: false,
    }
}

impl Entry {
    fn defaults(mut self, d: Vec<(&'static str, Value)>) -> Self {
        self.defaults = d;
        self
    }
    fn pruned(mut self, p: Vec<&'static str>) -> Self {
        self.pruned = p;
        self
    }
    /// The invalid sample: the valid one with `pointer` set to `value`.
    fn invalid_at(mut self, pointer: &str, value: Value, field: &'static str) -> Self {
        let mut bad = self.valid.clone();
        set(&mut bad, pointer, value);
        self.invalid = Some((bad, field));
        self
    }
    fn invalid(mut self, bad: Value, field: &'static str) -> Self {
        self.invalid = Some((bad, field));
        self
    }
    fn cel(mut self) -> Self {
        self.invalid_by_cel = true;
        self
    }
}

/// Set the value at a JSON pointer whose parent exists.
pub fn set(target: &mut Value, pointer: &str, value: Value) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer with a parent");
    match target.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(key.to_string(), value);
        }
        Some(Value::Array(items)) => {
            let index: usize = key.parse().expect("array index");
            items[index] = value;
        }
        _ => panic!("no parent for {pointer}"),
    }
}

/// Remove a JSON pointer.
pub fn remove(target: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer with a parent");
    if let Some(Value::Object(map)) = target.pointer_mut(parent) {
        map.remove(key);
    }
}

/// Every entry. Two entries may share a CRD (the versions of one kind):
/// install each CRD name once.
pub fn entries() -> Vec<Entry> {
    vec![
        entry::<Memcached>("memcached", json!({"size": 3, "unknown": true}))
            .pruned(vec!["/spec/unknown"])
            .invalid_at("/spec/size", json!(11), "spec.size"),
        entry::<Region>("region", json!({"display_name": "EU", "zones": ["a", "b"], "x": 1}))
            .pruned(vec!["/spec/x"])
            .invalid_at("/spec/zones", json!("a"), "spec.zones"),
        entry::<Index>("index", json!({"shardCount": 2, "replicaCount": 1}))
            .invalid_at("/spec/shardCount", json!(-1), "spec.shardCount"),
        entry::<Thermostat>("thermostat", json!({"target": 21.5, "humidity": 40, "step": 10, "intervalSeconds": 60}))
            .invalid_at("/spec/humidity", json!(100), "spec.humidity"),
        entry::<Account>("account", json!({"username": "ada", "email": "ada@example.com", "display": "Ada Lovelace", "phone": "+4412345"}))
            .invalid_at("/spec/username", json!("Ada!"), "spec.username"),
        entry::<Firewall>("firewall", json!({
            "rules": [{"name": "http", "port": 80}],
            "tags": ["edge"], "sources": ["10.0.0.0/8"], "ports": [80, 443]
        }))
        .defaults(vec![("/spec/rules/0/protocol", json!("TCP"))])
        .invalid_at("/spec/rules/0/port", json!(70000), "spec.rules[0].port"),
        entry::<Inventory>("inventory", json!({"items": {"apple": 3}, "labels": {"a": "b"}, "limits": {"cpu": "500m"}}))
            .invalid_at("/spec/items", json!({}), "spec.items"),
        entry::<Pipeline>("pipeline", json!({}))
            .defaults(vec![
                ("/spec/retries", json!(3)),
                ("/spec/stages", json!(["build", "test"])),
                ("/spec/logging", json!({"level": "info", "json": true})),
                ("/spec/timeoutSeconds", json!(600)),
                ("/spec/dryRun", json!(false)),
                ("/spec/branch", json!("main")),
                ("/spec/offset", json!(-1.5)),
            ])
            .invalid_at("/spec/retries", json!("three"), "spec.retries"),
        entry::<Article>("article", json!({"title": "Hi", "subtitle": null, "author": "me"}))
            .invalid(obj("docs.example.com/v1", "Article", "sample", json!({"title": "Hi"})), "spec.author"),
        entry::<Bundle>("bundle", json!({
            "values": {"a": [1, {"b": null}]},
            "raw": "anything",
            "settings": {"mode": "fast", "custom": {"deep": true}},
            "manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": "v"}},
            "extra": {"free": 1}
        }))
        .invalid_at("/spec/settings/mode", json!(1), "spec.settings.mode"),
        entry::<Rollout>("rollout", json!({"maxSurge": 1, "maxUnavailable": "10%"}))
            .defaults(vec![("/spec/canary", json!("25%"))])
            .invalid_at("/spec/maxSurge", json!(true), "spec.maxSurge"),
        entry::<Reservation>("reservation", json!({
            "memory": "1Gi", "cpu": "2",
            "resources": {"limits": {"cpu": "1"}, "requests": {"memory": "64Mi"}},
            "starts_at": "2026-01-01T00:00:00Z"
        }))
        .invalid_at("/spec/starts_at", json!(5), "spec.starts_at"),
        entry::<Worker>("worker", json!({
            "replicas": 2,
            "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "w", "image": "busybox"}]}}
        }))
        .invalid_at("/spec/template/spec/containers", json!("busybox"), "spec.template.spec.containers"),
        entry::<Light>("light", json!({"color": "Red", "blink": "slow"}))
            .defaults(vec![("/spec/mode", json!("auto"))])
            .invalid_at("/spec/color", json!("Purple"), "spec.color"),
        entry::<Backup>("backup", json!({"target": {"type": "s3", "bucket": "b", "region": "eu"}, "schedule": "@daily"}))
            .invalid_at("/spec/target/type", json!("tape"), "spec.target.type"),
        entry::<Login>("login", json!({"method": {"token": {"secretName": "s"}}}))
            .invalid_at("/spec/method/token/secretName", json!(7), "spec.method.token.secretName"),
        entry::<Route>("route", json!({"destination": {"service": "web", "port": 80}}))
            .invalid_at("/spec/destination/port", json!("eighty"), "spec.destination.port"),
        entry::<Profile>("profile", json!({"displayName": "Ada", "e-mail": "ada@example.com", "nick": "ada", "cache": "dropped"}))
            .pruned(vec!["/spec/cache"])
            .invalid_at("/spec/displayName", json!(""), "spec.displayName"),
        entry::<Quota>("quota", json!({"min": 1, "max": 5, "owner": "me", "users": ["bob"], "generation": 1}))
            .invalid_at("/spec/min", json!(9), "spec.min")
            .cel(),
        entry::<Source>("source", json!({"origin": {"git": "https://example.com/r.git"}, "mirrors": {"primary": "m1"}}))
            .invalid_at("/spec/origin", json!({"git": "a", "oci": "b"}), "spec.origin")
            .cel(),
        entry::<Site>("site", json!({"host": "example.com", "tier": "gold", "replicas": 2}))
            .invalid_at("/spec/replicas", json!("two"), "spec.replicas"),
        entry::<OldGizmo>("gizmo", json!({"size": "L"})),
        entry::<Handmade>("handmade", json!({"size": 4}))
            .invalid_at("/spec/size", json!(-4), "spec.size"),
        entry::<Anything>("anything", json!({"whatever": {"you": ["like"]}})),
        entry::<Gadget>("gadget", json!({
            "inner": {"name": "core", "level": 2},
            "maybeList": [{"name": "a"}],
            "small": -3, "big": 12345678901u64, "ratio": 0.5, "enabled": true, "id": "g-1"
        }))
        .invalid_at("/spec/inner/name", json!("much-too-long-name"), "spec.inner.name"),
        Entry {
            crd: ship_crd,
            ..entry::<ship_v1::Ship>("ship", json!({"name": "Argo", "crew": 50}))
                .invalid_at("/spec/crew", json!(0), "spec.crew")
        },
        Entry {
            crd: ship_crd,
            ..entry::<ship_v1beta1::Ship>("ship-v1beta1", json!({"name": "Argo", "crew": "fifty"}))
                .invalid_at("/spec/crew", json!(50), "spec.crew")
        },
        entry::<Pair>("pair", json!({"ints": {"left": 1, "right": 2}, "words": {"left": "a", "right": "b", "middle": "c"}}))
            .pruned(vec!["/spec/words/middle"])
            .invalid_at("/spec/ints/left", json!("one"), "spec.ints.left"),
    ]
}

/// The two Ship versions as one CRD.
pub fn ship_crd() -> Result<CustomResourceDefinition, CrdError> {
    kubeforge::crd::combine(&[ship_v1::Ship::DESCRIPTOR, ship_v1beta1::Ship::DESCRIPTOR])
}
