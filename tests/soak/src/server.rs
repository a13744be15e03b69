//! Where a soak's API server runs: in the soak's process (the default), or
//! in a child process — the soak binary itself started with `--serve-api`
//! — so that the operator's heap and the server's are measured apart. The
//! child takes its faults and heap queries as lines on stdin and answers
//! on stdout; closing its stdin stops it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use kubeforge::client::KubeConfigOptions;
use kubeforge::testing::{ApiServer, ApiServerExt as _, Failure, Faults, RequestMatch};
use kubeforge::{Client, Config};
use memcached_operator::Memcached;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

use crate::sampling::rss_bytes_of;

/// The flag that makes the soak binary serve the API for a parent soak:
/// `--serve-api KUBECONFIG EVENT_TTL_SECONDS` (0: Events never expire).
pub const SERVE_FLAG: &str = "--serve-api";

/// The server a soak runs: kube-apiserver's defaults but for the Event
/// TTL, which the soak sets.
fn builder(event_ttl: Option<Duration>) -> kubeforge::testing::ApiServerBuilder {
    ApiServer::builder().event_ttl(event_ttl)
}

/// A fault the soak injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Every open watch closed.
    CloseWatches,
    /// The next watch answered 410 Expired.
    Expired,
    /// The next three requests answered 429.
    TooManyRequests,
    /// The next three requests answered 500.
    InternalError,
    /// The watch history compacted, every watch closed.
    Compact,
    /// Every pending injected failure dropped.
    Clear,
}

impl Fault {
    fn word(self) -> &'static str {
        match self {
            Fault::CloseWatches => "close",
            Fault::Expired => "expired",
            Fault::TooManyRequests => "429",
            Fault::InternalError => "500",
            Fault::Compact => "compact",
            Fault::Clear => "clear",
        }
    }

    fn from_word(word: &str) -> Option<Fault> {
        [
            Fault::CloseWatches,
            Fault::Expired,
            Fault::TooManyRequests,
            Fault::InternalError,
            Fault::Compact,
            Fault::Clear,
        ]
        .into_iter()
        .find(|f| f.word() == word)
    }

    /// Injects it into `faults`.
    fn apply(self, faults: &Faults) {
        match self {
            Fault::CloseWatches => faults.close_watches(),
            Fault::Expired => faults.fail_next(1, RequestMatch::verb("watch"), Failure::Expired),
            Fault::TooManyRequests => faults.fail_next(
                3,
                RequestMatch::any(),
                Failure::TooManyRequests {
                    retry_after_seconds: 1,
                },
            ),
            Fault::InternalError => {
                faults.fail_next(3, RequestMatch::any(), Failure::InternalError)
            }
            Fault::Compact => {
                faults.compact();
                faults.close_watches();
            }
            Fault::Clear => faults.clear(),
        }
    }
}

/// The child's pipes (see [`SoakServer::Child`]).
pub struct ChildIo {
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

/// The API server a soak runs against.
pub enum SoakServer {
    /// In the soak's own process: its heap is counted with the operator's.
    InProcess(ApiServer),
    /// In a child process, with its own heap and resident set.
    Child {
        /// The process.
        child: Child,
        /// Its pipes, one query at a time.
        io: Box<Mutex<ChildIo>>,
        /// Its kubeconfig (in a directory removed with the server).
        kubeconfig: PathBuf,
        /// The directory holding the kubeconfig.
        _dir: tempfile::TempDir,
    },
}

impl SoakServer {
    /// An in-process server with the Memcached CRD installed.
    pub async fn in_process(event_ttl: Option<Duration>) -> anyhow::Result<SoakServer> {
        let server = builder(event_ttl).start().await?;
        server.install_crd_for::<Memcached>()?;
        Ok(SoakServer::InProcess(server))
    }

    /// A server in a child process (`program --serve-api KUBECONFIG
    /// TTL`), up and with the Memcached CRD installed when this returns.
    pub async fn child(program: &Path, event_ttl: Option<Duration>) -> anyhow::Result<SoakServer> {
        let dir = tempfile::tempdir()?;
        let kubeconfig = dir.path().join("kubeconfig");
        let mut child = Command::new(program)
            .arg(SERVE_FLAG)
            .arg(&kubeconfig)
            .arg(event_ttl.map_or(0.0, |t| t.as_secs_f64()).to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {} {SERVE_FLAG}", program.display()))?;
        let stdin = child.stdin.take().context("the child's stdin")?;
        let stdout = child.stdout.take().context("the child's stdout")?;
        let mut stdout = BufReader::new(stdout).lines();
        match stdout.next_line().await? {
            Some(line) if line == "ready" => {}
            other => anyhow::bail!("the API server process did not start: {other:?}"),
        }
        Ok(SoakServer::Child {
            child,
            io: Box::new(Mutex::new(ChildIo { stdin, stdout })),
            kubeconfig,
            _dir: dir,
        })
    }

    /// A client of the server.
    pub async fn client(&self) -> anyhow::Result<Client> {
        match self {
            SoakServer::InProcess(server) => Ok(server.client()?),
            SoakServer::Child { kubeconfig, .. } => {
                let config =
                    Config::from_kubeconfig_file(kubeconfig, &KubeConfigOptions::default()).await?;
                Ok(Client::new(config)?)
            }
        }
    }

    /// Injects `fault`.
    pub async fn inject(&self, fault: Fault) -> anyhow::Result<()> {
        match self {
            SoakServer::InProcess(server) => {
                fault.apply(&server.faults());
                Ok(())
            }
            SoakServer::Child { io, .. } => {
                let mut io = io.lock().await;
                io.stdin
                    .write_all(format!("{}\n", fault.word()).as_bytes())
                    .await?;
                io.stdin.flush().await?;
                Ok(())
            }
        }
    }

    /// The child's live heap and resident set, bytes; `None` in process
    /// (the soak's own figures include the server's then).
    pub async fn memory(&self) -> Option<(Option<u64>, Option<u64>)> {
        let SoakServer::Child { child, io, .. } = self else {
            return None;
        };
        let rss = child.id().and_then(rss_bytes_of);
        let mut io = io.lock().await;
        let heap = async {
            io.stdin.write_all(b"heap\n").await.ok()?;
            io.stdin.flush().await.ok()?;
            io.stdout.next_line().await.ok()??.trim().parse().ok()
        }
        .await;
        Some((heap, rss))
    }

    /// Stops the server.
    pub async fn shutdown(self) {
        match self {
            SoakServer::InProcess(server) => server.shutdown().await,
            SoakServer::Child { mut child, io, .. } => {
                // Closing stdin stops it.
                drop(io);
                let _ = child.wait().await;
            }
        }
    }
}

/// The child's side: starts the server (Events expiring after
/// `event_ttl`), writes its kubeconfig to `kubeconfig`, says `ready`, then
/// applies the faults named on stdin and answers `heap` with `heap()`,
/// until stdin closes.
pub async fn serve(
    kubeconfig: &Path,
    event_ttl: Option<Duration>,
    heap: fn() -> Option<u64>,
) -> anyhow::Result<()> {
    let server = builder(event_ttl).start().await?;
    server.install_crd_for::<Memcached>()?;
    std::fs::write(kubeconfig, server.kubeconfig()?)
        .with_context(|| format!("writing {}", kubeconfig.display()))?;
    let faults = server.faults();
    let say = |line: &str| -> std::io::Result<()> {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{line}")?;
        stdout.flush()
    };
    say("ready")?;
    // Stdin is read on a thread of its own (blocking reads).
    let (lines, mut commands) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    while let Some(line) = commands.recv().await {
        let word = line.trim();
        if word == "heap" {
            let answer = heap().map_or_else(|| "unknown".to_owned(), |h| h.to_string());
            say(&answer)?;
        } else if let Some(fault) = Fault::from_word(word) {
            fault.apply(&faults);
        } else {
            anyhow::bail!("unknown command {word:?} on stdin");
        }
    }
    server.shutdown().await;
    Ok(())
}
