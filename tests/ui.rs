//! Compile-time behaviour of `#[pilotage::language]` and the closed-set derives.
//!
//! `tests/ui/pass/*.rs` must compile and run; `tests/ui/fail/*.rs` must fail with exactly the
//! errors in their `.stderr` files (regenerate with `TRYBUILD=overwrite cargo test --test ui`,
//! then read every changed file).
//!
//! trybuild compiles each case inside `target/tests/trybuild/pilotage/`, which is then the
//! case's `CARGO_MANIFEST_DIR`; so the cases reach their guide folders under `tests/ui/guides/`
//! as `../../../../tests/ui/guides/...`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
