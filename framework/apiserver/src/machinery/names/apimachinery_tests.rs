//! The cases of apimachinery's name validation tests (release-1.33),
//! ported as tables: `staging/src/k8s.io/apimachinery/pkg/util/validation/validation_test.go`
//! (`TestIsDNS1123Label`, `TestIsDNS1123Subdomain`, `TestIsDNS1035Label`,
//! `TestIsQualifiedName`, `TestIsValidLabelValue`),
//! `pkg/api/validation/path/name_test.go` and
//! `pkg/api/validation/generic_test.go` (`TestMaskTrailingDash`, through
//! the name rules that use it), with the messages of `validation.go`.

use super::*;
use crate::machinery::util::{name_errors, NameRule};

const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn owned(cases: &[&str]) -> Vec<String> {
    cases.iter().map(|s| (*s).to_owned()).collect()
}

/// validation_test.go `TestIsDNS1123Label`.
#[test]
fn validation_test_is_dns1123_label() {
    let mut good = owned(&[
        "a",
        "ab",
        "abc",
        "a1",
        "a-1",
        "a--1--2--b",
        "0",
        "01",
        "012",
        "1a",
        "1-a",
        "1--a--b--2",
    ]);
    good.push("a".repeat(63));
    for v in &good {
        assert_eq!(is_dns1123_label(v), Vec::<String>::new(), "{v:?}");
    }
    let mut bad = owned(&[
        "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a",
        "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " ", "a ", " a",
        "a b", "1 ", " 1", "1 2",
    ]);
    bad.push("a".repeat(64));
    for v in &bad {
        assert!(!is_dns1123_label(v).is_empty(), "{v:?}");
    }
}

/// validation_test.go `TestIsDNS1123Subdomain`: one regex and 253
/// characters, no limit per dot-separated part.
#[test]
fn validation_test_is_dns1123_subdomain() {
    let mut good = owned(&[
        "a",
        "ab",
        "abc",
        "a1",
        "a-1",
        "a--1--2--b",
        "0",
        "01",
        "012",
        "1a",
        "1-a",
        "1--a--b--2",
        "a.a",
        "ab.a",
        "abc.a",
        "a1.a",
        "a-1.a",
        "a--1--2--b.a",
        "a.1",
        "ab.1",
        "abc.1",
        "a1.1",
        "a-1.1",
        "a--1--2--b.1",
        "0.a",
        "01.a",
        "012.a",
        "1a.a",
        "1-a.a",
        "1--a--b--2",
        "0.1",
        "01.1",
        "012.1",
        "1a.1",
        "1-a.1",
        "1--a--b--2.1",
        "a.b.c.d.e",
        "aa.bb.cc.dd.ee",
        "1.2.3.4.5",
        "11.22.33.44.55",
    ]);
    good.push("a".repeat(253));
    for v in &good {
        assert_eq!(is_dns1123_subdomain(v), Vec::<String>::new(), "{v:?}");
    }
    let mut bad = owned(&[
        "",
        "A",
        "ABC",
        "aBc",
        "A1",
        "A-1",
        "1-A",
        "-",
        "a-",
        "-a",
        "1-",
        "-1",
        "_",
        "a_",
        "_a",
        "a_b",
        "1_",
        "_1",
        "1_2",
        ".",
        "a.",
        ".a",
        "a..b",
        "1.",
        ".1",
        "1..2",
        " ",
        "a ",
        " a",
        "a b",
        "1 ",
        " 1",
        "1 2",
        "A.a",
        "aB.a",
        "ab.A",
        "A1.a",
        "a1.A",
        "A.1",
        "aB.1",
        "A1.1",
        "1A.1",
        "0.A",
        "01.A",
        "012.A",
        "1A.a",
        "1a.A",
        "A.B.C.D.E",
        "AA.BB.CC.DD.EE",
        "a.B.c.d.e",
        "aa.bB.cc.dd.ee",
        "a@b",
        "a,b",
        "a_b",
        "a;b",
        "a:b",
        "a%b",
        "a?b",
        "a$b",
    ]);
    bad.push("a".repeat(254));
    for v in &bad {
        assert!(!is_dns1123_subdomain(v).is_empty(), "{v:?}");
    }
}

/// validation_test.go `TestIsDNS1035Label`.
#[test]
fn validation_test_is_dns1035_label() {
    let mut good = owned(&["a", "ab", "abc", "a1", "a-1", "a--1--2--b"]);
    good.push("a".repeat(63));
    for v in &good {
        assert_eq!(is_dns1035_label(v), Vec::<String>::new(), "{v:?}");
    }
    let mut bad = owned(&[
        "0",
        "01",
        "012",
        "1a",
        "1-a",
        "1--a--b--2",
        "",
        "A",
        "ABC",
        "aBc",
        "A1",
        "A-1",
        "1-A",
        "-",
        "a-",
        "-a",
        "1-",
        "-1",
        "_",
        "a_",
        "_a",
        "a_b",
        "1_",
        "_1",
        "1_2",
        ".",
        "a.",
        ".a",
        "a.b",
        "1.",
        ".1",
        "1.2",
        " ",
        "a ",
        " a",
        "a b",
        "1 ",
        " 1",
        "1 2",
    ]);
    bad.push("a".repeat(64));
    for v in &bad {
        assert!(!is_dns1035_label(v).is_empty(), "{v:?}");
    }
}

/// validation_test.go `TestIsQualifiedName`.
#[test]
fn validation_test_is_qualified_name() {
    let mut good = owned(&[
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "1234",
        "simple/simple",
        "now-with-dashes/simple",
        "now-with-dashes/now-with-dashes",
        "now.with.dots/simple",
        "now-with.dashes-and.dots/simple",
        "1-num.2-num/3-num",
        "1234/5678",
        "1.2.3.4/5678",
        "Uppercase_Is_OK_123",
        "example.com/Uppercase_Is_OK_123",
        "requests.storage-foo",
    ]);
    good.push("a".repeat(63));
    good.push(format!("{}/{}", "a".repeat(253), "b".repeat(63)));
    for v in &good {
        assert_eq!(is_qualified_name(v), Vec::<String>::new(), "{v:?}");
    }
    let mut bad = owned(&[
        "nospecialchars%^=@",
        "cantendwithadash-",
        "-cantstartwithadash-",
        "only/one/slash",
        "Example.com/abc",
        "example_com/abc",
        "example.com/",
        "/simple",
    ]);
    bad.push("a".repeat(64));
    bad.push(format!("{}/abc", "a".repeat(254)));
    for v in &bad {
        assert!(!is_qualified_name(v).is_empty(), "{v:?}");
    }
}

/// validation_test.go `TestIsValidLabelValue`.
#[test]
fn validation_test_is_valid_label_value() {
    let mut good = owned(&[
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "end-with-num-1",
        "1234",
        "",
    ]);
    good.push("a".repeat(63));
    for v in &good {
        assert_eq!(is_valid_label_value(v), Vec::<String>::new(), "{v:?}");
    }
    let mut bad = owned(&[
        "nospecialchars%^=@",
        "Tama-nui-te-rā.is.Māori.sun",
        "\\backslashes\\are\\bad",
        "-starts-with-dash",
        "ends-with-dash-",
        ".starts.with.dot",
        "ends.with.dot.",
    ]);
    bad.push("a".repeat(64));
    for v in &bad {
        assert!(!is_valid_label_value(v).is_empty(), "{v:?}");
    }
}

/// The messages of validation.go: `MaxLenError` then `RegexError` (with
/// its double space before `or`), `must not contain dots` for a label
/// that is a subdomain.
#[test]
fn validation_go_messages() {
    let long_bad = format!("{}_", "a".repeat(253));
    let cases: Vec<(Vec<String>, Vec<String>)> = vec![
        (is_dns1123_subdomain("A"), vec![SUBDOMAIN_MSG.into()]),
        (
            is_dns1123_subdomain(&long_bad),
            vec!["must be no more than 253 characters".into(), SUBDOMAIN_MSG.into()],
        ),
        (
            is_dns1123_subdomain(&"a".repeat(254)),
            vec!["must be no more than 253 characters".into()],
        ),
        (is_dns1123_label("a.b"), vec!["must not contain dots".into()]),
        (is_dns1123_label("a_b"), vec![LABEL_MSG.into()]),
        (
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters".into()],
        ),
        (is_dns1035_label("1a"), vec![DNS1035_MSG.into()]),
        (
            is_qualified_name("a/b/c"),
            vec!["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into()],
        ),
        (
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty".into()],
        ),
        (
            is_qualified_name("A/a"),
            vec![format!("prefix part {SUBDOMAIN_MSG}")],
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}

/// path/name_test.go `TestValidatePathSegmentName` and
/// `TestValidateWithMultiErrors`: the message each case must contain.
#[test]
fn path_name_test_validate_path_segment_name() {
    for (name, prefix, want) in [
        ("", false, ""),
        ("", true, ""),
        ("foo.bar.baz", false, ""),
        ("foo.bar.baz", true, ""),
        ("sha256:ABCDEF012345@ABCDEF012345", false, ""),
        ("Iñtërnâtiônàlizætiøn", false, ""),
        (".", false, "."),
        (".test", false, ""),
        (".", true, ""),
        ("..", false, ".."),
        ("..test", false, ""),
        ("..", true, ""),
        ("foo/bar", false, "/"),
        ("foo/bar", true, "/"),
        ("foo%bar", false, "%"),
        ("foo%bar", true, "%"),
    ] {
        let msgs = validate_path_segment_name(name, prefix);
        if want.is_empty() {
            assert!(msgs.is_empty(), "{name:?} {prefix}: {msgs:?}");
        } else {
            assert!(
                msgs.first().is_some_and(|m| m.contains(want)),
                "{name:?} {prefix}: {msgs:?}"
            );
        }
    }
    for prefix in [false, true] {
        assert_eq!(
            validate_path_segment_name("foo//bar%", prefix),
            ["may not contain '/'", "may not contain '%'"]
        );
    }
    assert_eq!(validate_path_segment_name("..", false), ["may not be '..'"]);
}

/// generic_test.go `TestMaskTrailingDash`, seen through the rules that
/// mask a `generateName` prefix: the mask drops two bytes and appends
/// `a`, so `-foo-` is checked as `-foa` and `b-` as `a`.
#[test]
fn generic_test_mask_trailing_dash() {
    for (prefix, checked_as) in [
        ("-", "-"),
        ("-foo", "-foo"),
        ("-foo-", "-foa"),
        ("b-", "a"),
        ("ab", "ab"),
        ("my-app-", "my-apa"),
    ] {
        for rule in [NameRule::Subdomain, NameRule::Label, NameRule::Dns1035] {
            assert_eq!(
                name_errors(prefix, rule, true),
                name_errors(checked_as, rule, false),
                "{prefix:?} {rule:?}"
            );
        }
    }
    // A prefix may end in a dash; a name may not.
    assert!(name_errors("web-", NameRule::Subdomain, true).is_empty());
    assert_eq!(
        name_errors("web-", NameRule::Subdomain, false),
        [SUBDOMAIN_MSG]
    );
    // The cut may split a character; the name still fails, without a panic.
    assert_eq!(name_errors("aé-", NameRule::Label, true), [LABEL_MSG]);
}

/// The name rules of the kinds (`NameIsDNSSubdomain`, `NameIsDNSLabel`,
/// `NameIsDNS1035Label`, rbac's `ValidateRBACName`, the generic store's
/// `ValidatePathSegmentName`) on names that tell them apart.
#[test]
fn name_rules_tell_the_kinds_apart() {
    use NameRule::*;
    let dotless100 = "a".repeat(100);
    let cases: &[(&str, [bool; 5])] = &[
        // name, valid for [Subdomain, Label, Dns1035, Rbac, PathSegment]
        ("web", [true, true, true, true, true]),
        ("1web", [true, true, false, true, true]),
        ("a.b", [true, false, false, true, true]),
        (&dotless100, [true, false, false, true, true]),
        ("system:controller", [false, false, false, true, true]),
        ("Upper", [false, false, false, true, true]),
        ("a/b", [false, false, false, false, false]),
        ("50%", [false, false, false, false, false]),
        ("..", [false, false, false, false, false]),
    ];
    for (name, valid) in cases {
        for (rule, ok) in [Subdomain, Label, Dns1035, Rbac, PathSegment]
            .into_iter()
            .zip(valid)
        {
            assert_eq!(
                name_errors(name, rule, false).is_empty(),
                *ok,
                "{name:?} {rule:?}"
            );
        }
    }
    // rbac ignores the prefix flag; the generic store's check does not.
    assert_eq!(name_errors(".", Rbac, true), ["may not be '.'"]);
    assert!(name_errors(".", PathSegment, true).is_empty());
}
