//! A kube-rs operator as a binary, for running in-cluster: it finds its
//! configuration as any kube-rs binary does (`Client::try_default`: a
//! kubeconfig if there is one, else the in-cluster service-account files
//! and `KUBERNETES_SERVICE_HOST`) and answers each ConfigMap labelled
//! `greet=yes` in its namespace with `data.greeting`. Built by the
//! end-to-end test that deploys it on the dev server's kubelet.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::json;

async fn reconcile(cm: Arc<ConfigMap>, api: Arc<Api<ConfigMap>>) -> Result<Action, kube::Error> {
    let name = cm.name_any();
    let patch = json!({"data": {"greeting": format!("hello {name}")}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    println!("greeted {name}");
    Ok(Action::await_change())
}

fn error_policy(_: Arc<ConfigMap>, error: &kube::Error, _: Arc<Api<ConfigMap>>) -> Action {
    eprintln!("reconcile failed: {error}");
    Action::requeue(Duration::from_secs(1))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let namespace = client.default_namespace().to_owned();
    println!("connected; watching ConfigMaps in {namespace}");
    let api = Api::<ConfigMap>::namespaced(client, &namespace);
    Controller::new(api.clone(), watcher::Config::default().labels("greet=yes"))
        .run(reconcile, error_policy, Arc::new(api))
        .for_each(|_| async {})
        .await;
    Ok(())
}
