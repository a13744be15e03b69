//! The cases of apimachinery's selector tests (release-1.33), ported as
//! tables: `staging/src/k8s.io/apimachinery/pkg/labels/selector_test.go`
//! and `pkg/fields/selector_test.go`, plus the messages kube-apiserver
//! answers an invalid selector with, read off `labels/selector.go` and
//! `fields/selector.go` (the 400's message is the parse error as it is:
//! `apis/meta/v1/conversion.go` `Convert_string_To_labels_Selector`).

use serde_json::{json, Value};

use super::*;
use crate::storage::StoredObject;

fn labels(set: Value) -> Value {
    json!({"metadata": {"name": "x", "labels": set}})
}

fn lex_all(s: &str) -> Vec<(Token, String)> {
    let mut lexer = Lexer {
        s: s.as_bytes(),
        pos: 0,
    };
    let mut out = Vec::new();
    loop {
        let t = lexer.lex();
        if t.0 == Token::EndOfString {
            return out;
        }
        out.push(t);
    }
}

/// labels/selector_test.go `TestLexer`: one token and its literal.
#[test]
fn labels_selector_test_lexer() {
    use Token::*;
    for (s, want) in [
        ("", EndOfString),
        (",", Comma),
        ("notin", NotIn),
        ("in", In),
        ("=", Equals),
        ("==", DoubleEquals),
        (">", GreaterThan),
        ("<", LessThan),
        // The longest valid token wins.
        ("!", DoesNotExist),
        ("!=", NotEquals),
        ("(", OpenPar),
        (")", ClosedPar),
        // Characters that are not special are part of an identifier.
        ("~", Identifier),
        ("||", Identifier),
    ] {
        let mut lexer = Lexer {
            s: s.as_bytes(),
            pos: 0,
        };
        assert_eq!(lexer.lex(), (want, s.to_owned()), "{s:?}");
    }
}

/// labels/selector_test.go `TestLexerSequence` (and `TestParserLookahead`,
/// whose sequences are the same plus the end token).
#[test]
fn labels_selector_test_lexer_sequence() {
    use Token::*;
    let cases: &[(&str, &[Token])] = &[
        (
            "key in ( value )",
            &[Identifier, In, OpenPar, Identifier, ClosedPar],
        ),
        (
            "key notin ( value )",
            &[Identifier, NotIn, OpenPar, Identifier, ClosedPar],
        ),
        (
            "key in ( value1, value2 )",
            &[
                Identifier, In, OpenPar, Identifier, Comma, Identifier, ClosedPar,
            ],
        ),
        ("key", &[Identifier]),
        ("!key", &[DoesNotExist, Identifier]),
        ("()", &[OpenPar, ClosedPar]),
        ("", &[]),
        (
            "x in (),y",
            &[Identifier, In, OpenPar, ClosedPar, Comma, Identifier],
        ),
        (
            "== != (), = notin",
            &[
                DoubleEquals,
                NotEquals,
                OpenPar,
                ClosedPar,
                Comma,
                Equals,
                NotIn,
            ],
        ),
        ("key>2", &[Identifier, GreaterThan, Identifier]),
        ("key<1", &[Identifier, LessThan, Identifier]),
    ];
    for (s, want) in cases {
        let got: Vec<Token> = lex_all(s).into_iter().map(|(t, _)| t).collect();
        assert_eq!(&got, want, "{s:?}");
        let parser = Parser::new(s);
        assert_eq!(
            parser.items.len(),
            want.len() + 1,
            "{s:?} ends with the end token"
        );
    }
}

/// labels/selector_test.go `TestParseOperator`.
#[test]
fn labels_selector_test_parse_operator() {
    for (token, want) in [
        ("in", Ok(Op::In)),
        ("=", Ok(Op::Equals)),
        ("==", Ok(Op::DoubleEquals)),
        (">", Ok(Op::GreaterThan)),
        ("<", Ok(Op::LessThan)),
        ("notin", Ok(Op::NotIn)),
        ("!=", Ok(Op::NotEquals)),
        (
            "!",
            Err("found '!', expected: in, notin, =, ==, !=, gt, lt"),
        ),
        (
            "exists",
            Err("found 'exists', expected: in, notin, =, ==, !=, gt, lt"),
        ),
        (
            "(",
            Err("found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ),
    ] {
        let got = Parser::new(token).parse_operator();
        assert_eq!(got, want.map_err(str::to_owned), "{token:?}");
    }
}

/// labels/selector_test.go `TestSelectorParse`: the good strings parse
/// and print back without their spaces; the bad ones fail.
#[test]
fn labels_selector_test_selector_parse() {
    for good in [
        "x=a,y=b,z=c",
        "",
        "x!=a,y=b",
        "x=",
        "x= ",
        "x=,z= ",
        "x= ,z= ",
        "!x",
        "x>1",
        "x>1,z<5",
    ] {
        let s = LabelSelector::parse(good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
        assert_eq!(s.to_string(), good.replace(' ', ""), "{good:?}");
    }
    for bad in ["x=a||y=b", "x==a==b", "!x=a", "x<a"] {
        assert!(LabelSelector::parse(bad).is_err(), "{bad:?}");
    }
}

/// labels/selector_test.go `TestDeterministicParse`.
#[test]
fn labels_selector_test_deterministic_parse() {
    let a = LabelSelector::parse("x=a,a=x").unwrap();
    let b = LabelSelector::parse("a=x,x=a").unwrap();
    assert_eq!(a.to_string(), b.to_string());
    assert_eq!(a.to_string(), "a=x,x=a");
}

/// labels/selector_test.go `TestSelectorMatches` and
/// `TestRequirementSelectorMatching` (requirements written as selectors).
#[test]
fn labels_selector_test_selector_matches() {
    let foo = json!({"foo": "bar", "baz": "blah"});
    let cases = [
        ("", json!({"x": "y"}), true),
        ("x=y", json!({"x": "y"}), true),
        ("x=y,z=w", json!({"x": "y", "z": "w"}), true),
        ("x!=y,z!=w", json!({"x": "z", "z": "a"}), true),
        ("notin=in", json!({"notin": "in"}), true),
        ("x", json!({"x": "z"}), true),
        ("!x", json!({"y": "z"}), true),
        ("x>1", json!({"x": "2"}), true),
        ("x<1", json!({"x": "0"}), true),
        ("x=z", json!({}), false),
        ("x=y", json!({"x": "z"}), false),
        ("x=y,z=w", json!({"x": "w", "z": "w"}), false),
        ("x!=y,z!=w", json!({"x": "z", "z": "w"}), false),
        ("x", json!({"y": "z"}), false),
        ("!x", json!({"x": "z"}), false),
        ("x>1", json!({"x": "0"}), false),
        ("x<1", json!({"x": "2"}), false),
        ("foo=bar", foo.clone(), true),
        ("baz=blah", foo.clone(), true),
        ("foo=bar,baz=blah", foo.clone(), true),
        ("foo=blah", foo.clone(), false),
        ("baz=bar", foo.clone(), false),
        ("foo=bar,foobar=bar,baz=blah", foo.clone(), false),
        // TestRequirementSelectorMatching
        (
            "x in (foo),y notin (alpha)",
            json!({"x": "foo", "y": "baz"}),
            true,
        ),
        (
            "x in (foo),y in (alpha)",
            json!({"x": "foo", "y": "baz"}),
            false,
        ),
        ("x notin (),y", json!({"y": ""}), true),
        ("!x,y", json!({"y": ""}), true),
        ("x notin (),!y", json!({"y": ""}), false),
        ("x in ()", json!({"y": "baz"}), false),
        ("z>1", json!({"z": "2"}), true),
        ("z>1", json!({"z": "v2"}), false),
    ];
    for (sel, set, want) in cases {
        let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
        let obj = labels(set.clone());
        assert_eq!(s.matches(&obj), want, "{sel:?} on {set}");
        let stored = StoredObject::encode(obj, 1);
        assert_eq!(s.matches_stored(&stored), want, "{sel:?} on {set} (stored)");
    }
}

/// labels/selector_test.go `TestToString`, each selector written out and
/// parsed back.
#[test]
fn labels_selector_test_to_string() {
    for s in [
        "x in (abc,def),y notin (jkl),z",
        "x notin (abc,def),y!=jkl,!z",
        "x notin (abc),y in (jkl,mno),z notin ()",
        "x=abc,y==jkl,z!=a,z",
        "x>2,y<8,z",
    ] {
        assert_eq!(LabelSelector::parse(s).unwrap().to_string(), s);
    }
}

/// labels/selector_test.go `TestSetSelectorParser`: each input with the
/// selector it parses to (written as its string form, requirements sorted
/// by key), or `None` where it must fail.
#[test]
fn labels_selector_test_set_selector_parser() {
    let cases: &[(&str, Option<&str>)] = &[
        ("", Some("")),
        ("\rx", Some("x")),
        (
            "this-is-a-dns.domain.com/key-with-dash",
            Some("this-is-a-dns.domain.com/key-with-dash"),
        ),
        (
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            Some("this-is-another-dns.domain.com/key-with-dash in (so,what)"),
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            Some("0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)"),
        ),
        ("foo  in\t (abc)", Some("foo in (abc)")),
        ("x notin\n (abc)", Some("x notin (abc)")),
        ("x  notin\t\t\t(abc,def)", Some("x notin (abc,def)")),
        ("x in (abc,def)", Some("x in (abc,def)")),
        ("x in (abc,)", Some("x in (,abc)")),
        ("x in ()", Some("x in ()")),
        (
            "x notin (abc,,def),bar,z in (),w",
            Some("bar,w,x notin (,abc,def),z in ()"),
        ),
        ("x,y in (a)", Some("x,y in (a)")),
        ("x=a", Some("x=a")),
        ("x>1", Some("x>1")),
        ("x<7", Some("x<7")),
        ("x=a,y!=b", Some("x=a,y!=b")),
        ("x=a,y!=b,z in (h,i,j)", Some("x=a,y!=b,z in (h,i,j)")),
        ("x=a||y=b", None),
        ("x,,y", None),
        (",x,y", None),
        ("x nott in (y)", None),
        ("x notin ( )", Some("x notin ()")),
        ("x notin (, a)", Some("x notin (,a)")),
        ("a in (xyz),", None),
        ("a in (xyz)b notin ()", None),
        ("a ", Some("a")),
        // `in` and `notin` inside a list of values are values.
        ("a in (x,y,notin, z,in)", Some("a in (in,notin,x,y,z)")),
        ("a in (xyz abc)", None),
        ("a notin(", None),
        ("a (", None),
        ("(", None),
    ];
    for (input, want) in cases {
        let got = LabelSelector::parse(input).map(|s| s.to_string());
        match want {
            Some(w) => assert_eq!(got.as_deref(), Ok(*w), "{input:?}"),
            None => assert!(got.is_err(), "{input:?} parsed as {got:?}"),
        }
    }
}

/// labels/selector_test.go `TestRequirementConstructor`, the cases a
/// parsed selector can reach (the others hand `NewRequirement` value
/// counts the grammar cannot produce), with the field each error names.
#[test]
fn labels_selector_test_requirement_constructor() {
    let a254 = "a".repeat(254);
    let cases: Vec<(String, Option<String>)> = vec![
        ("x3 in (foo)".into(), None),
        ("x4 notin (foo)".into(), None),
        ("x6".into(), None),
        ("!x7".into(), None),
        ("x11>1".into(), None),
        ("x12<6".into(), None),
        (
            "x14>bar".into(),
            Some("unable to parse requirement: values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
        ),
        (
            "x15<bar".into(),
            Some("unable to parse requirement: values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
        ),
        (
            a254.clone(),
            Some(format!("unable to parse requirement: <nil>: Invalid value: \"{a254}\": name part must be no more than 63 characters")),
        ),
        (
            format!("x16={a254}"),
            Some(format!("unable to parse requirement: values[0][x16]: Invalid value: \"{a254}\": must be no more than 63 characters")),
        ),
    ];
    for (input, want) in cases {
        let got = LabelSelector::parse(&input).map(|_| ()).err();
        assert_eq!(got, want, "{input:?}");
    }
}

/// The messages of `labels.Parse` (selector.go), as kube-apiserver's 400
/// carries them.
#[test]
fn labels_parse_error_messages_are_apimachinerys() {
    const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    let cases: Vec<(&str, String)> = vec![
        ("=x", "found '=', expected: !, identifier, or 'end of string'".into()),
        ("(", "found '(', expected: !, identifier, or 'end of string'".into()),
        (",x", "found ',', expected: !, identifier, or 'end of string'".into()),
        ("x,,y", "found ',', expected: identifier after ','".into()),
        ("x,", "found '', expected: identifier after ','".into()),
        ("x==a==b", "found '==', expected: ',' or 'end of string'".into()),
        ("!x=a", "found '=', expected: ',' or 'end of string'".into()),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".into()),
        ("!", "unable to parse requirement: found '', expected: identifier".into()),
        ("!!x", "unable to parse requirement: found '!', expected: identifier".into()),
        ("x in b", "unable to parse requirement: found 'b' expected: '('".into()),
        ("x in", "unable to parse requirement: found '' expected: '('".into()),
        ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'".into()),
        ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'".into()),
        ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
        ("x in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier".into()),
        ("x=(", "unable to parse requirement: found '(', expected: identifier".into()),
        ("x>", "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
        ("-x", format!("unable to parse requirement: <nil>: Invalid value: \"-x\": {NAME_PART}")),
        ("é=x", format!("unable to parse requirement: <nil>: Invalid value: \"é\": {NAME_PART}")),
        (
            "a/", 
            format!("unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; {NAME_PART}"),
        ),
        ("x=-a", format!("unable to parse requirement: values[0][x]: Invalid value: \"-a\": {VALUE}")),
        ("x in (b,-a)", format!("unable to parse requirement: values[0][x]: Invalid value: \"-a\": {VALUE}")),
        (
            "x>-a",
            format!("unable to parse requirement: [values[0]: Invalid value: \"-a\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"-a\": {VALUE}]"),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(LabelSelector::parse(input), Err(want), "{input:?}");
    }
}

/// `in` and `notin` are identifiers wherever the grammar wants one (the
/// parser's `Values` context), as keys and values alike.
#[test]
fn labels_keywords_are_identifiers_where_one_is_expected() {
    for (sel, set, want) in [
        ("zone=in", json!({"zone": "in"}), true),
        ("zone=in", json!({"zone": "out"}), false),
        ("mode!=notin", json!({"mode": "notin"}), false),
        ("mode!=notin", json!({"mode": "in"}), true),
        ("zone in (in,out)", json!({"zone": "out"}), true),
        ("zone notin (in,notin)", json!({"zone": "in"}), false),
        ("in", json!({"in": "x"}), true),
        ("!notin", json!({"in": "x"}), true),
        ("in in (in)", json!({"in": "in"}), true),
        ("notin notin (notin)", json!({"notin": "in"}), true),
        ("in==notin,notin!=in", json!({"in": "notin"}), true),
    ] {
        let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
        assert_eq!(s.matches(&labels(set.clone())), want, "{sel:?} on {set}");
    }
    // After a key, `in` is the operator again: the value list must follow.
    assert_eq!(
        LabelSelector::parse("zone in in"),
        Err("unable to parse requirement: found 'in' expected: '('".to_owned())
    );
}

/// A NUL byte reads as the end, as apimachinery's lexer's `read` answers
/// 0 for both.
#[test]
fn labels_nul_bytes_read_as_the_end() {
    assert_eq!(LabelSelector::parse("\0x").map(|s| s.is_empty()), Ok(true));
    assert_eq!(
        LabelSelector::parse("a\0b").unwrap_err(),
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
    );
    assert_eq!(LabelSelector::parse("a=\0b").unwrap().to_string(), "a=b");
}

fn fields(set: Value) -> (StoredObject, (String, String)) {
    (
        StoredObject::encode(set, 1),
        (String::new(), "x".to_owned()),
    )
}

fn top_level(label: &str) -> Result<Vec<String>, String> {
    Ok(vec![label.to_owned()])
}

/// fields/selector_test.go `TestSplitTerms`.
#[test]
fn fields_selector_test_split_terms() {
    let cases: &[(&str, &[&str])] = &[
        ("a", &["a"]),
        ("a=avalue", &["a=avalue"]),
        ("a=avalue,b=bvalue", &["a=avalue", "b=bvalue"]),
        (
            "a=avalue,b==bvalue,c!=cvalue",
            &["a=avalue", "b==bvalue", "c!=cvalue"],
        ),
        ("", &[]),
        ("a=a,", &["a=a", ""]),
        (",a=a", &["", "a=a"]),
        (r"k=\,,k2=v2", &[r"k=\,", "k2=v2"]),
        (r"k=\\,k2=v2", &[r"k=\\", "k2=v2"]),
        (r"k=\\\,,k2=v2", &[r"k=\\\,", "k2=v2"]),
        (r"k=\a\b\", &[r"k=\a\b\"]),
        (r"k=\", &[r"k=\"]),
        ("함=수,목=록", &["함=수", "목=록"]),
    ];
    for (s, want) in cases {
        assert_eq!(&split_terms(s), want, "{s:?}");
    }
}

/// fields/selector_test.go `TestSplitTerm`.
#[test]
fn fields_selector_test_split_term() {
    type Split<'a> = Option<(&'a str, &'a str, &'a str)>;
    let cases: &[(&str, Split<'_>)] = &[
        ("a=value", Some(("a", "=", "value"))),
        ("b==value", Some(("b", "==", "value"))),
        ("c!=value", Some(("c", "!=", "value"))),
        ("", None),
        ("a", None),
        (r"k=\,", Some(("k", "=", r"\,"))),
        (r"k=\=", Some(("k", "=", r"\="))),
        (r"k=\\\a\b\=\,\", Some(("k", "=", r"\\\a\b\=\,\"))),
        ("함=수", Some(("함", "=", "수"))),
    ];
    for (term, want) in cases {
        assert_eq!(split_term(term), *want, "{term:?}");
    }
}

/// fields/selector_test.go `TestEscapeValue`.
#[test]
fn fields_selector_test_escape_value() {
    for (raw, escaped) in [
        ("", ""),
        ("a", "a"),
        ("=", r"\="),
        (",", r"\,"),
        (r"\", r"\\"),
        (r"\=\,\", r"\\\=\\\,\\"),
    ] {
        assert_eq!(escape_value(raw), escaped);
        assert_eq!(unescape_value(escaped).as_deref(), Ok(raw));
    }
    for (bad, msg) in [
        (r"\", r"invalid field selector: invalid escape sequence: \"),
        (
            r"\\\",
            r"invalid field selector: invalid escape sequence: \",
        ),
        (
            r"\a",
            r"invalid field selector: invalid escape sequence: \a",
        ),
    ] {
        assert_eq!(unescape_value(bad), Err(msg.to_owned()), "{bad:?}");
    }
}

/// fields/selector_test.go `TestSelectorParse` and
/// `TestDeterministicParse`.
#[test]
fn fields_selector_test_selector_parse() {
    for good in ["x=a,y=b,z=c", "", "x!=a,y=b", r"x=a||y\=b", r"x=a\=\=b"] {
        let s = FieldSelector::parse(good, top_level).unwrap_or_else(|e| panic!("{good:?}: {e}"));
        assert_eq!(s.to_string(), good);
    }
    for bad in [
        "x=a||y=b",
        "x==a==b",
        "x=a,b",
        "x in (a)",
        "x in (a,b,c)",
        "x",
    ] {
        assert!(FieldSelector::parse(bad, top_level).is_err(), "{bad:?}");
    }
    let a = FieldSelector::parse("x=a,a=x", top_level).unwrap();
    let b = FieldSelector::parse("a=x,x=a", top_level).unwrap();
    assert_eq!(a.to_string(), b.to_string());
}

/// fields/selector_test.go `TestSelectorMatches`.
#[test]
fn fields_selector_test_selector_matches() {
    let set = json!({"foo": "bar", "baz": "blah", "complex": r"=value\,\"});
    let cases = [
        ("", json!({"x": "y"}), true),
        ("x=y", json!({"x": "y"}), true),
        ("x=y,z=w", json!({"x": "y", "z": "w"}), true),
        ("x!=y,z!=w", json!({"x": "z", "z": "a"}), true),
        ("notin=in", json!({"notin": "in"}), true),
        ("x=y", json!({"x": "z"}), false),
        ("x=y,z=w", json!({"x": "w", "z": "w"}), false),
        ("x!=y,z!=w", json!({"x": "z", "z": "w"}), false),
        ("foo=bar", set.clone(), true),
        ("baz=blah", set.clone(), true),
        ("foo=bar,baz=blah", set.clone(), true),
        (r"foo=bar,baz=blah,complex=\=value\\\,\\", set.clone(), true),
        ("foo=blah", set.clone(), false),
        ("baz=bar", set.clone(), false),
        ("foo=bar,foobar=bar,baz=blah", set.clone(), false),
    ];
    for (sel, obj, want) in cases {
        let s = FieldSelector::parse(sel, top_level).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
        let (stored, key) = fields(obj.clone());
        assert_eq!(s.matches_stored(&key, &stored), want, "{sel:?} on {obj}");
    }
}

/// The messages of `fields.ParseSelector` (selector.go) and of the label
/// transform kube-apiserver runs after it, as its 400 carries them.
#[test]
fn fields_parse_error_messages_are_apimachinerys() {
    let resolve = |l: &str| {
        (l == "metadata.name")
            .then(|| vec!["metadata".into(), "name".into()])
            .ok_or_else(|| format!("field label not supported: {l}"))
    };
    for (input, want) in [
        ("x", "invalid selector: 'x'; can't understand 'x'"),
        (" ", "invalid selector: ' '; can't understand ' '"),
        (
            "metadata.name=a,b",
            "invalid selector: 'metadata.name=a,b'; can't understand 'b'",
        ),
        (
            "x=a=b",
            "invalid field selector: unescaped character in value: 61",
        ),
        (
            "x=a\\",
            "invalid field selector: invalid escape sequence: \\",
        ),
        (
            "x=\\n",
            "invalid field selector: invalid escape sequence: \\n",
        ),
        // Terms are sorted before they are read: `b` comes first.
        ("y=1,b", "invalid selector: 'y=1,b'; can't understand 'b'"),
        // Nothing is trimmed: the label is `metadata.name `.
        (
            "metadata.name =a",
            "field label not supported: metadata.name ",
        ),
        (
            "spec.x=1,metadata.name=a",
            "field label not supported: spec.x",
        ),
        // The left side knows no escapes: it ends at the first `=`.
        (
            "a\\=b=c",
            "invalid field selector: unescaped character in value: 61",
        ),
    ] {
        assert_eq!(
            FieldSelector::parse(input, resolve),
            Err(want.to_owned()),
            "{input:?}"
        );
    }
    // Empty terms are skipped.
    let s = FieldSelector::parse(",metadata.name==a,", resolve).unwrap();
    assert_eq!(s.to_string(), "metadata.name=a");
}
