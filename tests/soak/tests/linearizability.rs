//! No acknowledged write lost: concurrent clients against the in-process
//! API server, their history checked against a sequential model of the
//! store (`kubeforge_soak::linearizability`). A few seeds here; the long
//! version (`--ignored`) checks many more.

use kubeforge_soak::linearizability::{run_seed, OpKind, RunOptions, SeedReport};

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
        },
    )
    .await;
}
