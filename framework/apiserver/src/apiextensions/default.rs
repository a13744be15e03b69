//! Defaulting (apiextensions-apiserver pkg/apiserver/schema/defaulting):
//! first `null`s of non-nullable fields without a default are dropped
//! (`PruneNonNullableNullsWithoutDefaults`), then defaults are applied top
//! down, so a newly defaulted object gets its own nested defaults (`Default`).

use serde_json::Value;

use super::node::Node;

fn is_non_nullable_null(v: &Value, s: Option<&Node>) -> bool {
    v.is_null() && s.is_some_and(|s| !s.nullable)
}

/// `PruneNonNullableNullsWithoutDefaults`.
pub(crate) fn prune_non_nullable_nulls(x: &mut Value, s: &Node) {
    match x {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let sub = s.properties.get(&k).or_else(|| s.additional_schema());
                let Some(sub) = sub else { continue };
                let drop = m.get(&k).is_some_and(|v| v.is_null())
                    && sub.default.is_none()
                    && !sub.nullable;
                if drop {
                    m.remove(&k);
                } else if let Some(v) = m.get_mut(&k) {
                    prune_non_nullable_nulls(v, sub);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.items.as_deref() {
                for v in a.iter_mut() {
                    prune_non_nullable_nulls(v, items);
                }
            }
        }
        _ => {}
    }
}

/// `Default`: applies the defaults of `s` to `x`.
pub(crate) fn apply_defaults(x: &mut Value, s: &Node) {
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.default else { continue };
                let missing = match m.get(k) {
                    None => true,
                    Some(v) => is_non_nullable_null(v, Some(prop)),
                };
                if missing {
                    m.insert(k.clone(), d.clone());
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    apply_defaults(v, prop);
                } else if let Some(ap) = s.additional_schema() {
                    if is_non_nullable_null(v, Some(ap)) {
                        if let Some(d) = &ap.default {
                            *v = d.clone();
                        }
                    }
                    apply_defaults(v, ap);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.items.as_deref() {
                for v in a.iter_mut() {
                    if is_non_nullable_null(v, Some(items)) {
                        if let Some(d) = &items.default {
                            *v = d.clone();
                        }
                    }
                    apply_defaults(v, items);
                }
            }
        }
        _ => {}
    }
}
