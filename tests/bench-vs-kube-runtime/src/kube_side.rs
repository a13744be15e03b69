//! kube-runtime's side, written as its documentation shows: a
//! `watcher` feeding a `reflector` store for the sync figures (with
//! `modify` dropping managedFields when stripping), a `Controller` for the
//! reconcile figures. Both with kube-runtime's default `watcher::Config`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::{reflector, watcher, WatchStreamExt as _};
use kube::{Api, Client};

use crate::alloc;
use crate::child::{sync_figures, Figures, SETTLE};
use crate::workload::Cacheable;

/// How long a side may take to see every object.
const DEADLINE: Duration = Duration::from_secs(600);

/// A client for the server `KUBECONFIG` names, with its connection open.
async fn client() -> anyhow::Result<Client> {
    let client = Client::try_default().await.context("kube client")?;
    client
        .apiserver_version()
        .await
        .context("GET /version with kube's client")?;
    Ok(client)
}

/// Start to synced, and the heap the store holds.
pub async fn sync<K: Cacheable>(strip: bool, expected: usize) -> anyhow::Result<Figures> {
    let client = client().await?;
    let baseline = alloc::live();
    let started = Instant::now();
    let api: Api<K> = Api::all(client);
    let (reader, writer) = reflector::store();
    let events = watcher(api, watcher::Config::default());
    let task = if strip {
        // Setting the field to `None` frees the entries' memory, where
        // clearing the list would keep its capacity.
        let events = events.modify(|o: &mut K| o.meta_mut().managed_fields = None);
        tokio::spawn(events.reflect(writer).for_each(|_| async {}))
    } else {
        tokio::spawn(events.reflect(writer).for_each(|_| async {}))
    };
    tokio::time::timeout(DEADLINE, reader.wait_until_ready())
        .await
        .context("kube-runtime did not sync in time")?
        .context("kube-runtime's reflector stopped")?;
    let secs = started.elapsed().as_secs_f64();
    let cached = reader.len();
    if cached != expected {
        bail!("kube-runtime cached {cached} objects, expected {expected}");
    }
    tokio::time::sleep(SETTLE).await;
    let figures = sync_figures(secs, baseline, expected);
    task.abort();
    Ok(figures)
}

#[derive(Debug)]
struct Never;

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("never")
    }
}

impl std::error::Error for Never {}

/// Start to every object reconciled once.
pub async fn reconcile(workers: usize, expected: usize) -> anyhow::Result<Figures> {
    let client = client().await?;
    let count = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let api: Api<ConfigMap> = Api::all(client);
    let concurrency = u16::try_from(workers).context("workers")?;
    let run = Controller::new(api, watcher::Config::default())
        .with_config(controller::Config::default().concurrency(concurrency))
        .run(
            |_: Arc<ConfigMap>, count: Arc<AtomicUsize>| async move {
                count.fetch_add(1, Ordering::Relaxed);
                Ok::<_, Never>(Action::await_change())
            },
            |_, _, _| Action::await_change(),
            Arc::clone(&count),
        )
        .for_each(|_| async {});
    let task = tokio::spawn(run);
    wait_for_count(&count, expected).await?;
    let secs = started.elapsed().as_secs_f64();
    task.abort();
    Ok(Figures::from([("secs".to_owned(), secs)]))
}

/// Waits until `count` reaches `expected`.
pub async fn wait_for_count(count: &AtomicUsize, expected: usize) -> anyhow::Result<()> {
    let deadline = Instant::now() + DEADLINE;
    while count.load(Ordering::Relaxed) < expected {
        if Instant::now() > deadline {
            bail!(
                "{} of {expected} reconciled after {DEADLINE:?}",
                count.load(Ordering::Relaxed)
            );
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}
