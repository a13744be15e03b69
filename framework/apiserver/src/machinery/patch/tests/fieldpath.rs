//! Field paths, set algebra and the `fieldsV1` encoding, after
//! structured-merge-diff's `fieldpath/{set,serialize,serialize-pe,path}_test.go`.

use serde_json::json;

use super::super::{FieldSet, FieldSetError, Path, PathElement};

fn f(name: &str) -> PathElement {
    PathElement::field(name)
}

fn k(name: &str) -> PathElement {
    PathElement::key([("name".to_string(), json!(name))])
}

#[test]
fn path_elements_serialize_like_structured_merge_diff() {
    assert_eq!(f("spec").to_key_string(), "f:spec");
    assert_eq!(k("nginx").to_key_string(), r#"k:{"name":"nginx"}"#);
    let port = PathElement::key([
        ("protocol".to_string(), json!("TCP")),
        ("containerPort".to_string(), json!(80)),
    ]);
    // Key fields are sorted by name.
    assert_eq!(
        port.to_key_string(),
        r#"k:{"containerPort":80,"protocol":"TCP"}"#
    );
    assert_eq!(
        PathElement::Value(json!("foo")).to_key_string(),
        r#"v:"foo""#
    );
    assert_eq!(PathElement::Value(json!(3)).to_key_string(), "v:3");
    assert_eq!(PathElement::Index(2).to_key_string(), "i:2");
    for pe in [
        f("a"),
        k("b"),
        port,
        PathElement::Value(json!(true)),
        PathElement::Index(7),
    ] {
        assert_eq!(PathElement::parse(&pe.to_key_string()), Ok(Some(pe)));
    }
}

#[test]
fn path_element_parse_errors_and_unknown_kinds() {
    assert!(matches!(
        PathElement::parse(""),
        Err(FieldSetError::TooShort(_))
    ));
    assert!(matches!(
        PathElement::parse("f"),
        Err(FieldSetError::TooShort(_))
    ));
    assert!(matches!(
        PathElement::parse("fx"),
        Err(FieldSetError::MissingColon(_))
    ));
    assert!(matches!(
        PathElement::parse("k:[1]"),
        Err(FieldSetError::BadElement(_))
    ));
    assert!(matches!(
        PathElement::parse("k:{"),
        Err(FieldSetError::BadElement(_))
    ));
    assert!(matches!(
        PathElement::parse("i:x"),
        Err(FieldSetError::BadElement(_))
    ));
    assert!(matches!(
        PathElement::parse("v:{"),
        Err(FieldSetError::BadElement(_))
    ));
    // A future element kind is skipped, not an error.
    assert_eq!(PathElement::parse("z:whatever"), Ok(None));
    // Field names may contain anything, including colons.
    assert_eq!(PathElement::parse("f:a:b"), Ok(Some(f("a:b"))));
}

#[test]
fn path_elements_order_fields_keys_values_indexes() {
    let mut elements = vec![
        PathElement::Index(0),
        PathElement::Value(json!("a")),
        k("x"),
        f("b"),
        f("a"),
        PathElement::Value(json!(1)),
    ];
    elements.sort();
    assert_eq!(
        elements,
        vec![
            f("a"),
            f("b"),
            k("x"),
            PathElement::Value(json!(1)),
            PathElement::Value(json!("a")),
            PathElement::Index(0),
        ]
    );
    // Numbers compare numerically, integers and floats alike.
    assert_eq!(PathElement::Value(json!(1)), PathElement::Value(json!(1.0)));
}

#[test]
fn paths_print_as_in_conflict_messages() {
    let p = Path(vec![f("spec"), f("containers"), k("c"), f("image")]);
    assert_eq!(p.to_string(), r#".spec.containers[name="c"].image"#);
    let port = PathElement::key([
        ("containerPort".to_string(), json!(80)),
        ("protocol".to_string(), json!("TCP")),
    ]);
    assert_eq!(
        Path(vec![f("ports"), port]).to_string(),
        r#".ports[containerPort=80,protocol="TCP"]"#
    );
    assert_eq!(
        Path(vec![
            f("metadata"),
            f("finalizers"),
            PathElement::Value(json!("x"))
        ])
        .to_string(),
        r#".metadata.finalizers[="x"]"#
    );
    assert_eq!(
        Path(vec![f("args"), PathElement::Index(1)]).to_string(),
        ".args[1]"
    );
}

fn set(paths: &[&[PathElement]]) -> FieldSet {
    FieldSet::from_paths(paths.iter().copied())
}

#[test]
fn set_insert_has_and_len() {
    let s = set(&[&[f("a")], &[f("a"), f("b")], &[f("c"), k("x"), f("d")]]);
    assert!(s.has(&[f("a")]));
    assert!(s.has(&[f("a"), f("b")]));
    assert!(!s.has(&[f("c")]), "a prefix is not a member");
    assert!(s.has(&[f("c"), k("x"), f("d")]));
    assert!(!s.has(&[]));
    assert_eq!(s.len(), 3);
    let mut empty = FieldSet::new();
    empty.insert(&[]);
    assert!(empty.is_empty(), "the whole object is never tracked");
}

#[test]
fn set_algebra_follows_structured_merge_diff() {
    let a = set(&[&[f("a")], &[f("a"), f("x")], &[f("b"), f("y")], &[f("c")]]);
    let b = set(&[&[f("a"), f("x")], &[f("b")], &[f("c")], &[f("d")]]);
    assert_eq!(
        a.union(&b),
        set(&[
            &[f("a")],
            &[f("a"), f("x")],
            &[f("b")],
            &[f("b"), f("y")],
            &[f("c")],
            &[f("d")]
        ])
    );
    assert_eq!(a.intersection(&b), set(&[&[f("a"), f("x")], &[f("c")]]));
    // parent - child = parent, child - parent = child.
    assert_eq!(a.difference(&b), set(&[&[f("a")], &[f("b"), f("y")]]));
    // A member of the right side removes everything below it.
    assert_eq!(a.recursive_difference(&b), set(&[&[f("a")]]));
    assert!(a.difference(&a).is_empty());
    assert!(a.intersection(&FieldSet::new()).is_empty());
}

#[test]
fn set_paths_iterate_members_before_children() {
    let s = set(&[
        &[f("b"), f("z")],
        &[f("a")],
        &[f("b")],
        &[f("b"), f("c"), f("d")],
    ]);
    let printed: Vec<String> = s.paths().iter().map(ToString::to_string).collect();
    assert_eq!(printed, vec![".a", ".b", ".b.z", ".b.c.d"]);
}

#[test]
fn fields_v1_round_trips_a_real_entry() {
    let fields = json!({
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"nginx\"}": {
                    ".": {},
                    "f:image": {},
                    "f:name": {},
                    "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                }
            }}}
        },
        "f:metadata2": {"f:finalizers": {".": {}, "v:\"a\"": {}}}
    });
    let s = FieldSet::from_fields_v1(&fields).unwrap();
    assert!(s.has(&[f("metadata"), f("labels")]));
    assert!(s.has(&[f("metadata"), f("labels"), f("app")]));
    assert!(!s.has(&[f("spec")]));
    assert!(s.has(&[f("spec"), f("selector")]));
    assert!(s.has(&[
        f("spec"),
        f("template"),
        f("spec"),
        f("containers"),
        k("nginx")
    ]));
    assert!(s.has(&[
        f("metadata2"),
        f("finalizers"),
        PathElement::Value(json!("a"))
    ]));
    assert_eq!(s.to_fields_v1(), fields);
}

#[test]
fn fields_v1_decoding_rules() {
    // A node with only "." is a member leaf, as is `{}`; unknown kinds drop.
    let s = FieldSet::from_fields_v1(&json!({"f:a": {".": {}}, "f:b": {}, "z:c": {}})).unwrap();
    assert_eq!(s, set(&[&[f("a")], &[f("b")]]));
    assert_eq!(FieldSet::from_fields_v1(&json!(null)), Ok(FieldSet::new()));
    assert!(FieldSet::from_fields_v1(&json!([])).is_err());
    assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
    assert!(FieldSet::from_fields_v1(&json!({"x": {}})).is_err());
}
