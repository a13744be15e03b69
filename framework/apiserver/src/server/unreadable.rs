//! Answers to HTTP/1.1 requests that cannot be read. hyper answers them
//! itself, before any handler runs, with a status and an empty body (400
//! for a malformed request, 414 for a URI past 65,534 bytes, 431 for a
//! head past the read buffer). kube-apiserver's Go server answers with the
//! status as a plain-text body and closes the connection (net/http
//! `server.go`: `"HTTP/1.1 " + publicErr + errorHeaders + publicErr`).
//! [`GoErrorBodies`] wraps a connection and rewrites hyper's answer into
//! Go's as it is written. Go has no 414 (its request line counts toward
//! the header limit); a URI this server cannot hold gets its 414 in Go's
//! form.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How much of a request head is read: kube-apiserver's `MaxHeaderBytes`
/// (1 MiB, `SecureServingInfo.Serve`) plus the 4096 bytes of slack Go's
/// server reads beyond it (`initialReadLimitSize`). hyper enforces it as
/// its read buffer bound, so a head up to one read past it may still be
/// accepted.
pub(super) const MAX_HEAD_BYTES: usize = (1 << 20) + 4096;

/// The HTTP/2 equivalent: the header list kube-apiserver's HTTP/2 server
/// accepts (its `MaxHeaderBytes`).
pub(super) const MAX_HEADER_LIST_BYTES: u32 = 1 << 20;

/// The statuses hyper answers unreadable requests with.
const STATUSES: &[&str] = &[
    "400 Bad Request",
    "414 URI Too Long",
    "431 Request Header Fields Too Large",
];

/// Go's answer for a status hyper answered an unreadable request with,
/// if `head` is such an answer: a status line from [`STATUSES`] and no
/// body (handlers' errors always carry one).
fn go_answer(head: &[u8]) -> Option<Vec<u8>> {
    let head = head.strip_prefix(b"HTTP/1.1 ")?;
    let status = STATUSES
        .iter()
        .find(|s| head.starts_with(s.as_bytes()) && head[s.len()..].starts_with(b"\r\n"))?;
    let lower = head.to_ascii_lowercase();
    if !lower.windows(19).any(|w| w == b"content-length: 0\r\n") {
        return None;
    }
    Some(
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n{status}"
        )
        .into_bytes(),
    )
}

/// A connection whose hyper-made error answers are written as Go's.
pub(super) struct GoErrorBodies<S> {
    inner: S,
    /// Go's answer, and how much of it is written.
    pending: Option<(Vec<u8>, usize)>,
}

impl<S> GoErrorBodies<S> {
    pub(super) fn new(inner: S) -> Self {
        GoErrorBodies {
            inner,
            pending: None,
        }
    }
}

impl<S: AsyncWrite + Unpin> GoErrorBodies<S> {
    /// Writes what is left of Go's answer.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, written)) = &mut self.pending {
            if *written == bytes.len() {
                self.pending = None;
                break;
            }
            match Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for GoErrorBodies<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for GoErrorBodies<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.drain(cx)?.is_pending() {
            return Poll::Pending;
        }
        if let Some(answer) = go_answer(buf) {
            self.pending = Some((answer, 0));
            // Written as far as hyper is concerned; the rest goes out on
            // the flush that follows.
            let _ = self.drain(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.drain(cx)?.is_pending() {
            return Poll::Pending;
        }
        if let Some(first) = bufs.iter().find(|b| !b.is_empty()) {
            if go_answer(first).is_some() {
                return self.poll_write(cx, first);
            }
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.drain(cx)?.is_pending() {
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.drain(cx)?.is_pending() {
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_bodiless_error_answers_are_rewritten() {
        let hyper =
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let go = go_answer(hyper).expect("rewritten");
        assert_eq!(
            String::from_utf8(go).unwrap(),
            "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large"
        );
        assert!(go_answer(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 120\r\n\r\n").is_none());
        assert!(go_answer(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(go_answer(b"{\"kind\":\"Status\"}").is_none());
    }
}
