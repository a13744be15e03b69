//! The Operator SDK tutorial's memcached operator, on kubeforge.
//!
//! A `Memcached` custom resource (`cache.example.com/v1alpha1`, short name
//! `mc`) asks for `size` memcached pods; the operator keeps a Deployment of
//! that many pods, owned by the Memcached, reports the Deployment's
//! progress in the Memcached's status conditions, and holds a finalizer so
//! it can record the Memcached's deletion before it goes.
//!
//! - [`api`]: the custom resource and its CRD.
//! - [`controller`]: the reconcile function and the Deployment it applies.
//! - [`status`]: the status conditions, computed from the Deployment.
//! - [`app`]: the operator's command line (kubeforge's standard one, with
//!   its own `--resync-period` and `--max-concurrent-reconciles`).
//!
//! [`register`] adds the controller to a [`Manager`]; the binary (through
//! [`app`]) and the end-to-end tests both go through it, so the tests
//! exercise the operator the binary runs. Without the command line, a
//! `main` is this (the README shows it):
//!
//! ```no_run
//! use kubeforge::k8s_openapi::api::apps::v1::Deployment;
//! use kubeforge::prelude::*;
//! use memcached_operator::{reconcile, Memcached, Settings};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // The cluster from $KUBECONFIG, ~/.kube/config or the service account.
//!     let mgr = Manager::builder()
//!         .leader_election("memcached-operator.cache.example.com")
//!         .health_probe_bind_address(":8081")
//!         .build()
//!         .await?;
//!     mgr.controller::<Memcached>()
//!         .owns::<Deployment>()
//!         .concurrency(2)
//!         .reconcile(reconcile, Settings::default());
//!     mgr.run().await?; // probes, metrics, graceful shutdown on SIGTERM
//!     Ok(())
//! }
//! ```

pub mod api;
pub mod controller;
pub mod status;

use kubeforge::app::App;
use kubeforge::crd::CrdError;
use kubeforge::k8s_openapi::api::apps::v1::Deployment;
use kubeforge::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubeforge::prelude::*;
use kubeforge::rbac::Write;
use kubeforge::sharding::Sharding;

pub use api::{Memcached, MemcachedSpec, MemcachedStatus};
pub use controller::{reconcile, Settings, FINALIZER};

/// The sample Memcached (`config/samples/cache_v1alpha1_memcached.yaml`),
/// which `--embedded` creates at start.
pub const SAMPLE_YAML: &str = include_str!("../config/samples/cache_v1alpha1_memcached.yaml");

/// What can go wrong outside a reconcile: building the CRD, reading the
/// sample, creating it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The derive's CRD could not be built or written.
    #[error("cannot build the Memcached CRD: {0}")]
    Crd(#[from] CrdError),

    /// The sample manifest does not describe a Memcached.
    #[error("the sample Memcached is not valid: {0}")]
    Sample(String),

    /// A request to the API server failed.
    #[error("{context}: {source}")]
    Api {
        /// What was being done.
        context: String,
        /// The client error.
        #[source]
        source: kubeforge::Error,
    },
}

/// The Memcached CustomResourceDefinition, as the derive builds it.
pub fn crd() -> Result<CustomResourceDefinition, Error> {
    Ok(Memcached::try_crd()?)
}

/// The sample Memcached, parsed from [`SAMPLE_YAML`].
pub fn sample() -> Result<Memcached, Error> {
    serde_saphyr::from_str(SAMPLE_YAML).map_err(|e| Error::Sample(e.to_string()))
}

/// Creates the sample Memcached in `namespace` (left alone if one of that
/// name exists) and returns it as stored.
pub async fn create_sample(client: &Client, namespace: &str) -> Result<Memcached, Error> {
    let mut mc = sample()?;
    mc.metadata.namespace = Some(namespace.to_owned());
    let name = mc.name_any();
    let api: Api<Memcached> = Api::namespaced(client.clone(), namespace);
    match api.create(&PostParams::default(), &mc).await {
        Ok(created) => Ok(created),
        Err(e) if e.is_already_exists() => api.get(&name).await.map_err(|source| Error::Api {
            context: format!("get Memcached {namespace}/{name}"),
            source,
        }),
        Err(source) => Err(Error::Api {
            context: format!("create Memcached {namespace}/{name}"),
            source,
        }),
    }
}

/// The Lease held by the leader with `--leader-elect`.
pub const LEASE_NAME: &str = "memcached-operator.cache.example.com";

/// The operator's own flags, beside kubeforge's standard ones.
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct Flags {
    /// Reconcile every Memcached at least this often, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub resync_period: u64,

    /// How many Memcacheds may be reconciled at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub max_concurrent_reconciles: usize,

    /// Split the Memcacheds between every replica running with this flag
    /// (Leases `memcached-operator-shards*`) instead of electing a leader.
    #[arg(long)]
    pub sharded: bool,
}

impl Default for Flags {
    fn default() -> Self {
        Self {
            resync_period: 300,
            max_concurrent_reconciles: 1,
            sharded: false,
        }
    }
}

/// The ring the replicas of `--sharded` share.
pub const SHARD_RING: &str = "memcached-operator-shards";

/// The operator's command line: the Memcached kind and its sample, the
/// leader-election Lease, the field manager, and the controller.
pub fn app() -> App<Flags> {
    App::with_flags("memcached-operator")
        .about("Keeps a Deployment of `size` memcached pods for every Memcached.")
        .version(env!("CARGO_PKG_VERSION"))
        .crd::<Memcached>()
        .sample(SAMPLE_YAML)
        .leader_election_id(LEASE_NAME)
        .field_manager(controller::FIELD_MANAGER)
        .setup(|mgr, flags: &Flags| {
            let settings = Settings {
                resync: Duration::from_secs(flags.resync_period.max(1)),
            };
            let sharding = flags.sharded.then(|| Sharding::ring(SHARD_RING));
            register(mgr, settings, flags.max_concurrent_reconciles, sharding);
            Ok::<(), Error>(())
        })
}

/// Adds the memcached controller to `mgr`: it reconciles every Memcached
/// and, through `owns`, every change of a Deployment one of them controls;
/// at most `concurrency` reconciles run at once. It declares what its
/// reconcile writes (its finalizer, its status and its Deployments, each
/// by server-side apply), so the RBAC derived from it grants no more.
/// With `sharding`, the replicas split the Memcacheds between them.
pub fn register(mgr: &Manager, settings: Settings, concurrency: usize, sharding: Option<Sharding>) {
    let mut controller = mgr
        .controller::<Memcached>()
        .named(controller::CONTROLLER_NAME)
        .uses_finalizers()
        .writes_status([Write::Apply])
        .owns_with::<Deployment>(Owns::new().writes([Write::Apply]))
        .concurrency(concurrency);
    if let Some(sharding) = sharding {
        controller = controller.sharded(sharding);
    }
    controller.reconcile(reconcile, settings);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_parses_as_a_memcached() {
        let mc = sample().unwrap();
        assert_eq!(mc.name_any(), "memcached-sample");
        assert_eq!(mc.spec.size, 1);
        assert_eq!(mc.spec.container_port, api::DEFAULT_CONTAINER_PORT);
    }
}
