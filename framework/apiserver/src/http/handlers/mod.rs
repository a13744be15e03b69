//! Request entry point: authentication, routing, fault injection, and
//! dispatch to the per-verb handlers ([`read`]: get, list, watch;
//! [`write`]: create, update, patch; [`delete`]; [`scale`]) and to the
//! OpenAPI documents ([`openapi`]).

mod ctx;
mod delete;
mod jsonpatch;
mod list_body;
mod logs;
mod offload;
mod openapi;
mod pods;
mod read;
mod reviews;
mod scale;
mod served;
mod write;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use http::request::Parts;
use http::{header, HeaderValue, Method, Request, Response};
use hyper::body::Incoming;
use serde_json::json;

use crate::http::discovery;
use crate::http::routing::{self, ResourcePath, Route};
use crate::http::wire::{self as h, Body, Query};
use crate::machinery::faults::Failure;
use crate::machinery::status::ApiError;
use crate::registry::state::Shared;
use crate::registry::Registry;
use ctx::Ctx;

/// Handles one request; never fails (errors become `Status` responses,
/// and so does a panic).
pub(crate) async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let method = parts.method.clone();
    let path = parts.uri.path().to_owned();
    let resp = match guarded(handle_inner(&shared, parts, body)).await {
        Ok(r) => r,
        Err(e) => h::error(&e),
    };
    // With a data directory, nothing is answered before what the request
    // wrote or saw is on disk (a watch's events wait the same way).
    let resp = match shared.storage.durable().await {
        Ok(()) => resp,
        Err(why) => h::error(&ApiError::internal(why)),
    };
    tracing::debug!(%method, %path, status = resp.status().as_u16(), "request");
    resp
}

/// Runs a handler, turning a panic into the 500 kube-apiserver's panic
/// filter answers (`WithPanicRecovery`), so the connection is never just
/// dropped.
async fn guarded<F>(handler: F) -> Result<Response<Body>, ApiError>
where
    F: Future<Output = Result<Response<Body>, ApiError>>,
{
    match AssertUnwindSafe(handler).catch_unwind().await {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(panic = %what, "a request handler panicked");
            Err(ApiError::panicked())
        }
    }
}

fn version_doc() -> serde_json::Value {
    json!({
        "major": "1",
        "minor": "33",
        "emulationMajor": "1",
        "emulationMinor": "33",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "32",
        "gitVersion": "v1.33.0+kubeforge",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-04-23T00:00:00Z",
        "goVersion": "go1.24.2",
        "compiler": "gc",
        "platform": format!("{}/{}", std::env::consts::OS, match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => other,
        }),
    })
}

fn only_get(parts: &Parts) -> Result<(), ApiError> {
    if parts.method == Method::GET || parts.method == Method::HEAD {
        Ok(())
    } else {
        Err(ApiError::method_not_allowed())
    }
}

async fn handle_inner(
    shared: &Arc<Shared>,
    parts: Parts,
    body: Incoming,
) -> Result<Response<Body>, ApiError> {
    let mut parts = parts;
    let query = Query::parse(parts.uri.query());
    crate::http::filters::admit_request(shared, &mut parts, &query)?;
    let route = routing::route(parts.uri.path());
    let missing = || not_found(&shared.registry(), parts.uri.path());
    match route {
        Route::Root => {
            only_get(&parts)?;
            Ok(root_paths(&shared.registry()))
        }
        Route::Version => {
            only_get(&parts)?;
            Ok(h::json(200, &version_doc()))
        }
        Route::Health => {
            only_get(&parts)?;
            let mut resp = Response::new(h::full("ok"));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            Ok(resp)
        }
        Route::CoreDiscovery => {
            only_get(&parts)?;
            match h::negotiate_discovery(&parts.headers)? {
                Some(v) => Ok(discovery::aggregated(&shared.registry(), true, v)),
                None => Ok(discovery::legacy(&discovery::api_versions(
                    &shared.server_address,
                ))),
            }
        }
        Route::GroupsDiscovery => {
            only_get(&parts)?;
            match h::negotiate_discovery(&parts.headers)? {
                Some(v) => Ok(discovery::aggregated(&shared.registry(), false, v)),
                None => Ok(discovery::legacy(&discovery::api_group_list(
                    &shared.registry(),
                ))),
            }
        }
        Route::Group(g) => {
            only_get(&parts)?;
            let doc = discovery::api_group_doc(&shared.registry(), &g);
            let doc = doc.ok_or_else(missing)?;
            Ok(discovery::legacy(&doc))
        }
        Route::GroupVersion { group, version } => {
            only_get(&parts)?;
            let reg = shared.registry();
            if !reg.has_group_version(&group, &version) {
                return Err(not_found(&reg, parts.uri.path()));
            }
            Ok(discovery::legacy(&discovery::resource_list(
                &reg, &group, &version,
            )))
        }
        Route::Resource(p) => resource(shared, parts, query, p, body).await,
        Route::OpenApiV3Index => {
            only_get(&parts)?;
            openapi::index(shared, &parts).await
        }
        Route::OpenApiV3Doc(key) => {
            only_get(&parts)?;
            openapi::document(shared, &parts, &query, &key).await
        }
        // kubectl reads v2 only as protobuf and uses it only when v3 is
        // missing; v3 is served, so v2 is not.
        Route::OpenApiV2 => {
            only_get(&parts)?;
            Err(ApiError::page_not_found())
        }
        Route::NotFound => Err(missing()),
    }
}

/// kube-apiserver's 404 for a path nothing serves, which depends on who
/// owns the path: its go-restful containers (`/api/...` and the built-in
/// groups' `/apis/{group}/...`) answer a `Status` (`serviceErrorHandler`);
/// everything else falls through the delegation chain to the not-found
/// handler, Go's plain-text `http.NotFound`.
fn not_found(reg: &Registry, path: &str) -> ApiError {
    let restful = if path == "/api" || path.starts_with("/api/") {
        true
    } else if let Some(rest) = path.strip_prefix("/apis/") {
        let group = rest.split('/').next().unwrap_or("");
        !group.is_empty() && reg.is_builtin_group(group)
    } else {
        false
    };
    if restful {
        ApiError::resource_not_found()
    } else {
        ApiError::page_not_found()
    }
}

/// `/`: the paths the server serves, sorted, as kube-apiserver's index
/// handler lists them (`metav1.RootPaths`, indented).
fn root_paths(reg: &Registry) -> Response<Body> {
    let mut paths: Vec<String> = [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/",
        "/openapi/v3",
        "/openapi/v3/",
        "/version",
    ]
    .iter()
    .map(|p| (*p).to_owned())
    .collect();
    for probe in ["/healthz", "/livez", "/readyz"] {
        paths.push(probe.to_owned());
        for check in ["etcd", "log", "ping"] {
            paths.push(format!("{probe}/{check}"));
        }
    }
    for (group, versions) in reg.builtin_groups() {
        if group.is_empty() {
            continue;
        }
        paths.push(format!("/apis/{group}"));
        paths.extend(versions.iter().map(|v| format!("/apis/{group}/{v}")));
    }
    paths.sort();
    paths.dedup();
    let body = serde_json::to_vec_pretty(&json!({ "paths": paths })).unwrap_or_default();
    h::json_bytes(200, body.into())
}

/// The verb kube-apiserver's request-info resolver assigns.
fn verb(method: &Method, p: &ResourcePath, watch: bool) -> Result<&'static str, ApiError> {
    let named = p.name.is_some();
    Ok(match (method.as_str(), named) {
        ("GET" | "HEAD", true) if watch => "watch",
        ("GET" | "HEAD", true) => "get",
        ("GET" | "HEAD", false) if watch => "watch",
        ("GET" | "HEAD", false) => "list",
        ("POST", false) => "create",
        ("POST", true) if p.subresource.is_some() => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => return Err(ApiError::method_not_allowed()),
    })
}

async fn resource(
    shared: &Arc<Shared>,
    parts: Parts,
    query: Query,
    p: ResourcePath,
    body: Incoming,
) -> Result<Response<Body>, ApiError> {
    let def = {
        let reg = shared.registry();
        let path = parts.uri.path();
        if !reg.has_group_version(&p.group, &p.version) {
            return Err(not_found(&reg, path));
        }
        let def = reg
            .get(&p.group, &p.version, &p.resource)
            .ok_or_else(|| not_found(&reg, path))?;
        if (p.namespace.is_some() && !def.namespaced)
            || (def.namespaced && p.namespace.is_none() && p.name.is_some())
        {
            return Err(not_found(&reg, path));
        }
        def
    };
    match p.subresource.as_deref() {
        None => {}
        Some("status") if def.status => {}
        Some("scale") if def.scale.is_some() => {}
        // A namespace's finalize, a pod's binding and eviction, a service
        // account's token: the subresources discovery lists for the kind.
        Some(sub) if def.extra_subresources.iter().any(|e| e.name == sub) => {}
        Some(_) => return Err(ApiError::resource_not_found()),
    }
    let watch = p.watch_prefix || query.flag("watch")? == Some(true);
    let verb = verb(&parts.method, &p, watch)?;
    if let Some(latency) = shared.faults.latency() {
        tokio::time::sleep(latency).await;
    }
    let fault_resource = match &p.subresource {
        Some(s) => format!("{}/{s}", p.resource),
        None => p.resource.clone(),
    };
    if let Some(f) = shared.faults.take(verb, &fault_resource) {
        let error = f.to_error(verb, &p.group, &fault_resource, p.namespace.as_deref());
        if verb == "watch" && f == Failure::Expired {
            return Ok(crate::http::watch::error_stream(&error));
        }
        return Err(error);
    }
    let base_verb_ok = match verb {
        "watch" | "list" | "get" => def.has_verb(verb) || p.subresource.is_some(),
        "create" if p.subresource.is_some() => true,
        _ => def.has_verb(verb),
    };
    if !base_verb_ok {
        return Err(ApiError::method_not_allowed());
    }
    if verb == "create" && p.subresource.is_none() && reviews::is_review(&def) {
        return reviews::create(shared, &parts, &def, &p, body).await;
    }
    let ctx = Arc::new(Ctx {
        shared: shared.clone(),
        def,
        path: p,
        query,
        parts,
    });
    let sub = ctx.path.subresource.clone();
    match (verb, sub.as_deref()) {
        ("get", Some("scale")) => scale::get(&ctx),
        ("update", Some("scale")) => scale::update(&ctx, body).await,
        ("patch", Some("scale")) => scale::patch(&ctx, body).await,
        ("get", Some("finalize")) => Err(ApiError::method_not_allowed()),
        ("get", Some("log")) if ctx.def.serves_extra("log", "get") => logs::log(&ctx).await,
        ("get", _) => read::get(&ctx).await,
        ("list", None) => read::list(&ctx).await,
        ("watch", None) => read::watch(&ctx).await,
        ("watch", Some(_)) | ("list", Some(_)) => Err(ApiError::method_not_allowed()),
        ("create", None) => write::create(&ctx, body).await,
        ("create", Some("binding")) => pods::binding(&ctx, body).await,
        ("create", Some("eviction")) => pods::eviction(&ctx, body).await,
        ("create", Some("token")) => pods::token_request(&ctx, body).await,
        ("update", _) => write::update(&ctx, body).await,
        ("patch", Some("finalize")) => Err(ApiError::method_not_allowed()),
        ("patch", _) => write::patch(&ctx, body).await,
        ("delete", None) => delete::delete(&ctx, body).await,
        ("deletecollection", None) => delete::delete_collection(&ctx, body).await,
        _ => Err(ApiError::method_not_allowed()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> Result<Response<Body>, ApiError> {
        Ok(Response::new(h::full("ok")))
    }

    #[tokio::test]
    async fn a_panicking_handler_is_a_500_status() {
        let err = guarded(async {
            if ok().is_ok() {
                panic!("boom");
            }
            ok()
        })
        .await
        .unwrap_err();
        let resp = h::error(&err);
        assert_eq!(resp.status(), 500);
        let status = err.to_status();
        assert_eq!(status["reason"], "InternalError");
        assert_eq!(
            status["message"],
            "This request caused apiserver to panic. Look in the logs for details."
        );
        assert!(guarded(async { ok() }).await.is_ok());
    }
}
