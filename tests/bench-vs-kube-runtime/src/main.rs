//! kubeforge's cache and controller measured side by side with kube-runtime
//! 5's, against the in-process API server (`kubeforge-apiserver`).
//!
//! This process starts the server, fills it with ConfigMaps of about
//! 1.3 KiB as served (managedFields included), and runs every measurement
//! in a fresh child process of this same binary, one side at a time, turn
//! and turn about, so each client has its own allocator counts and neither
//! shares a heap with the server. Per size it prints, for both and as a
//! ratio:
//!
//! - time from start to synced, managedFields kept and stripped;
//! - live heap per cached object once synced, and the peak heap during the
//!   initial list, per object, kept and stripped;
//! - start to every object reconciled by a controller, 1 and 4 workers;
//!
//! and beside them the floors: one HTTPS GET of the list's bytes, a
//! `serde_json` decode of them into the typed list, and the decoded
//! object's own heap. Then the cache figures again for running Pods (about
//! 4 KiB as served, `--pods`, default 10k): objects whose lists a decoder
//! must size. Each figure is the median of `--runs` (default 3).
//!
//! Run: `cargo run --release -p kubeforge-bench-vs-kube-runtime --
//! --objects 10000,100000`. With `KUBEFORGE_BENCH_FIFO_QUEUE=1` in the
//! environment, kubeforge's controller runs on the FIFO queue instead of
//! the default priority queue (the reconcile figures' opt-out arm).

mod alloc;
mod child;
mod kube_side;
mod kubeforge_side;
mod orchestrate;
mod report;
mod workload;

use std::process::ExitCode;

/// Tracks live and peak heap for the figures; see [`alloc`].
#[global_allocator]
static HEAP: alloc::Heap = alloc::heap();

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some(child::COMMAND) => child::main(&args[1..]),
        _ => orchestrate::main(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
