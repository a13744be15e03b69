//! A kube-rs project testing against `kubeforge-apiserver`: `kube::Client`
//! from the server's kubeconfig, CRUD, a `kube::runtime` reflector that
//! syncs and sees updates and deletions, and a `kube::runtime::Controller`
//! that reconciles a custom resource into an owned ConfigMap and writes its
//! status. Nothing here uses kubeforge's runtime.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use kubeforge_apiserver::ApiServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A greeting to keep in a ConfigMap.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "kube-rs.example.com",
    version = "v1",
    kind = "Greeting",
    namespaced,
    status = "GreetingStatus"
)]
pub struct GreetingSpec {
    /// What to say.
    pub message: String,
}

/// What the controller last wrote.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub struct GreetingStatus {
    /// The message the ConfigMap holds.
    pub written: String,
}

/// A client for `server`, made the way a kube-rs user makes one from a
/// kubeconfig file.
async fn client(server: &ApiServer) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig().unwrap()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

/// Polls `check` every 10 ms until it is true; fails after 10 s.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..1000 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

#[tokio::test]
async fn crud_with_kube_client() {
    let server = ApiServer::start().await.unwrap();
    let client = client(&server).await;
    let info = client.apiserver_version().await.unwrap();
    assert!(!info.git_version.is_empty());

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("settings".into()),
            labels: Some(BTreeMap::from([("app".into(), "demo".into())])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("color".into(), "red".into())])),
        ..Default::default()
    };
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    assert!(created.resource_version().is_some());

    let got = cms.get("settings").await.unwrap();
    assert_eq!(got.data.as_ref().unwrap()["color"], "red");

    let mut replace = got.clone();
    replace.data = Some(BTreeMap::from([("color".into(), "blue".into())]));
    cms.replace("settings", &PostParams::default(), &replace)
        .await
        .unwrap();
    // The copy from before the replace is stale: 409.
    let stale = cms
        .replace("settings", &PostParams::default(), &got)
        .await
        .unwrap_err();
    assert!(
        matches!(&stale, kube::Error::Api(s) if s.code == 409),
        "{stale:?}"
    );

    let patched = cms
        .patch(
            "settings",
            &PatchParams::apply("kube-rs-test"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"size": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.as_ref().unwrap()["size"], "3");

    let listed = cms
        .list(&ListParams::default().labels("app=demo"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);

    cms.delete("settings", &DeleteParams::default())
        .await
        .unwrap();
    let missing = cms.get_opt("settings").await.unwrap();
    assert!(missing.is_none());
}

#[tokio::test]
async fn a_reflector_syncs_and_follows_changes() {
    let server = ApiServer::start().await.unwrap();
    let client = client(&server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let before = |name: &str| ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    cms.create(&PostParams::default(), &before("early"))
        .await
        .unwrap();

    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(cms.clone(), watcher::Config::default()))
        .applied_objects()
        .for_each(|_| async {});
    let task = tokio::spawn(stream);
    reader.wait_until_ready().await.unwrap();
    assert!(reader
        .get(&ObjectRef::new("early").within("default"))
        .is_some());

    cms.create(&PostParams::default(), &before("late"))
        .await
        .unwrap();
    cms.patch(
        "early",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    cms.delete("late", &DeleteParams::default()).await.unwrap();
    cms.create(&PostParams::default(), &before("last"))
        .await
        .unwrap();

    eventually("the store holds early (updated) and last, not late", || {
        let reader = reader.clone();
        async move {
            let early = reader.get(&ObjectRef::new("early").within("default"));
            let updated = early.is_some_and(|cm| cm.data.as_ref().is_some_and(|d| d["k"] == "v"));
            let late = reader.get(&ObjectRef::new("late").within("default"));
            let last = reader.get(&ObjectRef::new("last").within("default"));
            updated && late.is_none() && last.is_some()
        }
    })
    .await;
    task.abort();
}

#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

struct Ctx {
    client: Client,
}

/// Keeps a ConfigMap named after the Greeting, owned by it, holding the
/// message; records the message in the status.
async fn reconcile(greeting: Arc<Greeting>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let ns = greeting.namespace().unwrap();
    let name = greeting.name_any();
    let owner = greeting.controller_owner_ref(&()).unwrap();
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "message".into(),
            greeting.spec.message.clone(),
        )])),
        ..Default::default()
    };
    let apply = PatchParams::apply("greeting-controller").force();
    Api::<ConfigMap>::namespaced(ctx.client.clone(), &ns)
        .patch(&name, &apply, &Patch::Apply(&cm))
        .await?;
    let status = json!({
        "apiVersion": Greeting::api_version(&()),
        "kind": Greeting::kind(&()),
        "status": {"written": greeting.spec.message},
    });
    Api::<Greeting>::namespaced(ctx.client.clone(), &ns)
        .patch_status(&name, &apply, &Patch::Apply(status))
        .await?;
    Ok(Action::requeue(Duration::from_secs(300)))
}

fn error_policy(_: Arc<Greeting>, _: &ReconcileError, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(100))
}

#[tokio::test]
async fn a_controller_reconciles_a_custom_resource() {
    let server = ApiServer::start().await.unwrap();
    server.install_crd(Greeting::crd()).unwrap();
    let client = client(&server).await;
    let greetings: Api<Greeting> = Api::namespaced(client.clone(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    let controller = Controller::new(greetings.clone(), watcher::Config::default())
        .owns(cms.clone(), watcher::Config::default())
        .run(reconcile, error_policy, Arc::new(Ctx { client }))
        .for_each(|_| async {});
    let task = tokio::spawn(controller);

    greetings
        .create(
            &PostParams::default(),
            &Greeting::new(
                "hello",
                GreetingSpec {
                    message: "hi".into(),
                },
            ),
        )
        .await
        .unwrap();
    let message = |cms: Api<ConfigMap>| async move {
        cms.get_opt("hello")
            .await
            .unwrap()
            .and_then(|cm| cm.data)
            .and_then(|d| d.get("message").cloned())
    };
    eventually("the ConfigMap holds the message", || async {
        message(cms.clone()).await.as_deref() == Some("hi")
    })
    .await;
    eventually("the status records it", || async {
        let g = greetings.get_status("hello").await.unwrap();
        g.status.is_some_and(|s| s.written == "hi")
    })
    .await;

    // A change of spec is reconciled; so is a ConfigMap changed by hand,
    // through the owns() watch.
    greetings
        .patch(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"message": "hello"}})),
        )
        .await
        .unwrap();
    eventually("the new message is written", || async {
        message(cms.clone()).await.as_deref() == Some("hello")
    })
    .await;
    cms.patch(
        "hello",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"message": "tampered"}})),
    )
    .await
    .unwrap();
    eventually("the owned ConfigMap is put back", || async {
        message(cms.clone()).await.as_deref() == Some("hello")
    })
    .await;

    // Deleting the Greeting lets the server's garbage collector remove the
    // ConfigMap it owns.
    greetings
        .delete("hello", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the owned ConfigMap is collected", || async {
        cms.get_opt("hello").await.unwrap().is_none()
    })
    .await;
    task.abort();
}
