//! `StoredObject`: one version of one object, serialized exactly once. The
//! bytes start with `kind` and `apiVersion`, so a built-in list item (which
//! kube-apiserver sends without them) is a zero-copy slice of the same
//! buffer. Watch events wrap these bytes into frames, encoded once per event
//! type and shared by every watcher.

use std::sync::{Arc, OnceLock};

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub(crate) type ObjKey = (String, String);

/// One stored object version.
#[derive(Debug)]
pub(crate) struct StoredObject {
    /// The resourceVersion this version was written at.
    pub rv: u64,
    /// The parsed object (shared; never mutated).
    pub value: Arc<Value>,
    bytes: Bytes,
    /// Where the fields after `kind`/`apiVersion` start in `bytes`.
    rest_start: usize,
    /// The ADDED frame for initial watch events, shared by all watchers.
    added: OnceLock<Bytes>,
}

fn write_field(buf: &mut Vec<u8>, key: &str, v: &Value) {
    // Serializing a `String` and a `Value` into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *buf, key);
    buf.push(b':');
    let _ = serde_json::to_writer(&mut *buf, v);
}

impl StoredObject {
    /// Serializes `value` (which already carries its resourceVersion).
    pub fn encode(value: Value, rv: u64) -> Self {
        let mut buf = Vec::with_capacity(512);
        buf.push(b'{');
        let mut first = true;
        let mut rest_start = None;
        if let Some(map) = value.as_object() {
            for key in ["kind", "apiVersion"] {
                if let Some(v) = map.get(key) {
                    if !first {
                        buf.push(b',');
                    }
                    write_field(&mut buf, key, v);
                    first = false;
                }
            }
            for (k, v) in map {
                if k == "kind" || k == "apiVersion" {
                    continue;
                }
                if !first {
                    buf.push(b',');
                }
                if rest_start.is_none() {
                    rest_start = Some(buf.len());
                }
                write_field(&mut buf, k, v);
                first = false;
            }
        }
        buf.push(b'}');
        let rest_start = rest_start.unwrap_or(buf.len() - 1);
        Self {
            rv,
            value: Arc::new(value),
            bytes: Bytes::from(buf),
            rest_start,
            added: OnceLock::new(),
        }
    }

    /// The `ADDED` watch frame for this version (initial events).
    pub fn added_frame(&self) -> Bytes {
        self.added
            .get_or_init(|| frame("ADDED", &self.bytes))
            .clone()
    }

    /// The full JSON encoding.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Appends the encoding without `kind`/`apiVersion` (built-in list items).
    pub fn write_item(&self, out: &mut BytesMut) {
        out.put_u8(b'{');
        out.extend_from_slice(&self.bytes[self.rest_start..]);
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        self.value
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// The type of a watch event as a client sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change, kept in the watch history and fanned out to watchers.
#[derive(Debug)]
pub(crate) struct Event {
    pub rv: u64,
    pub key: ObjKey,
    /// The new state; for a deletion, the last state stamped with the
    /// deletion's resourceVersion.
    pub object: Arc<StoredObject>,
    /// The state before (`None` for a creation).
    pub prev: Option<Arc<StoredObject>>,
    pub deleted: bool,
    frames: [OnceLock<Bytes>; 3],
    /// For watchers the object stops matching: the previous state stamped
    /// with this event's resourceVersion (what the cacher sends).
    left: OnceLock<Arc<StoredObject>>,
    left_frame: OnceLock<Bytes>,
}

impl Event {
    /// What the event keeps alive in a history, in bytes: the JSON of the
    /// object it carries (the state before belongs to the event before).
    pub fn size(&self) -> usize {
        self.object.bytes().len()
    }

    pub fn new(
        key: ObjKey,
        object: Arc<StoredObject>,
        prev: Option<Arc<StoredObject>>,
        deleted: bool,
    ) -> Self {
        Self {
            rv: object.rv,
            key,
            object,
            prev,
            deleted,
            frames: Default::default(),
            left: OnceLock::new(),
            left_frame: OnceLock::new(),
        }
    }

    /// The object a watcher sees with type `ty`: for an object that left
    /// the watcher's selection, its previous state at this event's
    /// resourceVersion.
    pub fn object_for(&self, ty: EventType) -> Arc<StoredObject> {
        match (&self.prev, ty, self.deleted) {
            (Some(prev), EventType::Deleted, false) => self
                .left
                .get_or_init(|| {
                    let mut v = (*prev.value).clone();
                    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                        meta.insert("resourceVersion".into(), Value::String(self.rv.to_string()));
                    }
                    Arc::new(StoredObject::encode(v, self.rv))
                })
                .clone(),
            _ => self.object.clone(),
        }
    }

    /// `{"type":T,"object":…}\n`, encoded on first use per type and shared.
    pub fn frame(&self, ty: EventType) -> Bytes {
        if ty == EventType::Deleted && !self.deleted && self.prev.is_some() {
            return self
                .left_frame
                .get_or_init(|| frame(ty.as_str(), self.object_for(ty).bytes()))
                .clone();
        }
        let slot = &self.frames[ty as usize];
        slot.get_or_init(|| frame(ty.as_str(), self.object.bytes()))
            .clone()
    }
}

/// A watch frame around already-encoded object bytes.
pub(crate) fn frame(ty: &str, object: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(ty.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn item_is_object_without_type_meta() {
        let o = StoredObject::encode(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}, "metadata": {"name": "x"}}),
            3,
        );
        let full: Value = serde_json::from_slice(o.bytes()).unwrap();
        assert_eq!(full["kind"], "ConfigMap");
        assert!(o
            .bytes()
            .starts_with(br#"{"kind":"ConfigMap","apiVersion":"v1","#));
        let mut buf = BytesMut::new();
        o.write_item(&mut buf);
        let item: Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(item, json!({"data": {"a": "b"}, "metadata": {"name": "x"}}));
    }

    #[test]
    fn frames_are_shared() {
        let o = Arc::new(StoredObject::encode(
            json!({"kind": "A", "metadata": {}}),
            1,
        ));
        let e = Event::new((String::new(), "a".into()), o, None, false);
        let f1 = e.frame(EventType::Added);
        let f2 = e.frame(EventType::Added);
        assert_eq!(f1.as_ptr(), f2.as_ptr());
        let v: Value = serde_json::from_slice(&f1).unwrap();
        assert_eq!(v["type"], "ADDED");
    }
}
