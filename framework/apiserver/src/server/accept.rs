//! The accept loop: TLS handshakes (bounded in time), then each connection
//! served as HTTP/2 or HTTP/1.1 with the request router until the server
//! shuts down, with kube-apiserver's limits on request heads and Go's
//! answers to unreadable ones ([`unreadable`]).

use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::unreadable::{self, GoErrorBodies};
use crate::auth::certs::ClientCertPolicy;
use crate::http::handlers;
use crate::registry::state::Shared;

pub(super) async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    client_certs: Arc<ClientCertPolicy>,
    shared: Arc<Shared>,
    cancel: CancellationToken,
) {
    loop {
        let (tcp, peer) = tokio::select! {
            _ = cancel.cancelled() => return,
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let shared = shared.clone();
        let cancel = cancel.clone();
        let client_certs = client_certs.clone();
        tokio::spawn(async move {
            let tls =
                match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake failed");
                        return;
                    }
                    Err(_) => return,
                };
            // A client certificate speaks for every request on its
            // connection; it is judged once.
            let peer_identity = client_certs.identity(tls.get_ref().1.peer_certificates());
            let service = service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
                let shared = shared.clone();
                if let Some(identity) = &peer_identity {
                    req.extensions_mut().insert(identity.clone());
                }
                async move { Ok::<_, std::convert::Infallible>(handlers::handle(shared, req).await) }
            });
            let mut builder = auto::Builder::new(TokioExecutor::new());
            // kube-apiserver reads request heads up to its MaxHeaderBytes.
            builder.http1().max_buf_size(unreadable::MAX_HEAD_BYTES);
            // Informers multiplex their watches over one connection:
            // kube-apiserver allows 1000 streams per HTTP/2 connection.
            builder
                .http2()
                .max_concurrent_streams(1000)
                .max_header_list_size(unreadable::MAX_HEADER_LIST_BYTES);
            let io = TokioIo::new(GoErrorBodies::new(tls));
            let conn = builder.serve_connection(io, service);
            tokio::select! {
                _ = cancel.cancelled() => {}
                r = conn => {
                    if let Err(e) = r {
                        tracing::trace!(%peer, error = %e, "connection ended");
                    }
                }
            }
        });
    }
}
