//! Object lifecycle semantics, independent of HTTP: create, update (incl.
//! the status and finalize subresources) and delete exactly as
//! kube-apiserver's generic registry store and strategies behave —
//! server-set metadata, generation bumps, status subresource rules,
//! finalizers and `deletionTimestamp`, optimistic concurrency — plus the
//! hooks that run after every successful write (CRD registration, the
//! garbage collector's bookkeeping). Handlers and the in-server controllers
//! both write through here.

use std::sync::Arc;

use serde_json::{json, Value};

use super::admission::{self, FieldValidation};
use super::defaults;
use super::registry::{GenerationPolicy, ResKey, ResourceDef};
use super::server::Shared;
use super::status::{ApiError, Cause, Details};
use super::storage::{ObjKey, StoreError, StoredObject};
use super::util::{self, NameRule};

/// Which endpoint a write came through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sub {
    Main,
    Status,
    Scale,
    Finalize,
}

impl Sub {
    pub fn name(self) -> Option<&'static str> {
        match self {
            Sub::Main => None,
            Sub::Status => Some("status"),
            Sub::Scale => Some("scale"),
            Sub::Finalize => Some("finalize"),
        }
    }
}

/// Options shared by writes.
#[derive(Clone, Debug)]
pub(crate) struct WriteOpts {
    pub dry_run: bool,
    pub manager: String,
    pub sub: Sub,
    pub validation: FieldValidation,
    /// The version the request was made at (`apiVersion` checks).
    pub version: String,
    /// A server-side apply: managed fields were already computed by the
    /// apply, so the write is not recorded again as an `Update`.
    pub apply: bool,
}

impl WriteOpts {
    /// Options for writes the server makes itself.
    pub fn internal(def: &ResourceDef, manager: &str) -> Self {
        Self {
            dry_run: false,
            manager: manager.to_owned(),
            sub: Sub::Main,
            validation: FieldValidation::Ignore,
            version: def.storage_version.clone(),
            apply: false,
        }
    }
}

/// A successful write.
#[derive(Debug)]
pub(crate) struct Written {
    pub obj: Arc<StoredObject>,
    pub warnings: Vec<String>,
}

pub(crate) fn store_error(def: &ResourceDef, name: &str, e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound => ApiError::not_found(&def.plural, &def.group, name),
        StoreError::AlreadyExists => ApiError::already_exists(&def.plural, &def.group, name),
        StoreError::Conflict => ApiError::conflict(&def.plural, &def.group, name),
        StoreError::UidMismatch { expected, actual } => ApiError::conflict_msg(
            &def.plural,
            &def.group,
            name,
            &format!("Precondition failed: UID in precondition: {expected}, UID in object meta: {actual}"),
        ),
        StoreError::Expired { requested, oldest } => ApiError::expired(format!(
            "too old resource version: {requested} ({oldest})"
        )),
        StoreError::TooLarge { requested, current } => too_large(requested, current),
    }
}

/// 504 for a resourceVersion the server has not reached.
pub(crate) fn too_large(requested: u64, current: u64) -> ApiError {
    ApiError::new(
        504,
        "Timeout",
        format!("Too large resource version: {requested}, current: {current}"),
    )
    .with_details(Details {
        causes: vec![Cause {
            reason: "ResourceVersionTooLarge".into(),
            message: "Too large resource version".into(),
            field: String::new(),
        }],
        ..Details::default()
    })
}

fn name_rule(def: &ResourceDef) -> NameRule {
    if def.builtin().is_none() {
        return NameRule::Subdomain;
    }
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "namespaces") => NameRule::Label,
        ("", "services") => NameRule::Dns1035,
        ("rbac.authorization.k8s.io", _) => NameRule::Path,
        _ => NameRule::Subdomain,
    }
}

/// Checks `apiVersion`/`kind` against the endpoint and rewrites
/// `apiVersion` to the storage version.
fn check_type_meta(def: &ResourceDef, obj: &mut Value, version: &str) -> Result<(), ApiError> {
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON or YAML object",
        ));
    };
    let expected = def.api_version(version);
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        return Err(ApiError::bad_request(
            "Object 'Kind' is missing in the request body",
        ));
    }
    if api_version.is_empty() {
        return Err(ApiError::bad_request(
            "Object 'apiVersion' is missing in the request body",
        ));
    }
    let served_versions_ok = def
        .versions
        .iter()
        .any(|v| def.api_version(v) == api_version);
    if api_version != expected && !served_versions_ok {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({expected})"
        )));
    }
    if kind != def.kind {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            def.kind
        )));
    }
    map.insert(
        "apiVersion".into(),
        json!(def.api_version(&def.storage_version)),
    );
    if !map.get("metadata").is_some_and(Value::is_object) {
        if map.get("metadata").is_some_and(|m| !m.is_null()) {
            return Err(ApiError::bad_request("metadata must be an object"));
        }
        map.insert("metadata".into(), json!({}));
    }
    Ok(())
}

/// Decode-validation for built-ins, schema admission for custom resources,
/// CRD checks; also unknown-field handling per `fieldValidation`.
fn validate(
    def: &ResourceDef,
    obj: &mut Value,
    old: Option<&Value>,
    opts: &WriteOpts,
) -> Result<Vec<String>, ApiError> {
    let name = util::meta_str(obj, "name").unwrap_or("").to_owned();
    let mut causes = Vec::new();
    let mut warnings = Vec::new();
    if let Err(msg) = util::validate_name(&name, name_rule(def)) {
        causes.push(Cause::invalid(
            "metadata.name",
            format!("Invalid value: \"{name}\": {msg}"),
        ));
    }
    let mut unknown = Vec::new();
    if let Some(b) = def.builtin() {
        match (b.validate)(obj) {
            Ok(understood) if opts.validation != FieldValidation::Ignore => {
                unknown_fields(obj, &understood, "", &mut unknown);
            }
            Ok(_) => {}
            Err((path, msg)) => {
                if let Some(field) = msg
                    .strip_prefix("missing field `")
                    .and_then(|r| r.split('`').next())
                {
                    let full = if path.is_empty() {
                        field.to_owned()
                    } else {
                        format!("{path}.{field}")
                    };
                    causes.push(Cause::required(full));
                } else {
                    let at = if path.is_empty() {
                        String::new()
                    } else {
                        format!("{path}: ")
                    };
                    return Err(ApiError::bad_request(format!(
                        "{} in version \"{}\" cannot be handled as a {}: {at}{msg}",
                        def.kind, def.storage_version, def.kind
                    )));
                }
            }
        }
        causes.extend(super::validation::validate(def, obj));
        if def.group == "apiextensions.k8s.io" {
            causes.extend(admission::admit_crd(obj, old));
        }
    } else {
        let admitted = admission::admit_custom_resource(def, &opts.version, obj, old);
        causes.extend(admitted.causes);
        unknown = admitted.pruned;
    }
    if !unknown.is_empty() {
        let list: Vec<String> = unknown
            .iter()
            .map(|p| format!("unknown field \"{p}\""))
            .collect();
        match opts.validation {
            FieldValidation::Strict => {
                return Err(ApiError::bad_request(format!(
                    "strict decoding error: {}",
                    list.join(", ")
                )));
            }
            FieldValidation::Warn => warnings.extend(list),
            FieldValidation::Ignore => {}
        }
    }
    if causes.is_empty() {
        Ok(warnings)
    } else {
        Err(ApiError::invalid(&def.kind, &def.group, &name, causes))
    }
}

/// Paths of fields in `sent` that the typed decode dropped (apimachinery's
/// strict-decoding "unknown field" list). Nulls are not fields.
fn unknown_fields(sent: &Value, understood: &Value, path: &str, out: &mut Vec<String>) {
    match (sent, understood) {
        (Value::Object(s), Value::Object(u)) => {
            for (k, v) in s {
                if v.is_null() {
                    continue;
                }
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match u.get(k) {
                    Some(uv) => unknown_fields(v, uv, &p, out),
                    None => out.push(p),
                }
            }
        }
        (Value::Array(s), Value::Array(u)) => {
            for (i, (sv, uv)) in s.iter().zip(u).enumerate() {
                unknown_fields(sv, uv, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn namespace_gate(shared: &Shared, def: &ResourceDef, ns: &str) -> Result<(), ApiError> {
    if !def.namespaced {
        return Ok(());
    }
    let ns_key = super::registry::ResKey::new("", "namespaces");
    let found = shared
        .storage
        .lock()
        .get(&ns_key, &(String::new(), ns.to_owned()));
    match found {
        None => Err(ApiError::not_found("namespaces", "", ns)),
        Some(n) if n.value.pointer("/metadata/deletionTimestamp").is_some() => {
            Err(ApiError::forbidden(format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                super::status::qualified(&def.plural, &def.group),
                util::meta_str(&n.value, "name").unwrap_or("")
            ))
            .with_details(Details {
                name: Some(String::new()),
                group: Some(def.group.clone()),
                kind: Some(def.plural.clone()),
                causes: vec![Cause {
                    reason: "NamespaceTerminating".into(),
                    message: format!("namespace {ns} is being terminated"),
                    field: "metadata.namespace".into(),
                }],
                ..Details::default()
            }))
        }
        Some(_) => Ok(()),
    }
}

/// Creates an object posted to a collection in namespace `url_ns`.
pub(crate) fn create(
    shared: &Shared,
    def: &ResourceDef,
    url_ns: Option<&str>,
    mut obj: Value,
    opts: &WriteOpts,
) -> Result<Written, ApiError> {
    check_type_meta(def, &mut obj, &opts.version)?;
    if let Some(custom) = def.custom() {
        let crd = ResKey::new("apiextensions.k8s.io", "customresourcedefinitions");
        let terminating = shared
            .storage
            .lock()
            .get(&crd, &(String::new(), custom.crd_name.clone()))
            .is_some_and(|c| c.value.pointer("/metadata/deletionTimestamp").is_some());
        if terminating {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                "create not allowed while custom resource definition is terminating",
            ));
        }
    }
    let now = util::now();
    let meta = util::meta_mut(&mut obj)
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
    if meta
        .get("resourceVersion")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
    {
        return Err(ApiError::internal(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    match (def.namespaced, url_ns) {
        (true, Some(ns)) => {
            match meta.get("namespace").and_then(Value::as_str) {
                Some(body_ns) if !body_ns.is_empty() && body_ns != ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ))
                }
                _ => {
                    meta.insert("namespace".into(), json!(ns));
                }
            }
        }
        (true, None) => return Err(ApiError::method_not_allowed()),
        (false, _) => {
            meta.remove("namespace");
        }
    }
    // The NamespaceLifecycle admission plugin runs before validation.
    if let Some(ns) = url_ns.filter(|_| def.namespaced) {
        namespace_gate(shared, def, ns)?;
    }
    let generate = meta
        .get("generateName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let explicit = meta
        .get("name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .is_some();
    if !explicit {
        match &generate {
            Some(prefix) => {
                meta.insert("name".into(), json!(util::generate_name(prefix)));
            }
            None => {
                return Err(ApiError::invalid(
                    &def.kind,
                    &def.group,
                    "",
                    vec![Cause {
                        reason: "FieldValueRequired".into(),
                        message: "Required value: name or generateName is required".into(),
                        field: "metadata.name".into(),
                    }],
                ))
            }
        }
    }
    meta.insert("uid".into(), json!(util::uid()));
    meta.insert("creationTimestamp".into(), json!(now));
    meta.remove("deletionTimestamp");
    meta.remove("deletionGracePeriodSeconds");
    meta.remove("selfLink");
    meta.remove("resourceVersion");
    if def.generation_fields().is_some() {
        meta.insert("generation".into(), json!(1));
    } else {
        meta.remove("generation");
    }
    if def.status {
        if let Some(map) = obj.as_object_mut() {
            map.remove("status");
        }
    }
    defaults::on_create(def, &mut obj, &shared.next_cluster_ip);
    let warnings = validate(def, &mut obj, None, opts)?;
    if !opts.apply {
        admission::track_managed_fields(None, &mut obj, &opts.manager, opts.sub.name(), &now);
    }
    let mut obj = def.to_storage(obj);
    let ns = util::meta_str(&obj, "namespace").unwrap_or("").to_owned();
    if opts.dry_run {
        return Ok(Written {
            obj: Arc::new(StoredObject::encode(obj, 0)),
            warnings,
        });
    }
    let res = def.key();
    // generateName clashes are retried with a new suffix (store.go).
    let mut attempts = 0;
    loop {
        attempts += 1;
        let name = util::meta_str(&obj, "name").unwrap_or("").to_owned();
        let result = shared
            .storage
            .lock()
            .create(&res, (ns.clone(), name.clone()), obj.clone());
        match result {
            Ok(stored) => {
                after_write(shared, def, None, &stored);
                return Ok(Written {
                    obj: stored,
                    warnings,
                });
            }
            Err(StoreError::AlreadyExists) if !explicit && attempts < 8 => {
                if let (Some(prefix), Some(meta)) = (&generate, util::meta_mut(&mut obj)) {
                    meta.insert("name".into(), json!(util::generate_name(prefix)));
                }
            }
            Err(e) => return Err(store_error(def, &name, e)),
        }
    }
}

fn generation_changed(def: &ResourceDef, old: &Value, new: &Value) -> bool {
    match def.generation_fields() {
        None => false,
        Some(GenerationPolicy::Fields(fields)) => fields.iter().any(|f| old.get(*f) != new.get(*f)),
        Some(GenerationPolicy::AllButMetadata) => {
            let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
                return old != new;
            };
            let skip = |k: &str| {
                k == "metadata" || (def.status && k == "status") || k == "apiVersion" || k == "kind"
            };
            let ok: Vec<_> = o.iter().filter(|(k, _)| !skip(k)).collect();
            let nk: Vec<_> = n.iter().filter(|(k, _)| !skip(k)).collect();
            ok != nk
        }
    }
}

/// Builds the object an update stores, from the old object and what the
/// client sent (strategy `PrepareForUpdate` plus `BeforeUpdate`).
fn prepare_update(
    def: &ResourceDef,
    old: &Value,
    mut new: Value,
    opts: &WriteOpts,
) -> Result<(Value, Vec<String>), ApiError> {
    check_type_meta(def, &mut new, &opts.version)?;
    let name = util::meta_str(old, "name").unwrap_or("").to_owned();
    let is_namespace =
        def.builtin().is_some() && def.plural == "namespaces" && def.group.is_empty();
    let mut next = match opts.sub {
        Sub::Status => {
            let mut next = old.clone();
            if let Some(map) = next.as_object_mut() {
                match new.get("status") {
                    Some(s) => map.insert("status".into(), s.clone()),
                    None => map.remove("status"),
                };
            }
            if let (Some(mf), Some(meta)) = (
                new.pointer("/metadata/managedFields").cloned(),
                util::meta_mut(&mut next),
            ) {
                meta.insert("managedFields".into(), mf);
            }
            next
        }
        Sub::Finalize => {
            let mut next = old.clone();
            if let Some(spec) = defaults::ensure_object(&mut next, &["spec"]) {
                match new.pointer("/spec/finalizers") {
                    Some(f) => spec.insert("finalizers".into(), f.clone()),
                    None => spec.remove("finalizers"),
                };
            }
            next
        }
        Sub::Main | Sub::Scale => {
            if def.status {
                if let Some(map) = new.as_object_mut() {
                    match old.get("status") {
                        Some(s) => map.insert("status".into(), s.clone()),
                        None => map.remove("status"),
                    };
                }
            }
            if is_namespace {
                let fins = old.pointer("/spec/finalizers").cloned();
                if let Some(spec) = defaults::ensure_object(&mut new, &["spec"]) {
                    match fins {
                        Some(f) => spec.insert("finalizers".into(), f),
                        None => spec.remove("finalizers"),
                    };
                }
            }
            new
        }
    };
    // System fields come from the stored object.
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Some(uid) = util::meta_str(&next, "uid") {
        if !uid.is_empty() && Some(uid) != old_meta.get("uid").and_then(Value::as_str) {
            return Err(ApiError::invalid(
                &def.kind,
                &def.group,
                &name,
                vec![Cause::invalid(
                    "metadata.uid",
                    format!("Invalid value: \"{uid}\": field is immutable"),
                )],
            ));
        }
    }
    if let Some(meta) = util::meta_mut(&mut next) {
        for f in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "name",
            "namespace",
        ] {
            match old_meta.get(f) {
                Some(v) => meta.insert(f.into(), v.clone()),
                None => meta.remove(f),
            };
        }
        meta.remove("selfLink");
        meta.insert(
            "resourceVersion".into(),
            old_meta
                .get("resourceVersion")
                .cloned()
                .unwrap_or(Value::Null),
        );
    }
    // No new finalizers once deletion has started (ValidateObjectMetaUpdate).
    if old_meta.get("deletionTimestamp").is_some() {
        let before = util::finalizers(old);
        let added: Vec<String> = util::finalizers(&next)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        if !added.is_empty() {
            let quoted: Vec<String> = added.iter().map(|f| format!("\"{f}\"")).collect();
            return Err(ApiError::invalid(
                &def.kind,
                &def.group,
                &name,
                vec![Cause::forbidden(
                    "metadata.finalizers",
                    format!("no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}", quoted.join(", ")),
                )],
            ));
        }
    }
    defaults::on_update(def, &mut next, old);
    if generation_changed(def, old, &next) {
        let g = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if let Some(meta) = util::meta_mut(&mut next) {
            meta.insert("generation".into(), json!(g + 1));
        }
    }
    let warnings = validate(def, &mut next, Some(old), opts)?;
    if !opts.apply {
        admission::track_managed_fields(
            Some(old),
            &mut next,
            &opts.manager,
            opts.sub.name(),
            &util::now(),
        );
    }
    Ok((next, warnings))
}

/// How an update's resourceVersion precondition is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Precondition {
    /// The client named a resourceVersion: 409 if it is stale.
    Rv(u64),
    /// No resourceVersion: last write wins (built-in PUT, patches).
    None,
}

/// Updates an object through the main, status, scale or finalize endpoint.
/// `mutate` builds the client's intended object from the current one (a PUT
/// body ignores it; a patch applies itself to it); conflicts from other
/// writers are retried unless the client gave a resourceVersion.
pub(crate) fn update(
    shared: &Shared,
    def: &ResourceDef,
    key: &ObjKey,
    opts: &WriteOpts,
    mut mutate: impl FnMut(&Value) -> Result<(Value, Precondition), ApiError>,
) -> Result<Written, ApiError> {
    let res = def.key();
    loop {
        let old = shared
            .storage
            .lock()
            .get(&res, key)
            .ok_or_else(|| ApiError::not_found(&def.plural, &def.group, &key.1))?;
        // Kinds stored as another resource are updated in their own shape.
        let view = def.view(&old.value);
        let current = view.as_ref().unwrap_or(&old.value);
        let (intended, pre) = mutate(current)?;
        if let Precondition::Rv(rv) = pre {
            if rv != old.rv {
                return Err(ApiError::conflict(&def.plural, &def.group, &key.1));
            }
        }
        let (next, warnings) = prepare_update(def, current, intended, opts)?;
        if next == *current {
            return Ok(Written { obj: old, warnings });
        }
        let next = def.to_storage(next);
        let finished = next.pointer("/metadata/deletionTimestamp").is_some()
            && util::finalizers(&next).is_empty()
            && !namespace_spec_finalizers(def, &next);
        if opts.dry_run {
            return Ok(Written {
                obj: Arc::new(StoredObject::encode(next, old.rv)),
                warnings,
            });
        }
        let result = if finished {
            // Removing the last finalizer completes the deletion.
            let r = shared.storage.lock().delete(&res, key, Some(old.rv), None);
            r.inspect(|gone| after_delete(shared, def, gone))
        } else {
            let r = shared.storage.lock().update(&res, key, next, Some(old.rv));
            r.inspect(|stored| after_write(shared, def, Some(&old), stored))
        };
        match result {
            Ok(obj) => return Ok(Written { obj, warnings }),
            Err(StoreError::Conflict) if pre == Precondition::None => continue,
            Err(e) => return Err(store_error(def, &key.1, e)),
        }
    }
}

fn namespace_spec_finalizers(def: &ResourceDef, obj: &Value) -> bool {
    def.builtin().is_some()
        && def.group.is_empty()
        && def.plural == "namespaces"
        && obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
}

/// `propagationPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Propagation {
    Orphan,
    Background,
    Foreground,
}

/// Delete options (`DeleteOptions` body or query).
#[derive(Clone, Debug, Default)]
pub(crate) struct DeleteOpts {
    pub propagation: Option<Propagation>,
    pub uid: Option<String>,
    pub rv: Option<u64>,
    pub dry_run: bool,
}

/// What a delete did.
#[derive(Debug)]
pub(crate) enum Deleted {
    /// Removed; the last state.
    Gone(Arc<StoredObject>),
    /// Marked for deletion, waiting for finalizers.
    Pending(Arc<StoredObject>),
}

/// Deletes an object (`store.go` `Delete`): with finalizers (or a
/// propagation policy that adds one) it is only marked.
pub(crate) fn delete(
    shared: &Shared,
    def: &ResourceDef,
    key: &ObjKey,
    opts: &DeleteOpts,
) -> Result<Deleted, ApiError> {
    let res = def.key();
    loop {
        let old = shared
            .storage
            .lock()
            .get(&res, key)
            .ok_or_else(|| ApiError::not_found(&def.plural, &def.group, &key.1))?;
        if let Some(uid) = &opts.uid {
            if uid != old.uid() {
                return Err(ApiError::conflict_msg(
                    &def.plural,
                    &def.group,
                    &key.1,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        old.uid()
                    ),
                ));
            }
        }
        if let Some(rv) = opts.rv {
            if rv != old.rv {
                return Err(ApiError::conflict_msg(
                    &def.plural,
                    &def.group,
                    &key.1,
                    &format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}", old.rv),
                ));
            }
        }
        let mut fins = util::finalizers(&old.value);
        let deleting = old.value.pointer("/metadata/deletionTimestamp").is_some();
        match opts.propagation {
            Some(Propagation::Orphan) => {
                fins.retain(|f| f != "foregroundDeletion");
                if !fins.iter().any(|f| f == "orphan") {
                    fins.push("orphan".into());
                }
            }
            Some(Propagation::Foreground) => {
                fins.retain(|f| f != "orphan");
                if !fins.iter().any(|f| f == "foregroundDeletion") {
                    fins.push("foregroundDeletion".into());
                }
            }
            Some(Propagation::Background) if deleting => {
                fins.retain(|f| f != "orphan" && f != "foregroundDeletion");
            }
            _ => {}
        }
        let ns_pending = namespace_spec_finalizers(def, &old.value);
        if deleting || !fins.is_empty() || ns_pending {
            let mut next = (*old.value).clone();
            let before = util::finalizers(&old.value);
            if let Some(meta) = util::meta_mut(&mut next) {
                if !deleting {
                    meta.insert("deletionTimestamp".into(), json!(util::now()));
                    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
                    if let Some(g) = meta.get("generation").and_then(Value::as_i64) {
                        meta.insert("generation".into(), json!(g + 1));
                    }
                }
                if fins.is_empty() {
                    meta.remove("finalizers");
                } else {
                    meta.insert("finalizers".into(), json!(fins));
                }
            }
            if ns_pending {
                if let Some(status) = defaults::ensure_object(&mut next, &["status"]) {
                    status.insert("phase".into(), json!("Terminating"));
                }
            }
            if deleting && before == fins {
                return Ok(Deleted::Pending(old));
            }
            if opts.dry_run {
                return Ok(Deleted::Pending(Arc::new(StoredObject::encode(
                    next, old.rv,
                ))));
            }
            if deleting && fins.is_empty() && !ns_pending {
                let r = shared.storage.lock().delete(&res, key, Some(old.rv), None);
                match r {
                    Ok(gone) => {
                        after_delete(shared, def, &gone);
                        return Ok(Deleted::Gone(gone));
                    }
                    Err(StoreError::Conflict) => continue,
                    Err(e) => return Err(store_error(def, &key.1, e)),
                }
            }
            let r = shared.storage.lock().update(&res, key, next, Some(old.rv));
            match r {
                Ok(stored) => {
                    after_write(shared, def, Some(&old), &stored);
                    return Ok(Deleted::Pending(stored));
                }
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(store_error(def, &key.1, e)),
            }
        }
        if opts.dry_run {
            return Ok(Deleted::Gone(old));
        }
        let r = shared.storage.lock().delete(&res, key, Some(old.rv), None);
        match r {
            Ok(gone) => {
                after_delete(shared, def, &gone);
                return Ok(Deleted::Gone(gone));
            }
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(store_error(def, &key.1, e)),
        }
    }
}

fn is_crd(def: &ResourceDef) -> bool {
    def.builtin().is_some()
        && def.group == "apiextensions.k8s.io"
        && def.plural == "customresourcedefinitions"
}

/// Runs after every stored create or update.
pub(crate) fn after_write(
    shared: &Shared,
    def: &ResourceDef,
    old: Option<&StoredObject>,
    new: &StoredObject,
) {
    if is_crd(def) {
        super::crds::sync(shared, new);
    }
    if old.is_none()
        && def.builtin().is_some()
        && def.group.is_empty()
        && def.plural == "namespaces"
    {
        super::gc::ensure_default_service_account(shared, new.name());
    }
    if new.value.pointer("/metadata/deletionTimestamp").is_some() {
        shared.gc.mark_deleting(def, new);
    }
    shared.controllers.notify_one();
}

/// Runs after every object removal.
pub(crate) fn after_delete(shared: &Shared, def: &ResourceDef, gone: &StoredObject) {
    if is_crd(def) {
        super::crds::removed(shared, gone);
    }
    shared.gc.owner_gone(gone.uid());
    shared.controllers.notify_one();
}
