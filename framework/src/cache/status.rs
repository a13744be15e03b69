//! What an informer knows about its source and how it names itself in
//! errors: [`InformerId`] (resource, scope, selectors), [`ReflectorStatus`]
//! (the last list or watch failure), [`SyncError`] (why a cache did not
//! sync), and the ordering of resourceVersions used for read-your-own-writes.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kube_core::Resource;

use super::shard::Shard;
use crate::client;

/// How an informer's objects are represented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectForm {
    /// A Rust type (`informer::<K>()`).
    Typed,
    /// `DynamicObject` described by an `ApiResource`.
    Dynamic,
    /// `PartialObjectMeta<K>`: metadata only.
    MetadataOnly,
}

/// The identity of an informer, as a factory shares them and as errors name
/// them: the resource, how objects are held, the namespace and the
/// selectors.
///
/// Displays the way kube-apiserver's authorization errors name what was
/// listed: `configmaps in namespace "team-a"`, `deployments.apps at the
/// cluster scope with label selector "app=web"`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InformerId {
    /// The API group, empty for the core group.
    pub group: String,
    /// The API version, e.g. `v1`.
    pub version: String,
    /// The kind, e.g. `ConfigMap`.
    pub kind: String,
    /// The resource plural, e.g. `configmaps` (or, for an informer built by
    /// hand, the name it was given).
    pub plural: String,
    /// How objects are held.
    pub form: ObjectForm,
    /// The namespace watched; `None` for every namespace or a cluster-scoped
    /// resource.
    pub namespace: Option<String>,
    /// The label selector, if any.
    pub label_selector: Option<String>,
    /// The field selector, if any.
    pub field_selector: Option<String>,
    /// The shard held, if any.
    pub shard: Option<Shard>,
    /// The sharding ring whose holdings the informer follows, if any.
    pub ring: Option<String>,
}

impl InformerId {
    /// The identity of an informer built by hand, known only by `name`.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            group: String::new(),
            version: String::new(),
            kind: String::new(),
            plural: name.into(),
            form: ObjectForm::Typed,
            namespace: None,
            label_selector: None,
            field_selector: None,
            shard: None,
            ring: None,
        }
    }

    /// The identity of an informer of `K` (typed, dynamic or metadata-only
    /// alike: the resource names come from `K`), watching everything.
    pub fn of<K: Resource>(dyntype: &K::DynamicType, form: ObjectForm) -> Self {
        Self {
            group: K::group(dyntype).into_owned(),
            version: K::version(dyntype).into_owned(),
            kind: K::kind(dyntype).into_owned(),
            plural: K::plural(dyntype).into_owned(),
            form,
            namespace: None,
            label_selector: None,
            field_selector: None,
            shard: None,
            ring: None,
        }
    }

    /// The resource as kubectl names it: `configmaps`, `deployments.apps`.
    pub fn resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

impl fmt::Display for InformerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.resource())?;
        if self.form == ObjectForm::MetadataOnly {
            f.write_str(" (metadata only)")?;
        }
        match &self.namespace {
            Some(ns) => write!(f, " in namespace {ns:?}")?,
            None => f.write_str(" at the cluster scope")?,
        }
        if let Some(l) = &self.label_selector {
            write!(f, " with label selector {l:?}")?;
        }
        if let Some(s) = &self.field_selector {
            let joint = if self.label_selector.is_some() {
                " and"
            } else {
                " with"
            };
            write!(f, "{joint} field selector {s:?}")?;
        }
        if let Some(shard) = &self.shard {
            write!(f, " in shard {:?}", shard.selector())?;
        }
        if let Some(ring) = &self.ring {
            write!(f, " following the holdings of ring {ring:?}")?;
        }
        Ok(())
    }
}

/// What the reflector feeding an informer last reported.
#[derive(Clone, Debug, Default)]
pub struct ReflectorStatus {
    /// A reflector is running for the informer.
    pub running: bool,
    /// The last list or watch failure since the last success.
    pub last_error: Option<Arc<client::Error>>,
    /// Failures in a row since the last success.
    pub consecutive_failures: u32,
}

impl ReflectorStatus {
    /// Whether the last failure was the server refusing access (403 or
    /// 401): retrying will not help until permissions or credentials change.
    pub fn is_denied(&self) -> bool {
        self.last_error
            .as_deref()
            .is_some_and(|e| e.is_forbidden() || e.is_unauthorized())
    }
}

/// Why an informer's cache did not sync. Names the informer (resource,
/// namespace, selectors) and carries the reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SyncError {
    /// The server answered 403: the credentials may not list or watch the
    /// resource (RBAC). Reported as soon as it happens, not at the timeout.
    #[error("forbidden: cannot list {informer}: {message}")]
    Forbidden {
        /// The informer.
        informer: InformerId,
        /// The server's message.
        message: String,
    },
    /// The server answered 401: the credentials were not accepted.
    #[error("unauthorized: cannot list {informer}: {message}")]
    Unauthorized {
        /// The informer.
        informer: InformerId,
        /// The server's message.
        message: String,
    },
    /// The cache did not sync in time.
    #[error("{informer} did not sync within {waited:?}{}", last_error_suffix(.last_error))]
    Timeout {
        /// The informer.
        informer: InformerId,
        /// How long was waited.
        waited: Duration,
        /// The last list or watch failure seen, if any.
        last_error: Option<String>,
    },
    /// No reflector was ever started for the informer.
    #[error("{informer} was never started: call SharedInformerFactory::start")]
    NotStarted {
        /// The informer.
        informer: InformerId,
    },
    /// The informer was shut down before it synced.
    #[error("{informer} was shut down before it synced")]
    Stopped {
        /// The informer.
        informer: InformerId,
    },
}

fn last_error_suffix(last: &Option<String>) -> String {
    match last {
        Some(e) => format!("; last error: {e}"),
        None => String::new(),
    }
}

impl SyncError {
    /// The informer that did not sync.
    pub fn informer(&self) -> &InformerId {
        match self {
            SyncError::Forbidden { informer, .. }
            | SyncError::Unauthorized { informer, .. }
            | SyncError::Timeout { informer, .. }
            | SyncError::NotStarted { informer }
            | SyncError::Stopped { informer } => informer,
        }
    }

    /// The error for a reflector that was refused access, if it was.
    pub(crate) fn denied(informer: &InformerId, status: &ReflectorStatus) -> Option<Self> {
        let err = status.last_error.as_deref()?;
        let message = err
            .status()
            .map(|s| s.message.clone())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| err.to_string());
        if err.is_forbidden() {
            Some(SyncError::Forbidden {
                informer: informer.clone(),
                message,
            })
        } else if err.is_unauthorized() {
            Some(SyncError::Unauthorized {
                informer: informer.clone(),
                message,
            })
        } else {
            None
        }
    }
}

/// The newest resourceVersion an informer has seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SeenVersion {
    /// A resourceVersion that parses as `u64` (kube-apiserver's etcd
    /// revisions all do).
    Numeric(u64),
    /// Anything else: comparable for equality only.
    Opaque(String),
}

impl SeenVersion {
    pub(crate) fn parse(rv: &str) -> Self {
        match rv.parse::<u64>() {
            Ok(n) => Self::Numeric(n),
            Err(_) => Self::Opaque(rv.to_owned()),
        }
    }

    /// Whether having seen `self` means `wanted` has been seen too.
    ///
    /// resourceVersions are opaque by contract, but kube-apiserver's are etcd
    /// revisions: integers that grow with every write across the cluster.
    /// When both parse as `u64` they are compared as numbers; otherwise only
    /// an exact match counts.
    pub(crate) fn covers(&self, wanted: &SeenVersion) -> bool {
        match (self, wanted) {
            (Self::Numeric(seen), Self::Numeric(wanted)) => seen >= wanted,
            (a, b) => a == b,
        }
    }

    pub(crate) fn as_string(&self) -> String {
        match self {
            Self::Numeric(n) => n.to_string(),
            Self::Opaque(s) => s.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn ids_display_like_authorization_errors() {
        let mut id = InformerId::of::<ConfigMap>(&(), ObjectForm::Typed);
        id.namespace = Some("team-a".into());
        assert_eq!(id.to_string(), r#"configmaps in namespace "team-a""#);
        let mut id = InformerId::of::<Deployment>(&(), ObjectForm::MetadataOnly);
        id.label_selector = Some("app=web".into());
        id.field_selector = Some("metadata.name=x".into());
        assert_eq!(
            id.to_string(),
            r#"deployments.apps (metadata only) at the cluster scope with label selector "app=web" and field selector "metadata.name=x""#
        );
    }

    #[test]
    fn resource_versions_compare_as_numbers_when_both_parse() {
        let seen = SeenVersion::parse("120");
        assert!(seen.covers(&SeenVersion::parse("99")));
        assert!(seen.covers(&SeenVersion::parse("120")));
        assert!(!seen.covers(&SeenVersion::parse("121")));
        let opaque = SeenVersion::parse("abc");
        assert!(opaque.covers(&SeenVersion::parse("abc")));
        assert!(!opaque.covers(&SeenVersion::parse("12")));
        assert!(!seen.covers(&SeenVersion::parse("abc")));
    }
}
