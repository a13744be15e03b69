//! Owner references resolved as kube-controller-manager's garbage
//! collector resolves them: an owner is present for a dependent only in the
//! dependent's namespace (or cluster-wide), with the reference's group,
//! kind, name and uid. The collector and the check of references a write
//! adds both ask here.

use serde_json::Value;

use crate::registry::state::Shared;

/// The `uid` of an owner reference.
pub(crate) fn ref_uid(r: &Value) -> &str {
    r.get("uid").and_then(Value::as_str).unwrap_or("")
}

/// What the garbage collector can say of one owner reference of a
/// dependent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The owner exists where the dependent may have it.
    Present,
    /// No such owner: the reference is dangling.
    Absent,
    /// The reference cannot be judged, so the dependent is never collected:
    /// a cluster-scoped dependent names a namespaced kind (kube's
    /// `namespacedOwnerOfClusterScopedObjectErr`).
    Unresolvable,
}

/// One owner reference looked up for a dependent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OwnerLookup {
    pub verdict: Verdict,
    /// The reference's uid names a namespaced object in another namespace
    /// than the dependent's: kube records `OwnerRefInvalidNamespace` on
    /// the dependent.
    pub misplaced: bool,
}

/// Looks up the owner that reference `r` names for a dependent in
/// `namespace` (`""` when cluster-scoped). As kube-controller-manager's
/// garbage collector does: the reference's kind is resolved first (a
/// cluster-scoped dependent may only have cluster-scoped owners), then the
/// owner is looked for in the dependent's namespace (or cluster-wide) by
/// name and compared by uid, so the uid's object elsewhere (in another
/// namespace, of another kind or name) is no owner.
pub(crate) fn lookup(shared: &Shared, namespace: &str, r: &Value) -> OwnerLookup {
    let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let (group, version) = field("apiVersion")
        .rsplit_once('/')
        .unwrap_or(("", field("apiVersion")));
    let found = shared.storage.lock().by_uid(ref_uid(r));
    let misplaced = found
        .as_ref()
        .is_some_and(|(_, (owner_ns, _))| !owner_ns.is_empty() && owner_ns != namespace);
    // A kind not served (any more) names no owner. kube's collector retries
    // such a reference until discovery knows the kind; here the kind of a
    // deleted CRD would keep its custom resources' dependents forever.
    let Some(kind) = shared.registry().by_kind(group, version, field("kind")) else {
        return OwnerLookup {
            verdict: Verdict::Absent,
            misplaced,
        };
    };
    if namespace.is_empty() && kind.namespaced {
        return OwnerLookup {
            verdict: Verdict::Unresolvable,
            misplaced,
        };
    }
    let present = found.is_some_and(|(res, (owner_ns, owner_name))| {
        let placed = if kind.namespaced {
            owner_ns == namespace
        } else {
            owner_ns.is_empty()
        };
        res == kind.key() && placed && owner_name == field("name")
    });
    OwnerLookup {
        verdict: if present {
            Verdict::Present
        } else {
            Verdict::Absent
        },
        misplaced,
    }
}

/// The owner references of `obj`, borrowed.
pub(crate) fn owner_refs(obj: &Value) -> &[Value] {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}
