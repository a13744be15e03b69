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

/// One rule of a bootstrap role.
enum Rule {
    /// Verbs on resources of API groups.
    On(
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
    ),
    /// Verbs on non-resource URLs.
    Urls(&'static [&'static str], &'static [&'static str]),
}

impl Rule {
    const fn on(
        groups: &'static [&'static str],
        resources: &'static [&'static str],
        verbs: &'static [&'static str],
    ) -> Self {
        Self::On(groups, resources, verbs)
    }

    fn json(&self) -> Value {
        match self {
            Self::On(groups, resources, verbs) => rule(groups, resources, verbs),
            Self::Urls(u, verbs) => urls(u, verbs),
        }
    }
}

/// What `system:aggregate-to-view` grants (bootstrappolicy's view rules).
const VIEW: &[Rule] = &[
    Rule::on(
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
            "services/status",
        ],
        READ,
    ),
    Rule::on(
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
            "resourcequotas/status",
        ],
        READ,
    ),
    Rule::on(&[""], &["namespaces"], READ),
    Rule::on(&["discovery.k8s.io"], &["endpointslices"], READ),
    Rule::on(
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
            "statefulsets/status",
        ],
        READ,
    ),
    Rule::on(
        &["autoscaling"],
        &[
            "horizontalpodautoscalers",
            "horizontalpodautoscalers/status",
        ],
        READ,
    ),
    Rule::on(
        &["batch"],
        &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
        READ,
    ),
    Rule::on(
        &["policy"],
        &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        READ,
    ),
    Rule::on(
        &["networking.k8s.io"],
        &["ingresses", "ingresses/status", "networkpolicies"],
        READ,
    ),
];

/// What `system:aggregate-to-edit` grants.
const EDIT: &[Rule] = &[
    Rule::on(
        &[""],
        &[
            "pods/attach",
            "pods/exec",
            "pods/portforward",
            "pods/proxy",
            "secrets",
            "services/proxy",
        ],
        READ,
    ),
    Rule::on(&[""], &["serviceaccounts"], &["impersonate"]),
    Rule::on(
        &[""],
        &[
            "pods",
            "pods/attach",
            "pods/exec",
            "pods/portforward",
            "pods/proxy",
        ],
        WRITE,
    ),
    Rule::on(&[""], &["pods/eviction"], &["create"]),
    Rule::on(
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
            "services/proxy",
        ],
        WRITE,
    ),
    Rule::on(&[""], &["serviceaccounts/token"], &["create"]),
    Rule::on(
        &["apps"],
        &[
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ],
        WRITE,
    ),
    Rule::on(&["autoscaling"], &["horizontalpodautoscalers"], WRITE),
    Rule::on(&["batch"], &["cronjobs", "jobs"], WRITE),
    Rule::on(&["policy"], &["poddisruptionbudgets"], WRITE),
    Rule::on(
        &["networking.k8s.io"],
        &["ingresses", "networkpolicies"],
        WRITE,
    ),
    Rule::on(
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
            "watch",
        ],
    ),
];

/// What `system:aggregate-to-admin` grants.
const ADMIN: &[Rule] = &[
    Rule::on(
        &["authorization.k8s.io"],
        &["localsubjectaccessreviews"],
        &["create"],
    ),
    Rule::on(
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
            "watch",
        ],
    ),
];

/// How a bootstrap ClusterRole gets its rules.
enum Rules {
    /// Listed here.
    Listed(&'static [Rule]),
    /// Filled by the aggregation controller from the roles labelled
    /// `rbac.authorization.k8s.io/aggregate-to-<name>`.
    Aggregated,
}

/// The bootstrap ClusterRoles, in creation order: name, the role it
/// aggregates into (its `aggregate-to-<role>` label) and its rules.
const CLUSTER_ROLES: &[(&str, Option<&str>, Rules)] = &[
    (
        "cluster-admin",
        None,
        Rules::Listed(&[Rule::on(&["*"], &["*"], &["*"]), Rule::Urls(&["*"], &["*"])]),
    ),
    (
        "system:discovery",
        None,
        Rules::Listed(&[Rule::Urls(
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
                "/version/",
            ],
            &["get"],
        )]),
    ),
    (
        "system:basic-user",
        None,
        Rules::Listed(&[
            Rule::on(
                &["authorization.k8s.io"],
                &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                &["create"],
            ),
            Rule::on(
                &["authentication.k8s.io"],
                &["selfsubjectreviews"],
                &["create"],
            ),
        ]),
    ),
    (
        "system:public-info-viewer",
        None,
        Rules::Listed(&[Rule::Urls(
            &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            &["get"],
        )]),
    ),
    ("admin", None, Rules::Aggregated),
    ("edit", Some("admin"), Rules::Aggregated),
    ("view", Some("edit"), Rules::Aggregated),
    (
        "system:aggregate-to-admin",
        Some("admin"),
        Rules::Listed(ADMIN),
    ),
    (
        "system:aggregate-to-edit",
        Some("edit"),
        Rules::Listed(EDIT),
    ),
    (
        "system:aggregate-to-view",
        Some("view"),
        Rules::Listed(VIEW),
    ),
];

/// [`CLUSTER_ROLES`] as objects.
fn cluster_roles() -> Vec<Value> {
    CLUSTER_ROLES
        .iter()
        .map(|(name, into, rules)| {
            let labels = match into {
                Some(r) => json!({format!("rbac.authorization.k8s.io/aggregate-to-{r}"): "true"}),
                None => json!({}),
            };
            match rules {
                Rules::Listed(rules) => {
                    cluster_role(name, labels, rules.iter().map(Rule::json).collect())
                }
                Rules::Aggregated => aggregated(name, labels),
            }
        })
        .collect()
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
