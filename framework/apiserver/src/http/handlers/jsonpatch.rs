//! Applying an RFC 6902 JSON patch within kube-apiserver's bounds: at most
//! 10 000 operations (413, `maxJSONPatchOperations` in apiserver
//! `endpoints/handlers/patch.go`), `copy` operations adding at most 3 MiB
//! between them (`JSONPatchMaxCopyBytes`, apiserver `server/config.go`,
//! enforced by evanphx/json-patch), and no nesting deeper than the server's
//! JSON decoder accepts from a body. Without these, one small request can
//! double a document with every `copy` until the process runs out of
//! memory, or nest it deep enough that walking it overflows the stack.

use json_patch::{Patch, PatchOperation};
use serde_json::Value;

use crate::machinery::status::ApiError;

/// kube-apiserver's `maxJSONPatchOperations`.
const MAX_OPERATIONS: usize = 10_000;

/// kube-apiserver's default `JSONPatchMaxCopyBytes`.
const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// serde_json's recursion limit when decoding a body. kube-apiserver's Go
/// decoder allows 10 000 levels; a patch here may not build an object
/// nested deeper than one this server could have been sent.
const MAX_DEPTH: usize = 128;

/// Applies `patch` to `doc` operation by operation. On error `doc` is left
/// half-patched: callers patch a copy.
pub(super) fn apply(doc: &mut Value, patch: &Patch) -> Result<(), ApiError> {
    let ops = &patch.0;
    if ops.len() > MAX_OPERATIONS {
        return Err(ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!(
                "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}",
                ops.len()
            ),
        ));
    }
    // An upper bound of the document's nesting, kept without re-walking
    // the document after every operation.
    let mut depth = depth_of(doc);
    let mut copied = 0usize;
    for (i, op) in ops.iter().enumerate() {
        depth = match op {
            PatchOperation::Add(o) => depth.max(o.path.count() + depth_of(&o.value)),
            PatchOperation::Replace(o) => depth.max(o.path.count() + depth_of(&o.value)),
            // What is moved or copied is at most as deep as the document
            // below `from`.
            PatchOperation::Move(o) => {
                depth.max(o.path.count() + depth.saturating_sub(o.from.count()))
            }
            PatchOperation::Copy(o) => {
                if let Some(v) = doc.pointer(o.from.as_str()) {
                    copied = copied.saturating_add(json_len(v));
                    if copied > MAX_COPY_BYTES {
                        return Err(invalid(format!(
                            "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {MAX_COPY_BYTES}"
                        )));
                    }
                }
                depth.max(o.path.count() + depth.saturating_sub(o.from.count()))
            }
            PatchOperation::Remove(_) | PatchOperation::Test(_) => depth,
        };
        if depth > MAX_DEPTH {
            return Err(invalid(format!(
                "operation '/{i}' would nest the object more than {MAX_DEPTH} levels deep"
            )));
        }
        json_patch::patch_unsafe(doc, std::slice::from_ref(op)).map_err(|mut e| {
            e.operation = i;
            invalid(e.to_string())
        })?;
    }
    Ok(())
}

fn invalid(message: String) -> ApiError {
    ApiError::new(422, "Invalid", message)
}

/// How many objects and arrays deep `v` nests (a scalar is 0), without
/// recursion.
fn depth_of(v: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Object(m) => {
                max = max.max(d + 1);
                stack.extend(m.values().map(|c| (c, d + 1)));
            }
            Value::Array(a) => {
                max = max.max(d + 1);
                stack.extend(a.iter().map(|c| (c, d + 1)));
            }
            _ => {}
        }
    }
    max
}

/// The length of `v` as JSON, what evanphx/json-patch counts per copy.
fn json_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail, and a Value always serializes.
    let _ = serde_json::to_writer(&mut count, v);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(ops: Value) -> Patch {
        serde_json::from_value(ops).expect("a JSON patch")
    }

    #[test]
    fn ordinary_patches_apply() {
        let mut doc = json!({"spec": {"args": ["a"]}});
        apply(
            &mut doc,
            &patch(json!([
                {"op": "copy", "from": "/spec/args", "path": "/spec/more"},
                {"op": "add", "path": "/spec/args/-", "value": "b"},
                {"op": "test", "path": "/spec/more/0", "value": "a"}
            ])),
        )
        .expect("applies");
        assert_eq!(doc, json!({"spec": {"args": ["a", "b"], "more": ["a"]}}));
    }

    #[test]
    fn failures_name_the_operation() {
        let mut doc = json!({});
        let e = apply(
            &mut doc,
            &patch(json!([
                {"op": "add", "path": "/a", "value": 1},
                {"op": "remove", "path": "/b"}
            ])),
        )
        .expect_err("no /b");
        assert_eq!(e.code, 422);
        assert!(
            e.message.starts_with("operation '/1' failed at path '/b'"),
            "{}",
            e.message
        );
    }

    #[test]
    fn nesting_is_bounded_however_it_is_built() {
        let deep = (0..100).fold(json!(1), |v, _| json!({ "a": v }));
        let path = format!("/x{}", "/a".repeat(99));
        let mut doc = json!({});
        let e = apply(
            &mut doc,
            &patch(json!([
                {"op": "add", "path": "/x", "value": deep},
                {"op": "add", "path": path, "value": deep}
            ])),
        )
        .expect_err("too deep");
        assert!(e.message.contains("more than 128 levels"), "{}", e.message);
        let mut doc = json!({"a": deep});
        let copies: Vec<Value> = (0..40)
            .map(|_| json!({"op": "copy", "from": "/a", "path": "/a/a/b"}))
            .collect();
        let e = apply(&mut doc, &patch(Value::Array(copies))).expect_err("too deep");
        assert_eq!(e.code, 422);
    }
}
