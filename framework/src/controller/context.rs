//! [`Context`]: what every reconcile of a controller is handed besides the
//! object: the user's own data, the cached client, an event recorder and
//! the controller's name.

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::sync::Arc;

use crate::events::Recorder;
use crate::reconcile::finalizer::{Event, FinalizerError, Outcome};
use crate::reconcile::{CachedClient, CachedObject};

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

    /// The finalizer flow of [`CachedClient::finalizer`], handing
    /// `reconcile` the event and its own `Arc` of this context, so an
    /// `async move` block owns what it needs and borrows nothing from the
    /// caller. The finalizer is written with a patch of the primary
    /// object: declare it on the builder with
    /// [`uses_finalizers`](crate::controller::ControllerBuilder::uses_finalizers)
    /// so the derived RBAC grants it.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use kubeforge::controller::{Action, Context, Error};
    /// use kubeforge::reconcile::finalizer::Event as FinalizerEvent;
    /// use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// struct Settings;
    ///
    /// async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Context<Settings>>) -> Result<Action, Error> {
    ///     let outcome = ctx
    ///         .finalizer("example.com/cleanup", cm, |event, ctx| async move {
    ///             match event {
    ///                 FinalizerEvent::Apply(cm) => apply(&cm, &ctx).await,
    ///                 FinalizerEvent::Cleanup(cm) => cleanup(&cm, &ctx).await,
    ///             }
    ///         })
    ///         .await?;
    ///     Ok(outcome.into())
    /// }
    ///
    /// async fn apply(cm: &ConfigMap, ctx: &Context<Settings>) -> Result<Action, Error> {
    ///     # let _ = (cm, ctx);
    ///     Ok(Action::done())
    /// }
    ///
    /// async fn cleanup(cm: &ConfigMap, ctx: &Context<Settings>) -> Result<Action, Error> {
    ///     # let _ = (cm, ctx);
    ///     Ok(Action::done())
    /// }
    /// ```
    ///
    /// With `ctx.client().finalizer(...)` the closure borrows `ctx` while
    /// `ctx` is borrowed for the call, so an `async move` block cannot take
    /// it; this method clones the `Arc` instead (one reference count).
    pub async fn finalizer<K, F, Fut, R, E>(
        self: &Arc<Self>,
        name: &str,
        obj: Arc<K>,
        reconcile: F,
    ) -> Result<Outcome<R>, FinalizerError<E>>
    where
        K: CachedObject,
        F: FnOnce(Event<K>, Arc<Self>) -> Fut,
        Fut: Future<Output = Result<R, E>>,
        E: StdError + 'static,
    {
        let ctx = Arc::clone(self);
        self.client
            .finalizer(name, obj, move |event| reconcile(event, ctx))
            .await
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
