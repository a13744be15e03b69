//! What the kubelet keeps of each container's output, for `pods/log`:
//! per pod UID and container, the current instance's lines and the
//! previous instance's (what `--previous` reads), each line with the time
//! it arrived and capped in bytes (the oldest lines go first, as the
//! kubelet's `containerLogMaxSize` rotation drops old files). A follower
//! waits for new lines until the instance's output closes.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::watch;

/// Bytes kept per container instance (the kubelet's default
/// `containerLogMaxSize`, 10 MiB).
pub(crate) const MAX_BYTES: usize = 10 * 1024 * 1024;

/// One line of output, with its newline (the last line of an instance
/// may lack one).
#[derive(Clone, Debug)]
pub(crate) struct Line {
    pub seq: u64,
    pub at: jiff::Timestamp,
    pub text: Bytes,
}

/// One container instance's output.
#[derive(Debug)]
pub(crate) struct InstanceLog {
    state: Mutex<Kept>,
    /// The sequence number of the next line, and whether the output
    /// closed; followers wait on it.
    progress: watch::Sender<(u64, bool)>,
    max_bytes: usize,
}

#[derive(Debug, Default)]
struct Kept {
    lines: VecDeque<Line>,
    bytes: usize,
    next_seq: u64,
    open_writers: usize,
}

impl InstanceLog {
    fn new(writers: usize, max_bytes: usize) -> InstanceLog {
        InstanceLog {
            state: Mutex::new(Kept {
                open_writers: writers,
                ..Kept::default()
            }),
            progress: watch::channel((0, writers == 0)).0,
            max_bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends a line.
    pub(crate) fn push(&self, text: Bytes) {
        let next = {
            let mut kept = self.lock();
            let seq = kept.next_seq;
            kept.next_seq += 1;
            kept.bytes += text.len();
            kept.lines.push_back(Line {
                seq,
                at: jiff::Timestamp::now(),
                text,
            });
            while kept.bytes > self.max_bytes {
                match kept.lines.pop_front() {
                    Some(old) => kept.bytes -= old.text.len(),
                    None => break,
                }
            }
            kept.next_seq
        };
        self.progress.send_modify(|p| p.0 = next);
    }

    /// One writer (stdout or stderr) reached its end; the output closes
    /// with the last.
    pub(crate) fn finish(&self) {
        let closed = {
            let mut kept = self.lock();
            kept.open_writers = kept.open_writers.saturating_sub(1);
            kept.open_writers == 0
        };
        if closed {
            self.progress.send_modify(|p| p.1 = true);
        }
    }

    /// The lines kept from sequence number `from` on.
    pub(crate) fn lines_from(&self, from: u64) -> Vec<Line> {
        let kept = self.lock();
        let start = kept.lines.partition_point(|l| l.seq < from);
        kept.lines.range(start..).cloned().collect()
    }

    /// Waits for lines past `seen`; false once the output closed with
    /// nothing more.
    pub(crate) async fn wait_past(&self, seen: u64) -> bool {
        let mut rx = self.progress.subscribe();
        let got = rx
            .wait_for(|(next, closed)| *next > seen || *closed)
            .await
            .map(|p| p.0 > seen);
        got.unwrap_or(false)
    }
}

/// A container's kept output.
#[derive(Debug, Default)]
struct ContainerLog {
    current: Option<Arc<InstanceLog>>,
    previous: Option<Arc<InstanceLog>>,
}

/// Every container's kept output, by pod UID and container name.
#[derive(Debug, Default)]
pub(crate) struct PodLogs {
    containers: Mutex<HashMap<(String, String), ContainerLog>>,
}

impl PodLogs {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), ContainerLog>> {
        self.containers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The log of a new instance of `container` with `writers` output
    /// streams; the one before becomes the previous.
    pub(crate) fn start_instance(
        &self,
        uid: &str,
        container: &str,
        writers: usize,
    ) -> Arc<InstanceLog> {
        let log = Arc::new(InstanceLog::new(writers, MAX_BYTES));
        let mut all = self.lock();
        let entry = all
            .entry((uid.to_owned(), container.to_owned()))
            .or_default();
        entry.previous = entry.current.replace(log.clone());
        log
    }

    /// The current (or, with `previous`, the one before) instance's log.
    pub(crate) fn get(
        &self,
        uid: &str,
        container: &str,
        previous: bool,
    ) -> Option<Arc<InstanceLog>> {
        let all = self.lock();
        let entry = all.get(&(uid.to_owned(), container.to_owned()))?;
        if previous {
            entry.previous.clone()
        } else {
            entry.current.clone()
        }
    }

    /// Forgets a pod's logs (the kubelet removed the pod).
    pub(crate) fn remove_pod(&self, uid: &str) {
        self.lock().retain(|(u, _), _| u != uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_lines_go_past_the_cap_and_an_instance_becomes_previous() {
        let log = InstanceLog::new(1, 10);
        for text in ["aaaa\n", "bbbb\n", "cccc\n"] {
            log.push(Bytes::from(text));
        }
        let kept: Vec<_> = log.lines_from(0).iter().map(|l| l.text.clone()).collect();
        assert_eq!(kept, ["bbbb\n", "cccc\n"]);
        assert_eq!(log.lines_from(2).len(), 1);

        let logs = PodLogs::default();
        let first = logs.start_instance("u", "c", 1);
        first.push(Bytes::from("one\n"));
        let second = logs.start_instance("u", "c", 1);
        second.push(Bytes::from("two\n"));
        let previous = logs.get("u", "c", true).expect("previous");
        assert_eq!(previous.lines_from(0)[0].text, "one\n");
        assert_eq!(
            logs.get("u", "c", false).expect("current").lines_from(0)[0].text,
            "two\n"
        );
        logs.remove_pod("u");
        assert!(logs.get("u", "c", false).is_none());
    }

    #[tokio::test]
    async fn a_follower_wakes_for_a_line_and_ends_when_the_output_closes() {
        let log = Arc::new(InstanceLog::new(2, MAX_BYTES));
        let writer = log.clone();
        let waiter = tokio::spawn(async move { log.wait_past(0).await });
        writer.push(Bytes::from("x\n"));
        assert!(waiter.await.expect("joined"));
        writer.finish();
        writer.finish();
        assert!(!writer.wait_past(1).await, "closed with nothing more");
    }
}
