//! The named way to publish an event:
//! `recorder.event(&obj).normal(reason, action).note(text).publish().await`.
//!
//! [`Recorder::publish`] takes the reason, action and note as three
//! positional strings, which are easy to swap; the builder names the note
//! and the severity, and takes the regarding object itself instead of an
//! [`ObjectReference`]. Publishing goes through the same path as
//! [`Recorder::publish_related`], so aggregation into series and the note's
//! 1024-byte cut are the same.

use k8s_openapi::api::core::v1::ObjectReference;
use kube_core::Resource;

use super::{object_reference, EventType, Recorder};

/// An event about one object, before its severity and reason are known.
/// Made by [`Recorder::event`] or [`Recorder::event_about`]; finish it with
/// [`normal`](Self::normal) or [`warning`](Self::warning).
#[derive(Debug)]
#[must_use = "an event is written only by `.normal(..)` or `.warning(..)`, then `.publish().await`"]
pub struct EventRegarding<'a> {
    recorder: &'a Recorder,
    regarding: ObjectReference,
    related: Option<ObjectReference>,
}

/// An event ready to publish: its severity, reason and action are set; a
/// note and a related object may be added. Write it with
/// [`publish`](Self::publish).
#[derive(Debug)]
#[must_use = "an event is written only by `.publish().await`"]
pub struct EventBuilder<'a> {
    recorder: &'a Recorder,
    regarding: ObjectReference,
    related: Option<ObjectReference>,
    type_: EventType,
    reason: String,
    action: String,
    note: String,
}

fn reference_to<K: Resource>(obj: &K) -> ObjectReference
where
    K::DynamicType: Default,
{
    object_reference(obj, &K::DynamicType::default())
}

impl Recorder {
    /// Starts an event about `regarding` (its reference as
    /// [`object_reference`] builds it, resourceVersion included).
    ///
    /// ```no_run
    /// # use kubeforge::events::Recorder;
    /// # use kubeforge::k8s_openapi::api::apps::v1::Deployment;
    /// # async fn demo(recorder: Recorder, deploy: Deployment) {
    /// recorder
    ///     .event(&deploy)
    ///     .normal("Scaled", "Scale")
    ///     .note(format!("scaled to {} replicas", 3))
    ///     .publish()
    ///     .await;
    /// # }
    /// ```
    pub fn event<K: Resource>(&self, regarding: &K) -> EventRegarding<'_>
    where
        K::DynamicType: Default,
    {
        self.event_about(reference_to(regarding))
    }

    /// Starts an event about the object `regarding` refers to (for dynamic
    /// objects, or a reference kept from earlier).
    pub fn event_about(&self, regarding: ObjectReference) -> EventRegarding<'_> {
        EventRegarding {
            recorder: self,
            regarding,
            related: None,
        }
    }
}

impl<'a> EventRegarding<'a> {
    /// A secondary object the event also concerns (its `related`).
    pub fn related<K: Resource>(self, related: &K) -> Self
    where
        K::DynamicType: Default,
    {
        self.related_reference(reference_to(related))
    }

    /// [`related`](Self::related) from a reference.
    pub fn related_reference(mut self, related: ObjectReference) -> Self {
        self.related = Some(related);
        self
    }

    /// Something happened as expected: `reason` says why, in CamelCase
    /// (`Scaled`), and `action` what was done (`Scale`), as in client-go's
    /// `Eventf(regarding, related, type, reason, action, note)`.
    pub fn normal(self, reason: impl Into<String>, action: impl Into<String>) -> EventBuilder<'a> {
        self.with_type(EventType::Normal, reason.into(), action.into())
    }

    /// Something may need attention: `reason` says why, in CamelCase
    /// (`FailedCreate`), and `action` what was attempted (`Create`).
    pub fn warning(self, reason: impl Into<String>, action: impl Into<String>) -> EventBuilder<'a> {
        self.with_type(EventType::Warning, reason.into(), action.into())
    }

    /// [`normal`](Self::normal) or [`warning`](Self::warning) by value.
    pub fn of_type(
        self,
        type_: EventType,
        reason: impl Into<String>,
        action: impl Into<String>,
    ) -> EventBuilder<'a> {
        self.with_type(type_, reason.into(), action.into())
    }

    fn with_type(self, type_: EventType, reason: String, action: String) -> EventBuilder<'a> {
        EventBuilder {
            recorder: self.recorder,
            regarding: self.regarding,
            related: self.related,
            type_,
            reason,
            action,
            note: String::new(),
        }
    }
}

impl EventBuilder<'_> {
    /// The human-readable note (cut to 1024 bytes when published, as the
    /// API server requires). Not part of what makes two events the same:
    /// a series keeps its first note.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = note.into();
        self
    }

    /// A secondary object the event also concerns (its `related`).
    pub fn related<K: Resource>(mut self, related: &K) -> Self
    where
        K::DynamicType: Default,
    {
        self.related = Some(reference_to(related));
        self
    }

    /// Publishes the event, aggregated into a series with its repeats, as
    /// [`Recorder::publish`] does. Never fails: problems are logged.
    pub async fn publish(self) {
        self.recorder
            .publish_related(
                &self.regarding,
                self.related.as_ref(),
                self.type_,
                &self.reason,
                &self.action,
                &self.note,
            )
            .await;
    }
}
