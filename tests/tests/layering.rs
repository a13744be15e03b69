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

/// The API server's wings, top down, as `lib.rs`'s "Layout" lists them:
/// each reaches only the wings after it (`http` and `controllers` are
/// peers: neither reaches the other).
const SERVER_WINGS: [&str; 10] = [
    "server",
    "http",
    "controllers",
    "objects",
    "admission",
    "registry",
    "auth",
    "apiextensions",
    "storage",
    "machinery",
];

/// The server's top-level modules are its ten wings, each folded into one
/// node, and every import between two of them runs down the list: no
/// wing reaches one above it, with no exception.
#[test]
fn the_api_servers_wings_reach_only_down() {
    let graph = Graph::of_crate(&workspace_root().join("framework/apiserver/src"));
    let tops: BTreeSet<String> = graph
        .modules
        .iter()
        .filter_map(|m| m.first().cloned())
        .collect();
    let wings: BTreeSet<String> = SERVER_WINGS.iter().map(|w| w.to_string()).collect();
    assert_eq!(tops, wings, "the top-level modules are not the ten wings");
    let rank = |m: &Vec<String>| -> Option<usize> {
        let top = m.first()?;
        SERVER_WINGS.iter().position(|w| w == top)
    };
    let mut upward = Vec::new();
    for (from, targets) in &graph.edges {
        let Some(a) = rank(from) else { continue };
        for to in targets {
            let Some(b) = rank(to) else { continue };
            if b < a {
                upward.push(format!(
                    "{} -> {}",
                    kubeforge_e2e::imports::display(from),
                    kubeforge_e2e::imports::display(to)
                ));
            }
        }
    }
    assert_eq!(upward, Vec::<String>::new(), "imports running up the wings");
}

/// `lib.rs` describes the wings it has, in the order the test above holds.
#[test]
fn the_api_servers_layout_paragraph_names_its_wings_in_order() {
    let lib = std::fs::read_to_string(workspace_root().join("framework/apiserver/src/lib.rs"))
        .expect("lib.rs");
    let layout = lib
        .split("//! # Layout")
        .nth(1)
        .expect("a Layout section in lib.rs");
    let named: Vec<&str> = layout
        .lines()
        .filter_map(|l| l.strip_prefix("//! - "))
        .filter_map(|l| {
            let l = l.strip_prefix('[').unwrap_or(l);
            l.strip_prefix('`')?.split('`').next()
        })
        .collect();
    assert_eq!(named, SERVER_WINGS);
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
        "sharding",
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
    // Sharding sits between the cache and the loop: the loop admits
    // through its gate, and it knows nothing of the loop or the manager.
    assert!(reaches("controller", "sharding"), "{edges:#?}");
    assert!(!reaches("sharding", "controller"), "{edges:#?}");
    assert!(!reaches("sharding", "manager"), "{edges:#?}");

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

/// Per-kind behaviour lives in the server's registry and nowhere else:
/// outside `registry/`, no code decides what to do by comparing or
/// matching a resource's group or plural against a string (it asks the
/// registry: `def.is(BuiltinKind::Pod)`, the kind's table entry).
#[test]
fn only_the_registry_dispatches_on_a_kinds_group_or_plural() {
    let src = workspace_root().join("framework/apiserver/src");
    let mut found = Vec::new();
    for file in kubeforge_e2e::imports::rust_files(&src) {
        let rel = file.strip_prefix(&src).expect("under src");
        if rel.starts_with("registry") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("readable source");
        let code = kubeforge_e2e::imports::code_of(&text);
        for (n, line) in code.lines().enumerate() {
            if dispatches_on_kind_name(line) {
                found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert_eq!(
        found,
        Vec::<String>::new(),
        "per-kind dispatch outside the registry"
    );
}

/// Whether a line compares a group or plural with a string literal
/// (`def.plural == "pods"`, `"apps" != group`), or matches on one
/// (`match (def.group.as_str(), def.plural.as_str())`,
/// `matches!(def.plural.as_str(), …)`).
fn dispatches_on_kind_name(line: &str) -> bool {
    // A group or plural as a field (`def.plural`, `attrs.def.group`) or a
    // binding named `plural`; a bare `group` is as often a CRD's own
    // `spec.group` being validated.
    let names_kind = |s: &str| {
        let token: String = s
            .trim()
            .trim_end_matches(".as_str()")
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '.'))
            .collect::<String>()
            .chars()
            .rev()
            .collect();
        token == "plural"
            || [".plural", ".group", ".resource", ".api_group"]
                .iter()
                .any(|field| token.ends_with(field))
    };
    let compares = ["==", "!="].iter().any(|op| {
        line.match_indices(op).any(|(i, _)| {
            let (left, right) = (&line[..i], line[i + op.len()..].trim_start());
            (right.starts_with('"') && names_kind(left))
                || (left.trim_end().ends_with('"') && {
                    let first: String = right
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '.'))
                        .collect();
                    names_kind(&first)
                })
        })
    });
    let matched = |head: &str| {
        head.contains(".plural") || head.contains(".group") || {
            head.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == "plural")
        }
    };
    let trimmed = line.trim_start();
    compares
        || trimmed
            .strip_prefix("match ")
            .is_some_and(|rest| matched(rest.split('{').next().unwrap_or("")))
        || line
            .split("matches!(")
            .nth(1)
            .is_some_and(|rest| matched(rest.split(',').next().unwrap_or("")))
}

#[test]
fn the_kind_name_detector_sees_comparisons_and_matches_only() {
    for line in [
        r#"if def.plural == "pods" {"#,
        r#"    || def.group != "apps""#,
        r#"let x = "namespaces" == def.plural;"#,
        r#"match (def.group.as_str(), def.plural.as_str()) {"#,
        r#"matches!(def.plural.as_str(), "roles" | "clusterroles")"#,
        r#"match (group, plural) {"#,
    ] {
        assert!(dispatches_on_kind_name(line), "{line}");
    }
    for line in [
        r#"if def.is(BuiltinKind::Pod) {"#,
        r#"let res = ResKey::new("", "serviceaccounts");"#,
        r#"shared.registry().get(GROUP, "v1", "clusterroles")"#,
        r#"if name == "kube-system" {"#,
        r#"let protected = group == "k8s.io""#,
        r#"match shared.registry().by_kind(group, version, kind) {"#,
    ] {
        assert!(!dispatches_on_kind_name(line), "{line}");
    }
}
