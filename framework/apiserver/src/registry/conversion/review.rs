//! `ConversionReview` on the wire: the request kube-apiserver sends (the
//! first of the CRD's `conversionReviewVersions` it knows, `v1` or
//! `v1beta1`), the checks it makes of the response
//! (`getConvertedObjectsFromResponse`: kind and uid for `v1` only, the
//! result status), and of each converted object (`validateConvertedObject`,
//! `restoreObjectMeta`), with kube-apiserver's error texts.

use serde_json::{json, Map, Value};

use crate::machinery::util;

/// The review for `objects`, with its uid and review version, serialized.
pub(super) fn request(
    versions: &[&str],
    desired_api_version: &str,
    objects: &[Value],
) -> Result<(String, &'static str, Vec<u8>), &'static str> {
    let version = versions
        .iter()
        .find_map(|v| match *v {
            "v1" => Some("v1"),
            "v1beta1" => Some("v1beta1"),
            _ => None,
        })
        .ok_or("no supported conversion review versions")?;
    let uid = util::uid();
    let review = json!({
        "apiVersion": format!("apiextensions.k8s.io/{version}"),
        "kind": "ConversionReview",
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired_api_version,
            "objects": objects,
        },
    });
    let body = serde_json::to_vec(&review).map_err(|_| "the review could not be encoded")?;
    Ok((uid, version, body))
}

/// The converted objects of a response body, or why it is refused.
pub(super) fn converted(body: &[u8], version: &str, uid: &str) -> Result<Vec<Value>, String> {
    let review: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let str_at = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
    if version == "v1" {
        let (api_version, kind) = (str_at(&review, "apiVersion"), str_at(&review, "kind"));
        if api_version != "apiextensions.k8s.io/v1" || kind != "ConversionReview" {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {api_version}, Kind={kind}"
            ));
        }
    }
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("no response provided")?;
    if version == "v1" {
        let got = str_at(response, "uid");
        if got != uid {
            return Err(format!("expected response.uid=\"{uid}\", got \"{got}\""));
        }
    }
    let result = response.get("result").unwrap_or(&Value::Null);
    let status = str_at(result, "status");
    if status != "Success" {
        let message = str_at(result, "message");
        return Err(if message.is_empty() {
            format!("response.result.status was '{status}', not 'Success'")
        } else {
            message
        });
    }
    Ok(match response.get("convertedObjects") {
        Some(Value::Array(objects)) => objects.clone(),
        _ => Vec::new(),
    })
}

/// What each converted object is checked against.
pub(super) struct Check<'a> {
    /// `group/version, Kind=K` of what was converted, for the messages.
    pub source: &'a str,
    pub api_version: &'a str,
    /// A list's item (kube-apiserver's list texts) or a single object.
    pub list: bool,
}

impl Check<'_> {
    /// Checks the `n`th converted object against its `original` and
    /// restores its metadata but for labels and annotations.
    pub fn object(&self, n: usize, original: &Value, out: &mut Value) -> Result<(), String> {
        let source = self.source;
        // kube-apiserver counts a list's items from 1 here, since its index
        // has moved past the item already; a single object is "index 0".
        let (invalid, meta) = if self.list {
            (
                format!("conversion webhook for {source} returned invalid converted object at index {}", n + 1),
                format!("conversion webhook for {source} returned invalid metadata in object at index {}", n + 1),
            )
        } else {
            (
                format!("conversion webhook for {source} returned invalid object"),
                format!("conversion webhook for {source} returned invalid metadata"),
            )
        };
        if !out.is_object() {
            return Err(format!(
                "{invalid}: the converted object is not a JSON object"
            ));
        }
        let at = if self.list {
            String::new()
        } else {
            " at index 0".to_owned()
        };
        let got = out.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if got != self.api_version {
            return Err(format!(
                "{invalid}{at}: invalid groupVersion (expected {}, received {got})",
                self.api_version
            ));
        }
        let kind_of = |o: &Value| {
            o.get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let (want, got) = (kind_of(original), kind_of(out));
        if want != got {
            return Err(format!(
                "{invalid}{at}: invalid kind (expected {want}, received {got})"
            ));
        }
        for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
            let want = util::meta_str(original, field).unwrap_or("");
            let got = util::meta_str(out, field).unwrap_or("");
            if want != got {
                return Err(format!(
                    "{invalid}: must have the same {what}: {want} != {got}"
                ));
            }
        }
        restore_meta(original, out).map_err(|e| format!("{meta}: {e}"))
    }
}

/// `restoreObjectMeta`: `out` gets `original`'s metadata, with the labels
/// and annotations of `out` (absent ones removed), validated when they
/// changed.
fn restore_meta(original: &Value, out: &mut Value) -> Result<(), String> {
    let answered = match out.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ))
        }
    };
    let mut restored = match original.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for field in ["labels", "annotations"] {
        let Some(given) = answered.get(field).filter(|v| !v.is_null()) else {
            restored.remove(field);
            continue;
        };
        let Value::Object(given) = given else {
            return Err(format!(
                "invalid metadata.{field} of type {} in converted object",
                go_type(given)
            ));
        };
        let before = restored.get(field).and_then(Value::as_object);
        let mut changed = before.map_or(0, Map::len) != given.len();
        for (k, v) in given {
            if !v.is_string() {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            }
            changed |= before.and_then(|b| b.get(k)) != Some(v);
        }
        if changed {
            let errors = if field == "labels" {
                label_errors(given)
            } else {
                annotation_errors(given)
            };
            match errors.len() {
                0 => {}
                1 => return Err(errors.concat()),
                _ => return Err(format!("[{}]", errors.join(", "))),
            }
        }
        restored.insert(field.into(), Value::Object(given.clone()));
    }
    if let Some(map) = out.as_object_mut() {
        map.insert("metadata".into(), Value::Object(restored));
    }
    Ok(())
}

/// The Go type a JSON value decodes to, for the messages.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// `[-A-Za-z0-9_.]*` between alphanumerics, at most 63 characters.
fn name_part_ok(s: &str) -> bool {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    s.len() <= 63
        && alnum(s.chars().next())
        && alnum(s.chars().last())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// `IsQualifiedName`'s messages for a key (`[prefix/]name`).
fn key_errors(key: &str) -> Vec<String> {
    let name = match key.split_once('/') {
        Some((prefix, name)) => {
            if util::validate_name(prefix, util::NameRule::Subdomain).is_err() {
                return vec!["prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into()];
            }
            name
        }
        None => key,
    };
    if name.is_empty() {
        vec!["name part must be non-empty".into()]
    } else if name.len() > 63 {
        vec!["name part must be no more than 63 characters".into()]
    } else if !name_part_ok(name) {
        vec![QUALIFIED_NAME_MSG.into()]
    } else {
        Vec::new()
    }
}

/// `ValidateLabels`: qualified-name keys, label values.
fn label_errors(labels: &Map<String, Value>) -> Vec<String> {
    let mut errors = Vec::new();
    for (k, v) in labels {
        for msg in key_errors(k) {
            errors.push(format!("metadata.labels: Invalid value: \"{k}\": {msg}"));
        }
        let v = v.as_str().unwrap_or("");
        if v.len() > 63 {
            errors.push(format!(
                "metadata.labels: Invalid value: \"{v}\": must be no more than 63 characters"
            ));
        } else if !v.is_empty() && !name_part_ok(v) {
            errors.push(format!(
                "metadata.labels: Invalid value: \"{v}\": {LABEL_VALUE_MSG}"
            ));
        }
    }
    errors
}

/// `ValidateAnnotations`: qualified-name keys (lower-cased), 256 KiB in all.
fn annotation_errors(annotations: &Map<String, Value>) -> Vec<String> {
    let mut errors = Vec::new();
    let mut total = 0;
    for (k, v) in annotations {
        for msg in key_errors(&k.to_lowercase()) {
            errors.push(format!(
                "metadata.annotation: Invalid value: \"{k}\": {msg}"
            ));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
    }
    if total > 256 * 1024 {
        errors.push(format!(
            "metadata.annotation: Too long: may not be more than {} bytes",
            256 * 1024
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check() -> Check<'static> {
        Check {
            source: "ex.com/v1, Kind=Widget",
            api_version: "ex.com/v2",
            list: false,
        }
    }

    fn original() -> Value {
        json!({"apiVersion": "ex.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "uid": "u", "resourceVersion": "5",
                "labels": {"a": "1"}, "finalizers": ["f"]},
            "spec": {"size": 1}})
    }

    #[test]
    fn metadata_is_restored_but_for_labels_and_annotations() {
        let mut out = json!({"apiVersion": "ex.com/v2", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "uid": "u", "resourceVersion": "99",
                "labels": {"b": "2"}, "annotations": {"x": "y"}},
            "spec": {"replicas": 1}});
        check().object(0, &original(), &mut out).expect("valid");
        assert_eq!(
            out["metadata"],
            json!({"name": "w", "namespace": "default", "uid": "u", "resourceVersion": "5",
                "labels": {"b": "2"}, "annotations": {"x": "y"}, "finalizers": ["f"]})
        );
        // Labels left out of the answer are gone.
        let mut out = json!({"apiVersion": "ex.com/v2", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "uid": "u"}});
        check().object(0, &original(), &mut out).expect("valid");
        assert!(out["metadata"].get("labels").is_none());
    }

    #[test]
    fn identity_version_and_labels_are_checked_with_kube_apiservers_texts() {
        let answer = |f: &dyn Fn(&mut Value)| {
            let mut out = original();
            out["apiVersion"] = json!("ex.com/v2");
            f(&mut out);
            check().object(0, &original(), &mut out).unwrap_err()
        };
        assert_eq!(
            answer(&|o| o["metadata"]["name"] = json!("other")),
            "conversion webhook for ex.com/v1, Kind=Widget returned invalid object: must have the same name: w != other"
        );
        assert_eq!(
            answer(&|o| o["apiVersion"] = json!("ex.com/v1")),
            "conversion webhook for ex.com/v1, Kind=Widget returned invalid object at index 0: invalid groupVersion (expected ex.com/v2, received ex.com/v1)"
        );
        assert_eq!(
            answer(&|o| o["metadata"]["labels"] = json!({"a": 1})),
            "conversion webhook for ex.com/v1, Kind=Widget returned invalid metadata: metadata.labels[a] must be a string, but is int64 in converted object"
        );
        assert!(
            answer(&|o| o["metadata"]["labels"] = json!({"a": "-bad-"})).ends_with(&format!(
                "metadata.labels: Invalid value: \"-bad-\": {LABEL_VALUE_MSG}"
            ))
        );
    }

    #[test]
    fn responses_are_checked_per_review_version() {
        let (uid, version, _) = request(&["v2", "v1"], "ex.com/v2", &[]).expect("v1 is known");
        assert_eq!(version, "v1");
        assert_eq!(
            request(&["v2"], "ex.com/v2", &[]).unwrap_err(),
            "no supported conversion review versions"
        );
        let body = |review: Value| serde_json::to_vec(&review).expect("json");
        let ok = json!({"uid": uid, "result": {"status": "Success"}, "convertedObjects": [{}]});
        let err = converted(&body(json!({"response": ok})), "v1", &uid).unwrap_err();
        assert_eq!(err, "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got , Kind=");
        // v1beta1 checks neither the kind nor the uid.
        let mut other = ok.clone();
        other["uid"] = json!("x");
        assert_eq!(
            converted(&body(json!({"response": other})), "v1beta1", &uid).map(|o| o.len()),
            Ok(1)
        );
        let v1 = |response: Value| {
            body(
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}),
            )
        };
        assert_eq!(
            converted(
                &v1(json!({"uid": "x", "result": {"status": "Success"}})),
                "v1",
                &uid
            )
            .unwrap_err(),
            format!("expected response.uid=\"{uid}\", got \"x\"")
        );
        assert_eq!(
            converted(
                &v1(json!({"uid": uid, "result": {"status": "Failure", "message": "no way"}})),
                "v1",
                &uid
            )
            .unwrap_err(),
            "no way"
        );
        assert_eq!(
            converted(&v1(json!({"uid": uid, "result": {}})), "v1", &uid).unwrap_err(),
            "response.result.status was '', not 'Success'"
        );
    }
}
