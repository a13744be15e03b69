//! What both sides cache: ConfigMaps of about 1 KiB as written, 1.3 KiB
//! as served once the server has added its metadata and managedFields,
//! spread over a few namespaces; and Pods as a Deployment's ReplicaSet
//! makes them and a kubelet reports them running (about 4 KiB as served),
//! for the lists inside an object.

use std::collections::BTreeMap;

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube_core::params::PostParams;
use kube_core::ObjectMeta;
use kubeforge::{Api, Client};
use serde_json::json;

/// The namespaces the ConfigMaps are spread over.
const NAMESPACES: usize = 10;

/// Writes in flight while filling the server.
const WRITERS: usize = 32;

/// The `i`th ConfigMap: a 700-byte value, two labels and an annotation.
pub fn configmap(i: usize) -> ConfigMap {
    let value: String = (0..700)
        .map(|j| char::from(b'a' + ((i + j) % 26) as u8))
        .collect();
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("config-{i:06}")),
            labels: Some(BTreeMap::from([
                ("app".to_owned(), format!("app-{}", i % 50)),
                ("tier".to_owned(), "backend".to_owned()),
            ])),
            annotations: Some(BTreeMap::from([(
                "example.com/owner".to_owned(),
                "team-storage".to_owned(),
            )])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([
            ("settings.conf".to_owned(), value),
            ("mode".to_owned(), "fast".to_owned()),
        ])),
        ..Default::default()
    }
}

/// A typed object both sides can cache.
pub trait Cacheable:
    kube_core::Resource<DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Cacheable for K where
    K: kube_core::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// What the bench fills the server with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    ConfigMaps,
    Pods,
}

impl Kind {
    /// The kind whose [`plural`](Self::plural) is `s`.
    pub fn parse(s: &str) -> anyhow::Result<Self> {
        [Self::ConfigMaps, Self::Pods]
            .into_iter()
            .find(|kind| kind.plural() == s)
            .with_context(|| format!("unknown kind {s:?}"))
    }

    /// The plural in a table's heading and a list's path.
    pub fn plural(self) -> &'static str {
        match self {
            Self::ConfigMaps => "configmaps",
            Self::Pods => "pods",
        }
    }

    /// The name in a table's heading.
    pub fn title(self) -> &'static str {
        match self {
            Self::ConfigMaps => "ConfigMaps",
            Self::Pods => "Pods",
        }
    }
}

/// Pods per ReplicaSet.
const PODS_PER_OWNER: usize = 10;

/// The namespace of the `i`th object: a ReplicaSet's Pods share one.
fn namespace_of(kind: Kind, i: usize) -> String {
    let spread = match kind {
        Kind::ConfigMaps => i,
        Kind::Pods => i / PODS_PER_OWNER,
    };
    format!("bench-{}", spread % NAMESPACES)
}

/// The ReplicaSet that owns the Pods `PODS_PER_OWNER * owner` and on: it
/// exists so that the server's garbage collector keeps its Pods, and no
/// controller runs it.
fn replica_set(owner: usize) -> anyhow::Result<ReplicaSet> {
    let labels =
        json!({"app": format!("web-{}", owner % 50), "pod-template-hash": format!("{owner:09x}")});
    Ok(serde_json::from_value(json!({
        "metadata": {"name": format!("web-{owner:09x}"), "labels": labels},
        "spec": {
            "replicas": PODS_PER_OWNER,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "registry.example.com/web:1.27"}]},
            },
        },
    }))?)
}

/// The `i`th Pod as written by its ReplicaSet (`owner_uid`): one container
/// with two environment variables, a port, requests and a mounted
/// projected volume (what the service-account admission adds), two
/// tolerations.
pub fn pod(i: usize, owner_uid: &str) -> anyhow::Result<Pod> {
    let owner = i / PODS_PER_OWNER;
    let hash = format!("{owner:09x}");
    Ok(serde_json::from_value(json!({
        "metadata": {
            "name": format!("web-{hash}-{i:06}"),
            "labels": {"app": format!("web-{}", owner % 50), "pod-template-hash": hash},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("web-{hash}"),
                "uid": owner_uid, "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "containers": [{
                "name": "web",
                "image": "registry.example.com/web:1.27",
                "imagePullPolicy": "IfNotPresent",
                "env": [
                    {"name": "MODE", "value": "production"},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                ],
                "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    "name": "kube-api-access", "readOnly": true,
                }],
            }],
            "dnsPolicy": "ClusterFirst",
            "nodeName": format!("node-{}", i % 20),
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
            ],
            "volumes": [{
                "name": "kube-api-access",
                "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}},
                ]},
            }],
        },
    }))?)
}

/// The status a kubelet reports for pod `i` once its container runs: five
/// conditions, one container status, the pod's and host's IPs.
fn running_status(i: usize) -> serde_json::Value {
    let at = "2026-11-20T10:00:05Z";
    let condition = |ty: &str| json!({"type": ty, "status": "True", "lastProbeTime": null, "lastTransitionTime": at});
    let pod_ip = format!("10.244.{}.{}", (i / 250) % 250, i % 250 + 2);
    let host_ip = format!("172.18.0.{}", i % 20 + 2);
    let conditions = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    .map(condition);
    json!({
        "phase": "Running",
        "conditions": conditions,
        "containerStatuses": [{
            "name": "web", "ready": true, "started": true, "restartCount": 0,
            "image": "registry.example.com/web:1.27",
            "imageID": "registry.example.com/web@sha256:4f1c0e1b6f0a7c2d9e8b3a5f6d7c8b9a0e1f2d3c4b5a69788796a5b4c3d2e1f0",
            "containerID": format!("containerd://{i:064x}"),
            "state": {"running": {"startedAt": at}},
            "lastState": {},
        }],
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
        "qosClass": "Burstable",
        "startTime": at,
    })
}

/// Creates the namespaces and `n` objects of `kind`. Pods come with the
/// ReplicaSets that own them; each is created, then its status written as
/// a kubelet's would be.
pub async fn populate(client: &Client, kind: Kind, n: usize) -> anyhow::Result<()> {
    let namespaces = Api::<Namespace>::all(client.clone());
    for i in 0..NAMESPACES {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(format!("bench-{i}")),
                ..Default::default()
            },
            ..Default::default()
        };
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .with_context(|| format!("creating namespace bench-{i}"))?;
    }
    let owners: Vec<String> = match kind {
        Kind::ConfigMaps => Vec::new(),
        Kind::Pods => {
            futures::stream::iter(0..n.div_ceil(PODS_PER_OWNER))
                .map(|owner| {
                    let rs = Api::<ReplicaSet>::namespaced(
                        client.clone(),
                        &namespace_of(kind, owner * PODS_PER_OWNER),
                    );
                    async move {
                        let created = rs
                            .create(&PostParams::default(), &replica_set(owner)?)
                            .await
                            .with_context(|| format!("creating ReplicaSet {owner}"))?;
                        Ok::<_, anyhow::Error>(created.metadata.uid.unwrap_or_default())
                    }
                })
                .buffered(WRITERS)
                .try_collect()
                .await?
        }
    };
    let owners = &owners;
    futures::stream::iter(0..n)
        .map(|i| {
            let namespace = namespace_of(kind, i);
            let client = client.clone();
            async move {
                match kind {
                    Kind::ConfigMaps => Api::<ConfigMap>::namespaced(client, &namespace)
                        .create(&PostParams::default(), &configmap(i))
                        .await
                        .with_context(|| format!("creating ConfigMap {i}"))
                        .map(drop),
                    Kind::Pods => {
                        let owner = &owners[i / PODS_PER_OWNER];
                        create_running_pod(client, &namespace, i, owner).await
                    }
                }
            }
        })
        .buffer_unordered(WRITERS)
        .try_collect::<()>()
        .await
}

async fn create_running_pod(
    client: Client,
    namespace: &str,
    i: usize,
    owner_uid: &str,
) -> anyhow::Result<()> {
    let pods = Api::<Pod>::namespaced(client, namespace);
    let created = pods
        .create(&PostParams::default(), &pod(i, owner_uid)?)
        .await
        .with_context(|| format!("creating Pod {i}"))?;
    let name = created.metadata.name.clone().unwrap_or_default();
    let mut running = serde_json::to_value(&created)?;
    running["status"] = running_status(i);
    pods.replace_status(&name, &PostParams::default(), &running)
        .await
        .with_context(|| format!("writing the status of Pod {i}"))?;
    Ok(())
}
