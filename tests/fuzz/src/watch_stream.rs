//! The watch-stream decoder ([`kubeforge::client::watch::EventStream`]) fed
//! a response body in arbitrary chunks. Beyond not panicking or hanging,
//! the events it yields must not depend on where the chunks were cut: the
//! body decoded in one chunk is the reference. And that body's events must
//! be what `serde_json` makes of each line: the decoder sizes lists from a
//! scan of its own, which must never change a value or an error.
//!
//! Input: the response body. A first line `chunks=3,1,7` sets the chunk
//! sizes (repeated); otherwise sizes from 1 to 16 bytes are drawn from a
//! generator seeded by the input.

use futures::executor::block_on;
use futures::{stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kubeforge::client::watch::EventStream;
use kubeforge::kube_core::{DynamicObject, WatchEvent};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::input::{first_line, Choices};
use crate::{timed, Checked, FindingKind, Limits};

pub(crate) fn check(data: &[u8], limits: &Limits) -> Checked {
    let (sizes, body) = chunk_sizes(data);
    let chunks = cut(body, &sizes);
    compare::<DynamicObject>(body, &chunks, limits, "DynamicObject")?;
    compare::<ConfigMap>(body, &chunks, limits, "ConfigMap")
}

/// The chunk sizes and the body.
fn chunk_sizes(data: &[u8]) -> (Vec<usize>, &[u8]) {
    let (line, rest) = first_line(data);
    if let Some(list) = line.strip_prefix(b"chunks=") {
        let sizes: Vec<usize> = String::from_utf8_lossy(list)
            .split(',')
            .filter_map(|s| s.trim().parse::<usize>().ok())
            .filter(|n| *n > 0)
            .collect();
        if !sizes.is_empty() {
            return (sizes, rest);
        }
    }
    let seed = data.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    let mut choices = Choices::new(seed);
    let sizes = (0..64).map(|_| choices.up_to(16)).collect();
    (sizes, data)
}

fn cut<'a>(body: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    for size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at((*size).min(rest.len()));
        out.push(chunk);
        rest = tail;
    }
    out
}

/// What a harness needs of the object type: to decode it, and to print
/// it whole (`WatchEvent`'s `Debug` names only the event's type).
trait Object: DeserializeOwned + Serialize + std::fmt::Debug {}

impl<K: DeserializeOwned + Serialize + std::fmt::Debug> Object for K {}

/// An event as text: its type and its object as JSON.
fn describe<K: Object>(event: &WatchEvent<K>) -> String {
    let json = |o: &K| serde_json::to_string(o).unwrap_or_else(|e| format!("<{e}>"));
    match event {
        WatchEvent::Added(o) => format!("ADDED {}", json(o)),
        WatchEvent::Modified(o) => format!("MODIFIED {}", json(o)),
        WatchEvent::Deleted(o) => format!("DELETED {}", json(o)),
        WatchEvent::Bookmark(b) => format!(
            "BOOKMARK {}",
            serde_json::to_string(b).unwrap_or_else(|e| format!("<{e}>"))
        ),
        WatchEvent::Error(e) => format!("ERROR {e:?}"),
    }
}

/// Every event (or error) the decoder yields for `chunks`, as text.
fn decode<K: Object>(chunks: &[&[u8]]) -> Vec<String> {
    let owned: Vec<Result<bytes::Bytes, kubeforge::Error>> = chunks
        .iter()
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let events = EventStream::<_, K>::new(stream::iter(owned));
    block_on(events.collect::<Vec<_>>())
        .into_iter()
        .map(|e| match e {
            Ok(event) => describe(&event),
            Err(err) => format!("error: {err}"),
        })
        .collect()
}

fn compare<K: Object>(body: &[u8], chunks: &[&[u8]], limits: &Limits, kind: &str) -> Checked {
    let whole = timed(limits, "decoding the whole body", || decode::<K>(&[body]))?;
    let pieces = timed(limits, "decoding the chunks", || decode::<K>(chunks))?;
    if whole != pieces {
        return Err((
            FindingKind::Inconsistent,
            format!(
                "{kind} events differ with {} chunks: whole {whole:?}, chunked {pieces:?}",
                chunks.len()
            ),
        ));
    }
    let reference = timed(limits, "decoding each line with serde_json", || {
        by_serde_json::<K>(body)
    })?;
    let agree = whole.len() == reference.len()
        && whole.iter().zip(&reference).all(|(got, want)| match want {
            Some(event) => got == event,
            None => got.starts_with("error: "),
        });
    if !agree {
        return Err((
            FindingKind::Inconsistent,
            format!("{kind} events differ from serde_json's: {whole:?} against {reference:?}"),
        ));
    }
    Ok(())
}

/// What `serde_json` makes of each non-blank line: the event, or `None`
/// where the decoder must yield an error (a line that is not an event, or
/// an `ERROR` event).
fn by_serde_json<K: Object>(body: &[u8]) -> Vec<Option<String>> {
    body.split(|b| *b == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .map(|line| match serde_json::from_slice::<WatchEvent<K>>(line) {
            Ok(WatchEvent::Error(_)) | Err(_) => None,
            Ok(event) => Some(describe(&event)),
        })
        .collect()
}
