//! Layering by construction: imports reach down, never around in a loop.
//! The API server's files follow a request down (server, handlers, the
//! write path, the shared state, the engine below), so no file of it may
//! reach a file that reaches back.

use std::collections::{BTreeMap, BTreeSet};

use kubeforge_e2e::imports::Graph;
use kubeforge_e2e::workspace_root;

#[test]
fn the_api_servers_files_reach_only_down() {
    let graph = Graph::of_crate(&workspace_root().join("framework/apiserver/src"));
    assert!(
        graph.modules.len() > 50,
        "the server's sources were not found: {:?}",
        graph.modules
    );
    assert!(
        graph.edges.values().map(|e| e.len()).sum::<usize>() > 100,
        "too few imports found to trust the check"
    );
    assert_eq!(graph.loops(), Vec::<Vec<String>>::new());
}

/// The runtime's top-level modules, each folded into one node: which reach
/// which. The crate root and the prelude, which re-export everything, are
/// left out (`crate::Client` names the client through the root).
fn runtime_folders() -> (BTreeSet<String>, BTreeMap<String, BTreeSet<String>>) {
    let graph = Graph::of_crate(&workspace_root().join("framework/src"));
    let fold = |m: &Vec<String>| -> Option<String> {
        let top = m.first()?;
        (top != "prelude").then(|| top.clone())
    };
    let folders: BTreeSet<String> = graph.modules.iter().filter_map(fold).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in &graph.edges {
        let Some(from) = fold(from) else { continue };
        for to in targets.iter().filter_map(fold) {
            if to != from {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    (folders, edges)
}

/// The runtime's folders reach only down: the client below the cache, the
/// reconcile helpers (cached client, finalizers, owner references,
/// conditions) below the controller loop, serving below the manager. No
/// two folders reach each other, directly or around a loop.
#[test]
fn the_runtimes_folders_reach_only_down() {
    let (folders, edges) = runtime_folders();
    for expected in [
        "cache",
        "client",
        "controller",
        "events",
        "manager",
        "reconcile",
        "serve",
        "workqueue",
    ] {
        assert!(
            folders.contains(expected),
            "no {expected} in the runtime: {folders:?}"
        );
    }
    let reaches = |from: &str, to: &str| edges.get(from).is_some_and(|t| t.contains(to));
    // The loop uses the helpers (the cached client, finalizers), never the
    // other way round.
    assert!(reaches("controller", "reconcile"), "{edges:#?}");
    assert!(!reaches("reconcile", "controller"), "{edges:#?}");
    assert!(reaches("manager", "serve"), "{edges:#?}");
    assert!(!reaches("serve", "manager"), "{edges:#?}");
    assert!(!reaches("client", "cache"), "{edges:#?}");
    assert!(!reaches("events", "controller"), "{edges:#?}");

    let mut graph = Graph::default();
    for folder in &folders {
        graph.modules.insert(vec![folder.clone()]);
    }
    for (from, targets) in &edges {
        graph.edges.insert(
            vec![from.clone()],
            targets.iter().map(|t| vec![t.clone()]).collect(),
        );
    }
    assert_eq!(graph.loops(), Vec::<Vec<String>>::new(), "{edges:#?}");
}

/// Inside the controller loop and the reconcile helpers, no file reaches a
/// file that reaches back.
#[test]
fn the_loop_and_the_helpers_have_no_import_loop() {
    let graph = Graph::of_crate(&workspace_root().join("framework/src"));
    let loops: Vec<Vec<String>> = graph
        .loops()
        .into_iter()
        .filter(|l| {
            l.iter()
                .any(|m| m.starts_with("controller") || m.starts_with("reconcile"))
        })
        .collect();
    assert_eq!(loops, Vec::<Vec<String>>::new());
}
