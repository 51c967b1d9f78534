//! The promote tool (Part II §3.5): validate the body exactly as validate does, then store it
//! immutably as a catalog entry of the Language's promoted kind, runnable by `program_ref`.
//!
//! The entry's `input_schema` comes from the agent: it is compiled, and every input bound
//! against it ([`bind_input`]), on an engine thread within the validation time bound, never
//! on the async workers (the built-in check also bounds its own work).

use std::sync::Arc;

use serde_json::{json, Value};

use super::call::EngineCall;
use super::threads::Work;
use super::validate::run_validation;
use super::{call_failed, str_arg, Ctx, LoopArgs, OpResult, Reply};
use crate::model::diagnostic::Diagnostic;
use crate::model::errors::RequestError;
use crate::state::promotions::{Promoted, Promotion};

/// Promote the program in `args` for the caller.
pub(crate) async fn promote(ctx: Ctx<'_>, args: LoopArgs) -> Reply {
    let spec = ctx.lang.spec;
    let Some(kind) = spec.sets.promoted else {
        return Reply::error(RequestError::internal("this Language has no promoted kind"));
    };
    let program = args.program.unwrap_or_else(|| std::sync::Arc::new(Value::Null));
    let snapshot = match ctx.snapshot().await {
        Ok(s) => s,
        Err(e) => return Reply::error(e),
    };
    let verdict = match run_validation(ctx, snapshot.clone(), &program, args.context.as_ref()).await {
        Ok(v) => v,
        Err(e) => return Reply::error(e),
    };
    let (true, Some(plan), Some(snapshot)) = (verdict.valid, verdict.plan.as_ref(), snapshot) else {
        // An invalid program is a result, never an error (Part III §7.1), here as anywhere.
        let n = verdict.diagnostics.len();
        return Reply {
            structured: json!({"promoted": false, "diagnostics": verdict.diagnostics}),
            text: format!("not promoted: the program is invalid ({n} diagnostic(s))"),
            ..Reply::default()
        };
    };
    let name = str_arg(&args.rest, "name").unwrap_or_default().to_owned();
    let description = str_arg(&args.rest, "description").map(str::to_owned);
    let input_schema = args.rest.get("input_schema").cloned();
    let (plan, language) = (plan.clone(), spec.name);
    let call = schema_call(ctx);
    let made = call.run(move || {
        let promotion =
            Promotion { kind, body: &program, plan: &plan, name, description, input_schema, language };
        Promoted::new(promotion, &snapshot)
    });
    let promoted = match made.await {
        Ok(Ok(p)) => ctx.session.promote(ctx.index, p, ctx.lang.limits.max_promotions).await,
        Ok(Err(e)) => return Reply::error(RequestError::invalid(e)),
        Err(end) => return Reply::error(call_failed(&ctx, "the check of `input_schema`", &call, end)),
    };
    match promoted {
        Ok(Some(p)) => {
            let version = ctx.snapshot_now().await.map(|s| s.version().to_owned()).unwrap_or_default();
            Reply {
                text: format!("promoted as {}", p.entry.id),
                structured: json!({"program_ref": p.entry.id, "entry": p.entry, "catalog_version": version}),
                ..Reply::default()
            }
        }
        Ok(None) => Reply::error(RequestError::new(
            crate::model::errors::ErrorKind::BoundsExceeded,
            format!(
                "you already hold the most promoted programs of {} this server keeps per caller (at most {}, \
                 and within its memory bound where it keeps them in memory)",
                spec.name, ctx.lang.limits.max_promotions
            ),
        )),
        Err(e) => Reply::error(super::store_failed(e)),
    }
}

/// `input_binding` findings of `input` against `promoted`'s `input_schema` (an agent's
/// schema): checked on an engine thread within the validation time bound.
pub(crate) async fn bind_input(
    ctx: Ctx<'_>,
    promoted: &Arc<Promoted>,
    input: Option<Arc<Value>>,
) -> OpResult<Vec<Diagnostic>> {
    let call = schema_call(ctx);
    let promoted = Arc::clone(promoted);
    match call.run(move || promoted.bind_input(input.as_deref())).await {
        Ok(findings) => Ok(findings),
        Err(end) => Err(call_failed(&ctx, "the binding of `input`", &call, end)),
    }
}

/// An engine call for a check against an agent's schema, bounded like a validation.
fn schema_call(ctx: Ctx<'_>) -> EngineCall {
    EngineCall::new(
        Work::Validate,
        &ctx.lang.limits,
        ctx.lang.limits.validate_time,
        ctx.lane(super::slots::LaneKind::Engine),
    )
}
