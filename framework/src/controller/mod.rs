//! The controller loop: informers feed a workqueue through predicates and
//! handlers, and workers run the reconcile function (controller-runtime's
//! `builder`, `controller`, `source`, `handler` and `predicate` packages).
//! What a reconcile function uses while it runs (the cached client and its
//! writes, finalizers, owner references, conditions) is apart, in
//! [`crate::reconcile`]; the event recorder is in [`crate::events`].
//!
//! - [`ControllerBuilder`]: the primary type, owned and mapped watches,
//!   predicates, concurrency, rate limiter, timeouts; ends with
//!   `.reconcile(fn, data)`.
//! - [`Controller`]: runs the workers; level-triggered, one worker per key
//!   at a time, results handled as controller-runtime does ([`Action`],
//!   [`TerminalError`]), panics caught, metrics under controller-runtime's
//!   names ([`ControllerMetrics`]).
//! - [`Context`]: what each reconcile gets besides the object: the user's
//!   data, the cached client ([`crate::reconcile::CachedClient`]), an event
//!   recorder ([`crate::events::Recorder`]), the controller's name.
//! - [`source`]: where events come from: informers, and [`Channel`]s of
//!   events from outside the cluster.
//! - [`predicate`]: which watch events enqueue a reconcile; [`filter`]:
//!   the controller-wide ones.
//!
//! ```no_run
//! use std::sync::Arc;
//! use kubeforge::cache::SharedInformerFactory;
//! use kubeforge::controller::{Action, Context, Controller};
//! use kubeforge::controller::predicate::GenerationChanged;
//! use kubeforge::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//! use kubeforge::manager::CancellationToken;
//! use kubeforge::reconcile::CachedClient;
//!
//! async fn reconcile(d: Arc<Deployment>, ctx: Arc<Context<()>>) -> Result<Action, kubeforge::controller::Error> {
//!     let ns = d.metadata.namespace.as_deref().unwrap_or_default();
//!     let owned = ctx.client().list::<ReplicaSet>(ns, &Default::default()).await?;
//!     tracing::info!(replica_sets = owned.len(), "reconciled");
//!     Ok(Action::done())
//! }
//!
//! # async fn demo(client: kubeforge::Client) -> Result<(), kubeforge::controller::Error> {
//! let factory = SharedInformerFactory::new(client.clone());
//! let controller = Controller::<Deployment>::builder(CachedClient::new(client, factory))
//!     .for_predicate(GenerationChanged)
//!     .owns::<ReplicaSet>()
//!     .reconcile(reconcile, ());
//! controller.run(CancellationToken::new()).await
//! # }
//! ```
//!
//! The loop returns the reconcile layer's [`Error`], re-exported here with
//! [`TerminalError`] and [`is_terminal`], which decide what the loop does
//! with a failed reconcile.

mod action;
mod builder;
mod context;
pub mod filter;
mod handler;
mod metrics;
pub mod predicate;
mod reconciler;
mod runner;
pub mod source;

pub use action::Action;
pub use builder::{ControllerBuilder, Owns, Standalone, Watch, DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT};
pub use context::Context;
pub use metrics::{ControllerLabels, ControllerMetrics, ResultLabels};
pub use predicate::{Predicate, PredicateExt};
pub use runner::Controller;
pub use source::Channel;

pub use crate::reconcile::{is_terminal, Error, TerminalError, DEFAULT_CACHE_SYNC_TIMEOUT};

pub(crate) use builder::target::{ControllerDefaults, Target};
