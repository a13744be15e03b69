//! Incremental decoding of watch responses: newline-delimited
//! `{"type":..,"object":..}` JSON (kube-apiserver handlers/watch.go), one
//! event at a time as bytes arrive. Only the bytes of the event being
//! assembled are buffered, so memory is bounded by the largest event, not by
//! the response. `ERROR` events become [`Error::Api`] carrying the server's
//! `Status` (a 410 `Expired` answers `is_gone()`); a malformed line is a
//! [`Error::Decode`]; nothing here panics on what the server sends.

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::Stream;
use kube_core::WatchEvent;
use serde::de::DeserializeOwned;

use super::error::Error;

/// The largest single watch event accepted (objects are limited to about
/// 1.5 MiB by etcd; this leaves ample room while stopping a runaway stream).
pub const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// Splits a byte stream into lines, keeping only the unfinished line.
#[derive(Debug, Default)]
pub(crate) struct LineBuffer {
    buf: BytesMut,
    /// How far `buf` has been searched for a newline already, so a large
    /// event arriving in many chunks is scanned once, not once per chunk.
    scanned: usize,
}

impl LineBuffer {
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete line (without its `\n`), if one is buffered.
    pub(crate) fn next_line(&mut self) -> Option<Bytes> {
        let pos = self.buf[self.scanned..].iter().position(|b| *b == b'\n');
        match pos {
            Some(offset) => {
                let end = self.scanned + offset;
                let mut line = self.buf.split_to(end + 1);
                line.truncate(end);
                self.scanned = 0;
                Some(line.freeze())
            }
            None => {
                self.scanned = self.buf.len();
                None
            }
        }
    }

    /// Bytes of the unfinished line.
    pub(crate) fn pending(&self) -> usize {
        self.buf.len()
    }

    /// What is left at end of stream.
    pub(crate) fn take_rest(&mut self) -> Bytes {
        self.scanned = 0;
        self.buf.split().freeze()
    }
}

/// Decodes one watch line. Blank lines yield `None`.
pub(crate) fn decode_event<K: DeserializeOwned>(
    line: &[u8],
) -> Option<Result<WatchEvent<K>, Error>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(match super::exact::from_slice::<WatchEvent<K>>(line) {
        Ok(WatchEvent::Error(status)) => {
            let mut status = status;
            if status.code == 0 {
                // An ERROR event without a code is still a failure.
                status.code = 500;
            }
            Err(Error::Api(status))
        }
        Ok(event) => Ok(event),
        Err(source) => Err(Error::Decode {
            what: "watch event".to_owned(),
            source,
        }),
    })
}

pin_project_lite::pin_project! {
    /// A stream of watch events decoded from a stream of byte chunks.
    pub struct EventStream<S, K> {
        #[pin]
        inner: S,
        lines: LineBuffer,
        done: bool,
        _k: PhantomData<fn() -> K>,
    }
}

impl<S, K> EventStream<S, K> {
    /// Decodes events from `inner`, a stream of body chunks.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            lines: LineBuffer::default(),
            done: false,
            _k: PhantomData,
        }
    }
}

impl<S, K> Stream for EventStream<S, K>
where
    S: Stream<Item = Result<Bytes, Error>>,
    K: DeserializeOwned,
{
    type Item = Result<WatchEvent<K>, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            while let Some(line) = this.lines.next_line() {
                if let Some(event) = decode_event(&line) {
                    return Poll::Ready(Some(event));
                }
            }
            if *this.done {
                return Poll::Ready(None);
            }
            match ready!(this.inner.as_mut().poll_next(cx)) {
                Some(Ok(chunk)) => {
                    this.lines.push(&chunk);
                    if this.lines.pending() > MAX_EVENT_BYTES {
                        *this.done = true;
                        this.lines.take_rest();
                        return Poll::Ready(Some(Err(Error::Protocol(format!(
                            "a watch event exceeds {MAX_EVENT_BYTES} bytes"
                        )))));
                    }
                }
                Some(Err(e)) => {
                    *this.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                None => {
                    *this.done = true;
                    // The server ends every event with a newline; accept a
                    // final unterminated one all the same.
                    let rest = this.lines.take_rest();
                    if let Some(event) = decode_event(&rest) {
                        return Poll::Ready(Some(event));
                    }
                    return Poll::Ready(None);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{stream, StreamExt};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_core::ResourceExt;

    const BODY: &str = concat!(
        r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1"},"data":{"k":"v\n"}}}"#,
        "\n",
        r#"{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"2"},"data":{"k":"ü"}}}"#,
        "\n",
        r#"{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"3","annotations":{"k8s.io/initial-events-end":"true"}}}}"#,
        "\n",
        r#"{"type":"DELETED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"4"}}}"#,
        "\n",
        r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (4)","reason":"Expired","code":410}}"#,
        "\n",
    );

    fn summary(events: Vec<Result<WatchEvent<ConfigMap>, Error>>) -> Vec<String> {
        events
            .into_iter()
            .map(|e| match e {
                Ok(WatchEvent::Added(o)) => {
                    format!("added {} {}", o.name_any(), o.resource_version().unwrap())
                }
                Ok(WatchEvent::Modified(o)) => format!(
                    "modified {} {}",
                    o.name_any(),
                    o.resource_version().unwrap()
                ),
                Ok(WatchEvent::Deleted(o)) => {
                    format!("deleted {} {}", o.name_any(), o.resource_version().unwrap())
                }
                Ok(WatchEvent::Bookmark(b)) => format!("bookmark {}", b.metadata.resource_version),
                Ok(WatchEvent::Error(_)) => "error event".to_owned(),
                Err(e) if e.is_gone() => "gone".to_owned(),
                Err(e) => format!("err {e}"),
            })
            .collect()
    }

    async fn decode_chunks(chunks: Vec<Vec<u8>>) -> Vec<Result<WatchEvent<ConfigMap>, Error>> {
        let s = stream::iter(chunks.into_iter().map(|c| Ok(Bytes::from(c))));
        EventStream::<_, ConfigMap>::new(s).collect().await
    }

    fn expected() -> Vec<String> {
        [
            "added a 1",
            "modified a 2",
            "bookmark 3",
            "deleted a 4",
            "gone",
        ]
        .map(String::from)
        .to_vec()
    }

    #[tokio::test]
    async fn body_split_at_every_byte_boundary_decodes_the_same() {
        let body = BODY.as_bytes();
        for i in 0..=body.len() {
            let chunks = vec![body[..i].to_vec(), body[i..].to_vec()];
            assert_eq!(
                summary(decode_chunks(chunks).await),
                expected(),
                "split at {i}"
            );
        }
    }

    #[tokio::test]
    async fn body_one_byte_at_a_time() {
        let chunks = BODY.bytes().map(|b| vec![b]).collect();
        assert_eq!(summary(decode_chunks(chunks).await), expected());
    }

    #[tokio::test]
    async fn whole_body_in_one_chunk_and_unterminated_last_event() {
        assert_eq!(
            summary(decode_chunks(vec![BODY.as_bytes().to_vec()]).await),
            expected()
        );
        let trimmed = BODY.trim_end().as_bytes().to_vec();
        assert_eq!(summary(decode_chunks(vec![trimmed]).await), expected());
    }

    #[tokio::test]
    async fn malformed_lines_are_errors_not_panics() {
        let bad: &[&str] = &[
            "{not json}\n",
            "{\"type\":\"ADDED\"}\n",
            "{\"type\":\"NOPE\",\"object\":{}}\n",
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":5}}}\n",
            "\u{0}\u{1}\u{2}\n",
            "[1,2,3]\n",
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}",
        ];
        for line in bad {
            let events = decode_chunks(vec![line.as_bytes().to_vec()]).await;
            assert_eq!(events.len(), 1, "{line:?}");
            assert!(
                matches!(events[0], Err(Error::Decode { .. })),
                "{line:?} gave {:?}",
                events[0].as_ref().err()
            );
        }
        // Invalid UTF-8 inside a string value is a decode error too.
        let mut raw = br#"{"type":"ADDED","object":{"metadata":{"name":""#.to_vec();
        raw.extend_from_slice(&[0xff, 0xfe]);
        raw.extend_from_slice(b"\"}}}\n");
        let events = decode_chunks(vec![raw]).await;
        assert!(matches!(events[0], Err(Error::Decode { .. })));
    }

    #[tokio::test]
    async fn blank_lines_are_skipped_and_transport_errors_end_the_stream() {
        let chunks = vec![
            Ok(Bytes::from_static(b"\n\r\n")),
            Ok(Bytes::from(BODY.lines().next().unwrap().to_owned() + "\n")),
            Err(Error::Protocol("connection reset".into())),
            Ok(Bytes::from_static(b"never read\n")),
        ];
        let events: Vec<_> = EventStream::<_, ConfigMap>::new(stream::iter(chunks))
            .collect()
            .await;
        assert_eq!(events.len(), 2);
        assert!(events[0].is_ok());
        assert!(matches!(events[1], Err(Error::Protocol(_))));
    }

    #[test]
    fn line_buffer_holds_only_the_unfinished_line() {
        let mut lines = LineBuffer::default();
        lines.push(b"abc\nde");
        assert_eq!(lines.next_line().unwrap(), &b"abc"[..]);
        assert!(lines.next_line().is_none());
        assert_eq!(lines.pending(), 2);
        lines.push(b"f\n");
        assert_eq!(lines.next_line().unwrap(), &b"def"[..]);
        assert_eq!(lines.pending(), 0);
    }
}
