//! The operator on kubeforge's in-process API server: `--embedded` (the
//! server inside the operator's process, for `kubectl` and development)
//! and [`App::start_on`](super::App::start_on) (an operator in a test).
//! Either way the operator's CRDs are installed first, and its samples can
//! be created.
//!
//! The `--embedded` server runs the workload controllers and three
//! simulated nodes ([`Workloads::new`]): the Deployments, StatefulSets and
//! Jobs an operator creates get pods that start and become ready, as on a
//! cluster, so conditions computed from them move as they would there.

use std::net::SocketAddr;

use kube_core::{ApiResource, DynamicObject, GroupVersionKind, ResourceExt as _};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::params::PostParams;

use super::Error;
use crate::manager::CancellationToken;
use crate::scheme::Scheme;
use crate::testing::{ApiServer, Workloads};
use crate::{Api, Client};

/// Starts the API server on `listen`, with the workload controllers and
/// simulated nodes, and installs `crds`.
pub(crate) async fn start_server(
    listen: SocketAddr,
    crds: &[CustomResourceDefinition],
) -> Result<ApiServer, Error> {
    let server = ApiServer::builder()
        .bind(listen)
        .workloads(Workloads::new())
        .start()
        .await
        .map_err(|source| Error::Embedded {
            what: format!("cannot start the embedded API server on {listen}"),
            source,
        })?;
    install_crds(&server, crds)?;
    Ok(server)
}

/// Installs (or updates) `crds` on `server`; each is served on return.
pub(crate) fn install_crds(
    server: &ApiServer,
    crds: &[CustomResourceDefinition],
) -> Result<(), Error> {
    for crd in crds {
        server.install_crd(crd).map_err(|source| Error::Embedded {
            what: format!(
                "the API server refused CRD {}",
                crd.metadata.name.as_deref().unwrap_or_default()
            ),
            source,
        })?;
    }
    Ok(())
}

/// A sample the operator created: `kind/name` and its namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreatedSample {
    /// The sample's resource (group, version, kind, plural).
    pub resource: ApiResource,
    /// The sample's kind.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace; `None` for a cluster-scoped kind.
    pub namespace: Option<String>,
}

/// Creates every sample (a multi-document YAML each) through `client`,
/// namespaced ones in their own namespace or else `namespace`; one that
/// exists already is left alone.
pub(crate) async fn create_samples(
    client: &Client,
    scheme: &Scheme,
    samples: &[String],
    namespace: &str,
) -> Result<Vec<CreatedSample>, Error> {
    let mut created = Vec::new();
    for (index, yaml) in samples.iter().enumerate() {
        let docs: Vec<serde_json::Value> =
            serde_saphyr::from_multiple(yaml).map_err(|e| Error::Sample {
                index,
                message: e.to_string(),
            })?;
        for doc in docs.into_iter().filter(|d| !d.is_null()) {
            created.push(create_sample(client, scheme, index, doc, namespace).await?);
        }
    }
    Ok(created)
}

async fn create_sample(
    client: &Client,
    scheme: &Scheme,
    index: usize,
    doc: serde_json::Value,
    namespace: &str,
) -> Result<CreatedSample, Error> {
    let invalid = |message: String| Error::Sample { index, message };
    let object: DynamicObject = serde_json::from_value(doc).map_err(|e| invalid(e.to_string()))?;
    let types = object
        .types
        .clone()
        .ok_or_else(|| invalid("it has no apiVersion and kind".to_owned()))?;
    let (group, version) = match types.api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", types.api_version.as_str()),
    };
    let gvk = GroupVersionKind::gvk(group, version, &types.kind);
    let registration = scheme.by_gvk(&gvk).ok_or_else(|| {
        invalid(format!(
            "{} {} is not a kind the operator knows (register it with App::crd)",
            types.api_version, types.kind
        ))
    })?;
    let name = object.name_any();
    let scoped = registration.scope == crate::crd::Scope::Namespaced;
    let ns = scoped.then(|| {
        object
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| namespace.to_owned())
    });
    let api: Api<DynamicObject> = match &ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &registration.api_resource),
        None => Api::all_with(client.clone(), &registration.api_resource),
    };
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => {}
        Err(e) if e.is_already_exists() => {}
        Err(source) => {
            return Err(Error::Api {
                what: format!("create sample {}/{name}", types.kind),
                source,
            })
        }
    }
    Ok(CreatedSample {
        resource: registration.api_resource.clone(),
        kind: types.kind,
        name,
        namespace: ns,
    })
}

/// The operator running in a test, on an [`ApiServer`]; see
/// [`App::start_on`](super::App::start_on). Dropping it stops the
/// operator without waiting; [`stop`](Self::stop) waits and reports how
/// it ended.
#[derive(Debug)]
pub struct Running {
    pub(crate) client: Client,
    pub(crate) scheme: Scheme,
    pub(crate) samples: Vec<String>,
    pub(crate) stop: CancellationToken,
    pub(crate) task: Option<tokio::task::JoinHandle<Result<(), crate::manager::Error>>>,
}

impl Running {
    /// A client for the server, as its administrator.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Creates the operator's samples (namespaced ones in `default` unless
    /// they name a namespace) and says which.
    pub async fn create_samples(&self) -> Result<Vec<CreatedSample>, Error> {
        create_samples(&self.client, &self.scheme, &self.samples, "default").await
    }

    /// A sample as the server has it now (read as the administrator), to
    /// see what the operator made of it.
    pub async fn sample(&self, sample: &CreatedSample) -> Result<DynamicObject, Error> {
        let api: Api<DynamicObject> = match &sample.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &sample.resource),
            None => Api::all_with(self.client.clone(), &sample.resource),
        };
        api.get(&sample.name).await.map_err(|source| Error::Api {
            what: format!("get sample {}/{}", sample.kind, sample.name),
            source,
        })
    }

    /// Stops the operator gracefully and returns how its manager ended.
    pub async fn stop(mut self) -> Result<(), Error> {
        self.stop.cancel();
        match self.task.take() {
            Some(task) => match task.await {
                Ok(result) => result.map_err(Error::Manager),
                Err(e) => Err(Error::Task(e)),
            },
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// What `--embedded` prints once the server is up: where it listens, what
/// it holds, and how to reach it with kubectl.
pub(crate) fn banner(
    server: &ApiServer,
    crds: &[CustomResourceDefinition],
    samples: &[CreatedSample],
    kubeconfig: Option<&std::path::Path>,
) -> String {
    let mut out = format!("embedded API server listening on {}\n", server.url());
    let names: Vec<&str> = crds
        .iter()
        .filter_map(|c| c.metadata.name.as_deref())
        .collect();
    if !names.is_empty() {
        out.push_str(&format!("CRDs installed: {}\n", names.join(", ")));
    }
    for sample in samples {
        match &sample.namespace {
            Some(ns) => out.push_str(&format!(
                "sample created: {} {ns}/{}\n",
                sample.kind, sample.name
            )),
            None => out.push_str(&format!(
                "sample created: {} {}\n",
                sample.kind, sample.name
            )),
        }
    }
    match kubeconfig {
        Some(path) => {
            let kubectl = format!("KUBECONFIG={} kubectl", path.display());
            out.push_str(&format!("kubeconfig written to {}; try:\n", path.display()));
            // Qualified by group: a plural a built-in kind also has
            // (`cronjobs`) names the built-in one to kubectl.
            for crd in crds {
                out.push_str(&format!(
                    "  {kubectl} get {}.{}\n",
                    crd.spec.names.plural, crd.spec.group
                ));
            }
            out.push_str(&format!("  {kubectl} get events\n"));
        }
        None => out.push_str("add --write-kubeconfig PATH to reach it with kubectl\n"),
    }
    out
}
