//! What the end-to-end tests of scaffolded projects share: the project
//! in a temporary directory and the commands run in it, a process started
//! until it prints a marker and stopped by SIGTERM, and kubectl with a
//! kubeconfig of the test's.
#![allow(dead_code)]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kubeforge_e2e::nested;

pub const DEADLINE: Duration = Duration::from_secs(30);

/// The scaffolded project and the tools that work on it.
pub struct Project {
    pub _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub kubeforge: PathBuf,
}

pub fn show(out: &Output) -> String {
    format!(
        "status {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

impl Project {
    /// A command run in the project. Its builds share the workspace's
    /// target directory through the `.cargo/config.toml` init wrote (the
    /// operator's binary is looked for there below).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = nested(program);
        command.current_dir(&self.dir).stdin(Stdio::null());
        command
    }

    pub fn run(&self, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Output {
        self.command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {args:?}: {e}"))
    }

    pub fn ok(&self, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> String {
        let out = self.run(program, args);
        assert!(out.status.success(), "{args:?} failed: {}", show(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn kubeforge(&self, args: &[&str]) -> Output {
        self.run(&self.kubeforge, args)
    }

    pub fn cargo(&self, args: &[&str]) -> String {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        self.ok(cargo, args)
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
    }

    pub fn write(&self, relative: &str, text: &str) {
        std::fs::write(self.path(relative), text).unwrap_or_else(|e| panic!("{relative}: {e}"));
    }
}

/// The documents of a YAML stream.
pub fn documents(yaml: &str) -> Vec<serde_json::Value> {
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(yaml).unwrap_or_else(|e| panic!("{e}:\n{yaml}"));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

/// Starts `command` with stdout piped and waits until its output contains
/// `marker`; returns the child and what it printed.
pub fn start(mut command: Command, marker: &str) -> (Child, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the process starts");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut printed = String::new();
    let deadline = Instant::now() + DEADLINE;
    while !printed.contains(marker) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                printed.push_str(&line);
                printed.push('\n');
            }
            Err(_) => {
                let _ = child.kill();
                let err = child
                    .stderr
                    .take()
                    .map(|mut e| {
                        let mut s = String::new();
                        let _ = std::io::Read::read_to_string(&mut e, &mut s);
                        s
                    })
                    .unwrap_or_default();
                panic!("no {marker:?} in time; printed:\n{printed}\nstderr:\n{err}");
            }
        }
    }
    // Keep draining stdout so the process never blocks on a full pipe.
    std::thread::spawn(move || while rx.recv().is_ok() {});
    (child, printed)
}

pub fn terminate(child: &mut Child) -> std::process::ExitStatus {
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the process did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// kubectl with `kubeconfig` and a cache of its own.
pub fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    let cache = kubeconfig.with_extension("cache");
    Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", cache)
        .stdin(Stdio::null())
        .output()
        .expect("kubectl runs")
}

/// Runs kubectl until its stdout is `want`, at most [`DEADLINE`].
pub fn kubectl_until(kubeconfig: &Path, args: &[&str], want: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let out = kubectl(kubeconfig, args);
        if out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl {args:?} never gave {want:?}; last: {}",
            show(&out)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
