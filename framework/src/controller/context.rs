//! [`Context`]: what every reconcile of a controller is handed besides the
//! object: the user's own data, the cached client, an event recorder and
//! the controller's name.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use super::{CachedClient, Recorder};

/// Shared by every reconcile of one controller, as `Arc<Context<T>>`.
/// Dereferences to the user's `T`, so `ctx.field` reads the user's data.
///
/// ```no_run
/// use std::sync::Arc;
/// use kubeforge::controller::{Action, Context};
/// use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
///
/// struct Settings { greeting: String }
///
/// async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Context<Settings>>) -> Result<Action, kubeforge::controller::Error> {
///     tracing::info!(controller = ctx.name(), greeting = %ctx.greeting, "reconciling");
///     let _same = ctx.client().get::<ConfigMap>("default", "settings").await?;
///     Ok(Action::done())
/// }
/// ```
pub struct Context<T> {
    data: T,
    client: CachedClient,
    recorder: Recorder,
    name: Arc<str>,
}

impl<T> Context<T> {
    /// A context for the controller `name`. Controllers build their own;
    /// this is for calling a reconcile function directly (in unit tests).
    pub fn new(
        data: T,
        client: CachedClient,
        recorder: Recorder,
        name: impl Into<Arc<str>>,
    ) -> Self {
        Self {
            data,
            client,
            recorder,
            name: name.into(),
        }
    }

    /// The cached client: reads from the shared cache, writes to the API
    /// server, reads its own writes.
    pub fn client(&self) -> &CachedClient {
        &self.client
    }

    /// An event recorder reporting as this controller.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// The controller's name (its metrics label and workqueue name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The user's data (also reachable through `Deref`).
    pub fn data(&self) -> &T {
        &self.data
    }
}

impl<T> Deref for Context<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.data
    }
}

impl<T: fmt::Debug> fmt::Debug for Context<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("name", &self.name)
            .field("data", &self.data)
            .finish_non_exhaustive()
    }
}

/// The default `reportingInstance` of a controller's events: the host name
/// (the pod name in a cluster), as client-go's recorders use.
pub(crate) fn reporting_instance() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .into_iter()
        .chain(std::env::var("HOSTNAME").ok())
        .map(|s| s.trim().to_owned())
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}
