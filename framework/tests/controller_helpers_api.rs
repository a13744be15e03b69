//! The reconcile helpers over a plain `Api` (`reconcile::uncached`)
//! against a stub API server over real HTTPS on 127.0.0.1: the finalizer
//! flow, create-or-update, server-side apply, status writes and the event
//! recorder. The stub keeps objects in memory
//! with kube-apiserver's write rules that these helpers depend on
//! (resourceVersion preconditions, JSON-patch `test` failures answered with
//! 422, deletion held by finalizers, release on removing the last one, no
//! new finalizers on a deleting object), and records every request so the
//! exact wire format is checked.

mod client_support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use client_support::{handler, json, status, Fixture, Recorded};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kubeforge::events::{object_reference, EventType, Recorder};
use kubeforge::kube_core::params::{DeleteParams, PostParams};
use kubeforge::reconcile::finalizer::{Event, FinalizerError, Outcome};
use kubeforge::reconcile::uncached::{
    add_finalizer, apply, apply_status, create_or_update, finalizer, patch_status, remove_finalizer,
};
use kubeforge::reconcile::{Error, OperationResult};
use kubeforge::{Api, Client};
use serde_json::{json as j, Value};

const FINALIZER: &str = "example.com/cleanup";

type Intercept = Box<dyn FnMut(&Recorded) -> Option<http::Response<client_support::Body>> + Send>;

/// In-memory objects keyed by item path, with kube-apiserver's write rules.
#[derive(Default)]
struct Store {
    objects: HashMap<String, Value>,
    rv: u64,
    intercept: Option<Intercept>,
}

impl Store {
    fn next_rv(&mut self) -> String {
        self.rv += 1;
        self.rv.to_string()
    }

    fn handle(&mut self, r: &Recorded) -> http::Response<client_support::Body> {
        if let Some(intercept) = self.intercept.as_mut() {
            if let Some(resp) = intercept(r) {
                return resp;
            }
        }
        let path = r.uri.path().to_owned();
        let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        let (item, sub) = match path.strip_suffix("/status") {
            Some(item) => (item.to_owned(), Some("status")),
            None => (path.clone(), None),
        };
        match r.method.as_str() {
            "GET" => match self.objects.get(&item) {
                Some(obj) => json(200, obj.clone()),
                None => not_found(&item),
            },
            "POST" => {
                let name = body["metadata"]["name"].as_str().unwrap_or("").to_owned();
                let key = format!("{path}/{name}");
                if self.objects.contains_key(&key) {
                    return status(409, "AlreadyExists", &format!("{name:?} already exists"));
                }
                if body["metadata"]
                    .get("resourceVersion")
                    .is_some_and(|v| !v.is_null())
                {
                    return status(
                        500,
                        "InternalError",
                        "resourceVersion should not be set on objects to be created",
                    );
                }
                let mut obj = body;
                let rv = self.next_rv();
                obj["metadata"]["resourceVersion"] = rv.into();
                obj["metadata"]["uid"] = format!("uid-{name}").into();
                obj["metadata"]["generation"] = 1.into();
                self.objects.insert(key, obj.clone());
                json(201, obj)
            }
            "PUT" => {
                let Some(stored) = self.objects.get(&item) else {
                    return not_found(&item);
                };
                if body["metadata"]["resourceVersion"] != stored["metadata"]["resourceVersion"] {
                    return status(409, "Conflict", "the object has been modified");
                }
                let stored = stored.clone();
                self.store(item, stored, body)
            }
            "PATCH" => {
                let content_type = r.header("content-type").unwrap_or("").to_owned();
                let stored = self.objects.get(&item).cloned();
                let is_apply = content_type.starts_with("application/apply-patch");
                let Some(current) = stored.clone().or_else(|| is_apply.then(|| j!({}))) else {
                    return not_found(&item);
                };
                let mut patched = current.clone();
                if content_type.starts_with("application/json-patch+json") {
                    let patch: json_patch::Patch = match serde_json::from_value(body) {
                        Ok(p) => p,
                        Err(e) => return status(400, "BadRequest", &e.to_string()),
                    };
                    if let Err(e) = json_patch::patch(&mut patched, &patch) {
                        // apiserver patch.go: a patch that does not apply is 422.
                        return status(422, "Invalid", &e.to_string());
                    }
                } else {
                    // Merge patch; apply is emulated as a merge of the body.
                    json_patch::merge(&mut patched, &body);
                }
                if sub == Some("status") {
                    // Only status changes through /status.
                    let status = patched["status"].clone();
                    patched = current.clone();
                    patched["status"] = status;
                }
                if stored.is_none() {
                    let rv = self.next_rv();
                    patched["metadata"]["resourceVersion"] = rv.into();
                    self.objects.insert(item, patched.clone());
                    return json(201, patched);
                }
                self.store(item, current, patched)
            }
            "DELETE" => {
                let Some(stored) = self.objects.get_mut(&item) else {
                    return not_found(&item);
                };
                let has_finalizers = stored["metadata"]["finalizers"]
                    .as_array()
                    .is_some_and(|f| !f.is_empty());
                if has_finalizers {
                    stored["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z".into();
                    let obj = stored.clone();
                    return json(200, obj);
                }
                self.objects.remove(&item);
                json(
                    200,
                    j!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
                )
            }
            _ => status(405, "MethodNotAllowed", "no"),
        }
    }

    /// Stores `new` over `old` with kube-apiserver's finalizer rules.
    fn store(
        &mut self,
        item: String,
        old: Value,
        mut new: Value,
    ) -> http::Response<client_support::Body> {
        let finalizers = |v: &Value| -> Vec<String> {
            serde_json::from_value(v["metadata"]["finalizers"].clone()).unwrap_or_default()
        };
        let deleting = !old["metadata"]["deletionTimestamp"].is_null();
        if deleting {
            let before = finalizers(&old);
            if finalizers(&new).iter().any(|f| !before.contains(f)) {
                return status(
                    422,
                    "Invalid",
                    "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted",
                );
            }
        }
        let rv = self.next_rv();
        new["metadata"]["resourceVersion"] = rv.into();
        // `finalizers` is omitempty in ObjectMeta.
        if new["metadata"]["finalizers"]
            .as_array()
            .is_some_and(Vec::is_empty)
        {
            if let Some(meta) = new["metadata"].as_object_mut() {
                meta.remove("finalizers");
            }
        }
        if deleting && finalizers(&new).is_empty() {
            // The last finalizer is gone: the object goes.
            self.objects.remove(&item);
        } else {
            self.objects.insert(item, new.clone());
        }
        json(200, new)
    }
}

fn not_found(item: &str) -> http::Response<client_support::Body> {
    let name = item.rsplit('/').next().unwrap_or("");
    status(404, "NotFound", &format!("{name:?} not found"))
}

struct Server {
    fixture: Fixture,
    store: Arc<Mutex<Store>>,
    client: Client,
}

impl Server {
    async fn start() -> Self {
        let store = Arc::new(Mutex::new(Store::default()));
        let s = store.clone();
        let fixture = Fixture::start(handler(move |r| {
            let resp = s.lock().unwrap().handle(&r);
            async move { resp }
        }))
        .await;
        let client = Client::new(fixture.config("t")).unwrap();
        Self {
            fixture,
            store,
            client,
        }
    }

    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), "ns")
    }

    fn deployments(&self) -> Api<Deployment> {
        Api::namespaced(self.client.clone(), "ns")
    }

    fn object(&self, path: &str) -> Option<Value> {
        self.store.lock().unwrap().objects.get(path).cloned()
    }

    fn intercept(
        &self,
        f: impl FnMut(&Recorded) -> Option<http::Response<client_support::Body>> + Send + 'static,
    ) {
        self.store.lock().unwrap().intercept = Some(Box::new(f));
    }

    /// Requests other than GETs, as (method, path, content-type, body).
    fn writes(&self) -> Vec<(String, String, String, Value)> {
        self.fixture
            .recorded()
            .into_iter()
            .filter(|r| r.method != http::Method::GET)
            .map(|r| {
                (
                    r.method.to_string(),
                    r.path_and_query(),
                    r.header("content-type").unwrap_or("").to_owned(),
                    serde_json::from_slice(&r.body).unwrap_or(Value::Null),
                )
            })
            .collect()
    }

    fn clear(&self) {
        self.fixture.requests.lock().unwrap().clear();
    }
}

const CM_PATH: &str = "/api/v1/namespaces/ns/configmaps/web";

async fn seed_configmap(server: &Server, finalizers: &[&str]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("web".into());
    cm.metadata.namespace = Some("ns".into());
    if !finalizers.is_empty() {
        cm.metadata.finalizers = Some(finalizers.iter().map(|s| s.to_string()).collect());
    }
    let created = server
        .configmaps()
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    server.clear();
    created
}

#[derive(Debug, thiserror::Error)]
#[error("reconcile failed: {0}")]
struct ReconcileError(&'static str);

#[tokio::test]
async fn finalizer_flow_adds_applies_cleans_up_and_releases() {
    let server = Server::start().await;
    let api = server.configmaps();
    let created = seed_configmap(&server, &[]).await;

    // 1. A new object: the finalizer is added, then apply runs with the
    //    object the server returned.
    let outcome = finalizer(
        &api,
        FINALIZER,
        Arc::new(created.clone()),
        |event| async move {
            match event {
                Event::Apply(cm) => {
                    assert_eq!(
                        cm.metadata.finalizers.as_deref(),
                        Some(&[FINALIZER.to_owned()][..])
                    );
                    Ok::<_, ReconcileError>("applied")
                }
                Event::Cleanup(_) => panic!("not deleting"),
            }
        },
    )
    .await
    .unwrap();
    assert_eq!(
        outcome,
        Outcome::Applied {
            value: "applied",
            finalizer_added: true
        }
    );
    let writes = server.writes();
    assert_eq!(writes.len(), 1);
    let (method, path, content_type, body) = &writes[0];
    assert_eq!((method.as_str(), path.as_str()), ("PATCH", CM_PATH));
    assert_eq!(content_type, "application/json-patch+json");
    let rv = created.metadata.resource_version.clone().unwrap();
    assert_eq!(
        body,
        &j!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]}
        ])
    );

    // 2. Steady state: apply only, nothing written.
    server.clear();
    let current = Arc::new(api.get("web").await.unwrap());
    let outcome = finalizer(&api, FINALIZER, current, |event| async move {
        match event {
            Event::Apply(_) => Ok::<_, ReconcileError>(2),
            Event::Cleanup(_) => panic!("not deleting"),
        }
    })
    .await
    .unwrap();
    assert_eq!(
        outcome,
        Outcome::Applied {
            value: 2,
            finalizer_added: false
        }
    );
    assert!(server.writes().is_empty());

    // 3. Deleted: the finalizer holds the object until cleanup succeeds.
    api.delete("web", &DeleteParams::default()).await.unwrap();
    let deleting = Arc::new(api.get("web").await.unwrap());
    assert!(deleting.metadata.deletion_timestamp.is_some());
    server.clear();
    let cleaned = Arc::new(AtomicUsize::new(0));
    let c = cleaned.clone();
    let outcome = finalizer(&api, FINALIZER, deleting, |event| async move {
        match event {
            Event::Apply(_) => panic!("deleting"),
            Event::Cleanup(_) => {
                c.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ReconcileError>(())
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(outcome, Outcome::CleanedUp(()));
    assert_eq!(cleaned.load(Ordering::SeqCst), 1);
    let writes = server.writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(
        writes[0].3,
        j!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": FINALIZER},
            {"op": "remove", "path": "/metadata/finalizers/0"}
        ])
    );
    // 4. Released: the last finalizer went, so the object is gone.
    assert!(server.object(CM_PATH).is_none());
    assert!(api.get_opt("web").await.unwrap().is_none());
}

#[tokio::test]
async fn failed_cleanup_keeps_the_finalizer_and_runs_again() {
    let server = Server::start().await;
    let api = server.configmaps();
    seed_configmap(&server, &["other.io/keep", FINALIZER]).await;
    api.delete("web", &DeleteParams::default()).await.unwrap();
    let deleting = Arc::new(api.get("web").await.unwrap());
    server.clear();

    let err = finalizer(&api, FINALIZER, deleting.clone(), |_| async {
        Err::<(), _>(ReconcileError("bucket still full"))
    })
    .await
    .unwrap_err();
    assert!(matches!(err, FinalizerError::Cleanup(_)), "{err}");
    assert_eq!(
        err.to_string(),
        "cleanup failed: reconcile failed: bucket still full"
    );
    assert!(server.writes().is_empty());
    let stored = server.object(CM_PATH).unwrap();
    assert_eq!(
        stored["metadata"]["finalizers"],
        j!(["other.io/keep", FINALIZER])
    );

    // The retry succeeds and removes only our finalizer (index 1); the other
    // one still holds the object.
    finalizer(&api, FINALIZER, deleting, |_| async {
        Ok::<_, ReconcileError>(())
    })
    .await
    .unwrap();
    let stored = server.object(CM_PATH).unwrap();
    assert_eq!(stored["metadata"]["finalizers"], j!(["other.io/keep"]));
}

#[tokio::test]
async fn an_object_being_deleted_never_gets_a_finalizer() {
    let server = Server::start().await;
    let api = server.configmaps();
    seed_configmap(&server, &["other.io/keep"]).await;
    api.delete("web", &DeleteParams::default()).await.unwrap();
    let deleting = api.get("web").await.unwrap();
    server.clear();

    let outcome = finalizer(&api, FINALIZER, Arc::new(deleting.clone()), |_| async {
        panic!("nothing should run");
        #[allow(unreachable_code)]
        Ok::<(), ReconcileError>(())
    })
    .await
    .unwrap();
    assert_eq!(outcome, Outcome::Skipped);
    assert!(server.writes().is_empty());

    let err = add_finalizer(&api, &deleting, FINALIZER).await.unwrap_err();
    assert!(matches!(err, Error::BeingDeleted { .. }), "{err}");
    assert!(server.writes().is_empty());
}

#[tokio::test]
async fn a_stale_finalizer_list_is_refused_and_reported_as_stale() {
    let server = Server::start().await;
    let api = server.configmaps();
    let stale = seed_configmap(&server, &["other.io/a"]).await;
    // Someone else edits the finalizers after we read the object.
    server
        .store
        .lock()
        .unwrap()
        .objects
        .get_mut(CM_PATH)
        .unwrap()["metadata"]["finalizers"] = j!(["other.io/a", "other.io/b"]);

    let err = finalizer(&api, FINALIZER, Arc::new(stale.clone()), |_| async {
        panic!("apply must not run without the finalizer");
        #[allow(unreachable_code)]
        Ok::<(), ReconcileError>(())
    })
    .await
    .unwrap_err();
    let FinalizerError::AddFinalizer(inner) = &err else {
        panic!("unexpected {err}");
    };
    assert!(inner.is_stale(), "{inner}");
    assert!(!inner.is_conflict());
    assert!(inner.to_string().contains("add finalizer"), "{inner}");
    // Nothing of the other writer's work was lost.
    let stored = server.object(CM_PATH).unwrap();
    assert_eq!(
        stored["metadata"]["finalizers"],
        j!(["other.io/a", "other.io/b"])
    );

    // From the fresh object it works, appending after the list it tested.
    let fresh = api.get("web").await.unwrap();
    let updated = add_finalizer(&api, &fresh, FINALIZER)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        updated.metadata.finalizers.unwrap(),
        ["other.io/a", "other.io/b", FINALIZER]
    );
    // Adding again is a no-op without a request.
    server.clear();
    let again = api.get("web").await.unwrap();
    assert!(add_finalizer(&api, &again, FINALIZER)
        .await
        .unwrap()
        .is_none());
    assert!(server.writes().is_empty());
}

#[tokio::test]
async fn a_failed_apply_after_adding_keeps_the_finalizer() {
    let server = Server::start().await;
    let api = server.configmaps();
    let created = seed_configmap(&server, &[]).await;
    let err = finalizer(&api, FINALIZER, Arc::new(created), |_| async {
        Err::<(), _>(ReconcileError("image pull"))
    })
    .await
    .unwrap_err();
    assert!(matches!(err, FinalizerError::Apply(_)), "{err}");
    let stored = server.object(CM_PATH).unwrap();
    assert_eq!(stored["metadata"]["finalizers"], j!([FINALIZER]));
}

#[tokio::test]
async fn remove_finalizer_with_a_shifted_list_is_stale() {
    let server = Server::start().await;
    let api = server.configmaps();
    let read = seed_configmap(&server, &["other.io/a", FINALIZER]).await;
    // other.io/a is removed concurrently: our finalizer moved to index 0.
    server
        .store
        .lock()
        .unwrap()
        .objects
        .get_mut(CM_PATH)
        .unwrap()["metadata"]["finalizers"] = j!([FINALIZER]);
    let err = remove_finalizer(&api, &read, FINALIZER).await.unwrap_err();
    assert!(err.is_stale(), "{err}");
    let fresh = api.get("web").await.unwrap();
    let updated = remove_finalizer(&api, &fresh, FINALIZER)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(updated.metadata.finalizers, None);
    assert!(remove_finalizer(&api, &updated, FINALIZER)
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn create_or_update_creates_updates_and_leaves_alone() {
    let server = Server::start().await;
    let api = server.configmaps();
    let set_mode = |mode: &'static str| {
        move |cm: &mut ConfigMap| {
            cm.data
                .get_or_insert_with(Default::default)
                .insert("mode".into(), mode.into());
        }
    };

    let (result, created) = create_or_update(&api, "web", set_mode("fast"))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Created);
    assert!(created.metadata.resource_version.is_some());
    let writes = server.writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(
        (writes[0].0.as_str(), writes[0].1.as_str()),
        ("POST", "/api/v1/namespaces/ns/configmaps")
    );
    assert_eq!(
        writes[0].3["metadata"],
        j!({"name": "web", "namespace": "ns"})
    );
    assert_eq!(writes[0].3["data"], j!({"mode": "fast"}));

    server.clear();
    let (result, same) = create_or_update(&api, "web", set_mode("fast"))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Unchanged);
    assert_eq!(
        same.metadata.resource_version,
        created.metadata.resource_version
    );
    assert!(server.writes().is_empty());

    let (result, updated) = create_or_update(&api, "web", set_mode("slow"))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Updated);
    let writes = server.writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(
        (writes[0].0.as_str(), writes[0].1.as_str()),
        ("PUT", CM_PATH)
    );
    // The update is conditional on the version that was read.
    assert_eq!(
        writes[0].3["metadata"]["resourceVersion"],
        j!(created.metadata.resource_version)
    );
    assert_eq!(updated.data.unwrap()["mode"], "slow");
}

#[tokio::test]
async fn create_or_update_surfaces_conflicts_and_refuses_key_changes() {
    let server = Server::start().await;
    let api = server.configmaps();
    seed_configmap(&server, &[]).await;

    // Another writer gets in between the read and the update.
    server.intercept(|r| {
        (r.method == http::Method::PUT)
            .then(|| status(409, "Conflict", "the object has been modified"))
    });
    let err = create_or_update(&api, "web", |cm: &mut ConfigMap| {
        cm.data = Some([("k".to_string(), "v".to_string())].into());
    })
    .await
    .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert!(err.to_string().starts_with("update ns/web: "), "{err}");

    server.store.lock().unwrap().intercept = None;
    server.clear();
    let err = create_or_update(&api, "web", |cm: &mut ConfigMap| {
        cm.metadata.name = Some("other".into());
    })
    .await
    .unwrap_err();
    assert!(matches!(err, Error::MutatedKey { .. }), "{err}");
    assert!(server.writes().is_empty());
}

#[tokio::test]
async fn server_side_apply_sends_an_apply_patch_with_manager_and_force() {
    let server = Server::start().await;
    let api = server.deployments();
    let mut desired = Deployment::default();
    desired.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    desired.metadata.managed_fields = Some(vec![Default::default()]);

    let applied = apply(&api, "web", &desired, "memcached-operator", true)
        .await
        .unwrap();
    assert_eq!(applied.metadata.name.as_deref(), Some("web"));
    let writes = server.writes();
    assert_eq!(writes.len(), 1);
    let (method, path, content_type, body) = &writes[0];
    assert_eq!(method, "PATCH");
    assert_eq!(
        path,
        "/apis/apps/v1/namespaces/ns/deployments/web?force=true&fieldManager=memcached-operator"
    );
    assert_eq!(content_type, "application/apply-patch+yaml");
    assert_eq!(body["apiVersion"], "apps/v1");
    assert_eq!(body["kind"], "Deployment");
    assert_eq!(
        body["metadata"],
        j!({"name": "web", "labels": {"app": "web"}})
    );

    server.clear();
    apply(&api, "web", &desired, "memcached-operator", false)
        .await
        .unwrap();
    assert_eq!(
        server.writes()[0].1,
        "/apis/apps/v1/namespaces/ns/deployments/web?fieldManager=memcached-operator"
    );
}

#[tokio::test]
async fn status_is_written_through_the_status_subresource() {
    let server = Server::start().await;
    let api = server.deployments();
    let mut d = Deployment::default();
    d.metadata.name = Some("web".into());
    api.create(&PostParams::default(), &d).await.unwrap();
    server.clear();

    let status = DeploymentStatus {
        replicas: Some(3),
        ..Default::default()
    };
    let updated = patch_status(&api, "web", &status).await.unwrap();
    assert_eq!(updated.status.unwrap().replicas, Some(3));
    let writes = server.writes();
    assert_eq!(
        writes[0].1,
        "/apis/apps/v1/namespaces/ns/deployments/web/status"
    );
    assert_eq!(writes[0].2, "application/merge-patch+json");
    assert_eq!(writes[0].3, j!({"status": {"replicas": 3}}));

    server.clear();
    let status = DeploymentStatus {
        ready_replicas: Some(2),
        ..Default::default()
    };
    apply_status(&api, "web", &status, "memcached-status", true)
        .await
        .unwrap();
    let writes = server.writes();
    assert_eq!(
        writes[0].1,
        "/apis/apps/v1/namespaces/ns/deployments/web/status?force=true&fieldManager=memcached-status"
    );
    assert_eq!(writes[0].2, "application/apply-patch+yaml");
    assert_eq!(
        writes[0].3,
        j!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "status": {"readyReplicas": 2}})
    );
    let stored = server
        .object("/apis/apps/v1/namespaces/ns/deployments/web")
        .unwrap();
    assert_eq!(stored["status"]["readyReplicas"], 2);
}

fn deployment_ref() -> Deployment {
    let mut d = Deployment::default();
    d.metadata.name = Some("web".into());
    d.metadata.namespace = Some("ns".into());
    d.metadata.uid = Some("u-web".into());
    d.metadata.resource_version = Some("7".into());
    d
}

const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/ns/events";

#[tokio::test]
async fn recorder_creates_then_aggregates_into_a_series() {
    let server = Server::start().await;
    let recorder = Recorder::new(server.client.clone(), "example.com/web-controller", "pod-0");
    let regarding = object_reference(&deployment_ref(), &());

    recorder
        .publish(
            &regarding,
            EventType::Normal,
            "Scaled",
            "Scale",
            "scaled to 3",
        )
        .await;
    let writes = server.writes();
    assert_eq!(writes.len(), 1);
    let (method, path, _, body) = &writes[0];
    assert_eq!((method.as_str(), path.as_str()), ("POST", EVENTS));
    let name = body["metadata"]["name"].as_str().unwrap().to_owned();
    assert!(name.starts_with("web."), "{name}");
    assert!(u128::from_str_radix(&name[4..], 16).is_ok(), "{name}");
    assert_eq!(body["metadata"]["namespace"], "ns");
    assert_eq!(body["type"], "Normal");
    assert_eq!(body["reason"], "Scaled");
    assert_eq!(body["action"], "Scale");
    assert_eq!(body["note"], "scaled to 3");
    assert_eq!(body["reportingController"], "example.com/web-controller");
    assert_eq!(body["reportingInstance"], "pod-0");
    assert_eq!(
        body["regarding"],
        j!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
            "namespace": "ns", "uid": "u-web", "resourceVersion": "7"})
    );
    assert!(body["eventTime"].is_string());
    assert!(body.get("series").is_none());

    // The second occurrence patches a series onto the first event.
    server.clear();
    recorder
        .publish(
            &regarding,
            EventType::Normal,
            "Scaled",
            "Scale",
            "scaled to 3 again",
        )
        .await;
    let writes = server.writes();
    assert_eq!(writes.len(), 1);
    let (method, path, content_type, body) = &writes[0];
    assert_eq!(method, "PATCH");
    assert_eq!(path, &format!("{EVENTS}/{name}"));
    assert_eq!(content_type, "application/merge-patch+json");
    assert_eq!(body["series"]["count"], 2);
    assert!(body["series"]["lastObservedTime"].is_string());
    let stored = server.object(&format!("{EVENTS}/{name}")).unwrap();
    assert_eq!(stored["series"]["count"], 2);
    assert_eq!(stored["note"], "scaled to 3");

    // Later ones are only counted until the series is written out.
    server.clear();
    recorder
        .publish(&regarding, EventType::Normal, "Scaled", "Scale", "")
        .await;
    recorder
        .publish(&regarding, EventType::Normal, "Scaled", "Scale", "")
        .await;
    assert!(server.writes().is_empty());
    recorder.flush().await;
    let writes = server.writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].3["series"]["count"], 4);
    assert_eq!(
        server.object(&format!("{EVENTS}/{name}")).unwrap()["series"]["count"],
        4
    );

    // After the flush the cache is empty: the next occurrence is new.
    server.clear();
    recorder
        .publish(&regarding, EventType::Normal, "Scaled", "Scale", "")
        .await;
    assert_eq!(server.writes()[0].0, "POST");
}

#[tokio::test]
async fn a_recorder_ends_series_and_forgets_singletons_within_its_window() {
    let server = Server::start().await;
    let window = Duration::from_secs(2);
    let recorder = Recorder::with_series_window(server.client.clone(), "ctrl", "ctrl-0", window);
    assert_eq!(recorder.series_window(), window);
    let regarding = object_reference(&deployment_ref(), &());
    let publish = |reason: &'static str| {
        let (recorder, regarding) = (recorder.clone(), regarding.clone());
        async move {
            recorder
                .publish(&regarding, EventType::Normal, reason, "Act", "")
                .await
        }
    };
    // A singleton, and a series of three whose last count is unwritten.
    publish("Once").await;
    for _ in 0..3 {
        publish("Thrice").await;
    }
    assert_eq!(recorder.cached_events(), 2);
    server.clear();

    // Within 7/6 of the window both are over: the series' final count is
    // written and nothing is held any more. (Swept once per window, as
    // client-go does, they would last two windows.)
    let started = std::time::Instant::now();
    while recorder.cached_events() > 0 {
        assert!(
            started.elapsed() < window * 3 / 2,
            "still holding {} events",
            recorder.cached_events()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let writes = server.writes();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0].0, "PATCH");
    assert_eq!(writes[0].3["series"]["count"], 3);

    // A repeat after the window is a new event.
    publish("Once").await;
    assert_eq!(server.writes()[1].0, "POST");
}

#[tokio::test]
async fn a_recorders_series_window_is_kept_within_a_second_and_a_day() {
    let server = Server::start().await;
    let client = server.client.clone();
    let short = Recorder::with_series_window(client.clone(), "c", "i", Duration::ZERO);
    assert_eq!(short.series_window(), Duration::from_secs(1));
    let long = Recorder::with_series_window(client, "c", "i", Duration::MAX);
    assert_eq!(long.series_window(), Duration::from_secs(24 * 60 * 60));
}

#[tokio::test]
async fn recorder_keys_events_like_client_go() {
    let server = Server::start().await;
    let recorder = Recorder::new(server.client.clone(), "ctrl", "ctrl-0");
    let d = deployment_ref();
    let regarding = object_reference(&d, &());
    recorder
        .publish(&regarding, EventType::Normal, "Scaled", "Scale", "")
        .await;
    // Another type, reason, action or object version: separate events.
    recorder
        .publish(&regarding, EventType::Warning, "Scaled", "Scale", "")
        .await;
    recorder
        .publish(&regarding, EventType::Normal, "Failed", "Scale", "")
        .await;
    recorder
        .publish(&regarding, EventType::Normal, "Scaled", "Other", "")
        .await;
    let mut newer = d.clone();
    newer.metadata.resource_version = Some("8".into());
    recorder
        .publish(
            &object_reference(&newer, &()),
            EventType::Normal,
            "Scaled",
            "Scale",
            "",
        )
        .await;
    let related = object_reference(&deployment_ref(), &());
    recorder
        .publish_related(
            &regarding,
            Some(&related),
            EventType::Normal,
            "Scaled",
            "Scale",
            "",
        )
        .await;
    let methods: Vec<String> = server.writes().into_iter().map(|w| w.0).collect();
    assert_eq!(methods, ["POST"; 6]);
}

#[tokio::test]
async fn recorder_handles_cluster_scoped_objects_and_long_notes() {
    let server = Server::start().await;
    let recorder = Recorder::new(server.client.clone(), "ctrl", "ctrl-0");
    let mut role = ClusterRole::default();
    role.metadata.name = Some("reader".into());
    let note = "é".repeat(2000);
    recorder
        .publish(
            &object_reference(&role, &()),
            EventType::Warning,
            "Denied",
            "Bind",
            &note,
        )
        .await;
    let writes = server.writes();
    assert_eq!(
        writes[0].1,
        "/apis/events.k8s.io/v1/namespaces/default/events"
    );
    let sent = writes[0].3["note"].as_str().unwrap();
    assert!(
        sent.len() <= 1024 && sent.ends_with(" ..."),
        "{}",
        sent.len()
    );
}

#[tokio::test]
async fn a_series_whose_event_vanished_is_created_again() {
    let server = Server::start().await;
    let recorder = Recorder::new(server.client.clone(), "ctrl", "ctrl-0");
    let regarding = object_reference(&deployment_ref(), &());
    recorder
        .publish(&regarding, EventType::Normal, "Scaled", "Scale", "n")
        .await;
    // The event expired on the server (events have a TTL).
    server.store.lock().unwrap().objects.clear();
    server.clear();
    recorder
        .publish(&regarding, EventType::Normal, "Scaled", "Scale", "n")
        .await;
    let writes = server.writes();
    let methods: Vec<&str> = writes.iter().map(|w| w.0.as_str()).collect();
    assert_eq!(methods, ["PATCH", "POST"]);
    assert_eq!(writes[1].3["series"]["count"], 2);
    assert!(writes[1].3["metadata"].get("resourceVersion").is_none());
}

#[tokio::test]
async fn recorder_errors_are_logged_not_retried_when_the_server_answered() {
    let server = Server::start().await;
    server.intercept(|r| {
        (r.method == http::Method::POST).then(|| status(422, "Invalid", "reason too long"))
    });
    let recorder = Recorder::new(server.client.clone(), "ctrl", "ctrl-0")
        .with_retry_interval(Duration::from_millis(5));
    let regarding = object_reference(&deployment_ref(), &());
    recorder
        .publish(&regarding, EventType::Normal, "Scaled", "Scale", "")
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.writes().len(), 1);

    // A nameless reference is refused before anything is sent.
    server.clear();
    recorder
        .publish(
            &Default::default(),
            EventType::Normal,
            "Scaled",
            "Scale",
            "",
        )
        .await;
    assert!(server.writes().is_empty());
}

#[tokio::test]
async fn recorder_retries_unexpected_answers_in_the_background() {
    let server = Server::start().await;
    let failures = Arc::new(AtomicUsize::new(2));
    let f = failures.clone();
    server.intercept(move |r| {
        if r.method == http::Method::POST
            && f.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            // A body that is not an Event (client-go retries
            // UnexpectedObjectError).
            return Some(client_support::text(201, "<html>proxy</html>"));
        }
        None
    });
    let recorder = Recorder::new(server.client.clone(), "ctrl", "ctrl-0")
        .with_retry_interval(Duration::from_millis(5));
    let regarding = object_reference(&deployment_ref(), &());
    recorder
        .publish(&regarding, EventType::Normal, "Scaled", "Scale", "")
        .await;
    for _ in 0..200 {
        if server.writes().len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let writes = server.writes();
    assert_eq!(writes.len(), 3);
    assert!(writes.iter().all(|w| w.0 == "POST"));
    // The same event each time.
    assert_eq!(
        writes[0].3["metadata"]["name"],
        writes[2].3["metadata"]["name"]
    );
    assert_eq!(server.store.lock().unwrap().objects.len(), 1);
}

/// The builder (`recorder.event(&obj).warning(..).note(..).publish()`)
/// writes what `publish_related` writes: the reference from the object
/// itself, the severity, reason, action and note where they belong; its
/// repeats become a series and its note is cut to 1024 bytes, the note
/// staying out of the key.
#[tokio::test]
async fn the_event_builder_names_each_part_and_aggregates_like_publish() {
    let server = Server::start().await;
    let recorder = Recorder::new(server.client.clone(), "ctrl", "ctrl-0");
    let deployment = deployment_ref();
    let mut owner = ConfigMap::default();
    owner.metadata.name = Some("settings".into());
    owner.metadata.namespace = Some("ns".into());
    owner.metadata.uid = Some("u-cm".into());
    let long_note = "x".repeat(3000);
    recorder
        .event(&deployment)
        .related(&owner)
        .warning("FailedScale", "Scale")
        .note(long_note.clone())
        .publish()
        .await;
    let writes = server.writes();
    assert_eq!(writes.len(), 1);
    let (method, path, _, body) = &writes[0];
    assert_eq!((method.as_str(), path.as_str()), ("POST", EVENTS));
    assert_eq!(body["type"], "Warning");
    assert_eq!(body["reason"], "FailedScale");
    assert_eq!(body["action"], "Scale");
    let note = body["note"].as_str().unwrap();
    assert_eq!(note.len(), 1024);
    assert!(note.ends_with(" ..."));
    assert_eq!(
        body["regarding"],
        serde_json::to_value(object_reference(&deployment, &())).unwrap()
    );
    assert_eq!(
        body["related"],
        j!({"apiVersion": "v1", "kind": "ConfigMap", "name": "settings",
            "namespace": "ns", "uid": "u-cm"})
    );
    let name = body["metadata"]["name"].as_str().unwrap().to_owned();

    // The same event with another note is a repeat: a series on the first.
    server.clear();
    recorder
        .event(&deployment)
        .related(&owner)
        .warning("FailedScale", "Scale")
        .note("another note")
        .publish()
        .await;
    let writes = server.writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].0, "PATCH");
    assert_eq!(writes[0].1, format!("{EVENTS}/{name}"));
    assert_eq!(writes[0].3["series"]["count"], 2);

    // The positional form of that event is the same event again.
    server.clear();
    recorder
        .publish_related(
            &object_reference(&deployment, &()),
            Some(&object_reference(&owner, &())),
            EventType::Warning,
            "FailedScale",
            "Scale",
            "",
        )
        .await;
    assert!(server.writes().is_empty(), "counted into the open series");
    recorder.flush().await;
    assert_eq!(server.writes()[0].3["series"]["count"], 3);

    // `normal` and a reference-built event; no note means none sent.
    server.clear();
    recorder
        .event_about(object_reference(&deployment, &()))
        .normal("Scaled", "Scale")
        .publish()
        .await;
    let writes = server.writes();
    assert_eq!(writes[0].0, "POST");
    assert_eq!(writes[0].3["type"], "Normal");
    assert_eq!(writes[0].3["reason"], "Scaled");
    assert!(writes[0].3.get("note").is_none());
    assert!(writes[0].3.get("related").is_none());
}
