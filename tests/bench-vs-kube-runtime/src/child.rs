//! One measurement in a process of its own: `child SIDE KIND TASK PARAM
//! EXPECTED`, with the server named by `KUBECONFIG`. It prints one line,
//! [`RESULT_PREFIX`] followed by a JSON object of named figures, and fails
//! (exit code 1, the reason on stderr) if a side did not see every object.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{bail, Context as _};

use k8s_openapi::api::core::v1::{ConfigMap, Pod};

use crate::workload::{Cacheable, Kind};
use crate::{kube_side, kubeforge_side};

/// The first argument that makes this binary a child.
pub const COMMAND: &str = "child";

/// What starts the result line on stdout.
pub const RESULT_PREFIX: &str = "RESULT ";

/// Named figures, as a child reports them.
pub type Figures = BTreeMap<String, f64>;

/// Whose cache or controller runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    KubeRuntime,
    Kubeforge,
}

impl Side {
    fn parse(s: &str) -> anyhow::Result<Self> {
        match s {
            "kube-runtime" => Ok(Self::KubeRuntime),
            "kubeforge" => Ok(Self::Kubeforge),
            other => bail!("unknown side {other:?}"),
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::KubeRuntime => "kube-runtime",
            Self::Kubeforge => "kubeforge",
        })
    }
}

/// One measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// Start a cache of every object, wait until synced: time, live and
    /// peak heap. `strip` drops managedFields before caching.
    Sync { strip: bool },
    /// Start a controller of every ConfigMap whose reconcile only counts:
    /// time until each has been reconciled once.
    Reconcile { workers: usize },
    /// The floors, measured with kubeforge's client and `serde_json`: one
    /// GET of the list's bytes, their decode into the typed list, and the
    /// decoded objects' own heap.
    Floors,
}

impl Task {
    fn to_args(self) -> [String; 2] {
        match self {
            Self::Sync { strip } => [
                "sync".into(),
                if strip { "stripped" } else { "kept" }.into(),
            ],
            Self::Reconcile { workers } => ["reconcile".into(), workers.to_string()],
            Self::Floors => ["floors".into(), "-".into()],
        }
    }

    fn parse(task: &str, param: &str) -> anyhow::Result<Self> {
        Ok(match (task, param) {
            ("sync", "kept") => Self::Sync { strip: false },
            ("sync", "stripped") => Self::Sync { strip: true },
            ("reconcile", n) => Self::Reconcile {
                workers: n.parse().context("workers")?,
            },
            ("floors", _) => Self::Floors,
            _ => bail!("unknown task {task} {param}"),
        })
    }
}

/// The arguments that make this binary measure `task` for `side` on the
/// server's objects of `kind`, expecting `expected` of them.
pub fn args(side: Side, kind: Kind, task: Task, expected: usize) -> Vec<String> {
    let [task, param] = task.to_args();
    vec![
        COMMAND.into(),
        side.to_string(),
        kind.plural().into(),
        task,
        param,
        expected.to_string(),
    ]
}

/// Runs one measurement and prints its figures.
pub fn main(args: &[String]) -> anyhow::Result<()> {
    let [side, kind, task, param, expected] = args else {
        bail!("usage: {COMMAND} SIDE KIND TASK PARAM EXPECTED");
    };
    let side = Side::parse(side)?;
    let kind = Kind::parse(kind)?;
    let task = Task::parse(task, param)?;
    let expected: usize = expected.parse().context("expected objects")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let figures = runtime.block_on(async {
        match kind {
            Kind::ConfigMaps => measure::<ConfigMap>(side, kind, task, expected).await,
            Kind::Pods => measure::<Pod>(side, kind, task, expected).await,
        }
    })?;
    let json = serde_json::to_string(&figures).context("figures")?;
    println!("{RESULT_PREFIX}{json}");
    Ok(())
}

/// `task` for `side` on the server's objects of `kind`, typed `K`. The
/// controller figures are of ConfigMaps, whatever the kind.
async fn measure<K: Cacheable>(
    side: Side,
    kind: Kind,
    task: Task,
    expected: usize,
) -> anyhow::Result<Figures> {
    match (side, task) {
        (_, Task::Floors) => kubeforge_side::floors::<K>(kind, expected).await,
        (Side::Kubeforge, Task::Sync { strip }) => kubeforge_side::sync::<K>(strip, expected).await,
        (Side::KubeRuntime, Task::Sync { strip }) => kube_side::sync::<K>(strip, expected).await,
        (Side::Kubeforge, Task::Reconcile { workers }) => {
            kubeforge_side::reconcile(workers, expected).await
        }
        (Side::KubeRuntime, Task::Reconcile { workers }) => {
            kube_side::reconcile(workers, expected).await
        }
    }
}

/// How long to let freed buffers settle before reading the live heap.
pub const SETTLE: std::time::Duration = std::time::Duration::from_millis(300);

/// The figures of a sync: seconds, and live and peak heap per object above
/// `baseline` (the bytes live before the cache was started).
pub fn sync_figures(secs: f64, baseline: usize, objects: usize) -> Figures {
    let per_object = |bytes: usize| bytes.saturating_sub(baseline) as f64 / objects.max(1) as f64;
    Figures::from([
        ("secs".to_owned(), secs),
        ("live".to_owned(), per_object(crate::alloc::live())),
        ("peak".to_owned(), per_object(crate::alloc::peak())),
    ])
}
