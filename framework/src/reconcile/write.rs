//! What the write helpers share, however they send: [`OperationResult`],
//! the server-side apply body and params, and the create-or-update
//! mutation guard. The writes themselves are
//! [`CachedClient`](super::CachedClient) methods (recorded for
//! read-your-own-writes) and, over a plain `Api`, the functions of
//! [`uncached`](super::uncached).

use std::fmt;

use kube_core::params::PatchParams;
use kube_core::Resource;
use serde::Serialize;
use serde_json::{Map, Value};

use super::error::Error;
use crate::cache::ObjectKey;

/// What a create-or-update did the names complete the sentence
/// "Deployment ns/web has been ..." (controller-runtime's `OperationResult`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperationResult {
    /// Nothing changed; no write was sent.
    Unchanged,
    /// The object did not exist and was created.
    Created,
    /// The object existed and was replaced.
    Updated,
}

impl OperationResult {
    /// `unchanged`, `created` or `updated`.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationResult::Unchanged => "unchanged",
            OperationResult::Created => "created",
            OperationResult::Updated => "updated",
        }
    }
}

impl fmt::Display for OperationResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

pub(crate) fn to_json<T: Serialize>(
    value: &T,
    what: impl FnOnce() -> String,
) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(|source| Error::Serialize {
        what: what(),
        source,
    })
}

/// Runs `mutate` and refuses a changed name or namespace, as
/// controller-runtime's `mutate` wrapper does.
pub(crate) fn mutate_keeping_key<K: Resource>(
    obj: &mut K,
    mutate: impl FnOnce(&mut K),
) -> Result<(), Error> {
    let before = ObjectKey::of(obj);
    mutate(obj);
    let after = ObjectKey::of(obj);
    if before != after {
        return Err(Error::MutatedKey {
            before: before.to_string(),
            after: after.to_string(),
        });
    }
    Ok(())
}

/// Fills `apiVersion` and `kind` when the serialized object lacks them, and
/// drops what an apply body must not carry.
pub(crate) fn apply_body(
    mut body: Value,
    api_version: &str,
    kind: &str,
    name: &str,
    object: impl Fn() -> String,
) -> Result<Value, Error> {
    let Some(map) = body.as_object_mut() else {
        return Err(Error::MissingTypeMeta { object: object() });
    };
    for (field, value) in [("apiVersion", api_version), ("kind", kind)] {
        let present = map
            .get(field)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
        if !present {
            if value.is_empty() {
                return Err(Error::MissingTypeMeta { object: object() });
            }
            map.insert(field.to_owned(), Value::String(value.to_owned()));
        }
    }
    let metadata = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = metadata.as_object_mut() {
        meta.insert("name".to_owned(), Value::String(name.to_owned()));
        // The API server rejects apply bodies that carry managedFields.
        meta.remove("managedFields");
    }
    Ok(body)
}

pub(crate) fn apply_params(field_manager: &str, force: bool) -> PatchParams {
    let pp = PatchParams::apply(field_manager);
    if force {
        pp.force()
    } else {
        pp
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_object() -> String {
        "x".to_owned()
    }

    #[test]
    fn apply_body_fills_type_meta_name_and_drops_managed_fields() {
        let body = apply_body(
            json!({"metadata": {"managedFields": [{"manager": "m"}], "labels": {"a": "b"}}, "spec": {}}),
            "apps/v1",
            "Deployment",
            "web",
            no_object,
        )
        .unwrap();
        assert_eq!(
            body,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "web", "labels": {"a": "b"}}, "spec": {}})
        );
    }

    #[test]
    fn apply_body_keeps_type_meta_the_object_carries() {
        let body = apply_body(
            json!({"apiVersion": "ex.com/v2", "kind": "Widget"}),
            "",
            "",
            "w",
            no_object,
        )
        .unwrap();
        assert_eq!(body["apiVersion"], "ex.com/v2");
        assert_eq!(body["metadata"]["name"], "w");
    }

    #[test]
    fn apply_body_without_any_type_meta_is_an_error() {
        let err = apply_body(json!({"spec": {}}), "", "", "w", no_object).unwrap_err();
        assert!(matches!(err, Error::MissingTypeMeta { .. }));
        let err = apply_body(json!([1]), "v1", "ConfigMap", "w", no_object).unwrap_err();
        assert!(matches!(err, Error::MissingTypeMeta { .. }));
    }

    #[test]
    fn apply_params_carry_manager_and_force() {
        let pp = apply_params("mgr", true);
        assert_eq!(pp.field_manager.as_deref(), Some("mgr"));
        assert!(pp.force);
        assert!(!apply_params("mgr", false).force);
    }

    #[test]
    fn mutation_of_the_key_is_refused() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("a".into());
        cm.metadata.namespace = Some("ns".into());
        let err = mutate_keeping_key(&mut cm, |c| c.metadata.name = Some("b".into())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the mutate function must not change the object's name or namespace (ns/a became ns/b)"
        );
        mutate_keeping_key(&mut cm, |c| c.data = Some(Default::default())).unwrap();
    }

    #[test]
    fn operation_results_read_like_controller_runtime() {
        assert_eq!(OperationResult::Unchanged.to_string(), "unchanged");
        assert_eq!(OperationResult::Created.as_str(), "created");
        assert_eq!(OperationResult::Updated.as_str(), "updated");
    }
}
