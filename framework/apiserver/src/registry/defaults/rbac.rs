//! `rbac.authorization.k8s.io/v1` defaults (`pkg/apis/rbac/v1/defaults.go`):
//! a binding's `roleRef.apiGroup`, and each subject's `apiGroup` by kind
//! (`SetDefaults_Subject`: the RBAC group for User and Group, empty for
//! ServiceAccount). Roles and ClusterRoles have none.

use serde_json::{json, Value};

use super::fields::{fill, items_mut, obj_mut, Table, D};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

const ROLE_REF: Table = &[("apiGroup", D::Str(RBAC_GROUP))];

/// `SetDefaults_RoleBinding` / `SetDefaults_ClusterRoleBinding`, and
/// `SetDefaults_Subject` on every subject.
pub(super) fn binding(obj: &mut Value) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
