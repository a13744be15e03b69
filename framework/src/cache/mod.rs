//! The cache: reflectors that list and watch, indexed stores of `Arc<K>`, and
//! shared informers with their factory.
//!
//! Data flows one way: a reflector turns list and watch responses into
//! [`Delta`]s and whole lists, runs the optional [`Transform`] on each
//! object, wraps it in an `Arc` and feeds it to a [`DeltaSink`]: an
//! [`InformerWriter`] (or a bare [`StoreWriter`]). The informer applies each
//! change to its [`Store`] and hands the resulting [`Event`] to every
//! handler, in order (client-go's `RealFIFO` semantics), each on its own
//! task. Readers use the [`Store`] or a typed [`Lister`]. Objects are shared:
//! the store and every handler hold the same `Arc<K>`.

mod error;
mod event;
mod factory;
mod index;
mod informer;
mod key;
mod listener;
mod lister;
pub mod reflector;
mod sink;
mod status;
mod store;
pub mod transform;

pub use error::Error;
pub use event::{DeletedObject, Event, EventHandler, HandlerFns};
pub use factory::{InformerOptions, SharedInformerFactory, SharedInformerFactoryBuilder};
pub use index::{IndexFn, NAMESPACE_INDEX};
pub use informer::{
    HandlerRegistration, InformerConfig, InformerWriter, SharedInformer,
    DEFAULT_BACKLOG_WARN_THRESHOLD, MIN_RESYNC_PERIOD,
};
pub use key::ObjectKey;
pub use lister::{Lister, NamespaceLister};
pub use reflector::{Backoff, Reflector, ReflectorConfig};
pub use sink::{Applied, Delta, DeltaSink, Replaced};
pub use status::{InformerId, ObjectForm, ReflectorStatus, SyncError};
pub use store::{Store, StoreWriter};
/// Stops reflectors and factories; re-exported so callers need no tokio-util.
pub use tokio_util::sync::CancellationToken;
pub use transform::{strip_managed_fields, Transform};
