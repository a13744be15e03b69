//! The sharder of a ring that shards by label: it gives each object of the
//! ring's kinds the label [`slot_label_key`](crate::cache::slot_label_key)
//! valued with the object's slot, so every replica can watch its slots
//! with a label selector.
//!
//! A slot is the uid hash's (as KEP-5866 hashes it), or for an owned
//! object its owner's uid hash, read from its owner reference: children
//! land in their owner's slot, and the replica holding an owner sees its
//! children (timebertt's kubernetes-controller-sharding labels controlled
//! objects after their controller the same way, `pkg/sharding/key/key.go`).
//! A slot never changes, so an object is labelled once; moves between
//! replicas change selectors, never labels.
//!
//! Each replica labels the unlabelled objects of the slots it holds, seen
//! through a metadata-only watch of the objects without the label (empty
//! once everything is labelled), and looks again at the ones it left each
//! time its slots change. The label is written with a JSON merge patch of
//! the labels alone.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::params::{Patch, PatchParams};
use kube_core::{PartialObjectMeta, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::gate::ShardGate;
use crate::cache::{HandlerFns, InformerOptions, SharedInformer, SharedInformerFactory, Slots};
use crate::client::Client;

/// What a labelled kind must be: any `k8s-openapi` or custom resource type.
pub(crate) trait Labelled:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static
{
}

impl<O> Labelled for O where
    O: Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static
{
}

/// The slot an object's metadata puts it in, if any (an owned object
/// without an owner of the controller's kind has none).
pub(crate) type SlotOf = Arc<dyn Fn(&ObjectMeta) -> Option<u32> + Send + Sync>;

/// The slot of a primary object: its uid's.
pub(crate) fn slot_of_uid() -> SlotOf {
    Arc::new(|meta: &ObjectMeta| meta.uid.as_deref().map(Slots::slot_of_uid))
}

/// How often the objects still unlabelled are looked at again.
const RETRY_EVERY: Duration = Duration::from_secs(10);

/// The field manager of the label's patches.
const FIELD_MANAGER: &str = "kubeforge-sharder";

/// Labels the objects of one kind `O` for one ring.
pub(crate) struct Labeller<O: Labelled> {
    unlabelled: SharedInformer<PartialObjectMeta<O>>,
    client: Client,
    key: Arc<str>,
    gate: ShardGate,
    slot_of: SlotOf,
}

impl<O: Labelled> Labeller<O> {
    /// A labeller of `O` under `key`, watching the unlabelled objects
    /// through `factory` (registered now, started with the factory).
    pub(crate) fn new(
        factory: &SharedInformerFactory,
        client: Client,
        key: &str,
        gate: ShardGate,
        slot_of: SlotOf,
    ) -> Self {
        let unlabelled =
            factory.metadata_informer::<O>(InformerOptions::default().labels(format!("!{key}")));
        Self {
            unlabelled,
            client,
            key: key.into(),
            gate,
            slot_of,
        }
    }

    /// Labels until `stop` fires.
    pub(crate) async fn run(self, stop: CancellationToken) {
        let (seen, mut arrivals) = mpsc::unbounded_channel();
        let updated = seen.clone();
        let handler = HandlerFns::<PartialObjectMeta<O>>::new()
            .on_add(move |obj, _| drop(seen.send(obj)))
            .on_update(move |_, obj| drop(updated.send(obj)));
        // The resync retries the labels a failed patch left out.
        let registration = match self.unlabelled.add_handler(handler, Some(RETRY_EVERY)) {
            Ok(registration) => registration,
            Err(e) => {
                tracing::error!(error = %e, "cannot watch the objects to label; sharding by label labels nothing");
                return;
            }
        };
        let mut holdings = self.gate.slot_changes();
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                Some(obj) = arrivals.recv() => self.label(&obj.metadata).await,
                changed = holdings.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    // Slots taken: the objects left unlabelled may be ours now.
                    for obj in self.unlabelled.store().list() {
                        self.label(&obj.metadata).await;
                    }
                }
            }
        }
        registration.remove();
    }

    /// Gives `meta`'s object its slot label, if it lacks one and its slot
    /// is held here.
    async fn label(&self, meta: &ObjectMeta) {
        let labelled = meta
            .labels
            .as_ref()
            .is_some_and(|labels| labels.contains_key(&*self.key));
        let (Some(name), Some(slot)) = (meta.name.as_deref(), (self.slot_of)(meta)) else {
            return;
        };
        if labelled || !self.gate.held().has(slot) {
            return;
        }
        let patch =
            serde_json::json!({ "metadata": { "labels": { &*self.key: slot.to_string() } } });
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        // The object's own path: its namespace, if it has one.
        let request = kube_core::Request::new(O::url_path(&(), meta.namespace.as_deref()));
        let result = match request.patch_metadata(name, &params, &Patch::Merge(&patch)) {
            Ok(request) => self.client.request::<PartialObjectMeta<O>>(request).await,
            Err(e) => Err(e.into()),
        };
        match result {
            Ok(_) => tracing::debug!(name, slot, "labelled with its slot"),
            // Gone meanwhile, or a transient failure: the resync tries
            // again.
            Err(e) => tracing::debug!(name, slot, error = %e, "cannot label with its slot"),
        }
    }
}
