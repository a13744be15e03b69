//! The watch-stream decoder ([`kubeforge::client::watch::EventStream`]) fed
//! a response body in arbitrary chunks. Beyond not panicking or hanging,
//! the events it yields must not depend on where the chunks were cut: the
//! body decoded in one chunk is the reference.
//!
//! Input: the response body. A first line `chunks=3,1,7` sets the chunk
//! sizes (repeated); otherwise sizes from 1 to 16 bytes are drawn from a
//! generator seeded by the input.

use futures::executor::block_on;
use futures::{stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kubeforge::client::watch::EventStream;
use kubeforge::kube_core::DynamicObject;
use serde::de::DeserializeOwned;

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

/// Every event (or error) the decoder yields for `chunks`, as text.
fn decode<K: DeserializeOwned + std::fmt::Debug>(chunks: &[&[u8]]) -> Vec<String> {
    let owned: Vec<Result<bytes::Bytes, kubeforge::Error>> = chunks
        .iter()
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let events = EventStream::<_, K>::new(stream::iter(owned));
    block_on(events.collect::<Vec<_>>())
        .into_iter()
        .map(|e| match e {
            Ok(event) => format!("{event:?}"),
            Err(err) => format!("error: {err}"),
        })
        .collect()
}

fn compare<K: DeserializeOwned + std::fmt::Debug>(
    body: &[u8],
    chunks: &[&[u8]],
    limits: &Limits,
    kind: &str,
) -> Checked {
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
    Ok(())
}
