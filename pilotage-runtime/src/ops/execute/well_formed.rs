//! Step 1 of the execute processing order (Part II §6.5.2): the request's members are
//! well-formed and eligible for this Language, or the request ends with a request error.

use std::sync::Arc;

use serde_json::Value;

use crate::model::capabilities::{Capability, SubFeature};
use crate::model::declaration::{ExecutionMode, Retention, TraceLevel};
use crate::model::errors::{ErrorKind, RequestError};
use crate::ops::{str_arg, Args, Ctx, LoopArgs, OpResult};
use crate::state::promotions::Promoted;

/// The runnable of an execute request.
pub(crate) enum Runnable<'a> {
    Inline(&'a Arc<Value>),
    Promoted(Arc<Promoted>),
}

/// The request members that passed well-formedness.
pub(crate) struct WellFormed<'a> {
    pub runnable: Runnable<'a>,
    /// The Language's trace ceiling (what a retained record keeps).
    pub ceiling: TraceLevel,
    /// The inline trace's level; `None` for `trace_level: "none"`.
    pub effective_level: Option<TraceLevel>,
    pub test_run: bool,
    pub mode: ExecutionMode,
    pub retention: Retention,
    pub store_flag: Option<bool>,
}

/// Check every member of an execute request against the Language's declaration.
pub(crate) async fn well_formed<'a>(ctx: Ctx<'_>, loop_args: &'a LoopArgs) -> OpResult<WellFormed<'a>> {
    let (spec, args) = (ctx.lang.spec, &loop_args.rest);
    let runnable = runnable(ctx, loop_args).await?;
    let ceiling = spec.trace.unwrap_or(TraceLevel::Summary);
    let effective_level = requested_level(args)?.map(|r| r.min(ceiling));
    test_run_declared(ctx, args)?;
    let test_run = args.get("test_run").and_then(Value::as_bool).unwrap_or(false);
    let mode = mode(ctx, args)?;
    let retention = spec.retention.clone().unwrap_or(Retention::None);
    let store_flag = args.get("store").and_then(Value::as_bool);
    storable(ctx, &retention, store_flag)?;
    keys_declared(ctx, args)?;
    Ok(WellFormed { runnable, ceiling, effective_level, test_run, mode, retention, store_flag })
}

/// Exactly one of the inline program and `program_ref`; a reference must name one of the
/// caller's promoted programs.
async fn runnable<'a>(ctx: Ctx<'_>, args: &'a LoopArgs) -> OpResult<Runnable<'a>> {
    let spec = ctx.lang.spec;
    match (&args.program, args.rest.get("program_ref")) {
        (Some(_), Some(_)) => Err(RequestError::invalid(format!(
            "supply exactly one of `{}` and `program_ref`, not both",
            spec.program_argument
        ))),
        (None, None) => Err(RequestError::invalid(format!(
            "supply exactly one runnable: `{}` (an inline program) or `program_ref`",
            spec.program_argument
        ))),
        (Some(p), None) => Ok(Runnable::Inline(p)),
        (None, Some(r)) => {
            let Some(reference) = r.as_str() else {
                return Err(RequestError::invalid(
                    "`program_ref` is a string: a reference from the promote tool",
                ));
            };
            if spec.sets.promoted.is_none() {
                return Err(RequestError::not_found(format!("unknown program_ref '{reference}'")));
            }
            match ctx.session.promoted(ctx.index, reference).await.map_err(crate::ops::store_failed)? {
                Some(p) => Ok(Runnable::Promoted(p)),
                _ => Err(RequestError::not_found(format!("unknown program_ref '{reference}'"))),
            }
        }
    }
}

/// The requested inline trace level: absent means the ceiling; `none` means no inline trace.
fn requested_level(args: &Args) -> OpResult<Option<TraceLevel>> {
    match str_arg(args, "trace_level") {
        None => Ok(Some(TraceLevel::Full)),
        Some("none") => Ok(None),
        Some(s) => TraceLevel::parse(s).map(Some).ok_or_else(|| {
            RequestError::invalid(format!("unknown trace_level '{s}': use none, summary or full"))
        }),
    }
}

/// `test_run` only where `execute.test_run` is declared.
fn test_run_declared(ctx: Ctx<'_>, args: &Args) -> OpResult<()> {
    if args.contains_key("test_run") && !ctx.lang.effective.declares_sub(SubFeature::TestRun) {
        return Err(RequestError::invalid(format!(
            "{} does not declare execute.test_run: omit `test_run`",
            ctx.lang.spec.name
        )));
    }
    Ok(())
}

/// `idempotency_key` and `expected_catalog_version` only where their sub-feature or
/// capability is declared.
fn keys_declared(ctx: Ctx<'_>, args: &Args) -> OpResult<()> {
    let (spec, caps) = (ctx.lang.spec, &ctx.lang.effective);
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
    Ok(())
}

/// The mode the Run executes in: required and chosen by `mode` under execution `"both"`,
/// refused elsewhere.
fn mode(ctx: Ctx<'_>, args: &Args) -> OpResult<ExecutionMode> {
    let spec = ctx.lang.spec;
    match (spec.execution, args.get("mode")) {
        (Some(ExecutionMode::Both), Some(Value::String(m))) => match m.as_str() {
            "immediate" => Ok(ExecutionMode::Immediate),
            "deploy" => Ok(ExecutionMode::Deploy),
            m => Err(RequestError::invalid(format!("unknown mode '{m}': use immediate or deploy"))),
        },
        (Some(ExecutionMode::Both), Some(_)) => {
            Err(RequestError::invalid("`mode` is a string: immediate or deploy"))
        }
        (Some(ExecutionMode::Both), None) => Err(RequestError::invalid(format!(
            "{} executes in mode \"both\": `mode` (immediate or deploy) is required",
            spec.name
        ))),
        // Present with any value, of any type: the member does not apply here.
        (_, Some(_)) => Err(RequestError::invalid(format!(
            "`mode` applies only to a Language with execution \"both\"; {} is {}",
            spec.name,
            spec.execution.map(ExecutionMode::as_str).unwrap_or("not executable")
        ))),
        (Some(m), None) => Ok(m),
        (None, None) => Ok(ExecutionMode::Immediate),
    }
}

/// `store: true` must be honourable under the Language's retention and this request's session.
fn storable(ctx: Ctx<'_>, retention: &Retention, store_flag: Option<bool>) -> OpResult<()> {
    let spec = ctx.lang.spec;
    if store_flag == Some(true) && *retention == Retention::None {
        return Err(RequestError::new(
            ErrorKind::Unsupported,
            format!("{} retains no runs (retention \"none\"): `store: true` cannot be honoured", spec.name),
        ));
    }
    if store_flag == Some(true) && *retention == Retention::Session && ctx.session.stateless {
        return Err(RequestError::new(
            ErrorKind::Unsupported,
            format!(
                "{} retains runs for the MCP session, and this request has none (stateless): `store: true` cannot be honoured",
                spec.name
            ),
        ));
    }
    Ok(())
}
