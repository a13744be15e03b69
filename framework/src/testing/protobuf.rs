//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`)
//! for the kinds kubectl's imperative commands send that way
//! (`kubectl create namespace|configmap|secret|serviceaccount`): the `k8s\0`
//! envelope around `runtime.Unknown`, and those messages decoded into their
//! JSON form. Other kinds answer 415, as a server without protobuf support
//! would. Field numbers are those of the `generated.proto` files of
//! k8s.io/api and k8s.io/apimachinery.

use base64::Engine;
use serde_json::{json, Map, Value};

/// A protobuf wire value.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or("truncated varint")?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint too long".into())
    }

    fn next(&mut self) -> Result<Option<(u64, Wire<'a>)>, String> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field = key >> 3;
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "length overflow")?;
                let end = self.pos.checked_add(len).ok_or("length overflow")?;
                let bytes = self.buf.get(self.pos..end).ok_or("truncated field")?;
                self.pos = end;
                Wire::Bytes(bytes)
            }
            1 => {
                self.pos += 8;
                Wire::Fixed
            }
            5 => {
                self.pos += 4;
                Wire::Fixed
            }
            t => return Err(format!("unsupported wire type {t}")),
        };
        Ok(Some((field, wire)))
    }
}

fn text(b: &[u8]) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| "invalid UTF-8 in string field".to_owned())
}

/// A `map<string, string|bytes>` entry.
fn map_entry(b: &[u8], bytes_value: bool) -> Result<(String, Value), String> {
    let mut r = Reader::new(b);
    let (mut k, mut v) = (String::new(), Value::String(String::new()));
    while let Some((f, w)) = r.next()? {
        match (f, w) {
            (1, Wire::Bytes(x)) => k = text(x)?,
            (2, Wire::Bytes(x)) if bytes_value => {
                v = json!(base64::engine::general_purpose::STANDARD.encode(x))
            }
            (2, Wire::Bytes(x)) => v = json!(text(x)?),
            _ => {}
        }
    }
    Ok((k, v))
}

/// Sets a field, leaving out the zero values Go's JSON encoding omits (the
/// protobuf encoder writes every string, set or not).
fn set(obj: &mut Map<String, Value>, field: &str, v: Value) {
    let zero = match &v {
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_i64() == Some(0),
        Value::Null => true,
        _ => false,
    };
    if !zero {
        obj.insert(field.to_owned(), v);
    }
}

fn insert_entry(obj: &mut Map<String, Value>, field: &str, entry: (String, Value)) {
    if let Some(m) = obj
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
    {
        m.insert(entry.0, entry.1);
    }
}

fn push(obj: &mut Map<String, Value>, field: &str, v: Value) {
    if let Some(a) = obj
        .entry(field)
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
    {
        a.push(v);
    }
}

fn time(b: &[u8]) -> Result<Value, String> {
    let mut r = Reader::new(b);
    let mut secs = 0i64;
    while let Some((f, w)) = r.next()? {
        if let (1, Wire::Varint(v)) = (f, w) {
            secs = v as i64;
        }
    }
    if secs == 0 {
        return Ok(Value::Null);
    }
    let ts = jiff::Timestamp::from_second(secs).map_err(|e| e.to_string())?;
    Ok(json!(ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()))
}

fn owner_reference(b: &[u8]) -> Result<Value, String> {
    let mut r = Reader::new(b);
    let mut o = Map::new();
    while let Some((f, w)) = r.next()? {
        match (f, w) {
            (1, Wire::Bytes(x)) => set(&mut o, "kind", json!(text(x)?)),
            (3, Wire::Bytes(x)) => set(&mut o, "name", json!(text(x)?)),
            (4, Wire::Bytes(x)) => set(&mut o, "uid", json!(text(x)?)),
            (5, Wire::Bytes(x)) => set(&mut o, "apiVersion", json!(text(x)?)),
            (6, Wire::Varint(v)) => set(&mut o, "controller", json!(v != 0)),
            (7, Wire::Varint(v)) => set(&mut o, "blockOwnerDeletion", json!(v != 0)),
            _ => {}
        }
    }
    Ok(Value::Object(o))
}

/// `ObjectMeta`: the fields a client sets.
fn object_meta(b: &[u8]) -> Result<Value, String> {
    let mut r = Reader::new(b);
    let mut m = Map::new();
    while let Some((f, w)) = r.next()? {
        match (f, w) {
            (1, Wire::Bytes(x)) => set(&mut m, "name", json!(text(x)?)),
            (2, Wire::Bytes(x)) => set(&mut m, "generateName", json!(text(x)?)),
            (3, Wire::Bytes(x)) => set(&mut m, "namespace", json!(text(x)?)),
            (5, Wire::Bytes(x)) => set(&mut m, "uid", json!(text(x)?)),
            (6, Wire::Bytes(x)) => set(&mut m, "resourceVersion", json!(text(x)?)),
            (7, Wire::Varint(v)) => set(&mut m, "generation", json!(v as i64)),
            (8, Wire::Bytes(x)) => set(&mut m, "creationTimestamp", time(x)?),
            (11, Wire::Bytes(x)) => insert_entry(&mut m, "labels", map_entry(x, false)?),
            (12, Wire::Bytes(x)) => insert_entry(&mut m, "annotations", map_entry(x, false)?),
            (13, Wire::Bytes(x)) => push(&mut m, "ownerReferences", owner_reference(x)?),
            (14, Wire::Bytes(x)) => push(&mut m, "finalizers", json!(text(x)?)),
            _ => {}
        }
    }
    Ok(Value::Object(m))
}

fn name_ref(b: &[u8]) -> Result<Value, String> {
    let mut r = Reader::new(b);
    let mut o = Map::new();
    while let Some((f, w)) = r.next()? {
        match (f, w) {
            (1, Wire::Bytes(x)) => set(&mut o, "kind", json!(text(x)?)),
            (2, Wire::Bytes(x)) => set(&mut o, "namespace", json!(text(x)?)),
            (3, Wire::Bytes(x)) => set(&mut o, "name", json!(text(x)?)),
            _ => {}
        }
    }
    Ok(Value::Object(o))
}

fn local_ref(b: &[u8]) -> Result<Value, String> {
    let mut r = Reader::new(b);
    let mut o = Map::new();
    while let Some((f, w)) = r.next()? {
        if let (1, Wire::Bytes(x)) = (f, w) {
            o.insert("name".into(), json!(text(x)?));
        }
    }
    Ok(Value::Object(o))
}

fn message(kind: &str, b: &[u8]) -> Result<Map<String, Value>, String> {
    let mut r = Reader::new(b);
    let mut o = Map::new();
    while let Some((f, w)) = r.next()? {
        match (kind, f, w) {
            (_, 1, Wire::Bytes(x)) => set(&mut o, "metadata", object_meta(x)?),
            ("ConfigMap", 2, Wire::Bytes(x)) => insert_entry(&mut o, "data", map_entry(x, false)?),
            ("ConfigMap", 3, Wire::Bytes(x)) => {
                insert_entry(&mut o, "binaryData", map_entry(x, true)?)
            }
            ("ConfigMap", 4, Wire::Varint(v)) | ("Secret", 5, Wire::Varint(v)) => {
                set(&mut o, "immutable", json!(v != 0))
            }
            ("Secret", 2, Wire::Bytes(x)) => insert_entry(&mut o, "data", map_entry(x, true)?),
            ("Secret", 3, Wire::Bytes(x)) => set(&mut o, "type", json!(text(x)?)),
            ("Secret", 4, Wire::Bytes(x)) => {
                insert_entry(&mut o, "stringData", map_entry(x, false)?)
            }
            ("Namespace", 2, Wire::Bytes(x)) => {
                let mut spec = Map::new();
                let mut sr = Reader::new(x);
                while let Some((sf, sw)) = sr.next()? {
                    if let (1, Wire::Bytes(y)) = (sf, sw) {
                        push(&mut spec, "finalizers", json!(text(y)?));
                    }
                }
                o.insert("spec".into(), Value::Object(spec));
            }
            ("ServiceAccount", 2, Wire::Bytes(x)) => push(&mut o, "secrets", name_ref(x)?),
            ("ServiceAccount", 3, Wire::Bytes(x)) => {
                push(&mut o, "imagePullSecrets", local_ref(x)?)
            }
            ("ServiceAccount", 4, Wire::Varint(v)) => {
                set(&mut o, "automountServiceAccountToken", json!(v != 0))
            }
            _ => {}
        }
    }
    Ok(o)
}

/// Why a protobuf body cannot be used.
#[derive(Debug)]
pub(crate) enum ProtoError {
    /// A kind this server cannot decode from protobuf (415).
    Unsupported(String),
    /// A malformed body (400).
    Malformed(String),
}

/// Decodes a `k8s\0`-framed protobuf object into its JSON form.
pub(crate) fn decode(body: &[u8]) -> Result<Value, ProtoError> {
    let rest = body
        .strip_prefix(b"k8s\0")
        .ok_or_else(|| ProtoError::Malformed("missing the k8s protobuf prefix".into()))?;
    let bad = ProtoError::Malformed;
    let mut r = Reader::new(rest);
    let (mut api_version, mut kind, mut raw): (String, String, &[u8]) =
        (String::new(), String::new(), &[]);
    while let Some((f, w)) = r.next().map_err(bad)? {
        match (f, w) {
            (1, Wire::Bytes(tm)) => {
                let mut t = Reader::new(tm);
                while let Some((tf, tw)) = t.next().map_err(bad)? {
                    match (tf, tw) {
                        (1, Wire::Bytes(x)) => api_version = text(x).map_err(bad)?,
                        (2, Wire::Bytes(x)) => kind = text(x).map_err(bad)?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(x)) => raw = x,
            _ => {}
        }
    }
    match (api_version.as_str(), kind.as_str()) {
        ("v1", "ConfigMap" | "Secret" | "Namespace" | "ServiceAccount") => {}
        _ => {
            return Err(ProtoError::Unsupported(format!(
                "{kind} in version {api_version:?} cannot be decoded from protobuf by this server"
            )))
        }
    }
    let mut obj = message(&kind, raw).map_err(ProtoError::Malformed)?;
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![((n << 3) | 2) as u8, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn decodes_a_configmap_envelope() {
        let meta = [
            field(1, b"cm"),
            field(11, &[field(1, b"app"), field(2, b"web")].concat()),
        ]
        .concat();
        let cm = [
            field(1, &meta),
            field(2, &[field(1, b"k"), field(2, b"v")].concat()),
        ]
        .concat();
        let tm = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        let body = [b"k8s\0".to_vec(), field(1, &tm), field(2, &cm)].concat();
        let v = decode(&body).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "labels": {"app": "web"}}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn rejects_garbage_and_unknown_kinds() {
        assert!(matches!(decode(b"nope"), Err(ProtoError::Malformed(_))));
        assert!(matches!(
            decode(b"k8s\0\x0a\xff"),
            Err(ProtoError::Malformed(_))
        ));
        let tm = [field(1, b"apps/v1"), field(2, b"Deployment")].concat();
        let body = [b"k8s\0".to_vec(), field(1, &tm)].concat();
        assert!(matches!(decode(&body), Err(ProtoError::Unsupported(_))));
    }
}
