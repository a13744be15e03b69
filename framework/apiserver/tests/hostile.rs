//! What a careless or hostile client sends: CEL rules that nest too deeply,
//! cost too much or make the parser fail in odd places, YAML alias bombs,
//! oversized watch histories and unknown fields. The server answers each
//! with kube-apiserver's error and keeps serving.

// No function over 150 lines, as in the library (see src/lib.rs).
#![deny(clippy::too_many_lines)]

mod common;

use std::time::Duration;

use common::{Kube, CRDS};
use kubeforge_apiserver::ApiServer;
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// A CRD whose `spec` carries `rules` and has `properties`.
fn crd_with(rules: Value, properties: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.hostile.example.com"},
        "spec": {"group": "hostile.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": properties,
                             "x-kubernetes-validations": rules}}}}}]}})
}

fn rule(text: &str) -> Value {
    json!([{"rule": text}])
}

const RULE_FIELD: &str =
    "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";

async fn dry_run_crd(k: &Kube, crd: &Value) -> common::Resp {
    k.post(&format!("{CRDS}?dryRun=All"), crd).await
}

/// The server still answers.
async fn alive(k: &Kube) {
    let r = k.get("/healthz").await;
    assert_eq!(r.code(), 200);
}

#[tokio::test]
async fn deeply_nested_cel_rules_are_a_422_not_a_stack_overflow() {
    let k = Kube::start().await;
    let props = json!({"a": {"type": "integer"}});
    for (text, limit) in [
        (
            "[".repeat(5000) + &"]".repeat(5000) + " == []",
            "96 nested expressions",
        ),
        ("self".to_string() + &".a".repeat(5000) + " == 1", "250"),
        ("[1]".to_string() + &"[0]".repeat(20000) + " == 1", "250"),
    ] {
        let r = dry_run_crd(&k, &crd_with(rule(&text), props.clone())).await;
        assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
        let cause = &r.json()["details"]["causes"][0];
        assert_eq!(cause["field"], RULE_FIELD);
        let message = cause["message"].as_str().unwrap();
        assert!(
            message.ends_with(&format!(
                ": compilation failed: ERROR: <input>:-1:0: expression recursion limit exceeded: {limit}"
            )),
            "{message}"
        );
    }
    alive(&k).await;
}

#[tokio::test]
async fn cel_errors_the_parser_would_panic_on_are_a_422() {
    let k = Kube::start().await;
    // A syntax error past column 65,535.
    let far = " ".repeat(65_540) + "1 +";
    let r = dry_run_crd(&k, &crd_with(rule(&far), json!({}))).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    let message = r.json()["details"]["causes"][0]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    let detail = message.split(": compilation failed: ").nth(1).unwrap();
    // cel-go shows no source line longer than 16,384 bytes.
    assert!(detail.starts_with("ERROR: <input>:1:"), "{detail}");
    assert!(!detail.contains("\n | "), "{detail}");
    // Fifteen thousand nested calls.
    let nested = "size(".repeat(15_000) + "\"\"" + &")".repeat(15_000) + " == 0";
    let r = dry_run_crd(&k, &crd_with(rule(&nested), json!({}))).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    alive(&k).await;
}

#[tokio::test]
async fn an_error_does_not_repeat_a_rule_once_per_nesting_level() {
    let k = Kube::start().await;
    // 8 KB nested 4,000 deep: once 159 MB of 422.
    let text = "[".repeat(4000) + &"]".repeat(4000) + " == []";
    let r = dry_run_crd(&k, &crd_with(rule(&text), json!({}))).await;
    assert_eq!(r.code(), 422);
    // The rule is shown twice (the message and the cause), and only twice.
    assert!(r.body.len() < 4 * text.len(), "{} bytes", r.body.len());
    // Many syntax errors: cel-go reports at most 100.
    let text = vec!["self.a ==="; 300].join(" && ");
    let r = dry_run_crd(
        &k,
        &crd_with(rule(&text), json!({"a": {"type": "integer"}})),
    )
    .await;
    assert_eq!(r.code(), 422);
    let message = r.json()["details"]["causes"][0]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    let errors = message.matches("ERROR: <input>").count();
    assert!((1..=100).contains(&errors), "{errors} errors");
}

const CUBIC: &str = "self.l.all(x, self.l.all(y, self.l.all(z, x + y + z >= 0)))";

#[tokio::test]
async fn a_rule_whose_estimated_cost_is_too_high_is_refused_at_crd_write() {
    let k = Kube::start().await;
    let unbounded = json!({"l": {"type": "array", "items": {"type": "integer"}}});
    let r = k.post(CRDS, &crd_with(rule(CUBIC), unbounded)).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    let cause = &r.json()["details"]["causes"][0];
    assert_eq!(cause["reason"], "FieldValueForbidden");
    assert_eq!(cause["field"], RULE_FIELD);
    assert_eq!(
        cause["message"],
        "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    );
    // Bounded tightly enough, the same rule is accepted.
    let bounded = json!({"l": {"type": "array", "maxItems": 10, "items": {"type": "integer"}}});
    let r = k.post(CRDS, &crd_with(rule(CUBIC), bounded)).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
}

const WIDGETS: &str = "/apis/hostile.example.com/v1/namespaces/default/widgets";

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "hostile.example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec})
}

fn ints(n: usize) -> Value {
    Value::Array((0..n).map(|i| json!(i)).collect())
}

#[tokio::test]
async fn objects_over_the_runtime_cost_budget_are_refused() {
    let k = Kube::start().await;
    // Quadratic, bounded: under the per-rule estimate limit at CRD write.
    let quadratic = "self.l.all(x, self.l.exists(y, y == x))";
    let props = json!({"l": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}}});
    k.create_crd(&crd_with(rule(quadratic), props)).await;
    let small = k
        .post(WIDGETS, &widget("small", json!({"l": ints(100)})))
        .await;
    assert_eq!(
        small.code(),
        201,
        "{}",
        String::from_utf8_lossy(&small.body)
    );
    // A thousand items cost one evaluation more than one call may.
    let big = k
        .post(WIDGETS, &widget("big", json!({"l": ints(1000)})))
        .await;
    assert_eq!(big.code(), 422, "{}", String::from_utf8_lossy(&big.body));
    let cause = &big.json()["details"]["causes"][0];
    assert_eq!(cause["field"], "spec");
    assert_eq!(
        cause["message"],
        format!("Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {quadratic}")
    );
}

#[tokio::test]
async fn all_rules_of_an_object_share_one_budget() {
    let k = Kube::start().await;
    // One rule per group; a hundred groups of a hundred items.
    let group_rule = "self.l.all(x, self.l.exists(y, y == x))";
    let props = json!({"groups": {"type": "array", "maxItems": 100, "items": {
        "type": "object",
        "x-kubernetes-validations": [{"rule": group_rule}, {"rule": group_rule.replace("==", ">=")}],
        "properties": {"l": {"type": "array", "maxItems": 100, "items": {"type": "integer"}}}}}});
    k.create_crd(&crd_with(json!([]), props)).await;
    let groups = |n: usize| Value::Array((0..n).map(|_| json!({"l": ints(100)})).collect());
    let few = k
        .post(WIDGETS, &widget("few", json!({"groups": groups(5)})))
        .await;
    assert_eq!(few.code(), 201, "{}", String::from_utf8_lossy(&few.body));
    let many = k
        .post(WIDGETS, &widget("many", json!({"groups": groups(100)})))
        .await;
    assert_eq!(many.code(), 422, "{}", String::from_utf8_lossy(&many.body));
    let cause = &many.json()["details"]["causes"][0];
    assert_eq!(
        cause["message"],
        "Invalid value: \"object\": validation failed due to running out of cost budget, no further validation rules will be run"
    );
}

/// On a single-threaded runtime, work done on the thread that serves
/// connections stops every other request until it is done.
#[tokio::test(flavor = "current_thread")]
async fn validation_does_not_run_on_the_threads_serving_connections() {
    let k = std::sync::Arc::new(Kube::start().await);
    let quadratic = "self.l.all(x, self.l.exists(y, y == x))";
    let props = json!({"l": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}}});
    k.create_crd(&crd_with(rule(quadratic), props)).await;
    // Just under one call's limit: the slowest write a client can cause.
    let slow = {
        let k = k.clone();
        tokio::spawn(async move {
            k.post(WIDGETS, &widget("slow", json!({"l": ints(350)})))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    let health = k.get("/healthz").await;
    assert_eq!(health.code(), 200);
    assert!(
        !slow.is_finished(),
        "the health check waited for the validation"
    );
    assert_eq!(slow.await.unwrap().code(), 201);
}

#[tokio::test]
async fn yaml_alias_bombs_are_refused() {
    let k = Kube::start().await;
    let mut doc = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\nx:\n  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let mut prev = 'a';
    for name in 'b'..='j' {
        let refs = vec![format!("*{prev}"); 9].join(",");
        doc.push_str(&format!("  {name}: &{name} [{refs}]\n"));
        prev = name;
    }
    let r = k
        .raw("POST", CMS, Some("application/yaml"), doc, None)
        .await;
    assert_eq!(r.code(), 400, "{}", String::from_utf8_lossy(&r.body));
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("yaml: document contains excessive aliasing"),
        "{}",
        r.json()
    );
    // Few aliases of long strings: bounded in bytes.
    let long = "x".repeat(1 << 20);
    let doc = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: long\ndata:\n  a: &a \"{long}\"\n  b: *a\n  c: *a\n  d: *a\n  e: *a\n");
    let r = k
        .raw("POST", CMS, Some("application/yaml"), doc, None)
        .await;
    assert_eq!(r.code(), 400, "{}", String::from_utf8_lossy(&r.body));
    // Anchors used as intended still work.
    let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n  labels: &l {app: web}\n  annotations: *l\n";
    let r = k
        .raw("POST", CMS, Some("application/yaml"), doc, None)
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["metadata"]["annotations"]["app"], "web");
}

#[tokio::test]
async fn watch_history_is_bounded_in_bytes_and_answers_410_past_it() {
    let k = Kube::with(ApiServer::builder().watch_history_bytes(1 << 20)).await;
    let first = k.configmap("default", "big", json!({})).await;
    let value = "v".repeat(300 << 10);
    for i in 0..6 {
        let r = k
            .merge(
                &format!("{CMS}/big"),
                &json!({"data": {"v": format!("{i}{value}")}}),
            )
            .await;
        assert_eq!(r.code(), 200);
    }
    let mut w = k
        .watch(&format!(
            "{CMS}?watch=1&resourceVersion={}",
            common::rv(&first)
        ))
        .await;
    let e = w.next().await;
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 410);
    assert_eq!(e["object"]["reason"], "Expired");
    // The recent past is still there.
    let latest = k.get(&format!("{CMS}/big")).await.json();
    let mut w = k
        .watch(&format!(
            "{CMS}?watch=1&resourceVersion={}",
            common::rv(&latest) - 1
        ))
        .await;
    assert_eq!(w.next().await["type"], "MODIFIED");
}
