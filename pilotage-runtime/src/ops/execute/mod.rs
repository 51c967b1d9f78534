//! The execute operation (Part II §6.5, Part III §4.5): the processing order of Part II
//! §6.5.2 ([`well_formed`], then [`run`]), with idempotency around it (Part II §6.5.6): a replay
//! returns the recorded response of the first Run without further processing.

mod keep;
mod run;
mod well_formed;

pub(crate) use run::new_run_id;

use serde_json::{json, Value};

use crate::model::capabilities::SubFeature;
use crate::model::declaration::Retention;
use crate::model::digest;
use crate::model::errors::{ErrorKind, RequestError};
use crate::model::execution::ExecuteResponse;
use crate::ops::watch::Watch;
use crate::ops::{Ctx, LoopArgs, OpResult};
use crate::state::idempotency::{self, Claim};

/// Refusals are not recorded under an idempotency key: nothing ran, so a retry may run.
const REFUSALS: [&str; 3] = ["validation_error", "catalog_drift", "promotion_drift"];

/// The execute tool, watched by `watch` (the client's cancellation and progress, where asked).
pub(crate) async fn execute(ctx: Ctx<'_>, args: LoopArgs, watch: &Watch) -> OpResult<ExecuteResponse> {
    let args = &args;
    let checked = well_formed::well_formed(ctx, args).await?;
    // Keys protect against repeated effects; a test run has none, so it neither claims nor
    // replays a key.
    let key = match args.rest.get("idempotency_key") {
        Some(Value::String(k))
            if ctx.lang.effective.declares_sub(SubFeature::Idempotency) && !checked.test_run =>
        {
            k
        }
        _ => {
            let ran = run::run_checked(ctx, args, checked, watch).await?;
            return keep::keep(ctx, ran, keep::deadline(ctx)).await;
        }
    };
    // The runnable, its input, and the mode it runs in (an installation is not an evaluation).
    let fingerprint = digest::canonical(&json!({
        "program": args.program,
        "program_ref": args.rest.get("program_ref"),
        "input": args.input,
        "mode": checked.mode.as_str(),
    }));
    let limits = &ctx.lang.limits;
    // A duplicate waits for the first request no longer than it would take itself.
    let deadline =
        tokio::time::Instant::now() + limits.validate_time + limits.execute_time + limits.store_time;
    let (scope, owner) = (&ctx.session.scope, &*ctx.session.caller.id);
    let claimed = idempotency::claim(scope, (owner, ctx.lang.spec.name, key), &fingerprint, deadline).await;
    match claimed.map_err(crate::ops::store_failed)? {
        Claim::Replay(response) => replayed(response),
        Claim::Conflict => Err(conflict()),
        Claim::Busy => Err(busy()),
        Claim::Fresh(guard) => {
            let ran = match run::run_checked(ctx, args, checked, watch).await {
                Ok(ran) if REFUSALS.contains(&ran.response.outcome.status()) => {
                    guard.release().await;
                    return Ok(ran.response);
                }
                Ok(ran) => ran,
                Err(e) => {
                    guard.release().await;
                    return Err(e);
                }
            };
            // Under duration retention the window is the retention: a replay outlives the
            // process exactly as long as the Run it replays.
            let window = match &ctx.lang.spec.retention {
                Some(Retention::Duration { length, .. }) => *length,
                _ => limits.idempotency_window,
            };
            keep::record(ctx, guard, ran, window, keep::deadline(ctx)).await
        }
    }
}

/// A recorded first response: a Run's response, or the request error of a Run whose record
/// could not be kept (replayed as it was sent).
fn replayed(response: Value) -> OpResult<ExecuteResponse> {
    if response.get("error").is_some() {
        return Err(serde_json::from_value(response)
            .map_err(|e| RequestError::internal(format!("unreadable idempotency record: {e}")))?);
    }
    serde_json::from_value(response)
        .map_err(|e| RequestError::internal(format!("unreadable idempotency record: {e}")))
}

/// The first request with the key neither recorded nor gave it back by this one's deadline.
fn busy() -> RequestError {
    RequestError::new(
        ErrorKind::BoundsExceeded,
        "another request with this idempotency_key is still running or still recording its Run, past \
         the time this request may wait; nothing ran for this request: retry later with the same key",
    )
}

/// Time allowed beyond an execute request's own bounds, for the store.
const MARGIN: std::time::Duration = std::time::Duration::from_secs(30);

/// The longest an execute under `limits` may take from its start to its end: its snapshot,
/// validation and run, each after waiting for an engine slot at most as long as its own time
/// (`ops::call`), and a margin for the store: how long a working task of another replica may go
/// without moving before it is reported failed. (An idempotency claim is held by a short lease
/// its claimant renews instead: [`idempotency::LEASE`].)
pub(crate) fn longest_run(limits: &crate::engine::Limits) -> std::time::Duration {
    2 * (limits.tool_time + limits.validate_time + limits.execute_time) + MARGIN
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
