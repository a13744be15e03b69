//! get, list and watch: resourceVersion semantics (unset, `0`, `X`,
//! `resourceVersionMatch`), the 422 parameter rules, selectors, pagination
//! with continue tokens at a constant resourceVersion, and the output
//! formats (object, list, Table, metadata-only).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http::Response;
use http_body_util::BodyExt as _;
use serde_json::{json, Value};

use super::ctx::Ctx;
use super::list_body::{list_body, ListMeta, ListStream};
use super::served::render;
use crate::admission::attributes::Admission;
use crate::http::table::{self, IncludeObject};
use crate::http::watch::{self, WatchSpec};
use crate::http::wire::{self as h, Body, Format, Output};
use crate::machinery::selectors::{FieldSelector, LabelSelector};
use crate::machinery::shards::{self, ShardSelector};
use crate::machinery::status::{ApiError, Cause};
use crate::objects::{store_error, too_large};
use crate::registry::conversion;
use crate::registry::conversion::webhook_conversion;
use crate::storage::{Filter, ObjKey, StoreError, StoredObject, WatchFrom};

/// How long a read waits for a resourceVersion the server has not reached
/// (the cacher's 3 s) before answering 504.
const FRESHNESS_WAIT: Duration = Duration::from_secs(3);

pub(super) fn parse_rv(s: &str) -> Result<u64, ApiError> {
    s.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!(
            "Invalid value: \"{s}\": strconv.ParseUint: parsing \"{s}\": invalid syntax"
        ))
    })
}

/// [`render`] for a write's response, which runs off the runtime: an
/// object a CRD's webhook converts is converted through `admission`.
pub(super) fn render_written(
    ctx: &Ctx,
    admission: &dyn Admission,
    obj: &StoredObject,
) -> Result<Bytes, ApiError> {
    let api_version = ctx.def.api_version(&ctx.path.version);
    let at_version = obj.api_version() == Some(api_version.as_str());
    if webhook_conversion(&ctx.def).is_none() || at_version {
        return Ok(render(&ctx.def, &ctx.path.version, obj));
    }
    let value = admission.convert(&ctx.def, obj.to_value(), &api_version)?;
    Ok(StoredObject::encode(value, obj.rv).bytes().clone())
}

fn invalid_list_options(causes: Vec<Cause>) -> ApiError {
    ApiError::invalid("ListOptions", "meta.k8s.io", "", causes)
}

/// Label and field selectors plus the namespace of the path.
pub(super) fn filter(ctx: &Ctx) -> Result<Filter, ApiError> {
    // `labels.Parse`'s message is the whole answer (apimachinery's
    // `Convert_string_To_labels_Selector`, then `NewBadRequest`).
    let labels = LabelSelector::parse(ctx.query.get("labelSelector").unwrap_or(""))
        .map_err(ApiError::bad_request)?;
    let def = ctx.def.clone();
    let mut fields = FieldSelector::parse(ctx.query.get("fieldSelector").unwrap_or(""), |l| {
        def.field_label(l)
    })
    .map_err(ApiError::bad_request)?;
    if let Some(name) = &ctx.path.name {
        fields = fields.and(FieldSelector::name(name));
    }
    Ok(Filter {
        namespace: ctx.path.namespace.clone(),
        labels,
        fields,
        shards: shard_selector(ctx)?,
    })
}

/// The request's `shardSelector`, when the server serves them and one is
/// given (an empty value counts as none). An invalid one is a plain error
/// in kube-apiserver's store (`invalid shard selector: …`), which
/// `ErrorToAPIStatus` answers as a 500 with no reason.
fn shard_selector(ctx: &Ctx) -> Result<Option<ShardSelector>, ApiError> {
    if !ctx.shared.options.sharded_list_and_watch {
        return Ok(None);
    }
    match ctx.query.get("shardSelector").filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => shards::parse(s)
            .map(Some)
            .map_err(|e| ApiError::new(500, "", format!("invalid shard selector: {e}"))),
    }
}

async fn wait_fresh(ctx: &Ctx, rv: u64) -> Result<(), ApiError> {
    let current = ctx.shared.storage.lock().rv();
    if rv <= current {
        return Ok(());
    }
    if ctx.shared.storage.wait_for(rv, FRESHNESS_WAIT).await {
        Ok(())
    } else {
        Err(too_large(rv, ctx.shared.storage.lock().rv()))
    }
}

fn output(ctx: &Ctx) -> Result<(Output, IncludeObject), ApiError> {
    let out = h::negotiate(&ctx.parts.headers)?;
    let include =
        IncludeObject::parse(ctx.query.get("includeObject")).map_err(ApiError::bad_request)?;
    Ok((out, include))
}

pub(super) async fn get(ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    let (out, include) = output(ctx)?;
    if let Some(rv) = ctx.query.non_empty("resourceVersion").filter(|r| *r != "0") {
        wait_fresh(ctx, parse_rv(rv)?).await?;
    }
    let key = ctx.key();
    let obj = ctx
        .shared
        .storage
        .lock()
        .get(&ctx.def.key(), &key)
        .ok_or_else(|| ApiError::not_found(&ctx.def.plural, &ctx.def.group, &key.1))?;
    let obj = conversion::serve_one(&ctx.def, &ctx.path.version, obj).await?;
    Ok(match out {
        Output::Object(f) => h::respond(200, f, render(&ctx.def, &ctx.path.version, &obj)),
        Output::Table { version } => {
            let cols = table::columns(&ctx.def, &ctx.path.version);
            let row = table::row(
                &ctx.def,
                &ctx.path.version,
                version,
                &obj.to_value(),
                include,
            );
            h::json(
                200,
                &table::table(version, Some(cols), vec![row], &obj.rv.to_string(), None),
            )
        }
        Output::Metadata { version } => {
            h::json(200, &table::partial_metadata(&obj.to_value(), version))
        }
    })
}

/// kube-apiserver's continue token (base64 of `{"v", "rv", "start"}`),
/// with the page's `remainingItemCount` beside them when it has one, so
/// the next page need not count the rest of the list again.
fn encode_continue(rv: u64, key: &ObjKey, remaining: Option<u64>) -> String {
    let mut token =
        json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{}/{}\u{0}", key.0, key.1)});
    if let Some(n) = remaining {
        token["remaining"] = json!(n);
    }
    base64::engine::general_purpose::STANDARD.encode(token.to_string())
}

/// The resourceVersion, last key and remaining count of a continue token.
fn decode_continue(token: &str) -> Result<(u64, ObjKey, Option<u64>), ApiError> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let raw = base64::engine::general_purpose::STANDARD
        .decode(token)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(token))
        .map_err(|_| bad("not base64"))?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad("not JSON"))?;
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(bad("server does not recognize this encoded key"));
    }
    let rv = v
        .get("rv")
        .and_then(Value::as_u64)
        .filter(|r| *r > 0)
        .ok_or_else(|| bad("incorrect encoded start resourceVersion"))?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("missing start"))?;
    let start = start.trim_end_matches('\u{0}');
    let (ns, name) = start
        .split_once('/')
        .ok_or_else(|| bad("invalid start key"))?;
    let remaining = v.get("remaining").and_then(Value::as_u64);
    Ok((rv, (ns.to_owned(), name.to_owned()), remaining))
}

const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue value from the response to get a consistent snapshot.";

/// A list (`GET` on a collection): the options checked, the page read at
/// the resourceVersion or continue token asked for, then encoded.
pub(super) async fn list(ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    let (out, include) = output(ctx)?;
    check_list_options(ctx)?;
    let q = &ctx.query;
    let rv = q.non_empty("resourceVersion");
    let rvm = q.non_empty("resourceVersionMatch");
    let cont = q.non_empty("continue");
    let filter = filter(ctx)?;
    let mut limit = q.int("limit")?.filter(|l| *l > 0).map(|l| l as usize);
    let mut at = None;
    let mut start_after = None;
    let mut from_continue = false;
    let mut known_remaining = None;
    if let Some(token) = cont {
        if rv.is_some_and(|r| r != "0") {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let (trv, key, remaining) = decode_continue(token)?;
        at = Some(trv);
        start_after = Some(key);
        known_remaining = remaining;
        from_continue = true;
    } else if let Some(rv) = rv {
        if rv == "0" {
            // Served from the watch cache, which ignores limit.
            limit = None;
        } else {
            let n = parse_rv(rv)?;
            let exact = rvm == Some("Exact") || (rvm.is_none() && limit.is_some());
            if exact {
                at = Some(n);
            } else {
                wait_fresh(ctx, n).await?;
            }
        }
    }
    let page = {
        let store = ctx.shared.storage.lock();
        store.list_page(
            &ctx.def.key(),
            &filter,
            at,
            start_after.as_ref(),
            limit,
            known_remaining,
        )
    };
    let page = match page {
        Ok(p) => p,
        Err(StoreError::Expired { .. }) if from_continue => {
            return Err(ApiError::expired(CONTINUE_EXPIRED))
        }
        Err(StoreError::Expired { .. }) => {
            return Err(ApiError::expired(
                "The resourceVersion for the provided list is too old.",
            ))
        }
        Err(StoreError::TooLarge { requested, current }) => {
            if ctx.shared.storage.wait_for(requested, FRESHNESS_WAIT).await {
                return Box::pin(list(ctx)).await;
            }
            return Err(too_large(requested, current));
        }
        Err(e) => return Err(store_error(&ctx.def, "", e)),
    };
    let items = conversion::serve(&ctx.def, &ctx.path.version, page.items, true).await?;
    let cont_token = page
        .next
        .as_ref()
        .map(|k| encode_continue(page.rv, k, page.remaining));
    let rv_s = page.rv.to_string();
    let shard_info = filter.shards.as_ref().map(ToString::to_string);
    let meta = ListMeta {
        rv: &rv_s,
        cont: cont_token.as_deref(),
        // Counted over the unfiltered window before kubernetes#140513,
        // omitted with a shard selector since.
        remaining: page.remaining.filter(|_| shard_info.is_none()),
        shard_info: shard_info.as_deref(),
    };
    Ok(list_response(ctx, out, include, items, &meta))
}

/// The list options kube-apiserver refuses together
/// (`ValidateListOptions`).
fn check_list_options(ctx: &Ctx) -> Result<(), ApiError> {
    let q = &ctx.query;
    let rv = q.non_empty("resourceVersion");
    let rvm = q.non_empty("resourceVersionMatch");
    let cont = q.non_empty("continue");
    let mut causes = Vec::new();
    if let Some(m) = rvm {
        if rv.is_none() {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if cont.is_some() {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if m != "Exact" && m != "NotOlderThan" {
            causes.push(Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!("Unsupported value: \"{m}\": supported values: \"Exact\", \"NotOlderThan\", \"\""),
                field: "resourceVersionMatch".into(),
            });
        }
        if m == "Exact" && rv == Some("0") {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if q.flag("sendInitialEvents")?.is_some() {
        causes.push(Cause::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    if !causes.is_empty() {
        return Err(invalid_list_options(causes));
    }
    Ok(())
}

/// A list page in the negotiated output: the objects, a Table or partial
/// object metadata.
fn list_response(
    ctx: &Ctx,
    out: Output,
    include: IncludeObject,
    items: Vec<Arc<StoredObject>>,
    meta: &ListMeta<'_>,
) -> Response<Body> {
    match out {
        Output::Object(Format::Json) => h::json_response(
            200,
            ListStream::new(Arc::clone(&ctx.def), &ctx.path.version, items, meta).boxed_unsync(),
        ),
        Output::Object(f) => h::respond(
            200,
            f,
            list_body(Arc::clone(&ctx.def), &ctx.path.version, items, meta),
        ),
        Output::Table { version } => {
            let cols = table::columns(&ctx.def, &ctx.path.version);
            let rows = items
                .iter()
                .map(|o| table::row(&ctx.def, &ctx.path.version, version, &o.to_value(), include))
                .collect();
            let mut t = table::table(version, Some(cols), rows, meta.rv, meta.cont);
            if let Some(n) = meta.remaining {
                t["metadata"]["remainingItemCount"] = json!(n);
            }
            h::json(200, &t)
        }
        Output::Metadata { version } => {
            let items: Vec<Value> = items
                .iter()
                .map(|o| table::partial_metadata(&o.to_value(), version))
                .collect();
            let mut list_meta = json!({"resourceVersion": meta.rv});
            if let Some(c) = meta.cont {
                list_meta["continue"] = json!(c);
            }
            if let Some(n) = meta.remaining {
                list_meta["remainingItemCount"] = json!(n);
            }
            h::json(
                200,
                &json!({"kind": "PartialObjectMetadataList", "apiVersion": format!("meta.k8s.io/{version}"), "metadata": list_meta, "items": items}),
            )
        }
    }
}

pub(super) async fn watch(ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    let (out, include) = output(ctx)?;
    let q = &ctx.query;
    let rv = q.non_empty("resourceVersion");
    let rvm = q.non_empty("resourceVersionMatch");
    let send_initial = q.flag("sendInitialEvents")?;
    let bookmarks = q.flag("allowWatchBookmarks")?.unwrap_or(false);
    let mut causes = Vec::new();
    if send_initial.is_some() && rvm != Some("NotOlderThan") {
        causes.push(Cause::forbidden(
            "resourceVersionMatch",
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if let Some(m) = rvm {
        if send_initial.is_none() {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if m != "NotOlderThan" {
            causes.push(Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!("Unsupported value: \"{m}\": supported values: \"NotOlderThan\""),
                field: "resourceVersionMatch".into(),
            });
        }
        if q.non_empty("continue").is_some() {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    if !causes.is_empty() {
        return Err(invalid_list_options(causes));
    }
    let filter = filter(ctx)?;
    let timeout = match q.int("timeoutSeconds")? {
        // Capped so the deadline never overflows.
        Some(s) if s > 0 => Duration::from_secs((s as u64).min(u64::from(u32::MAX))),
        _ => watch::default_timeout(),
    };
    let from = match (send_initial, rv) {
        (Some(true), rv) => {
            if let Some(r) = rv.filter(|r| *r != "0") {
                wait_fresh(ctx, parse_rv(r)?).await?;
            }
            WatchFrom::Now { initial: true }
        }
        (_, None) | (_, Some("0")) => WatchFrom::Now {
            initial: send_initial != Some(false),
        },
        (_, Some(r)) => {
            let n = parse_rv(r)?;
            wait_fresh(ctx, n).await?;
            WatchFrom::After(n)
        }
    };
    let sub = {
        let mut store = ctx.shared.storage.lock();
        store.watch(&ctx.def.key(), filter, from)
    };
    let sub = match sub {
        Ok(s) => s,
        Err(e @ StoreError::Expired { .. }) => {
            return Ok(watch::error_stream(&store_error(&ctx.def, "", e)))
        }
        Err(e) => return Err(store_error(&ctx.def, "", e)),
    };
    let out = match out {
        Output::Object(Format::Yaml) => Output::Object(Format::Json),
        o => o,
    };
    Ok(watch::stream(
        ctx.shared.clone(),
        WatchSpec {
            def: ctx.def.clone(),
            version: ctx.path.version.clone(),
            output: out,
            include,
            bookmarks,
            initial_end: send_initial == Some(true),
            timeout,
        },
        sub,
    ))
}
