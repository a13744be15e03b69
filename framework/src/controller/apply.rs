//! Write helpers for reconcilers: create-or-update (controller-runtime's
//! `controllerutil.CreateOrUpdate`), server-side apply of whole objects, and
//! status writes through the `/status` subresource.
//!
//! [`create_or_update`] reads the object, lets a closure mutate it (or a
//! default when it does not exist), and writes only if the mutation changed
//! something: a create, a conditional replace (the `resourceVersion` read is
//! sent back, so a concurrent write answers 409 Conflict), or nothing. It
//! does not retry conflicts; the reconcile that called it is retried.
//!
//! [`apply`] and [`apply_status`] send server-side apply patches
//! (`application/apply-patch+yaml`) with a field manager; `force` takes over
//! fields other managers own. [`patch_status`] sends a JSON merge patch of
//! `{"status": ...}` to `/status`.

use std::fmt;

use kube_core::params::{Patch, PatchParams, PostParams};
use kube_core::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use super::Error;
use crate::cache::ObjectKey;
use crate::Api;

/// What [`create_or_update`] did; the names complete the sentence
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

/// Creates or updates object `name`: `mutate` receives the stored object,
/// or `K::default()` named `name` in the `Api`'s namespace when there is
/// none, and brings it to the desired state. Returns what was done and the
/// object as the server (or, when unchanged, the read) left it.
///
/// Equality is judged on the JSON of the object before and after `mutate`.
/// `mutate` must not change the name or namespace ([`Error::MutatedKey`]).
/// Changes to `status` are dropped by the server for types with a status
/// subresource; write status with [`patch_status`] or [`apply_status`].
///
/// ```no_run
/// # use kubeforge::controller::apply::{create_or_update, OperationResult};
/// # use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
/// # async fn demo(api: kubeforge::Api<ConfigMap>) -> Result<(), kubeforge::controller::Error> {
/// let (result, cm) = create_or_update(&api, "settings", |cm: &mut ConfigMap| {
///     cm.data.get_or_insert_with(Default::default).insert("mode".into(), "fast".into());
/// })
/// .await?;
/// if result != OperationResult::Unchanged {
///     tracing::info!(%result, "settings written");
/// }
/// # Ok(()) }
/// ```
pub async fn create_or_update<K, F>(
    api: &Api<K>,
    name: &str,
    mutate: F,
) -> Result<(OperationResult, K), Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Default,
    F: FnOnce(&mut K),
{
    create_or_update_with(api, name, K::default, mutate).await
}

/// [`create_or_update`] with `init` building the object to mutate when none
/// is stored (for types without `Default`, such as `DynamicObject`); the
/// name and the `Api`'s namespace are set on it before `mutate` runs.
pub async fn create_or_update_with<K, I, F>(
    api: &Api<K>,
    name: &str,
    init: I,
    mutate: F,
) -> Result<(OperationResult, K), Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize,
    I: FnOnce() -> K,
    F: FnOnce(&mut K),
{
    let describe = || qualified(api, name);
    let existing = api
        .get_opt(name)
        .await
        .map_err(|e| Error::api(format!("get {}", describe()), e))?;

    let Some(mut obj) = existing else {
        let mut obj = init();
        obj.meta_mut().name = Some(name.to_owned());
        if let Some(ns) = api.namespace() {
            obj.meta_mut().namespace = Some(ns.to_owned());
        }
        mutate_keeping_key(&mut obj, mutate)?;
        let created = api
            .create(&PostParams::default(), &obj)
            .await
            .map_err(|e| Error::api(format!("create {}", describe()), e))?;
        return Ok((OperationResult::Created, created));
    };

    let before = to_json(&obj, describe)?;
    mutate_keeping_key(&mut obj, mutate)?;
    if to_json(&obj, describe)? == before {
        return Ok((OperationResult::Unchanged, obj));
    }
    let updated = api
        .replace(name, &PostParams::default(), &obj)
        .await
        .map_err(|e| Error::api(format!("update {}", describe()), e))?;
    Ok((OperationResult::Updated, updated))
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

/// Server-side applies `obj` as object `name`, owned by `field_manager`;
/// `force` takes fields over from other managers instead of failing with
/// 409 Conflict. Creates the object when it does not exist. `apiVersion` and
/// `kind` are filled from the type when the serialized object lacks them,
/// `metadata.name` is set to `name`, and `managedFields` is dropped. A
/// `resourceVersion` left in `obj` acts as a precondition.
///
/// Send only the fields this manager owns: every field in the body is
/// claimed, and fields it claimed before and omits now are removed.
pub async fn apply<K>(
    api: &Api<K>,
    name: &str,
    obj: &K,
    field_manager: &str,
    force: bool,
) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize,
    K::DynamicType: Default,
{
    apply_with(
        api,
        name,
        obj,
        &K::DynamicType::default(),
        field_manager,
        force,
    )
    .await
}

/// [`apply`] for types described at run time (`DynamicObject` with its
/// `ApiResource`).
pub async fn apply_with<K>(
    api: &Api<K>,
    name: &str,
    obj: &K,
    dt: &K::DynamicType,
    field_manager: &str,
    force: bool,
) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize,
{
    let describe = || format!("{} {}", K::kind(dt), qualified(api, name));
    let body = apply_body(
        to_json(obj, describe)?,
        &K::api_version(dt),
        &K::kind(dt),
        name,
        describe,
    )?;
    api.patch(
        name,
        &apply_params(field_manager, force),
        &Patch::Apply(body),
    )
    .await
    .map_err(|e| Error::api(format!("apply {}", describe()), e))
}

/// Merge-patches the `status` subresource of `name` with `{"status": status}`.
/// Lists inside (such as `conditions`) are replaced whole, as JSON merge
/// patch does.
pub async fn patch_status<K, S>(api: &Api<K>, name: &str, status: &S) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned,
    S: Serialize,
{
    let body = serde_json::json!({ "status": to_json(status, || format!("status of {}", qualified(api, name)))? });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .map_err(|e| Error::api(format!("patch status of {}", qualified(api, name)), e))
}

/// Server-side applies `status` to the `status` subresource of `name`,
/// owned by `field_manager` (a status manager usually differs from the one
/// applying the spec).
pub async fn apply_status<K, S>(
    api: &Api<K>,
    name: &str,
    status: &S,
    field_manager: &str,
    force: bool,
) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned,
    K::DynamicType: Default,
    S: Serialize,
{
    apply_status_with(
        api,
        name,
        status,
        &K::DynamicType::default(),
        field_manager,
        force,
    )
    .await
}

/// [`apply_status`] for types described at run time.
pub async fn apply_status_with<K, S>(
    api: &Api<K>,
    name: &str,
    status: &S,
    dt: &K::DynamicType,
    field_manager: &str,
    force: bool,
) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned,
    S: Serialize,
{
    let describe = || format!("status of {} {}", K::kind(dt), qualified(api, name));
    let body = serde_json::json!({ "status": to_json(status, describe)? });
    let body = apply_body(body, &K::api_version(dt), &K::kind(dt), name, describe)?;
    api.patch_status(
        name,
        &apply_params(field_manager, force),
        &Patch::Apply(body),
    )
    .await
    .map_err(|e| Error::api(format!("apply {}", describe()), e))
}

fn qualified<K: Resource>(api: &Api<K>, name: &str) -> String {
    match api.namespace() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
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
