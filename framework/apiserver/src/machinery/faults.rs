//! Fault rules: which requests fail, with what, and how much latency every
//! request gets. The [`Faults`](crate::Faults) handle that tests hold sets
//! them; the request handlers consult them first.

use std::sync::Mutex;
use std::time::Duration;

use crate::machinery::status::ApiError;

/// Which requests a rule applies to; `None` matches anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestMatch {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`.
    pub verb: Option<String>,
    /// The resource plural, e.g. `configmaps`, or with a subresource,
    /// `deployments/status`.
    pub resource: Option<String>,
}

impl RequestMatch {
    /// Every resource request.
    pub fn any() -> Self {
        Self::default()
    }

    /// Requests with this verb.
    pub fn verb(verb: impl Into<String>) -> Self {
        Self {
            verb: Some(verb.into()),
            resource: None,
        }
    }

    /// Narrows to one resource (plural, optionally `plural/subresource`).
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    fn matches(&self, verb: &str, resource: &str) -> bool {
        self.verb.as_deref().is_none_or(|v| v == verb)
            && self.resource.as_deref().is_none_or(|r| r == resource)
    }
}

/// The status an injected failure answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// 410 `Expired` (a watch gets it as an `ERROR` event, like a compacted
    /// resourceVersion).
    Expired,
    /// 429 `TooManyRequests` with `Retry-After`.
    TooManyRequests {
        /// Seconds in `Retry-After` and `details.retryAfterSeconds`.
        retry_after_seconds: u32,
    },
    /// 500 `InternalError`.
    InternalError,
    /// 503 `ServiceUnavailable` with `Retry-After`.
    ServiceUnavailable {
        /// Seconds in `Retry-After`.
        retry_after_seconds: u32,
    },
    /// 403 `Forbidden`, worded as kube-apiserver's RBAC authorizer denies a
    /// request (the server has no RBAC of its own, so this is how a runtime
    /// sees missing permissions).
    Forbidden,
}

impl Failure {
    /// The error answered to `verb` on `resource` (as in the URL, with any
    /// subresource) of `group`, in `namespace` if any.
    pub(crate) fn to_error(
        self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> ApiError {
        match self {
            Self::Forbidden => {
                // k8s.io/apiserver pkg/endpoints/handlers/responsewriters: forbiddenMessage.
                let scope = match namespace {
                    Some(ns) => format!(" in the namespace \"{ns}\""),
                    None => " at the cluster scope".to_owned(),
                };
                ApiError::forbidden(format!(
                    "{resource} is forbidden: User \"system:serviceaccount:default:injected\" cannot {verb} resource \"{resource}\" in API group \"{group}\"{scope}"
                ))
            }
            Self::Expired => ApiError::expired("too old resource version: injected fault"),
            Self::TooManyRequests {
                retry_after_seconds,
            } => {
                let mut e = ApiError::new(
                    429,
                    "TooManyRequests",
                    "Too many requests, please try again later.",
                );
                e.retry_after = Some(retry_after_seconds);
                e
            }
            Self::InternalError => ApiError::internal("Internal error occurred: injected fault"),
            Self::ServiceUnavailable {
                retry_after_seconds,
            } => {
                let mut e = ApiError::new(
                    503,
                    "ServiceUnavailable",
                    "the server is currently unable to handle the request",
                );
                e.retry_after = Some(retry_after_seconds);
                e
            }
        }
    }
}

#[derive(Debug)]
struct Rule {
    matcher: RequestMatch,
    remaining: usize,
    failure: Failure,
}

/// Fault rules, kept in the server.
#[derive(Debug, Default)]
pub(crate) struct FaultRules {
    rules: Mutex<Vec<Rule>>,
    latency: Mutex<Option<Duration>>,
}

impl FaultRules {
    pub fn add(&self, n: usize, matcher: RequestMatch, failure: Failure) {
        if n == 0 {
            return;
        }
        self.rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Rule {
                matcher,
                remaining: n,
                failure,
            });
    }

    pub fn set_latency(&self, d: Option<Duration>) {
        *self.latency.lock().unwrap_or_else(|e| e.into_inner()) = d;
    }

    pub fn latency(&self) -> Option<Duration> {
        *self.latency.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Consumes one matching rule, if any.
    pub fn take(&self, verb: &str, resource: &str) -> Option<Failure> {
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        let i = rules
            .iter()
            .position(|r| r.matcher.matches(verb, resource))?;
        let rule = rules.get_mut(i)?;
        rule.remaining -= 1;
        let failure = rule.failure;
        if rule.remaining == 0 {
            rules.remove(i);
        }
        Some(failure)
    }

    pub fn clear(&self) {
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.set_latency(None);
    }
}
