//! `ApiLeaseLock` on the wire, against a small fake of the Lease endpoint
//! (HTTPS on 127.0.0.1, resourceVersion checks, 404 / 409 Status answers):
//! paths, verbs, bodies (`MicroTime` with six fraction digits, the
//! resourceVersion carried by every PUT), conflict and already-exists
//! mapping, and a whole election — create, renewals, release on cancel.

mod client_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use client_support::{handler, json, status, Fixture, Recorded};
use kubeforge::manager::leader_election::{LeaderElectionRecord, LeaseLock, LockError};
use kubeforge::manager::{
    ApiLeaseLock, CancellationToken, LeaderElectionConfig, LeaderElector, Phase,
};
use kubeforge::Client;
use serde_json::{json, Value};

const ITEM: &str = "/apis/coordination.k8s.io/v1/namespaces/ops/leases/my-operator";
const COLLECTION: &str = "/apis/coordination.k8s.io/v1/namespaces/ops/leases";

#[derive(Default)]
struct FakeLease {
    object: Option<Value>,
    last_rv: u64,
}

impl FakeLease {
    fn store(&mut self, mut object: Value) -> Value {
        self.last_rv += 1;
        object["metadata"]["resourceVersion"] = json!(self.last_rv.to_string());
        object["metadata"]["uid"] = json!("2f1b6c1e-0000-4000-8000-000000000001");
        self.object = Some(object.clone());
        object
    }
}

async fn lease_endpoint(
    state: Arc<Mutex<FakeLease>>,
    r: Recorded,
) -> http::Response<client_support::Body> {
    let path = r.uri.path().to_owned();
    let mut state = state.lock().unwrap();
    match (r.method.as_str(), path.as_str()) {
        ("GET", ITEM) => match &state.object {
            Some(obj) => json(200, obj.clone()),
            None => status(
                404,
                "NotFound",
                "leases.coordination.k8s.io \"my-operator\" not found",
            ),
        },
        ("POST", COLLECTION) => {
            if state.object.is_some() {
                return status(
                    409,
                    "AlreadyExists",
                    "leases.coordination.k8s.io \"my-operator\" already exists",
                );
            }
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            json(201, state.store(body))
        }
        ("PUT", ITEM) => {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            let Some(current) = &state.object else {
                return status(404, "NotFound", "not found");
            };
            if body["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"] {
                return status(
                    409,
                    "Conflict",
                    "Operation cannot be fulfilled on leases.coordination.k8s.io \"my-operator\": the object has been modified; please apply your changes to the latest version and try again",
                );
            }
            json(200, state.store(body))
        }
        _ => status(404, "NotFound", "unexpected request"),
    }
}

async fn fixture() -> (Fixture, Arc<Mutex<FakeLease>>, Client) {
    let state = Arc::new(Mutex::new(FakeLease::default()));
    let s = state.clone();
    let fx = Fixture::start(handler(move |r| lease_endpoint(s.clone(), r))).await;
    let client = Client::new(fx.config("token")).unwrap();
    (fx, state, client)
}

fn body(r: &Recorded) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

#[tokio::test]
async fn the_lock_speaks_the_lease_wire_protocol() {
    let (fx, state, client) = fixture().await;
    let mut lock = ApiLeaseLock::new(client, "ops", "my-operator");
    assert_eq!(lock.describe(), "ops/my-operator");

    assert_eq!(lock.get().await.unwrap(), None);
    let record = LeaderElectionRecord {
        holder_identity: "pod-a_1234".into(),
        lease_duration_seconds: 15,
        acquire_time: Some("2025-03-04T05:06:07Z".parse().unwrap()),
        renew_time: Some("2025-03-04T05:06:07.25Z".parse().unwrap()),
        lease_transitions: 0,
        ..Default::default()
    };
    lock.create(&record).await.unwrap();
    let post = fx.last();
    assert_eq!(post.method, http::Method::POST);
    assert_eq!(post.uri.path(), COLLECTION);
    let sent = body(&post);
    assert_eq!(sent["apiVersion"], "coordination.k8s.io/v1");
    assert_eq!(sent["kind"], "Lease");
    assert_eq!(sent["metadata"]["name"], "my-operator");
    assert_eq!(
        sent["spec"],
        json!({
            "holderIdentity": "pod-a_1234",
            "leaseDurationSeconds": 15,
            "acquireTime": "2025-03-04T05:06:07.000000Z",
            "renewTime": "2025-03-04T05:06:07.250000Z",
            "leaseTransitions": 0,
        })
    );

    assert_eq!(lock.get().await.unwrap(), Some(record.clone()));

    // Updates are PUTs of the whole object carrying the resourceVersion read.
    let mut renewed = record.clone();
    renewed.renew_time = Some("2025-03-04T05:06:09Z".parse().unwrap());
    lock.update(&renewed).await.unwrap();
    let put = fx.last();
    assert_eq!(put.method, http::Method::PUT);
    assert_eq!(put.uri.path(), ITEM);
    assert_eq!(body(&put)["metadata"]["resourceVersion"], "1");
    assert_eq!(
        body(&put)["spec"]["renewTime"],
        "2025-03-04T05:06:09.000000Z"
    );
    lock.update(&renewed).await.unwrap();
    assert_eq!(body(&fx.last())["metadata"]["resourceVersion"], "2");

    // Someone else writes: our next update is a conflict.
    {
        let mut s = state.lock().unwrap();
        let obj = s.object.clone().unwrap();
        s.store(obj);
    }
    assert!(matches!(
        lock.update(&renewed).await,
        Err(LockError::Conflict)
    ));
    assert!(matches!(
        lock.create(&record).await,
        Err(LockError::AlreadyExists)
    ));
    // Reading again makes updates possible again.
    lock.get().await.unwrap();
    lock.update(&renewed).await.unwrap();
}

#[tokio::test]
async fn an_election_creates_renews_and_releases_through_the_api() {
    let (fx, state, client) = fixture().await;
    let config = LeaderElectionConfig::default()
        .with_identity("pod-a_1234")
        .with_lease_duration(Duration::from_secs(2))
        .with_renew_deadline(Duration::from_millis(1500))
        .with_retry_period(Duration::from_millis(200))
        .with_release_on_cancel(true);
    let lock = ApiLeaseLock::new(client, "ops", "my-operator");
    let leadership = LeaderElector::new(config, lock)
        .unwrap()
        .run(CancellationToken::new());
    assert!(leadership.elected().await);
    tokio::time::sleep(Duration::from_millis(700)).await;
    leadership.stop();
    assert_eq!(leadership.ended().await, Phase::Stopped);

    // The candidate follows its Lease by a list and watch pinned to its
    // name (this fake answers them 404, so it polls instead); the lock's
    // own requests are the rest.
    let (follower, requests): (Vec<_>, Vec<_>) = fx
        .recorded()
        .into_iter()
        .partition(|r| r.method == http::Method::GET && r.uri.path() == COLLECTION);
    assert!(!follower.is_empty());
    assert!(follower.iter().all(|r| r
        .uri
        .query()
        .is_some_and(|q| q.contains("fieldSelector=metadata.name%3Dmy-operator"))));
    let verbs: Vec<&str> = requests.iter().map(|r| r.method.as_str()).collect();
    // GET (404), POST, then renewals by optimistic PUT (no GET needed),
    // then the release: GET and PUT.
    assert_eq!(&verbs[..2], ["GET", "POST"]);
    let renewals = &requests[2..requests.len() - 2];
    assert!(renewals.len() >= 3, "{verbs:?}");
    assert!(renewals.iter().all(|r| r.method == http::Method::PUT));
    assert_eq!(verbs[verbs.len() - 2..], ["GET", "PUT"]);
    let release = body(requests.last().unwrap());
    assert_eq!(release["spec"]["holderIdentity"], "");
    assert_eq!(release["spec"]["leaseDurationSeconds"], 1);
    assert_eq!(release["spec"]["leaseTransitions"], 0);
    let stored = state.lock().unwrap().object.clone().unwrap();
    assert_eq!(stored["spec"]["holderIdentity"], "");
    assert!(
        stored["spec"]["renewTime"].as_str().unwrap().ends_with('Z'),
        "{stored}"
    );
}
