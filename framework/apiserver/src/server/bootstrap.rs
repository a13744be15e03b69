//! The bootstrap policy clients rely on (kube-apiserver's
//! `bootstrappolicy`): `cluster-admin` bound to `system:masters`,
//! `system:discovery`, `system:basic-user` and `system:public-info-viewer`
//! bound to the implicit groups, and the aggregated `admin`, `edit` and
//! `view` roles with the `system:aggregate-to-*` roles that fill them,
//! filled at once by the aggregation controller.

use serde_json::{json, Value};

use crate::auth::rbac::GROUP;
use crate::machinery::status::ApiError;
use crate::objects::{self, WriteOpts};
use crate::registry::state::Shared;

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

fn urls(urls: &[&str], verbs: &[&str]) -> Value {
    json!({"nonResourceURLs": urls, "verbs": verbs})
}

fn cluster_role(name: &str, labels: Value, rules: Value) -> Value {
    let mut all_labels = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
    if let (Some(m), Some(extra)) = (all_labels.as_object_mut(), labels.as_object()) {
        m.extend(extra.clone());
    }
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": all_labels,
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "rules": rules,
    })
}

fn aggregated(name: &str, labels: Value) -> Value {
    let mut role = cluster_role(name, labels, Value::Null);
    role["aggregationRule"] = json!({"clusterRoleSelectors": [
        {"matchLabels": {format!("rbac.authorization.k8s.io/aggregate-to-{name}"): "true"}}
    ]});
    role
}

fn binding(name: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": GROUP, "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
        "subjects": subjects,
    })
}

fn cluster_roles() -> Vec<Value> {
    let to = |r: &str| json!({format!("rbac.authorization.k8s.io/aggregate-to-{r}"): "true"});
    let view = json!([
        rule(
            &[""],
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status"
            ],
            READ
        ),
        rule(
            &[""],
            &[
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status"
            ],
            READ
        ),
        rule(&[""], &["namespaces"], READ),
        rule(&["discovery.k8s.io"], &["endpointslices"], READ),
        rule(
            &["apps"],
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status"
            ],
            READ
        ),
        rule(
            &["autoscaling"],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status"
            ],
            READ
        ),
        rule(
            &["batch"],
            &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
            READ
        ),
        rule(
            &["policy"],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
            READ
        ),
        rule(
            &["networking.k8s.io"],
            &["ingresses", "ingresses/status", "networkpolicies"],
            READ
        ),
    ]);
    let edit = json!([
        rule(
            &[""],
            &[
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "secrets",
                "services/proxy"
            ],
            READ
        ),
        rule(&[""], &["serviceaccounts"], &["impersonate"]),
        rule(
            &[""],
            &[
                "pods",
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy"
            ],
            WRITE
        ),
        rule(&[""], &["pods/eviction"], &["create"]),
        rule(
            &[""],
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy"
            ],
            WRITE
        ),
        rule(&[""], &["serviceaccounts/token"], &["create"]),
        rule(
            &["apps"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale"
            ],
            WRITE
        ),
        rule(&["autoscaling"], &["horizontalpodautoscalers"], WRITE),
        rule(&["batch"], &["cronjobs", "jobs"], WRITE),
        rule(&["policy"], &["poddisruptionbudgets"], WRITE),
        rule(
            &["networking.k8s.io"],
            &["ingresses", "networkpolicies"],
            WRITE
        ),
        rule(
            &["coordination.k8s.io"],
            &["leases"],
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch"
            ]
        ),
    ]);
    let admin = json!([
        rule(
            &["authorization.k8s.io"],
            &["localsubjectaccessreviews"],
            &["create"]
        ),
        rule(
            &[GROUP],
            &["rolebindings", "roles"],
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch"
            ]
        ),
    ]);
    vec![
        cluster_role(
            "cluster-admin",
            json!({}),
            json!([rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"]),]),
        ),
        cluster_role(
            "system:discovery",
            json!({}),
            json!([urls(
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/"
                ],
                &["get"],
            )]),
        ),
        cluster_role(
            "system:basic-user",
            json!({}),
            json!([
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"]
                ),
                rule(
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                    &["create"]
                ),
            ]),
        ),
        cluster_role(
            "system:public-info-viewer",
            json!({}),
            json!([urls(
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
                &["get"],
            )]),
        ),
        aggregated("admin", json!({})),
        aggregated("edit", to("admin")),
        aggregated("view", to("edit")),
        cluster_role("system:aggregate-to-admin", to("admin"), admin),
        cluster_role("system:aggregate-to-edit", to("edit"), edit),
        cluster_role("system:aggregate-to-view", to("view"), view),
    ]
}

fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding("cluster-admin", &[crate::auth::MASTERS]),
        binding("system:discovery", &[crate::auth::AUTHENTICATED]),
        binding("system:basic-user", &[crate::auth::AUTHENTICATED]),
        binding(
            "system:public-info-viewer",
            &[crate::auth::AUTHENTICATED, crate::auth::UNAUTHENTICATED],
        ),
    ]
}

/// Creates the bootstrap roles and bindings, then aggregates.
pub(crate) fn seed(shared: &Shared) -> Result<(), ApiError> {
    for (plural, objects) in [
        ("clusterroles", cluster_roles()),
        ("clusterrolebindings", cluster_role_bindings()),
    ] {
        let def = shared
            .registry()
            .get(GROUP, "v1", plural)
            .ok_or_else(|| ApiError::internal(format!("{plural} are not registered")))?;
        let opts = WriteOpts::internal(&def, "kube-apiserver");
        for obj in objects {
            match objects::create(shared, &def, None, obj, &opts) {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
    }
    crate::controllers::rbac_aggregation::aggregate(shared);
    Ok(())
}
