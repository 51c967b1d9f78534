//! Steps 2-5 of the execute processing order (Part II §6.5.2) on a well-formed request: catalog
//! drift, re-validation (inline) or the promotion baseline and input binding (`program_ref`),
//! then the bounded engine call, the outcome, retention and the inline trace.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::watch;

use super::well_formed::{Runnable, WellFormed};
use crate::engine::memory::value_memory;
use crate::engine::{CatalogSnapshot, ExecuteRequest, FinishCore, Recorder};
use crate::model::declaration::{Retention, TraceLevel};
use crate::model::diagnostic::Diagnostic;
use crate::model::execution::ExecuteResponse;
use crate::model::outcome::Outcome;
use crate::model::trace::{render_steps_owned, Trace, TraceStep};
use crate::ops::call::{CallEnd, EngineCall};
use crate::ops::threads::Work;
use crate::ops::validate::{cached, check_context, remember, revalidate};
use crate::ops::watch::Watch;
use crate::ops::{str_arg, Ctx, LoopArgs, OpResult};
use crate::state::promotions;
use crate::state::runs::RunRecord;

/// What running a request gave: its response and, for a started Run its retention keeps, the
/// record to keep and where (kept by [`super::keep`] before the response is sent).
pub(crate) struct Ran {
    /// The response: a refusal or a started Run's.
    pub response: ExecuteResponse,
    /// The record to keep, if any.
    pub keep: Option<(RunRecord, Place)>,
}

/// Where a kept Run's record goes.
#[derive(Clone, Copy)]
pub(crate) enum Place {
    /// The deployment's shared state (ISO 8601 duration retention), for this long.
    Shared(Duration),
    /// The session's own run store (`"session"` retention, or `store: true` without a duration).
    Session,
}

impl From<ExecuteResponse> for Ran {
    fn from(response: ExecuteResponse) -> Self {
        Ran { response, keep: None }
    }
}

/// Run a well-formed request: a refusal (not started) or a started Run's response.
///
/// The first attempt takes a snapshot its Run may confirm ([`crate::engine::confirm`]): an
/// engine may answer the snapshot it kept without a round trip to prove it current, and its
/// Run proves it with its first statement. Where the Run found it moved before any step (or
/// `expected_catalog_version` differs from it, or the program is refused against it), nothing
/// ran: the second attempt takes a current snapshot and admits and runs the program against it,
/// within what the first left of the run's time bound (one bound for the request, not two).
pub(crate) async fn run_checked(
    ctx: Ctx<'_>,
    args: &LoopArgs,
    checked: WellFormed<'_>,
    watch: &Watch,
) -> OpResult<Ran> {
    let run_id = watch.run_id.clone().unwrap_or_else(new_run_id);
    let promoted = ctx.promotions().await?;
    let attempt = Attempt { ctx, args, checked: &checked, watch, run_id: &run_id, promoted: &promoted };
    match attempt.run(true, ctx.lang.limits.execute_time).await? {
        Ok(ran) => Ok(ran),
        Err(Moved { left }) => match attempt.run(false, left).await? {
            Ok(ran) => Ok(ran),
            // Not reached: a Run whose snapshot was proven current is never told it moved.
            Err(Moved { .. }) => Ok(refused(
                run_id,
                Outcome::failure("catalog_drift", "the catalog moved as the run began"),
                None,
            )
            .into()),
        },
    }
}

/// One attempt at running a well-formed request.
struct Attempt<'a> {
    ctx: Ctx<'a>,
    args: &'a LoopArgs,
    checked: &'a WellFormed<'a>,
    watch: &'a Watch,
    run_id: &'a str,
    promoted: &'a [Arc<promotions::Promoted>],
}

/// What an attempt gave: a refusal or a started Run, or [`Moved`] when its unconfirmed snapshot
/// was not the current catalog and nothing ran.
type Tried = Result<Ran, Moved>;

/// An attempt whose snapshot was not the current catalog: nothing ran.
struct Moved {
    /// What is left of the run's time bound (the time the attempt's engine call took is spent).
    left: Duration,
}

impl Attempt<'_> {
    /// Steps 2-5 against a snapshot its Run may confirm (`may_defer`) or a current one, the
    /// engine call bounded by `time`.
    async fn run(&self, may_defer: bool, time: Duration) -> OpResult<Tried> {
        let moved = Moved { left: time };
        let (ctx, args, run_id) = (self.ctx, self.args, self.run_id.to_owned());
        // The first attempt runs against the snapshot this session answered last, when there is
        // one, and its engine call checks that the engine's is still of that version before the
        // Run begins (`confirm`): a Run that does not begin is an attempt whose snapshot moved.
        let last = if may_defer { ctx.last_snapshot(self.promoted) } else { None };
        let (snapshot, deferred, confirm) = match last {
            Some((version, snapshot)) => (Some(snapshot), true, Some(version)),
            None => match ctx.snapshot_for_run(self.promoted, may_defer).await? {
                Some((snapshot, deferred)) => (Some(snapshot), deferred, None),
                None => (None, false, None),
            },
        };
        if let (Some(expected), Some(snap)) = (str_arg(&args.rest, "expected_catalog_version"), &snapshot) {
            if expected != snap.version() {
                if deferred {
                    return Ok(Err(moved));
                }
                let drift = Outcome::failure("catalog_drift", "catalog version mismatch");
                return Ok(Ok(refused(run_id, drift, None).into()));
            }
        }
        let (program, planned) = match admit(ctx, args, &self.checked.runnable, snapshot.clone()).await? {
            Ok(admitted) => admitted,
            // Refused against a snapshot that may be stale: judged again against a current one.
            Err(_) if deferred => return Ok(Err(moved)),
            Err((outcome, diagnostics)) => return Ok(Ok(refused(run_id, outcome, diagnostics).into())),
        };
        let request = ExecuteRequest {
            run_id: run_id.clone(),
            program,
            input: args.input.clone(),
            context: args.context.clone(),
            promoted: Arc::new(promotions::bodies(self.promoted, snapshot.as_deref())),
            catalog: snapshot,
            caller: ctx.session.caller.clone(),
            mode: self.checked.mode,
            test_run: self.checked.test_run,
        };
        let limits = &ctx.lang.limits;
        let lane = ctx.lane(crate::ops::slots::LaneKind::Engine);
        let call = EngineCall::new(Work::Execute, limits, time, lane);
        let recorder = Recorder::bounded(limits.max_steps, &call.bounds);
        if deferred && confirm.is_none() {
            recorder.unconfirmed();
        }
        let watch = self.watch;
        if let Some(started) = &watch.started {
            started(&run_id, &recorder);
        }
        let ticks = watch.observe(&recorder, planned, limits.max_steps);
        // Pinned here and lent to the watch: a future it took by value it would hold twice.
        let engine = std::pin::pin!(call_engine(ctx, &call, request, recorder.clone(), confirm));
        let ended = watch.around(&run_id, &recorder, ticks, engine).await?;
        if recorder.moved() && !matches!(ended, Ended::Panicked) {
            // The call's time was charged from its start (after any wait for a slot).
            let left =
                call.bounds.signal.deadline().map_or(time, |d| d.saturating_duration_since(Instant::now()));
            return Ok(Err(Moved { left }));
        }
        let ended =
            if watch.cancelled() && !matches!(ended, Ended::Panicked) { Ended::Cancelled } else { ended };
        finish(ctx, self.checked, run_id, ended, &recorder).map(Ok)
    }
}

/// A Run's end: its outcome, output and trace, and the record to keep.
fn finish(
    ctx: Ctx<'_>,
    checked: &WellFormed<'_>,
    run_id: String,
    ended: Ended,
    recorder: &Recorder,
) -> OpResult<Ran> {
    let findings = recorder.input_findings();
    if !findings.is_empty() && !recorder.started() {
        return Ok(refused(
            run_id,
            Outcome::failure("validation_error", "the input failed binding"),
            Some(findings),
        )
        .into());
    }
    let (outcome, output) = classify(ctx, ended, recorder, !findings.is_empty())?;
    let stats = queue_stats(recorder);
    // The steps are taken out of the recorder. A kept Run's record is written as text from
    // them first (`RunRecord`); then they move into the inline trace, uncopied.
    let steps = recorder.take_steps();
    let keep = keeps(ctx, checked).then(|| {
        let record = RunRecord {
            run_id: run_id.clone(),
            owner: ctx.session.caller.id.to_string(),
            language: ctx.lang.spec.name.to_owned(),
            outcome: outcome.clone(),
            output: output.as_ref().map(RunRecord::text),
            level: checked.ceiling,
            steps: RunRecord::steps_text(&steps, checked.ceiling),
            stats: stats.clone(),
        };
        let place = match &checked.retention {
            Retention::Duration { length, .. } => Place::Shared(*length),
            _ => Place::Session,
        };
        (record, place)
    });
    let trace = checked
        .effective_level
        .map(|level| inline_trace(&run_id, render_steps_owned(steps, level), level, stats));
    Ok(Ran { response: ExecuteResponse { run_id, outcome, output, diagnostics: None, trace }, keep })
}

/// A refusal: why the program may not run, with its diagnostics where there are some.
type Refusal = (Outcome, Option<Vec<Diagnostic>>);

/// An admitted program, with its plan's step count where validation gave one.
type Admitted = (Arc<Value>, Option<usize>);

/// Steps 3 and 4: the program to run, or the refusal. An inline program is re-validated
/// exactly as validate does; a promoted one is checked against its baseline and its input and
/// context bound.
async fn admit(
    ctx: Ctx<'_>,
    args: &LoopArgs,
    runnable: &Runnable<'_>,
    snapshot: Option<Arc<CatalogSnapshot>>,
) -> OpResult<Result<Admitted, Refusal>> {
    let context = args.context.as_ref();
    match runnable {
        Runnable::Inline(program) => {
            // A program this session judged valid against this catalog, with this context.
            let version = snapshot.as_deref().map(CatalogSnapshot::version);
            let cached = cached(ctx, program, context.map(|c| &**c), version);
            if let Some(planned) = cached.as_ref().and_then(|(verdicts, key)| verdicts.valid(key)) {
                return Ok(Ok((Arc::clone(program), planned)));
            }
            let (verdict, planned) = revalidate(ctx, snapshot, program, context).await?;
            if !verdict.valid {
                let outcome = Outcome::failure("validation_error", "the program failed validation");
                return Ok(Err((outcome, Some(verdict.diagnostics))));
            }
            remember(cached, planned);
            Ok(Ok((Arc::clone(program), planned)))
        }
        Runnable::Promoted(p) => {
            let drifted = snapshot.as_deref().map(|s| p.drift(s)).unwrap_or_default();
            if !drifted.is_empty() {
                let why = format!(
                    "referenced entries changed since promotion: {}; promote the program again",
                    drifted.join(", ")
                );
                return Ok(Err((Outcome::failure("promotion_drift", why), None)));
            }
            let mut findings = check_context(ctx.lang.context_validator.as_ref(), context.map(|c| &**c));
            findings.extend(crate::ops::promote::bind_input(ctx, p, args.input.clone()).await?);
            if !findings.is_empty() {
                let outcome = Outcome::failure("validation_error", "the input or context failed binding");
                return Ok(Err((outcome, Some(findings))));
            }
            Ok(Ok((p.body.clone(), None)))
        }
    }
}

/// How the engine call ended.
enum Ended {
    /// The time bound ran out.
    TimedOut,
    /// The engine panicked.
    Panicked,
    /// The engine's own finish.
    Finished(FinishCore),
    /// The client cancelled the request (or its task): the Run's signal was fired and the
    /// engine stopped at its next check.
    Cancelled,
}

/// The engine's execute method on an engine thread (never on the async workers), so the time
/// bound holds even against an engine that never yields; a timed-out run is told to stop (its
/// `Run` turns inert, `Run::should_stop` is true) and dropped at its next await.
///
/// With `confirm`, the Run was given the snapshot merged from the engine's snapshot of that
/// version: the same engine call first takes the engine's snapshot (as a snapshot for a Run,
/// which the engine may defer proving current to the Run) and begins the Run only if it is
/// still of that version; otherwise the recorder is told the snapshot moved and nothing runs.
/// The snapshot keeps the time bound of a snapshot call of its own ([`Ctx::snapshot_time`]),
/// counted from when it began.
async fn call_engine(
    ctx: Ctx<'_>,
    call: &EngineCall,
    request: ExecuteRequest,
    recorder: Recorder,
    confirm: Option<String>,
) -> OpResult<Ended> {
    let engine = ctx.engine();
    let handle = tokio::runtime::Handle::current();
    let check =
        confirm.map(|version| (version, engine.clone(), ctx.session.caller.clone(), recorder.clone()));
    let (work, abort) = {
        let recorder = recorder.clone();
        futures::future::abortable(async move { engine.execute_program(&request, recorder).await })
    };
    let (phase, taking) = watch::channel(Phase::Waiting);
    let begin = move || {
        if let Some((version, engine, caller, recorder)) = check {
            phase.send_replace(Phase::Taking);
            let (found, deferred) = crate::engine::confirm::snapshot(&*engine, &caller, true);
            phase.send_replace(Phase::Taken);
            if found.as_deref().map(CatalogSnapshot::version) != Some(version.as_str()) {
                recorder.found_moved();
                return Err(futures::future::Aborted);
            }
            if deferred {
                recorder.unconfirmed();
            }
        }
        handle.block_on(work)
    };
    let snapshot_time = ctx.snapshot_time();
    let ran = tokio::select! {
        biased;
        ran = call.run(begin) => ran,
        () = snapshot_late(taking, snapshot_time) => {
            call.bounds.signal.cancel();
            recorder.cancel();
            abort.abort();
            return Err(crate::ops::timed_out("the catalog snapshot", snapshot_time));
        }
    };
    match ran {
        Err(CallEnd::TimedOut) => {
            recorder.cancel();
            abort.abort();
            Ok(Ended::TimedOut)
        }
        Err(CallEnd::Panicked) => {
            tracing::error!(language = ctx.lang.spec.name, "the engine panicked");
            Ok(Ended::Panicked)
        }
        Err(end @ CallEnd::Busy(..)) => Err(crate::ops::call_failed(&ctx, "the run", call, end)),
        // Aborted at the deadline, or never begun on a snapshot that moved (the recorder says
        // which: a moved one is attempted again).
        Ok(Err(_aborted)) => Ok(Ended::TimedOut),
        // An engine that stopped short at its deadline (its Run turned inert) stopped because of
        // it, whichever of it and the timer was first.
        Ok(Ok(finish)) if !finish.outcome.ok() && call.expired() => Ok(Ended::TimedOut),
        Ok(Ok(finish)) => Ok(Ended::Finished(finish)),
    }
}

/// Where a Run's engine call is in taking the snapshot it confirms.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not begun (waiting for a slot), or begun without a snapshot to take.
    Waiting,
    /// Taking the engine's snapshot.
    Taking,
    /// The snapshot taken.
    Taken,
}

/// Resolves when the engine call's snapshot has been taking longer than `bound` since it began;
/// pending otherwise (never begun, taken in time, or the call ended).
async fn snapshot_late(mut phase: watch::Receiver<Phase>, bound: Duration) {
    if phase.wait_for(|p| *p != Phase::Waiting).await.is_ok_and(|p| *p == Phase::Taking)
        && tokio::time::timeout(bound, phase.wait_for(|p| *p == Phase::Taken)).await.is_err()
    {
        return;
    }
    std::future::pending().await
}

/// The started Run's outcome and output (only when ok), from how the engine ended and what the
/// recorder saw; an engine that failed before any step is an internal request error.
fn classify(
    ctx: Ctx<'_>,
    ended: Ended,
    recorder: &Recorder,
    late_findings: bool,
) -> OpResult<(Outcome, Option<Value>)> {
    let limits = ctx.lang.limits;
    Ok(match ended {
        Ended::TimedOut => (
            Outcome::failure(
                "partial",
                format!("execution exceeded its time bound of {:?}", limits.execute_time),
            ),
            None,
        ),
        // Cancellation is the client's, not a fault: `partial` (Part II §6.5.6: a started Run
        // that does not complete), since effects of the steps done may have occurred.
        Ended::Cancelled => (
            Outcome::failure(
                "partial",
                format!("the client cancelled the run after {} recorded steps", recorder.recorded()),
            ),
            None,
        ),
        Ended::Panicked if !recorder.started() => {
            return Err(crate::model::errors::RequestError::internal(
                "the engine failed before execution began",
            ))
        }
        Ended::Panicked => (Outcome::failure("error", "the engine failed during execution"), None),
        Ended::Finished(_) if recorder.exceeded() => (
            Outcome::failure(
                "partial",
                format!("execution exceeded its bound of {} steps", limits.max_steps),
            ),
            None,
        ),
        Ended::Finished(_) if recorder.bytes_exceeded() => (
            Outcome::failure(
                "partial",
                format!("execution exceeded its memory bound of {} bytes", limits.max_run_bytes),
            ),
            None,
        ),
        Ended::Finished(_) if late_findings => {
            (Outcome::failure("error", "the input failed binding after execution began"), None)
        }
        Ended::Finished(finish)
            if !recorder.budget().charge(finish.output.as_ref().map_or(0, value_memory)) =>
        {
            (
                Outcome::failure(
                    "partial",
                    format!("the run's output exceeded its memory bound of {} bytes", limits.max_run_bytes),
                ),
                None,
            )
        }
        Ended::Finished(finish) => {
            let output = if finish.outcome.ok() { finish.output } else { None };
            match ctx.lang.spec.sets.status(finish.outcome.status()) {
                Some(_) => (finish.outcome, output),
                None => {
                    let why = format!("engine reported an undeclared status '{}'", finish.outcome.status());
                    (Outcome::failure("error", why), None)
                }
            }
        }
    })
}

/// Whether this Run is kept: as the Language's retention says, or as the request's `store` asks.
fn keeps(ctx: Ctx<'_>, checked: &WellFormed<'_>) -> bool {
    let retention = &checked.retention;
    match checked.store_flag {
        Some(flag) => flag,
        None => *retention != Retention::None && !(*retention == Retention::Session && ctx.session.stateless),
    }
}

fn inline_trace(run_id: &str, steps: Vec<TraceStep>, level: TraceLevel, stats: Option<Value>) -> Trace {
    Trace { run_id: run_id.to_owned(), level: level.into(), steps, stats }
}

/// The trace's `stats` of a Run whose request waited a millisecond or more before its work:
/// `{"queued_ms": N}`, the request's waits for engine slots (its snapshot, validation and run
/// calls) and the waits its engine reported (`Run::waited`), none of them charged to its time.
/// The engine's waits join the request's total, which the result's `_meta` reports too.
fn queue_stats(recorder: &Recorder) -> Option<Value> {
    let engine = recorder.waited();
    let total = crate::ops::call::add_queued(engine)
        .unwrap_or_else(|| recorder.signal().queued().saturating_add(engine));
    let ms = u64::try_from(total.as_millis()).unwrap_or(u64::MAX);
    (ms > 0).then(|| serde_json::json!({ "queued_ms": ms }))
}

/// A fresh Run id.
pub(crate) fn new_run_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("run_{}", &id[..16])
}

fn refused(run_id: String, outcome: Outcome, diagnostics: Option<Vec<Diagnostic>>) -> ExecuteResponse {
    ExecuteResponse { run_id, outcome, output: None, diagnostics, trace: None }
}
