//! The workload controllers' view of the server: reads straight from the
//! store (always current, so no expectations bookkeeping is needed) and
//! writes through the request write path (`objects`), as the named
//! controller's field manager. Reads of workload kinds decode into
//! k8s-openapi types; pods stay JSON (they are many).

use std::sync::Arc;

use serde_json::{json, Value};

use crate::controllers::config::{NodeControls, Workloads};
use crate::controllers::write::{record_event, Involved, Note};
use crate::machinery::status::ApiError;
use crate::machinery::util;
use crate::machinery::util::Pointer;
use crate::objects::{self, DeleteOpts, Deleted, Precondition, Propagation, Sub, WriteOpts};
use crate::registry::state::Shared;
use crate::registry::{ResKey, ResourceDef};
use crate::storage::{Filter, ObjKey, StoredObject};

/// A resource the controllers touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kind {
    pub group: &'static str,
    pub plural: &'static str,
    pub api_version: &'static str,
    pub kind: &'static str,
}

pub(crate) const PODS: Kind = Kind {
    group: "",
    plural: "pods",
    api_version: "v1",
    kind: "Pod",
};
pub(crate) const NODES: Kind = Kind {
    group: "",
    plural: "nodes",
    api_version: "v1",
    kind: "Node",
};
pub(crate) const LEASES: Kind = Kind {
    group: "coordination.k8s.io",
    plural: "leases",
    api_version: "coordination.k8s.io/v1",
    kind: "Lease",
};
pub(crate) const DEPLOYMENTS: Kind = Kind {
    group: "apps",
    plural: "deployments",
    api_version: "apps/v1",
    kind: "Deployment",
};
pub(crate) const REPLICASETS: Kind = Kind {
    group: "apps",
    plural: "replicasets",
    api_version: "apps/v1",
    kind: "ReplicaSet",
};
pub(crate) const STATEFULSETS: Kind = Kind {
    group: "apps",
    plural: "statefulsets",
    api_version: "apps/v1",
    kind: "StatefulSet",
};
pub(crate) const DAEMONSETS: Kind = Kind {
    group: "apps",
    plural: "daemonsets",
    api_version: "apps/v1",
    kind: "DaemonSet",
};
pub(crate) const REVISIONS: Kind = Kind {
    group: "apps",
    plural: "controllerrevisions",
    api_version: "apps/v1",
    kind: "ControllerRevision",
};
pub(crate) const JOBS: Kind = Kind {
    group: "batch",
    plural: "jobs",
    api_version: "batch/v1",
    kind: "Job",
};
pub(crate) const CRONJOBS: Kind = Kind {
    group: "batch",
    plural: "cronjobs",
    api_version: "batch/v1",
    kind: "CronJob",
};
pub(crate) const PDBS: Kind = Kind {
    group: "policy",
    plural: "poddisruptionbudgets",
    api_version: "policy/v1",
    kind: "PodDisruptionBudget",
};

pub(crate) const SERVICES: Kind = Kind {
    group: "",
    plural: "services",
    api_version: "v1",
    kind: "Service",
};
pub(crate) const ENDPOINTSLICES: Kind = Kind {
    group: "discovery.k8s.io",
    plural: "endpointslices",
    api_version: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
};

impl Kind {
    pub fn res(&self) -> ResKey {
        ResKey::new(self.group, self.plural)
    }
}

/// What every workload controller holds.
pub(crate) struct Api {
    pub shared: Arc<Shared>,
    pub cfg: Arc<Workloads>,
    /// The simulated nodes' fault switches.
    pub controls: Arc<NodeControls>,
}

/// `(namespace, name)` of an object.
pub(crate) fn key_of(obj: &Value) -> ObjKey {
    (
        util::meta_str(obj, "namespace").unwrap_or("").to_owned(),
        util::meta_str(obj, "name").unwrap_or("").to_owned(),
    )
}

/// [`key_of`] from a stored object's summary, without parsing it.
pub(crate) fn stored_key(obj: &StoredObject) -> ObjKey {
    (obj.namespace().to_owned(), obj.name().to_owned())
}

impl Api {
    pub fn def(&self, kind: Kind) -> Result<Arc<ResourceDef>, ApiError> {
        self.shared
            .registry()
            .get(kind.group, "v1", kind.plural)
            .ok_or_else(|| ApiError::internal(format!("{} are not served", kind.plural)))
    }

    /// One object.
    pub fn get(&self, kind: Kind, key: &ObjKey) -> Option<Arc<StoredObject>> {
        self.shared.storage.lock().get(&kind.res(), key)
    }

    /// Every object of a kind, in one namespace or all.
    pub fn list(&self, kind: Kind, ns: Option<&str>) -> Vec<Arc<StoredObject>> {
        let filter = Filter {
            namespace: ns.map(str::to_owned),
            ..Filter::default()
        };
        self.shared
            .storage
            .lock()
            .list(&kind.res(), &filter, None, None, None)
            .map(|p| p.items)
            .unwrap_or_default()
    }

    /// The objects of a kind whose ownerReferences name `owner_uid`.
    pub fn owned(&self, kind: Kind, owner_uid: &str) -> Vec<Arc<StoredObject>> {
        let res = kind.res();
        let store = self.shared.storage.lock();
        store
            .dependents(owner_uid)
            .into_iter()
            .filter(|(r, _)| *r == res)
            .filter_map(|(r, k)| store.get(&r, &k))
            .collect()
    }

    /// Creates an object in its namespace.
    pub fn create(
        &self,
        kind: Kind,
        manager: &str,
        obj: Value,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let def = self.def(kind)?;
        let ns = util::meta_str(&obj, "namespace").map(str::to_owned);
        let opts = WriteOpts::internal(&def, manager);
        objects::create(&self.shared, &def, ns.as_deref(), obj, &opts).map(|w| w.obj)
    }

    fn write(
        &self,
        kind: Kind,
        key: &ObjKey,
        manager: &str,
        sub: Sub,
        mut mutate: impl FnMut(&mut Value) -> bool,
    ) -> Result<Option<Arc<StoredObject>>, ApiError> {
        let def = self.def(kind)?;
        let mut opts = WriteOpts::internal(&def, manager);
        opts.sub = sub;
        let mut changed = true;
        let written = objects::update(&self.shared, &def, key, &opts, |cur| {
            let mut next = cur.clone();
            changed = mutate(&mut next);
            Ok((next, Precondition::None))
        })?;
        Ok(changed.then_some(written.obj))
    }

    /// Updates an object through its main endpoint; `mutate` edits the
    /// current state and says whether it changed anything.
    pub fn update(
        &self,
        kind: Kind,
        key: &ObjKey,
        manager: &str,
        mutate: impl FnMut(&mut Value) -> bool,
    ) -> Result<Option<Arc<StoredObject>>, ApiError> {
        self.write(kind, key, manager, Sub::Main, mutate)
    }

    /// Updates an object's status subresource.
    pub fn update_status(
        &self,
        kind: Kind,
        key: &ObjKey,
        manager: &str,
        mutate: impl FnMut(&mut Value) -> bool,
    ) -> Result<Option<Arc<StoredObject>>, ApiError> {
        self.write(kind, key, manager, Sub::Status, mutate)
    }

    /// Replaces an object's whole `status` when it differs.
    pub fn set_status(
        &self,
        kind: Kind,
        key: &ObjKey,
        manager: &str,
        status: &Value,
    ) -> Result<(), ApiError> {
        self.update_status(kind, key, manager, |obj| {
            if obj.get("status") == Some(status) {
                return false;
            }
            obj["status"] = status.clone();
            true
        })
        .map(|_| ())
    }

    /// Deletes an object (graceful for pods); `uid` guards against
    /// deleting a successor of the same name.
    pub fn delete(
        &self,
        kind: Kind,
        key: &ObjKey,
        uid: Option<&str>,
        grace: Option<i64>,
        propagation: Option<Propagation>,
    ) -> Result<Deleted, ApiError> {
        let def = self.def(kind)?;
        let opts = DeleteOpts {
            propagation,
            uid: uid.map(str::to_owned),
            grace_period: grace,
            ..DeleteOpts::default()
        };
        objects::delete(&self.shared, &def, key, &opts)
    }

    /// Records a core/v1 Event about `obj`, as client-go's recorder does
    /// (`source.component` = `component`).
    pub fn event(
        &self,
        obj: &Value,
        kind: Kind,
        ty: &str,
        reason: &str,
        message: &str,
        component: &str,
    ) {
        if !self.cfg.events {
            return;
        }
        let about = Involved {
            obj,
            kind: kind.kind,
            api_version: kind.api_version,
        };
        let note = Note {
            ty,
            reason,
            message,
            component,
        };
        record_event(&self.shared, about, note);
    }
}

/// A controller reference to `owner` (`metav1.NewControllerRef`).
pub(crate) fn controller_ref(owner: &Value, kind: Kind) -> Value {
    json!({
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "name": util::meta_str(owner, "name").unwrap_or(""),
        "uid": util::meta_str(owner, "uid").unwrap_or(""),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The controller reference of `obj`, if any.
pub(crate) fn controller_of(obj: &Value) -> Option<&Value> {
    controller_among(obj.at("/metadata/ownerReferences")?)
}

/// The reference marked `controller` in an `ownerReferences` array.
fn controller_among(refs: &Value) -> Option<&Value> {
    refs.as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

/// [`controller_key`] of a stored object, read from its ownerReferences
/// alone: for a version whose whole tree is not wanted (an update's old
/// state, which storage no longer keeps parsed).
pub(crate) fn stored_controller_key(obj: &StoredObject, kind: Kind) -> Option<ObjKey> {
    let path = ["metadata".to_owned(), "ownerReferences".to_owned()];
    let refs = obj.field(&path)?;
    key_of_controller(controller_among(&refs)?, obj.namespace(), kind)
}

/// The namespace key of `obj`'s controller when it is of `kind`.
pub(crate) fn controller_key(obj: &Value, kind: Kind) -> Option<ObjKey> {
    let namespace = util::meta_str(obj, "namespace").unwrap_or("");
    key_of_controller(controller_of(obj)?, namespace, kind)
}

/// The key of the object the controller reference `r` names, in
/// `namespace`, when it is of `kind`.
fn key_of_controller(r: &Value, namespace: &str, kind: Kind) -> Option<ObjKey> {
    (r.get("kind").and_then(Value::as_str) == Some(kind.kind)).then(|| {
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        (namespace.to_owned(), name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod_owned_by(refs: &Value) -> StoredObject {
        StoredObject::encode(
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "3",
                                "ownerReferences": refs}}),
            3,
        )
    }

    #[test]
    fn a_stored_objects_controller_key_matches_the_parsed_one() {
        let controlled = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1",
                                 "uid": "u", "controller": true}]);
        assert_eq!(
            stored_controller_key(&pod_owned_by(&controlled), REPLICASETS),
            Some(("ns".to_owned(), "web-1".to_owned()))
        );
        let cases = [
            controlled,
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u"}]),
            json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u",
                    "controller": true}]),
            json!([]),
        ];
        for refs in cases {
            let pod = pod_owned_by(&refs);
            for kind in [REPLICASETS, DEPLOYMENTS] {
                assert_eq!(
                    stored_controller_key(&pod, kind),
                    controller_key(&pod.value(), kind),
                    "{refs} as {}",
                    kind.kind
                );
            }
            assert_eq!(stored_key(&pod), key_of(&pod.value()));
        }
    }
}
