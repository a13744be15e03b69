//! Replays every seed, every corpus input and every saved crash of every fuzz target
//! through its harness, unoptimized and uninstrumented, so what a fuzzer
//! found (and what its corpus covers) is checked by `cargo test`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use kubeforge_fuzz::{run, Limits, Target};

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != ".gitkeep"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn replay(target: Target) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut corpus = inputs(&root.join("seeds").join(target.name()));
    assert!(
        !corpus.is_empty(),
        "no seeds for {}: tests/fuzz/seeds/{} holds the hand-written inputs",
        target.name(),
        target.name()
    );
    corpus.extend(inputs(&root.join("corpus").join(target.name())));
    let crashes = inputs(&root.join("crashes").join(target.name()));
    let start = Instant::now();
    let mut findings = Vec::new();
    for file in corpus.iter().chain(&crashes) {
        let data = std::fs::read(file).expect("readable input");
        if let Err(finding) = run(target, &data, &Limits::REPLAY) {
            findings.push(format!("{}: {finding}", file.display()));
        }
    }
    eprintln!(
        "{}: {} corpus inputs and {} crashes replayed in {:?}",
        target.name(),
        corpus.len(),
        crashes.len(),
        start.elapsed()
    );
    assert!(findings.is_empty(), "findings:\n{}", findings.join("\n"));
}

#[test]
fn watch_stream_corpus_and_crashes_replay_clean() {
    replay(Target::WatchStream);
}

#[test]
fn kubeconfig_corpus_and_crashes_replay_clean() {
    replay(Target::Kubeconfig);
}

#[test]
fn status_corpus_and_crashes_replay_clean() {
    replay(Target::Status);
}

#[test]
fn selectors_corpus_and_crashes_replay_clean() {
    replay(Target::Selectors);
}

#[test]
fn requests_corpus_and_crashes_replay_clean() {
    replay(Target::Requests);
}

#[test]
fn crd_schema_corpus_and_crashes_replay_clean() {
    replay(Target::CrdSchema);
}

#[test]
fn every_target_has_a_replay_test() {
    let source = include_str!("replay.rs");
    for target in Target::ALL {
        assert!(
            source.contains(&format!("replay(Target::{target:?})")),
            "{} is not replayed",
            target.name()
        );
    }
}
