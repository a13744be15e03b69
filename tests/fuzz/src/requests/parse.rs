//! Reading a `requests` input: parts separated by `%%` lines, each one
//! request written as on the wire, without the HTTP version:
//!
//! ```text
//! PATCH /api/v1/namespaces/default/configmaps/a?fieldManager=x
//! Content-Type: application/merge-patch+json
//!
//! {"data":{"k":"v"}}
//! ```
//!
//! The body is every byte after the blank line (binary protobuf too).
//! Headers the harness owns (`Authorization`, `Host`, the framing ones)
//! are dropped, and bytes a URI cannot hold are percent-encoded, so every
//! input reaches the server as some request.

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};
use percent_encoding::{percent_encode, AsciiSet, CONTROLS};

use crate::input::{first_line, parts};

/// The most requests one input sends.
const MAX_REQUESTS: usize = 6;

/// Bytes percent-encoded in a path and query: controls, space and what a
/// URI may not hold; `%`, `?`, `&`, `=` and `/` stay as written.
const URI_UNSAFE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'\\')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// Headers the harness sets or that frame the connection.
const OWNED_HEADERS: &[&str] = &[
    "authorization",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "expect",
    "te",
    "keep-alive",
    "trailer",
];

/// One request of an input.
#[derive(Debug)]
pub(crate) struct Req {
    pub method: Method,
    /// Path and query, percent-encoded where needed, starting with `/`.
    pub target: String,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
}

impl Req {
    /// Whether the server answers it with a stream that does not end.
    pub(crate) fn is_watch(&self) -> bool {
        let (path, query) = self.target.split_once('?').unwrap_or((&self.target, ""));
        path.split('/').any(|s| s == "watch")
            || form_pairs(query).any(|(k, v)| {
                (k == "watch" || k == "follow")
                    && !matches!(
                        v.as_str(),
                        "" | "false" | "0" | "False" | "FALSE" | "f" | "F"
                    )
            })
    }
}

fn form_pairs(query: &str) -> impl Iterator<Item = (String, String)> + '_ {
    query.split('&').filter(|p| !p.is_empty()).map(|p| {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(&s.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        };
        (decode(k), decode(v))
    })
}

/// The requests of `data`; parts without a usable method are skipped.
pub(crate) fn requests(data: &[u8]) -> Vec<Req> {
    parts(data, MAX_REQUESTS)
        .into_iter()
        .filter_map(request)
        .collect()
}

fn request(part: &[u8]) -> Option<Req> {
    let (line, mut rest) = first_line(part);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let (method, target) = match line.iter().position(|b| *b == b' ') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (&b"GET"[..], line),
    };
    let method = Method::from_bytes(method).ok()?;
    let mut headers = Vec::new();
    loop {
        let (header, after) = first_line(rest);
        let header = header.strip_suffix(b"\r").unwrap_or(header);
        if header.is_empty() {
            rest = after;
            break;
        }
        rest = after;
        let Some(colon) = header.iter().position(|b| *b == b':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(header[..colon].trim_ascii()),
            HeaderValue::from_bytes(header[colon + 1..].trim_ascii()),
        ) else {
            continue;
        };
        if !OWNED_HEADERS.contains(&name.as_str()) {
            headers.push((name, value));
        }
        if rest.is_empty() {
            break;
        }
    }
    let mut target: String = percent_encode(target, URI_UNSAFE).collect();
    if !target.starts_with('/') {
        target.insert(0, '/');
    }
    Some(Req {
        method,
        target,
        headers,
        body: Bytes::copy_from_slice(rest),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_as_written_with_owned_headers_dropped() {
        let reqs = requests(
            b"PATCH /api/v1/x y?watch=1\nContent-Type: a/b\nHost: h\n\n{\"a\":1}\n%%\n/healthz",
        );
        assert_eq!(reqs.len(), 2);
        assert_eq!(reqs[0].method, Method::PATCH);
        assert_eq!(reqs[0].target, "/api/v1/x%20y?watch=1");
        assert!(reqs[0].is_watch());
        assert_eq!(reqs[0].headers.len(), 1);
        assert_eq!(&reqs[0].body[..], b"{\"a\":1}");
        assert_eq!(reqs[1].method, Method::GET);
        assert!(!reqs[1].is_watch());
    }
}
