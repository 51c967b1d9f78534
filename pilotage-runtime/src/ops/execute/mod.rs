//! The execute operation (Part II §6.5, Part III §4.5): the processing order of Part II
//! §6.5.2 ([`well_formed`], then [`run`]), with idempotency around it (Part II §6.5.6): a replay
//! returns the recorded response of the first Run without further processing.

mod run;
mod well_formed;

use serde_json::{json, Value};

use crate::model::capabilities::SubFeature;
use crate::model::declaration::Retention;
use crate::model::digest;
use crate::model::errors::{ErrorKind, RequestError};
use crate::model::execution::ExecuteResponse;
use crate::ops::{Args, Ctx, OpResult};
use crate::state::idempotency::Claim;

/// Refusals are not recorded under an idempotency key: nothing ran, so a retry may run.
const REFUSALS: [&str; 3] = ["validation_error", "catalog_drift", "promotion_drift"];

/// The execute tool.
pub(crate) async fn execute(ctx: Ctx<'_>, args: &Args) -> OpResult<ExecuteResponse> {
    let checked = well_formed::well_formed(ctx, args)?;
    // Keys protect against repeated effects; a test run has none, so it neither claims nor
    // replays a key.
    let key = match args.get("idempotency_key") {
        Some(Value::String(k))
            if ctx.lang.effective.declares_sub(SubFeature::Idempotency) && !checked.test_run =>
        {
            k
        }
        _ => return run::run_checked(ctx, args, checked).await,
    };
    // The runnable, its input, and the mode it runs in (an installation is not an evaluation).
    let fingerprint = digest::canonical(&json!({
        "program": args.get(ctx.lang.spec.program_argument),
        "program_ref": args.get("program_ref"),
        "input": args.get("input"),
        "mode": checked.mode.as_str(),
    }));
    // Under duration retention the window outlives the process: consult the durable record.
    let durable = match (&ctx.lang.spec.retention, &ctx.stores.durable) {
        (Some(Retention::Duration { length, .. }), Some(store)) => Some((store, *length)),
        _ => None,
    };
    let durable_key = format!("{}\u{0}{key}", ctx.session.caller.id);
    if let Some((store, _)) = durable {
        if let Some((recorded, response)) = store.get_replay(&durable_key) {
            return match serde_json::from_value::<ExecuteResponse>(response) {
                Ok(r) if recorded == fingerprint => Ok(r),
                Ok(_) => Err(conflict()),
                Err(e) => Err(RequestError::internal(format!("unreadable idempotency record: {e}"))),
            };
        }
    }
    match ctx.stores.idempotency.claim(&ctx.session.caller.id, key, fingerprint.clone()).await {
        Claim::Replay(response) => Ok(*response),
        Claim::Conflict => Err(conflict()),
        Claim::Fresh(guard) => {
            let response = run::run_checked(ctx, args, checked).await?;
            if !REFUSALS.contains(&response.outcome.status()) {
                let window = match &ctx.lang.spec.retention {
                    Some(Retention::Duration { length, .. }) => *length,
                    _ => ctx.lang.limits.idempotency_window,
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

/// The text summary of an execute response.
pub(crate) fn summary(v: &ExecuteResponse) -> String {
    match v.outcome.error() {
        None => v.outcome.status().to_owned(),
        Some(e) => format!("{}: {e}", v.outcome.status()),
    }
}

fn conflict() -> RequestError {
    RequestError::new(
        ErrorKind::IdempotencyConflict,
        "this idempotency_key was used with a different runnable or input, or a different mode: use a fresh key",
    )
}
