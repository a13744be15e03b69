//! Compile-time behaviour of the derives: every case in `ui/` must fail with
//! the message in its `.stderr`, every case in `pass/` must build (a crate
//! that depends on kubeforge and serde alone). One test drives them all to
//! keep trybuild to a single build of the dependencies.
//! `TRYBUILD=overwrite` rewrites the `.stderr` files.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/pass/*.rs");
    t.compile_fail("tests/ui/*.rs");
}
