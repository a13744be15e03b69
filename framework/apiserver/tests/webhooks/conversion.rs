//! CRD conversion through the CRD's webhook: a widget written at one
//! version reads at the other and back unchanged, on get, list, watch and
//! every write; no call when the versions match; kube-apiserver's checks
//! of the response, each answered as its 500.

use serde_json::{json, Value};

use crate::common::Kube;
use crate::server::{convert_widget, Answer, Convert, Webhook};

const V1: &str = "/apis/ex.com/v1/namespaces/default/widgets";
const V2: &str = "/apis/ex.com/v2/namespaces/default/widgets";

/// Widgets: `spec.size` at v1 (stored), `spec.replicas` at v2, converted
/// by `hook` at `path` with these review versions.
pub(crate) async fn install(kube: &Kube, hook: &Webhook, path: &str, review_versions: Value) {
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}})
    };
    kube.create_crd(&json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.ex.com"},
        "spec": {"group": "ex.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("size")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("replicas")}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": hook.url(path), "caBundle": hook.ca_bundle},
                "conversionReviewVersions": review_versions}}}
    }))
    .await;
}

pub(crate) fn widget(version: &str, name: &str, size: i64) -> Value {
    let field = if version == "v1" { "size" } else { "replicas" };
    json!({"apiVersion": format!("ex.com/{version}"), "kind": "Widget",
        "metadata": {"name": name, "labels": {"app": "w"}}, "spec": {field: size}})
}

fn created(r: &crate::common::Resp) -> Value {
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

#[tokio::test]
async fn a_widget_written_at_v1_reads_at_v2_and_back_unchanged() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    install(&kube, &hook, "/convert", json!(["v1"])).await;
    let at_v1 = created(&kube.post(V1, &widget("v1", "a", 3)).await);
    let again = kube.get(&format!("{V1}/a")).await.json();
    assert_eq!(again, at_v1);
    assert!(hook.seen("/convert").is_empty(), "same version: no call");

    let at_v2 = kube.get(&format!("{V2}/a")).await;
    assert_eq!(
        at_v2.code(),
        200,
        "{}",
        String::from_utf8_lossy(&at_v2.body)
    );
    let at_v2 = at_v2.json();
    assert_eq!(at_v2["apiVersion"], "ex.com/v2");
    assert_eq!(at_v2["spec"], json!({"replicas": 3}));
    assert_eq!(at_v2["metadata"], at_v1["metadata"]);
    let seen = hook.seen("/convert");
    assert_eq!(seen.len(), 1);
    let (url, request) = &seen[0];
    assert!(url.ends_with("?timeout=30s"), "{url}");
    assert_eq!(request["desiredAPIVersion"], "ex.com/v2");
    assert_eq!(request["objects"], json!([at_v1]));
    assert_eq!(request["uid"].as_str().map(str::len), Some(36));

    // Back at v1: what was stored, unchanged.
    assert_eq!(convert_widget(&at_v2, "ex.com/v1"), at_v1);
    assert_eq!(kube.get(&format!("{V1}/a")).await.json(), at_v1);

    // A write at v2 is stored at v1 and answered at v2.
    let mut changed = at_v2.clone();
    changed["spec"]["replicas"] = json!(5);
    let r = kube.put(&format!("{V2}/a"), &changed).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let put = r.json();
    assert_eq!(put["apiVersion"], "ex.com/v2");
    assert_eq!(put["spec"], json!({"replicas": 5}));
    let stored = kube.get(&format!("{V1}/a")).await.json();
    assert_eq!(stored["spec"], json!({"size": 5}));
    assert_eq!(
        stored["metadata"]["resourceVersion"],
        put["metadata"]["resourceVersion"]
    );

    let r = kube
        .merge(&format!("{V2}/a"), &json!({"spec": {"replicas": 6}}))
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["spec"], json!({"replicas": 6}));
    assert_eq!(
        kube.get(&format!("{V1}/a")).await.json()["spec"],
        json!({"size": 6})
    );

    let made = created(&kube.post(V2, &widget("v2", "b", 7)).await);
    assert_eq!(made["apiVersion"], "ex.com/v2");
    assert_eq!(made["spec"], json!({"replicas": 7}));
    assert_eq!(
        kube.get(&format!("{V1}/b")).await.json()["spec"],
        json!({"size": 7})
    );
    // Every request at v2 asked for v1 on the way in, v2 on the way out.
    let desired: Vec<String> = hook
        .seen("/convert")
        .iter()
        .map(|(_, r)| r["desiredAPIVersion"].as_str().unwrap_or("").to_owned())
        .collect();
    assert!(desired.contains(&"ex.com/v1".to_owned()), "{desired:?}");

    let r = kube.delete(&format!("{V2}/b")).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    let gone = r.json();
    assert_eq!(gone["status"], "Success");
}

#[tokio::test]
async fn lists_and_watches_at_the_other_version_are_converted() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    install(&kube, &hook, "/convert", json!(["v1"])).await;
    created(&kube.post(V1, &widget("v1", "a", 1)).await);
    created(&kube.post(V1, &widget("v1", "b", 2)).await);

    let list = kube.get(V2).await;
    assert_eq!(list.code(), 200, "{}", String::from_utf8_lossy(&list.body));
    let list = list.json();
    assert_eq!(list["apiVersion"], "ex.com/v2");
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 2);
    for (item, size) in items.iter().zip([1, 2]) {
        assert_eq!(item["apiVersion"], "ex.com/v2");
        assert_eq!(item["spec"], json!({"replicas": size}));
    }
    // One review for the page, with both objects.
    let seen = hook.seen("/convert");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1["objects"].as_array().map(Vec::len), Some(2));
    // The stored version's list makes no call.
    assert_eq!(
        kube.get(V1).await.json()["items"][0]["spec"],
        json!({"size": 1})
    );
    assert_eq!(hook.seen("/convert").len(), 1);

    let mut watch = kube.watch(&format!("{V2}?watch=true")).await;
    for size in [1, 2] {
        let event = watch.next().await;
        assert_eq!(event["type"], "ADDED");
        assert_eq!(event["object"]["apiVersion"], "ex.com/v2");
        assert_eq!(event["object"]["spec"], json!({"replicas": size}));
    }
    created(&kube.post(V1, &widget("v1", "c", 9)).await);
    let event = watch.next().await;
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["metadata"]["name"], "c");
    assert_eq!(event["object"]["spec"], json!({"replicas": 9}));
    kube.merge(&format!("{V1}/c"), &json!({"spec": {"size": 10}}))
        .await;
    let event = watch.next().await;
    assert_eq!(event["type"], "MODIFIED");
    assert_eq!(event["object"]["spec"], json!({"replicas": 10}));

    // Table output is built from the converted objects too.
    let table = kube
        .get_accept(V2, "application/json;as=Table;v=v1;g=meta.k8s.io")
        .await
        .json();
    assert_eq!(table["rows"].as_array().map(Vec::len), Some(3));
}

/// The 500 a read at v2 gets when the webhook answers `mode`.
async fn failed_read(mode: Convert, list: bool) -> Value {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    install(&kube, &hook, "/convert", json!(["v1"])).await;
    created(&kube.post(V1, &widget("v1", "a", 1)).await);
    if list {
        created(&kube.post(V1, &widget("v1", "b", 2)).await);
    }
    hook.on("/convert", Answer::Convert(mode));
    let r = if list {
        kube.get(V2).await
    } else {
        kube.get(&format!("{V2}/a")).await
    };
    assert_eq!(r.code(), 500, "{}", String::from_utf8_lossy(&r.body));
    let status = r.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["code"], 500);
    assert!(status.get("reason").is_none(), "{status}");
    status
}

#[tokio::test]
async fn responses_are_checked_as_kube_apiserver_checks_them() {
    let head = "conversion webhook for ex.com/v1, Kind=Widget";
    let message = |s: Value| s["message"].as_str().unwrap_or("").to_owned();
    assert_eq!(
        message(failed_read(Convert::Failure("cannot convert widgets today"), false).await),
        format!("{head} failed: cannot convert widgets today")
    );
    let wrong_uid = message(failed_read(Convert::WrongUid, false).await);
    assert!(
        wrong_uid.starts_with(&format!("{head} failed: expected response.uid=\""))
            && wrong_uid.ends_with("got \"not-the-request-uid\""),
        "{wrong_uid}"
    );
    assert_eq!(
        message(failed_read(Convert::TooFew, true).await),
        format!("{head} returned 1 objects, expected 2")
    );
    assert_eq!(
        message(failed_read(Convert::SameVersion, false).await),
        format!("{head} returned invalid object at index 0: invalid groupVersion (expected ex.com/v2, received ex.com/v1)")
    );
    assert_eq!(
        message(failed_read(Convert::SameVersion, true).await),
        format!("{head} returned invalid converted object at index 1: invalid groupVersion (expected ex.com/v2, received ex.com/v1)")
    );
    assert_eq!(
        message(failed_read(Convert::Renamed, false).await),
        format!("{head} returned invalid object: must have the same name: a != renamed")
    );
    let bad_label = message(failed_read(Convert::BadLabel, false).await);
    assert!(
        bad_label.starts_with(&format!(
            "{head} returned invalid metadata: metadata.labels: Invalid value: \"-no-\": a valid label must be"
        )),
        "{bad_label}"
    );
    let server_error = message(failed_read(Convert::ServerError, false).await);
    assert!(
        server_error.starts_with(&format!("{head} failed: Post \"https://127.0.0.1:"))
            && server_error.ends_with(
                "the server responded with the status code 500 but did not return more information"
            ),
        "{server_error}"
    );
}

#[tokio::test]
async fn only_labels_and_annotations_of_the_answer_survive() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    install(&kube, &hook, "/convert", json!(["v1"])).await;
    let stored = created(&kube.post(V1, &widget("v1", "a", 1)).await);
    hook.on("/convert", Answer::Convert(Convert::Relabel));
    let read = kube.get(&format!("{V2}/a")).await.json();
    assert_eq!(
        read["metadata"]["labels"],
        json!({"app": "w", "converted": "yes"})
    );
    assert_eq!(
        read["metadata"]["resourceVersion"],
        stored["metadata"]["resourceVersion"]
    );
    assert!(read["metadata"].get("finalizers").is_none(), "{read}");
}

#[tokio::test]
async fn a_failing_webhook_fails_writes_and_ends_watches() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    install(&kube, &hook, "/convert", json!(["v1"])).await;
    created(&kube.post(V1, &widget("v1", "a", 1)).await);
    let mut watch = kube.watch(&format!("{V2}?watch=true")).await;
    assert_eq!(watch.next().await["object"]["spec"], json!({"replicas": 1}));
    hook.on("/convert", Answer::Convert(Convert::Failure("down")));
    let r = kube.post(V2, &widget("v2", "b", 2)).await;
    assert_eq!(r.code(), 500);
    assert_eq!(
        r.json()["message"],
        "conversion webhook for ex.com/v2, Kind=Widget failed: down"
    );
    assert_eq!(kube.get(&format!("{V1}/b")).await.code(), 404);
    // Writes at the storage version need no webhook.
    created(&kube.post(V1, &widget("v1", "c", 3)).await);
    let event = watch.next().await;
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 500);
    assert_eq!(
        event["object"]["message"],
        "conversion webhook for ex.com/v1, Kind=Widget failed: down"
    );
    assert!(watch.ends_within(std::time::Duration::from_secs(5)).await);
}

#[tokio::test]
async fn review_versions_are_honoured() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    // v1beta1 first: kube-apiserver checks neither the kind nor the uid
    // of a v1beta1 answer.
    install(&kube, &hook, "/convert", json!(["v1beta1", "v1"])).await;
    created(&kube.post(V1, &widget("v1", "a", 4)).await);
    hook.on("/convert", Answer::Convert(Convert::WrongUid));
    let r = kube.get(&format!("{V2}/a")).await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["spec"], json!({"replicas": 4}));
}

/// An admission webhook on widgets registered for `version`.
fn widget_hook(hook: &Webhook, name: &str, path: &str, version: &str, extra: Value) -> Value {
    let mut w = json!({
        "name": name,
        "clientConfig": {"url": hook.url(path), "caBundle": hook.ca_bundle},
        "rules": [{"operations": ["CREATE"], "apiGroups": ["ex.com"], "apiVersions": [version], "resources": ["widgets"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(w), Some(extra)) = (w.as_object_mut(), extra.as_object()) {
        w.extend(extra.clone());
    }
    w
}

#[tokio::test]
async fn equivalent_webhooks_see_the_object_at_the_version_they_registered_for() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    install(&kube, &hook, "/convert", json!(["v1"])).await;
    hook.on(
        "/mutate",
        Answer::Patch(json!([{"op": "replace", "path": "/spec/replicas", "value": 9}])),
    );
    crate::configure(
        &kube,
        crate::MUTATING,
        "widgets-v2",
        vec![widget_hook(
            &hook,
            "mutate.ex.com",
            "/mutate",
            "v2",
            json!({}),
        )],
    )
    .await;
    crate::configure(
        &kube,
        crate::VALIDATING,
        "widgets-v2",
        vec![
            widget_hook(&hook, "equivalent.ex.com", "/equivalent", "v2", json!({})),
            widget_hook(
                &hook,
                "exact.ex.com",
                "/exact",
                "v2",
                json!({"matchPolicy": "Exact"}),
            ),
        ],
    )
    .await;
    let made = created(&kube.post(V1, &widget("v1", "a", 1)).await);
    // The v2 webhook's patch, made at v2, converted back to v1.
    assert_eq!(made["spec"], json!({"size": 9}));
    assert_eq!(
        kube.get(&format!("{V1}/a")).await.json()["spec"],
        json!({"size": 9})
    );

    let mutated = hook.seen("/mutate");
    assert_eq!(mutated.len(), 1);
    let request = &mutated[0].1;
    assert_eq!(
        request["kind"],
        json!({"group": "ex.com", "version": "v2", "kind": "Widget"})
    );
    assert_eq!(
        request["requestKind"],
        json!({"group": "ex.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(request["resource"]["version"], "v2");
    assert_eq!(request["requestResource"]["version"], "v1");
    assert_eq!(request["object"]["apiVersion"], "ex.com/v2");
    assert_eq!(request["object"]["spec"], json!({"replicas": 1}));

    let validated = hook.seen("/equivalent");
    assert_eq!(validated.len(), 1);
    assert_eq!(validated[0].1["object"]["spec"], json!({"replicas": 9}));
    assert!(hook.seen("/exact").is_empty(), "Exact does not match v1");

    // A request at v2 matches both exactly; the objects need no conversion.
    created(&kube.post(V2, &widget("v2", "b", 2)).await);
    assert_eq!(hook.seen("/exact").len(), 1);
    assert_eq!(hook.seen("/exact")[0].1["requestKind"]["version"], "v2");
}

#[tokio::test]
async fn a_conversion_failing_for_an_equivalent_webhook_is_an_internal_error() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    install(&kube, &hook, "/convert", json!(["v1"])).await;
    hook.on("/convert", Answer::Convert(Convert::Failure("down")));
    let converter = "conversion webhook for ex.com/v1, Kind=Widget failed: down";

    // A validating webhook registered for v2: the dispatcher's
    // `NewInternalError` around the converter's error.
    crate::configure(
        &kube,
        crate::VALIDATING,
        "widgets-v2",
        vec![widget_hook(
            &hook,
            "check.ex.com",
            "/check",
            "v2",
            json!({}),
        )],
    )
    .await;
    let r = kube.post(V1, &widget("v1", "a", 1)).await;
    assert_eq!(r.code(), 500, "{}", String::from_utf8_lossy(&r.body));
    let status = r.json();
    assert_eq!(status["reason"], "InternalError");
    assert_eq!(status["code"], 500);
    assert_eq!(
        status["message"],
        format!("Internal error occurred: {converter}")
    );
    assert_eq!(status["details"]["causes"], json!([{"message": converter}]));
    assert!(hook.seen("/check").is_empty());
    assert_eq!(kube.get(&format!("{V1}/a")).await.code(), 404);
    let r = kube
        .delete(&format!("{}/widgets-v2", crate::VALIDATING))
        .await;
    assert_eq!(r.code(), 200, "{}", String::from_utf8_lossy(&r.body));

    // A mutating one: its versioned-attribute accessor wraps the error
    // before the dispatcher does.
    crate::configure(
        &kube,
        crate::MUTATING,
        "widgets-v2",
        vec![widget_hook(
            &hook,
            "mutate.ex.com",
            "/mutate",
            "v2",
            json!({}),
        )],
    )
    .await;
    let r = kube.post(V1, &widget("v1", "a", 1)).await;
    assert_eq!(r.code(), 500, "{}", String::from_utf8_lossy(&r.body));
    let status = r.json();
    assert_eq!(status["reason"], "InternalError");
    assert_eq!(
        status["message"],
        format!("Internal error occurred: Internal error occurred: {converter}")
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"message": format!("Internal error occurred: {converter}")}])
    );
    assert!(hook.seen("/mutate").is_empty());

    // Reads go through the storage codec: a plain error, no reason.
    hook.on("/convert", Answer::Convert(Convert::Rename));
    created(&kube.post(V1, &widget("v1", "b", 2)).await);
    hook.on("/convert", Answer::Convert(Convert::Failure("down")));
    let r = kube.get(&format!("{V2}/b")).await;
    assert_eq!(r.code(), 500);
    assert!(r.json().get("reason").is_none());
}
