//! The operator under exactly the RBAC it ships: it runs as its service
//! account, bound to the roles its own `manifests` derive, on a server
//! that enforces what those roles exist for (RBAC, and the
//! ownerReferences check behind `memcacheds/finalizers`), with the
//! workload controllers bringing its pods up. After a full reconcile and
//! delete cycle the server's permission audit must show no request denied
//! (no rule missing), no granted rule unused and no granted verb unused
//! (no over-privilege), but for the two verbs one replica's cycle may not
//! exercise; and the same run without one derived verb must fail with the
//! 403 named.

use std::time::Duration;

use kubeforge::app::Running;
use kubeforge::k8s_openapi::api::apps::v1::Deployment;
use kubeforge::kube_core::params::DeleteParams;
use kubeforge::prelude::*;
use kubeforge::testing::{assert_least_privilege, eventually, operator_user, ApiServer, Workloads};
use memcached_operator::status::AVAILABLE;
use memcached_operator::{app, Flags, Memcached, MemcachedSpec};

const NS: &str = "default";
const DEADLINE: Duration = Duration::from_secs(30);

async fn server() -> ApiServer {
    ApiServer::builder()
        .workloads(Workloads::fast())
        .owner_references_permission_enforcement(true)
        .start()
        .await
        .expect("API server starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_and_delete_cycle_uses_exactly_the_derived_rbac() {
    cycle_under_derived_rbac(Flags::default()).await;
}

/// `--sharded` adds what the ring needs (its Leases: read, listed,
/// created, renewed, and deleted on leaving) and nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_replica_uses_exactly_the_derived_rbac() {
    cycle_under_derived_rbac(Flags {
        sharded: true,
        ..Flags::default()
    })
    .await;
}

async fn cycle_under_derived_rbac(flags: Flags) {
    let server = server().await;
    let op: Running = app()
        .start_as_operator(&server, flags)
        .await
        .expect("the operator starts as its service account");
    let memcacheds: Api<Memcached> = Api::namespaced(op.client().clone(), NS);
    let deployments: Api<Deployment> = Api::namespaced(op.client().clone(), NS);
    memcacheds
        .create(
            &PostParams::default(),
            &Memcached::new("live", MemcachedSpec::with_size(2)),
        )
        .await
        .expect("create Memcached");
    eventually("Available=True from running pods", DEADLINE, || async {
        let mc = memcacheds.get("live").await.expect("get Memcached");
        let available = mc
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == AVAILABLE))
            .is_some_and(|c| c.status == "True");
        available.then_some(())
    })
    .await;
    memcacheds
        .delete("live", &DeleteParams::default())
        .await
        .expect("delete Memcached");
    // The operator's finalizer goes, then the Memcached, then (the
    // garbage collector's work) its Deployment.
    eventually(
        "the Memcached and its Deployment gone",
        DEADLINE,
        || async {
            let mc = memcacheds.get_opt("live").await.expect("get Memcached");
            let d = deployments.get_opt("live").await.expect("get Deployment");
            (mc.is_none() && d.is_none()).then_some(())
        },
    )
    .await;
    op.stop().await.expect("the operator stops cleanly");

    let audit = server.permission_audit(&operator_user());
    println!("{audit}");
    // No rule missing, no rule or verb granted and never used, but for
    // the two one replica may not exercise (`NOT_EXERCISED_BY_ONE_REPLICA`).
    assert_least_privilege(&audit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_one_derived_verb_the_operator_fails_with_the_403_named() {
    let server = server().await;
    let op = app()
        .start_as_operator_with(&server, Flags::default(), |rbac| {
            assert!(rbac.remove_verb("memcacheds", "list"), "derived")
        })
        .await
        .expect("the operator starts as its service account");
    // Its cache cannot list Memcacheds: the manager stops, at once, with
    // kube-apiserver's 403 in its error.
    let ended = tokio::time::timeout(DEADLINE, op.wait())
        .await
        .expect("the operator stops on its own");
    let error = ended.expect_err("the operator fails").to_string();
    let user = operator_user();
    let denial = format!(
        r#"memcacheds.cache.example.com is forbidden: User "{user}" cannot list resource "memcacheds" in API group "cache.example.com" at the cluster scope"#
    );
    assert!(error.contains(&denial), "{error}");
    assert!(
        error.contains("forbidden: cannot list memcacheds"),
        "{error}"
    );
    // The audit names the rule to add back.
    let audit = server.permission_audit(&user);
    let denied: Vec<String> = audit.denied.iter().map(ToString::to_string).collect();
    assert_eq!(
        denied,
        ["# cluster-wide (a ClusterRole)\n- apiGroups: [\"cache.example.com\"]\n  resources: [\"memcacheds\"]\n  verbs: [\"list\"]\n"],
        "{audit}"
    );
}
