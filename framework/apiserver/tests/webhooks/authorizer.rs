//! Admission CEL's `authorizer` on an RBAC server: a webhook's
//! `matchConditions` and a policy's validations asking whether the
//! requesting user may do something else, and the cost budget that
//! authorization checks are charged to (each 350000; two fit one
//! expression), its overrun judged by the failure policy.

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::Full;
use kubeforge_apiserver::User;
use serde_json::{json, Value};

use crate::common::{Kube, Resp};
use crate::policies::{binding, policy, BINDINGS, POLICIES};
use crate::server::{Answer, Webhook};
use crate::{configmap, configure, webhook, CONFIGMAPS, VALIDATING};

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/default";

/// A user of the server, speaking with its own token.
struct Someone<'k> {
    kube: &'k Kube,
    token: String,
}

impl Someone<'_> {
    async fn create(&self, obj: &Value) -> Resp {
        let req = Request::builder()
            .method(Method::POST)
            .uri(format!("{}{CONFIGMAPS}", self.kube.base()))
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(obj.to_string())))
            .expect("request");
        self.kube.send(req).await
    }
}

/// A user `name` bound in `default` to a Role with `rules`.
async fn user<'k>(kube: &'k Kube, name: &str, rules: Value) -> Someone<'k> {
    let creds = kube.server.add_user(&User::new(name)).expect("user");
    for (collection, obj) in [
        (
            "roles",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": name}, "rules": rules,
            }),
        ),
        (
            "rolebindings",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}],
            }),
        ),
    ] {
        let r = kube.post(&format!("{RBAC}/{collection}"), &obj).await;
        assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    }
    Someone {
        kube,
        token: creds.bearer_token().expect("a token").to_owned(),
    }
}

fn configmaps(verbs: &[&str]) -> Value {
    json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs})
}

const CREATE_PODS: &str = "authorizer.group('').resource('pods').check('create').allowed()";

#[tokio::test]
async fn a_match_condition_asks_whether_the_user_may_create_pods() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    hook.on(
        "/deny",
        Answer::Deny(json!({"code": 403, "message": "pod creators are watched"})),
    );
    configure(
        &kube,
        VALIDATING,
        "pod-creators",
        vec![webhook(
            &hook,
            "pod-creators.example.com",
            "/deny",
            // In the request's namespace: without `.namespace()` a check
            // is cluster-wide, which a Role does not grant.
            json!({"matchConditions": [{
                "name": "creates-pods",
                "expression": "authorizer.group('').resource('pods').namespace(request.namespace).check('create').allowed()",
            }]}),
        )],
    )
    .await;
    let alice = user(&kube, "alice", json!([configmaps(&["create"])])).await;
    let bob = user(
        &kube,
        "bob",
        json!([
            configmaps(&["create"]),
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]},
        ]),
    )
    .await;
    let r = alice.create(&configmap("by-alice", json!({}))).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert!(hook.seen("/deny").is_empty(), "alice may not create pods");
    let r = bob.create(&configmap("by-bob", json!({}))).await;
    assert_eq!(r.code(), 403, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        "admission webhook \"pod-creators.example.com\" denied the request: pod creators are watched"
    );
    assert_eq!(hook.seen("/deny").len(), 1);
    // The review names the user the authorizer was asked about.
    let user_info = |i: usize| hook.seen("/deny")[i].1["userInfo"].clone();
    assert_eq!(user_info(0)["username"], "bob");
    assert_eq!(user_info(0)["groups"], json!(["system:authenticated"]));
    // The admin (system:masters) may do anything.
    let r = kube
        .post(CONFIGMAPS, &configmap("by-admin", json!({})))
        .await;
    assert_eq!(r.code(), 403);
    assert_eq!(hook.seen("/deny").len(), 2);
    assert_eq!(user_info(1)["username"], "admin");
    assert_eq!(
        user_info(1)["groups"],
        json!(["system:masters", "system:authenticated"])
    );
}

#[tokio::test]
async fn a_policy_denies_unless_the_user_may_update_a_subresource() {
    let kube = Kube::start().await;
    let scale = "authorizer.group('apps').resource('deployments').subresource('scale').namespace(request.namespace).check('update')";
    for (collection, obj) in [
        (
            POLICIES,
            policy(
                "scalers-only",
                json!({
                    "validations": [{
                        "expression": format!("{scale}.allowed()"),
                        "messageExpression": "'may not scale deployments in ' + request.namespace",
                    }, {
                        // The request's own resource, asked about another verb.
                        "expression": "authorizer.requestResource.check('delete').allowed()",
                        "message": "may not delete what it creates",
                    }],
                }),
            ),
        ),
        (BINDINGS, binding("scalers-only", "scalers-only", json!({}))),
    ] {
        let r = kube.post(collection, &obj).await;
        assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    }
    let alice = user(&kube, "alice", json!([configmaps(&["create", "delete"])])).await;
    let bob = user(
        &kube,
        "bob",
        json!([
            configmaps(&["create", "delete"]),
            {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"]},
        ]),
    )
    .await;
    let carol = user(
        &kube,
        "carol",
        json!([
            configmaps(&["create"]),
            {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"]},
        ]),
    )
    .await;
    let r = alice.create(&configmap("by-alice", json!({}))).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        "configmaps \"by-alice\" is forbidden: ValidatingAdmissionPolicy 'scalers-only' with binding 'scalers-only' denied request: may not scale deployments in default"
    );
    let r = bob.create(&configmap("by-bob", json!({}))).await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    let r = carol.create(&configmap("by-carol", json!({}))).await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        "configmaps \"by-carol\" is forbidden: ValidatingAdmissionPolicy 'scalers-only' with binding 'scalers-only' denied request: may not delete what it creates"
    );
}

#[tokio::test]
async fn a_match_condition_over_its_cost_limit_fails_closed_or_is_ignored() {
    let kube = Kube::start().await;
    let hook = Webhook::start().await;
    hook.on("/allow", Answer::Allow(Vec::new()));
    // Three checks: 1050000, over the 1000000 one expression may cost.
    let costly = format!("{CREATE_PODS} && {CREATE_PODS} && {CREATE_PODS}");
    for (name, policy) in [("fail", "Fail"), ("ignore", "Ignore")] {
        configure(
            &kube,
            VALIDATING,
            name,
            vec![webhook(
                &hook,
                &format!("{name}.example.com"),
                "/allow",
                json!({
                    "failurePolicy": policy,
                    "matchConditions": [{"name": "costly", "expression": costly}],
                    "objectSelector": {"matchLabels": {"policy": name}},
                }),
            )],
        )
        .await;
    }
    let r = kube
        .post(CONFIGMAPS, &configmap("closed", json!({"policy": "fail"})))
        .await;
    assert_eq!(r.code(), 403, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        format!("configmaps \"closed\" is forbidden: expression '{costly}' resulted in error: operation cancelled: actual cost limit exceeded")
    );
    let r = kube
        .post(CONFIGMAPS, &configmap("open", json!({"policy": "ignore"})))
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    assert!(hook.seen("/allow").is_empty(), "the webhook is skipped");
}

#[tokio::test]
async fn a_policy_over_its_cost_budget_fails_closed_or_is_ignored() {
    let kube = Kube::start().await;
    // Fifteen validations of two checks each: 10500000, over the
    // 10000000 one binding's evaluation may cost.
    let two = format!("{CREATE_PODS} && {CREATE_PODS}");
    let validations: Vec<Value> = (0..15).map(|_| json!({"expression": two})).collect();
    for (name, failure) in [("fail", "Fail"), ("ignore", "Ignore")] {
        let mut p = policy(
            name,
            json!({"failurePolicy": failure, "validations": validations}),
        );
        p["spec"]["matchConstraints"]["objectSelector"] = json!({"matchLabels": {"policy": name}});
        for (collection, obj) in [(POLICIES, p), (BINDINGS, binding(name, name, json!({})))] {
            let r = kube.post(collection, &obj).await;
            assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
        }
    }
    let r = kube
        .post(CONFIGMAPS, &configmap("closed", json!({"policy": "fail"})))
        .await;
    assert_eq!(r.code(), 422, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["message"],
        "configmaps \"closed\" is forbidden: ValidatingAdmissionPolicy 'fail' with binding 'fail' denied request: validation failed due to running out of cost budget, no further validation rules will be run"
    );
    let r = kube
        .post(CONFIGMAPS, &configmap("open", json!({"policy": "ignore"})))
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    // Fourteen fit.
    let mut p = policy(
        "fits",
        json!({"validations": (0..14).map(|_| json!({"expression": two})).collect::<Vec<_>>()}),
    );
    p["spec"]["matchConstraints"]["objectSelector"] = json!({"matchLabels": {"policy": "fits"}});
    for (collection, obj) in [
        (POLICIES, p),
        (BINDINGS, binding("fits", "fits", json!({}))),
    ] {
        let r = kube.post(collection, &obj).await;
        assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
    }
    let r = kube
        .post(CONFIGMAPS, &configmap("fits", json!({"policy": "fits"})))
        .await;
    assert_eq!(r.code(), 201, "{}", String::from_utf8_lossy(&r.body));
}
