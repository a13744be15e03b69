//! Owner references resolved as kube-controller-manager's garbage
//! collector resolves them: an owner is present for a dependent only in the
//! dependent's namespace (or cluster-wide), with the reference's group,
//! kind, name and uid. The collector and the check of references a write
//! adds both ask here.

use serde_json::Value;

use crate::state::Shared;

/// The `uid` of an owner reference.
fn ref_uid(r: &Value) -> &str {
    r.get("uid").and_then(Value::as_str).unwrap_or("")
}

/// Whether the owner that reference `r` names exists for a dependent in
/// `namespace` (`""` when cluster-scoped). kube-controller-manager's
/// garbage collector looks an owner up by the reference's group, kind and
/// name in the dependent's namespace (a cluster-scoped dependent's only
/// among cluster-scoped kinds) and compares uids: the uid's object
/// elsewhere (in another namespace, of another kind or name) is no owner,
/// so the reference is dangling (and kube records `OwnerRefInvalidNamespace`
/// when the namespace is what differs).
pub(crate) fn owner_present(shared: &Shared, namespace: &str, r: &Value) -> bool {
    let Some((res, (owner_ns, owner_name))) = shared.storage.lock().by_uid(ref_uid(r)) else {
        return false;
    };
    let Some(def) = shared.registry().by_key(&res) else {
        return false;
    };
    let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let group = field("apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
    let placed = owner_ns.is_empty() || owner_ns == namespace;
    placed && owner_name == field("name") && def.kind == field("kind") && def.group == group
}

/// The owner references of `obj`, borrowed.
fn owner_refs(obj: &Value) -> &[Value] {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The uid of each owner reference of `obj` (in `namespace`) for which
/// `wanted` holds and whose owner is not [present](owner_present): only
/// the wanted references are looked up.
pub(crate) fn dangling_owner_uids<'a>(
    shared: &Shared,
    namespace: &str,
    obj: &'a Value,
    wanted: impl Fn(&str) -> bool,
) -> Vec<&'a str> {
    owner_refs(obj)
        .iter()
        .filter(|r| wanted(ref_uid(r)) && !owner_present(shared, namespace, r))
        .map(ref_uid)
        .collect()
}
