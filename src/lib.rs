//! pilotage turns an engine into a conformant Pilotage MCP server.
//!
//! An engine declares its Language with `#[pilotage::language(...)]` on its impl block; the
//! macro checks the declaration at compile time (capability rules, guide folder, tool names,
//! method shapes) and implements [`Engine`](crate::engine::Engine) for the type. The runtime
//! ([`pilotage_runtime`], re-exported here) serves the loop: manifest, guides, catalog,
//! validate, execute and trace fetch.
//!
//! ```ignore
//! use pilotage::prelude::*;
//!
//! #[derive(Clone, Copy, pilotage::Codes)]
//! enum WfCode { UnknownCapability, #[code(rename = "bad_ref")] BadReference }
//!
//! #[derive(Clone, Copy, pilotage::RiskLevels)]
//! enum WfRisk { #[risk(read_only)] Safe, #[risk(write)] Write, #[risk(destructive)] Destructive }
//!
//! struct Workflow;
//!
//! #[pilotage::language(
//!     name = "workflow/v1",
//!     title = "Workflow documents",
//!     program = "workflow",
//!     locator = "json-pointer",
//!     capabilities(guides, validate, plan),
//!     guides = "guides",                  // folder of .md guides, relative to the crate root
//!     codes = WfCode,
//!     risk = WfRisk,
//! )]
//! impl Workflow {
//!     /// Checks a workflow document.
//!     #[loop_tool(validate, name = "validate_workflow")]
//!     fn validate(&self, program: &Json, v: &mut Validation<WfCode, WfRisk>) {
//!         // report findings and plan steps on `v`
//!     }
//! }
//! ```
//!
//! # Cargo features
//!
//! None is on by default: with none, a server serves stdio (and in process), keeps its state in
//! memory and checks schemas with the built-in, regex-free `model::check`.
//!
//! | feature | adds |
//! | --- | --- |
//! | `http` | Streamable HTTP: `Server::serve_http`, `serve_listener`, `router`, `HttpOptions` |
//! | `sqlite` | `state::SqliteState`, the durable store of one process (bundled SQLite) |
//! | `postgres` | `state::PostgresState`, the store several replicas share |
//! | `jwt` | `transport::jwt::JwtAuthenticator` (implies `http`) |
//! | `jsonschema` | schemas with keywords the built-in check does not evaluate (`pattern`, ...) |
//! | `host` | `host`: the Host half, a client that drives any Pilotage server and enforces the risk gate (`docs/host.md`) |
//!
//! # `#[pilotage::language(...)]`
//!
//! Every key, with its values and when it is required, is one table on [`language`]'s page; the
//! tool attributes' keys on [`loop_tool`] and [`plain_tool`].
//!
//! Methods of the impl carry the tools:
//!
//! - `#[loop_tool(validate, name = "...")] fn validate(&self, program: &Json, v: &mut Validation<C, R>)`
//!   — exactly one; `&self`, synchronous, side-effect free, returning nothing.
//! - `#[loop_tool(execute, name = "...")] async fn run(&self, program: &Json, run: &mut Run<S>) -> Finish<S>`
//!   — iff `execute` is declared (may also be synchronous); `Run` and `Finish` without `<S>`
//!   when no `statuses` is declared. With `no_input` (`#[loop_tool(execute, name = "...",
//!   no_input)]`) a Run given `input` is refused before the method runs.
//! - `#[loop_tool(trace, name = "...")] fn trace(&self) {}` — iff `trace_fetch` is declared and
//!   no `trace_tool = "..."` names the tool; the runtime's run store serves it, the body is
//!   never called.
//! - `#[plain_tool(name = "...", description = "...", read_only)]
//!   fn tool(&self, caller: &Caller, args: MyArgs) -> Result<MyOut, MyError>` — any number of
//!   ordinary MCP tools. `MyArgs: Deserialize + JsonSchema` gives the `inputSchema` (arguments
//!   that do not fit are JSON-RPC `-32602`), `MyOut: Serialize + JsonSchema` the
//!   `outputSchema`, `MyError: Display` the error text; `caller` is optional and may come after
//!   the arguments. The raw form takes `args: &Json` (with `input_schema = r#"{...}"#`) and
//!   answers `Json` (no `outputSchema`). Without `description` the doc comment is used.
//!
//! A loop tool's doc comment becomes the extra text of its description.
//!
//! The validate method needs no special shape to receive context: with `context_schema`
//! declared, the runtime checks the caller's `context` against the schema and hands the
//! validated value to every validate method through
//! [`Validation::context`](crate::engine::Validation::context). Without `context_schema`, a
//! supplied `context` is a `context_binding` error and `context()` is `None`. So neither
//! "`context_schema` declared but the validate method cannot receive context" nor the reverse
//! can happen, and there is no compile-time check for them (`tests/ui/pass/context_schema.rs`).
//!
//! # Testing an engine
//!
//! [`testkit::Kit`] serves one engine with a real server and drives it in process through the
//! protocol; results come back as the wire model's types, and in debug builds every run's trace
//! is checked against its plan (a run that strays from it fails the test):
//!
//! ```
//! use pilotage::prelude::*;
//! use pilotage::testkit::{findings, Kit};
//!
//! #[derive(Clone, Copy, pilotage::Codes)]
//! enum CalcCode { UnknownOp }
//!
//! #[derive(Clone, Copy, pilotage::RiskLevels)]
//! enum CalcRisk { #[risk(read_only)] Safe }
//!
//! struct Calc;
//!
//! #[pilotage::language(
//!     name = "calc/v1", title = "Arithmetic programs", program = "calc", locator = "json-pointer",
//!     capabilities(guides, validate, plan, execute), execution = "immediate", trace = "full",
//!     retention = "none", guides = "examples/calc/guides", codes = CalcCode, risk = CalcRisk,
//! )]
//! impl Calc {
//!     #[loop_tool(validate, name = "validate_calc")]
//!     fn validate(&self, program: &Json, v: &mut Validation<CalcCode, CalcRisk>) {
//!         if program["op"] != "add" {
//!             v.error(CalcCode::UnknownOp, "/op", "only `add` exists");
//!         }
//!         v.step("sum", CalcRisk::Safe);
//!     }
//!
//!     #[loop_tool(execute, name = "run_calc")]
//!     async fn run(&self, program: &Json, run: &mut Run) -> Finish {
//!         let sum: f64 = program["args"].as_array().into_iter().flatten().filter_map(Json::as_f64).sum();
//!         run.step("sum").output(json!(sum)).succeeded();
//!         Finish::output(json!({ "sum": sum }))
//!     }
//! }
//!
//! let mut kit = Kit::new(Calc);
//! let verdict = kit.validate(&json!({"op": "mul"}));
//! assert_eq!(findings(&verdict.diagnostics), [("unknown_op".to_owned(), "/op".to_owned())]);
//! let ran = kit.execute(&json!({"op": "add", "args": [1, 2]}));
//! assert_eq!(ran.ids(), ["sum"]);
//! assert_eq!(ran.output(), Some(&json!({"sum": 3.0})));
//! ```
//!
//! # Guide folders
//!
//! Every `*.md` file of the folder (by file name) is one guide, with front matter:
//!
//! ```text
//! ---
//! id: core
//! title: Workflow core guide
//! level: core            # core | reference | examples
//! topics: [steps, calls]
//! ---
//! # Body in markdown
//! ```
//!
//! The folder needs a `core` guide, and exactly one `reference` guide with the topic
//! `closed-sets`. That guide names every member of every closed set the declared capabilities
//! make reachable (Part II §5.2): the diagnostic codes always, the risk levels with `catalog` or
//! `plan`, the statuses with `execute` and the entry kinds with `catalog`, reserved members
//! included (`constraint`, `input_binding`, `context_binding`; `success`, `validation_error`,
//! `catalog_drift`, `promotion_drift`, `partial`, `error`). A member counts as named when its
//! wire name occurs as a whole word (no ASCII letter, digit or `_` right before or after it).
//! The macro cannot see the enums' variants, so this check runs in constant evaluation: an
//! omission fails the build at the `guides = "..."` value with an error naming the guide file
//! and every missing member:
//!
//! ```text
//! error[E0080]: evaluation panicked: the closed-sets guide `guides/closed-sets.md` never mentions
//!        the diagnostic codes `unused_step`, `context_binding` (reserved): Part II §5.2 requires it
//!        to enumerate every member of every declared closed set; add each to the guide as a whole
//!        word, e.g. in a `code` span
//! ```
//!
//! Editing a guide rebuilds the crate; adding or removing a guide file is
//! noticed at the next rebuild of the crate (touch the source file, or use a build script with
//! `cargo:rerun-if-changed=<folder>`).
#![warn(missing_docs)]

pub use pilotage_runtime::*;

/// Declares a Pilotage Language on an engine's impl block and implements
/// [`Engine`](crate::engine::Engine) for the type. See the [crate documentation](crate) for a
/// complete engine with its tests.
///
/// Keys, each at most once, in any order:
///
/// | key | value | |
/// | --- | --- | --- |
/// | `name` | `"family/version"`, e.g. `"calc/v1"` | required |
/// | `title` | a string | required |
/// | `program` | the program-bearing argument, `[A-Za-z_][A-Za-z0-9_]*`, not a reserved argument | required |
/// | `locator` | `"json-pointer"` or `"text-range"` | required |
/// | `capabilities(...)` | `guides(topic_fetch)`, `catalog(search, changed_since)`, `validate`, `plan`, `execute(test_run, idempotency)`, `trace_fetch(narrate)`; sub-features optional, e.g. `capabilities(guides, validate, plan, execute(idempotency))` | required; `guides` and `validate` always |
/// | `execution` | `"immediate"`, `"deploy"` or `"both"` | iff `execute` |
/// | `trace` | `"summary"` or `"full"` | iff `execute` |
/// | `retention` | `"none"`, `"session"` or an ISO 8601 duration (`"PT1H"`, `"P30D"`) | iff `execute` |
/// | `trace_subprogram` | `"opaque"` or `"expanded"` | optional |
/// | `promotion_authority` | `"caller"` or `"promoter"` | optional |
/// | `context_schema` | path of a JSON object schema file, relative to `CARGO_MANIFEST_DIR` | optional |
/// | `context` | a type with `Deserialize` and `JsonSchema`: the context schema is generated from it | optional, not with `context_schema` |
/// | `trace_tool` | the trace-fetch tool's name, e.g. `trace_tool = "trace_calc"` (no trace method needed) | optional, only with `trace_fetch` |
/// | `guides` | the guide folder, relative to `CARGO_MANIFEST_DIR` | required |
/// | `codes` | an enum deriving [`Codes`] | required |
/// | `risk` | an enum deriving [`RiskLevels`] | required |
/// | `statuses` | an enum deriving [`Statuses`] | optional |
/// | `kinds` | an enum deriving [`EntryKinds`] | iff `catalog` |
/// | `catalog` | a method `fn(&self, caller: &Caller) -> Arc<CatalogSnapshot>`, e.g. `catalog = snapshot` | iff `catalog` |
/// | `narrate` | a method `fn(&self, run: &TraceFetchResponse, question: Option<&str>) -> Option<String>` | iff `trace_fetch(narrate)` |
/// | `tasks` | a bare flag, `tasks` (no value): the execute tool also answers MCP Tasks (`tasks/get`, `tasks/cancel`), beyond Pilotage 1.1 | optional, only with `execute` |
///
/// A misspelled key, a missing one or a value that does not fit is a compile error at the
/// token, saying the fix.
pub use pilotage_macros::language;

/// Marks the method that serves a loop stage inside a `#[pilotage::language(...)]` impl.
///
/// | key | value | |
/// | --- | --- | --- |
/// | `validate`, `execute` or `trace` | the stage (first, bare) | required |
/// | `name` | the MCP tool's name, e.g. `name = "validate_calc"` | required |
/// | `no_input` | a bare flag, on `execute` only: a Run given `input` is refused before the method runs | optional |
/// | `inline` | a bare flag, on `validate` only: the validator is cheap, bounded by the program's size and depth, and runs on the request's own task instead of an engine thread | optional |
///
/// The shapes:
///
/// - `#[loop_tool(validate, name = "...")] fn validate(&self, program: &Json, v: &mut Validation<Codes, Risk>)`:
///   exactly one; synchronous, side-effect free, returning nothing. It runs on an engine
///   thread, so that its time bound holds even if it never returns; with `inline`
///   (`#[loop_tool(validate, name = "...", inline)]`) it runs on the request's own task, saving
///   the hand-off: the program's size and depth bounds still refuse a program before it runs,
///   a verdict past `validate_time` is still refused, but nothing stops a validator that never
///   returns. The manifest entry then carries `"x-validation": "inline"`.
/// - `#[loop_tool(execute, name = "...")] async fn run(&self, program: &Json, run: &mut Run) -> Finish`:
///   iff `execute` is declared (may be synchronous); `Run<S>`/`Finish<S>` with `statuses = S`.
///   A Run's `input`, when given, is a JSON object: [`Run::input`](crate::engine::Run::input).
/// - `#[loop_tool(trace, name = "...")] fn trace(&self) {}`: iff `trace_fetch` is declared and
///   no `trace_tool = "..."` names the tool; never called.
///
/// The method's doc comment becomes the extra text of the tool's description.
pub use pilotage_macros::loop_tool;

/// Marks a method as an ordinary MCP tool inside a `#[pilotage::language(...)]` impl: a
/// harness tool, an admin tool, anything beside the loop.
///
/// | key | value | |
/// | --- | --- | --- |
/// | `name` | the MCP tool's name | required |
/// | `description` | the tool's description | optional: the doc comment otherwise |
/// | `read_only` | a bare flag: the tool's `readOnlyHint` | optional |
/// | `input_schema` | a JSON object schema, e.g. `input_schema = r#"{"type": "object"}"#` | only for the raw form |
///
/// The typed form, `fn tool(&self, caller: &Caller, args: MyArgs) -> Result<MyOut, MyError>`,
/// takes its `inputSchema` from `MyArgs: Deserialize + JsonSchema` (arguments that do not fit
/// are JSON-RPC `-32602`), its `outputSchema` from `MyOut: Serialize + JsonSchema`, and its error
/// text from `MyError: Display`; `caller` is optional. The derives come from `serde` (add it to
/// your `Cargo.toml`) and schemars 1, which pilotage re-exports as [`schemars`]:
///
/// ```
/// use pilotage::prelude::*;
///
/// #[derive(serde::Deserialize, pilotage::schemars::JsonSchema)]
/// #[schemars(crate = "pilotage::schemars")]
/// struct Twice {
///     value: f64,
/// }
///
/// #[derive(serde::Serialize, pilotage::schemars::JsonSchema)]
/// #[schemars(crate = "pilotage::schemars")]
/// struct Doubled {
///     doubled: f64,
/// }
/// # #[derive(Clone, Copy, pilotage::Codes)]
/// # enum CalcCode { UnknownOp }
/// # #[derive(Clone, Copy, pilotage::RiskLevels)]
/// # enum CalcRisk { #[risk(read_only)] Safe }
/// # struct Calc;
/// # #[pilotage::language(
/// #     name = "calc/v1", title = "Arithmetic programs", program = "calc", locator = "json-pointer",
/// #     capabilities(guides, validate, plan), guides = "examples/calc/guides", codes = CalcCode, risk = CalcRisk,
/// # )]
/// # impl Calc {
/// #     #[loop_tool(validate, name = "validate_calc")]
/// #     fn validate(&self, _program: &Json, v: &mut Validation<CalcCode, CalcRisk>) { v.step("sum", CalcRisk::Safe); }
///
///     /// Doubles a number.
///     #[plain_tool(name = "twice", read_only)]
///     fn twice(&self, args: Twice) -> Result<Doubled, String> {
///         Ok(Doubled { doubled: args.value * 2.0 })
///     }
/// # }
///
/// let mut kit = pilotage::testkit::Kit::new(Calc);
/// assert_eq!(kit.call("twice", json!({"value": 2.5})).structured, json!({"doubled": 5.0}));
/// assert!(kit.request("tools/call", json!({"name": "twice", "arguments": {"value": "x"}})).is_err());
/// ```
///
/// The raw form takes `args: &Json` (with `input_schema`) and answers `Result<Json, E>`, with
/// no `outputSchema`.
pub use pilotage_macros::plain_tool;

/// Derives [`DiagnosticCode`](crate::model::closed_sets::DiagnosticCode) for a fieldless enum. Wire
/// names are the snake_case variant names, or `#[code(rename = "...")]`.
pub use pilotage_macros::Codes;

/// Derives [`RiskLevel`](crate::model::closed_sets::RiskLevel) for a fieldless enum, least risky
/// variant first; each variant has `#[risk(...)]` with `read_only`, `write`, `destructive`,
/// `open_world`.
pub use pilotage_macros::RiskLevels;

/// Derives [`RunStatus`](crate::model::closed_sets::RunStatus) for a fieldless enum of engine-defined
/// failure statuses; each variant has `#[status(side_effects = true|false)]`.
pub use pilotage_macros::Statuses;

/// Derives [`EntryKind`](crate::model::closed_sets::EntryKind) for a fieldless enum of catalog entry
/// kinds; `#[kind(callable)]` marks kinds that steps can invoke, `#[kind(promoted)]` the one
/// (callable) kind promoted programs are exposed as.
pub use pilotage_macros::EntryKinds;

/// The names an engine's code uses: the runtime's prelude plus the tool attributes.
pub mod prelude {
    pub use pilotage_macros::{loop_tool, plain_tool};
    pub use pilotage_runtime::prelude::*;
}
