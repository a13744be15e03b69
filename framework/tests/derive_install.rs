//! The derive corpus installed into the in-process API server: every CRD
//! `#[derive(CustomResource)]` generates is accepted by kube-apiserver's
//! CRD validation and becomes Established; each valid sample is created and
//! read back with its defaults applied and its unknown fields pruned; each
//! invalid sample is refused with a 422 naming the field — CEL rules
//! included, since the server evaluates them. One server for the whole
//! corpus: the entries do not share names.

#[path = "../apiserver/tests/common/mod.rs"]
mod common;
#[path = "derive_corpus/mod.rs"]
mod corpus;
#[path = "../apiserver/tests/poll/mod.rs"]
mod poll;

use common::{Kube, CRDS};
use corpus::{entries, Entry};
use serde_json::{json, Value};

/// Where the objects of an entry's CRD live, at the sample's version.
fn collection(crd: &Value, api_version: &str) -> String {
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
    let ns = if crd["spec"]["scope"] == "Namespaced" {
        "namespaces/default/"
    } else {
        ""
    };
    format!("/apis/{api_version}/{ns}{plural}")
}

/// Whether the CRD serves the sample's version.
fn served(crd: &Value, api_version: &str) -> bool {
    let version = api_version.rsplit('/').next().unwrap_or_default();
    crd["spec"]["versions"].as_array().is_some_and(|vs| {
        vs.iter()
            .any(|v| v["name"] == version && v["served"] == true)
    })
}

async fn established(k: &Kube, name: &str) -> bool {
    poll::holds(async || {
        let crd = k.get(&format!("{CRDS}/{name}")).await.json();
        crd["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
    })
    .await
}

/// The sample under a name of its own (entries sharing a CRD share
/// `sample`).
fn named(sample: &Value, name: &str) -> Value {
    let mut s = sample.clone();
    s["metadata"]["name"] = json!(name);
    s
}

/// Installs, creates and reads back one entry; the problems found.
async fn check(k: &Kube, entry: &Entry, installed: &mut Vec<String>) -> Vec<String> {
    let mut problems = Vec::new();
    let crd = match (entry.crd)() {
        Ok(c) => serde_json::to_value(c).expect("CRD as JSON"),
        Err(e) => return vec![format!("no CRD: {e}")],
    };
    let crd_name = crd["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if !installed.contains(&crd_name) {
        let r = k.post(CRDS, &crd).await;
        if r.code() != 201 {
            return vec![format!(
                "CRD {crd_name} refused ({}): {}",
                r.code(),
                String::from_utf8_lossy(&r.body)
            )];
        }
        if !established(k, &crd_name).await {
            return vec![format!("CRD {crd_name} never Established")];
        }
        installed.push(crd_name);
    }
    let api_version = entry.valid["apiVersion"].as_str().unwrap_or_default();
    let path = collection(&crd, api_version);
    let valid = named(&entry.valid, entry.name);
    if !served(&crd, api_version) {
        // A version with `served: false` has no endpoint (kube-apiserver
        // serves only served versions), so nothing can be created there.
        let r = k.post(&path, &valid).await;
        if r.code() != 404 {
            problems.push(format!(
                "unserved {api_version}: expected 404, got {}",
                r.code()
            ));
        }
        return problems;
    }
    let r = k.post(&path, &valid).await;
    if r.code() != 201 {
        problems.push(format!(
            "valid sample refused ({}): {}",
            r.code(),
            String::from_utf8_lossy(&r.body)
        ));
    } else {
        let read = k.get(&format!("{path}/{}", entry.name)).await.json();
        for (pointer, expected) in &entry.defaults {
            if read.pointer(pointer) != Some(expected) {
                problems.push(format!(
                    "default at {pointer}: expected {expected}, read {:?}",
                    read.pointer(pointer)
                ));
            }
        }
        for pointer in &entry.pruned {
            if let Some(v) = read.pointer(pointer) {
                problems.push(format!("{pointer} not pruned: {v}"));
            }
        }
        if let Err(e) = (entry.round_trip)(&read) {
            problems.push(format!("read-back does not decode as the Rust type: {e}"));
        }
    }
    if let Some((invalid, field)) = &entry.invalid {
        let bad_name = format!("{}-bad", entry.name);
        let api_version = invalid["apiVersion"].as_str().unwrap_or_default();
        let r = k
            .post(&collection(&crd, api_version), &named(invalid, &bad_name))
            .await;
        let status = r.json();
        let message = status["message"].as_str().unwrap_or_default();
        let causes: Vec<&str> = status["details"]["causes"]
            .as_array()
            .map(|cs| cs.iter().filter_map(|c| c["field"].as_str()).collect())
            .unwrap_or_default();
        if r.code() != 422 {
            problems.push(format!(
                "invalid sample: expected 422, got {}: {status}",
                r.code()
            ));
        } else if !causes.contains(field) || !message.contains(&format!("{field}: ")) {
            problems.push(format!(
                "invalid sample: expected an error on {field}{}, got {status}",
                if entry.invalid_by_cel { " (CEL)" } else { "" }
            ));
        }
    }
    problems
}

#[tokio::test]
async fn every_corpus_crd_installs_and_its_samples_behave() {
    let k = Kube::start().await;
    let mut installed = Vec::new();
    let mut failures = Vec::new();
    let mut cel = 0;
    let all = entries();
    for entry in &all {
        cel += usize::from(entry.invalid_by_cel);
        for p in check(&k, entry, &mut installed).await {
            failures.push(format!("{}: {p}", entry.name));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(cel >= 2, "CEL-rejected samples are checked too");
    // Everything is listed back, every CRD served in discovery.
    let crds = k.get(CRDS).await.json();
    assert_eq!(
        crds["items"].as_array().map(Vec::len),
        Some(installed.len())
    );
    let groups = k.get("/apis").await.json();
    for crd in crds["items"].as_array().into_iter().flatten() {
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        assert!(
            groups["groups"]
                .as_array()
                .is_some_and(|gs| gs.iter().any(|g| g["name"] == group)),
            "{group} in discovery"
        );
    }
}
