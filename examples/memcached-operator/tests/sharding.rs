//! Sharded replicas as processes: copies of the operator binary with
//! `--sharded` (the default 15 s lease, 10 s renew deadline, 2 s retry)
//! split the Memcacheds of kubeforge's API server. The ring grows from one
//! replica to four (joins), loses one to SIGKILL and one to a network cut
//! (each process reaches the server through its own TCP relay), and one
//! leaves with SIGTERM; after each step a batch of new Memcacheds must all
//! get their Deployments, and the time the batch took is printed.
//!
//! The recorder across processes is the server's history: every write an
//! operator made to a Memcached or a Deployment (its field manager names
//! the process) must come from the replica the ring's Lease named as the
//! holder of the object's slot at that resourceVersion — so no object was
//! ever reconciled by two replicas at once, and none by a replica that had
//! been fenced out.
//!
//! Run twice: against a server serving `shardSelector`, and against one
//! ignoring it, where the replicas label every Memcached and Deployment
//! with its slot (a Deployment with its Memcached's) and select by label.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kubeforge::cache::{slot_label_key, Slots};
use kubeforge::k8s_openapi::api::apps::v1::Deployment;
use kubeforge::k8s_openapi::api::coordination::v1::Lease;
use kubeforge::kube_core::params::ListParams;
use kubeforge::prelude::*;
use kubeforge::sharding::{RingState, SUMMARY_ANNOTATION};
use memcached_operator::{Memcached, MemcachedSpec, SHARD_RING};

mod support;

use support::{follow_history, start_server_serving_shards, summary, Change, Operator, NS};

const FLAGS: [&str; 3] = ["--sharded", "--max-concurrent-reconciles", "4"];

/// Every operator write to an object of a slot its writer did not hold,
/// by the ring's Lease, at the write's resourceVersion; and how many
/// writes were checked.
fn foreign_writes(history: &[Change]) -> (usize, Vec<String>) {
    let mut changes: Vec<&Change> = history.iter().collect();
    changes.sort_by_key(|c| c.rv);
    let mut ring = RingState::default();
    let mut writes = 0;
    let mut wrong = Vec::new();
    for c in changes {
        if let Some(text) = &c.ring {
            ring = RingState::decode(text).expect("the ring's annotation reads");
            continue;
        }
        let Some(slot) = c.slot else { continue };
        for writer in &c.writers {
            writes += 1;
            let holder = ring.holder(slot);
            if holder != Some(writer.as_str()) {
                wrong.push(format!(
                    "{} at rv {} written by {writer}; slot {slot} was held by {holder:?}",
                    c.what, c.rv
                ));
            }
        }
    }
    (writes, wrong)
}

async fn ring_summary(client: &Client) -> String {
    let leases: Api<Lease> = Api::namespaced(client.clone(), NS);
    leases
        .get_opt(SHARD_RING)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.metadata.annotations?.remove(SUMMARY_ANNOTATION))
        .unwrap_or_default()
}

async fn wait_for_ring(client: &Client, want: &str, deadline: Duration) {
    let started = Instant::now();
    loop {
        let now = ring_summary(client).await;
        if now == want {
            return;
        }
        assert!(
            started.elapsed() < deadline,
            "the ring is {now:?}, not {want:?}, after {deadline:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates `count` Memcacheds named `<prefix>-<i>` and waits until every
/// one has its Deployment; the time that took.
async fn batch(client: &Client, prefix: &str, count: usize) -> Duration {
    let started = Instant::now();
    let memcacheds: Api<Memcached> = Api::namespaced(client.clone(), NS);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let names: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    for name in &names {
        memcacheds
            .create(
                &PostParams::default(),
                &Memcached::new(name, MemcachedSpec::with_size(1)),
            )
            .await
            .expect("create Memcached");
    }
    let mut missing = names.clone();
    while !missing.is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "{prefix}: no Deployment for {missing:?} after 90 s"
        );
        let mut still = Vec::new();
        for name in missing {
            if !matches!(deployments.get_opt(&name).await, Ok(Some(_))) {
                still.push(name);
            }
        }
        missing = still;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_split_the_memcacheds_by_shard_selector_through_joins_a_kill_a_cut_and_a_leave() {
    replicas_split_the_memcacheds(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_split_the_memcacheds_by_label_through_joins_a_kill_a_cut_and_a_leave() {
    replicas_split_the_memcacheds(false).await;
}

/// Every Memcached and Deployment labelled with its slot (a Deployment
/// with its owner's) when the ring shards by label, and none otherwise.
async fn check_slot_labels(client: &Client, by_label: bool) {
    let key = slot_label_key(SHARD_RING);
    let memcacheds: Api<Memcached> = Api::namespaced(client.clone(), NS);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let owners = memcacheds.list(&ListParams::default()).await.expect("list");
        let slots: HashMap<String, u32> = owners
            .items
            .iter()
            .map(|m| (m.uid().unwrap_or_default(), Slots::slot_of(m)))
            .collect();
        let mut wrong: Vec<String> = owners
            .items
            .iter()
            .filter(|m| Slots::slot_labelled(*m, &key) != by_label.then(|| Slots::slot_of(*m)))
            .map(|m| m.name_any())
            .collect();
        for d in deployments
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
        {
            let owner = d.owner_references().first().map(|o| o.uid.clone());
            let expected = owner.and_then(|uid| slots.get(&uid).copied());
            if Slots::slot_labelled(&d, &key) != expected {
                wrong.push(d.name_any());
            }
        }
        if wrong.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "slot labels wrong: {wrong:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn replicas_split_the_memcacheds(served: bool) {
    let (dir, server, client) = start_server_serving_shards(served).await;
    let history = Arc::new(Mutex::new(Vec::new()));
    follow_history(client.clone(), history.clone());
    let mut times: Vec<(&str, Duration)> = Vec::new();

    // One replica holds every slot.
    let mut operators: HashMap<usize, Operator> = HashMap::new();
    operators.insert(
        0,
        Operator::spawn_with(0, &server, dir.path(), &FLAGS).await,
    );
    wait_for_ring(&client, "op-0=128", Duration::from_secs(30)).await;
    times.push(("1 replica", batch(&client, "one", 8).await));

    // Three join.
    for n in 1..4 {
        operators.insert(
            n,
            Operator::spawn_with(n, &server, dir.path(), &FLAGS).await,
        );
    }
    let four = "op-0=32 op-1=32 op-2=32 op-3=32";
    wait_for_ring(&client, four, Duration::from_secs(60)).await;
    times.push(("4 replicas", batch(&client, "four", 16).await));

    // op-1 is killed: its slots move once its Lease expires.
    let mut killed = operators.remove(&1).expect("op-1");
    killed.child.start_kill().expect("SIGKILL");
    times.push(("after SIGKILL", batch(&client, "killed", 16).await));

    // op-2 is cut off the network: it stops itself at its renew deadline,
    // and the others take its slots at the lease duration.
    let cut = operators.remove(&2).expect("op-2");
    cut.relay.cut();
    times.push(("after a network cut", batch(&client, "cut", 16).await));
    wait_for_ring(&client, "op-0=64 op-3=64", Duration::from_secs(60)).await;

    // op-3 leaves with SIGTERM: it hands its slots over at once.
    let mut leaving = operators.remove(&3).expect("op-3");
    leaving.terminate();
    let left = Instant::now();
    wait_for_ring(&client, "op-0=128", Duration::from_secs(30)).await;
    let handed = left.elapsed();
    let exited = tokio::time::timeout(Duration::from_secs(30), leaving.child.wait()).await;
    assert!(exited.is_ok(), "op-3 did not exit after SIGTERM");
    times.push(("after a leave", batch(&client, "alone", 8).await));
    check_slot_labels(&client, !served).await;

    tokio::time::sleep(Duration::from_millis(500)).await;
    let (writes, wrong) = foreign_writes(&history.lock().unwrap());
    let mechanism = if served {
        "shardSelector"
    } else {
        "slot labels"
    };
    eprintln!(
        "sharded memcached operator ({mechanism}), time for every Memcached of a batch to get its Deployment:"
    );
    for (step, took) in &times {
        eprintln!("  {step:<20} {}", summary(&[*took]));
    }
    eprintln!(
        "  SIGTERM handed op-3's slots over in {:.2}s",
        handed.as_secs_f64()
    );
    eprintln!(
        "  {writes} operator writes checked against the ring, {} by a replica not holding the slot",
        wrong.len()
    );
    drop(cut);
    for op in operators.values_mut() {
        let _ = op.child.kill().await;
    }
    assert!(writes > 0, "the history holds the operators' writes");
    assert!(
        wrong.is_empty(),
        "writes outside the writer's slots: {wrong:#?}"
    );
    // Two lease durations, and the retry period, bound a failover.
    for (step, took) in &times[2..4] {
        assert!(*took < Duration::from_secs(34), "{step}: {took:?}");
    }
}
