//! Fuzz harnesses for kubeforge: one function per [`Target`] that runs an
//! input through the code that reads bytes from outside (the network,
//! files, plugins, users) and checks what the reliability issue counts as
//! a finding:
//!
//! - a panic (caught here, or a 500 the server's panic filter answered);
//! - a hang: one operation on the input taking longer than
//!   [`Limits::hang`] (a second when fuzzing);
//! - an amplification: an answer or error message out of proportion to
//!   the input (unbounded memory for a small input);
//! - an API server answer outside the `Status` contract: a non-2xx answer
//!   whose body is not a JSON `Status` with the same code, a dropped
//!   connection, or a 2xx JSON answer that is not JSON.
//!
//! The coverage-instrumented fuzzer binaries (`targets/`) call [`check`];
//! `tests/replay.rs` runs every corpus input and saved crash through
//! [`run`], so what a fuzzer found stays found in `cargo test`.

mod crd_schema;
mod input;
mod kubeconfig;
mod requests;
mod selectors;
mod status;
mod watch_stream;

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// A fuzz target: one input surface of kubeforge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The client's watch-stream decoder, fed in arbitrary chunks.
    WatchStream,
    /// The kubeconfig loader: YAML files merged in order, their use as a
    /// client configuration, and exec-plugin output.
    Kubeconfig,
    /// The client's decoding of error answers (`Status` bodies and others).
    Status,
    /// The API server's label and field selector parsers.
    Selectors,
    /// The API server's request handling over HTTPS: paths, query
    /// parameters, headers and bodies of every content type and patch type.
    Requests,
    /// The API server's CRD admission: arbitrary schemas (CEL rules
    /// included) and custom resources validated against them.
    CrdSchema,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 6] = [
        Target::WatchStream,
        Target::Kubeconfig,
        Target::Status,
        Target::Selectors,
        Target::Requests,
        Target::CrdSchema,
    ];

    /// The target's name: its fuzzer binary and its corpus folder.
    pub fn name(self) -> &'static str {
        match self {
            Target::WatchStream => "watch_stream",
            Target::Kubeconfig => "kubeconfig",
            Target::Status => "status",
            Target::Selectors => "selectors",
            Target::Requests => "requests",
            Target::CrdSchema => "crd_schema",
        }
    }

    /// The target called `name`.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// How a run is bounded.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The longest one decode, admission or request may take.
    pub hang: Duration,
    /// After how many inputs the `requests` target starts a new API
    /// server (1: every input meets an empty server).
    pub fresh_server_every: usize,
}

impl Limits {
    /// For optimized fuzzer builds: the second, and a server kept
    /// for a thousand inputs.
    pub const FUZZ: Limits = Limits {
        hang: Duration::from_secs(1),
        fresh_server_every: 1000,
    };
    /// For unoptimized test builds on a shared machine: ten times the
    /// fuzzing bound (which still catches every hang that was found), and
    /// a new server per input so each replays alone.
    pub const REPLAY: Limits = Limits {
        hang: Duration::from_secs(10),
        fresh_server_every: 1,
    };
}

/// What kind of finding an input produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindingKind {
    /// Something panicked.
    Panic,
    /// An operation took longer than [`Limits::hang`].
    Hang,
    /// An output out of proportion to the input.
    Amplification,
    /// An answer outside the contract (Status, JSON, a connection dropped).
    Contract,
    /// The decoder disagreed with itself (e.g. on another chunking).
    Inconsistent,
}

/// A finding: which target, what kind, and what was seen.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The target that found it.
    pub target: Target,
    /// Its kind.
    pub kind: FindingKind,
    /// What was seen.
    pub detail: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {:?}: {}",
            self.target.name(),
            self.kind,
            self.detail
        )
    }
}

impl std::error::Error for Finding {}

/// What a harness returns: `Err` for a finding, with its kind and detail
/// (the target is filled in by [`run`]).
pub(crate) type Checked = Result<(), (FindingKind, String)>;

/// Runs `data` through `target`, checking it against `limits`.
pub fn run(target: Target, data: &[u8], limits: &Limits) -> Result<(), Finding> {
    let outcome = catch_unwind(AssertUnwindSafe(|| match target {
        Target::WatchStream => watch_stream::check(data, limits),
        Target::Kubeconfig => kubeconfig::check(data, limits),
        Target::Status => status::check(data, limits),
        Target::Selectors => selectors::check(data, limits),
        Target::Requests => requests::check(data, limits),
        Target::CrdSchema => crd_schema::check(data, limits),
    }));
    let checked = match outcome {
        Ok(checked) => checked,
        Err(payload) => Err((FindingKind::Panic, panic_message(payload.as_ref()))),
    };
    checked.map_err(|(kind, detail)| Finding {
        target,
        kind,
        detail,
    })
}

/// The fuzzer binaries' entry: [`run`] with [`Limits::FUZZ`], a finding
/// turned into a panic so the fuzzer saves the input as a crash.
pub fn check(target: Target, data: &[u8]) {
    if let Err(finding) = run(target, data, &Limits::FUZZ) {
        panic!("{finding}");
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// Runs `f`, a hang when it takes longer than `limits.hang`.
pub(crate) fn timed<T>(
    limits: &Limits,
    what: &str,
    f: impl FnOnce() -> T,
) -> Result<T, (FindingKind, String)> {
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    if took > limits.hang {
        return Err((FindingKind::Hang, format!("{what} took {took:?}")));
    }
    Ok(out)
}

/// An amplification finding when `output` bytes are more than `factor`
/// times the input plus `slack`.
pub(crate) fn bounded(
    what: &str,
    output: usize,
    input: usize,
    factor: usize,
    slack: usize,
) -> Checked {
    if output > input.saturating_mul(factor).saturating_add(slack) {
        return Err((
            FindingKind::Amplification,
            format!("{what} is {output} bytes for a {input}-byte input"),
        ));
    }
    Ok(())
}
