//! One run of a container's process: its PID while it runs and how it
//! ended, shared by the thread that waits for it, the kubelet and the
//! prober.

use std::sync::Mutex;

use crate::machinery::util;

/// How one instance of a container ended.
#[derive(Clone, Debug)]
pub(super) struct Exit {
    pub code: i32,
    pub reason: &'static str,
    pub message: Option<String>,
    pub finished_at: String,
}

/// A running instance: its process and, once it ended, how.
pub(super) struct Instance {
    pub pid: Mutex<Option<i32>>,
    pub exit: Mutex<Option<Exit>>,
}

impl Instance {
    pub(super) fn exit(&self) -> Option<Exit> {
        self.exit.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Sends `signal` to the process unless it already ended.
    pub(super) fn signal(&self, signal: libc::c_int) {
        let pid = self.pid.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(pid), None) = (*pid, self.exit()) {
            // SAFETY: kill(2) of our own child, not yet reaped (the exit
            // is recorded before the pid is cleared).
            unsafe { libc::kill(pid, signal) };
        }
    }
}

/// How a wait ended, as runc reports it: the exit code, or 128 plus the
/// signal that killed the process.
pub(super) fn exit_of(status: std::io::Result<std::process::ExitStatus>) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    let code = match &status {
        Ok(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)),
        Err(_) => 128,
    };
    Exit {
        code,
        reason: if code == 0 { "Completed" } else { "Error" },
        message: status.err().map(|e| e.to_string()),
        finished_at: util::now(),
    }
}
