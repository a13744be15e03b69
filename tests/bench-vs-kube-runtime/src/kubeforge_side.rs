//! kubeforge's side: a `SharedInformerFactory` informer for the sync
//! figures, a `Controller` for the reconcile figures, and the floors.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_core::ObjectList;
use kubeforge::cache::{strip_managed_fields, InformerOptions, SharedInformerFactory};
use kubeforge::controller::{Action, Context, Controller};
use kubeforge::manager::CancellationToken;
use kubeforge::reconcile::CachedClient;
use kubeforge::Client;

use crate::alloc;
use crate::child::{sync_figures, Figures, SETTLE};
use crate::workload::{Cacheable, Kind};

const SYNC_TIMEOUT: Duration = Duration::from_secs(600);

/// A client for the server `KUBECONFIG` names, with its connection open.
async fn client() -> anyhow::Result<Client> {
    let client = Client::try_default().await.context("kubeforge client")?;
    client
        .apiserver_version()
        .await
        .context("GET /version with kubeforge's client")?;
    Ok(client)
}

/// Start to synced, and the heap the cache holds.
pub async fn sync<K: Cacheable>(strip: bool, expected: usize) -> anyhow::Result<Figures> {
    let client = client().await?;
    let baseline = alloc::live();
    let started = Instant::now();
    let factory = SharedInformerFactory::new(client);
    let options = if strip {
        InformerOptions::default().transform(strip_managed_fields())
    } else {
        InformerOptions::default()
    };
    let informer = factory.informer_with::<K>(options);
    factory.start();
    for (id, synced) in factory.wait_for_cache_sync(SYNC_TIMEOUT).await {
        synced.with_context(|| format!("{id}"))?;
    }
    let secs = started.elapsed().as_secs_f64();
    let cached = informer.store().len();
    if cached != expected {
        bail!("kubeforge cached {cached} objects, expected {expected}");
    }
    tokio::time::sleep(SETTLE).await;
    let figures = sync_figures(secs, baseline, expected);
    factory.shutdown();
    Ok(figures)
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

/// Set to `1` to run kubeforge's controller on client-go's FIFO queue
/// (`ControllerBuilder::priority_queue(false)`), to compare the default
/// priority queue's start-to-all-reconciled against it.
pub const FIFO_ENV: &str = "KUBEFORGE_BENCH_FIFO_QUEUE";

/// Start to every object reconciled once.
pub async fn reconcile(workers: usize, expected: usize) -> anyhow::Result<Figures> {
    let priority_queue = std::env::var(FIFO_ENV).map_or(true, |v| v != "1");
    let client = client().await?;
    let count = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let factory = SharedInformerFactory::new(client.clone());
    // kube-runtime's controller caches managedFields; so does this one.
    let cached = CachedClient::builder(client, factory)
        .keep_managed_fields()
        .build();
    let controller = Controller::<ConfigMap>::builder(cached)
        .concurrency(workers)
        .priority_queue(priority_queue)
        .reconcile(
            |_: Arc<ConfigMap>, ctx: Arc<Context<Arc<AtomicUsize>>>| async move {
                ctx.fetch_add(1, Ordering::Relaxed);
                Ok::<_, Never>(Action::done())
            },
            Arc::clone(&count),
        );
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(stop.clone()));
    crate::kube_side::wait_for_count(&count, expected).await?;
    let secs = started.elapsed().as_secs_f64();
    stop.cancel();
    task.await
        .context("controller task")?
        .context("controller")?;
    Ok(Figures::from([("secs".to_owned(), secs)]))
}

/// The floors: the list's bytes over one HTTPS GET, their `serde_json`
/// decode into `ObjectList<K>` (into fresh memory, the first time,
/// and into memory an earlier decode freed), and the heap of each decoded object
/// on its own (an exact-capacity copy in an `Arc`, the least any cache of
/// the typed object holds), with and without managedFields.
pub async fn floors<K: Cacheable>(kind: Kind, expected: usize) -> anyhow::Result<Figures> {
    let client = client().await?;
    let mut get = Vec::new();
    let mut body = bytes::Bytes::new();
    for _ in 0..3 {
        // The last body is freed before the next arrives.
        drop(std::mem::take(&mut body));
        let path = format!("/api/v1/{}?resourceVersion=0", kind.plural());
        let request = http::Request::get(path)
            .body(Vec::new())
            .context("request")?;
        let started = Instant::now();
        body = client
            .request_bytes(request)
            .await
            .context("GET the list")?;
        get.push(started.elapsed().as_secs_f64());
    }
    // The first decode builds its objects in memory the process never had,
    // as a cache's first sync does; later ones reuse the memory the one
    // before them freed, and take up to half the time.
    let mut decode = Vec::new();
    let mut list = None;
    for _ in 0..4 {
        drop(list.take());
        let started = Instant::now();
        let decoded: ObjectList<K> = serde_json::from_slice(&body).context("decoding the list")?;
        decode.push(started.elapsed().as_secs_f64());
        list = Some(black_box(decoded));
    }
    let decode_fresh = decode.remove(0);
    let items = list.map(|l| l.items).unwrap_or_default();
    if items.len() != expected {
        bail!("the list has {} items, expected {expected}", items.len());
    }
    let object_bytes = |strip: bool| {
        let before = alloc::live();
        let mut held = Vec::with_capacity(items.len());
        let vec_bytes = alloc::live() - before;
        for item in &items {
            let mut copy = item.clone();
            if strip {
                copy.meta_mut().managed_fields = None;
            }
            held.push(Arc::new(copy));
        }
        let bytes = alloc::live() - before - vec_bytes;
        drop(black_box(held));
        bytes as f64 / items.len().max(1) as f64
    };
    Ok(Figures::from([
        ("get_secs".to_owned(), median(&mut get)),
        ("decode_fresh_secs".to_owned(), decode_fresh),
        ("decode_reused_secs".to_owned(), median(&mut decode)),
        ("body_bytes".to_owned(), body.len() as f64),
        ("object_kept".to_owned(), object_bytes(false)),
        ("object_stripped".to_owned(), object_bytes(true)),
    ]))
}

/// The median of a few figures.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}
