//! No acknowledged write lost: concurrent clients against the in-process
//! API server, their history checked against a sequential model of the
//! store (`kubeforge_soak::linearizability`). A few seeds here; the long
//! version (`--ignored`) checks many more.

use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
use kubeforge::kube_core::params::{DeleteParams, ListParams};
use kubeforge::testing::{ApiServer, ApiServerExt};
use kubeforge::Api;
use kubeforge_soak::linearizability::{run_seed, run_seed_on, OpKind, RunOptions, SeedReport};

async fn check_seeds(seeds: std::ops::Range<u64>, options: RunOptions) {
    let mut ops = 0;
    let mut writes = 0;
    let mut refused = 0;
    let mut events = 0;
    let mut lists = 0;
    let mut failed: Vec<SeedReport> = Vec::new();
    for seed in seeds.clone() {
        let report = run_seed(seed, options).await.expect("the run completes");
        ops += report.ops.len();
        writes += report.acknowledged_writes();
        refused += report.refused_writes();
        events += report.events.len();
        lists += report.ops.iter().filter(|o| o.kind == OpKind::List).count();
        if !report.violations.is_empty() {
            failed.push(report);
        }
    }
    eprintln!(
        "linearizability: {} seeds checked, {ops} operations ({writes} acknowledged writes, {refused} refused, {lists} lists, half of them in pages), {events} watch events",
        seeds.end - seeds.start
    );
    for report in &failed {
        eprintln!("seed {}:", report.seed);
        for v in report.violations.iter().take(20) {
            eprintln!("  {v}");
        }
    }
    assert!(failed.is_empty(), "{} seeds had violations", failed.len());
    assert!(
        writes > 0 && refused > 0,
        "the clients both wrote and collided"
    );
}

/// With a data directory: each seed's history is linearizable on a
/// persisted server (every answer held back until its commit), and a
/// restart on the directory finds exactly the state the run ended with,
/// at the same resourceVersions, with new ones above them. The names are
/// deleted before the next seed, which checks from an empty start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persisted_store_is_linearizable_and_a_restart_keeps_its_state() {
    let dir = tempfile::tempdir().expect("a data directory");
    for seed in 0..3 {
        let builder = ApiServer::builder().data_dir(dir.path());
        let report = run_seed_on(seed, RunOptions::default(), builder)
            .await
            .expect("the run completes");
        assert!(
            report.violations.is_empty(),
            "seed {seed}: {:?}",
            &report.violations[..report.violations.len().min(20)]
        );
        assert!(report.acknowledged_writes() > 0);
        let server = ApiServer::builder()
            .data_dir(dir.path())
            .start()
            .await
            .expect("the server starts again on its directory");
        let api: Api<ConfigMap> = Api::namespaced(server.client().expect("client"), "default");
        let list = api.list(&ListParams::default()).await.expect("list");
        let found: std::collections::BTreeMap<String, (u64, Option<String>)> = list
            .items
            .iter()
            .map(|c| {
                let rv = c.metadata.resource_version.as_deref().unwrap_or("");
                let v = c.data.as_ref().and_then(|d| d.get("v")).cloned();
                (
                    c.metadata.name.clone().unwrap_or_default(),
                    (rv.parse().unwrap_or(0), v),
                )
            })
            .collect();
        assert_eq!(
            found, report.final_state,
            "seed {seed}: the state after the restart"
        );
        let before = report.final_rv;
        for name in found.keys() {
            let deleted = api
                .delete(name, &DeleteParams::default())
                .await
                .expect("delete");
            if let kubeforge::client::Either::Left(cm) = deleted {
                let rv: u64 = cm
                    .metadata
                    .resource_version
                    .unwrap_or_default()
                    .parse()
                    .unwrap_or(0);
                assert!(
                    rv > before,
                    "a write after the restart at rv {rv}, not above {before}"
                );
            }
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_readers_and_a_watch_see_a_linearizable_store() {
    check_seeds(0..4, RunOptions::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "long: many seeds (cargo test -p kubeforge-soak --test linearizability -- --ignored)"]
async fn many_seeds_of_concurrent_clients_see_a_linearizable_store() {
    let seeds = std::env::var("LINEARIZABILITY_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    check_seeds(
        1000..1000 + seeds,
        RunOptions {
            clients: 16,
            ops_per_client: 100,
            keys: 6,
            ..RunOptions::default()
        },
    )
    .await;
}
