//! What both sides cache: ConfigMaps of about 1 KiB as written, 1.3 KiB
//! as served once the server has added its metadata and managedFields,
//! spread over a few namespaces.

use std::collections::BTreeMap;

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube_core::params::PostParams;
use kube_core::ObjectMeta;
use kubeforge::{Api, Client};

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

/// Creates the namespaces and `n` ConfigMaps.
pub async fn populate(client: &Client, n: usize) -> anyhow::Result<()> {
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
    futures::stream::iter(0..n)
        .map(|i| {
            let api =
                Api::<ConfigMap>::namespaced(client.clone(), &format!("bench-{}", i % NAMESPACES));
            async move {
                api.create(&PostParams::default(), &configmap(i))
                    .await
                    .with_context(|| format!("creating ConfigMap {i}"))
                    .map(drop)
            }
        })
        .buffer_unordered(WRITERS)
        .try_collect::<()>()
        .await
}
