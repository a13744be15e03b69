//! Checks the derive corpus without a server: CRD snapshots, the structural
//! rules on every schema node, the CRDs as `apiextensions.k8s.io/v1` types,
//! samples that round-trip through the Rust types, and a model of the
//! apiserver's prune/default/validate steps on the samples.
//!
//! `KUBEFORGE_UPDATE_SNAPSHOTS=1 cargo test -p kubeforge --test derive_corpus`
//! rewrites the snapshots.

#[path = "derive_corpus/mod.rs"]
mod corpus;
#[path = "derive_corpus/validate.rs"]
mod validate;

use std::path::PathBuf;

use corpus::{entries, remove, Entry};
use kubeforge::crd::yaml::{to_yaml, YamlOptions};
use kubeforge::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubeforge::serde_json::{self, Value};

fn snapshot_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/derive_corpus/snapshots")
        .join(format!("{name}.yaml"))
}

fn crd_of(entry: &Entry) -> CustomResourceDefinition {
    match (entry.crd)() {
        Ok(crd) => crd,
        Err(e) => panic!("{}: {e}", entry.name),
    }
}

#[test]
fn corpus_has_at_least_25_spec_types() {
    let names: Vec<&str> = entries().iter().map(|e| e.name).collect();
    assert!(names.len() >= 25, "{names:?}");
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "entry names must be unique");
}

#[test]
fn corpus_crds_match_snapshots() {
    let update = std::env::var_os("KUBEFORGE_UPDATE_SNAPSHOTS").is_some();
    let mut stale = Vec::new();
    for entry in entries() {
        let yaml = to_yaml(&crd_of(&entry), &YamlOptions::default()).expect("yaml");
        let path = snapshot_path(entry.name);
        if update {
            std::fs::write(&path, &yaml).expect("write snapshot");
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(expected) if expected == yaml => {}
            Ok(_) => stale.push(format!("{} differs", path.display())),
            Err(_) => stale.push(format!("{} is missing", path.display())),
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:#?}\nrun with KUBEFORGE_UPDATE_SNAPSHOTS=1 to rewrite them"
    );
}

#[test]
fn corpus_snapshots_parse_as_crds_equal_to_the_derived_ones() {
    for entry in entries() {
        let yaml = to_yaml(&crd_of(&entry), &YamlOptions::default()).expect("yaml");
        let parsed = kubeforge::crd::yaml::from_yaml(&yaml).expect("the snapshot is a CRD");
        assert_eq!(
            serde_json::to_value(&parsed).unwrap(),
            serde_json::to_value(crd_of(&entry)).unwrap(),
            "{}: the YAML does not read back as the same CRD",
            entry.name
        );
    }
}

#[test]
fn corpus_crds_are_structural() {
    for entry in entries() {
        let crd = crd_of(&entry);
        let errors = kubeforge::crd::check_crd(&crd);
        assert!(errors.is_empty(), "{}: {errors:#?}", entry.name);
        assert_eq!(
            crd.spec.versions.iter().filter(|v| v.storage).count(),
            1,
            "{}: exactly one storage version",
            entry.name
        );
    }
}

fn schema_for(crd: &CustomResourceDefinition, api_version: &str) -> Value {
    let version = api_version.rsplit('/').next().unwrap_or_default();
    let v = crd
        .spec
        .versions
        .iter()
        .find(|v| v.name == version)
        .expect("sample version in the CRD");
    serde_json::to_value(
        v.schema
            .as_ref()
            .unwrap()
            .open_api_v3_schema
            .as_ref()
            .unwrap(),
    )
    .unwrap()
}

fn api_version(sample: &Value) -> &str {
    sample["apiVersion"].as_str().unwrap_or_default()
}

#[test]
fn corpus_valid_samples_round_trip_through_the_rust_types() {
    for entry in entries() {
        let mut sample = entry.valid.clone();
        for p in &entry.pruned {
            remove(&mut sample, p);
        }
        let once = (entry.round_trip)(&sample).unwrap_or_else(|e| panic!("{}: {e}", entry.name));
        let twice = (entry.round_trip)(&once).unwrap_or_else(|e| panic!("{}: {e}", entry.name));
        assert_eq!(once, twice, "{}: encoding is not stable", entry.name);
        assert_eq!(once["apiVersion"], sample["apiVersion"], "{}", entry.name);
        assert_eq!(once["kind"], sample["kind"], "{}", entry.name);
        assert!(
            once.get("status").is_none(),
            "{}: status None is skipped",
            entry.name
        );
        // Everything the sample says survives the trip.
        assert_subset(&sample["spec"], &once["spec"], entry.name, "spec");
    }
}

fn assert_subset(expected: &Value, actual: &Value, name: &str, path: &str) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, v) in e {
                if v.is_null() && !a.contains_key(k) {
                    continue;
                }
                let Some(av) = a.get(k) else {
                    panic!("{name}: {path}.{k} lost in the round trip");
                };
                assert_subset(v, av, name, &format!("{path}.{k}"));
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            assert_eq!(e.len(), a.len(), "{name}: {path}");
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                assert_subset(ev, av, name, &format!("{path}[{i}]"));
            }
        }
        (Value::Number(e), Value::Number(a)) => {
            assert_eq!(e.as_f64(), a.as_f64(), "{name}: {path}");
        }
        _ => assert_eq!(expected, actual, "{name}: {path}"),
    }
}

#[test]
fn corpus_valid_samples_are_accepted_pruned_and_defaulted() {
    for entry in entries() {
        let crd = crd_of(&entry);
        let schema = schema_for(&crd, api_version(&entry.valid));
        let mut object = entry.valid.clone();
        let errors = validate::create(&schema, &mut object);
        assert!(
            errors.is_empty(),
            "{}: valid sample rejected: {errors:?}",
            entry.name
        );
        for p in &entry.pruned {
            assert!(
                object.pointer(p).is_none(),
                "{}: {p} not pruned",
                entry.name
            );
        }
        for (p, expected) in &entry.defaults {
            assert_eq!(
                object.pointer(p),
                Some(expected),
                "{}: default at {p}",
                entry.name
            );
        }
        // The created object decodes as the Rust type.
        (entry.round_trip)(&object).unwrap_or_else(|e| panic!("{}: {e}", entry.name));
    }
}

#[test]
fn corpus_invalid_samples_are_rejected_naming_the_field() {
    let mut checked = 0;
    for entry in entries() {
        let Some((invalid, field)) = &entry.invalid else {
            continue;
        };
        if entry.invalid_by_cel {
            // Only a server evaluates CEL; the rule must at least be there.
            let crd = serde_json::to_string(&crd_of(&entry)).unwrap();
            assert!(crd.contains("x-kubernetes-validations"), "{}", entry.name);
            continue;
        }
        let crd = crd_of(&entry);
        let schema = schema_for(&crd, api_version(invalid));
        let mut object = invalid.clone();
        let errors = validate::create(&schema, &mut object);
        assert!(
            errors.iter().any(|(f, _)| f == field),
            "{}: expected an error on {field}, got {errors:?}",
            entry.name
        );
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} invalid samples checked");
}
