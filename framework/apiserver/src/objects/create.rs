//! Create (POST): server-set metadata, `generateName` with retries,
//! namespace checks, status dropped where it is a subresource, defaults,
//! validation, dry-run; mutating admission before the object is prepared,
//! validating admission after it is validated.

use std::sync::Arc;

use serde_json::{json, Value};

use super::checks::{check_type_meta, namespace_gate, validate};
use super::hooks::after_write;
use super::opts::{store_error, write_options, WriteOpts, Written};
use crate::admission::attributes::{Admission, Attributes, NoAdmission, Operation};
use crate::machinery::status::{ApiError, Cause};
use crate::registry::conversion::{webhook_conversion, with_api_version};
use crate::registry::state::Shared;
use crate::registry::{ResKey, ResourceDef};
use crate::storage::{StoreError, StoredObject};
use crate::{machinery::util, objects::engines};

/// Creates an object posted to a collection in namespace `url_ns`, with
/// no admission (the server's own writes).
pub(crate) fn create(
    shared: &Shared,
    def: &ResourceDef,
    url_ns: Option<&str>,
    obj: Value,
    opts: &WriteOpts,
) -> Result<Written, ApiError> {
    create_admitted(shared, def, url_ns, obj, opts, &NoAdmission)
}

/// Creates an object posted to a collection in namespace `url_ns`,
/// through `admission`: checks and places it, mutating admission, the
/// server-set metadata, defaults and validation, validating admission,
/// then the store.
pub(crate) fn create_admitted(
    shared: &Shared,
    def: &ResourceDef,
    url_ns: Option<&str>,
    mut obj: Value,
    opts: &WriteOpts,
    admission: &dyn Admission,
) -> Result<Written, ApiError> {
    check_type_meta(def, &mut obj, &opts.version)?;
    // A kind converted by a webhook keeps the request's version until it
    // is stored (the others have one shape under every version).
    let storage_api_version = def.api_version(&def.storage_version);
    if webhook_conversion(def).is_some() {
        obj = with_api_version(obj, &def.api_version(&opts.version));
    }
    refuse_while_crd_terminating(shared, def)?;
    let now = util::now();
    place(def, url_ns, &mut obj, opts)?;
    // The NamespaceLifecycle admission plugin runs before validation.
    if let Some(ns) = url_ns.filter(|_| def.namespaced) {
        namespace_gate(shared, def, ns)?;
    }
    let options = write_options(Operation::Create, opts);
    let namespace = util::meta_str(&obj, "namespace").unwrap_or("").to_owned();
    let sent_name = util::meta_str(&obj, "name").unwrap_or("").to_owned();
    let attrs = Attributes {
        def,
        operation: Operation::Create,
        subresource: None,
        version: &opts.version,
        namespace: &namespace,
        name: &sent_name,
        dry_run: opts.dry_run,
        options: &options,
        sub_kind: None,
    };
    def.default_fields(&mut obj);
    admission.mutate(&attrs, Some(&mut obj), None)?;
    let naming = server_metadata(def, &mut obj, &now)?;
    if def.status {
        if let Some(map) = obj.as_object_mut() {
            map.remove("status");
        }
    }
    def.prepare_for_create(&mut obj, &shared.next_cluster_ip);
    crate::admission::tolerations::admit(shared, def, &mut obj);
    let warnings = validate(def, &mut obj, None, opts)?;
    if !opts.apply {
        engines::track_managed_fields(def, None, &mut obj, &opts.manager, opts.sub.name(), &now);
    }
    let name = util::meta_str(&obj, "name").unwrap_or("").to_owned();
    let attrs = Attributes {
        name: &name,
        ..attrs
    };
    admission.validate(&attrs, Some(&obj), None)?;
    let obj = admission.convert(def, obj, &storage_api_version)?;
    let obj = def.to_storage(obj);
    if opts.dry_run {
        return Ok(Written {
            obj: Arc::new(StoredObject::encode(obj, 0)),
            warnings,
        });
    }
    store(shared, def, obj, &naming, warnings)
}

/// A custom resource is not created while its CRD is being deleted.
fn refuse_while_crd_terminating(shared: &Shared, def: &ResourceDef) -> Result<(), ApiError> {
    let Some(custom) = def.custom() else {
        return Ok(());
    };
    let crd = ResKey::new("apiextensions.k8s.io", "customresourcedefinitions");
    let terminating = shared
        .storage
        .lock()
        .get(&crd, &(String::new(), custom.crd_name.clone()))
        .is_some_and(|c| c.deleting());
    if terminating {
        return Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "create not allowed while custom resource definition is terminating",
        ));
    }
    Ok(())
}

/// Refuses a set resourceVersion and places the object in the request's
/// namespace (a cluster-scoped object has none).
fn place(
    def: &ResourceDef,
    url_ns: Option<&str>,
    obj: &mut Value,
    opts: &WriteOpts,
) -> Result<(), ApiError> {
    let meta =
        util::meta_mut(obj).ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
    // etcd3's store refuses a version its versioner reads as a number
    // above zero (`strconv.ParseUint`: digits only); "0", "abc" or "-1"
    // are overwritten. A dry run never reaches it.
    let numeric_rv = meta
        .get("resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u64>().ok());
    if numeric_rv.is_some_and(|rv| rv > 0) && !opts.dry_run {
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
    Ok(())
}

/// How a created object got its name.
struct Naming {
    /// Its `generateName`, if it has one.
    generate: Option<String>,
    /// Whether the request named it.
    explicit: bool,
}

/// Sets the metadata the server owns: the name (generated when only
/// `generateName` is given), uid, creation time and generation, dropping
/// what a client may not set.
fn server_metadata(def: &ResourceDef, obj: &mut Value, now: &str) -> Result<Naming, ApiError> {
    let meta =
        util::meta_mut(obj).ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
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
    Ok(Naming { generate, explicit })
}

/// Stores the object, retrying a `generateName` clash with a new suffix
/// (store.go), then runs the write hooks.
fn store(
    shared: &Shared,
    def: &ResourceDef,
    mut obj: Value,
    naming: &Naming,
    warnings: Vec<String>,
) -> Result<Written, ApiError> {
    let ns = util::meta_str(&obj, "namespace").unwrap_or("").to_owned();
    let res = def.key();
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
            Err(StoreError::AlreadyExists) if !naming.explicit && attempts < 8 => {
                if let (Some(prefix), Some(meta)) = (&naming.generate, util::meta_mut(&mut obj)) {
                    meta.insert("name".into(), json!(util::generate_name(prefix)));
                }
            }
            Err(e) => return Err(store_error(def, &name, e)),
        }
    }
}
