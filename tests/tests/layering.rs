//! Layering by construction: imports reach down, never around in a loop.
//! The API server's files follow a request down (server, handlers, the
//! write path, the shared state, the engine below), so no file of it may
//! reach a file that reaches back.

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
