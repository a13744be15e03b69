//! The parent process: per size, a fresh server filled with ConfigMaps,
//! then every measurement in a child process, the two sides taking turns,
//! and the table of medians; then the same for the caches of Pods.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context as _};
use kubeforge::testing::{ApiServer, ApiServerExt as _};

use crate::child::{self, Figures, Side, Task, RESULT_PREFIX};
use crate::report::{Report, Row};
use crate::workload::{self, Kind};

const USAGE: &str =
    "usage: kubeforge-bench-vs-kube-runtime [--objects N[,N...]] [--pods N] [--runs R]
  --objects  ConfigMaps in the server, one size after another (default 10000,100000)
  --pods     running Pods in a server of their own, for the caches' figures (default 10000; 0 skips)
  --runs     runs of each measurement per side; figures are medians (default 3)";

/// What to run.
struct Options {
    sizes: Vec<usize>,
    pods: usize,
    runs: usize,
}

impl Options {
    fn parse(args: &[String]) -> anyhow::Result<Self> {
        let mut options = Self {
            sizes: vec![10_000, 100_000],
            pods: 10_000,
            runs: 3,
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
            match arg.as_str() {
                "--objects" => {
                    options.sizes = value()?
                        .split(',')
                        .map(|n| n.trim().parse::<usize>())
                        .collect::<Result<_, _>>()
                        .context("--objects takes numbers separated by commas")?;
                }
                "--pods" => options.pods = value()?.parse().context("--pods takes a number")?,
                "--runs" => options.runs = value()?.parse().context("--runs takes a number")?,
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                other => bail!("unknown argument {other:?}\n{USAGE}"),
            }
        }
        if options.runs == 0 || options.sizes.contains(&0) {
            bail!("--runs and --objects must be at least 1");
        }
        Ok(options)
    }
}

/// Runs every size and prints its table.
pub fn main(args: &[String]) -> anyhow::Result<()> {
    let options = Options::parse(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    println!("{}", machine());
    for &n in &options.sizes {
        let report = runtime.block_on(one_size(Kind::ConfigMaps, n, options.runs))?;
        println!("{report}");
    }
    if options.pods > 0 {
        let report = runtime.block_on(one_size(Kind::Pods, options.pods, options.runs))?;
        println!("{report}");
    }
    Ok(())
}

/// The tasks measured for both sides on ConfigMaps, in the order of the
/// table.
const TASKS: [Task; 4] = [
    Task::Sync { strip: false },
    Task::Sync { strip: true },
    Task::Reconcile { workers: 1 },
    Task::Reconcile { workers: 4 },
];

/// On Pods, the caches only: what differs from ConfigMaps is the lists
/// inside each object, which the controller figures would not show.
const POD_TASKS: [Task; 2] = [Task::Sync { strip: false }, Task::Sync { strip: true }];

async fn one_size(kind: Kind, n: usize, runs: usize) -> anyhow::Result<Report> {
    let server = ApiServer::start().await.context("starting the server")?;
    let client = server.client().context("client")?;
    let started = Instant::now();
    workload::populate(&client, kind, n).await?;
    let populated = started.elapsed();
    let kubeconfig = std::env::temp_dir().join(format!(
        "kubeforge-bench-vs-kube-runtime-{}.kubeconfig",
        std::process::id()
    ));
    server
        .write_kubeconfig(&kubeconfig)
        .context("writing the kubeconfig")?;
    let result = measure(&kubeconfig, kind, n, runs).await;
    let _ = std::fs::remove_file(&kubeconfig);
    server.shutdown().await;
    let mut report = result?;
    report.populated = populated;
    Ok(report)
}

async fn measure(kubeconfig: &Path, kind: Kind, n: usize, runs: usize) -> anyhow::Result<Report> {
    let tasks: &[Task] = match kind {
        Kind::ConfigMaps => &TASKS,
        Kind::Pods => &POD_TASKS,
    };
    let mut floors = Vec::new();
    for _ in 0..runs {
        floors.push(run_child(kubeconfig, Side::Kubeforge, kind, Task::Floors, n).await?);
    }
    let mut samples: Vec<[Vec<Figures>; 2]> = tasks.iter().map(|_| [vec![], vec![]]).collect();
    for run in 0..runs {
        for (task, samples) in tasks.iter().zip(&mut samples) {
            // Take turns at going first, so drift on a shared machine
            // favours neither side.
            let order = if run % 2 == 0 {
                [Side::KubeRuntime, Side::Kubeforge]
            } else {
                [Side::Kubeforge, Side::KubeRuntime]
            };
            for side in order {
                let figures = run_child(kubeconfig, side, kind, *task, n).await?;
                samples[usize::from(side == Side::Kubeforge)].push(figures);
            }
        }
    }
    let mut rows = Vec::new();
    for (task, [kube, kubeforge]) in tasks.iter().zip(&samples) {
        rows.extend(Row::for_task(*task, kube, kubeforge));
    }
    Ok(Report::new(kind, n, runs, &floors, rows))
}

/// Runs one measurement in a child process and reads its figures.
async fn run_child(
    kubeconfig: &Path,
    side: Side,
    kind: Kind,
    task: Task,
    expected: usize,
) -> anyhow::Result<Figures> {
    let exe = std::env::current_exe().context("this binary's path")?;
    let args = child::args(side, kind, task, expected);
    let output = tokio::process::Command::new(exe)
        .args(&args)
        .env("KUBECONFIG", kubeconfig)
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("starting {}", args.join(" ")))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "{} failed ({}): {}{}",
            args.join(" "),
            output.status,
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(RESULT_PREFIX))
        .with_context(|| format!("{} printed no result: {stdout}", args.join(" ")))?;
    serde_json::from_str(line).with_context(|| format!("{} printed {line}", args.join(" ")))
}

/// The machine the figures come from.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned());
    let build = if cfg!(debug_assertions) {
        "debug build (figures are not representative)"
    } else {
        "release build"
    };
    format!("machine: {cpu}, {cores} cores, load average {load} at start; {build}")
}
