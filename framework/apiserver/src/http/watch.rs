//! Watch streams: a chunked `application/json` body of
//! `{"type":…,"object":…}\n` frames. Initial events, history replay and
//! live events wrap the bytes encoded once per object version (a copy into
//! the batch, nothing kept per event); only Table, metadata-only and
//! non-storage-version watches encode the object per watcher. Bookmarks
//! (periodic, and `k8s.io/initial-events-end` after the initial events of
//! a streaming list), `timeoutSeconds` with a clean end of stream, and
//! closing on demand (fault injection, dropped slow watchers).
//! Objects of a CRD converted by its webhook are converted as they go out,
//! initial and live events alike, awaiting the webhook on the runtime; a
//! failed conversion ends the stream with an `ERROR` event carrying the
//! 500 Status.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::stream;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use serde_json::json;
use tokio::time::Instant;

use crate::http::table::{self, IncludeObject};
use crate::http::wire::{Body, Output};
use crate::machinery::status::ApiError;
use crate::registry::conversion::Converter;
use crate::registry::state::Shared;
use crate::registry::ResourceDef;
use crate::storage::object::{frame, write_frame};
use crate::storage::{StoredObject, Subscription, WatchMsg};

/// How one watch renders and paces its events.
pub(crate) struct WatchSpec {
    pub def: Arc<ResourceDef>,
    pub version: String,
    pub output: Output,
    pub include: IncludeObject,
    pub bookmarks: bool,
    /// Send the `k8s.io/initial-events-end` bookmark after initial events.
    pub initial_end: bool,
    pub timeout: Duration,
}

const BATCH_BYTES: usize = 256 * 1024;
const PRE_DEADLINE: Duration = Duration::from_secs(2);

struct State {
    shared: Arc<Shared>,
    spec: WatchSpec,
    initial: std::vec::IntoIter<Arc<StoredObject>>,
    replay: std::vec::IntoIter<WatchMsg>,
    sub_rx: tokio::sync::mpsc::Receiver<WatchMsg>,
    start_rv: u64,
    last_rv: u64,
    sent_initial_end: bool,
    deadline: Instant,
    next_bookmark: Instant,
    /// About 2 s before the deadline a last bookmark goes out, so the
    /// client resumes from a fresh resourceVersion (the cacher does this).
    pre_deadline: Option<Instant>,
    close_rx: tokio::sync::watch::Receiver<u64>,
    table_columns_sent: bool,
    done: bool,
    /// The CRD's conversion webhook, and the `apiVersion` to convert to.
    converter: Option<(Converter, String)>,
}

fn response(body: Body) -> Response<Body> {
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A watch that only reports `err` (e.g. 410 Expired), as kube-apiserver's
/// cacher does once the request has been accepted.
pub(crate) fn error_stream(err: &ApiError) -> Response<Body> {
    let status = serde_json::to_vec(&err.to_status()).unwrap_or_default();
    let f = frame("ERROR", &status);
    response(crate::http::wire::full(f))
}

/// Streams `sub` to the client.
pub(crate) fn stream(shared: Arc<Shared>, spec: WatchSpec, sub: Subscription) -> Response<Body> {
    let now = Instant::now();
    let bookmark_interval = shared.options.bookmark_interval;
    let close_rx = shared.close_watches.subscribe();
    let pre_deadline = (spec.timeout > PRE_DEADLINE * 2).then(|| now + spec.timeout - PRE_DEADLINE);
    let spec_def = spec.def.clone();
    let spec_api_version = spec.def.api_version(&spec.version);
    let state = State {
        deadline: now + spec.timeout,
        next_bookmark: pre_deadline.map_or(now + bookmark_interval, |pd| {
            pd.min(now + bookmark_interval)
        }),
        pre_deadline,
        shared,
        spec,
        initial: sub.initial.into_iter(),
        replay: sub.replay.into_iter(),
        sub_rx: sub.rx,
        start_rv: sub.start_rv,
        last_rv: sub.start_rv,
        sent_initial_end: false,
        close_rx,
        table_columns_sent: false,
        done: false,
        converter: Converter::of(&spec_def).map(|c| (c, spec_api_version)),
    };
    let s = stream::unfold(state, |mut st| async move {
        let chunk = st.next_chunk().await?;
        // Nothing is sent before it is durable; a failed data directory
        // ends the stream.
        st.shared.storage.durable_at(st.last_rv).await.ok()?;
        Some((
            Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(chunk)),
            st,
        ))
    });
    response(BodyExt::boxed_unsync(StreamBody::new(s)))
}

impl State {
    fn needs_own_encoding(&self) -> bool {
        !matches!(self.spec.output, Output::Object(_))
            || self.spec.version != self.spec.def.storage_version
            || self.spec.def.conversion().is_some()
    }

    /// Appends the frame for `obj` with type `ty`, encoded here only when
    /// this watcher's format differs from the stored one.
    fn own_frame(&mut self, ty: &str, obj: &StoredObject, out: &mut BytesMut) {
        match &self.spec.output {
            Output::Table { version } => {
                let version = *version;
                let columns = if self.table_columns_sent {
                    None
                } else {
                    self.table_columns_sent = true;
                    Some(table::columns(&self.spec.def, &self.spec.version))
                };
                let row = table::row(
                    &self.spec.def,
                    &self.spec.version,
                    version,
                    &obj.to_value(),
                    self.spec.include,
                );
                let t = table::table(version, columns, vec![row], &obj.rv.to_string(), None);
                write_frame(ty, &serde_json::to_vec(&t).unwrap_or_default(), out);
            }
            Output::Metadata { version } => {
                let m = table::partial_metadata(&obj.to_value(), version);
                write_frame(ty, &serde_json::to_vec(&m).unwrap_or_default(), out);
            }
            Output::Object(_) => {
                let api_version = self.spec.def.api_version(&self.spec.version);
                if self.spec.def.conversion().is_none()
                    && obj.api_version() == Some(api_version.as_str())
                {
                    obj.write_frame(ty, out);
                    return;
                }
                let stored = obj.to_value();
                let mut v = self.spec.def.view(&stored).unwrap_or(stored);
                v["apiVersion"] = json!(api_version);
                StoredObject::encode(v, obj.rv).write_frame(ty, out);
            }
        }
    }

    /// `obj` converted by the CRD's webhook; `None` when it needs no
    /// conversion.
    async fn converted(
        &self,
        obj: &Arc<StoredObject>,
    ) -> Result<Option<Arc<StoredObject>>, ApiError> {
        let Some((converter, api_version)) = &self.converter else {
            return Ok(None);
        };
        if obj.api_version() == Some(api_version.as_str()) {
            return Ok(None);
        }
        let mut served = converter
            .serve(vec![obj.clone()], api_version, false)
            .await?;
        Ok(served.pop())
    }

    /// Appends the frame of an initial event.
    async fn initial_frame(
        &mut self,
        obj: &Arc<StoredObject>,
        out: &mut BytesMut,
    ) -> Result<(), ApiError> {
        if let Some(converted) = self.converted(obj).await? {
            self.own_frame("ADDED", &converted, out);
        } else if self.needs_own_encoding() {
            self.own_frame("ADDED", obj, out);
        } else {
            obj.write_frame("ADDED", out);
        }
        Ok(())
    }

    /// Appends the frame of `msg`; a failed conversion ends the stream
    /// with an `ERROR` event.
    async fn event_frame(&mut self, msg: &WatchMsg, out: &mut BytesMut) {
        let (ev, ty) = msg;
        self.last_rv = self.last_rv.max(ev.rv);
        if self.converter.is_some() {
            let obj = ev.object_for(*ty);
            match self.converted(&obj).await {
                Ok(Some(converted)) => return self.own_frame(ty.as_str(), &converted, out),
                Ok(None) => {}
                Err(e) => return out.extend_from_slice(&self.failed(&e)),
            }
        }
        if self.needs_own_encoding() {
            let obj = ev.object_for(*ty);
            self.own_frame(ty.as_str(), &obj, out);
        } else {
            ev.write_frame(*ty, out);
        }
    }

    /// The `ERROR` event that ends the stream.
    fn failed(&mut self, err: &ApiError) -> Bytes {
        self.done = true;
        let status = serde_json::to_vec(&err.to_status()).unwrap_or_default();
        frame("ERROR", &status)
    }

    fn schedule_bookmark(&mut self) {
        let now = Instant::now();
        let mut next = now + self.shared.options.bookmark_interval;
        if let Some(pd) = self.pre_deadline.filter(|pd| *pd > now && *pd < next) {
            next = pd;
        }
        self.next_bookmark = next;
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({
            "kind": self.spec.def.kind,
            "apiVersion": self.spec.def.api_version(&self.spec.version),
            "metadata": meta,
        });
        frame("BOOKMARK", &serde_json::to_vec(&obj).unwrap_or_default())
    }

    async fn next_chunk(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        // Initial events, in batches.
        if self.initial.len() > 0 {
            let mut buf = BytesMut::new();
            while buf.len() < BATCH_BYTES {
                let Some(obj) = self.initial.next() else {
                    break;
                };
                if let Err(e) = self.initial_frame(&obj, &mut buf).await {
                    buf.extend_from_slice(&self.failed(&e));
                    return Some(buf.freeze());
                }
            }
            return Some(buf.freeze());
        }
        if !self.sent_initial_end {
            self.sent_initial_end = true;
            if self.spec.initial_end && self.spec.bookmarks {
                return Some(self.bookmark(self.start_rv, true));
            }
        }
        if self.replay.len() > 0 {
            let mut buf = BytesMut::new();
            while buf.len() < BATCH_BYTES {
                let Some(msg) = self.replay.next() else { break };
                self.event_frame(&msg, &mut buf).await;
                if self.done {
                    break;
                }
            }
            return Some(buf.freeze());
        }
        loop {
            let bookmark_at = if self.spec.bookmarks {
                self.next_bookmark.min(self.deadline)
            } else {
                self.deadline
            };
            tokio::select! {
                biased;
                _ = self.close_rx.changed() => {
                    self.done = true;
                    return None;
                }
                msg = self.sub_rx.recv() => {
                    let Some(msg) = msg else {
                        // Dropped (too slow) or closed: end the stream.
                        self.done = true;
                        return None;
                    };
                    let mut buf = BytesMut::new();
                    self.event_frame(&msg, &mut buf).await;
                    while buf.len() < BATCH_BYTES && !self.done {
                        match self.sub_rx.try_recv() {
                            Ok(m) => {
                                self.event_frame(&m, &mut buf).await;
                                if self.done {
                                    break;
                                }
                            }
                            Err(_) => break,
                        }
                    }
                    return Some(buf.freeze());
                }
                _ = tokio::time::sleep_until(bookmark_at) => {
                    if Instant::now() >= self.deadline {
                        self.done = true;
                        return None;
                    }
                    self.schedule_bookmark();
                    // Only a resourceVersion every buffered event is below of
                    // may be announced: check under the store lock.
                    let rv = {
                        let store = self.shared.storage.lock();
                        self.sub_rx.is_empty().then(|| store.rv())
                    };
                    if let Some(rv) = rv {
                        let rv = rv.max(self.last_rv);
                        self.last_rv = rv;
                        return Some(self.bookmark(rv, false));
                    }
                }
            }
        }
    }
}

/// kube-apiserver's default watch timeout: 1800 s times a random factor in
/// [1, 2).
pub(crate) fn default_timeout() -> Duration {
    Duration::from_secs_f64(1800.0 * (1.0 + fastrand::f64()))
}
