//! Keeping a started Run's record before its response is sent: an answer is a promise, so a
//! `run_id` whose retention keeps it is sent only once its record is kept, and a key's response
//! is recorded in the same atomic write as that record (Part II §6.5 `store`, §6.5.6).
//!
//! When the store cannot take the record within [`Limits::store_time`] (retries included), the
//! caller gets a request error of kind `internal` (Part II §8, Part III §7.1: a well-formed
//! request that cannot be served as asked), never `success` with an id that does not resolve.
//! Its message reports what happened: the program ran (its effects occurred), its `run_id` and
//! outcome status, and that its record was not kept. The outcome channel is not used for this:
//! the Run itself may have succeeded, and an outcome classifies the Run, not the store.
//!
//! [`Limits::store_time`]: crate::engine::Limits::store_time

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::run::{Place, Ran};
use crate::model::errors::RequestError;
use crate::model::execution::ExecuteResponse;
use crate::ops::Ctx;
use crate::state::idempotency::{retrying, KeyGuard, Settled};
use crate::state::runs::RunRecord;

/// When an execute that ran must have kept its record.
pub(crate) fn deadline(ctx: Ctx<'_>) -> Instant {
    Instant::now() + ctx.lang.limits.store_time
}

/// Keep `ran`'s record (no idempotency key), retrying until `deadline`.
pub(crate) async fn keep(ctx: Ctx<'_>, ran: Ran, deadline: Instant) -> Result<ExecuteResponse, RequestError> {
    let Ran { response, keep } = ran;
    match keep {
        None => Ok(response),
        Some((record, place)) => match put(ctx, record, place, deadline).await {
            Ok(()) => Ok(response),
            Err(why) => Err(not_kept(&response, &why, Unkept::Record)),
        },
    }
}

/// Keep `record` at `place`, retrying a shared store until `deadline`.
async fn put(ctx: Ctx<'_>, record: RunRecord, place: Place, deadline: Instant) -> Result<(), String> {
    match place {
        Place::Shared(keep_for) => {
            let state = &ctx.stores.state;
            retrying(deadline, || state.put_run(&record, keep_for)).await.map_err(|e| e.to_string())
        }
        Place::Session => match ctx.session.runs.get(ctx.index) {
            Some(runs) => runs.put(&record, Duration::MAX),
            None => Err("no session run store".to_owned()),
        },
    }
}

/// Record `ran`'s response under `guard` for `window`, in one write with its record where the
/// record goes to the shared state (a session's record is kept first, in memory).
pub(crate) async fn record(
    ctx: Ctx<'_>,
    guard: KeyGuard,
    ran: Ran,
    window: Duration,
    deadline: Instant,
) -> Result<ExecuteResponse, RequestError> {
    let Ran { response, keep } = ran;
    let value = serde_json::to_value(&response).unwrap_or(Value::Null);
    let shared = match keep {
        Some((record, Place::Session)) => {
            if let Err(why) = put(ctx, record, Place::Session, deadline).await {
                // Replays give the same truthful error: the program ran, its record was not kept.
                let error = not_kept(&response, &why, Unkept::Record);
                let recorded = serde_json::to_value(&error).unwrap_or(Value::Null);
                let _ = guard.record(recorded, window, None, deadline).await;
                return Err(error);
            }
            None
        }
        Some((record, Place::Shared(keep_for))) => Some((record, keep_for)),
        None => None,
    };
    let fallback = shared.clone();
    match guard.record(value, window, shared, deadline).await {
        Ok(Settled::Recorded) => Ok(response),
        // Another request took the key over (this one was presumed dead): this Run still ran,
        // so its own record is kept and its own response sent.
        Ok(Settled::Lost) => match fallback {
            Some((record, keep_for)) => match put(ctx, record, Place::Shared(keep_for), deadline).await {
                Ok(()) => Ok(response),
                Err(why) => Err(not_kept(&response, &why, Unkept::Record)),
            },
            None => Ok(response),
        },
        Err(e) => {
            let unkept = if fallback.is_some() { Unkept::RecordAndKey } else { Unkept::Key };
            Err(not_kept(&response, &e.to_string(), unkept))
        }
    }
}

/// What the store did not keep of a Run that ran.
#[derive(Clone, Copy)]
enum Unkept {
    /// Its record (no idempotency key).
    Record,
    /// Its record and its idempotency key's response (written together).
    RecordAndKey,
    /// Its idempotency key's response (the Run is not retained).
    Key,
}

/// The request error of a Run that ran but whose record or key was not kept.
fn not_kept(response: &ExecuteResponse, why: &str, unkept: Unkept) -> RequestError {
    tracing::error!(run_id = response.run_id, error = why, "could not keep what a run left");
    let held = "its idempotency key stays held while this server keeps trying to record it: a retry with \
                the same key waits for that record and replays it, and does not run the program again";
    let (what, after) = match unkept {
        Unkept::Record => ("its record", "it cannot be fetched".to_owned()),
        Unkept::RecordAndKey => ("its record", format!("it cannot be fetched until it is kept; {held}")),
        Unkept::Key => ("the response under its idempotency key", held.to_owned()),
    };
    RequestError::internal(format!(
        "the program ran (run {}, outcome {}) and its effects occurred, but the server's state store \
         could not keep {what} in time: {after}",
        response.run_id,
        response.outcome.status()
    ))
}
