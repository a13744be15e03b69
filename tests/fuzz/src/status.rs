//! The client's decoding of error answers: a non-2xx answer's body, a
//! `Status` or anything else ([`kubeforge::fuzzing::decode_error_answer`]),
//! a delete's object-or-`Status` answer, and a watch `ERROR` event. Every
//! error must carry a code (the body's, else the answer's), and its
//! message may quote only a bounded part of a body that is not a `Status`.
//!
//! Input: a first line `CODE METHOD [RETRY-AFTER]` (e.g. `429 GET 3`),
//! then the body; without a valid first line, a 500 to a GET.

use futures::executor::block_on;
use futures::{stream, StreamExt};
use kubeforge::client::watch::EventStream;
use kubeforge::fuzzing::{decode_error_answer, decode_object_or_status};
use kubeforge::kube_core::DynamicObject;
use kubeforge::Error;

use crate::input::first_line;
use crate::{bounded, timed, Checked, FindingKind, Limits};

/// What a message may hold beyond the body: the generic text of the code.
const MESSAGE_SLACK: usize = 512;

pub(crate) fn check(data: &[u8], limits: &Limits) -> Checked {
    let (code, method, retry_after, body) = head(data);
    let err = timed(limits, "decoding an error answer", || {
        decode_error_answer(code, &method, retry_after, body)
    })?;
    let Some(err) = err else {
        return Ok(());
    };
    let status = match &err {
        Error::Api(status) => status,
        other => return Err((FindingKind::Contract, format!("not an API error: {other}"))),
    };
    if status.code == 0 {
        return Err((
            FindingKind::Contract,
            format!("an API error without a code: {status:?}"),
        ));
    }
    // Whether the body says it is a Status, read as leniently as JSON
    // allows (unknown keys are skipped, not checked for UTF-8): only
    // then may the code be the body's.
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    let is_status_body = serde_json::from_slice::<Kind>(body)
        .ok()
        .is_some_and(|k| k.kind.as_deref() == Some("Status"));
    if !is_status_body {
        if status.code != code {
            return Err((
                FindingKind::Contract,
                format!(
                    "a {code} answer without a Status became code {}",
                    status.code
                ),
            ));
        }
        // A plain body is quoted once (message and cause), truncated.
        bounded(
            "the error's message",
            err.to_string().len(),
            0,
            1,
            2048 + MESSAGE_SLACK,
        )?;
    }
    // The predicates callers branch on, and the retry delay.
    let _ = (
        err.is_not_found(),
        err.is_conflict(),
        err.is_gone(),
        err.is_invalid(),
        err.is_too_many_requests(),
        err.retry_after(),
    );
    timed(limits, "decoding a delete's answer", || {
        decode_object_or_status(body)
    })?
    .ok();
    check_watch_error(body, limits)
}

/// The body as the object of a watch `ERROR` event.
fn check_watch_error(body: &[u8], limits: &Limits) -> Checked {
    let mut line = b"{\"type\":\"ERROR\",\"object\":".to_vec();
    line.extend_from_slice(body);
    line.extend_from_slice(b"}\n");
    let events = timed(limits, "decoding a watch ERROR event", || {
        let chunks = stream::iter([Ok::<_, Error>(bytes::Bytes::from(line))]);
        block_on(EventStream::<_, DynamicObject>::new(chunks).collect::<Vec<_>>())
    })?;
    for event in events {
        if let Err(Error::Api(status)) = event {
            if status.code == 0 {
                return Err((
                    FindingKind::Contract,
                    "a watch ERROR event became an error without a code".to_owned(),
                ));
            }
        }
    }
    Ok(())
}

/// The answer's code, the request's method, `Retry-After` and the body.
fn head(data: &[u8]) -> (u16, http::Method, Option<&[u8]>, &[u8]) {
    let (line, rest) = first_line(data);
    let mut words = line.split(|b| *b == b' ');
    let code = words
        .next()
        .and_then(|w| std::str::from_utf8(w).ok())
        .and_then(|w| w.parse::<u16>().ok())
        .filter(|c| (400..=599).contains(c));
    let Some(code) = code else {
        return (500, http::Method::GET, None, data);
    };
    let method = words
        .next()
        .and_then(|w| http::Method::from_bytes(w).ok())
        .unwrap_or(http::Method::GET);
    (code, method, words.next(), rest)
}
