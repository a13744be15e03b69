//! The built-in resources with their real discovery attributes (as in
//! kube-apiserver's `api/discovery/*.json`) and per-kind behaviour: the
//! k8s-openapi type a body must decode into (and whose schema `/openapi/v3`
//! publishes), which fields bump `generation`, which field-selector labels
//! work, and the Table printer. This is the server's one list of the
//! built-in kinds it serves.

use k8s_openapi::api::{
    admissionregistration, apps, authentication, authorization, batch, coordination, core, events,
    policy, rbac,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::schemars::generate::SchemaGenerator;
use k8s_openapi::schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::convert::EVENTS;
use super::def::{Behavior, Builtin, ExtraSubresource, Printer, ResourceDef, ScalePaths};

/// Decodes into `T`, reporting the JSON path of the first failure.
fn decode<T: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, (String, String)> {
    serde_path_to_error::deserialize::<_, T>(v)
        .map(|t| serde_json::to_value(&t).unwrap_or(Value::Null))
        .map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            (path, e.into_inner().to_string())
        })
}

/// Registers `T`'s schema, returning its definition name
/// (`io.k8s.api.apps.v1.Deployment`).
fn openapi_schema<T: JsonSchema>(gen: &mut SchemaGenerator) -> String {
    gen.subschema_for::<T>();
    T::schema_name().into_owned()
}

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const NS_VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

const CREATE_ONLY: &[&str] = &["create"];

const NO_FIELDS: &[(&str, &str)] = &[];
const SPEC: &[&str] = &["spec"];

macro_rules! builtin {
    ($name:ident, $ty:ty, $gen:expr, $fields:expr, $printer:expr) => {
        builtin!($name, $ty, $gen, $fields, $printer, false, false);
    };
    ($name:ident, $ty:ty, $gen:expr, $fields:expr, $printer:expr, $obj:expr) => {
        builtin!($name, $ty, $gen, $fields, $printer, $obj, false);
    };
    ($name:ident, $ty:ty, $gen:expr, $fields:expr, $printer:expr, $obj:expr, $create_on_update:expr) => {
        static $name: Builtin = Builtin {
            validate: decode::<$ty>,
            openapi_schema: openapi_schema::<$ty>,
            generation: $gen,
            field_labels: $fields,
            printer: $printer,
            delete_returns_object: $obj,
            conversion: None,
            create_on_update: $create_on_update,
        };
    };
}

/// Which kinds a PUT creates when the object is missing: the kinds whose
/// registry strategy answers `AllowCreateOnUpdate() == true` in
/// kube-apiserver (`pkg/registry/core/event/strategy.go`,
/// `core/service/strategy.go` (served by the generic store since 1.23),
/// `coordination/lease/strategy.go`, `rbac/{role,rolebinding,clusterrole,
/// clusterrolebinding}/strategy.go`). Every other kind served here answers
/// false: configmaps, secrets, serviceaccounts, namespaces, nodes, pods, the
/// apps and batch workloads, poddisruptionbudgets, the webhook
/// configurations, CRDs and custom resources.
const CREATES_ON_UPDATE: bool = true;

builtin!(
    NAMESPACE,
    core::v1::Namespace,
    None,
    &[("status.phase", "status.phase")],
    Printer::Namespace
);
builtin!(
    CONFIGMAP,
    core::v1::ConfigMap,
    None,
    NO_FIELDS,
    Printer::ConfigMap
);
builtin!(
    SECRET,
    core::v1::Secret,
    None,
    &[("type", "type")],
    Printer::Secret
);
builtin!(
    SERVICE,
    core::v1::Service,
    None,
    NO_FIELDS,
    Printer::Service,
    false,
    CREATES_ON_UPDATE
);
builtin!(
    SERVICEACCOUNT,
    core::v1::ServiceAccount,
    None,
    NO_FIELDS,
    Printer::ServiceAccount
);
builtin!(
    POD,
    core::v1::Pod,
    None,
    &[
        ("spec.nodeName", "spec.nodeName"),
        ("spec.restartPolicy", "spec.restartPolicy"),
        ("spec.schedulerName", "spec.schedulerName"),
        ("spec.serviceAccountName", "spec.serviceAccountName"),
        ("spec.hostNetwork", "spec.hostNetwork"),
        ("status.phase", "status.phase"),
        ("status.podIP", "status.podIP"),
        ("status.nominatedNodeName", "status.nominatedNodeName"),
    ],
    Printer::Pod,
    true
);
builtin!(
    NODE,
    core::v1::Node,
    None,
    &[("spec.unschedulable", "spec.unschedulable")],
    Printer::Node
);
builtin!(
    PDB,
    policy::v1::PodDisruptionBudget,
    Some(SPEC),
    NO_FIELDS,
    Printer::PodDisruptionBudget
);
builtin!(
    CONTROLLERREVISION,
    apps::v1::ControllerRevision,
    None,
    NO_FIELDS,
    Printer::ControllerRevision
);
builtin!(
    CORE_EVENT,
    core::v1::Event,
    None,
    &[
        ("involvedObject.kind", "involvedObject.kind"),
        ("involvedObject.namespace", "involvedObject.namespace"),
        ("involvedObject.name", "involvedObject.name"),
        ("involvedObject.uid", "involvedObject.uid"),
        ("involvedObject.apiVersion", "involvedObject.apiVersion"),
        (
            "involvedObject.resourceVersion",
            "involvedObject.resourceVersion"
        ),
        ("involvedObject.fieldPath", "involvedObject.fieldPath"),
        ("reason", "reason"),
        ("reportingComponent", "reportingComponent"),
        ("source", "source.component"),
        ("type", "type"),
    ],
    Printer::Event,
    false,
    CREATES_ON_UPDATE
);
/// Served from the core events storage, so field selectors read core paths.
static EVENTS_EVENT: Builtin = Builtin {
    validate: decode::<events::v1::Event>,
    openapi_schema: openapi_schema::<events::v1::Event>,
    generation: None,
    field_labels: &[
        ("regarding.kind", "involvedObject.kind"),
        ("regarding.namespace", "involvedObject.namespace"),
        ("regarding.name", "involvedObject.name"),
        ("regarding.uid", "involvedObject.uid"),
        ("regarding.apiVersion", "involvedObject.apiVersion"),
        ("reason", "reason"),
        ("reportingController", "reportingComponent"),
        ("type", "type"),
    ],
    printer: Printer::Default,
    delete_returns_object: false,
    conversion: Some(&EVENTS),
    create_on_update: CREATES_ON_UPDATE,
};
builtin!(
    DEPLOYMENT,
    apps::v1::Deployment,
    Some(SPEC),
    NO_FIELDS,
    Printer::Deployment
);
builtin!(
    REPLICASET,
    apps::v1::ReplicaSet,
    Some(SPEC),
    &[("status.replicas", "status.replicas")],
    Printer::ReplicaSet
);
builtin!(
    STATEFULSET,
    apps::v1::StatefulSet,
    Some(SPEC),
    NO_FIELDS,
    Printer::StatefulSet
);
builtin!(
    DAEMONSET,
    apps::v1::DaemonSet,
    Some(SPEC),
    NO_FIELDS,
    Printer::DaemonSet
);
builtin!(
    JOB,
    batch::v1::Job,
    Some(SPEC),
    &[("status.successful", "status.succeeded")],
    Printer::Job
);
builtin!(
    CRONJOB,
    batch::v1::CronJob,
    Some(SPEC),
    NO_FIELDS,
    Printer::CronJob
);
builtin!(
    LEASE,
    coordination::v1::Lease,
    None,
    NO_FIELDS,
    Printer::Lease,
    false,
    CREATES_ON_UPDATE
);
builtin!(
    SELF_SUBJECT_REVIEW,
    authentication::v1::SelfSubjectReview,
    None,
    NO_FIELDS,
    Printer::Default
);
builtin!(
    SELF_SUBJECT_ACCESS_REVIEW,
    authorization::v1::SelfSubjectAccessReview,
    None,
    NO_FIELDS,
    Printer::Default
);
builtin!(
    SELF_SUBJECT_RULES_REVIEW,
    authorization::v1::SelfSubjectRulesReview,
    None,
    NO_FIELDS,
    Printer::Default
);
builtin!(
    SUBJECT_ACCESS_REVIEW,
    authorization::v1::SubjectAccessReview,
    None,
    NO_FIELDS,
    Printer::Default
);
builtin!(
    LOCAL_SUBJECT_ACCESS_REVIEW,
    authorization::v1::LocalSubjectAccessReview,
    None,
    NO_FIELDS,
    Printer::Default
);
builtin!(
    ROLE,
    rbac::v1::Role,
    None,
    NO_FIELDS,
    Printer::Default,
    false,
    CREATES_ON_UPDATE
);
builtin!(
    ROLEBINDING,
    rbac::v1::RoleBinding,
    None,
    NO_FIELDS,
    Printer::RoleBinding,
    false,
    CREATES_ON_UPDATE
);
builtin!(
    CLUSTERROLE,
    rbac::v1::ClusterRole,
    None,
    NO_FIELDS,
    Printer::Default,
    false,
    CREATES_ON_UPDATE
);
builtin!(
    CLUSTERROLEBINDING,
    rbac::v1::ClusterRoleBinding,
    None,
    NO_FIELDS,
    Printer::RoleBinding,
    false,
    CREATES_ON_UPDATE
);
builtin!(
    CRD,
    CustomResourceDefinition,
    Some(SPEC),
    NO_FIELDS,
    Printer::Default
);
builtin!(
    VWC,
    admissionregistration::v1::ValidatingWebhookConfiguration,
    Some(&["webhooks"]),
    NO_FIELDS,
    Printer::Webhook
);
builtin!(
    VAP,
    admissionregistration::v1::ValidatingAdmissionPolicy,
    Some(SPEC),
    NO_FIELDS,
    Printer::AdmissionPolicy
);
builtin!(
    VAP_BINDING,
    admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    Some(SPEC),
    NO_FIELDS,
    Printer::AdmissionPolicyBinding
);
builtin!(
    MWC,
    admissionregistration::v1::MutatingWebhookConfiguration,
    Some(&["webhooks"]),
    NO_FIELDS,
    Printer::Webhook
);

/// One built-in resource as discovery lists it: a row of [`RESOURCES`].
struct Resource {
    group: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    verbs: &'static [&'static str],
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    /// Serves a `status` subresource.
    status: bool,
    /// Serves a `scale` subresource over `.spec.replicas`/`.status.replicas`.
    scale: bool,
    extra_subresources: &'static [ExtraSubresource],
    behavior: &'static Builtin,
}

/// A namespaced resource with every verb, no short names, categories or
/// subresources: the common case each row of [`RESOURCES`] starts from.
const fn resource(
    group: &'static str,
    plural: &'static str,
    kind: &'static str,
    behavior: &'static Builtin,
) -> Resource {
    Resource {
        group,
        plural,
        kind,
        namespaced: true,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &[],
        status: false,
        scale: false,
        extra_subresources: &[],
        behavior,
    }
}

const ALL: &[&str] = &["all"];
const EXT: &[&str] = &["api-extensions"];

const FINALIZE: ExtraSubresource = ExtraSubresource {
    name: "finalize",
    verbs: &["update"],
    kind: None,
};
const BINDING: ExtraSubresource = ExtraSubresource {
    name: "binding",
    verbs: &["create"],
    kind: Some(("", "v1", "Binding")),
};
const EVICTION: ExtraSubresource = ExtraSubresource {
    name: "eviction",
    verbs: &["create"],
    kind: Some(("policy", "v1", "Eviction")),
};
const TOKEN: ExtraSubresource = ExtraSubresource {
    name: "token",
    verbs: &["create"],
    kind: Some(("authentication.k8s.io", "v1", "TokenRequest")),
};

const RBAC: &str = "rbac.authorization.k8s.io";
const ADMISSION: &str = "admissionregistration.k8s.io";
const AUTHZ: &str = "authorization.k8s.io";

/// Every built-in resource, in discovery order (groups as kube-apiserver
/// orders them).
static RESOURCES: &[Resource] = &[
    Resource {
        short_names: &["cm"],
        ..resource("", "configmaps", "ConfigMap", &CONFIGMAP)
    },
    Resource {
        short_names: &["ev"],
        ..resource("", "events", "Event", &CORE_EVENT)
    },
    Resource {
        namespaced: false,
        verbs: NS_VERBS,
        short_names: &["ns"],
        status: true,
        extra_subresources: &[FINALIZE],
        ..resource("", "namespaces", "Namespace", &NAMESPACE)
    },
    Resource {
        namespaced: false,
        short_names: &["no"],
        status: true,
        ..resource("", "nodes", "Node", &NODE)
    },
    Resource {
        short_names: &["po"],
        categories: ALL,
        status: true,
        extra_subresources: &[BINDING, EVICTION],
        ..resource("", "pods", "Pod", &POD)
    },
    resource("", "secrets", "Secret", &SECRET),
    Resource {
        short_names: &["sa"],
        extra_subresources: &[TOKEN],
        ..resource("", "serviceaccounts", "ServiceAccount", &SERVICEACCOUNT)
    },
    Resource {
        short_names: &["svc"],
        categories: ALL,
        status: true,
        ..resource("", "services", "Service", &SERVICE)
    },
    Resource {
        short_names: &["ds"],
        categories: ALL,
        status: true,
        ..resource("apps", "daemonsets", "DaemonSet", &DAEMONSET)
    },
    resource(
        "apps",
        "controllerrevisions",
        "ControllerRevision",
        &CONTROLLERREVISION,
    ),
    Resource {
        short_names: &["deploy"],
        categories: ALL,
        status: true,
        scale: true,
        ..resource("apps", "deployments", "Deployment", &DEPLOYMENT)
    },
    Resource {
        short_names: &["rs"],
        categories: ALL,
        status: true,
        scale: true,
        ..resource("apps", "replicasets", "ReplicaSet", &REPLICASET)
    },
    Resource {
        short_names: &["sts"],
        categories: ALL,
        status: true,
        scale: true,
        ..resource("apps", "statefulsets", "StatefulSet", &STATEFULSET)
    },
    Resource {
        short_names: &["ev"],
        ..resource("events.k8s.io", "events", "Event", &EVENTS_EVENT)
    },
    Resource {
        short_names: &["cj"],
        categories: ALL,
        status: true,
        ..resource("batch", "cronjobs", "CronJob", &CRONJOB)
    },
    Resource {
        categories: ALL,
        status: true,
        ..resource("batch", "jobs", "Job", &JOB)
    },
    Resource {
        short_names: &["pdb"],
        status: true,
        ..resource(
            "policy",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            &PDB,
        )
    },
    Resource {
        namespaced: false,
        ..resource(
            RBAC,
            "clusterrolebindings",
            "ClusterRoleBinding",
            &CLUSTERROLEBINDING,
        )
    },
    Resource {
        namespaced: false,
        ..resource(RBAC, "clusterroles", "ClusterRole", &CLUSTERROLE)
    },
    resource(RBAC, "rolebindings", "RoleBinding", &ROLEBINDING),
    resource(RBAC, "roles", "Role", &ROLE),
    Resource {
        namespaced: false,
        categories: EXT,
        ..resource(
            ADMISSION,
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            &MWC,
        )
    },
    Resource {
        namespaced: false,
        categories: EXT,
        ..resource(
            ADMISSION,
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            &VWC,
        )
    },
    Resource {
        namespaced: false,
        categories: EXT,
        status: true,
        ..resource(
            ADMISSION,
            "validatingadmissionpolicies",
            "ValidatingAdmissionPolicy",
            &VAP,
        )
    },
    Resource {
        namespaced: false,
        categories: EXT,
        ..resource(
            ADMISSION,
            "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding",
            &VAP_BINDING,
        )
    },
    Resource {
        namespaced: false,
        short_names: &["crd", "crds"],
        categories: EXT,
        status: true,
        ..resource(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            &CRD,
        )
    },
    // The access reviews: create-only, answered and never stored.
    Resource {
        namespaced: false,
        verbs: CREATE_ONLY,
        ..resource(
            "authentication.k8s.io",
            "selfsubjectreviews",
            "SelfSubjectReview",
            &SELF_SUBJECT_REVIEW,
        )
    },
    Resource {
        verbs: CREATE_ONLY,
        ..resource(
            AUTHZ,
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            &LOCAL_SUBJECT_ACCESS_REVIEW,
        )
    },
    Resource {
        namespaced: false,
        verbs: CREATE_ONLY,
        ..resource(
            AUTHZ,
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            &SELF_SUBJECT_ACCESS_REVIEW,
        )
    },
    Resource {
        namespaced: false,
        verbs: CREATE_ONLY,
        ..resource(
            AUTHZ,
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
            &SELF_SUBJECT_RULES_REVIEW,
        )
    },
    Resource {
        namespaced: false,
        verbs: CREATE_ONLY,
        ..resource(
            AUTHZ,
            "subjectaccessreviews",
            "SubjectAccessReview",
            &SUBJECT_ACCESS_REVIEW,
        )
    },
    resource("coordination.k8s.io", "leases", "Lease", &LEASE),
];

impl Resource {
    /// The served definition of this row, at version `v1`.
    fn def(&self) -> ResourceDef {
        ResourceDef {
            group: self.group.into(),
            versions: vec!["v1".into()],
            storage_version: "v1".into(),
            plural: self.plural.into(),
            singular: self.kind.to_ascii_lowercase(),
            kind: self.kind.into(),
            list_kind: format!("{}List", self.kind),
            namespaced: self.namespaced,
            verbs: self.verbs.to_vec(),
            short_names: self.short_names.iter().map(|s| (*s).to_owned()).collect(),
            categories: self.categories.iter().map(|s| (*s).to_owned()).collect(),
            status: self.status,
            scale: self.scale.then(|| ScalePaths {
                spec_replicas: ".spec.replicas".into(),
                status_replicas: ".status.replicas".into(),
                label_selector: None,
            }),
            extra_subresources: self.extra_subresources.to_vec(),
            behavior: Behavior::Builtin(self.behavior),
        }
    }
}

/// The behaviour of the built-in kind `group`/`version`/`kind`, if this
/// server serves it.
pub(crate) fn find(group: &str, version: &str, kind: &str) -> Option<&'static Builtin> {
    all()
        .into_iter()
        .find(|d| d.group == group && d.kind == kind && d.versions.iter().any(|v| v == version))
        .and_then(|d| d.builtin())
}

/// Every built-in resource, in discovery order (groups as kube-apiserver
/// orders them).
pub(crate) fn all() -> Vec<ResourceDef> {
    RESOURCES.iter().map(Resource::def).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_the_kinds_whose_strategy_allows_it_create_on_update() {
        let creating: Vec<String> = all()
            .iter()
            .filter(|d| d.creates_on_update())
            .map(|d| format!("{}/{}", d.group, d.plural))
            .collect();
        assert_eq!(
            creating,
            [
                "/events",
                "/services",
                "events.k8s.io/events",
                "rbac.authorization.k8s.io/clusterrolebindings",
                "rbac.authorization.k8s.io/clusterroles",
                "rbac.authorization.k8s.io/rolebindings",
                "rbac.authorization.k8s.io/roles",
                "coordination.k8s.io/leases",
            ]
        );
    }

    #[test]
    fn etcd_keys_use_kube_apiservers_storage_prefixes() {
        let key = |group: &str, plural: &str, ns: &str, name: &str| {
            all()
                .into_iter()
                .find(|d| d.group == group && d.plural == plural)
                .map(|d| d.etcd_key(ns, name))
                .unwrap()
        };
        assert_eq!(
            key("", "services", "default", "web"),
            "/registry/services/specs/default/web"
        );
        assert_eq!(key("", "nodes", "", "n1"), "/registry/minions/n1");
        assert_eq!(
            key("events.k8s.io", "events", "default", "e"),
            "/registry/events/default/e"
        );
        assert_eq!(
            key("apps", "deployments", "default", "d"),
            "/registry/deployments/default/d"
        );
        assert_eq!(
            key(
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                "",
                "widgets.ex.com"
            ),
            "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.ex.com"
        );
        assert_eq!(
            key("rbac.authorization.k8s.io", "clusterroles", "", "admin"),
            "/registry/clusterroles/admin"
        );
    }
}
