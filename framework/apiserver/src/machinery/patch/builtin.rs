//! Merge schemas of the built-in kinds the server serves, transcribed from the
//! `patchStrategy`/`patchMergeKey` struct tags and the `+listType`,
//! `+listMapKey`, `+mapType` and `+structType` markers of k8s.io/api (v1.33):
//! `core/v1/types.go` (ObjectMeta, PodSpec, Container, Service, ...),
//! `apps/v1`, `batch/v1`, `rbac/v1`, `admissionregistration/v1` and
//! apiextensions `v1/types.go`. k8s-openapi does not carry these tags.
//!
//! Where the two disagree, server-side apply follows `listType` and
//! strategic merge patch follows `patchStrategy`: container ports are keyed
//! by `containerPort`+`protocol` for apply but merge by `containerPort` in a
//! patch, and Job conditions are atomic for apply but merge by `type`.

use serde_json::Value;

use super::schema::{ListType, MergeSchema};

/// The built-in kinds grouped by where their pod templates and conditions sit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Anything else: only `metadata` is known.
    Generic,
    Pod,
    /// Deployment, ReplicaSet, StatefulSet, DaemonSet: `spec.template`.
    Workload,
    Job,
    CronJob,
    Service,
    ServiceAccount,
    Namespace,
    ConfigMap,
    Secret,
    CustomResourceDefinition,
    WebhookConfiguration,
    AdmissionPolicy,
    AdmissionPolicyBinding,
    Role,
    RoleBinding,
    CoreEvent,
    Event,
}

/// The merge schema of one built-in kind.
#[derive(Debug)]
pub struct BuiltinSchema {
    kind: Kind,
}

static GENERIC: BuiltinSchema = BuiltinSchema {
    kind: Kind::Generic,
};
static POD: BuiltinSchema = BuiltinSchema { kind: Kind::Pod };
static WORKLOAD: BuiltinSchema = BuiltinSchema {
    kind: Kind::Workload,
};
static JOB: BuiltinSchema = BuiltinSchema { kind: Kind::Job };
static CRONJOB: BuiltinSchema = BuiltinSchema {
    kind: Kind::CronJob,
};
static SERVICE: BuiltinSchema = BuiltinSchema {
    kind: Kind::Service,
};
static SERVICE_ACCOUNT: BuiltinSchema = BuiltinSchema {
    kind: Kind::ServiceAccount,
};
static NAMESPACE: BuiltinSchema = BuiltinSchema {
    kind: Kind::Namespace,
};
static CONFIG_MAP: BuiltinSchema = BuiltinSchema {
    kind: Kind::ConfigMap,
};
static SECRET: BuiltinSchema = BuiltinSchema { kind: Kind::Secret };
static CRD: BuiltinSchema = BuiltinSchema {
    kind: Kind::CustomResourceDefinition,
};
static WEBHOOK: BuiltinSchema = BuiltinSchema {
    kind: Kind::WebhookConfiguration,
};
static ADMISSION_POLICY: BuiltinSchema = BuiltinSchema {
    kind: Kind::AdmissionPolicy,
};
static ADMISSION_POLICY_BINDING: BuiltinSchema = BuiltinSchema {
    kind: Kind::AdmissionPolicyBinding,
};
static ROLE: BuiltinSchema = BuiltinSchema { kind: Kind::Role };
static ROLE_BINDING: BuiltinSchema = BuiltinSchema {
    kind: Kind::RoleBinding,
};
static CORE_EVENT: BuiltinSchema = BuiltinSchema {
    kind: Kind::CoreEvent,
};
static EVENT: BuiltinSchema = BuiltinSchema { kind: Kind::Event };

/// The merge schema of a built-in kind, by where its pod templates and
/// conditions sit; the registry says which kind has which
/// (`registry::builtin_merge_schema`).
pub fn merge_schema_of(kind: Kind) -> &'static dyn MergeSchema {
    match kind {
        Kind::Generic => &GENERIC,
        Kind::Pod => &POD,
        Kind::Workload => &WORKLOAD,
        Kind::Job => &JOB,
        Kind::CronJob => &CRONJOB,
        Kind::Service => &SERVICE,
        Kind::ServiceAccount => &SERVICE_ACCOUNT,
        Kind::Namespace => &NAMESPACE,
        Kind::ConfigMap => &CONFIG_MAP,
        Kind::Secret => &SECRET,
        Kind::CustomResourceDefinition => &CRD,
        Kind::WebhookConfiguration => &WEBHOOK,
        Kind::AdmissionPolicy => &ADMISSION_POLICY,
        Kind::AdmissionPolicyBinding => &ADMISSION_POLICY_BINDING,
        Kind::Role => &ROLE,
        Kind::RoleBinding => &ROLE_BINDING,
        Kind::CoreEvent => &CORE_EVENT,
        Kind::Event => &EVENT,
    }
}

/// The schema of `metadata` alone: the base for custom resources.
pub fn object_meta_schema() -> &'static dyn MergeSchema {
    &GENERIC
}

/// A list's behaviour under apply and under strategic merge patch.
struct ListRule {
    apply: ListType,
    patch: ListType,
}

fn keyed(keys: &[&str]) -> ListType {
    ListType::Map(keys.iter().map(|k| k.to_string()).collect())
}

fn same(list: ListType) -> Option<ListRule> {
    Some(ListRule {
        apply: list.clone(),
        patch: list,
    })
}

const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// Where a path lands: inside an ObjectMeta, inside a PodSpec, or elsewhere;
/// with the path relative to that root.
enum Place<'a> {
    Meta(&'a [&'a str]),
    PodSpec(&'a [&'a str]),
    Top(&'a [&'a str]),
}

impl BuiltinSchema {
    fn meta_roots(&self) -> &'static [&'static [&'static str]] {
        match self.kind {
            Kind::Workload | Kind::Job => &[&["metadata"], &["spec", "template", "metadata"]],
            Kind::CronJob => &[
                &["metadata"],
                &["spec", "jobTemplate", "metadata"],
                &["spec", "jobTemplate", "spec", "template", "metadata"],
            ],
            _ => &[&["metadata"]],
        }
    }

    fn pod_spec_root(&self) -> Option<&'static [&'static str]> {
        match self.kind {
            Kind::Pod => Some(&["spec"]),
            Kind::Workload | Kind::Job => Some(&["spec", "template", "spec"]),
            Kind::CronJob => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
            _ => None,
        }
    }

    fn place<'a>(&self, path: &'a [&'a str]) -> Place<'a> {
        for root in self.meta_roots() {
            if let Some(rest) = strip(path, root) {
                return Place::Meta(rest);
            }
        }
        if let Some(root) = self.pod_spec_root() {
            if let Some(rest) = strip(path, root) {
                return Place::PodSpec(rest);
            }
        }
        Place::Top(path)
    }

    fn list_rule(&self, path: &[&str]) -> Option<ListRule> {
        match self.place(path) {
            Place::Meta(rel) => meta_list(rel),
            Place::PodSpec(rel) => pod_spec_list(rel),
            Place::Top(rel) => self.top_list(rel),
        }
    }

    fn top_list(&self, rel: &[&str]) -> Option<ListRule> {
        match (self.kind, rel) {
            (
                Kind::Pod
                | Kind::Workload
                | Kind::Service
                | Kind::Namespace
                | Kind::CustomResourceDefinition,
                ["status", "conditions"],
            ) => same(keyed(&["type"])),
            // JobStatus.Conditions: `+listType=atomic` but `patchMergeKey:"type"`.
            (Kind::Job, ["status", "conditions"]) => Some(ListRule {
                apply: ListType::Atomic,
                patch: keyed(&["type"]),
            }),
            (Kind::Pod, ["status", "podIPs" | "hostIPs"]) => same(keyed(&["ip"])),
            (Kind::Pod, ["status", "resourceClaimStatuses"]) => same(keyed(&["name"])),
            // ServiceSpec.Ports: listMapKey port+protocol, patchMergeKey port.
            (Kind::Service, ["spec", "ports"]) => Some(ListRule {
                apply: keyed(&["port", "protocol"]),
                patch: keyed(&["port"]),
            }),
            (Kind::ServiceAccount, ["secrets"]) => same(keyed(&["name"])),
            (Kind::WebhookConfiguration, ["webhooks"]) => same(keyed(&["name"])),
            (Kind::WebhookConfiguration, ["webhooks", "matchConditions"]) => same(keyed(&["name"])),
            (Kind::AdmissionPolicy, ["spec", "matchConditions"]) => same(keyed(&["name"])),
            (Kind::AdmissionPolicy, ["status", "conditions"]) => same(keyed(&["type"])),
            // ValidationActions: `+listType=set`, no patch strategy.
            (Kind::AdmissionPolicyBinding, ["spec", "validationActions"]) => Some(ListRule {
                apply: ListType::Set,
                patch: ListType::Atomic,
            }),
            _ => None,
        }
    }

    fn top_atomic_map(&self, rel: &[&str]) -> bool {
        matches!(
            (self.kind, rel),
            // LabelSelector is `+structType=atomic`.
            (Kind::Workload | Kind::Job, ["spec", "selector"])
                | (Kind::CronJob, ["spec", "jobTemplate", "spec", "selector"])
                // ServiceSpec.Selector is `+mapType=atomic`.
                | (Kind::Service, ["spec", "selector"])
                // ObjectReference and LocalObjectReference are `+structType=atomic`.
                | (Kind::ServiceAccount, ["secrets" | "imagePullSecrets"])
                | (Kind::RoleBinding, ["roleRef"])
                | (Kind::CoreEvent, ["involvedObject" | "related"])
                | (Kind::Event, ["regarding" | "related"])
                | (
                    Kind::AdmissionPolicy,
                    ["spec", "matchConstraints", "namespaceSelector" | "objectSelector"]
                )
                | (
                    Kind::AdmissionPolicyBinding,
                    ["spec", "matchResources", "namespaceSelector" | "objectSelector"]
                        | ["spec", "paramRef", "selector"]
                )
        )
    }

    fn top_open_map(&self, rel: &[&str]) -> bool {
        matches!(
            (self.kind, rel),
            (Kind::ConfigMap, ["data" | "binaryData"])
                | (Kind::Secret, ["data" | "stringData"])
                | (Kind::Service, ["spec", "selector"])
                | (
                    Kind::Workload | Kind::Job,
                    ["spec", "selector", "matchLabels"]
                )
        )
    }
}

fn strip<'a>(path: &'a [&'a str], root: &[&str]) -> Option<&'a [&'a str]> {
    if path.len() >= root.len() && path.iter().zip(root.iter()).all(|(a, b)| a == b) {
        path.get(root.len()..)
    } else {
        None
    }
}

/// ObjectMeta: ownerReferences by uid, finalizers as a set, managedFields atomic.
fn meta_list(rel: &[&str]) -> Option<ListRule> {
    match rel {
        ["ownerReferences"] => same(keyed(&["uid"])),
        ["finalizers"] => same(ListType::Set),
        ["managedFields"] => same(ListType::Atomic),
        _ => None,
    }
}

/// PodSpec and Container lists.
fn pod_spec_list(rel: &[&str]) -> Option<ListRule> {
    match rel {
        [c] if CONTAINER_LISTS.contains(c) => same(keyed(&["name"])),
        [c, "ports"] if CONTAINER_LISTS.contains(c) => Some(ListRule {
            apply: keyed(&["containerPort", "protocol"]),
            patch: keyed(&["containerPort"]),
        }),
        [c, "env"] if CONTAINER_LISTS.contains(c) => same(keyed(&["name"])),
        [c, "volumeMounts"] if CONTAINER_LISTS.contains(c) => same(keyed(&["mountPath"])),
        [c, "volumeDevices"] if CONTAINER_LISTS.contains(c) => same(keyed(&["devicePath"])),
        // ResourceRequirements.Claims: `+listType=map`, no patch strategy.
        [c, "resources", "claims"] if CONTAINER_LISTS.contains(c) => Some(ListRule {
            apply: keyed(&["name"]),
            patch: ListType::Atomic,
        }),
        ["volumes"] | ["imagePullSecrets"] | ["schedulingGates"] | ["resourceClaims"] => {
            same(keyed(&["name"]))
        }
        ["hostAliases"] => same(keyed(&["ip"])),
        ["topologySpreadConstraints"] => Some(ListRule {
            apply: keyed(&["topologyKey", "whenUnsatisfiable"]),
            patch: keyed(&["topologyKey"]),
        }),
        _ => None,
    }
}

impl MergeSchema for BuiltinSchema {
    fn list_type(&self, path: &[&str]) -> ListType {
        self.list_rule(path)
            .map(|r| r.apply)
            .unwrap_or(ListType::Atomic)
    }

    fn strategic_list_type(&self, path: &[&str]) -> ListType {
        self.list_rule(path)
            .map(|r| r.patch)
            .unwrap_or(ListType::Atomic)
    }

    fn map_is_atomic(&self, path: &[&str]) -> bool {
        match self.place(path) {
            // OwnerReference is `+structType=atomic`.
            Place::Meta(rel) => rel == ["ownerReferences"],
            // PodSpec.NodeSelector is `+mapType=atomic`, LocalObjectReference
            // `+structType=atomic`.
            Place::PodSpec(rel) => matches!(rel, ["nodeSelector"] | ["imagePullSecrets"]),
            Place::Top(rel) => self.top_atomic_map(rel),
        }
    }

    fn is_open_map(&self, path: &[&str]) -> bool {
        match self.place(path) {
            Place::Meta(rel) => matches!(rel, ["labels"] | ["annotations"]),
            Place::PodSpec(rel) => match rel {
                ["nodeSelector"] | ["overhead"] => true,
                [c, "resources", "limits" | "requests"] => CONTAINER_LISTS.contains(c),
                _ => false,
            },
            Place::Top(rel) => self.top_open_map(rel),
        }
    }

    fn list_key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        if key != "protocol" {
            return None;
        }
        let ports = match self.place(path) {
            Place::PodSpec([c, "ports"]) => CONTAINER_LISTS.contains(c),
            Place::Top(["spec", "ports"]) => self.kind == Kind::Service,
            _ => false,
        };
        ports.then(|| Value::String("TCP".to_string()))
    }
}
