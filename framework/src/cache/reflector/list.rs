//! Streaming decode of list responses: the items of
//! `{"kind":..,"metadata":{..},"items":[{..},{..}]}` are cut out of the
//! byte stream one at a time as chunks arrive and decoded on their own, so
//! the reflector never holds a whole list body — only the item being
//! assembled. (A list at resourceVersion "0" is served from the watch cache,
//! which ignores `limit`: one response can hold every object of a type.)
//!
//! [`ItemSplitter`] tracks just enough JSON structure (nesting depth,
//! strings and escapes) to find the top-level `items` array and `metadata`
//! object; each item's bytes then go to `serde_json`. Every byte JSON
//! gives structural meaning to is ASCII, so scanning bytes is safe in UTF-8.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde::de::DeserializeOwned;

use crate::cache::Transform;
use crate::client::{self, Client};

/// The longest a list response may go without sending a byte.
pub(crate) const LIST_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Cuts the items out of a list body as its bytes arrive.
#[derive(Debug, Default)]
pub(crate) struct ItemSplitter {
    buf: BytesMut,
    /// Next byte of `buf` to scan.
    pos: usize,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    key_start: Option<usize>,
    last_key: Vec<u8>,
    in_items: bool,
    item_start: Option<usize>,
    meta_start: Option<usize>,
    metadata: Option<Bytes>,
    closed: bool,
}

impl ItemSplitter {
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete item, `None` once the buffered bytes hold no more.
    pub(crate) fn next_item(&mut self) -> Result<Option<Bytes>, String> {
        while self.pos < self.buf.len() {
            let i = self.pos;
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    self.pos += 1;
                    continue;
                }
                // Jump to the next quote or backslash: strings are most of
                // the bytes.
                match self.buf[i..].iter().position(|&c| c == b'"' || c == b'\\') {
                    None => self.pos = self.buf.len(),
                    Some(off) => {
                        let j = i + off;
                        self.pos = j + 1;
                        if self.buf[j] == b'\\' {
                            self.escaped = true;
                        } else {
                            self.in_string = false;
                            if let Some(start) = self.key_start.take() {
                                self.last_key.clear();
                                self.last_key.extend_from_slice(&self.buf[start + 1..j]);
                            }
                        }
                    }
                }
                continue;
            }
            let b = self.buf[i];
            self.pos += 1;
            match b {
                b'"' => {
                    if self.depth == 2 && self.in_items {
                        return Err("a list item is not a JSON object".into());
                    }
                    self.in_string = true;
                    if self.depth == 1 && self.expect_key {
                        self.key_start = Some(i);
                        self.expect_key = false;
                    }
                }
                b'{' | b'[' => {
                    if self.closed {
                        return Err("data after the end of the list".into());
                    }
                    self.depth += 1;
                    match self.depth {
                        1 if b != b'{' => {
                            return Err("a list response must be a JSON object".into())
                        }
                        1 => self.expect_key = true,
                        2 if b == b'[' && self.last_key == b"items" => self.in_items = true,
                        2 if b == b'{' && self.last_key == b"metadata" => self.meta_start = Some(i),
                        3 if self.in_items => {
                            if b != b'{' {
                                return Err("a list item is not a JSON object".into());
                            }
                            self.item_start = Some(i);
                        }
                        _ => {}
                    }
                }
                b'}' | b']' => {
                    if self.depth == 0 {
                        return Err("unbalanced brackets in list response".into());
                    }
                    if self.depth == 3 && self.in_items {
                        if let Some(start) = self.item_start.take() {
                            let mut head = self.buf.split_to(i + 1);
                            self.pos = 0;
                            let item = head.split_off(start).freeze();
                            self.depth -= 1;
                            return Ok(Some(item));
                        }
                    }
                    if self.depth == 2 {
                        if self.in_items && b == b']' {
                            self.in_items = false;
                        }
                        if let Some(start) = self.meta_start.take() {
                            self.metadata = Some(Bytes::copy_from_slice(&self.buf[start..=i]));
                        }
                    }
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.closed = true;
                    }
                }
                b',' if self.depth == 1 => self.expect_key = true,
                c if self.depth == 2 && self.in_items && c != b',' && !c.is_ascii_whitespace() => {
                    return Err("a list item is not a JSON object".into())
                }
                c if self.closed && !c.is_ascii_whitespace() => {
                    return Err("data after the end of the list".into())
                }
                _ => {}
            }
        }
        self.compact();
        Ok(None)
    }

    /// Drops the scanned bytes nobody needs any more.
    fn compact(&mut self) {
        let keep = [self.item_start, self.meta_start, self.key_start]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(self.pos);
        if keep == 0 {
            return;
        }
        let _ = self.buf.split_to(keep);
        self.pos -= keep;
        for start in [
            &mut self.item_start,
            &mut self.meta_start,
            &mut self.key_start,
        ] {
            if let Some(s) = start.as_mut() {
                *s -= keep;
            }
        }
    }

    /// The list's metadata, once the whole body has been pushed.
    pub(crate) fn finish(self) -> Result<ListMeta, String> {
        if !self.closed || self.depth != 0 {
            return Err("the list response ended before its closing brace".into());
        }
        match self.metadata {
            Some(raw) => serde_json::from_slice(&raw)
                .map_err(|e| format!("cannot decode the list's metadata: {e}")),
            None => Ok(ListMeta::default()),
        }
    }
}

/// One page of a list: its items are decoded, transformed and wrapped in an
/// `Arc` into `out` as they arrive. Returns the page's metadata
/// (resourceVersion, continue token).
pub(crate) async fn fetch_page<K>(
    client: &Client,
    request: http::Request<Vec<u8>>,
    transform: Option<&Transform<K>>,
    out: &mut Vec<Arc<K>>,
) -> Result<ListMeta, client::Error>
where
    K: DeserializeOwned,
{
    let what = request
        .uri()
        .path_and_query()
        .map_or_else(String::new, |pq| pq.as_str().to_owned());
    let mut body = client.request_stream(request).await?;
    let mut splitter = ItemSplitter::default();
    let protocol = |problem: String| client::Error::Protocol(format!("list {what}: {problem}"));
    loop {
        let chunk = match tokio::time::timeout(LIST_IDLE_TIMEOUT, body.next()).await {
            Err(_) => {
                return Err(client::Error::Timeout {
                    url: what,
                    timeout: LIST_IDLE_TIMEOUT,
                })
            }
            Ok(None) => break,
            Ok(Some(chunk)) => chunk?,
        };
        splitter.push(&chunk);
        while let Some(item) = splitter.next_item().map_err(protocol)? {
            let obj: K = serde_json::from_slice(&item).map_err(|source| client::Error::Decode {
                what: format!("an item of list {what}"),
                source,
            })?;
            let obj = match transform {
                Some(t) => t.apply(obj),
                None => obj,
            };
            out.push(Arc::new(obj));
        }
    }
    splitter.finish().map_err(protocol)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"tok"},"items":[{"metadata":{"name":"a","annotations":{"x":"}]\"{["}},"data":{"k":"v\\"}},{"metadata":{"name":"b"}} , {"metadata":{"name":"c","labels":{"items":"[]"}}}]}"#;

    fn split(chunks: &[&[u8]]) -> Result<(Vec<String>, ListMeta), String> {
        let mut s = ItemSplitter::default();
        let mut names = Vec::new();
        for c in chunks {
            s.push(c);
            while let Some(item) = s.next_item()? {
                let v: serde_json::Value =
                    serde_json::from_slice(&item).map_err(|e| e.to_string())?;
                names.push(v["metadata"]["name"].as_str().unwrap_or("?").to_owned());
            }
        }
        Ok((names, s.finish()?))
    }

    #[test]
    fn items_and_metadata_come_out_whatever_the_chunking() {
        let body = BODY.as_bytes();
        for i in 0..=body.len() {
            for j in i..=body.len() {
                if j - i > 7 && j != body.len() {
                    continue;
                }
                let (names, meta) = split(&[&body[..i], &body[i..j], &body[j..]]).unwrap();
                assert_eq!(names, ["a", "b", "c"], "split at {i}/{j}");
                assert_eq!(meta.resource_version.as_deref(), Some("42"));
                assert_eq!(meta.continue_.as_deref(), Some("tok"));
            }
        }
        let one_by_one: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(split(&one_by_one).unwrap().0, ["a", "b", "c"]);
    }

    #[test]
    fn metadata_after_items_and_empty_or_null_items() {
        let (names, meta) = split(&[
            br#"{"items":[{"metadata":{"name":"z"}}],"metadata":{"resourceVersion":"7"}}"#,
        ])
        .unwrap();
        assert_eq!(names, ["z"]);
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        assert!(
            split(&[br#"{"metadata":{"resourceVersion":"1"},"items":[]}"#])
                .unwrap()
                .0
                .is_empty()
        );
        assert!(split(&[br#"{"metadata":{},"items":null}"#])
            .unwrap()
            .0
            .is_empty());
    }

    #[test]
    fn truncated_or_malformed_bodies_are_errors() {
        for bad in [
            &br#"{"metadata":{},"items":[{"metadata":{}}"#[..],
            br#"[1,2]"#,
            br#"{"items":[1]}"#,
            br#"{"items":[]}}"#,
            br#"{"items":[]} {"#,
            br#"{"metadata":{"resourceVersion":5},"items":[]}"#,
        ] {
            assert!(split(&[bad]).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn only_the_item_being_assembled_is_buffered() {
        let mut s = ItemSplitter::default();
        s.push(br#"{"metadata":{"resourceVersion":"1"},"items":["#);
        assert!(s.next_item().unwrap().is_none());
        for n in 0..1000 {
            let item = format!(
                r#"{{"metadata":{{"name":"n{n}"}},"data":{{"k":"{}"}}}},"#,
                "x".repeat(100)
            );
            s.push(item.as_bytes());
            assert!(s.next_item().unwrap().is_some());
            assert!(s.next_item().unwrap().is_none());
            assert!(s.buf.len() < 16, "buffer holds {} bytes", s.buf.len());
        }
    }
}
