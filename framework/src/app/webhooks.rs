//! The operator's own webhooks on kubeforge's in-process API server, for
//! [`App::start_on`](super::App::start_on),
//! [`App::start_as_operator`](super::App::start_as_operator) and
//! `--embedded`: when the operator registers webhooks
//! ([`App::webhooks`](super::App::webhooks)), its manager serves them on a
//! free loopback port with a fresh CA ([`LocalWebhooks`]), and the API
//! server is pointed at them (webhook configurations and the CRDs'
//! conversion), as envtest does. An operator without webhooks gets none of
//! this.

use super::Error;
use crate::manager::{CancellationToken, ManagerBuilder};
use crate::testing::LocalWebhooks;
use crate::{Client, Manager};

/// A builder that serves the webhooks locally when `has_webhooks`, and the
/// certificates it serves (kept for as long as the manager runs).
pub(crate) fn prepare(
    has_webhooks: bool,
    builder: ManagerBuilder,
) -> Result<(ManagerBuilder, Option<LocalWebhooks>), Error> {
    if !has_webhooks {
        return Ok((builder, None));
    }
    let local = LocalWebhooks::generate().map_err(Error::Webhooks)?;
    Ok((builder.webhook_server(local.server_options()), Some(local)))
}

/// Points the API server (through `admin`, which may write webhook
/// configurations and CRDs) at `mgr`'s webhook server.
pub(crate) async fn install(
    local: Option<&LocalWebhooks>,
    admin: &Client,
    mgr: &Manager,
) -> Result<(), Error> {
    match local {
        Some(local) => local
            .install_with(admin, mgr)
            .await
            .map_err(Error::Webhooks),
        None => Ok(()),
    }
}

/// Runs `mgr` until `stop`, holding the certificates its webhook server
/// reads until it has stopped.
pub(crate) async fn run_until(
    mgr: Manager,
    stop: CancellationToken,
    local: Option<LocalWebhooks>,
) -> Result<(), crate::manager::Error> {
    let result = mgr.run_until(stop).await;
    drop(local);
    result
}
