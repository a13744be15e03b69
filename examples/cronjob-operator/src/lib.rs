//! cronjob-operator: a Kubernetes operator built with kubeforge.
//!
//! - [`api`]: the custom resources, one module per API group and version.
//! - [`controllers`]: their controllers.
//! - [`webhooks`]: their admission webhooks and conversions.
//!
//! [`app`] is the operator's command line: the binary runs it, and the
//! tests start it on kubeforge's in-process API server.

pub mod api;
pub mod clock;
pub mod controllers;
pub mod schedule;
pub mod webhooks;

use kubeforge::app::App;

/// The operator's command line: its kinds and their samples
/// ([`api::register`]), its webhooks ([`webhooks::register`]), its
/// controllers ([`controllers::setup`]), and its leader-election Lease.
pub fn app() -> App {
    webhooks::register(api::register(App::new("cronjob-operator")))
        .about("The cronjob-operator Kubernetes operator.")
        .version(env!("CARGO_PKG_VERSION"))
        .leader_election_id("cronjob-operator.tutorial.kubebuilder.io")
        .setup(|mgr, _flags| controllers::setup(mgr))
}
