//! [`Webhooks`]: what the webhook server answers, path by path. Typed
//! defaulters and validators are registered for a kind at kubebuilder's
//! default paths (or custom ones), raw handlers at a path with the rules a
//! configuration should match them by, hub-and-spoke converters for
//! `/convert`. Each admission registration also records what its entry in
//! a Mutating/ValidatingWebhookConfiguration is (name, rules), so the
//! configurations are generated from the code, for manifests and tests.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::api::admissionregistration::v1::RuleWithOperations;
use kube_core::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::admission::{AdmissionHandler, Defaulter, Defaulting, Operation, Validating, Validator};
use super::conversion::Conversions;
use super::paths;
use crate::crd::conversion::{Converter, Hub};

/// Whether an admission webhook may change objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WebhookType {
    /// A mutating webhook (MutatingWebhookConfiguration).
    Mutating,
    /// A validating webhook (ValidatingWebhookConfiguration).
    Validating,
}

/// How a registered admission webhook appears in its configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct WebhookEntry {
    /// The webhook's name, e.g. `mcronjob-v1.kb.io`.
    pub name: String,
    /// The path it is served at.
    pub path: String,
    /// Mutating or validating.
    pub webhook_type: WebhookType,
    /// What it is called for.
    pub rules: Vec<RuleWithOperations>,
    /// `Fail` (the default) or `Ignore`.
    pub failure_policy: String,
    /// `matchPolicy`, when set; `None` renders none, which the API server
    /// defaults to [`MatchPolicy::Equivalent`] (as controller-gen leaves it
    /// out when the marker does not set it).
    pub match_policy: Option<MatchPolicy>,
}

/// admissionregistration/v1's `matchPolicy`: whether a webhook whose rules
/// name one version of a resource is also called for requests made at its
/// other versions (the object converted to the version the rules name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MatchPolicy {
    /// Only requests that match a rule exactly.
    Exact,
    /// Also requests for the same resource at another version (or an
    /// equivalent resource in another group), converted to the version a
    /// rule names. The API server's default.
    #[default]
    Equivalent,
}

impl MatchPolicy {
    /// The value in a webhook configuration: `Exact` or `Equivalent`.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchPolicy::Exact => "Exact",
            MatchPolicy::Equivalent => "Equivalent",
        }
    }
}

impl std::fmt::Display for MatchPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Settings of one typed registration; every one has kubebuilder's default.
#[derive(Clone, Debug, Default)]
pub struct WebhookOptions {
    path: Option<String>,
    name: Option<String>,
    operations: Option<Vec<Operation>>,
    failure_policy: Option<String>,
    match_policy: Option<MatchPolicy>,
}

impl WebhookOptions {
    /// Serve at `path` instead of the default `/mutate-...`/`/validate-...`
    /// (controller-runtime's `WithDefaulterCustomPath`).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// The webhook's name in its configuration instead of
    /// `m<kind>-<version>.kb.io`/`v<kind>-<version>.kb.io`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The operations the configuration calls it for (default CREATE and
    /// UPDATE, as kubebuilder's markers; add DELETE for a validator whose
    /// `validate_delete` matters).
    pub fn operations(mut self, operations: impl IntoIterator<Item = Operation>) -> Self {
        self.operations = Some(operations.into_iter().collect());
        self
    }

    /// `Fail` (default) or `Ignore` when the webhook cannot be called.
    pub fn failure_policy(mut self, policy: impl Into<String>) -> Self {
        self.failure_policy = Some(policy.into());
        self
    }

    /// The configuration's `matchPolicy` (kubebuilder's `matchPolicy`
    /// marker). Unset, none is rendered and the API server applies
    /// [`MatchPolicy::Equivalent`]: a webhook for one version of a
    /// multi-version kind is then also called for requests at the others,
    /// with the object converted to its version, so a conversion that fails
    /// fails those requests. [`MatchPolicy::Exact`] keeps each version's
    /// webhooks to their own version.
    pub fn match_policy(mut self, policy: MatchPolicy) -> Self {
        self.match_policy = Some(policy);
        self
    }
}

struct Route {
    handler: Arc<dyn AdmissionHandler>,
    entry: Option<WebhookEntry>,
}

#[derive(Default)]
struct Routes {
    admission: BTreeMap<String, Route>,
    conversions: Conversions,
    conversion_crds: Vec<String>,
}

/// The webhooks a manager serves. Cheap to clone (shared); register before
/// the manager runs (later registrations are served too).
#[derive(Clone, Default)]
pub struct Webhooks {
    routes: Arc<RwLock<Routes>>,
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let routes = self.read();
        f.debug_struct("Webhooks")
            .field("admission", &routes.admission.keys().collect::<Vec<_>>())
            .field("conversion_crds", &routes.conversion_crds)
            .finish()
    }
}

impl Webhooks {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves `defaulter` for kind `K` at `/mutate-<group>-<version>-<kind>`.
    pub fn defaulter<K, D>(&self, defaulter: D) -> &Self
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static,
        D: Defaulter<K>,
    {
        self.defaulter_with::<K, D>(defaulter, WebhookOptions::default())
    }

    /// [`defaulter`](Self::defaulter) with other settings.
    pub fn defaulter_with<K, D>(&self, defaulter: D, options: WebhookOptions) -> &Self
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static,
        D: Defaulter<K>,
    {
        let entry = typed_entry::<K>(WebhookType::Mutating, options);
        self.insert(
            entry.path.clone(),
            Arc::new(Defaulting::new(defaulter)),
            Some(entry),
        );
        self
    }

    /// Serves `validator` for kind `K` at `/validate-<group>-<version>-<kind>`.
    pub fn validator<K, V>(&self, validator: V) -> &Self
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
        V: Validator<K>,
    {
        self.validator_with::<K, V>(validator, WebhookOptions::default())
    }

    /// [`validator`](Self::validator) with other settings.
    pub fn validator_with<K, V>(&self, validator: V, options: WebhookOptions) -> &Self
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
        V: Validator<K>,
    {
        let entry = typed_entry::<K>(WebhookType::Validating, options);
        self.insert(
            entry.path.clone(),
            Arc::new(Validating::new(validator)),
            Some(entry),
        );
        self
    }

    /// Serves a raw admission handler at `path`, for kinds the operator
    /// does not own; `entry` (with `path` in it) puts it in the generated
    /// configurations, `None` leaves it out of them.
    pub fn handler(
        &self,
        path: impl Into<String>,
        handler: impl AdmissionHandler,
        entry: Option<WebhookEntry>,
    ) -> &Self {
        self.insert(path.into(), Arc::new(handler), entry);
        self
    }

    /// Serves conversions of `H`'s kind at `/convert`, and marks its CRD as
    /// converted by webhook in the generated manifests.
    pub fn converter<H: Hub>(&self, converter: Converter<H>) -> &Self {
        let mut routes = self.write();
        let crd = H::DESCRIPTOR.crd_name();
        if !routes.conversion_crds.contains(&crd) {
            routes.conversion_crds.push(crd);
        }
        routes.conversions.add(converter);
        self
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        let routes = self.read();
        routes.admission.is_empty() && routes.conversions.is_empty()
    }

    /// The configuration entries of the admission webhooks, by path.
    pub fn entries(&self) -> Vec<WebhookEntry> {
        self.read()
            .admission
            .values()
            .filter_map(|route| route.entry.clone())
            .collect()
    }

    /// The names of the CRDs converted by `/convert`.
    pub fn conversion_crds(&self) -> Vec<String> {
        self.read().conversion_crds.clone()
    }

    /// The admission handler at `path`.
    pub(crate) fn admission_handler(&self, path: &str) -> Option<Arc<dyn AdmissionHandler>> {
        self.read()
            .admission
            .get(path)
            .map(|route| Arc::clone(&route.handler))
    }

    /// The conversions, when any kind is registered.
    pub(crate) fn conversions(&self) -> Option<Conversions> {
        let routes = self.read();
        (!routes.conversions.is_empty()).then(|| routes.conversions.clone())
    }

    fn insert(
        &self,
        path: String,
        handler: Arc<dyn AdmissionHandler>,
        entry: Option<WebhookEntry>,
    ) {
        if let Some(previous) = self
            .write()
            .admission
            .insert(path.clone(), Route { handler, entry })
        {
            let _ = previous;
            tracing::warn!(%path, "a webhook was registered twice at one path: the last one is served");
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Routes> {
        self.routes.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Routes> {
        self.routes.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// The configuration entry of a typed webhook for `K`.
fn typed_entry<K: Resource<DynamicType = ()>>(
    webhook_type: WebhookType,
    options: WebhookOptions,
) -> WebhookEntry {
    let (group, version, kind, plural) =
        (K::group(&()), K::version(&()), K::kind(&()), K::plural(&()));
    let path = options
        .path
        .unwrap_or_else(|| paths::default_path(webhook_type, &group, &version, &kind));
    let name = options
        .name
        .unwrap_or_else(|| paths::default_name(webhook_type, &version, &kind));
    let operations = options
        .operations
        .unwrap_or_else(|| vec![Operation::Create, Operation::Update]);
    WebhookEntry {
        name,
        path,
        webhook_type,
        rules: vec![RuleWithOperations {
            api_groups: Some(vec![group.into_owned()]),
            api_versions: Some(vec![version.into_owned()]),
            operations: Some(operations.iter().map(|o| o.as_str().to_owned()).collect()),
            resources: Some(vec![plural.into_owned()]),
            scope: None,
        }],
        failure_policy: options.failure_policy.unwrap_or_else(|| "Fail".into()),
        match_policy: options.match_policy,
    }
}
