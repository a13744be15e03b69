//! HTTP serving for the endpoints an operator answers itself: the probe
//! and metrics endpoints (see [`crate::manager::probes`]) today, the
//! admission and conversion webhooks (HTTPS) next. One [`Server`] and one
//! lifecycle for all of them:
//!
//! - [`Server::bind`] listens before the manager runs, so the address is
//!   known (port 0 picks a free one) and a taken port fails early, naming
//!   it;
//! - [`Server::with_tls`] serves HTTPS with a rustls configuration (its
//!   certificate resolver decides how certificates are loaded and
//!   reloaded; ALPN `h2` gets HTTP/2), plain HTTP/1.1 otherwise;
//! - [`Server::run`] serves until told to stop, with a bound on header
//!   reading (and on the TLS handshake) and on open connections; then it
//!   stops accepting, lets requests in flight finish (bounded) and closes
//!   idle keep-alive connections.
//!
//! What a server answers is a [`Handler`]: any
//! `Fn(Request<Incoming>) -> impl Future<Output = Response<Full<Bytes>>>`,
//! or a type implementing the trait. The manager runs its servers as its
//! first group of runnables and stops them last.

mod server;

pub use server::{Error, Handler, Server};

/// The request and response types a [`Handler`] works with, re-exported so
/// an operator needs no HTTP crates of its own.
pub use bytes::Bytes;
/// See [`Bytes`].
pub use http::{Request, Response, StatusCode};
/// See [`Bytes`].
pub use http_body_util::Full;
/// See [`Bytes`].
pub use hyper::body::Incoming;
/// The TLS configuration [`Server::with_tls`] takes.
pub use rustls::ServerConfig;
