//! Leader election against the in-memory lease, on tokio's paused clock:
//! client-go's rules one by one (acquire, respect, takeover measured from
//! observation, conflicts, renew deadline, release, transitions), then two
//! and three candidates under a long randomized schedule of latency,
//! outages, failures, crashes and restarts, checking that two candidates
//! never lead at once. Candidates whose lock follows the record (as the
//! Lease watch does) try at expiry and on release; they are checked
//! alone and racing polling ones.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use jiff::Timestamp;
use kubeforge::manager::leader_election::memory::{MemoryLeaseLock, MemoryLeaseStore};
use kubeforge::manager::leader_election::{
    LeaderElectionMetrics, LeaderElectionRecord, LeaseLock, LockError,
};
use kubeforge::manager::{
    CancellationToken, LeaderElectionConfig, LeaderElector, LeadershipHandle, Phase,
};
use prometheus_client::registry::Registry;
use tokio::time::{sleep, Instant};

const SECOND: Duration = Duration::from_secs(1);

/// A wall clock that follows tokio's (paused) clock, so that every renewal
/// writes a different `renewTime`.
fn virtual_wall_clock() -> impl Fn() -> Timestamp + Send + Sync + 'static {
    let start = Instant::now();
    let base: Timestamp = "2025-01-01T00:00:00Z".parse().unwrap();
    move || base + (Instant::now() - start)
}

fn config(id: &str) -> LeaderElectionConfig {
    LeaderElectionConfig::default()
        .with_identity(id)
        .with_wall_clock(virtual_wall_clock())
}

fn start(store: &MemoryLeaseStore, config: LeaderElectionConfig) -> (LeadershipHandle, Instant) {
    let id = config.identity().to_owned();
    let elector = LeaderElector::new(config, store.lock(&id)).unwrap();
    (elector.run(CancellationToken::new()), Instant::now())
}

fn foreign(holder: &str, transitions: i32) -> LeaderElectionRecord {
    // Times from a badly skewed clock: they must not matter.
    LeaderElectionRecord {
        holder_identity: holder.into(),
        lease_duration_seconds: 15,
        acquire_time: Some("2000-01-01T00:00:00Z".parse().unwrap()),
        renew_time: Some("2000-01-01T00:00:00Z".parse().unwrap()),
        lease_transitions: transitions,
        ..Default::default()
    }
}

#[tokio::test(start_paused = true)]
async fn acquires_a_missing_lease_by_creating_it() {
    let store = MemoryLeaseStore::new();
    let (a, t0) = start(&store, config("a"));
    assert!(a.elected().await);
    assert_eq!(Instant::now(), t0, "the first attempt is immediate");
    assert!(a.is_leader());
    assert_eq!(a.leader().as_deref(), Some("a"));
    let record = store.record().unwrap();
    assert_eq!(record.holder_identity, "a");
    assert_eq!(record.lease_duration_seconds, 15);
    assert_eq!(record.lease_transitions, 0);
    assert!(record.acquire_time.is_some());
    assert_eq!(record.acquire_time, record.renew_time);
    assert_eq!(store.stats().creates, 1);

    // The leader renews at once (client-go's renew loop starts with a
    // renewal) and then every retry period, keeping acquireTime.
    sleep(7 * SECOND).await;
    let renewed = store.record().unwrap();
    assert_eq!(renewed.acquire_time, record.acquire_time);
    assert!(renewed.renew_time > record.renew_time);
    assert_eq!(store.stats().updates, 4, "renewals at 0, 2, 4 and 6 s");
    assert_eq!(a.status().phase, Phase::Leading);
}

#[tokio::test(start_paused = true)]
async fn respects_an_unexpired_foreign_lease_then_takes_over_after_expiry() {
    let store = MemoryLeaseStore::new();
    store.set_record(foreign("old", 2));
    let (a, t0) = start(&store, config("a"));
    // The record's renewTime is 25 years old, yet the lease counts as
    // valid for 15 s from when `a` first saw it (client-go measures expiry
    // on the local clock from the last observed change).
    sleep(14 * SECOND).await;
    assert!(!a.is_leader());
    assert_eq!(a.leader().as_deref(), Some("old"));
    assert!(a.elected().await);
    // At the moment the lease expires, not at the next jittered retry
    // (every 2 s to 4.4 s) after it.
    assert_eq!(Instant::now() - t0, 15 * SECOND, "took over at expiry");
    let record = store.record().unwrap();
    assert_eq!(record.holder_identity, "a");
    assert_eq!(
        record.lease_transitions, 3,
        "a takeover adds one transition"
    );
    assert_ne!(record.acquire_time, foreign("old", 2).acquire_time);
}

#[tokio::test(start_paused = true)]
async fn a_live_holder_keeps_its_lease_and_expiry_counts_from_its_last_change() {
    let store = MemoryLeaseStore::new();
    store.set_record(foreign("old", 0));
    let (a, _) = start(&store, config("a"));
    // "old" renews every 5 s for a minute: only the change matters.
    let mut last_change = Instant::now();
    for i in 1..=12 {
        sleep(5 * SECOND).await;
        let mut r = foreign("old", 0);
        r.renew_time = Some(Timestamp::from_second(946_684_800 + i).unwrap());
        store.set_record(r);
        last_change = Instant::now();
        assert!(!a.is_leader(), "took a live lease at renewal {i}");
    }
    assert!(a.elected().await);
    let waited = Instant::now() - last_change;
    // `a` observes the last change on its next read (within 4.4 s) and then
    // takes over a full lease duration after that observation.
    assert!(
        waited >= 15 * SECOND && waited <= 15 * SECOND + Duration::from_millis(4400),
        "took over {waited:?} after the last change"
    );
}

/// Starts a candidate whose lock follows the record (as the Lease watch
/// does).
fn start_following(
    store: &MemoryLeaseStore,
    config: LeaderElectionConfig,
) -> (LeadershipHandle, Instant) {
    let id = config.identity().to_owned();
    let elector = LeaderElector::new(config, store.lock(&id).following()).unwrap();
    (elector.run(CancellationToken::new()), Instant::now())
}

#[tokio::test(start_paused = true)]
async fn a_following_candidate_counts_expiry_from_the_change_itself() {
    let store = MemoryLeaseStore::new();
    store.set_record(foreign("old", 0));
    let (a, _) = start_following(&store, config("a"));
    // "old" renews at odd moments between a's polls: each change is
    // noted when it happens, and no renewal lets a in early.
    let mut last_change = Instant::now();
    for i in 1..=12 {
        sleep(Duration::from_millis(4700)).await;
        let mut r = foreign("old", 0);
        r.renew_time = Some(Timestamp::from_second(946_684_800 + i).unwrap());
        store.set_record(r);
        last_change = Instant::now();
        assert!(!a.is_leader(), "took a live lease at renewal {i}");
    }
    assert!(a.elected().await);
    // Polling, the last change would be seen up to 4.4 s late.
    assert_eq!(Instant::now() - last_change, 15 * SECOND);
}

#[tokio::test(start_paused = true)]
async fn a_following_candidate_takes_a_released_lease_at_once() {
    let store = MemoryLeaseStore::new();
    let (a, _) = start(&store, config("a").with_release_on_cancel(true));
    assert!(a.elected().await);
    let (b, _) = start_following(&store, config("b"));
    sleep(30 * SECOND).await;
    assert!(!b.is_leader(), "b must wait while a renews");
    a.stop();
    assert_eq!(a.ended().await, Phase::Stopped);
    let released = Instant::now();
    assert!(b.elected().await);
    assert_eq!(Instant::now(), released, "no wait for the next retry");
    assert_eq!(store.record().unwrap().holder_identity, "b");
}

#[tokio::test(start_paused = true)]
async fn a_following_candidate_recreates_a_deleted_lease_at_once() {
    let store = MemoryLeaseStore::new();
    store.set_record(foreign("old", 0));
    let (a, _) = start_following(&store, config("a"));
    sleep(5 * SECOND).await;
    assert!(!a.is_leader());
    store.delete();
    let deleted = Instant::now();
    assert!(a.elected().await);
    assert_eq!(Instant::now(), deleted);
    assert_eq!(store.record().unwrap().lease_transitions, 0, "a new lease");
}

/// A lock that lets another writer slip in just before its first update:
/// the update then fails with a 409-style conflict.
struct InterferingLock {
    inner: MemoryLeaseLock,
    store: MemoryLeaseStore,
    interfere_with: Option<LeaderElectionRecord>,
    conflicts: Arc<Mutex<Vec<Instant>>>,
}

impl LeaseLock for InterferingLock {
    fn get(&mut self) -> BoxFuture<'_, Result<Option<LeaderElectionRecord>, LockError>> {
        self.inner.get()
    }

    fn create<'a>(
        &'a mut self,
        record: &'a LeaderElectionRecord,
    ) -> BoxFuture<'a, Result<(), LockError>> {
        self.inner.create(record)
    }

    fn update<'a>(
        &'a mut self,
        record: &'a LeaderElectionRecord,
    ) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            if let Some(other) = self.interfere_with.take() {
                self.store.set_record(other);
            }
            let result = self.inner.update(record).await;
            if matches!(result, Err(LockError::Conflict)) {
                self.conflicts.lock().unwrap().push(Instant::now());
            }
            result
        })
    }

    fn describe(&self) -> String {
        "interfering".into()
    }
}

#[tokio::test(start_paused = true)]
async fn a_conflict_loses_the_round_and_restarts_the_wait() {
    let store = MemoryLeaseStore::new();
    store.set_record(foreign("old", 4));
    let conflicts = Arc::new(Mutex::new(Vec::new()));
    let mut renewed_by_old = foreign("old", 4);
    renewed_by_old.renew_time = Some("2000-01-01T00:01:00Z".parse().unwrap());
    let lock = InterferingLock {
        inner: store.lock("a"),
        store: store.clone(),
        interfere_with: Some(renewed_by_old),
        conflicts: conflicts.clone(),
    };
    // A boxed lock, as a manager would hold it.
    let lock: Box<dyn LeaseLock> = Box::new(lock);
    let elector = LeaderElector::new(config("a"), lock).unwrap();
    let a = elector.run(CancellationToken::new());
    assert!(a.elected().await);
    let conflict_at = *conflicts
        .lock()
        .unwrap()
        .first()
        .expect("the first takeover attempt conflicts");
    assert_eq!(store.stats().conflicts, 1);
    // After losing the round `a` sees the changed record and waits a full
    // lease duration again from that observation.
    let waited = Instant::now() - conflict_at;
    assert!(waited >= 15 * SECOND, "took over {waited:?} after the 409");
    assert_eq!(store.record().unwrap().lease_transitions, 5);
}

/// A lock whose reads panic after `ok_reads` successful ones.
struct PanickingLock {
    inner: MemoryLeaseLock,
    ok_reads: usize,
}

impl LeaseLock for PanickingLock {
    fn get(&mut self) -> BoxFuture<'_, Result<Option<LeaderElectionRecord>, LockError>> {
        assert!(self.ok_reads > 0, "lock implementation bug");
        self.ok_reads -= 1;
        self.inner.get()
    }

    fn create<'a>(
        &'a mut self,
        record: &'a LeaderElectionRecord,
    ) -> BoxFuture<'a, Result<(), LockError>> {
        self.inner.create(record)
    }

    fn update<'a>(
        &'a mut self,
        record: &'a LeaderElectionRecord,
    ) -> BoxFuture<'a, Result<(), LockError>> {
        self.inner.update(record)
    }

    fn describe(&self) -> String {
        "panicking".into()
    }
}

#[tokio::test(start_paused = true)]
async fn an_elector_that_dies_counts_as_having_lost() {
    let store = MemoryLeaseStore::new();
    let lock = PanickingLock {
        inner: store.lock("a"),
        ok_reads: 1,
    };
    let a = LeaderElector::new(config("a"), lock)
        .unwrap()
        .run(CancellationToken::new());
    assert!(a.elected().await);
    // Another writer makes the fast path fail; the slow path's read panics.
    store.set_record(foreign("other", 0));
    a.lost().await;
    assert_eq!(a.ended().await, Phase::Lost);
}

#[tokio::test(start_paused = true)]
async fn missing_the_renew_deadline_ends_leadership() {
    let store = MemoryLeaseStore::new();
    let metrics = LeaderElectionMetrics::new();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let elector = LeaderElector::new(config("a"), store.lock("a"))
        .unwrap()
        .with_metrics(metrics)
        .run(CancellationToken::new());
    assert!(elector.elected().await);
    assert!(encode(&registry).contains("leader_election_master_status{name=\"memory/a\"} 1"));
    let (b, _) = start(&store, config("b"));

    sleep(3 * SECOND).await;
    store.set_available(false);
    let outage = Instant::now();
    elector.lost().await;
    let lost_after = Instant::now() - outage;
    // The last renewal was at most 2 s before the outage; the next poll
    // starts 2 s after it and gives up 10 s later.
    assert!(
        lost_after >= 8 * SECOND && lost_after <= 12 * SECOND,
        "lost {lost_after:?} after the outage"
    );
    assert_eq!(elector.status().phase, Phase::Lost);
    assert!(!elector.is_leader());
    assert_eq!(elector.ended().await, Phase::Lost);
    assert!(encode(&registry).contains("leader_election_master_status{name=\"memory/a\"} 0"));

    // A lost lease is not released: it expires.
    store.set_available(true);
    assert_eq!(store.record().unwrap().holder_identity, "a");
    let lost_at = Instant::now();
    assert!(b.elected().await);
    assert!(Instant::now() - lost_at >= 3 * SECOND);
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_sees_another_holder_gives_up_at_once() {
    let store = MemoryLeaseStore::new();
    let (a, _) = start(&store, config("a"));
    assert!(a.elected().await);
    sleep(SECOND).await;
    let mut intruder = foreign("intruder", 1);
    intruder.renew_time = Some("2030-01-01T00:00:00Z".parse().unwrap());
    store.set_record(intruder);
    let seen = Instant::now();
    a.lost().await;
    assert!(Instant::now() - seen <= 2 * SECOND);
    assert_eq!(store.record().unwrap().holder_identity, "intruder");
}

#[tokio::test(start_paused = true)]
async fn release_on_cancel_hands_the_lease_over_at_once() {
    let store = MemoryLeaseStore::new();
    let (a, _) = start(&store, config("a").with_release_on_cancel(true));
    assert!(a.elected().await);
    let (b, _) = start(&store, config("b"));
    sleep(30 * SECOND).await;
    assert!(!b.is_leader(), "b must wait while a renews");

    a.stop();
    assert_eq!(a.ended().await, Phase::Stopped);
    let released = store.record().unwrap();
    // client-go's release: no holder, one-second duration, transitions kept.
    assert_eq!(released.holder_identity, "");
    assert_eq!(released.lease_duration_seconds, 1);
    assert_eq!(released.lease_transitions, 0);
    let stopped = Instant::now();
    assert!(b.elected().await);
    assert!(
        Instant::now() - stopped <= Duration::from_millis(4400),
        "b waited {:?} for a released lease",
        Instant::now() - stopped
    );
    assert_eq!(store.record().unwrap().lease_transitions, 1);
}

#[tokio::test(start_paused = true)]
async fn without_release_a_stopped_leaders_lease_expires() {
    let store = MemoryLeaseStore::new();
    let (a, _) = start(&store, config("a"));
    assert!(a.elected().await);
    let (b, _) = start(&store, config("b"));
    sleep(5 * SECOND).await;
    a.stop();
    assert_eq!(a.ended().await, Phase::Stopped);
    let stopped = Instant::now();
    assert_eq!(store.record().unwrap().holder_identity, "a");
    assert!(b.elected().await);
    let waited = Instant::now() - stopped;
    assert!(
        waited >= 13 * SECOND,
        "b took over {waited:?} after a stopped"
    );
}

#[tokio::test(start_paused = true)]
async fn lease_transitions_count_every_change_of_holder() {
    let store = MemoryLeaseStore::new();
    for (round, id) in ["a", "b", "c"].into_iter().enumerate() {
        let (h, _) = start(&store, config(id).with_release_on_cancel(true));
        assert!(h.elected().await);
        assert_eq!(store.record().unwrap().lease_transitions, round as i32);
        sleep(3 * SECOND).await;
        h.stop();
        assert_eq!(h.ended().await, Phase::Stopped);
    }
}

#[tokio::test(start_paused = true)]
async fn stopping_a_candidate_before_it_leads() {
    let store = MemoryLeaseStore::new();
    store.set_record(foreign("old", 0));
    let (a, _) = start(&store, config("a").with_release_on_cancel(true));
    sleep(5 * SECOND).await;
    a.stop();
    assert!(!a.elected().await);
    assert_eq!(a.ended().await, Phase::Stopped);
    assert_eq!(store.record().unwrap().holder_identity, "old");
}

#[tokio::test(start_paused = true)]
async fn a_hung_request_does_not_stall_acquisition() {
    let store = MemoryLeaseStore::new();
    store.set_latency(120 * SECOND);
    let (a, t0) = start(&store, config("a"));
    sleep(5 * SECOND).await;
    store.set_latency(Duration::ZERO);
    assert!(a.elected().await);
    // The hung attempt is abandoned at the renew deadline (10 s), the next
    // one follows a jittered retry period later.
    let waited = Instant::now() - t0;
    assert!(
        waited >= 10 * SECOND && waited <= 10 * SECOND + Duration::from_millis(4400),
        "elected after {waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_healthz_check_passes_while_renewing() {
    let store = MemoryLeaseStore::new();
    let (a, _) = start(&store, config("a"));
    let check = a.healthz_check(Duration::from_secs(20));
    assert!(check().is_ok(), "passes while a candidate");
    assert!(a.elected().await);
    sleep(60 * SECOND).await;
    assert!(check().is_ok(), "passes while renewing");
    // It plugs into the probes as a liveness check.
    let probes = kubeforge::manager::Probes::new();
    probes
        .add_healthz_check("leaderElection", a.healthz_check(Duration::from_secs(20)))
        .unwrap();
    assert_eq!(probes.healthz().names(), ["leaderElection"]);
}

fn encode(registry: &Registry) -> String {
    let mut s = String::new();
    prometheus_client::encoding::text::encode(&mut s, registry).unwrap();
    s
}

// ---------------------------------------------------------------------------
// Safety under a randomized schedule.

#[derive(Clone, Copy, Debug)]
enum Mark {
    Start,
    End,
}

type Log = Arc<Mutex<Vec<(usize, Instant, Mark)>>>;

struct Candidate {
    id: usize,
    handle: LeadershipHandle,
    releases: bool,
}

fn spawn_candidate(store: &MemoryLeaseStore, id: usize, releases: bool, log: &Log) -> Candidate {
    // Odd candidates follow the record, even ones poll: both kinds race.
    let lock = store.lock(&format!("c{id}"));
    let lock = if id % 2 == 1 { lock.following() } else { lock };
    let handle = LeaderElector::new(
        config(&format!("c{id}")).with_release_on_cancel(releases),
        lock,
    )
    .unwrap()
    .run(CancellationToken::new());
    let mut rx = handle.watch();
    let log = log.clone();
    tokio::spawn(async move {
        let mut leading = false;
        loop {
            let phase = rx.borrow_and_update().phase;
            if phase == Phase::Leading && !leading {
                leading = true;
                log.lock().unwrap().push((id, Instant::now(), Mark::Start));
            }
            if phase.is_final() || rx.changed().await.is_err() {
                if leading {
                    log.lock().unwrap().push((id, Instant::now(), Mark::End));
                }
                return;
            }
        }
    });
    Candidate {
        id,
        handle,
        releases,
    }
}

/// Runs `candidates` electors for `duration` of virtual time under a
/// schedule drawn from `seed`; returns each leadership as (id, start, end).
async fn chaos(seed: u64, candidates: usize, duration: Duration) -> Vec<(usize, Instant, Instant)> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let store = MemoryLeaseStore::new();
    let log: Log = Arc::default();
    let mut next_id = 0;
    let mut live: Vec<Candidate> = (0..candidates)
        .map(|_| {
            next_id += 1;
            spawn_candidate(&store, next_id, rng.bool(), &log)
        })
        .collect();
    let end = Instant::now() + duration;
    while Instant::now() < end {
        sleep(Duration::from_millis(rng.u64(500..20_000))).await;
        match rng.u8(0..10) {
            // Latency stays under 1 s: client-go assumes requests finish
            // well within lease duration − renew deadline − retry period.
            0..=2 => store.set_latency(Duration::from_millis(rng.u64(0..1000))),
            3 => {
                store.set_available(false);
                sleep(Duration::from_millis(rng.u64(1000..25_000))).await;
                store.set_available(true);
            }
            4 => store.fail_next(rng.u32(1..6)),
            5 | 6 => {
                // Stop one: a graceful stop (releasing if configured) or a
                // crash. Work guarded by the lease stops before the elector
                // is told to (as a manager does), so leadership ends here.
                let victim = live.swap_remove(rng.usize(..live.len()));
                if victim.handle.is_leader() {
                    log.lock()
                        .unwrap()
                        .push((victim.id, Instant::now(), Mark::End));
                }
                victim.handle.stop();
                if victim.releases {
                    victim.handle.ended().await;
                }
                sleep(Duration::from_millis(rng.u64(0..20_000))).await;
                next_id += 1;
                live.push(spawn_candidate(&store, next_id, rng.bool(), &log));
            }
            _ => {}
        }
        // A candidate that lost its lease exits; its process restarts.
        let before = live.len();
        live.retain(|c| !c.handle.status().phase.is_final());
        for _ in live.len()..before {
            next_id += 1;
            live.push(spawn_candidate(&store, next_id, rng.bool(), &log));
        }
    }
    let finish = Instant::now();
    for c in &live {
        if c.handle.is_leader() {
            log.lock().unwrap().push((c.id, finish, Mark::End));
        }
        c.handle.stop();
    }
    for c in &live {
        c.handle.ended().await;
    }

    // Each candidate leads at most once: its interval is its first Start
    // to its first End after it.
    let log = log.lock().unwrap().clone();
    let mut intervals = Vec::new();
    for (id, at, mark) in &log {
        if matches!(mark, Mark::Start) {
            let end = log
                .iter()
                .filter(|(i, t, m)| i == id && matches!(m, Mark::End) && t >= at)
                .map(|(_, t, _)| *t)
                .min()
                .unwrap_or(finish);
            intervals.push((*id, *at, end));
        }
    }
    intervals.sort_by_key(|(_, start, _)| *start);
    intervals
}

fn assert_never_two_leaders(seed: u64, intervals: &[(usize, Instant, Instant)]) {
    for pair in intervals.windows(2) {
        let (a, _, a_end) = pair[0];
        let (b, b_start, _) = pair[1];
        assert!(
            a_end <= b_start,
            "seed {seed}: c{a} still led when c{b} started leading"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn two_candidates_never_lead_at_once_over_a_long_randomized_schedule() {
    for seed in 1..=4 {
        let start = Instant::now();
        let run = Duration::from_secs(3 * 3600);
        let intervals = chaos(seed, 2, run).await;
        assert_never_two_leaders(seed, &intervals);
        // And the election stays live: leadership changed hands many times
        // and someone led most of the time.
        assert!(
            intervals.len() >= 50,
            "seed {seed}: only {} leaderships",
            intervals.len()
        );
        let led: Duration = intervals.iter().map(|(_, s, e)| *e - *s).sum();
        let elapsed = Instant::now() - start;
        assert!(
            led.as_secs_f64() > 0.5 * elapsed.as_secs_f64(),
            "seed {seed}: led {led:?} of {elapsed:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn three_candidates_never_lead_at_once_over_a_long_randomized_schedule() {
    for seed in 100..=102 {
        let intervals = chaos(seed, 3, Duration::from_secs(3 * 3600)).await;
        assert_never_two_leaders(seed, &intervals);
        assert!(intervals.len() >= 50, "seed {seed}: {}", intervals.len());
    }
}
