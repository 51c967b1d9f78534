//! Execute as a task (the MCP Tasks extension, `io.modelcontextprotocol/tasks`, as rmcp 3.11
//! implements it; beyond Pilotage 1.1, opt-in twice: the Language declares `tasks`, the client
//! declares the extension). A task-augmented `tools/call` of such an execute tool answers at
//! once with a task; the Run goes on in the background, watched like a request (cancellation,
//! progress into the task's record); `tasks/get` reports `working` with the steps done so far,
//! then the very `tools/call` result a plain call returns; `tasks/cancel` fires the Run's
//! signal. Records live in the deployment's store; the running tasks of this process in
//! [`LiveTasks`](crate::state::tasks::LiveTasks).

use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, ErrorCode, GetTaskResult, JsonObject, MetaObject, Task,
    TaskPayload, TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{json, Value};

use super::route::{call, envelope};
use super::tools::{Route, Stage};
use super::Shared;
use crate::engine::Tick;
use crate::model::errors::{ErrorKind, RequestError};
use crate::model::manifest::EXTENSION_ID;
use crate::ops::watch::{TickOut, Watch};
use crate::ops::{Args, Reply};
use crate::state::session::Session;
use crate::state::tasks::{now_ms, parse_millis, rfc3339, LiveTask, TaskRecord, TaskState};
use crate::state::SharedState;

/// The interval clients are asked to poll `tasks/get` at, in milliseconds.
pub const POLL_INTERVAL_MS: u64 = 250;

/// This process, as task records name it: a working task of another process is not running
/// here.
fn instance() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| uuid::Uuid::new_v4().simple().to_string())
}

/// Whether this `tools/call` becomes a task: the client declared the Tasks extension and the
/// tool is the execute tool of a Language that declares `tasks`.
pub(super) fn wanted(shared: &Shared, name: &str, args: &Args, context: &RequestContext<RoleServer>) -> bool {
    let declared = context.client_capabilities().is_some_and(|c| c.supports_tasks());
    declared && language(shared, name, args).is_some()
}

/// The index of the tasks-declaring Language an execute call of `name` with `args` runs.
fn language(shared: &Shared, name: &str, args: &Args) -> Option<usize> {
    let entry = shared.tool(name)?;
    let Route::Loop(Stage::Execute, langs) = &entry.route else { return None };
    let l = super::route::select(shared, langs, args).ok()?;
    shared.langs[l].spec.tasks.then_some(l)
}

/// Start the task: its record, its live entry, and the Run in the background. A caller with
/// too many running tasks gets the `bounds_exceeded` request error as the call's result.
pub(super) async fn start(
    shared: Arc<Shared>,
    session: Arc<Session>,
    name: String,
    args: Args,
) -> Result<Result<CreateTaskResult, CallToolResult>, McpError> {
    let Some(l) = language(&shared, &name, &args) else {
        return Err(McpError::invalid_params(format!("tool {name} does not run as a task"), None));
    };
    let limits = shared.langs[l].limits;
    let owner = session.caller.id.to_string();
    let task_id = format!("task_{}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
    let run_id = crate::ops::execute::new_run_id();
    let language = shared.langs[l].spec.name;
    let live = match shared.stores.live.start(
        &task_id,
        LiveTask::new(&owner, &run_id, language),
        limits.max_live_tasks,
    ) {
        Ok(live) => live,
        Err(full) => {
            let why = format!(
                "this caller already has {} running tasks (the bound of this server): wait for one to end, or cancel one",
                full.0
            );
            return Ok(Err(envelope(Reply::error(RequestError::new(ErrorKind::BoundsExceeded, why)))));
        }
    };
    let ttl_ms = u64::try_from(limits.task_ttl.as_millis()).unwrap_or(u64::MAX);
    let record = TaskRecord::working(
        task_id.clone(),
        owner,
        language.to_owned(),
        run_id.clone(),
        ttl_ms,
        instance().to_owned(),
    );
    if let Err(e) = shared.stores.state.put_task(&record).await {
        shared.stores.live.end(&task_id);
        return Err(McpError::internal_error(format!("the task could not be recorded: {e}"), None));
    }
    let seed = task_of(&record, 0);
    tokio::spawn(run(shared, session, name, args, record, live));
    Ok(Ok(CreateTaskResult::new(seed).with_meta(run_meta(&run_id, 0))))
}

/// The task's Run, then its final record.
async fn run(
    shared: Arc<Shared>,
    session: Arc<Session>,
    name: String,
    args: Args,
    mut record: TaskRecord,
    live: Arc<LiveTask>,
) {
    let watch = Watch {
        cancel: Some(live.cancel.clone()),
        progress: Some(progress_into(shared.stores.state.clone(), record.clone(), live.clone())),
        run_id: Some(record.run_id.clone()),
        started: Some({
            let live = live.clone();
            Arc::new(move |_: &str, recorder: &crate::engine::Recorder| {
                *live.recorder.lock().unwrap_or_else(|p| p.into_inner()) = Some(recorder.clone());
            })
        }),
    };
    // The task's engine calls wait for a slot within its time to live (less the longest its
    // execute may take once it has one), instead of failing when the server is busy.
    let limits =
        shared.langs.iter().find(|l| l.spec.name == record.language).map(|l| l.limits).unwrap_or_default();
    let wait = limits.task_ttl.saturating_sub(crate::ops::execute::longest_run(&limits));
    let until = tokio::time::Instant::now() + wait;
    let reply = crate::ops::call::waiting_until(until, call(&shared, &session, &name, args, &watch)).await;
    record.steps_done = live.steps_done() as u64;
    record.updated_at = rfc3339(now_ms());
    match reply {
        _ if live.cancel.is_cancelled() => record.state = TaskState::Cancelled,
        Ok(reply) => {
            record.state = TaskState::Completed;
            record.result = serde_json::to_value(envelope(reply)).ok();
        }
        Err(e) => {
            record.state = TaskState::Failed;
            record.error = serde_json::to_value(&e).ok();
        }
    }
    if let Err(e) = shared.stores.state.put_task(&record).await {
        tracing::error!(task_id = record.task_id, error = %e, "could not record the task's end");
    }
    shared.stores.live.end(&record.task_id);
}

/// The task's progress: the live count, and the record's `steps_done` (at most as often as
/// progress notifications would go).
fn progress_into(state: Arc<dyn SharedState>, record: TaskRecord, live: Arc<LiveTask>) -> TickOut {
    Arc::new(move |_run_id: &str, tick: Tick| {
        live.done.store(tick.done, std::sync::atomic::Ordering::Relaxed);
        let mut record = record.clone();
        record.steps_done = tick.done as u64;
        record.updated_at = rfc3339(now_ms());
        let state = state.clone();
        Box::pin(async move {
            if let Err(e) = state.put_task(&record).await {
                tracing::warn!(task_id = record.task_id, error = %e, "could not record the task's progress");
            }
        })
    })
}

/// `tasks/get`: a running task of this process as it is now, else its record; a working
/// record no process can still be running reports `failed`.
pub(super) async fn get(shared: &Shared, owner: &str, task_id: &str) -> Result<GetTaskResult, McpError> {
    let record = stored(shared, owner, task_id).await?;
    if let Some(live) = shared.stores.live.get(owner, task_id) {
        return Ok(detailed(&record, live.steps_done(), TaskPayload::Working));
    }
    let record = match record.state {
        TaskState::Working if orphaned(shared, &record) => fail_orphan(shared, record).await,
        _ => record,
    };
    let payload = match record.state {
        TaskState::Working => TaskPayload::Working,
        TaskState::Cancelled => TaskPayload::Cancelled,
        TaskState::Completed => TaskPayload::Completed { result: object(record.result.clone()) },
        TaskState::Failed => TaskPayload::Failed { error: object(record.error.clone()) },
    };
    let done = usize::try_from(record.steps_done).unwrap_or(usize::MAX);
    Ok(detailed(&record, done, payload))
}

/// `tasks/cancel`: fire a running task's signal; an ended task is left as it is.
pub(super) async fn cancel(shared: &Shared, owner: &str, task_id: &str) -> Result<(), McpError> {
    stored(shared, owner, task_id).await?;
    if let Some(live) = shared.stores.live.get(owner, task_id) {
        live.cancel.cancel();
    }
    Ok(())
}

async fn stored(shared: &Shared, owner: &str, task_id: &str) -> Result<TaskRecord, McpError> {
    match shared.stores.state.get_task(owner, task_id).await {
        Ok(Some(record)) => Ok(record),
        Ok(None) => Err(McpError::invalid_params(format!("unknown task: {task_id}"), None)),
        Err(e) => Err(McpError::internal_error(crate::ops::store_failed(e).error.message, None)),
    }
}

/// Whether a working record is not running anywhere: not here, and either this store has no
/// other process or the record has not moved for longer than its Run may take.
fn orphaned(shared: &Shared, record: &TaskRecord) -> bool {
    if !shared.stores.state.shared_by_replicas() || record.instance == instance() {
        return true;
    }
    let longest = shared.langs.iter().find(|l| l.spec.name == record.language).map_or(0, |l| {
        u64::try_from(crate::ops::execute::longest_run(&l.limits).as_millis()).unwrap_or(u64::MAX)
    });
    let moved = parse_millis(&record.updated_at).unwrap_or(0);
    now_ms() > moved.saturating_add(longest)
}

/// Record, and return, the honest end of a task whose process stopped while it was working.
async fn fail_orphan(shared: &Shared, mut record: TaskRecord) -> TaskRecord {
    record.state = TaskState::Failed;
    record.updated_at = rfc3339(now_ms());
    record.error = Some(json!({
        "code": ErrorCode::INTERNAL_ERROR.0,
        "message": format!(
            "the server stopped while this task was working: run {} did not finish, and effects of the {} steps it recorded may have occurred",
            record.run_id, record.steps_done
        ),
    }));
    if let Err(e) = shared.stores.state.put_task(&record).await {
        tracing::warn!(task_id = record.task_id, error = %e, "could not record the task's failure");
    }
    record
}

fn object(v: Option<Value>) -> JsonObject {
    match v {
        Some(Value::Object(m)) => m,
        _ => JsonObject::new(),
    }
}

/// The task's Run and its steps, in `_meta` under the Pilotage extension.
fn run_meta(run_id: &str, done: usize) -> MetaObject {
    let mut meta = JsonObject::new();
    meta.insert(EXTENSION_ID.to_owned(), json!({"run_id": run_id, "steps_done": done}));
    MetaObject(meta)
}

fn task_of(record: &TaskRecord, done: usize) -> Task {
    let status = match record.state {
        TaskState::Working => TaskStatus::Working,
        TaskState::Completed => TaskStatus::Completed,
        TaskState::Failed => TaskStatus::Failed,
        TaskState::Cancelled => TaskStatus::Cancelled,
    };
    Task::new(&record.task_id, status, &record.created_at, &record.updated_at)
        .with_ttl_ms(record.ttl_ms)
        .with_poll_interval_ms(POLL_INTERVAL_MS)
        .with_status_message(format!("run {}: {done} steps recorded", record.run_id))
}

fn detailed(record: &TaskRecord, done: usize, payload: TaskPayload) -> GetTaskResult {
    let mut result = GetTaskResult::new(DetailedTask::new(task_of(record, done), payload));
    result.meta = Some(run_meta(&record.run_id, done));
    result
}
