//! Leader election across processes: three copies of the operator binary
//! (`--leader-elect`, the default 15 s lease and 2 s retry period) on one
//! Lease in kubeforge's API server. The leader is killed with SIGKILL,
//! stopped with SIGTERM, or cut off the network (each process reaches the
//! server through its own TCP relay here, which the test can cut); a
//! Memcached created right after is timed until its Deployment exists,
//! a fresh copy replaces the one that went, and the round's Memcacheds are
//! deleted, so that every successor starts with the same few objects to
//! reconcile. Figures (min/median/max per mode) are printed, not asserted.
//!
//! Each process writes under its own field manager (`--field-manager`),
//! and the test follows the server's history (Leases, Memcacheds and
//! Deployments, merged in resourceVersion order): every write an operator
//! made must come from the process that held the Lease at that
//! resourceVersion, so no two processes ever wrote as leader at once.
//!
//! The short version (one kill per mode) runs with `cargo test`; the long
//! one (10 per mode) with `-- --ignored`. With `FAILOVER_KEEP_LOGS` set,
//! the per-process logs (JSON, timestamped) are kept and their directory
//! printed, to line up each kill with the successor's election and first
//! reconcile.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubeforge::k8s_openapi::api::coordination::v1::Lease;
use kubeforge::kube_core::params::ListParams;
use kubeforge::prelude::*;
use kubeforge::testing::ApiServer;
use memcached_operator::{Memcached, LEASE_NAME};

mod support;

use support::{deleted, follow_history, reconciled, summary, Change, Operator};

/// How a leader goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Sigkill,
    Sigterm,
    NetworkCut,
}

/// Every operator write that did not come from the Lease's holder at its
/// resourceVersion. `managers` maps candidate identities to field managers.
fn overlaps(history: &[Change], managers: &HashMap<String, String>) -> (usize, Vec<String>) {
    let mut changes: Vec<&Change> = history.iter().collect();
    changes.sort_by_key(|c| c.rv);
    let mut holder = String::new();
    let mut writes = 0;
    let mut wrong = Vec::new();
    for c in changes {
        if let Some(h) = &c.holder {
            holder = h.clone();
            continue;
        }
        for w in &c.writers {
            writes += 1;
            if managers.get(&holder) != Some(w) {
                wrong.push(format!(
                    "{} at rv {} written by {w} while the Lease was held by {holder:?} ({:?})",
                    c.what,
                    c.rv,
                    managers.get(&holder)
                ));
            }
        }
    }
    (writes, wrong)
}

async fn lease_holder(client: &Client) -> Option<String> {
    let leases: Api<Lease> = Api::all(client.clone());
    let list = leases.list(&ListParams::default()).await.ok()?;
    list.items
        .into_iter()
        .find(|l| l.metadata.name.as_deref() == Some(LEASE_NAME))?
        .spec?
        .holder_identity
        .filter(|h| !h.is_empty())
}

async fn failover(kills_per_mode: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ApiServer::start().await.expect("API server");
    server
        .install_crd_for::<Memcached>()
        .expect("install the CRD");
    let client = server.client().expect("client");
    let history = Arc::new(Mutex::new(Vec::new()));
    follow_history(client.clone(), history.clone());

    let mut spawned = 0;
    let mut operators = Vec::new();
    for _ in 0..3 {
        operators.push(Operator::spawn(spawned, &server, dir.path()).await);
        spawned += 1;
    }
    let mut managers: HashMap<String, String> = HashMap::new();
    let mut times: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    let mut not_stopped = Vec::new();
    let modes = [Mode::Sigkill, Mode::Sigterm, Mode::NetworkCut];
    let mut round = 0;
    for mode in modes {
        for _ in 0..kills_per_mode {
            round += 1;
            // A leader that reconciles.
            let warm = reconciled(&client, &format!("warm-{round}"), Duration::from_secs(60)).await;
            assert!(
                warm.is_some(),
                "round {round}: no leader reconciled within 60 s"
            );
            for op in &operators {
                if let Some(id) = op.identity() {
                    managers.insert(id, op.manager.clone());
                }
            }
            let holder = lease_holder(&client).await.expect("a Lease holder");
            let at = operators
                .iter()
                .position(|op| op.identity().as_deref() == Some(holder.as_str()))
                .unwrap_or_else(|| panic!("the holder {holder} is none of the processes"));
            let mut leader = operators.remove(at);

            eprintln!(
                "round {round} {mode:?}: taking {} down at {}",
                leader.manager,
                kubeforge::k8s_openapi::jiff::Timestamp::now()
            );
            match mode {
                Mode::Sigkill => leader.child.start_kill().expect("SIGKILL"),
                Mode::Sigterm => {
                    let pid = leader.child.id().expect("pid").to_string();
                    let status = std::process::Command::new("kill")
                        .args(["-TERM", &pid])
                        .status()
                        .expect("kill -TERM");
                    assert!(status.success());
                }
                Mode::NetworkCut => leader.relay.cut(),
            }
            let took = reconciled(&client, &format!("probe-{round}"), Duration::from_secs(60))
                .await
                .unwrap_or_else(|| {
                    panic!("round {round} ({mode:?}): no new leader reconciled within 60 s")
                });
            eprintln!(
                "round {round} {mode:?}: {} -> new leader reconciled in {:.2}s",
                leader.manager,
                took.as_secs_f64()
            );
            times
                .entry(match mode {
                    Mode::Sigkill => "SIGKILL",
                    Mode::Sigterm => "SIGTERM",
                    Mode::NetworkCut => "network cut",
                })
                .or_default()
                .push(took);
            // A leader cut off must give up and stop on its own.
            let exited = tokio::time::timeout(Duration::from_secs(30), leader.child.wait()).await;
            if exited.is_err() {
                not_stopped.push(format!("{} ({mode:?})", leader.manager));
                let _ = leader.child.kill().await;
            }
            operators.push(Operator::spawn(spawned, &server, dir.path()).await);
            spawned += 1;
            // The next leader starts by reconciling every Memcached there
            // is: keep their number the same in every round, so that the
            // modes compare failover, not backlog.
            for name in [format!("warm-{round}"), format!("probe-{round}")] {
                assert!(
                    deleted(&client, &name, Duration::from_secs(60)).await,
                    "round {round}: Memcached {name} not finalized within 60 s"
                );
            }
        }
    }
    for op in &operators {
        if let Some(id) = op.identity() {
            managers.insert(id, op.manager.clone());
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (writes, wrong) = overlaps(&history.lock().unwrap(), &managers);
    eprintln!(
        "failover over {} candidates ({} kills per mode):",
        spawned, kills_per_mode
    );
    for (mode, t) in &times {
        eprintln!("  {mode:<12} {}", summary(t));
    }
    eprintln!(
        "  {writes} operator writes in the server's history, {} outside their writer's tenure",
        wrong.len()
    );
    for op in &mut operators {
        let _ = op.child.kill().await;
    }
    // Keep the logs of a failed run, or of any run when asked to.
    let logs: PathBuf = dir.keep();
    let keep = std::env::var_os("FAILOVER_KEEP_LOGS").is_some();
    if keep {
        eprintln!("per-process logs kept in {}", logs.display());
    }
    assert!(
        wrong.is_empty(),
        "writes as non-leader (logs in {}): {wrong:#?}",
        logs.display()
    );
    assert!(writes > 0, "the history holds the operators' writes");
    assert!(
        not_stopped.is_empty(),
        "leaders that lost the Lease kept running: {not_stopped:?}"
    );
    if !keep {
        let _ = std::fs::remove_dir_all(logs);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_is_replaced_after_sigkill_sigterm_and_a_network_cut() {
    failover(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: 10 kills per mode, several minutes (-- --ignored)"]
async fn ten_failovers_per_mode() {
    failover(10).await;
}
