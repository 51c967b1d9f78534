//! Compile-time behaviour of `#[pilotage::language]` and the closed-set derives.
//!
//! `tests/ui/fail/*.rs` must fail with exactly the errors in their `.stderr` files: one case per
//! rule, named for it (`retention_not_iso8601.rs`, `guide_misses_member.rs`, ...), with a first
//! comment line saying which rule; `many_mistakes.rs` shows every error of one declaration
//! reported in a single compile. `tests/ui/pass/*.rs` must compile and run: the smallest
//! Language, each execution mode (`execute_immediate.rs`, `sync_execute.rs` for deploy,
//! `full.rs` for both, with every capability), `context_schema.rs`, `closed_sets_guide.rs` and
//! `typed_tools.rs` (typed plain tools, `context = Type`, `trace_tool`, `no_input`). Method
//! shapes fail one case per mistake, each a single error at the user's own type
//! (`execute_returns_result.rs`, `validate_generics_swapped.rs`, `statuses_declared_run_plain.rs`,
//! ...); where only rustc can judge, its error is the one (`execute_glue_alias.rs`,
//! `plain_tool_args_not_deserialize.rs`).
//! The guide folders the cases use are under `tests/ui/guides/`, one per situation.
//!
//! Regenerate the expected output with `TRYBUILD=overwrite cargo test --test it ui::ui`, then read
//! every changed file. To run some cases only: `cargo test --test it -- ui::ui trybuild=guide_`.
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
