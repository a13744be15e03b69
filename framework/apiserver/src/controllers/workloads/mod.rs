//! kube-controller-manager's workload controllers and the simulated nodes,
//! on when the server is built with [`Workloads`](crate::Workloads). Each
//! controller is a task: informers ([`informer`]) watch the store and feed
//! keys to its work queue ([`queue`]); one worker reconciles them, reading
//! the store and writing through the request write path ([`api`]).
//! Shared pieces: pod predicates and templates ([`pods`]), adoption and
//! release ([`owners`]), the naming hashes ([`hash`]).

mod api;
mod cron;
mod cronjob;
mod daemonset;
mod deployment;
mod disruption;
mod endpointslice;
mod hash;
mod history;
mod informer;
mod job;
mod nodes;
mod owners;
pub(crate) mod pods;
mod queue;
mod replicaset;
mod statefulset;
mod ttl;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::controllers::config::{NodeControls, Workloads};
use crate::registry::state::Shared;
use api::Api;

/// Starts every workload controller and the simulated nodes.
pub(crate) fn start(
    shared: Arc<Shared>,
    cfg: Arc<Workloads>,
    controls: Arc<NodeControls>,
    cancel: CancellationToken,
) {
    let api = Arc::new(Api {
        shared,
        cfg,
        controls,
    });
    nodes::start(api.clone(), cancel.clone());
    replicaset::start(api.clone(), cancel.clone());
    deployment::start(api.clone(), cancel.clone());
    job::start(api.clone(), cancel.clone());
    statefulset::start(api.clone(), cancel.clone());
    disruption::start(api.clone(), cancel.clone());
    endpointslice::start(api.clone(), cancel.clone());
    daemonset::start(api.clone(), cancel.clone());
    cronjob::start(api.clone(), cancel.clone());
    ttl::start(api, cancel);
}
