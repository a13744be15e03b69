//! The cache: reflectors that list and watch, indexed stores of `Arc<K>`, and
//! shared informers with their factory.
//!
//! Data flows one way: a [`Reflector`] turns list and watch responses into
//! [`Delta`]s and whole lists, runs the optional [`Transform`] on each
//! object, wraps it in an `Arc` and feeds it to a [`DeltaSink`]: an
//! [`InformerWriter`] (or a bare [`StoreWriter`]). The informer applies each
//! change to its [`Store`] and hands the resulting [`Event`] to every
//! handler, in order (client-go's `RealFIFO` semantics), each on its own
//! task. Readers use the [`Store`] or a typed [`Lister`]. Objects are shared:
//! the store and every handler hold the same `Arc<K>`.
//!
//! Most code asks a [`SharedInformerFactory`] for informers: it keeps one
//! per (type, namespace, selectors), starts their reflectors, and says per
//! informer whether it synced or why not ([`SyncError`], naming the
//! informer: a 403 is reported at once). [`SharedInformer::wait_for_resource_version`]
//! gives read-your-own-writes.
//!
//! ```no_run
//! use std::time::Duration;
//! use kubeforge::cache::{InformerOptions, SharedInformerFactory, strip_managed_fields};
//! use kubeforge::k8s_openapi::api::apps::v1::Deployment;
//! use kubeforge::k8s_openapi::api::core::v1::Pod;
//!
//! # async fn demo(client: kubeforge::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let factory = SharedInformerFactory::builder(client).namespace("shop").build();
//! let deployments = factory.informer_with::<Deployment>(
//!     InformerOptions::default().transform(strip_managed_fields()),
//! );
//! let pods = factory.metadata_informer::<Pod>(InformerOptions::default());
//! factory.start();
//! for (_, synced) in factory.wait_for_cache_sync(Duration::from_secs(120)).await {
//!     synced?; // e.g. `forbidden: cannot list deployments.apps in namespace "shop": ...`
//! }
//! let web = deployments.lister().namespace("shop").get("web");
//! # let _ = (web, pods);
//! # Ok(())
//! # }
//! ```

mod error;
mod event;
mod factory;
mod index;
mod informer;
mod key;
mod listener;
mod lister;
pub mod reflector;
mod shard;
mod sink;
mod status;
mod store;
pub mod transform;

pub use error::Error;
pub use event::{DeletedObject, Event, EventHandler, HandlerFns};
pub(crate) use factory::is_cluster_scoped;
pub use factory::{InformerOptions, SharedInformerFactory, SharedInformerFactoryBuilder};
pub use index::{IndexFn, NAMESPACE_INDEX};
pub use informer::{
    HandlerRegistration, InformerConfig, InformerWriter, SharedInformer,
    DEFAULT_BACKLOG_WARN_THRESHOLD, MIN_RESYNC_PERIOD,
};
pub use key::ObjectKey;
pub use lister::{Lister, NamespaceLister};
pub use reflector::{Backoff, Reflector, ReflectorConfig};
pub use shard::{slot_label_key, Holdings, Shard, ShardBy, Slots, SLOTS};
pub use sink::{Applied, Delta, DeltaSink, Replaced};
pub use status::{InformerId, ObjectForm, ReflectorStatus, SyncError};
pub use store::{Store, StoreWriter};
/// Stops reflectors and factories; re-exported so callers need no tokio-util.
pub use tokio_util::sync::CancellationToken;
pub use transform::{strip_managed_fields, Transform};
