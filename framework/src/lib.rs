//! kubeforge: a framework for writing Kubernetes operators in Rust.
//!
//! The crate is layered the way data flows through an operator:
//!
//! - [`client`]: configuration (kubeconfig, in-cluster), the HTTPS transport,
//!   typed and dynamic [`Api`]s, discovery and the [`Error`] type.
//! - [`scheme`] and [`crd`]: the registry of kinds and Rust types, and the
//!   CustomResourceDefinitions that `#[derive(CustomResource)]` produces.
//! - [`cache`]: reflectors, indexed stores and shared informers.
//! - [`workqueue`]: the deduplicating, delaying, rate-limited queue.
//! - [`reconcile`]: what a reconcile function uses: the cached client and
//!   its writes (which read their own writes), finalizers, owner
//!   references, conditions.
//! - [`sharding`]: a controller's replicas splitting its objects by
//!   slots of the uid hash, with member Leases and drained handoffs.
//! - [`controller`]: the reconcile loop: builder, sources, handlers,
//!   predicates, workers.
//! - [`events`]: the events.k8s.io recorder with client-go's series
//!   aggregation.
//! - [`manager`]: runs controllers with a shared cache, leader election,
//!   probes, metrics and graceful shutdown, in named groups of runnables.
//! - [`serve`]: the HTTP(S) server the probe and metrics endpoints (and
//!   webhooks) are served by, with one lifecycle.
//! - [`webhook`]: the HTTPS webhook server the manager runs: typed
//!   defaulters and validators, raw admission handlers, conversion at
//!   `/convert`, certificates reloaded from disk.
//! - [`rbac`]: the RBAC rules an operator needs, recorded from its
//!   controllers and rendered as kubebuilder's roles.
//! - `app` (feature `app`, default): the operator's standard command line,
//!   `run` and `manifests`.
//! - `testing` (feature `testing`): the in-process API server of the
//!   `kubeforge-apiserver` crate, with a [`Client`] for it.

#[cfg(feature = "app")]
pub mod app;
pub mod cache;
pub mod client;
pub mod controller;
pub mod crd;
pub mod events;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod ids;
pub mod manager;
pub mod prelude;
pub mod rbac;
pub mod reconcile;
pub mod scheme;
pub mod serve;
pub mod sharding;
#[cfg(feature = "testing")]
pub mod testing;
pub mod webhook;
pub mod workqueue;

pub use client::{Api, Client, Config, Discovery, Error};
pub use crd::CustomResource;
pub use kubeforge_macros::{CustomResource, JsonSchema};
pub use manager::Manager;
pub use scheme::Scheme;

/// Re-exported so generated code and users name one set of crates.
pub use k8s_openapi;
/// Re-exported so generated code and users name one set of crates.
pub use kube_core;
/// Re-exported so generated code and users name one set of crates.
pub use schemars;
/// Re-exported so generated code and users name one set of crates.
pub use serde;
/// Re-exported so generated code and users name one set of crates.
pub use serde_json;
