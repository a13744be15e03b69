//! No acknowledged write lost: concurrent clients create, update, patch
//! and delete a few ConfigMaps with resourceVersion preconditions while
//! others get and list them and one watch follows the namespace. Every
//! operation is recorded with its invoke and response times and result,
//! and the history is checked against a sequential model of the store:
//!
//! - the watch delivers events in strictly increasing resourceVersion
//!   order, each acknowledged write exactly once, nothing a refused write
//!   asked for, and the sequence replays as a valid store history (a
//!   create of an absent name, an update or delete of a present one);
//! - each acknowledged write's precondition held in that history (the
//!   state it replaced had the resourceVersion it named);
//! - the resourceVersion order of acknowledged writes respects real time:
//!   a write acknowledged before another was invoked has the smaller
//!   resourceVersion;
//! - a get returns a state that was current at some point after every
//!   write acknowledged before it started, written by a write invoked
//!   before it returned; a list returns exactly the model's state at its
//!   resourceVersion, which is not older than any write acknowledged
//!   before it started;
//! - half the lists are read in pages of two: every page is at the first
//!   page's resourceVersion (the union is checked as one list), and each
//!   page's `remainingItemCount` counts what the later pages returned.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
use kubeforge::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubeforge::kube_core::params::{ListParams, Preconditions, WatchParams};
use kubeforge::kube_core::watch::WatchEvent;
use kubeforge::prelude::*;
use kubeforge::testing::ApiServer;
use serde_json::json;

const NS: &str = "default";
/// The name created last; its ADDED event ends the watch.
const END: &str = "zz-end";

/// A write or a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// POST of a new name.
    Create,
    /// PUT with `metadata.resourceVersion`.
    Update,
    /// Merge patch carrying `metadata.resourceVersion`.
    Patch,
    /// DELETE with a resourceVersion precondition.
    Delete,
    /// GET of one name.
    Get,
    /// LIST of the namespace.
    List,
}

impl OpKind {
    fn is_write(self) -> bool {
        matches!(
            self,
            Self::Create | Self::Update | Self::Patch | Self::Delete
        )
    }
}

/// What an operation got back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A write or get answered with the object: its resourceVersion and
    /// value (for a delete, the resourceVersion is learnt from the watch).
    Ok {
        /// `metadata.resourceVersion` of the answer.
        rv: u64,
        /// `data.v` of the answer.
        value: Option<String>,
    },
    /// A list: its resourceVersion and every item's (resourceVersion, value).
    List {
        /// The list's `metadata.resourceVersion`.
        rv: u64,
        /// Items by name.
        items: BTreeMap<String, (u64, Option<String>)>,
    },
    /// 404.
    NotFound,
    /// 409 (a failed precondition or, for a create, AlreadyExists).
    Conflict,
    /// No answer from the server: the write may or may not have happened.
    Unknown(String),
    /// An answer that breaks the API's own contract (a paged list whose
    /// pages disagree): a violation in itself.
    Broken(String),
}

/// One operation of the history.
#[derive(Clone, Debug)]
pub struct Op {
    /// Which client ran it.
    pub client: usize,
    /// What it did.
    pub kind: OpKind,
    /// The ConfigMap's name (empty for a list).
    pub key: String,
    /// The value a write wrote (unique in the history).
    pub value: Option<String>,
    /// The resourceVersion the write required.
    pub precondition: Option<u64>,
    /// When it was invoked, from the start of the run.
    pub invoke: Duration,
    /// When its answer arrived.
    pub response: Duration,
    /// The answer.
    pub outcome: Outcome,
}

/// The type of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// ADDED.
    Added,
    /// MODIFIED.
    Modified,
    /// DELETED.
    Deleted,
}

/// A watch event, as the checker needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// ADDED, MODIFIED or DELETED.
    pub kind: EventKind,
    /// The object's name.
    pub key: String,
    /// The object's resourceVersion.
    pub rv: u64,
    /// The object's `data.v`.
    pub value: Option<String>,
}

/// A key's states in resourceVersion order: (rv at which it began, value;
/// `None` when the key was deleted at that rv).
type Timeline = Vec<(u64, Option<Option<String>>)>;

/// Checks a history: `ops` as the clients saw them, `events` as the watch
/// delivered them. Returns every violation found (empty when the history
/// is linearizable as described in the module doc).
pub fn check(ops: &[Op], events: &[Event]) -> Vec<String> {
    let mut violations = Vec::new();

    // Watch order and replay: strictly increasing rvs, a valid history.
    let mut timelines: HashMap<&str, Timeline> = HashMap::new();
    let mut previous_rv = 0;
    // For each event, the rv of the state it replaced (0 if none).
    let mut replaced: Vec<u64> = Vec::with_capacity(events.len());
    for e in events {
        if e.rv <= previous_rv {
            violations.push(format!(
                "watch order: {:?} {} at rv {} after rv {previous_rv}",
                e.kind, e.key, e.rv
            ));
        }
        previous_rv = previous_rv.max(e.rv);
        let timeline = timelines.entry(&e.key).or_default();
        let current = timeline
            .last()
            .and_then(|(rv, v)| v.as_ref().map(|v| (*rv, v)));
        match (e.kind, current) {
            (EventKind::Added, None) => {}
            (EventKind::Added, Some((rv, _))) => violations.push(format!(
                "replay: ADDED {} at rv {} while it exists since rv {rv}",
                e.key, e.rv
            )),
            (EventKind::Modified | EventKind::Deleted, None) => violations.push(format!(
                "replay: {:?} {} at rv {} while it does not exist",
                e.kind, e.key, e.rv
            )),
            (EventKind::Deleted, Some((_, value))) if *value != e.value => {
                violations.push(format!(
                    "replay: DELETED {} at rv {} carries {:?}, its last state was {value:?}",
                    e.key, e.rv, e.value
                ))
            }
            _ => {}
        }
        replaced.push(current.map_or(0, |(rv, _)| rv));
        let state = (e.kind != EventKind::Deleted).then(|| e.value.clone());
        timeline.push((e.rv, state));
    }

    // Each acknowledged write is in the watch once, with the rv it was
    // answered with; each event belongs to one write. Deletes are matched by
    // name and precondition; the others by their unique value.
    let mut event_of_value: HashMap<&str, usize> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        if e.kind != EventKind::Deleted {
            if let Some(v) = e.value.as_deref() {
                if event_of_value.insert(v, i).is_some() {
                    violations.push(format!("watch: the write of {v:?} seen twice"));
                }
            }
        }
    }
    let mut claimed: HashSet<usize> = HashSet::new();
    // Each write's rv, for the real-time check.
    let mut write_rvs: Vec<(usize, u64)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        if !op.kind.is_write() {
            continue;
        }
        let acknowledged = matches!(op.outcome, Outcome::Ok { .. });
        let ambiguous = matches!(op.outcome, Outcome::Unknown(_));
        let found = if op.kind == OpKind::Delete {
            events.iter().enumerate().position(|(j, e)| {
                e.kind == EventKind::Deleted
                    && e.key == op.key
                    && Some(replaced[j]) == op.precondition
                    && !claimed.contains(&j)
            })
        } else {
            op.value
                .as_deref()
                .and_then(|v| event_of_value.get(v).copied())
        };
        match (found, acknowledged, ambiguous) {
            (Some(j), true, _) => {
                claimed.insert(j);
                let e = &events[j];
                if let Outcome::Ok { rv, .. } = op.outcome {
                    if op.kind != OpKind::Delete && rv != e.rv {
                        violations.push(format!(
                            "{:?} {} answered rv {rv}, the watch saw rv {}",
                            op.kind, op.key, e.rv
                        ));
                    }
                }
                let kind_ok = matches!(
                    (op.kind, e.kind),
                    (OpKind::Create, EventKind::Added)
                        | (OpKind::Update | OpKind::Patch, EventKind::Modified)
                        | (OpKind::Delete, EventKind::Deleted)
                );
                if !kind_ok || e.key != op.key {
                    violations.push(format!(
                        "{:?} {} seen as {:?} {}",
                        op.kind, op.key, e.kind, e.key
                    ));
                }
                if let Some(p) = op.precondition {
                    if replaced[j] != p {
                        violations.push(format!(
                            "{:?} {} required rv {p} but replaced rv {}",
                            op.kind, op.key, replaced[j]
                        ));
                    }
                }
                write_rvs.push((i, e.rv));
            }
            (Some(j), false, true) => {
                claimed.insert(j);
                write_rvs.push((i, events[j].rv));
            }
            (Some(j), false, false) => {
                if op.kind != OpKind::Delete {
                    violations.push(format!(
                        "{:?} {} was refused ({:?}) but the watch saw it at rv {}",
                        op.kind, op.key, op.outcome, events[j].rv
                    ));
                }
            }
            (None, true, _) => violations.push(format!(
                "lost write: {:?} {} of {:?} acknowledged at {:?} is not in the watch",
                op.kind, op.key, op.value, op.response
            )),
            (None, false, _) => {}
        }
    }
    for (j, e) in events.iter().enumerate() {
        if e.key != END && !claimed.contains(&j) {
            violations.push(format!(
                "watch: {:?} {} at rv {} was written by no acknowledged write",
                e.kind, e.key, e.rv
            ));
        }
    }

    // Real time: a write acknowledged before another was invoked has the
    // smaller rv.
    let mut by_response = write_rvs.clone();
    by_response.sort_by_key(|(i, _)| ops[*i].response);
    for &(b, rv_b) in &write_rvs {
        let before = by_response
            .iter()
            .take_while(|(a, _)| ops[*a].response < ops[b].invoke)
            .filter(|(a, _)| matches!(ops[*a].outcome, Outcome::Ok { .. }))
            .max_by_key(|(_, rv)| *rv);
        if let Some(&(a, rv_a)) = before {
            if rv_a >= rv_b && matches!(ops[b].outcome, Outcome::Ok { .. }) {
                violations.push(format!(
                    "real time: {:?} {} (rv {rv_b}) was invoked after {:?} {} (rv {rv_a}) was acknowledged",
                    ops[b].kind, ops[b].key, ops[a].kind, ops[a].key
                ));
            }
        }
    }

    // Reads. `floor(t)`: the greatest rv acknowledged before t.
    let acknowledged: Vec<(Duration, Duration, u64)> = write_rvs
        .iter()
        .filter(|(i, _)| matches!(ops[*i].outcome, Outcome::Ok { .. }))
        .map(|&(i, rv)| (ops[i].invoke, ops[i].response, rv))
        .collect();
    let floor = |t: Duration| {
        acknowledged
            .iter()
            .filter(|(_, resp, _)| *resp < t)
            .map(|(_, _, rv)| *rv)
            .max()
            .unwrap_or(0)
    };
    // `ceiling(t)`: the greatest rv of a write invoked before t.
    let all_writes: Vec<(Duration, u64)> = write_rvs
        .iter()
        .map(|&(i, rv)| (ops[i].invoke, rv))
        .collect();
    let ceiling = |t: Duration| {
        all_writes
            .iter()
            .filter(|(inv, _)| *inv < t)
            .map(|(_, rv)| *rv)
            .max()
            .unwrap_or(0)
    };
    let empty = Timeline::new();
    for op in ops {
        let low = floor(op.invoke);
        let high = ceiling(op.response);
        match (op.kind, &op.outcome) {
            (OpKind::Get, Outcome::Ok { rv, value }) => {
                let timeline = timelines.get(op.key.as_str()).unwrap_or(&empty);
                let Some(at) = timeline.iter().position(|(r, _)| r == rv) else {
                    violations.push(format!(
                        "get {} returned rv {rv}, a state that never existed",
                        op.key
                    ));
                    continue;
                };
                if timeline[at].1.as_ref() != Some(value) {
                    violations.push(format!(
                        "get {} at rv {rv} returned {value:?}, the state was {:?}",
                        op.key, timeline[at].1
                    ));
                }
                let superseded = timeline.get(at + 1).map_or(u64::MAX, |(r, _)| *r);
                if superseded <= low {
                    violations.push(format!(
                        "stale get {}: rv {rv} was replaced at rv {superseded}, before rv {low} was acknowledged",
                        op.key
                    ));
                }
                if *rv > high {
                    violations.push(format!(
                        "get {} returned rv {rv}, written by no write invoked before it returned",
                        op.key
                    ));
                }
            }
            (OpKind::Get, Outcome::NotFound) => {
                let timeline = timelines.get(op.key.as_str()).unwrap_or(&empty);
                // Absent intervals: before the first state, and after each delete.
                let mut starts = vec![0];
                starts.extend(
                    timeline
                        .iter()
                        .filter(|(_, v)| v.is_none())
                        .map(|(r, _)| *r),
                );
                let absent_at_some_point = starts.iter().any(|&start| {
                    let end = timeline
                        .iter()
                        .map(|(r, _)| *r)
                        .find(|r| *r > start)
                        .unwrap_or(u64::MAX);
                    end > low && start <= high
                });
                if !absent_at_some_point {
                    violations.push(format!(
                        "get {} answered 404 but it existed throughout rv {low}..={high}",
                        op.key
                    ));
                }
            }
            (_, Outcome::Broken(why)) => {
                violations.push(format!("{:?} {}: {why}", op.kind, op.key));
            }
            (OpKind::List, Outcome::List { rv, items }) => {
                if *rv < low {
                    violations.push(format!(
                        "stale list: rv {rv} older than rv {low}, acknowledged before it started"
                    ));
                }
                let mut model = BTreeMap::new();
                for (key, timeline) in &timelines {
                    let state = timeline.iter().rev().find(|(r, _)| r <= rv);
                    if let Some((r, Some(value))) = state {
                        model.insert((*key).to_owned(), (*r, value.clone()));
                    }
                }
                model.remove(END);
                if &model != items {
                    violations.push(format!(
                        "list at rv {rv} returned {items:?}, the model holds {model:?}"
                    ));
                }
            }
            _ => {}
        }
    }
    violations
}

/// How one seed's run goes.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// Concurrent clients.
    pub clients: usize,
    /// Operations per client.
    pub ops_per_client: usize,
    /// ConfigMap names they share.
    pub keys: usize,
    /// Whether clients delete (runs across a crash leave deletes out: an
    /// unanswered delete that took effect leaves no resourceVersion to
    /// place it at; `tests/tests/persistence.rs` crashes deletes).
    pub deletes: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            clients: 8,
            ops_per_client: 60,
            keys: 4,
            deletes: true,
        }
    }
}

/// What one seed's run recorded and what the check found.
#[derive(Debug)]
pub struct SeedReport {
    /// The seed.
    pub seed: u64,
    /// Every operation.
    pub ops: Vec<Op>,
    /// Every watch event up to the end marker.
    pub events: Vec<Event>,
    /// The check's findings (empty: linearizable).
    pub violations: Vec<String>,
    /// The resourceVersion of the list that ended the run.
    pub final_rv: u64,
    /// Every object by name when the run ended: (resourceVersion, `data.v`).
    pub final_state: BTreeMap<String, (u64, Option<String>)>,
}

impl SeedReport {
    /// Acknowledged writes.
    pub fn acknowledged_writes(&self) -> usize {
        self.ops
            .iter()
            .filter(|o| o.kind.is_write() && matches!(o.outcome, Outcome::Ok { .. }))
            .count()
    }

    /// Writes refused with 409 or 404.
    pub fn refused_writes(&self) -> usize {
        self.ops
            .iter()
            .filter(|o| {
                o.kind.is_write() && matches!(o.outcome, Outcome::Conflict | Outcome::NotFound)
            })
            .count()
    }
}

fn parse_rv(meta: &ObjectMeta) -> Result<u64, String> {
    let rv = meta.resource_version.as_deref().unwrap_or("");
    rv.parse()
        .map_err(|_| format!("resourceVersion {rv:?} is not a number"))
}

fn value_of(cm: &ConfigMap) -> Option<String> {
    cm.data.as_ref()?.get("v").cloned()
}

fn outcome_of(result: Result<ConfigMap, kubeforge::Error>) -> Outcome {
    match result {
        Ok(cm) => match parse_rv(&cm.metadata) {
            Ok(rv) => Outcome::Ok {
                rv,
                value: value_of(&cm),
            },
            Err(e) => Outcome::Unknown(e),
        },
        Err(e) => error_outcome(&e),
    }
}

/// One page of a list as it came back: its resourceVersion, how many items
/// it held, and how many it said remained.
#[derive(Clone, Copy, Debug)]
struct Page {
    rv: u64,
    items: usize,
    remaining: Option<i64>,
}

/// Why the pages of one list contradict each other, if they do: every page
/// must be at the first page's resourceVersion, and a page's
/// `remainingItemCount`, when given, must count the items the later pages
/// returned.
fn pages_disagree(pages: &[Page]) -> Option<String> {
    let first = pages.first()?.rv;
    if let Some(p) = pages.iter().find(|p| p.rv != first) {
        return Some(format!(
            "a later page is at rv {}, the first at rv {first}",
            p.rv
        ));
    }
    let mut after = 0usize;
    for (i, page) in pages.iter().enumerate().rev() {
        if let Some(claimed) = page.remaining {
            if usize::try_from(claimed).ok() != Some(after) {
                return Some(format!(
                    "page {} of {} said {claimed} items remain; {after} followed",
                    i + 1,
                    pages.len()
                ));
            }
        }
        after += page.items;
    }
    None
}

/// A list, whole or in pages of `page_size` followed to the end; pages
/// that disagree ([`pages_disagree`]) are a broken answer.
async fn list_outcome(api: &Api<ConfigMap>, page_size: Option<u32>) -> Outcome {
    let mut items = BTreeMap::new();
    let mut pages: Vec<Page> = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default();
        if let Some(limit) = page_size {
            params = params.limit(limit);
        }
        if let Some(token) = token.take() {
            params = params.continue_token(&token);
        }
        let list = match api.list(&params).await {
            Ok(list) => list,
            // A later page may find its snapshot compacted: a 410, which
            // says nothing about the store's history.
            Err(e) if !pages.is_empty() => return Outcome::Unknown(e.to_string()),
            Err(e) => return error_outcome(&e),
        };
        for cm in &list.items {
            match parse_rv(&cm.metadata) {
                Ok(rv) => {
                    items.insert(cm.name_any(), (rv, value_of(cm)));
                }
                Err(e) => return Outcome::Unknown(e),
            }
        }
        let text = list.metadata.resource_version.as_deref().unwrap_or("");
        let Ok(rv) = text.parse::<u64>() else {
            return Outcome::Unknown(format!("list resourceVersion {text:?} is not a number"));
        };
        pages.push(Page {
            rv,
            items: list.items.len(),
            remaining: list.metadata.remaining_item_count,
        });
        match list.metadata.continue_.filter(|t| !t.is_empty()) {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    if let Some(why) = pages_disagree(&pages) {
        return Outcome::Broken(why);
    }
    match pages.first() {
        Some(first) => Outcome::List {
            rv: first.rv,
            items,
        },
        None => Outcome::Unknown("no page answered".to_owned()),
    }
}

/// How an [`Outcome::Unknown`] of a request that got no answer at all
/// begins.
const UNREACHABLE: &str = "unreachable: ";

fn error_outcome(e: &kubeforge::Error) -> Outcome {
    match e.code() {
        Some(404) => Outcome::NotFound,
        Some(409) => Outcome::Conflict,
        Some(_) => Outcome::Unknown(e.to_string()),
        None => Outcome::Unknown(format!("{UNREACHABLE}{e}")),
    }
}

/// One client: `ops_per_client` random operations over the shared names,
/// its preconditions taken from the last version it saw of each.
async fn client_ops(
    api: Api<ConfigMap>,
    client: usize,
    seed: u64,
    options: RunOptions,
    start: Instant,
) -> Vec<Op> {
    let mut rng =
        fastrand::Rng::with_seed(seed.wrapping_mul(1_000_003).wrapping_add(client as u64));
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut ops = Vec::with_capacity(options.ops_per_client);
    for n in 0..options.ops_per_client {
        let key = format!("k{}", rng.usize(..options.keys));
        // Unique across runs on one server's directory too.
        let value = format!("s{seed}-c{client}-{n}");
        // Mostly the last version seen; sometimes a stale guess.
        let precondition = match seen.get(&key) {
            Some(rv) if rng.u8(..10) < 8 => *rv,
            Some(rv) => rv.saturating_sub(1).max(1),
            None => 1,
        };
        let roll = rng.u8(..100);
        let kind = match roll {
            0..15 => OpKind::Create,
            15..35 => OpKind::Update,
            35..55 => OpKind::Patch,
            55..65 if options.deletes => OpKind::Delete,
            55..90 => OpKind::Get,
            _ => OpKind::List,
        };
        let invoke = start.elapsed();
        let outcome = match kind {
            OpKind::Create => {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(key.clone()),
                        ..Default::default()
                    },
                    data: Some([("v".to_owned(), value.clone())].into()),
                    ..Default::default()
                };
                outcome_of(api.create(&PostParams::default(), &cm).await)
            }
            OpKind::Update => {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(key.clone()),
                        resource_version: Some(precondition.to_string()),
                        ..Default::default()
                    },
                    data: Some([("v".to_owned(), value.clone())].into()),
                    ..Default::default()
                };
                outcome_of(api.replace(&key, &PostParams::default(), &cm).await)
            }
            OpKind::Patch => {
                let patch = json!({
                    "metadata": {"resourceVersion": precondition.to_string()},
                    "data": {"v": value},
                });
                outcome_of(
                    api.patch(&key, &PatchParams::default(), &Patch::Merge(patch))
                        .await,
                )
            }
            OpKind::Delete => {
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        resource_version: Some(precondition.to_string()),
                        uid: None,
                    }),
                    ..Default::default()
                };
                match api.delete(&key, &dp).await {
                    Ok(_) => Outcome::Ok { rv: 0, value: None },
                    Err(e) => error_outcome(&e),
                }
            }
            OpKind::Get => outcome_of(api.get(&key).await),
            // Half the lists in pages of two, so a list spans several
            // requests that must agree on one snapshot.
            OpKind::List => list_outcome(&api, rng.bool().then_some(2)).await,
        };
        let response = start.elapsed();
        match &outcome {
            Outcome::Ok { rv, .. } if kind != OpKind::Delete => {
                seen.insert(key.clone(), *rv);
            }
            Outcome::List { items, .. } => {
                for (k, (rv, _)) in items {
                    seen.insert(k.clone(), *rv);
                }
            }
            _ => {}
        }
        let gone = matches!(&outcome, Outcome::Unknown(m) if m.starts_with(UNREACHABLE));
        let write = kind.is_write();
        ops.push(Op {
            client,
            kind,
            key: if kind == OpKind::List {
                String::new()
            } else {
                key
            },
            value: (write && kind != OpKind::Delete).then_some(value),
            precondition: matches!(kind, OpKind::Update | OpKind::Patch | OpKind::Delete)
                .then_some(precondition),
            invoke,
            response,
            outcome,
        });
        // No answer: the server is gone (a run across crashes kills it).
        if gone {
            break;
        }
    }
    ops
}

/// Follows the namespace from `rv` into `events` until the end marker is
/// added, resuming after a clean close; what came before a failure stays
/// in `events`.
async fn follow_into(
    api: Api<ConfigMap>,
    mut rv: String,
    events: &mut Vec<Event>,
) -> Result<(), String> {
    loop {
        let stream = api
            .watch(&WatchParams::default(), &rv)
            .await
            .map_err(|e| format!("watch from {rv}: {e}"))?;
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            let (kind, cm) = match item.map_err(|e| format!("watch: {e}"))? {
                WatchEvent::Added(cm) => (EventKind::Added, cm),
                WatchEvent::Modified(cm) => (EventKind::Modified, cm),
                WatchEvent::Deleted(cm) => (EventKind::Deleted, cm),
                WatchEvent::Bookmark(b) => {
                    rv = b.metadata.resource_version;
                    continue;
                }
                WatchEvent::Error(status) => {
                    return Err(format!("watch error: {}", status.message))
                }
            };
            let event_rv = parse_rv(&cm.metadata)?;
            rv = event_rv.to_string();
            let key = cm.name_any();
            let end = kind == EventKind::Added && key == END;
            events.push(Event {
                kind,
                key,
                rv: event_rv,
                value: value_of(&cm),
            });
            if end {
                return Ok(());
            }
        }
    }
}

/// What one server of a run across crashes saw: the operations run
/// against it and the events its watch delivered before it died.
#[derive(Debug, Default)]
pub struct Segment {
    /// Every operation, with its times from the run's start.
    pub ops: Vec<Op>,
    /// The watch's events, from the segment's first list on.
    pub events: Vec<Event>,
}

/// Runs `options.clients` clients and a watch against `api` until each
/// client is done or gets no answer (the server was killed, which `kill`
/// does when it resolves; `None` lets the clients finish and ends the
/// watch with the end marker).
pub async fn run_segment(
    api: Api<ConfigMap>,
    seed: u64,
    options: RunOptions,
    start: Instant,
    kill: Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>,
) -> anyhow::Result<Segment> {
    let initial = api.list(&ListParams::default()).await?;
    let from = initial
        .metadata
        .resource_version
        .clone()
        .unwrap_or_default();
    let watcher = tokio::spawn({
        let api = api.clone();
        async move {
            let mut events = Vec::new();
            let ended = follow_into(api, from, &mut events).await;
            (events, ended)
        }
    });
    let tasks: Vec<_> = (0..options.clients)
        .map(|c| tokio::spawn(client_ops(api.clone(), c, seed, options, start)))
        .collect();
    let crashed = kill.is_some();
    if let Some(kill) = kill {
        kill.await;
    }
    let mut ops = Vec::new();
    for task in tasks {
        ops.extend(task.await?);
    }
    if !crashed {
        let end = ConfigMap {
            metadata: ObjectMeta {
                name: Some(END.to_owned()),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &end).await?;
    }
    let (events, ended) = tokio::time::timeout(Duration::from_secs(30), watcher)
        .await
        .map_err(|_| anyhow::anyhow!("the watch never saw the end marker"))??;
    // A killed server ends the watch with an error; otherwise it must have
    // followed to the end marker.
    if !crashed {
        ended.map_err(|e| anyhow::anyhow!(e))?;
    }
    Ok(Segment { ops, events })
}

/// The names and their (resourceVersion, `data.v`), as a list finds them.
pub async fn state(
    api: &Api<ConfigMap>,
) -> anyhow::Result<BTreeMap<String, (u64, Option<String>)>> {
    match list_outcome(api, None).await {
        Outcome::List { items, .. } => Ok(items),
        other => anyhow::bail!("the list failed: {other:?}"),
    }
}

/// The events a crash cut from a segment's watch, rebuilt from what the
/// clients were answered and what the restarted server holds
/// (`restarted`): acknowledged writes the watch never delivered, at their
/// answered resourceVersions, and unanswered writes that took effect —
/// seen by a read, replaced by an acknowledged write whose precondition
/// names them, or found by the restart. Returns the events in
/// resourceVersion order, and what cannot be explained (a state after the
/// restart that no write wrote, an acknowledged state lost).
pub fn crash_tail(
    events: &[Event],
    ops: &[Op],
    restarted: &BTreeMap<String, (u64, Option<String>)>,
) -> (Vec<Event>, Vec<String>) {
    let mut problems = Vec::new();
    let known: HashSet<u64> = events.iter().map(|e| e.rv).collect();
    // Each key's last state in the watch: (rv, value), None when deleted.
    let mut last: HashMap<String, Option<(u64, Option<String>)>> = HashMap::new();
    for e in events {
        let state = (e.kind != EventKind::Deleted).then(|| (e.rv, e.value.clone()));
        last.insert(e.key.clone(), state);
    }
    // (key, rv) -> value, for every write that took effect after the watch.
    let mut tail: BTreeMap<u64, (String, Option<String>, bool)> = BTreeMap::new();
    let unanswered = |key: &str, value: Option<&str>| {
        ops.iter().find(|o| {
            o.kind.is_write()
                && o.key == key
                && matches!(o.outcome, Outcome::Unknown(_))
                && (value.is_none() || o.value.as_deref() == value)
        })
    };
    for op in ops.iter().filter(|o| o.kind.is_write()) {
        if let Outcome::Ok { rv, value } = &op.outcome {
            if !known.contains(rv) {
                tail.insert(
                    *rv,
                    (op.key.clone(), value.clone(), op.kind == OpKind::Create),
                );
            }
        }
    }
    // Reads of states the watch never delivered.
    for op in ops {
        let seen: Vec<(&str, u64, &Option<String>)> = match &op.outcome {
            Outcome::Ok { rv, value } if op.kind == OpKind::Get => vec![(&op.key, *rv, value)],
            Outcome::List { items, .. } => items
                .iter()
                .map(|(k, (rv, v))| (k.as_str(), *rv, v))
                .collect(),
            _ => Vec::new(),
        };
        for (key, rv, value) in seen {
            if !known.contains(&rv) && !tail.contains_key(&rv) {
                let create =
                    unanswered(key, value.as_deref()).is_some_and(|o| o.kind == OpKind::Create);
                tail.insert(rv, (key.to_owned(), value.clone(), create));
            }
        }
    }
    for (key, (rv, value)) in restarted {
        if key == END || known.contains(rv) || tail.contains_key(rv) {
            continue;
        }
        match unanswered(key, value.as_deref()) {
            Some(op) => {
                tail.insert(*rv, (key.clone(), value.clone(), op.kind == OpKind::Create));
            }
            None => problems.push(format!(
                "the restart found {key} at rv {rv} with {value:?}, which no write wrote"
            )),
        }
    }
    // A precondition naming a state nobody saw: the one unanswered write
    // of that key made it.
    for op in ops
        .iter()
        .filter(|o| matches!(o.outcome, Outcome::Ok { .. }))
    {
        let Some(p) = op.precondition else { continue };
        if p <= 1 || known.contains(&p) || tail.contains_key(&p) {
            continue;
        }
        let candidates: Vec<&Op> = ops
            .iter()
            .filter(|o| {
                o.kind.is_write() && o.key == op.key && matches!(o.outcome, Outcome::Unknown(_))
            })
            .collect();
        match candidates.as_slice() {
            [only] => {
                tail.insert(
                    p,
                    (
                        op.key.clone(),
                        only.value.clone(),
                        only.kind == OpKind::Create,
                    ),
                );
            }
            _ => problems.push(format!(
                "{:?} {} required rv {p}, a state the crash hid among {} unanswered writes",
                op.kind,
                op.key,
                candidates.len()
            )),
        }
    }
    let mut out = Vec::new();
    for (rv, (key, value, create)) in tail {
        let existed = last.get(&key).is_some_and(Option::is_some);
        let kind = if create && !existed {
            EventKind::Added
        } else {
            EventKind::Modified
        };
        last.insert(key.clone(), Some((rv, value.clone())));
        out.push(Event {
            kind,
            key,
            rv,
            value,
        });
    }
    // The history so rebuilt must end where the restarted server is.
    for (key, state) in &last {
        if key == END {
            continue;
        }
        let found = restarted.get(key).cloned();
        if *state != found {
            problems.push(format!(
                "the history ends with {key} at {state:?}, the restart holds {found:?}"
            ));
        }
    }
    for key in restarted.keys() {
        if key != END && !last.contains_key(key) {
            problems.push(format!(
                "the restart holds {key}, which the history never wrote"
            ));
        }
    }
    (out, problems)
}

/// Runs one seed on a fresh server and checks its history.
pub async fn run_seed(seed: u64, options: RunOptions) -> anyhow::Result<SeedReport> {
    run_seed_on(seed, options, ApiServer::builder()).await
}

/// [`run_seed`] on a server from `builder` (one with a data directory,
/// say), which must start with none of the run's names; the server is
/// shut down at the end.
pub async fn run_seed_on(
    seed: u64,
    options: RunOptions,
    builder: kubeforge::testing::ApiServerBuilder,
) -> anyhow::Result<SeedReport> {
    let server = builder.start().await?;
    let api: Api<ConfigMap> = Api::namespaced(server.client()?, NS);
    let Segment { ops, events } =
        run_segment(api.clone(), seed, options, Instant::now(), None).await?;
    let (final_rv, final_state) = match list_outcome(&api, None).await {
        Outcome::List { rv, items } => (rv, items),
        other => anyhow::bail!("the final list failed: {other:?}"),
    };
    server.shutdown().await;
    let violations = check(&ops, &events);
    Ok(SeedReport {
        seed,
        ops,
        events,
        violations,
        final_rv,
        final_state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn write(kind: OpKind, key: &str, value: &str, pre: Option<u64>, t: (u64, u64), rv: u64) -> Op {
        Op {
            client: 0,
            kind,
            key: key.to_owned(),
            value: (kind != OpKind::Delete).then(|| value.to_owned()),
            precondition: pre,
            invoke: at(t.0),
            response: at(t.1),
            outcome: Outcome::Ok {
                rv,
                value: (kind != OpKind::Delete).then(|| value.to_owned()),
            },
        }
    }

    fn event(kind: EventKind, key: &str, rv: u64, value: &str) -> Event {
        Event {
            kind,
            key: key.to_owned(),
            rv,
            value: Some(value.to_owned()),
        }
    }

    fn get(key: &str, t: (u64, u64), outcome: Outcome) -> Op {
        Op {
            client: 1,
            kind: OpKind::Get,
            key: key.to_owned(),
            value: None,
            precondition: None,
            invoke: at(t.0),
            response: at(t.1),
            outcome,
        }
    }

    fn good_history() -> (Vec<Op>, Vec<Event>) {
        let ops = vec![
            write(OpKind::Create, "a", "1", None, (0, 10), 5),
            write(OpKind::Update, "a", "2", Some(5), (20, 30), 6),
            write(OpKind::Delete, "a", "", Some(6), (40, 50), 0),
        ];
        let events = vec![
            event(EventKind::Added, "a", 5, "1"),
            event(EventKind::Modified, "a", 6, "2"),
            event(EventKind::Deleted, "a", 7, "2"),
        ];
        (ops, events)
    }

    #[test]
    fn a_valid_history_passes() {
        let (mut ops, events) = good_history();
        ops.push(get(
            "a",
            (31, 35),
            Outcome::Ok {
                rv: 6,
                value: Some("2".into()),
            },
        ));
        ops.push(get("a", (51, 55), Outcome::NotFound));
        assert_eq!(check(&ops, &events), Vec::<String>::new());
    }

    #[test]
    fn a_stale_read_is_found() {
        let (mut ops, events) = good_history();
        ops.push(get(
            "a",
            (31, 35),
            Outcome::Ok {
                rv: 5,
                value: Some("1".into()),
            },
        ));
        let v = check(&ops, &events);
        assert!(v.iter().any(|v| v.starts_with("stale get a")), "{v:?}");
    }

    fn unanswered(kind: OpKind, key: &str, value: &str, pre: Option<u64>, at_ms: u64) -> Op {
        Op {
            outcome: Outcome::Unknown(format!("{UNREACHABLE}killed")),
            ..write(kind, key, value, pre, (at_ms, at_ms + 100), 0)
        }
    }

    #[test]
    fn a_crash_tail_holds_the_acknowledged_and_the_unanswered_writes_that_took_effect() {
        let ops = vec![
            write(OpKind::Create, "a", "1", None, (0, 10), 5),
            write(OpKind::Update, "a", "2", Some(5), (20, 30), 6),
            unanswered(OpKind::Update, "a", "3", Some(6), 40),
            unanswered(OpKind::Create, "b", "4", None, 40),
            unanswered(OpKind::Update, "a", "never", Some(6), 41),
        ];
        // The watch saw the create only; the restart holds "3" and "4".
        let events = vec![event(EventKind::Added, "a", 5, "1")];
        let restarted = BTreeMap::from([
            ("a".to_owned(), (7, Some("3".to_owned()))),
            ("b".to_owned(), (8, Some("4".to_owned()))),
        ]);
        let (tail, problems) = crash_tail(&events, &ops, &restarted);
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(
            tail,
            vec![
                event(EventKind::Modified, "a", 6, "2"),
                event(EventKind::Modified, "a", 7, "3"),
                event(EventKind::Added, "b", 8, "4"),
            ]
        );
        let mut all = events.clone();
        all.extend(tail);
        assert_eq!(check(&ops, &all), Vec::<String>::new());
        // An acknowledged write the restart does not hold is lost.
        let older = BTreeMap::from([("a".to_owned(), (5, Some("1".to_owned())))]);
        let (_, problems) = crash_tail(&events, &ops[..2], &older);
        assert!(
            problems
                .iter()
                .any(|p| p.contains("the restart holds Some((5")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_lost_write_and_a_missing_delete_are_found() {
        let (ops, mut events) = good_history();
        events.remove(1);
        let v = check(&ops, &events);
        assert!(
            v.iter().any(|v| v.starts_with("lost write: Update a")),
            "{v:?}"
        );
    }

    #[test]
    fn an_out_of_order_or_duplicated_event_is_found() {
        let (ops, mut events) = good_history();
        events.swap(0, 1);
        let v = check(&ops, &events);
        assert!(v.iter().any(|v| v.starts_with("watch order")), "{v:?}");
        let (ops, mut events) = good_history();
        events.insert(1, events[0].clone());
        let v = check(&ops, &events);
        assert!(!v.is_empty());
    }

    #[test]
    fn an_order_against_real_time_is_found() {
        let ops = vec![
            write(OpKind::Create, "a", "1", None, (0, 10), 6),
            write(OpKind::Create, "b", "2", None, (20, 30), 5),
        ];
        let events = vec![
            event(EventKind::Added, "b", 5, "2"),
            event(EventKind::Added, "a", 6, "1"),
        ];
        let v = check(&ops, &events);
        assert!(v.iter().any(|v| v.starts_with("real time")), "{v:?}");
    }

    #[test]
    fn a_write_past_its_precondition_or_a_refused_write_seen_is_found() {
        let (mut ops, events) = good_history();
        ops[1].precondition = Some(4);
        let v = check(&ops, &events);
        assert!(v.iter().any(|v| v.contains("required rv 4")), "{v:?}");
        let (mut ops, events) = good_history();
        ops[1].outcome = Outcome::Conflict;
        let v = check(&ops, &events);
        assert!(v.iter().any(|v| v.contains("was refused")), "{v:?}");
    }

    /// A list by a third client, after the good history's writes.
    fn list_answering(outcome: Outcome) -> Op {
        Op {
            client: 2,
            kind: OpKind::List,
            key: String::new(),
            value: None,
            precondition: None,
            invoke: at(31),
            response: at(35),
            outcome,
        }
    }

    #[test]
    fn a_list_that_differs_from_the_model_is_found() {
        let (mut ops, events) = good_history();
        ops.push(list_answering(Outcome::List {
            rv: 6,
            items: [("a".to_owned(), (5, Some("1".to_owned())))].into(),
        }));
        let v = check(&ops, &events);
        assert!(v.iter().any(|v| v.starts_with("list at rv 6")), "{v:?}");
    }

    #[test]
    fn pages_that_disagree_are_found() {
        let page = |rv, items, remaining| Page {
            rv,
            items,
            remaining,
        };
        let good = [page(6, 2, Some(3)), page(6, 2, Some(1)), page(6, 1, None)];
        assert_eq!(pages_disagree(&good), None);
        assert_eq!(pages_disagree(&[page(6, 2, None)]), None);
        assert_eq!(
            pages_disagree(&[page(6, 2, Some(1)), page(7, 1, None)]),
            Some("a later page is at rv 7, the first at rv 6".to_owned())
        );
        assert_eq!(
            pages_disagree(&[page(6, 2, Some(5)), page(6, 2, Some(1)), page(6, 1, None)]),
            Some("page 1 of 3 said 5 items remain; 3 followed".to_owned())
        );
        assert_eq!(
            pages_disagree(&[page(6, 2, Some(0)), page(6, 1, None)]),
            Some("page 1 of 2 said 0 items remain; 1 followed".to_owned())
        );
    }

    #[test]
    fn pages_that_disagree_are_a_violation() {
        let (mut ops, events) = good_history();
        ops.push(list_answering(Outcome::Broken(
            "a later page is at rv 7, the first at rv 6".to_owned(),
        )));
        let v = check(&ops, &events);
        assert_eq!(v, ["List : a later page is at rv 7, the first at rv 6"]);
    }
}
