//! The Pilotage conformance runner: every server-target vector of `tests/fixtures/vectors.json`
//! bound to a Language through a [`binding::Binding`], driven through a real MCP endpoint,
//! each response checked against `expected` and the official schema.
//!
//! Used by `examples/conformance/main.rs` (the CLI) and, with `#[path]`, by the
//! `tests/it/conformance.rs`, `tests/it/completeness.rs` integration tests. The including crate must
//! also have `tests/support` at `crate::support`.
//!
//! # Through `pilotage::host`
//!
//! Every vector and binding case speaks to the server through a [`pilotage::host::Host`]
//! ([`ctx::Ctx::open`]): the Host connects (stdio, or Streamable HTTP sessionful or stateless)
//! and discovers; the runner reads the manifest (`Host::manifest_json`, after
//! `Host::rediscover` from `pilotage_manifest`), the tool list (`Host::tools`), the program
//! argument (`Host::program_argument`), the initialize accelerator and instructions
//! (`Host::accelerator`, `Host::instructions`) from it, and sends every tool call with
//! `Host::call_tool`: the vectors' arguments exactly as bound, since many vectors send
//! deliberately wrong requests (a stale `expected_catalog_version`, both runnables, no
//! runnable, an unknown trace level, a missing `mode` or `context`) that the Host's loop API
//! would refuse to form. Execute requests still pass the Host's risk gate: each is held
//! (`GateReason::Unvalidated`) and granted by the runner's approver
//! ([`client::Grant`], counted: `tests/it/conformance.rs` requires the count to be non-zero).
//! Each loop answer is read twice: as JSON against the official schema and the advertised
//! `outputSchema`, and with the Host's typed readers (`ToolAnswer::read`,
//! `ToolAnswer::request_failure`), which must agree.
//!
//! Two things do not go through the Host, and why:
//!
//! * `PIL-CARRIER-MALFORMED-B` sends a body that is not JSON-RPC at all; no conformant client
//!   can be made to send it, so it goes over the raw client ([`client::Client`]), on its own
//!   connection.
//! * `tests/it/completeness.rs` reads the published closed-sets guide over the raw client:
//!   that is the gate's own reading of the server, not a vector.
//!
//! `PIL-CARRIER-UNKNOWN-TOOL-B` goes through the Host: its JSON-RPC error comes back as
//! `HostError::Carrier` and is checked as the response's `error`.

#[macro_use]
pub mod assert;
pub mod binding;
pub mod client;
pub mod ctx;
mod discover;
mod execute;
mod learn;
pub mod spawn;
mod trace;
mod validate;
pub mod vectors;

use std::cell::RefCell;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use serde_json::{json, Value};

use assert::{check_expected, error_kind, is_error, structured, Evidence, Stop};
use binding::{Binding, Case, CaseOp, Surface};
use client::Connector;
use ctx::Ctx;
use vectors::Vector;

/// The verdict on one vector or case.
#[derive(Clone, Debug)]
pub enum Verdict {
    /// Every assertion held; the notes say how statement-bound assertions were bound.
    Pass(Vec<String>),
    Fail(String),
    /// Not constructible for this Language; the reason is on the record.
    Skip(String),
}

impl Verdict {
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Pass(_) => "PASS",
            Verdict::Fail(_) => "FAIL",
            Verdict::Skip(_) => "SKIP",
        }
    }
}

/// One line of the report.
#[derive(Clone, Debug)]
pub struct Row {
    /// A vector id, or `CASE <surface>:<member>` for a binding case.
    pub id: String,
    pub verdict: Verdict,
    /// How long it took.
    pub elapsed: std::time::Duration,
}

/// The result of one run against one Language over one transport.
#[derive(Clone, Debug)]
pub struct Report {
    pub language: String,
    pub transport: String,
    pub rows: Vec<Row>,
    /// What the passing vectors and cases exhibited (for the completeness gate).
    pub evidence: Evidence,
}

impl Report {
    fn count(&self, word: &str) -> usize {
        self.rows.iter().filter(|r| r.verdict.word() == word).count()
    }
    pub fn passed(&self) -> usize {
        self.count("PASS")
    }
    pub fn failed(&self) -> usize {
        self.count("FAIL")
    }
    pub fn skipped(&self) -> usize {
        self.count("SKIP")
    }
    /// The verdict on `id`.
    pub fn verdict(&self, id: &str) -> Option<&Verdict> {
        self.rows.iter().find(|r| r.id == id).map(|r| &r.verdict)
    }
    /// `PASS|FAIL|SKIP <ID> <reason>` per row, then the summary line.
    pub fn table(&self) -> String {
        let mut out = format!("# {} over {}\n", self.language, self.transport);
        for r in &self.rows {
            let reason = match &r.verdict {
                Verdict::Pass(notes) if notes.is_empty() => String::new(),
                Verdict::Pass(notes) => format!("({})", notes.join("; ")),
                Verdict::Fail(why) | Verdict::Skip(why) => why.clone(),
            };
            let mut reason = reason.replace('\n', "\n      ");
            if r.elapsed >= std::time::Duration::from_millis(500) {
                reason.push_str(&format!(" [{:.1}s]", r.elapsed.as_secs_f64()));
            }
            out.push_str(&format!("{} {} {}\n", r.verdict.word(), r.id, reason).replace(" \n", "\n"));
        }
        out.push_str(&self.summary());
        out.push('\n');
        out
    }
    pub fn summary(&self) -> String {
        format!("{} passed, {} failed, {} skipped", self.passed(), self.failed(), self.skipped())
    }
}

thread_local! {
    static CAPTURING: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Route panics of the current thread into the verdict instead of stderr while a vector runs
/// (the runner runs vectors on a current-thread runtime).
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let captured = CAPTURING.with(|c| {
                let mut c = c.borrow_mut();
                match c.as_mut() {
                    Some(slot) => {
                        *slot = info.to_string();
                        true
                    }
                    None => false,
                }
            });
            if !captured {
                previous(info);
            }
        }));
    });
}

/// Run `fut`, turning a panic into `Stop::Fail` with its message.
async fn catching<T>(fut: impl std::future::Future<Output = Result<T, Stop>>) -> Result<T, Stop> {
    install_panic_hook();
    CAPTURING.with(|c| *c.borrow_mut() = Some(String::new()));
    let outcome = AssertUnwindSafe(fut).catch_unwind().await;
    let captured = CAPTURING.with(|c| c.borrow_mut().take()).unwrap_or_default();
    match outcome {
        Ok(r) => r,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(Stop::Fail(if captured.is_empty() { format!("panicked: {message}") } else { captured }))
        }
    }
}

/// Run every server-target vector (or only `only`) and every binding case against the
/// Language of `binding`, each on a fresh connection from `connector`.
pub async fn run(connector: &Connector, binding: &Binding, transport: &str, only: Option<&str>) -> Report {
    let mut report = Report {
        language: binding.language.to_owned(),
        transport: transport.to_owned(),
        rows: Vec::new(),
        evidence: Evidence::default(),
    };
    for v in vectors::all() {
        if only.is_some_and(|o| o != v.id) {
            continue;
        }
        let started = std::time::Instant::now();
        let verdict = if !v.is_server() {
            Verdict::Skip("client-target vector".to_owned())
        } else {
            // Boxed: a vector's future (a Host connection and every executor) is too large
            // for a test thread's default stack in a debug build.
            match catching(Box::pin(run_vector(connector, binding, v))).await {
                Ok((notes, evidence)) => {
                    report.evidence.merge(evidence);
                    Verdict::Pass(notes)
                }
                Err(Stop::Skip(why)) => Verdict::Skip(why),
                Err(Stop::Fail(why)) => Verdict::Fail(why),
            }
        };
        report.rows.push(Row { id: v.id.clone(), verdict, elapsed: started.elapsed() });
    }
    for case in &binding.cases {
        let id = case_id(case);
        if only.is_some_and(|o| o != id) {
            continue;
        }
        let started = std::time::Instant::now();
        let verdict = match catching(Box::pin(run_case(connector, binding, case, &id))).await {
            Ok(evidence) => {
                report.evidence.merge(evidence);
                Verdict::Pass(Vec::new())
            }
            Err(Stop::Skip(why)) => Verdict::Skip(why),
            Err(Stop::Fail(why)) => Verdict::Fail(why),
        };
        report.rows.push(Row { id, verdict, elapsed: started.elapsed() });
    }
    report
}

/// The report id of a case.
pub fn case_id(case: &Case) -> String {
    format!("CASE {}:{}", case.surface.as_str(), case.member)
}

async fn run_vector(
    connector: &Connector,
    binding: &Binding,
    v: &Vector,
) -> Result<(Vec<String>, Evidence), Stop> {
    let mut ctx = Ctx::open(connector, binding, v, &v.id).await?;
    for r in &v.requires {
        ctx.require(r)?;
    }
    dispatch(&mut ctx, v).await?;
    let machine = ["isError", "structuredContent_validates", "error_kind", "jsonrpc_error"];
    if machine.iter().any(|m| v.expected.get(*m).is_some()) {
        ensure!(!ctx.primary.is_empty(), "the executor registered no response to check `expected` on");
    }
    for response in &ctx.primary {
        check_expected(v, response)?;
    }
    ctx.prose.complete()?;
    Ok((ctx.prose.notes.clone(), ctx.evidence.clone()))
}

async fn dispatch(c: &mut Ctx<'_>, v: &Vector) -> assert::R {
    match v.id.as_str() {
        "PIL-DISCOVER-MANIFEST-G" => discover::manifest(c, v).await,
        "PIL-DISCOVER-INITMETA-G" => discover::init_meta(c, v).await,
        "PIL-COLDSTART-SIGNPOSTS-G" => discover::cold_start(c, v).await,
        "PIL-CARRIER-UNKNOWN-TOOL-B" => discover::unknown_tool(c, v).await,
        "PIL-CARRIER-MALFORMED-B" => discover::malformed(c, v).await,
        "PIL-LEARN-INDEX-G" => learn::index(c, v).await,
        "PIL-LEARN-FETCH-G" => learn::fetch(c, v).await,
        "PIL-LEARN-UNKNOWN-ID-B" => learn::unknown_id(c, v).await,
        "PIL-LEARN-TOPIC-UNDECLARED-B" => learn::topic_undeclared(c, v).await,
        "PIL-LOOKUP-LIST-G" => learn::list(c, v).await,
        "PIL-LOOKUP-PAGINATION-G" => learn::pagination(c, v).await,
        "PIL-LOOKUP-GET-UNKNOWN-B" => learn::get_unknown(c, v).await,
        "PIL-LOOKUP-CHANGED-UNDECLARED-B" => learn::changed_undeclared(c, v).await,
        "PIL-LOOKUP-UNKNOWN-BASELINE-B" => learn::unknown_baseline(c, v).await,
        "PIL-CATALOG-VERSION-STABLE-G" => learn::version_stable(c, v).await,
        "PIL-CATALOG-VERSION-BUMPS-G" => learn::version_bumps(c, v).await,
        "PIL-AUTHZ-INVISIBLE-ENTRY-B" => learn::invisible_entry(c, v).await,
        "PIL-VALIDATE-GOOD-G" => validate::good(c, v).await,
        "PIL-VALIDATE-UNKNOWN-NAME-B" => validate::unknown_name(c, v).await,
        "PIL-VALIDATE-WARNINGS-ONLY-G" => validate::warnings_only(c, v).await,
        "PIL-VALIDATE-SIDE-EFFECT-FREE-G" => validate::side_effect_free(c, v).await,
        "PIL-VALIDATE-RESERVED-CHARS-B" => validate::reserved_chars(c, v).await,
        "PIL-VALIDATE-CONTEXT-UNDECLARED-B" => validate::context_undeclared(c, v).await,
        "PIL-VALIDATE-CONTEXT-MISSING-B" => validate::context_missing(c, v).await,
        "PIL-VALIDATE-BOUNDS-B" => validate::bounds(c, v).await,
        "PIL-VALIDATE-CONSTRAINT-FALLBACK-B" => validate::constraint_fallback(c, v).await,
        "PIL-EXECUTE-SUCCESS-G" => execute::success(c, v).await,
        "PIL-EXECUTE-GUARD-B" => execute::guard(c, v).await,
        "PIL-EXECUTE-DRIFT-B" => execute::drift(c, v).await,
        "PIL-EXECUTE-DRIFT-BEFORE-VALIDATION-B" => execute::drift_before_validation(c, v).await,
        "PIL-EXECUTE-PROMOTION-DRIFT-B" => execute::promotion_drift(c, v).await,
        "PIL-EXECUTE-BOTH-RUNNABLES-B" => execute::both_runnables(c, v).await,
        "PIL-EXECUTE-NO-RUNNABLE-B" => execute::no_runnable(c, v).await,
        "PIL-EXECUTE-INPUT-BINDING-B" => execute::input_binding(c, v).await,
        "PIL-EXECUTE-UNKNOWN-TRACE-LEVEL-B" => execute::unknown_trace_level(c, v).await,
        "PIL-EXECUTE-TEST-RUN-UNDECLARED-B" => execute::test_run_undeclared(c, v).await,
        "PIL-EXECUTE-MODE-MISSING-B" => execute::mode_missing(c, v).await,
        "PIL-EXECUTE-IDEMPOTENT-REPLAY-G" => execute::idempotent_replay(c, v).await,
        "PIL-EXECUTE-IDEMPOTENT-CONFLICT-B" => execute::idempotent_conflict(c, v).await,
        "PIL-EXECUTE-TRACE-NONE-G" => execute::trace_none(c, v).await,
        "PIL-EXECUTE-STORE-FALSE-G" => execute::store_false(c, v).await,
        "PIL-EXECUTE-STORE-RETAIN-G" => execute::store_retain(c, v).await,
        "PIL-EXECUTE-STORE-UNSUPPORTED-B" => execute::store_unsupported(c, v).await,
        "PIL-EXECUTE-ENGINE-ERROR-B" => execute::engine_error(c, v).await,
        "PIL-EXECUTE-INTERNAL-B" => execute::internal(c, v).await,
        "PIL-TRACE-BRANCH-DECISION-G" => trace::branch_decision(c, v).await,
        "PIL-TRACE-ZERO-ITERATION-LOOP-G" => trace::zero_iteration_loop(c, v).await,
        "PIL-TRACE-PARTIAL-B" => trace::partial(c, v).await,
        "PIL-TRACE-FETCH-RETAINED-G" => trace::fetch_retained(c, v).await,
        "PIL-TRACE-FETCH-LEVEL-G" => trace::fetch_level(c, v).await,
        "PIL-TRACE-FETCH-LEVEL-B" => trace::fetch_level_none(c, v).await,
        "PIL-TRACE-FETCH-INDISTINGUISHABLE-B" => trace::fetch_indistinguishable(c, v).await,
        other => Err(Stop::Fail(format!("the runner has no executor for {other}"))),
    }
}

/// Replace every string equal to `from` inside `v` by `to`.
fn replace_strings(v: &mut Value, from: &str, to: &str) {
    match v {
        Value::String(s) if s == from => *s = to.to_owned(),
        Value::Array(a) => a.iter_mut().for_each(|x| replace_strings(x, from, to)),
        Value::Object(o) => o.values_mut().for_each(|x| replace_strings(x, from, to)),
        _ => {}
    }
}

/// Whether `response` exhibits closed-set member `member` of `surface` on its channel.
fn exhibits(surface: Surface, member: &str, response: &Value) -> bool {
    let s = structured(response);
    match surface {
        Surface::Kind => error_kind(response) == Some(member),
        Surface::Code => {
            !is_error(response)
                && s["diagnostics"].as_array().into_iter().flatten().any(|d| d["code"] == member)
        }
        Surface::Status => {
            !is_error(response)
                && (s["outcome"]["status"] == member
                    || s["trace"]["steps"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|t| t["outcome"]["status"] == member))
        }
    }
}

async fn run_case(connector: &Connector, binding: &Binding, case: &Case, id: &str) -> Result<Evidence, Stop> {
    let v = Vector {
        id: id.to_owned(),
        requirement: String::new(),
        target: "server".into(),
        polarity: "bad".into(),
        requires: Vec::new(),
        setup: String::new(),
        operation: String::new(),
        arguments: Value::Null,
        body: None,
        expected: json!({}),
        assertions: Vec::new(),
    };
    let mut ctx = Ctx::open(connector, binding, &v, id).await?;
    let op = match case.op {
        CaseOp::Validate => "validate",
        CaseOp::Execute => {
            ctx.require("execute")?;
            "execute"
        }
    };
    let (mut bad_args, mut good_args) = (case.bad.clone(), case.good.clone());
    if case.promote {
        let reference = execute::promote(&mut ctx).await?;
        replace_strings(&mut bad_args, "<promoted-ref>", &reference);
        replace_strings(&mut good_args, "<promoted-ref>", &reference);
    }
    let good = ctx.call(op, good_args).await?;
    let s = structured(&good);
    let accepted = !is_error(&good)
        && match case.op {
            CaseOp::Validate => s["valid"] == json!(true),
            CaseOp::Execute => s["outcome"]["ok"] == json!(true),
        };
    ensure!(accepted, "the corrected request is not accepted: {good}");
    ensure!(
        !exhibits(case.surface, case.member, &good),
        "the corrected request still exhibits `{}`: {good}",
        case.member
    );
    for hook in &case.setup {
        ctx.hook(hook).await?;
    }
    let bad = ctx.call(op, bad_args).await?;
    ensure!(
        exhibits(case.surface, case.member, &bad),
        "the bad request does not exhibit {} `{}`: {bad}",
        case.surface.as_str(),
        case.member
    );
    let mut evidence = ctx.evidence.clone();
    evidence.accept(case.surface, case.member, id);
    Ok(evidence)
}
