//! The `rbac.authorization.k8s.io/v1` group: Roles, ClusterRoles and
//! their bindings, named as path segments (`ValidateRBACName`) and created
//! by a PUT (`pkg/registry/rbac/*/strategy.go`); what the two binding
//! kinds share (defaults, a required roleRef, the `ROLE` row) lives here.

pub(crate) mod clusterrole;
pub(crate) mod clusterrolebinding;
pub(crate) mod role;
pub(crate) mod rolebinding;

use serde_json::{json, Value};

use crate::machinery::status::Cause;
use crate::machinery::util::Pointer;
use crate::registry::core::pod_spec::is_empty;
use crate::registry::fields::{fill, items_mut, obj_mut, Table, D};
use crate::registry::printers::{age, name, str_at, Col::*, Printer};

pub(super) const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

const ROLE_REF: Table = &[("apiGroup", D::Str(RBAC_GROUP))];

/// `SetDefaults_RoleBinding` / `SetDefaults_ClusterRoleBinding`, and
/// `SetDefaults_Subject` on every subject.
pub(super) fn binding_defaults(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if let Some(role_ref) = obj_mut(map, "roleRef") {
        fill(role_ref, ROLE_REF);
    }
    for subject in items_mut(map, "subjects") {
        if subject
            .get("apiGroup")
            .is_some_and(|g| g.as_str().is_some_and(|g| !g.is_empty()))
        {
            continue;
        }
        let group = match subject.get("kind").and_then(Value::as_str) {
            Some("User" | "Group") => RBAC_GROUP,
            Some("ServiceAccount") => "",
            _ => continue,
        };
        subject.insert("apiGroup".into(), json!(group));
    }
}

/// `ValidateRoleBinding`: the roleRef's kind and name are required.
pub(super) fn validate_binding(obj: &Value, _: Option<&Value>) -> Vec<Cause> {
    ["kind", "name"]
        .into_iter()
        .filter(|f| is_empty(obj.pointer(&format!("/roleRef/{f}"))))
        .map(|f| Cause::required(format!("roleRef.{f}")))
        .collect()
}

/// The binding kinds' printer: `ROLE AGE`, wide `USERS GROUPS
/// SERVICEACCOUNTS`.
pub(super) const BINDING_PRINTER: Printer = Printer {
    columns: &[
        Name,
        Str("Role", 0),
        Age,
        Str("Users", 1),
        Str("Groups", 1),
        Str("ServiceAccounts", 1),
    ],
    cells: binding_cells,
};

/// The cells of a RoleBinding row.
fn binding_cells(o: &Value) -> Vec<Value> {
    let subjects = |kind: &str| {
        o.at("/subjects")
            .and_then(Value::as_array)
            .map(|ss| {
                ss.iter()
                    .filter(|s| str_at(s, "/kind") == kind)
                    .map(|s| {
                        if kind == "ServiceAccount" {
                            format!("{}/{}", str_at(s, "/namespace"), str_at(s, "/name"))
                        } else {
                            str_at(s, "/name").to_owned()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    vec![
        name(o),
        json!(format!(
            "{}/{}",
            str_at(o, "/roleRef/kind"),
            str_at(o, "/roleRef/name")
        )),
        age(o),
        json!(subjects("User")),
        json!(subjects("Group")),
        json!(subjects("ServiceAccount")),
    ]
}

#[cfg(test)]
mod tests {
    use super::{binding_defaults as binding, RBAC_GROUP};
    use serde_json::json;

    /// `pkg/apis/rbac/v1/defaults.go` `SetDefaults_Subject` and
    /// `SetDefaults_RoleBinding`, as `defaults_test.go` exercises them.
    #[test]
    fn bindings_get_role_ref_and_subject_api_groups() {
        let mut b = json!({
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
            {"kind": "User", "name": "bob", "apiGroup": "example.com"},
        ]});
        binding(&mut b);
        assert_eq!(
            b,
            json!({
            "roleRef": {"kind": "ClusterRole", "name": "view", "apiGroup": RBAC_GROUP},
            "subjects": [
                {"kind": "User", "name": "alice", "apiGroup": RBAC_GROUP},
                {"kind": "Group", "name": "devs", "apiGroup": RBAC_GROUP},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "ns", "apiGroup": ""},
                {"kind": "User", "name": "bob", "apiGroup": "example.com"},
            ]})
        );
    }
}
