//! The trace fetch operation (Part II §6.6, Part III §4.6): the caller's own retained Runs at
//! min(requested, recorded) level; unknown, expired, unstored and foreign Runs are one
//! indistinguishable `not_found`.

use super::{str_arg, Args, Ctx, OpResult};
use crate::model::capabilities::SubFeature;
use crate::model::declaration::{Retention, TraceLevel};
use crate::model::errors::RequestError;
use crate::model::outcome::Outcome;
use crate::model::trace::{render_steps_owned, Trace, TraceFetchResponse};
use crate::state::runs::RunRecord;

/// The trace tool of one Language.
pub(crate) async fn trace_fetch(ctx: Ctx<'_>, args: &Args) -> OpResult<TraceFetchResponse> {
    let info = ctx.lang;
    let requested = requested_level(args)?;
    let narrate = info.effective.declares_sub(SubFeature::Narrate);
    if args.contains_key("question") && !narrate {
        return Err(RequestError::invalid(format!(
            "{} does not declare trace_fetch.narrate: omit `question`; the trace envelope carries the facts",
            info.spec.name
        )));
    }
    let run_id = str_arg(args, "run_id").unwrap_or_default();
    let record = match &info.spec.retention {
        Some(Retention::Duration { .. }) => {
            ctx.stores.state.get_run(&ctx.session.caller.id, run_id).await.map_err(super::store_failed)?
        }
        _ => ctx.session.runs.get(ctx.index).and_then(|runs| runs.get(run_id)),
    }
    .or_else(|| running(ctx, run_id))
    .filter(|r| r.language == info.spec.name);
    let mut response = fetch(record, &ctx.session.caller.id, requested)?;
    if narrate {
        let (engine, question) = (ctx.engine(), str_arg(args, "question").map(str::to_owned));
        let fetched = response.clone();
        let call = ctx.tool_call();
        let told = call.run(move || engine.narrate(&fetched, question.as_deref())).await;
        response.narration = told.map_err(|end| super::call_failed(&ctx, "the narration", &call, end))?;
    }
    Ok(response)
}

/// A Run that a task of this caller is running in this process, as recorded so far: `partial`
/// (it began and has not completed; effects of its steps may have occurred) with the steps
/// recorded until now.
fn running(ctx: Ctx<'_>, run_id: &str) -> Option<RunRecord> {
    let task = ctx.stores.live.by_run(&ctx.session.caller.id, run_id)?;
    let steps = task.recorder().map(|r| r.steps()).unwrap_or_default();
    Some(RunRecord {
        run_id: run_id.to_owned(),
        owner: task.owner.clone(),
        language: task.language.clone(),
        outcome: Outcome::failure(
            "partial",
            format!("the run is still going (its task is working): {} steps recorded so far", steps.len()),
        ),
        output: None,
        level: ctx.lang.spec.trace.unwrap_or(TraceLevel::Summary),
        // As recorded: the fetch renders them at its level.
        steps: RunRecord::steps_text(&steps, TraceLevel::Full),
        stats: None,
    })
}

/// The requested level: absent means as recorded; `none` has no meaning on this door.
fn requested_level(args: &Args) -> OpResult<Option<TraceLevel>> {
    match str_arg(args, "trace_level") {
        None => Ok(None),
        Some("none") => Err(RequestError::invalid(
            "trace_level \"none\" has no meaning on the fetch door: use summary or full",
        )),
        Some(s) => TraceLevel::parse(s)
            .map(Some)
            .ok_or_else(|| RequestError::invalid(format!("unknown trace_level '{s}': use summary or full"))),
    }
}

/// The one `not_found` every unfetchable Run gets: unknown, expired, unstored and foreign Runs
/// are indistinguishable, byte for byte.
pub fn run_not_found() -> RequestError {
    RequestError::not_found("unknown run: it may have expired or was never retained")
}

/// Fetch a record for `caller` at `requested` level (absent: as recorded).
pub fn fetch(
    record: Option<RunRecord>,
    caller: &str,
    requested: Option<TraceLevel>,
) -> Result<TraceFetchResponse, RequestError> {
    let record = match record {
        Some(r) if r.owner == caller => r,
        _ => return Err(run_not_found()),
    };
    let level = requested.map_or(record.level, |r| r.min(record.level));
    // A store answers the text it was given; text that does not read back as a record's is a
    // fault of the store, reported as one.
    let unreadable = |e: serde_json::Error| {
        tracing::error!(run_id = record.run_id, error = %e, "a kept run's record does not read back");
        RequestError::internal(format!(
            "the record of run {} could not be read back from the store",
            record.run_id
        ))
    };
    let steps = record.steps().map_err(unreadable)?;
    let output = record.output().map_err(unreadable)?;
    Ok(TraceFetchResponse {
        run_id: record.run_id.clone(),
        outcome: record.outcome,
        output,
        trace: Trace {
            run_id: record.run_id,
            level: level.into(),
            steps: render_steps_owned(steps, level),
            stats: record.stats,
        },
        narration: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::fetch;
    use crate::model::declaration::TraceLevel;
    use crate::model::errors::ErrorKind;
    use crate::model::outcome::Outcome;
    use crate::model::trace::TraceStep;
    use crate::state::runs::RunRecord;

    fn record(steps: Box<serde_json::value::RawValue>) -> RunRecord {
        RunRecord {
            run_id: "run_1".into(),
            owner: "me".into(),
            language: "l/v1".into(),
            outcome: Outcome::success(),
            output: Some(RunRecord::text(&json!({"rows": [1, 2]}))),
            level: TraceLevel::Full,
            steps,
            stats: None,
        }
    }

    /// A kept record reads back at the level asked; text a store answered that is not a
    /// record's steps is the store's fault, told as `internal`, never an empty trace.
    #[test]
    fn a_kept_record_reads_back_and_unreadable_text_is_an_internal_error() {
        let step = TraceStep {
            id: "s1".into(),
            calls: None,
            input: Some(json!({"q": 1})),
            output: Some(json!([1, 2])),
            outcome: Outcome::success(),
            t_ms: None,
            decisions: None,
        };
        let kept = record(RunRecord::steps_text(std::slice::from_ref(&step), TraceLevel::Full));
        let full = fetch(Some(kept.clone()), "me", None).unwrap();
        assert_eq!(full.trace.steps, vec![step.clone()]);
        assert_eq!(full.output, Some(json!({"rows": [1, 2]})));
        let summary = fetch(Some(kept.clone()), "me", Some(TraceLevel::Summary)).unwrap();
        assert_eq!(summary.trace.steps[0].input, None);
        assert_eq!(fetch(Some(kept), "someone else", None).unwrap_err().error.kind, ErrorKind::NotFound);
        let garbled = record(RunRecord::text(&json!([{"id": 1}])));
        let error = fetch(Some(garbled), "me", None).unwrap_err();
        assert_eq!(error.error.kind, ErrorKind::Internal);
        assert_eq!(error.error.message, "the record of run run_1 could not be read back from the store");
    }
}
