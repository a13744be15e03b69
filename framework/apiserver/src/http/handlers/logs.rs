//! `GET pods/{name}/log`, what `kubectl logs` reads: the PodLogOptions in
//! the query (`container`, `follow`, `previous`, `sinceSeconds`,
//! `sinceTime`, `timestamps`, `tailLines`, `limitBytes`, checked as
//! `ValidatePodLogOptions` does), the container chosen as the pod
//! registry's `LogLocation` chooses it, and the output the kubelet kept
//! (`registry::pod_logs`) as `text/plain`, streamed as it grows with
//! `follow` until the container's output closes. Pods the kubelet only
//! simulates have no output: their log is empty.
//!
//! Sources: pkg/registry/core/pod/strategy.go (`LogLocation`,
//! `validateContainer`), pkg/apis/core/validation (`ValidatePodLogOptions`),
//! pkg/kubelet/kuberuntime/logs (tail, then since; `--timestamps` as
//! RFC 3339 with nanoseconds).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::stream;
use http::{header, HeaderValue, Response};
use http_body_util::{BodyExt, StreamBody};
use serde_json::Value;

use super::ctx::Ctx;
use crate::http::wire::{self as h, Body};
use crate::machinery::status::{ApiError, Cause};
use crate::machinery::util::Pointer;
use crate::registry::pod_logs::{InstanceLog, Line};

/// The PodLogOptions of a request.
struct Options {
    container: Option<String>,
    follow: bool,
    previous: bool,
    since: Option<jiff::Timestamp>,
    timestamps: bool,
    tail_lines: Option<usize>,
    limit_bytes: Option<usize>,
}

fn options(ctx: &Ctx, pod: &str) -> Result<Options, ApiError> {
    let q = &ctx.query;
    let invalid = |field: &str, message: &str| {
        ApiError::invalid(
            "PodLogOptions",
            "",
            pod,
            vec![Cause::invalid(field, message)],
        )
    };
    let since_seconds = q.int("sinceSeconds")?;
    let since_time = q
        .non_empty("sinceTime")
        .map(|t| {
            t.parse::<jiff::Timestamp>().map_err(|e| {
                ApiError::bad_request(format!("invalid value for sinceTime: {t}: {e}"))
            })
        })
        .transpose()?;
    if since_seconds.is_some() && since_time.is_some() {
        return Err(invalid(
            "sinceSeconds",
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        ));
    }
    if since_seconds.is_some_and(|s| s < 1) {
        return Err(invalid("sinceSeconds", "must be greater than 0"));
    }
    let tail = q.int("tailLines")?;
    if tail.is_some_and(|t| t < 0) {
        return Err(invalid("tailLines", "must be greater than or equal to 0"));
    }
    let limit = q.int("limitBytes")?;
    if limit.is_some_and(|l| l < 1) {
        return Err(invalid("limitBytes", "must be greater than 0"));
    }
    let since = since_time.or_else(|| {
        since_seconds.map(|s| {
            jiff::Timestamp::now()
                .checked_sub(jiff::SignedDuration::from_secs(s))
                .unwrap_or(jiff::Timestamp::MIN)
        })
    });
    Ok(Options {
        container: q.non_empty("container").map(str::to_owned),
        follow: q.flag("follow")?.unwrap_or(false),
        previous: q.flag("previous")?.unwrap_or(false),
        since,
        timestamps: q.flag("timestamps")?.unwrap_or(false),
        tail_lines: tail.map(|t| t as usize),
        limit_bytes: limit.map(|l| l as usize),
    })
}

fn names(pod: &Value, field: &str) -> Vec<String> {
    pod.at(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name")?.as_str().map(str::to_owned))
        .collect()
}

/// The container the request means, as `validateContainer` picks it.
fn container(pod: &Value, name: &str, asked: Option<String>) -> Result<String, ApiError> {
    let containers = names(pod, "/spec/containers");
    let init = names(pod, "/spec/initContainers");
    let Some(asked) = asked else {
        if containers.len() == 1 {
            return Ok(containers[0].clone());
        }
        let mut message = format!(
            "a container name must be specified for pod {name}, choose one of: [{}]",
            containers.join(" ")
        );
        if !init.is_empty() {
            message.push_str(&format!(
                " or one of the init containers: [{}]",
                init.join(" ")
            ));
        }
        return Err(ApiError::bad_request(message));
    };
    if containers.contains(&asked) || init.contains(&asked) {
        Ok(asked)
    } else {
        Err(ApiError::bad_request(format!(
            "container {asked} is not valid for pod {name}"
        )))
    }
}

/// `GET pods/{name}/log`.
pub(super) async fn log(ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    let key = ctx.key();
    let obj = ctx
        .shared
        .storage
        .lock()
        .get(&ctx.def.key(), &key)
        .ok_or_else(|| ApiError::not_found("pods", "", &key.1))?;
    let pod = obj.value();
    let opts = options(ctx, &key.1)?;
    let name = container(&pod, &key.1, opts.container.clone())?;
    let Some(log) = ctx.shared.pod_logs.get(obj.uid(), &name, opts.previous) else {
        return no_output(&pod, &key.1, &name, opts.previous);
    };
    Ok(text(render(log, opts)))
}

/// The answer when nothing was kept: the kubelet's errors for a
/// container not started or with no previous instance; else (a
/// simulated pod) an empty log.
fn no_output(
    pod: &Value,
    name: &str,
    container: &str,
    previous: bool,
) -> Result<Response<Body>, ApiError> {
    if previous {
        return Err(ApiError::bad_request(format!(
            "previous terminated container \"{container}\" in pod \"{name}\" not found"
        )));
    }
    let waiting = pod
        .at("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(container))
        .and_then(|s| s.at("/state/waiting/reason"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    match waiting {
        Some(reason) if reason == "ContainerCreating" || reason == "PodInitializing" => {
            Err(ApiError::bad_request(format!(
                "container \"{container}\" in pod \"{name}\" is waiting to start: {reason}"
            )))
        }
        _ => Ok(text(h::full(Bytes::new()))),
    }
}

fn text(body: Body) -> Response<Body> {
    let mut resp = Response::new(body);
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    resp
}

/// What is written of the lines so far and, with `follow`, of those to
/// come.
struct Writer {
    log: Arc<InstanceLog>,
    since: Option<jiff::Timestamp>,
    timestamps: bool,
    /// Bytes still allowed by `limitBytes`.
    budget: Option<usize>,
    follow: bool,
    next_seq: u64,
}

impl Writer {
    fn write(&mut self, lines: &[Line]) -> Bytes {
        let mut out = BytesMut::new();
        for line in lines {
            self.next_seq = line.seq + 1;
            if self.since.is_some_and(|s| line.at < s) {
                continue;
            }
            let mut piece = BytesMut::new();
            if self.timestamps {
                piece.extend_from_slice(line.at.to_string().as_bytes());
                piece.extend_from_slice(b" ");
            }
            piece.extend_from_slice(&line.text);
            if let Some(budget) = &mut self.budget {
                let take = piece.len().min(*budget);
                out.extend_from_slice(&piece[..take]);
                *budget -= take;
                if *budget == 0 {
                    self.follow = false;
                    break;
                }
            } else {
                out.extend_from_slice(&piece);
            }
        }
        out.freeze()
    }
}

fn render(log: Arc<InstanceLog>, opts: Options) -> Body {
    let all = log.lines_from(0);
    let next_seq = all.last().map_or(0, |l| l.seq + 1);
    let tail_from = opts
        .tail_lines
        .map_or(0, |tail| all.len().saturating_sub(tail));
    let mut writer = Writer {
        log,
        since: opts.since,
        timestamps: opts.timestamps,
        budget: opts.limit_bytes,
        follow: opts.follow,
        next_seq,
    };
    let first = writer.write(&all[tail_from..]);
    if !writer.follow {
        return h::full(first);
    }
    let s = stream::unfold((Some(first), writer), |(first, mut w)| async move {
        if let Some(first) = first.filter(|f| !f.is_empty()) {
            return Some((Ok(hyper::body::Frame::data(first)), (None, w)));
        }
        loop {
            if !w.follow {
                return None;
            }
            let fresh = w.log.lines_from(w.next_seq);
            if fresh.is_empty() {
                // Ends once the container's output closed.
                if !w.log.wait_past(w.next_seq).await {
                    return None;
                }
                continue;
            }
            let chunk = w.write(&fresh);
            if !chunk.is_empty() {
                let frame = hyper::body::Frame::data(chunk);
                return Some((Ok::<_, std::convert::Infallible>(frame), (None, w)));
            }
        }
    });
    BodyExt::boxed_unsync(StreamBody::new(s))
}
