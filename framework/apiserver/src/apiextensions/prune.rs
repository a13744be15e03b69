//! Pruning of unknown fields (apiextensions-apiserver
//! pkg/apiserver/schema/pruning): fields a schema does not specify are
//! dropped, except under `x-kubernetes-preserve-unknown-fields` (until a
//! nested `properties` takes over again) and the `apiVersion`, `kind` and
//! `metadata` of the root and of embedded resources. Embedded resources'
//! `metadata` keeps only `ObjectMeta`'s fields, as the objectmeta coercion
//! does.

use serde_json::{Map, Value};

use super::node::Node;

/// The JSON fields of `ObjectMeta` (k8s.io/apimachinery meta/v1).
pub(crate) const OBJECT_META_FIELDS: &[&str] = &[
    "annotations",
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "finalizers",
    "generateName",
    "generation",
    "labels",
    "managedFields",
    "name",
    "namespace",
    "ownerReferences",
    "resourceVersion",
    "selfLink",
    "uid",
];

struct Pruner {
    path: Vec<String>,
    pruned: Vec<String>,
    /// Whether the root's own `metadata` is coerced to ObjectMeta too (a
    /// stored object; not a schema default being checked).
    coerce_root_meta: bool,
}

impl Pruner {
    fn push_key(&mut self, k: &str) {
        if !self.path.is_empty() {
            self.path.push(".".into());
        }
        self.path.push(k.to_string());
    }

    fn pop_key(&mut self, had_parent: bool) {
        self.path.pop();
        if had_parent {
            self.path.pop();
        }
    }

    fn record(&mut self, k: &str) {
        let mut p = self.path.concat();
        if !p.is_empty() {
            p.push('.');
        }
        p.push_str(k);
        self.pruned.push(p);
    }

    fn with_key<F: FnOnce(&mut Self)>(&mut self, k: &str, f: F) {
        let had_parent = !self.path.is_empty();
        self.push_key(k);
        f(self);
        self.pop_key(had_parent);
    }

    fn with_index<F: FnOnce(&mut Self)>(&mut self, i: usize, f: F) {
        self.path.push(format!("[{i}]"));
        f(self);
        self.path.pop();
    }

    /// Whether `k` is a type-correct TypeMeta/ObjectMeta field of a resource.
    fn is_meta(k: &str, v: &Value) -> bool {
        match k {
            "apiVersion" | "kind" => v.is_string(),
            "metadata" => v.is_object(),
            _ => false,
        }
    }

    fn prune(&mut self, x: &mut Value, s: Option<&Node>, embedded: bool) {
        if let Some(node) = s {
            if node.preserve_unknown_fields {
                self.skip_prune(x, node, embedded);
                return;
            }
        }
        match x {
            Value::Object(m) => {
                let Some(node) = s else {
                    let keys: Vec<String> = m.keys().cloned().collect();
                    for k in keys {
                        self.record(&k);
                    }
                    m.clear();
                    return;
                };
                self.prune_map(m, node, embedded, false);
            }
            Value::Array(a) => {
                let items = s.and_then(|n| n.items.as_deref());
                for (i, v) in a.iter_mut().enumerate() {
                    self.with_index(i, |p| {
                        p.prune(v, items, items.is_some_and(|n| n.embedded_resource))
                    });
                }
            }
            _ => {}
        }
    }

    fn prune_map(
        &mut self,
        m: &mut Map<String, Value>,
        node: &Node,
        embedded: bool,
        preserve: bool,
    ) {
        let keys: Vec<String> = m.keys().cloned().collect();
        for k in keys {
            let Some(v) = m.get_mut(&k) else { continue };
            if embedded && Self::is_meta(&k, v) {
                if k == "metadata" && (self.coerce_root_meta || !self.path.is_empty()) {
                    // Metadata is coerced to ObjectMeta (objectmeta.Coerce).
                    self.with_key(&k, |p| p.prune_object_meta(v));
                }
                continue;
            }
            if let Some(prop) = node.properties.get(&k) {
                self.with_key(&k, |p| p.prune(v, Some(prop), prop.embedded_resource));
            } else if node.additional_properties.is_some() {
                let ap = node.additional_schema();
                if preserve && ap.is_none() {
                    continue;
                }
                self.with_key(&k, |p| {
                    p.prune(v, ap, ap.is_some_and(|n| n.embedded_resource))
                });
            } else if !preserve {
                self.record(&k);
                m.remove(&k);
            }
        }
    }

    fn prune_object_meta(&mut self, meta: &mut Value) {
        if let Value::Object(m) = meta {
            let unknown: Vec<String> = m
                .keys()
                .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
                .cloned()
                .collect();
            for k in unknown {
                self.record(&k);
                m.remove(&k);
            }
        }
    }

    fn skip_prune(&mut self, x: &mut Value, node: &Node, embedded: bool) {
        match x {
            Value::Object(m) => self.prune_map(m, node, embedded, true),
            Value::Array(a) => {
                if let Some(items) = node.items.as_deref() {
                    for (i, v) in a.iter_mut().enumerate() {
                        // Items of a preserved array are skipped too (skipPrune).
                        self.with_index(i, |p| p.skip_prune(v, items, items.embedded_resource));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Prunes `obj` (a resource's root when `root`) against `node`, returning the
/// pruned paths sorted (`spec.foo`, `spec.items[0].bar`). With
/// `coerce_root_meta`, unknown fields of the root `metadata` go too.
pub(crate) fn prune(
    obj: &mut Value,
    node: &Node,
    root: bool,
    coerce_root_meta: bool,
) -> Vec<String> {
    let mut p = Pruner {
        path: Vec::new(),
        pruned: Vec::new(),
        coerce_root_meta,
    };
    let embedded = root || node.embedded_resource;
    p.prune(obj, Some(node), embedded);
    p.pruned.sort();
    p.pruned
}
