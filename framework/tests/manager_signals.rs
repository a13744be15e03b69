//! Shutdown signals, in a child process (signals are process-wide): the
//! test binary re-runs itself with `signal_child` selected, sends it real
//! SIGTERM/SIGINT with `kill`, and watches what it prints and how it exits.
#![cfg(unix)]

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use kubeforge::manager::shutdown_on_signals;
use kubeforge::manager::signals::FORCED_EXIT_CODE;

const MODE: &str = "KUBEFORGE_SIGNAL_CHILD_MODE";

/// The child's side; does its work only when the parent starts it.
#[test]
#[ignore = "run by the other tests in a child process"]
fn signal_child() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let token = shutdown_on_signals().unwrap();
        let again = shutdown_on_signals().unwrap();
        println!("ready");
        token.cancelled().await;
        println!("cancelled (same token: {})", again.is_cancelled());
        if mode == "hang" {
            // A graceful stop that never finishes: only a second signal ends it.
            tokio::time::sleep(Duration::from_secs(60)).await;
            println!("unreachable");
        }
        println!("stopped gracefully");
    });
}

/// The child process; killed if a test fails while it still runs.
struct ChildProc {
    child: Child,
    lines: Receiver<String>,
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn spawn_child(mode: &str) -> ChildProc {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "signal_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MODE, mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    ChildProc { child, lines }
}

impl ChildProc {
    /// Waits for a line containing `marker` (libtest may print its own
    /// `test signal_child ... ` before it on the same line); returns the
    /// text from the marker on.
    fn read_until(&self, marker: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|e| panic!("no {marker:?} from the child: {e}"));
            if let Some(at) = line.find(marker) {
                return line[at..].to_owned();
            }
        }
    }

    fn send(&self, signal: &str) {
        let ok = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {signal} failed");
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    fn wait(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the child did not exit within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn sigterm_cancels_the_token_and_the_process_stops_gracefully() {
    let mut child = spawn_child("graceful");
    child.read_until("ready");
    child.send("-TERM");
    assert_eq!(
        child.read_until("cancelled"),
        "cancelled (same token: true)"
    );
    child.read_until("stopped gracefully");
    assert!(child.wait(Duration::from_secs(20)).success());
}

#[test]
fn a_second_signal_exits_at_once_with_status_1() {
    let mut child = spawn_child("hang");
    child.read_until("ready");
    child.send("-INT");
    child.read_until("cancelled");
    // Still running: the graceful stop hangs.
    std::thread::sleep(Duration::from_millis(200));
    assert!(child.running());
    child.send("-TERM");
    let status = child.wait(Duration::from_secs(10));
    assert_eq!(status.code(), Some(FORCED_EXIT_CODE));
}
