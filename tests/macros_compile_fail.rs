//! Misuse of `#[derive(Actor)]` (and, with the `sim` feature, of
//! `#[smarm::sim::test]`) is a compile error on the offending span: each
//! file in `tests/compile-fail/` (`tests/compile-fail-sim/`) must fail to
//! compile with exactly the error (text and position) in its `.stderr`
//! file.

#[test]
fn derive_actor_misuse_is_a_clear_compile_error() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile-fail/*.rs");
}

#[cfg(feature = "sim")]
#[test]
fn sim_test_attribute_misuse_is_a_clear_compile_error() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile-fail-sim/*.rs");
}
