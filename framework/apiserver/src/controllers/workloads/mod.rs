//! placeholder
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use crate::state::Shared;
pub(crate) fn start(_shared: Arc<Shared>, _cancel: CancellationToken) {}
