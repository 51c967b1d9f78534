//! The one request path of every `tools/call`:
//!
//! route (fixed tool, loop tool or plain tool) → structural check against the tool's own
//! advertised `inputSchema` (carrier `-32602`) → eligibility checks on reserved members
//! (request errors) → the engine call, bounded → normalisation → envelope
//! (`structuredContent`, one text summary, `isError` by channel).

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::ErrorData as McpError;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::capabilities::{Capability, SubFeature};
use crate::catalog::{self, CatalogSnapshot, ListQuery};
use crate::errors::{ErrorKind, RequestError};
use crate::execute::{ExecuteRequest, ExecuteResponse, Outcome, Recorder};
use crate::guides;
use crate::idempotency::Claim;
use crate::language::{ExecutionMode, Retention, TraceLevel};
use crate::promotion::{Promoted, Promotion};
use crate::server::{LangInfo, Shared};
use crate::session::Session;
use crate::trace::{self, RunRecord, RunStore, Trace};
use crate::validate::{self, Derivation, Diagnostic, ValidateRequest, ValidateResponse};

/// A loop stage served by a (possibly shared) tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    Validate,
    Execute,
}

/// Where a tool name leads.
#[derive(Clone, Debug)]
pub(crate) enum Route {
    Manifest,
    Guide,
    Catalog,
    /// A validate or execute tool and the Languages it serves (several when shared).
    Loop(Stage, Vec<usize>),
    Trace(usize),
    Promote(usize),
    Plain(usize),
}

/// A result on its channel.
pub(crate) struct Reply {
    structured: Value,
    text: String,
    is_error: bool,
}

impl Reply {
    fn value<T: Serialize>(v: &T, text: impl Into<String>) -> Reply {
        Reply {
            structured: serde_json::to_value(v).unwrap_or(Value::Null),
            text: text.into(),
            is_error: false,
        }
    }
    fn error(e: RequestError) -> Reply {
        Reply {
            text: e.error.message.clone(),
            structured: serde_json::to_value(&e).unwrap_or(Value::Null),
            is_error: true,
        }
    }
    pub fn structured(&self) -> &Value {
        &self.structured
    }
    pub fn into_result(self) -> CallToolResult {
        let mut r = if self.is_error {
            CallToolResult::structured_error(self.structured)
        } else {
            CallToolResult::structured(self.structured)
        };
        r.content = vec![ContentBlock::text(self.text)];
        r
    }
}

type Outcome2<T> = Result<T, RequestError>;

fn reply<T>(r: Outcome2<T>, ok: impl FnOnce(T) -> Reply) -> Reply {
    match r {
        Ok(v) => ok(v),
        Err(e) => Reply::error(e),
    }
}

fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// Serve one `tools/call`. `Err` is the carrier channel.
pub(crate) async fn call(
    shared: &Shared,
    session: &Arc<Session>,
    name: &str,
    args: Map<String, Value>,
) -> Result<Reply, McpError> {
    let Some(entry) = shared.tool(name) else {
        return Err(McpError::invalid_params(format!("Unknown tool: {name}"), None));
    };
    let as_value = Value::Object(args);
    if let Some(fault) = entry.input.iter_errors(&as_value).next() {
        return Err(McpError::invalid_params(
            format!("Invalid arguments for tool {name}: {fault} (at '{}')", fault.instance_path()),
            None,
        ));
    }
    let Value::Object(args) = as_value else {
        return Err(McpError::invalid_params("arguments must be an object", None));
    };
    let reply = match &entry.route {
        Route::Manifest => Reply::value(&*shared.manifest, shared.manifest_summary.clone()),
        Route::Guide => guide(shared, &args),
        Route::Catalog => catalog(shared, session, &args),
        Route::Loop(stage, langs) => match (select(shared, langs, &args), stage) {
            (Err(e), _) => Reply::error(e),
            (Ok(l), Stage::Validate) => reply(validate(shared, session, l, &args).await, |v| {
                let text = validate_summary(&v);
                Reply::value(&v, text)
            }),
            (Ok(l), Stage::Execute) => reply(execute(shared, session, l, &args).await, |v| {
                let text = execute_summary(&v);
                Reply::value(&v, text)
            }),
        },
        Route::Trace(l) => reply(fetch(shared, session, *l, &args), |v| {
            let text = format!("run {}: {}", v.run_id, v.outcome.status());
            Reply::value(&v, text)
        }),
        Route::Promote(l) => promote(shared, session, *l, &args).await,
        Route::Plain(l) => plain(session, *l, name, &args),
    };
    if cfg!(debug_assertions) && !matches!(entry.route, Route::Plain(_) | Route::Promote(_)) {
        if let Some(fault) = entry.output.iter_errors(reply.structured()).next() {
            tracing::error!(tool = name, %fault, "result does not match the advertised outputSchema");
            return Ok(Reply::error(RequestError::internal(format!(
                "result of {name} does not match its outputSchema: {fault}"
            ))));
        }
    }
    Ok(reply)
}

/// The Language a loop tool call is for: the tool's only Language, or, on a shared tool, the
/// one whose program argument is present (exactly one must be).
fn select(shared: &Shared, langs: &[usize], args: &Map<String, Value>) -> Outcome2<usize> {
    if let [only] = langs {
        return Ok(*only);
    }
    let present: Vec<usize> =
        langs.iter().copied().filter(|l| args.contains_key(shared.langs[*l].spec.program_argument)).collect();
    match present.as_slice() {
        [one] => Ok(*one),
        _ => {
            let choices: Vec<String> = langs
                .iter()
                .map(|l| {
                    format!("`{}` ({})", shared.langs[*l].spec.program_argument, shared.langs[*l].spec.name)
                })
                .collect();
            Err(RequestError::invalid(format!(
                "this tool serves several Languages: supply exactly one program argument of {}",
                choices.join(", ")
            )))
        }
    }
}

fn language<'s>(shared: &'s Shared, args: &Map<String, Value>) -> Outcome2<(usize, &'s LangInfo)> {
    let name = str_arg(args, "language").unwrap_or_default();
    shared.langs.iter().enumerate().find(|(_, l)| l.spec.name == name).ok_or_else(|| {
        let names: Vec<&str> = shared.langs.iter().map(|l| l.spec.name).collect();
        RequestError::not_found(format!("unknown language '{name}'; languages: {}", names.join(", ")))
    })
}

fn guide(shared: &Shared, args: &Map<String, Value>) -> Reply {
    let found = language(shared, args).and_then(|(_, l)| {
        guides::learn(
            l.spec.name,
            &l.spec.guides,
            l.effective.declares_sub(SubFeature::TopicFetch),
            str_arg(args, "id"),
            str_arg(args, "topic"),
        )
    });
    reply(found, |v| {
        let text = match (v.get("guides"), v.pointer("/guide/id")) {
            (Some(Value::Array(g)), _) => format!("{} guide(s)", g.len()),
            (_, Some(id)) => format!("guide {}", id.as_str().unwrap_or_default()),
            _ => "guide".to_owned(),
        };
        Reply { structured: v, text, is_error: false }
    })
}

const CATALOG_MEMBERS: [&str; 7] = ["kind", "tag", "q", "cursor", "limit", "id", "catalog_version"];

fn catalog(shared: &Shared, session: &Session, args: &Map<String, Value>) -> Reply {
    let (l, info) = match language(shared, args) {
        Ok(x) => x,
        Err(e) => return Reply::error(e),
    };
    if !info.effective.declares(Capability::Catalog) {
        return Reply::error(RequestError::invalid(format!(
            "{} does not declare catalog: its programs use no environment-bound names",
            info.spec.name
        )));
    }
    let Some(snap) = session.snapshot(l) else {
        return Reply::error(RequestError::internal("the engine returned no catalog snapshot"));
    };
    let verb = str_arg(args, "verb").unwrap_or_default();
    let allowed: &[&str] = match verb {
        "list" if info.effective.declares_sub(SubFeature::Search) => &["kind", "tag", "q", "cursor", "limit"],
        "list" => &["kind", "tag", "cursor", "limit"],
        "get" => &["id"],
        _ => &["catalog_version"],
    };
    if let Some(m) = CATALOG_MEMBERS.iter().find(|m| args.contains_key(**m) && !allowed.contains(m)) {
        let why = if *m == "q" && verb == "list" {
            format!(
                "{} does not declare catalog.search: filter with `kind` or `tag` instead of `q`",
                info.spec.name
            )
        } else {
            format!("`{m}` does not apply to verb `{verb}` (it takes: {})", allowed.join(", "))
        };
        return Reply::error(RequestError::invalid(why).with_catalog_version(snap.version()));
    }
    match verb {
        "list" => {
            let query = ListQuery {
                kind: str_arg(args, "kind"),
                tag: str_arg(args, "tag"),
                q: str_arg(args, "q"),
                cursor: str_arg(args, "cursor"),
                limit: args
                    .get("limit")
                    .and_then(Value::as_u64)
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            };
            reply(catalog::list(&snap, &query), |v| {
                let text = format!("{} entr{}", v.items.len(), if v.items.len() == 1 { "y" } else { "ies" });
                Reply::value(&v, text)
            })
        }
        "get" => match str_arg(args, "id") {
            None => Reply::error(
                RequestError::invalid("verb `get` requires `id`").with_catalog_version(snap.version()),
            ),
            Some(id) => reply(catalog::get(&snap, id), |v| {
                let text = format!("{} ({})", v.entry.id, v.entry.kind);
                Reply::value(&v, text)
            }),
        },
        _ => {
            if !info.effective.declares_sub(SubFeature::ChangedSince) {
                return Reply::error(
                    RequestError::invalid(format!(
                        "{} does not declare catalog.changed_since: use verb `list` and compare catalog_version",
                        info.spec.name
                    ))
                    .with_catalog_version(snap.version()),
                );
            }
            let Some(since) = str_arg(args, "catalog_version") else {
                return Reply::error(
                    RequestError::invalid("verb `changed_since` requires `catalog_version`")
                        .with_catalog_version(snap.version()),
                );
            };
            let result = match session.history(l) {
                Some(h) => h.changed_since(&snap, since),
                None => Err(RequestError::internal("no catalog history")),
            };
            reply(result, |v| {
                let text = format!("{} change(s)", v.changes.len());
                Reply::value(&v, text)
            })
        }
    }
}

/// Validate exactly as the validate tool does (also the execute-time re-validation guard).
/// The caller's snapshot for a catalog-bearing Language (`None` without `catalog`). One
/// operation takes it once, so drift check, validation and promotion baseline all see the same
/// catalog.
fn snapshot_of(info: &LangInfo, session: &Session, l: usize) -> Outcome2<Option<Arc<CatalogSnapshot>>> {
    if !info.effective.declares(Capability::Catalog) {
        return Ok(None);
    }
    session
        .snapshot(l)
        .map(Some)
        .ok_or_else(|| RequestError::internal("the engine returned no catalog snapshot"))
}

async fn run_validation(
    info: &LangInfo,
    session: &Session,
    l: usize,
    snapshot: Option<Arc<CatalogSnapshot>>,
    program: &Value,
    context: Option<&Value>,
) -> Outcome2<ValidateResponse> {
    let limits = info.limits;
    let size = program.to_string().len();
    if size > limits.max_program_bytes {
        return Err(RequestError::new(
            ErrorKind::BoundsExceeded,
            format!("program is {size} bytes; the bound is {}", limits.max_program_bytes),
        ));
    }
    let depth = validate::depth(program);
    if depth > limits.max_depth {
        return Err(RequestError::new(
            ErrorKind::BoundsExceeded,
            format!("program nests {depth} levels deep; the bound is {}", limits.max_depth),
        ));
    }
    let context_findings = validate::check_context(info.context_validator.as_ref(), context);
    let request = ValidateRequest {
        program: Arc::new(program.clone()),
        context: context.filter(|_| context_findings.is_empty()).map(|c| Arc::new(c.clone())),
        catalog: snapshot.clone(),
        caller: session.caller.clone(),
    };
    let engine = session.engines[l].clone();
    let too_slow = || {
        RequestError::new(
            ErrorKind::BoundsExceeded,
            format!("validation exceeded its time bound of {:?}", limits.validate_time),
        )
    };
    let failed = |error: &dyn std::fmt::Display| {
        tracing::error!(language = info.spec.name, %error, "the validator failed");
        RequestError::internal("the validator failed; the program was not judged")
    };
    let mut core = if limits.isolate_validation {
        let task = tokio::task::spawn_blocking(move || engine.validate_program(&request));
        match tokio::time::timeout(limits.validate_time, task).await {
            Err(_) => return Err(too_slow()),
            Ok(Err(join)) => return Err(failed(&join)),
            Ok(Ok(core)) => core,
        }
    } else {
        let started = std::time::Instant::now();
        let run = std::panic::AssertUnwindSafe(|| engine.validate_program(&request));
        match std::panic::catch_unwind(run) {
            Err(_) => return Err(failed(&"panicked")),
            Ok(_) if started.elapsed() > limits.validate_time => return Err(too_slow()),
            Ok(core) => core,
        }
    };
    if let Some(message) = core.bound_exceeded.take() {
        return Err(RequestError::new(ErrorKind::BoundsExceeded, message));
    }
    Ok(validate::derive(
        core,
        context_findings,
        &Derivation {
            codes: &info.spec.sets.codes,
            plan: info.effective.declares(Capability::Plan),
            catalog_version: snapshot.map(|s| s.version().to_owned()),
        },
    ))
}

async fn validate(
    shared: &Shared,
    session: &Session,
    l: usize,
    args: &Map<String, Value>,
) -> Outcome2<ValidateResponse> {
    let info = &shared.langs[l];
    let program = args.get(info.spec.program_argument).unwrap_or(&Value::Null);
    run_validation(info, session, l, snapshot_of(info, session, l)?, program, args.get("context")).await
}

fn validate_summary(v: &ValidateResponse) -> String {
    let n = v.diagnostics.len();
    match (&v.plan, v.valid) {
        (Some(p), true) => format!("valid: max risk {} ({n} diagnostic(s))", p.max_risk),
        (None, true) => format!("valid ({n} diagnostic(s))"),
        (_, false) => format!("invalid: {n} diagnostic{}", if n == 1 { "" } else { "s" }),
    }
}

fn execute_summary(v: &ExecuteResponse) -> String {
    match v.outcome.error() {
        None => v.outcome.status().to_owned(),
        Some(e) => format!("{}: {e}", v.outcome.status()),
    }
}

fn new_run_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("run_{}", &id[..16])
}

fn refused(run_id: String, outcome: Outcome, diagnostics: Option<Vec<Diagnostic>>) -> ExecuteResponse {
    ExecuteResponse { run_id, outcome, output: None, diagnostics, trace: None }
}

/// The request members that passed well-formedness (step 1 of Part II §6.5.2).
struct WellFormed<'a> {
    runnable: Runnable<'a>,
    ceiling: TraceLevel,
    effective_level: Option<TraceLevel>,
    test_run: bool,
    mode: ExecutionMode,
    retention: Retention,
    store_flag: Option<bool>,
}

const REFUSALS: [&str; 3] = ["validation_error", "catalog_drift", "promotion_drift"];

/// The execute processing order of Part II §6.5.2, with idempotency around it: a replay
/// returns the recorded response of the first Run without further processing.
async fn execute(
    shared: &Shared,
    session: &Session,
    l: usize,
    args: &Map<String, Value>,
) -> Outcome2<ExecuteResponse> {
    let info = &shared.langs[l];
    let checked = well_formed(info, session, l, args)?;
    // Keys protect against repeated effects; a test run has none, so it neither claims nor
    // replays a key.
    let key = match args.get("idempotency_key") {
        Some(Value::String(k))
            if info.effective.declares_sub(SubFeature::Idempotency) && !checked.test_run =>
        {
            k
        }
        _ => return run_checked(shared, session, l, args, checked).await,
    };
    // The runnable, its input, and the mode it runs in (an installation is not an evaluation).
    let fingerprint = crate::digest::canonical(&serde_json::json!({
        "program": args.get(info.spec.program_argument),
        "program_ref": args.get("program_ref"),
        "input": args.get("input"),
        "mode": checked.mode.as_str(),
    }));
    // Under duration retention the window outlives the process: consult the durable record.
    let durable = match (&info.spec.retention, &shared.durable) {
        (Some(Retention::Duration { length, .. }), Some(store)) => Some((store, *length)),
        _ => None,
    };
    let durable_key = format!("{}\u{0}{key}", session.caller.id);
    if let Some((store, _)) = durable {
        if let Some((recorded, response)) = store.get_replay(&durable_key) {
            return match serde_json::from_value::<ExecuteResponse>(response) {
                Ok(r) if recorded == fingerprint => Ok(r),
                Ok(_) => Err(conflict()),
                Err(e) => Err(RequestError::internal(format!("unreadable idempotency record: {e}"))),
            };
        }
    }
    match shared.idempotency.claim(&session.caller.id, key, fingerprint.clone()).await {
        Claim::Replay(response) => Ok(*response),
        Claim::Conflict => Err(conflict()),
        Claim::Fresh(guard) => {
            let response = run_checked(shared, session, l, args, checked).await?;
            if !REFUSALS.contains(&response.outcome.status()) {
                let window = match &info.spec.retention {
                    Some(Retention::Duration { length, .. }) => *length,
                    _ => std::time::Duration::MAX,
                };
                if let Some((store, length)) = durable {
                    let value = serde_json::to_value(&response).unwrap_or(Value::Null);
                    if let Err(e) = store.put_replay(&durable_key, &fingerprint, &value, length) {
                        tracing::error!(error = %e, "could not persist the idempotency record");
                    }
                }
                guard.record(&response, window);
            }
            Ok(response)
        }
    }
}

/// The runnable of an execute request.
enum Runnable<'a> {
    Inline(&'a Value),
    Promoted(Arc<Promoted>),
}

fn conflict() -> RequestError {
    RequestError::new(
        ErrorKind::IdempotencyConflict,
        "this idempotency_key was used with a different runnable or input, or a different mode: use a fresh key",
    )
}

fn well_formed<'a>(
    info: &LangInfo,
    session: &Session,
    l: usize,
    args: &'a Map<String, Value>,
) -> Outcome2<WellFormed<'a>> {
    let spec = info.spec;
    let caps = &info.effective;
    let program = args.get(spec.program_argument);
    match (program, args.get("program_ref")) {
        (Some(_), Some(_)) => {
            return Err(RequestError::invalid(format!(
                "supply exactly one of `{}` and `program_ref`, not both",
                spec.program_argument
            )))
        }
        (None, None) => {
            return Err(RequestError::invalid(format!(
                "supply exactly one runnable: `{}` (an inline program) or `program_ref`",
                spec.program_argument
            )))
        }
        _ => {}
    }
    let runnable = match (program, args.get("program_ref")) {
        (Some(p), _) => Runnable::Inline(p),
        (_, r) => {
            let reference = r.and_then(Value::as_str).unwrap_or_default();
            match session.promoted(l, reference) {
                Some(p) if spec.sets.promoted.is_some() => Runnable::Promoted(p),
                _ => return Err(RequestError::not_found(format!("unknown program_ref '{reference}'"))),
            }
        }
    };
    let ceiling = spec.trace.unwrap_or(TraceLevel::Summary);
    let requested = match str_arg(args, "trace_level") {
        None => Some(ceiling),
        Some("none") => None,
        Some(s) => Some(TraceLevel::parse(s).ok_or_else(|| {
            RequestError::invalid(format!("unknown trace_level '{s}': use none, summary or full"))
        })?),
    };
    let effective_level = requested.map(|r| r.min(ceiling));
    if args.contains_key("test_run") && !caps.declares_sub(SubFeature::TestRun) {
        return Err(RequestError::invalid(format!(
            "{} does not declare execute.test_run: omit `test_run`",
            spec.name
        )));
    }
    let test_run = args.get("test_run").and_then(Value::as_bool).unwrap_or(false);
    let mode = match (spec.execution, str_arg(args, "mode")) {
        (Some(ExecutionMode::Both), Some("immediate")) => ExecutionMode::Immediate,
        (Some(ExecutionMode::Both), Some("deploy")) => ExecutionMode::Deploy,
        (Some(ExecutionMode::Both), Some(m)) => {
            return Err(RequestError::invalid(format!("unknown mode '{m}': use immediate or deploy")))
        }
        (Some(ExecutionMode::Both), None) => {
            return Err(RequestError::invalid(format!(
                "{} executes in mode \"both\": `mode` (immediate or deploy) is required",
                spec.name
            )))
        }
        (_, Some(_)) if args.contains_key("mode") => {
            return Err(RequestError::invalid(format!(
                "`mode` applies only to a Language with execution \"both\"; {} is {}",
                spec.name,
                spec.execution.map(ExecutionMode::as_str).unwrap_or("not executable")
            )))
        }
        (Some(m), _) => m,
        (None, _) => ExecutionMode::Immediate,
    };
    let retention = spec.retention.clone().unwrap_or(Retention::None);
    let store_flag = args.get("store").and_then(Value::as_bool);
    if store_flag == Some(true) && retention == Retention::None {
        return Err(RequestError::new(
            ErrorKind::Unsupported,
            format!("{} retains no runs (retention \"none\"): `store: true` cannot be honoured", spec.name),
        ));
    }
    if store_flag == Some(true) && retention == Retention::Session && session.stateless {
        return Err(RequestError::new(
            ErrorKind::Unsupported,
            format!(
                "{} retains runs for the MCP session, and this request has none (stateless): `store: true` cannot be honoured",
                spec.name
            ),
        ));
    }
    if args.contains_key("idempotency_key") && !caps.declares_sub(SubFeature::Idempotency) {
        return Err(RequestError::invalid(format!(
            "{} does not declare execute.idempotency: omit `idempotency_key`",
            spec.name
        )));
    }
    if args.contains_key("expected_catalog_version") && !caps.declares(Capability::Catalog) {
        return Err(RequestError::invalid(format!(
            "{} has no catalog: omit `expected_catalog_version`",
            spec.name
        )));
    }
    Ok(WellFormed { runnable, ceiling, effective_level, test_run, mode, retention, store_flag })
}

/// Steps 2-5 of Part II §6.5.2 on a well-formed request.
async fn run_checked(
    shared: &Shared,
    session: &Session,
    l: usize,
    args: &Map<String, Value>,
    checked: WellFormed<'_>,
) -> Outcome2<ExecuteResponse> {
    let info = &shared.langs[l];
    let spec = info.spec;
    let WellFormed { runnable, ceiling, effective_level, test_run, mode, retention, store_flag } = checked;
    let run_id = new_run_id();
    // 2. Catalog drift.
    let snapshot = snapshot_of(info, session, l)?;
    if let (Some(expected), Some(snap)) = (str_arg(args, "expected_catalog_version"), &snapshot) {
        if expected != snap.version() {
            return Ok(refused(run_id, Outcome::failure("catalog_drift", "catalog version mismatch"), None));
        }
    }
    // 3. Re-validation (inline) or the promotion-baseline check (program_ref); 4. input
    // binding of a promoted program against its entry's input_schema.
    let context = args.get("context");
    let program = match runnable {
        Runnable::Inline(program) => {
            let verdict = run_validation(info, session, l, snapshot.clone(), program, context).await?;
            if !verdict.valid {
                return Ok(refused(
                    run_id,
                    Outcome::failure("validation_error", "the program failed validation"),
                    Some(verdict.diagnostics),
                ));
            }
            Arc::new(program.clone())
        }
        Runnable::Promoted(p) => {
            let drifted = snapshot.as_deref().map(|s| p.drift(s)).unwrap_or_default();
            if !drifted.is_empty() {
                return Ok(refused(
                    run_id,
                    Outcome::failure(
                        "promotion_drift",
                        format!(
                            "referenced entries changed since promotion: {}; promote the program again",
                            drifted.join(", ")
                        ),
                    ),
                    None,
                ));
            }
            let mut findings = validate::check_context(info.context_validator.as_ref(), context);
            findings.extend(p.bind_input(args.get("input")));
            if !findings.is_empty() {
                return Ok(refused(
                    run_id,
                    Outcome::failure("validation_error", "the input or context failed binding"),
                    Some(findings),
                ));
            }
            p.body.clone()
        }
    };
    // 5. Execution.
    let promoted = Arc::new(session.promoted_bodies(l, snapshot.as_deref()));
    let request = ExecuteRequest {
        run_id: run_id.clone(),
        program,
        input: args.get("input").map(|v| Arc::new(v.clone())),
        context: context.map(|v| Arc::new(v.clone())),
        catalog: snapshot,
        caller: session.caller.clone(),
        mode,
        test_run,
        promoted,
    };
    let recorder = Recorder::new(info.limits.max_steps);
    let engine = session.engines[l].clone();
    // On its own task, so the time bound holds even against an engine that never yields; a
    // timed-out run is told to stop (Run::should_stop) and aborted at its next await.
    let task = {
        let recorder = recorder.clone();
        tokio::spawn(async move { engine.execute_program(&request, recorder).await })
    };
    let abort = task.abort_handle();
    let run = match tokio::time::timeout(info.limits.execute_time, task).await {
        Err(elapsed) => {
            recorder.cancel();
            abort.abort();
            Err(elapsed)
        }
        Ok(joined) => Ok(joined.map_err(|e| {
            tracing::error!(language = spec.name, error = %e, "the engine failed");
        })),
    };
    let findings = recorder.input_findings();
    let started = recorder.started();
    if !findings.is_empty() && !started {
        return Ok(refused(
            run_id,
            Outcome::failure("validation_error", "the input failed binding"),
            Some(findings),
        ));
    }
    let (outcome, output) = match run {
        Err(_) => (
            Outcome::failure(
                "partial",
                format!("execution exceeded its time bound of {:?}", info.limits.execute_time),
            ),
            None,
        ),
        Ok(Err(_panic)) if !started => {
            return Err(RequestError::internal("the engine failed before execution began"));
        }
        Ok(Err(_panic)) => (Outcome::failure("error", "the engine failed during execution"), None),
        Ok(Ok(_)) if recorder.exceeded() => (
            Outcome::failure(
                "partial",
                format!("execution exceeded its bound of {} steps", info.limits.max_steps),
            ),
            None,
        ),
        Ok(Ok(_)) if !findings.is_empty() => {
            (Outcome::failure("error", "the input failed binding after execution began"), None)
        }
        Ok(Ok(finish)) => {
            let output = if finish.outcome.ok() { finish.output } else { None };
            match spec.sets.status(finish.outcome.status()) {
                Some(_) => (finish.outcome, output),
                None => (
                    Outcome::failure(
                        "error",
                        format!("engine reported an undeclared status '{}'", finish.outcome.status()),
                    ),
                    None,
                ),
            }
        }
    };
    let steps = recorder.steps();
    let retain = match store_flag {
        Some(flag) => flag,
        None => retention != Retention::None && !(retention == Retention::Session && session.stateless),
    };
    if retain {
        let record = RunRecord {
            run_id: run_id.clone(),
            owner: session.caller.id.to_string(),
            language: spec.name.to_owned(),
            outcome: outcome.clone(),
            output: output.clone(),
            level: ceiling,
            steps: trace::render_steps(&steps, ceiling),
            stats: None,
        };
        let stored = match &retention {
            Retention::Duration { length, .. } => match &shared.durable {
                Some(store) => store.put(record, *length),
                None => Err("no durable run store is configured".to_owned()),
            },
            _ => session.runs.put(record, std::time::Duration::MAX),
        };
        if let Err(e) = stored {
            tracing::error!(run_id, error = %e, "could not retain run record");
        }
    }
    let trace = effective_level.map(|level| Trace {
        run_id: run_id.clone(),
        level: level.into(),
        steps: trace::render_steps(&steps, level),
        stats: None,
    });
    Ok(ExecuteResponse { run_id, outcome, output, diagnostics: None, trace })
}

fn fetch(
    shared: &Shared,
    session: &Session,
    l: usize,
    args: &Map<String, Value>,
) -> Outcome2<trace::TraceFetchResponse> {
    let info = &shared.langs[l];
    let requested = match str_arg(args, "trace_level") {
        None => None,
        Some("none") => {
            return Err(RequestError::invalid(
                "trace_level \"none\" has no meaning on the fetch door: use summary or full",
            ))
        }
        Some(s) => Some(TraceLevel::parse(s).ok_or_else(|| {
            RequestError::invalid(format!("unknown trace_level '{s}': use summary or full"))
        })?),
    };
    if args.contains_key("question") && !info.effective.declares_sub(SubFeature::Narrate) {
        return Err(RequestError::invalid(format!(
            "{} does not declare trace_fetch.narrate: omit `question`; the trace envelope carries the facts",
            info.spec.name
        )));
    }
    let run_id = str_arg(args, "run_id").unwrap_or_default();
    let record = match &info.spec.retention {
        Some(Retention::Duration { .. }) => shared.durable.as_ref().and_then(|s| s.get(run_id)),
        _ => session.runs.get(run_id),
    }
    .filter(|r| r.language == info.spec.name);
    let mut response = trace::fetch(record, &session.caller.id, requested)?;
    if info.effective.declares_sub(SubFeature::Narrate) {
        response.narration = session.engines[l].narrate(&response, str_arg(args, "question"));
    }
    Ok(response)
}

fn plain(session: &Session, l: usize, name: &str, args: &Map<String, Value>) -> Reply {
    let engine = &session.engines[l];
    match engine.call_plain_tool(name, &Value::Object(args.clone()), &session.caller) {
        Some(Ok(v)) => {
            let v = if v.is_object() { v } else { serde_json::json!({ "result": v }) };
            Reply { text: v.to_string(), structured: v, is_error: false }
        }
        Some(Err(message)) => {
            Reply { structured: serde_json::json!({ "error": message }), text: message, is_error: true }
        }
        None => Reply::error(RequestError::internal(format!("engine has no tool {name}"))),
    }
}

/// The promote tool: validate the body exactly as validate does, then store it immutably.
async fn promote(shared: &Shared, session: &Session, l: usize, args: &Map<String, Value>) -> Reply {
    let info = &shared.langs[l];
    let Some(kind) = info.spec.sets.promoted else {
        return Reply::error(RequestError::internal("this Language has no promoted kind"));
    };
    let program = args.get(info.spec.program_argument).unwrap_or(&Value::Null);
    let snapshot = match snapshot_of(info, session, l) {
        Ok(s) => s,
        Err(e) => return Reply::error(e),
    };
    let verdict = match run_validation(info, session, l, snapshot.clone(), program, args.get("context")).await
    {
        Ok(v) => v,
        Err(e) => return Reply::error(e),
    };
    let (true, Some(plan), Some(snapshot)) = (verdict.valid, verdict.plan.as_ref(), snapshot) else {
        // An invalid program is a result, never an error (Part III §7.1), here as anywhere.
        let n = verdict.diagnostics.len();
        return Reply {
            structured: serde_json::json!({"promoted": false, "diagnostics": verdict.diagnostics}),
            text: format!("not promoted: the program is invalid ({n} diagnostic(s))"),
            is_error: false,
        };
    };
    let promotion = Promotion {
        kind,
        body: program,
        plan,
        name: str_arg(args, "name").unwrap_or_default().to_owned(),
        description: str_arg(args, "description").map(str::to_owned),
        input_schema: args.get("input_schema").cloned(),
        language: info.spec.name,
    };
    match Promoted::new(promotion, &snapshot).map(|p| session.promote(l, p)) {
        Ok(Some(p)) => {
            let version = session.snapshot(l).map(|s| s.version().to_owned()).unwrap_or_default();
            Reply {
                text: format!("promoted as {}", p.entry.id),
                structured: serde_json::json!({"program_ref": p.entry.id, "entry": p.entry, "catalog_version": version}),
                is_error: false,
            }
        }
        Ok(None) => Reply::error(RequestError::internal("no promotion table for this Language")),
        Err(e) => Reply::error(RequestError::invalid(e)),
    }
}
