//! The `validate` operation (Part II §6.4, Part III §4.4): bounds, context checks, the bounded
//! engine call, and the derivations (codes outside the closed set become `constraint`, step ids
//! with `#` or `/` are reported, `valid`, the plan's maxima, `references`).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::call::{CallEnd, EngineCall};
use super::threads::Work;
use super::{Ctx, LoopArgs, OpResult};
use crate::engine::validation::{counting_steps, ValidateRequest, ValidationCore};
use crate::engine::CatalogSnapshot;
use crate::model::capabilities::Capability;
use crate::model::check::{SchemaCheck, MAX_FAULTS};
use crate::model::diagnostic::{reserved_char, Diagnostic, Locator, Severity, TextRange};
use crate::model::errors::{ErrorKind, RequestError};
use crate::model::plan::{Plan, ValidateResponse};
use crate::model::risk::RiskHints;
use crate::state::verdicts::{VerdictKey, Verdicts};

/// The validate tool. A valid verdict is remembered for execute's re-validation where the
/// Language keeps a revalidation cache.
pub(crate) async fn validate(ctx: Ctx<'_>, args: LoopArgs) -> OpResult<ValidateResponse> {
    let program = args.program.unwrap_or_else(|| Arc::new(Value::Null));
    let (verdict, planned) = judge(ctx, ctx.snapshot().await?, &program, args.context.as_ref(), true).await?;
    if verdict.valid {
        let version = verdict.catalog_version.as_deref();
        remember(cached(ctx, &program, args.context.as_deref(), version), planned);
    }
    Ok(verdict)
}

/// This session's revalidation cache for the Language, with the key of `program` judged with
/// `context` against `catalog_version`; `None` where the Language keeps no cache.
pub(crate) fn cached<'a>(
    ctx: Ctx<'a>,
    program: &Value,
    context: Option<&Value>,
    catalog_version: Option<&str>,
) -> Option<(&'a Verdicts, VerdictKey)> {
    let verdicts = ctx.session.verdicts.get(ctx.index)?;
    Some((verdicts, verdicts.key(program, context, catalog_version)?))
}

/// Remembers a valid verdict in `cached`, with its plan's number of steps (an invalid program
/// is judged again, so that its refusal carries its diagnostics).
pub(crate) fn remember(cached: Option<(&Verdicts, VerdictKey)>, planned: Option<usize>) {
    if let Some((verdicts, key)) = cached {
        verdicts.remember(key, planned);
    }
}

/// The text summary of a validate response.
pub(crate) fn summary(v: &ValidateResponse) -> String {
    let n = v.diagnostics.len();
    match (&v.plan, v.valid) {
        (Some(p), true) => format!("valid: max risk {} ({n} diagnostic(s))", p.max_risk),
        (None, true) => format!("valid ({n} diagnostic(s))"),
        (_, false) => format!("invalid: {n} diagnostic{}", if n == 1 { "" } else { "s" }),
    }
}

/// Validate exactly as the validate tool does (the promote tool's check): bounds first,
/// context checks, the bounded engine call, then the derivations against `snapshot`.
pub(crate) async fn run_validation(
    ctx: Ctx<'_>,
    snapshot: Option<Arc<CatalogSnapshot>>,
    program: &Arc<Value>,
    context: Option<&Arc<Value>>,
) -> OpResult<ValidateResponse> {
    Ok(judge(ctx, snapshot, program, context, true).await?.0)
}

/// Execute's re-validation guard: the verdict [`run_validation`] gives, with the plan's number
/// of steps in place of its steps (see [`counting_steps`]).
pub(crate) async fn revalidate(
    ctx: Ctx<'_>,
    snapshot: Option<Arc<CatalogSnapshot>>,
    program: &Arc<Value>,
    context: Option<&Arc<Value>>,
) -> OpResult<(ValidateResponse, Option<usize>)> {
    judge(ctx, snapshot, program, context, false).await
}

/// The verdict, and the plan's number of steps where it has a plan; `keep_plan` keeps its steps.
async fn judge(
    ctx: Ctx<'_>,
    snapshot: Option<Arc<CatalogSnapshot>>,
    program: &Arc<Value>,
    context: Option<&Arc<Value>>,
    keep_plan: bool,
) -> OpResult<(ValidateResponse, Option<usize>)> {
    let info = ctx.lang;
    check_size(ctx, program)?;
    let context_findings = check_context(info.context_validator.as_ref(), context.map(|c| &**c));
    let request = ValidateRequest {
        program: program.clone(),
        context: context.filter(|_| context_findings.is_empty()).cloned(),
        catalog: snapshot.clone(),
        caller: ctx.session.caller.clone(),
    };
    let mut core = call_validator(ctx, request, keep_plan).await?;
    if let Some(message) = core.bound_exceeded.take() {
        return Err(RequestError::new(ErrorKind::BoundsExceeded, message));
    }
    let unkept = core.unkept_steps;
    let verdict = derive(
        core,
        context_findings,
        &Derivation {
            codes: &info.spec.sets.codes,
            plan: info.effective.declares(Capability::Plan),
            catalog_version: snapshot.map(|s| s.version().to_owned()),
        },
    );
    let planned = verdict.plan.as_ref().map(|p| p.steps.len() + unkept);
    Ok((verdict, planned))
}

/// The program's size and nesting bounds, checked before any engine code runs.
fn check_size(ctx: Ctx<'_>, program: &Value) -> OpResult<()> {
    let limits = ctx.lang.limits;
    let (size, depth) = crate::engine::call::measure(program);
    if size > limits.max_program_bytes {
        return Err(RequestError::new(
            ErrorKind::BoundsExceeded,
            format!("program is {size} bytes; the bound is {}", limits.max_program_bytes),
        ));
    }
    if depth > limits.max_depth {
        return Err(RequestError::new(
            ErrorKind::BoundsExceeded,
            format!("program nests {depth} levels deep; the bound is {}", limits.max_depth),
        ));
    }
    Ok(())
}

/// The engine's validate method under the time bound: on an engine thread, or inline and judged
/// after the fact when the Language declares its validator cheap (`#[loop_tool(validate,
/// inline)]`; its program's size and depth were checked first either way).
async fn call_validator(ctx: Ctx<'_>, request: ValidateRequest, keep_plan: bool) -> OpResult<ValidationCore> {
    let limits = ctx.lang.limits;
    let engine = ctx.engine();
    let call = EngineCall::new(
        Work::Validate,
        &limits,
        limits.validate_time,
        ctx.lane(super::slots::LaneKind::Engine),
    );
    let judge = move || match keep_plan {
        true => engine.validate_program(&request),
        false => counting_steps(|| engine.validate_program(&request)),
    };
    let ended =
        if ctx.lang.spec.tools.validate.inline { call.run_inline(judge) } else { call.run(judge).await };
    match ended {
        // Its clock started when it got its slot: the wait is not its time.
        Ok(_) if call.expired() => Err(too_slow(&limits)),
        Ok(core) => {
            // The validator's own waits (a pooled connection) join the request's queue time.
            if !core.waited.is_zero() {
                super::call::add_queued(core.waited);
            }
            Ok(core)
        }
        Err(CallEnd::TimedOut) => Err(too_slow(&limits)),
        Err(CallEnd::Panicked) => {
            tracing::error!(language = ctx.lang.spec.name, "the validator panicked");
            Err(RequestError::internal("the validator failed; the program was not judged"))
        }
        Err(end @ CallEnd::Busy(..)) => Err(super::call_failed(&ctx, "validation", &call, end)),
    }
}

fn too_slow(limits: &crate::engine::Limits) -> RequestError {
    RequestError::new(
        ErrorKind::BoundsExceeded,
        format!("validation exceeded its time bound of {:?}", limits.validate_time),
    )
}

/// What the runtime needs to know to turn findings into a response.
pub struct Derivation<'a> {
    /// The closed code set.
    pub codes: &'a [&'static str],
    /// `plan` declared.
    pub plan: bool,
    /// The snapshot token, for catalog-bearing Languages.
    pub catalog_version: Option<String>,
}

/// Derive the response: reserved-character and closed-set normalisation, `valid`, the plan
/// with its maxima, `references`.
pub fn derive(mut core: ValidationCore, extra: Vec<Diagnostic>, how: &Derivation<'_>) -> ValidateResponse {
    let mut diagnostics = extra;
    for mut d in core.diagnostics.drain(..) {
        if !how.codes.contains(&d.code.as_str()) {
            d.message = format!("{} (unclassified code '{}')", d.message, d.code);
            d.code = "constraint".to_owned();
        }
        diagnostics.push(d);
    }
    if core.left_out > 0 {
        // Where the kept ones are text ranges (a text Language), so is this one: the start of
        // the program.
        let text = diagnostics.iter().any(|d| matches!(d.path, Locator::Range(_)));
        let at = if text { Locator::Range(TextRange::new(1, 1, 1, 1)) } else { Locator::from("") };
        diagnostics.push(left_out(core.left_out, diagnostics.len(), core.left_out_error, at));
    }
    for step in &core.steps {
        if let Some(c) = reserved_char(&step.id) {
            if core.reported_ids.insert(step.id.clone()) {
                diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    "constraint",
                    "",
                    format!("step identifier '{}' contains the reserved character '{c}'", step.id),
                ));
            }
        }
    }
    let valid = !diagnostics.iter().any(|d| d.severity == Severity::Error);
    let plan = (how.plan && valid).then(|| {
        let max_risk_hints = RiskHints::aggregate(core.steps.iter().map(|s| s.risk_hints));
        let max_rank = core.steps.iter().map(|s| s.rank).max().unwrap_or(0);
        let max_risk = core.risks.get(max_rank).map(|m| m.name.to_owned()).unwrap_or_default();
        Plan { steps: core.steps, max_risk, max_risk_hints }
    });
    let references = (how.catalog_version.is_some() && !how.plan && valid).then(|| {
        let mut seen = BTreeSet::new();
        core.references.retain(|r| seen.insert(r.clone()));
        core.references
    });
    ValidateResponse { valid, diagnostics, catalog_version: how.catalog_version.clone(), plan, references }
}

/// The last diagnostic of a capped response: how many were left out (an error when any of
/// them was, so `valid` stays what the whole program deserves).
fn left_out(n: usize, kept: usize, error: bool, at: Locator) -> Diagnostic {
    let severity = if error { Severity::Error } else { Severity::Warning };
    let mut d = Diagnostic::new(
        severity,
        "constraint",
        at,
        format!("{n} more diagnostic(s) left out: this server reports at most the first {kept} per response"),
    );
    d.hint("fix the reported ones and validate again to see the rest");
    d
}

/// Context findings (Part II §6.4): with a schema, missing or non-conforming context is a
/// `context_binding` error; without one, any supplied context is.
pub(crate) fn check_context(schema: Option<&SchemaCheck>, context: Option<&Value>) -> Vec<Diagnostic> {
    let error =
        |path: String, message: String| Diagnostic::new(Severity::Error, "context_binding", path, message);
    match (schema, context) {
        (None, None) => vec![],
        (None, Some(_)) => {
            vec![error(String::new(), "this Language takes no context: omit `context`".into())]
        }
        (Some(_), None) => vec![error(
            String::new(),
            "this Language requires `context` (see context_schema in the manifest)".into(),
        )],
        (Some(v), Some(ctx)) => {
            v.faults(ctx, MAX_FAULTS).into_iter().map(|f| error(f.path, f.message)).collect()
        }
    }
}
