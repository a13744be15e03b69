//! The API server's request handling, over its real HTTPS listener: an
//! in-process [`ApiServer`] and one kept-alive HTTP/1.1 connection to it,
//! through which each input's requests go in order (so an input can
//! create an object and then patch it). Each answer is checked against
//! the `Status` contract ([`contract`]), must come within
//! [`Limits::hang`](crate::Limits) (a watch's stream is read briefly and
//! left), and may not exceed [`MAX_ANSWER_BYTES`].
//!
//! The handler takes hyper's own request body type, so the listener is
//! the way in; a request on a kept-alive loopback connection costs tens of
//! microseconds more than a call would, and tests the HTTP layer too.
//! The server is replaced every [`Limits::fresh_server_every`](crate::Limits)
//! inputs: often enough that what earlier inputs stored stays small,
//! and for replays before every input, so each replays alone.

mod contract;
mod parse;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use kubeforge_apiserver::ApiServer;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::{Checked, FindingKind, Limits};
use contract::Answer;
use parse::Req;

/// The largest answer accepted for an input of a few kilobytes: anything
/// larger is an amplification (a 56 MB ConfigMap from a 60 KB body was
/// one).
const MAX_ANSWER_BYTES: usize = 32 << 20;

/// How long a watch's stream is read before it is left.
const WATCH_READ: Duration = Duration::from_millis(20);

/// The server, the connection, and how many inputs they have served.
struct Session {
    runtime: tokio::runtime::Runtime,
    server: Option<ApiServer>,
    connector: Option<TlsConnector>,
    connection: Option<SendRequest<Full<Bytes>>>,
    builtin_groups: Vec<String>,
    served: usize,
}

static SESSION: Mutex<Option<Session>> = Mutex::new(None);

pub(crate) fn check(data: &[u8], limits: &Limits) -> Checked {
    let requests = parse::requests(data);
    if requests.is_empty() {
        return Ok(());
    }
    let mut guard = SESSION.lock().unwrap_or_else(|p| p.into_inner());
    let session = match guard.as_mut() {
        Some(s) => s,
        None => guard.insert(Session::new().map_err(|e| (FindingKind::Contract, e))?),
    };
    if session.served >= limits.fresh_server_every.max(1) || session.server.is_none() {
        session.restart().map_err(|e| (FindingKind::Contract, e))?;
    }
    session.served += 1;
    let runtime = session.runtime.handle().clone();
    runtime.block_on(session.send_all(requests, limits))
}

impl Session {
    fn new() -> Result<Session, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a runtime: {e}"))?;
        Ok(Session {
            runtime,
            server: None,
            connector: None,
            connection: None,
            builtin_groups: Vec::new(),
            served: 0,
        })
    }

    /// A new server (the old one shut down) and a connector trusting it.
    fn restart(&mut self) -> Result<(), String> {
        self.connection = None;
        let old = self.server.take();
        let server = self.runtime.block_on(async move {
            if let Some(old) = old {
                old.shutdown().await;
            }
            ApiServer::start().await
        });
        let server = server.map_err(|e| format!("the API server does not start: {e}"))?;
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from(server.ca_der().to_vec()))
            .map_err(|e| format!("the server's CA is not usable: {e}"))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        self.connector = Some(TlsConnector::from(Arc::new(config)));
        self.server = Some(server);
        self.served = 0;
        let handle = self.runtime.handle().clone();
        self.builtin_groups = handle.block_on(self.groups())?;
        Ok(())
    }

    /// The groups the server serves itself, as `/apis` lists them before
    /// any CRD exists.
    async fn groups(&mut self) -> Result<Vec<String>, String> {
        let req = Req {
            method: http::Method::GET,
            target: "/apis".to_owned(),
            headers: Vec::new(),
            body: Bytes::new(),
        };
        let (parts, body) = self.send(&req).await?;
        let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        if !parts.status.is_success() {
            return Err(format!("/apis answered {}", parts.status));
        }
        let doc: serde_json::Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        Ok(doc["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| g["name"].as_str().map(str::to_owned))
            .collect())
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        let (Some(server), Some(connector)) = (&self.server, &self.connector) else {
            return Err("no server".to_owned());
        };
        let tcp = TcpStream::connect(server.addr())
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let name = ServerName::IpAddress(server.addr().ip().into());
        let tls = connector
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS handshake failed: {e}"))?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| format!("HTTP handshake failed: {e}"))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    }

    /// Sends `req` on the kept-alive connection (a new one when it was
    /// closed before the request was written).
    async fn send(
        &mut self,
        req: &Req,
    ) -> Result<(http::response::Parts, hyper::body::Incoming), String> {
        let mut retried = false;
        loop {
            let mut sender = match self.connection.take() {
                Some(s) if !s.is_closed() => s,
                _ => self.connect().await?,
            };
            if sender.ready().await.is_err() {
                if retried {
                    return Err("the connection closed before the request".to_owned());
                }
                retried = true;
                continue;
            }
            let request = self.build(req)?;
            match sender.try_send_request(request).await {
                Ok(response) => {
                    self.connection = Some(sender);
                    return Ok(response.into_parts());
                }
                Err(mut e) => {
                    let unsent = e.take_message().is_some();
                    if unsent && !retried {
                        // Not written: the connection closed just before.
                        retried = true;
                        continue;
                    }
                    return Err(format!(
                        "the connection dropped without an answer: {}",
                        e.error()
                    ));
                }
            }
        }
    }

    fn build(&self, req: &Req) -> Result<http::Request<Full<Bytes>>, String> {
        let Some(server) = &self.server else {
            return Err("no server".to_owned());
        };
        let mut builder = http::Request::builder()
            .method(req.method.clone())
            .uri(format!("https://{}{}", server.addr(), req.target))
            .header(header::HOST, server.addr().to_string())
            .header(header::AUTHORIZATION, format!("Bearer {}", server.token()));
        for (name, value) in &req.headers {
            builder = builder.header(name, value);
        }
        builder
            .body(Full::new(req.body.clone()))
            .map_err(|e| format!("unbuildable request: {e}"))
    }

    async fn send_all(&mut self, requests: Vec<Req>, limits: &Limits) -> Checked {
        for req in requests {
            // A request no client can write (a target no URI holds, such
            // as `%` not followed by hex) never reaches a server.
            if self.build(&req).is_err() {
                continue;
            }
            self.send_one(&req, limits)
                .await
                .map_err(|(kind, detail)| {
                    (
                        kind,
                        format!("{} {}: {detail}", req.method, truncated(&req.target)),
                    )
                })?;
        }
        Ok(())
    }

    async fn send_one(&mut self, req: &Req, limits: &Limits) -> Checked {
        let start = Instant::now();
        let sent = tokio::time::timeout(limits.hang, self.send(req)).await;
        let (parts, body) = match sent {
            Err(_) => {
                self.connection = None;
                return Err((
                    FindingKind::Hang,
                    format!("no answer after {:?}", limits.hang),
                ));
            }
            Ok(Err(e)) => {
                self.connection = None;
                return Err((FindingKind::Contract, e));
            }
            Ok(Ok(answer)) => answer,
        };
        let streamed = req.is_watch() && parts.status.is_success();
        let closes = parts
            .headers
            .get(header::CONNECTION)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
        let budget = if streamed {
            WATCH_READ
        } else {
            limits.hang.saturating_sub(start.elapsed())
        };
        let read =
            tokio::time::timeout(budget, Limited::new(body, MAX_ANSWER_BYTES).collect()).await;
        let body = match read {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(e)) => {
                self.connection = None;
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    return Err((
                        FindingKind::Amplification,
                        format!("an answer past {MAX_ANSWER_BYTES} bytes"),
                    ));
                }
                return Err((
                    FindingKind::Contract,
                    format!("the answer's body broke off: {e}"),
                ));
            }
            Err(_) if streamed => {
                // The stream goes on; leave it with its connection.
                self.connection = None;
                return Ok(());
            }
            Err(_) => {
                self.connection = None;
                return Err((
                    FindingKind::Hang,
                    format!("the answer's body took over {:?}", limits.hang),
                ));
            }
        };
        if closes {
            self.connection = None;
        }
        if req.method == http::Method::HEAD {
            // An answer to HEAD has no body to check.
            return Ok(());
        }
        let path = req.target.split('?').next().unwrap_or_default();
        let restful = contract::restful(path, &self.builtin_groups);
        let openapi_document = path.starts_with("/openapi/v3/");
        contract::check(
            &Answer::from_parts(&parts, body),
            restful,
            openapi_document,
            streamed,
        )
    }
}

fn truncated(s: &str) -> &str {
    let mut end = s.len().min(200);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
